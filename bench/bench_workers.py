"""Worker scaling (issue #7): the whole openb trace, 16 variants x 3 replications, run
through the real stack (PostgreSQL, the Redis broker, real ``celery worker`` processes),
once per worker concurrency. Not a test: run by hand.

    python bench/bench_workers.py [--concurrency 1,2] [--replications 3] [--record]

It builds its own database (``disruption_lab_bench_workers``, or ``BENCH_DATABASE``:
dropped and created again each time, so the figures never depend on what an earlier run
left behind) and its own broker queue, imports the trace, stores it as an Experiment
and, per concurrency, starts a worker, waits until it is ready, then times enqueue -> run
succeeded.

Reported per concurrency: seconds to the last replication and to the run's success,
speed-ups against the first concurrency, and where the
worker time goes, from the rows themselves: simulation (``Replication.wall_seconds``,
measured inside the simulator) versus the rest of each task (parsing the frozen spec,
resolving the variant, deriving the timeline, encoding the ~70,000-event log and writing
the result row), plus the chord callback. One replication is also timed phase by phase in this
process. ``--record`` merges the figures into bench/baselines.json as ``workers_openb``.
The trace is read from ../shared/traces, or ``BENCH_TRACE_DIR`` (not in the repository:
licences).
"""

from __future__ import annotations

import argparse
import itertools
import json
import os
import platform
import re
import statistics
import sys
import tempfile
import time
import uuid
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path
from typing import Any

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))

TRACE = Path(
    os.environ.get("BENCH_TRACE_DIR", ROOT.parent / "shared" / "traces" / "alibaba-gpu-v2023")
)
FILES = [TRACE / "openb_node_list_all_node.csv", TRACE / "openb_pod_list_default.csv"]
BASELINES = Path(__file__).with_name("baselines.json")
SERVER_URL = "postgres://postgres@127.0.0.1:5432"
DATABASE = os.environ.get("BENCH_DATABASE", "disruption_lab_bench_workers")
BROKER_URL = os.environ.get("BENCH_REDIS_URL", "redis://127.0.0.1:6379/14")
QUEUE = f"bench-workers-{uuid.uuid4().hex[:8]}"
RUN_TIMEOUT_SECONDS = 3600.0
CALLBACK_TIMEOUT_SECONDS = 120.0

# The whole trace is above the web app's default limits (7,254 workloads > 5,000; a
# 34-day horizon > 30 days): the benchmark raises them for itself and its workers.
LIMITS = {
    "LAB_MAX_WORKLOADS": "20000",
    "LAB_MAX_HORIZON_SECONDS": "4000000",
    "LAB_MAX_TASKS": "200",
}
BENCH_ENV = {
    "DJANGO_SETTINGS_MODULE": "config.settings.base",
    "DATABASE_URL": f"{SERVER_URL}/{DATABASE}",
    "CELERY_BROKER_URL": BROKER_URL,
    "CELERY_RESULT_BACKEND": BROKER_URL,
    "CELERY_TASK_DEFAULT_QUEUE": QUEUE,
    "CELERY_TASK_ALWAYS_EAGER": "false",
    "DB_CONN_MAX_AGE": "0",
    "TEST_REDIS_URL": BROKER_URL,
    **LIMITS,
}


def variants() -> list[dict[str, Any]]:
    """The 16 variants: every preemption policy x both placements x whether victims are
    asked to checkpoint in their grace period."""
    grid = itertools.product(
        ("pod", "none", "workload-aware", "checkpoint-aware"),
        ("MostAllocated", "LeastAllocated"),
        (False, True),
    )
    return [
        {
            "name": f"{preemption}-{placement.lower()}{'-ckpt' if ckpt else ''}",
            "preemption": preemption,
            "placement": placement,
            "set": {"policy.checkpointVictims": ckpt},
        }
        for preemption, placement, ckpt in grid
    ]


def recreate_database() -> None:
    """A fresh, migrated database of the benchmark's own."""
    import psycopg

    with psycopg.connect(f"{SERVER_URL}/postgres", autocommit=True) as conn:
        conn.execute(f"DROP DATABASE IF EXISTS {DATABASE}")
        conn.execute(f"CREATE DATABASE {DATABASE}")
    from django.core.management import call_command

    call_command("migrate", verbosity=0)


def store_experiment(replications: int) -> tuple[Any, dict[str, Any]]:
    """Import the trace, add the variants, store it as alice's experiment."""
    from django.contrib.auth import get_user_model

    from experiments.services import experiment_create
    from experiments.specs import spec_parse
    from scheduler_core.traces import import_trace

    started = time.perf_counter()
    result = import_trace("openb", FILES)
    mapping = {**result.mapping, "variants": variants(), "replications": replications}
    spec = spec_parse(document=mapping)
    imported = time.perf_counter() - started
    owner, _ = get_user_model().objects.get_or_create(username="bench")
    experiment = experiment_create(owner=owner, spec=spec)
    return experiment, {
        "import_and_validate_s": round(imported, 2),
        "workloads": len(spec.workloads),
        "nodes": sum(p.count for p in spec.cluster.node_pools) + len(spec.cluster.nodes),
    }


def timed_run(
    experiment: Any, concurrency: int, var_dir: Path, conn_max_age: int = 60
) -> dict[str, Any]:
    """Start a worker with ``concurrency`` processes, wait until it is ready, then time
    enqueue -> every replication succeeded -> run succeeded (the chord callback, which
    aggregates, comes last). The worker is stopped afterwards. It keeps its database
    connection ``conn_max_age`` seconds (``DB_CONN_MAX_AGE``: the settings' default of 60,
    as ``make run`` and a deployment run it; the test harness's 0 opens a connection, and
    a PostgreSQL backend, for every task)."""
    from experiments.services import run_enqueue
    from tests.web.live import Stack, wait_for

    stack = Stack(
        var_dir=var_dir,
        queue=QUEUE,
        extra_env={**LIMITS, "DB_CONN_MAX_AGE": str(conn_max_age)},
    )
    log = var_dir / f"c{concurrency}.log"
    try:
        stack.start_worker(name=f"c{concurrency}", concurrency=concurrency)
        wait_for(
            lambda: log.exists() and b" ready." in log.read_bytes(),
            timeout=120,
            what="the worker",
            stack=stack,
        )
        cpu_before = process_cpu()
        started = time.perf_counter()
        run = run_enqueue(experiment=experiment, user=None)
        wait_for(
            lambda: _replications_done(run),
            timeout=RUN_TIMEOUT_SECONDS,
            what="the replications",
            stack=stack,
            every=0.25,
        )
        replications_done = time.perf_counter() - started
        finished = _wait_terminal(run, CALLBACK_TIMEOUT_SECONDS)
        wall = time.perf_counter() - started if finished else None
        cpu_spent = {
            name: round(seconds - cpu_before.get(name, 0.0), 1)
            for name, seconds in process_cpu().items()
        }
    finally:
        stack.stop_all()
    run.refresh_from_db()  # the whole row, once (its error, if it failed)
    figures: dict[str, Any] = {
        "concurrency": concurrency,
        "replications_done_s": round(replications_done, 2),
        "wall_s": round(wall, 2) if wall else None,
        "run_status": run.status,
    }
    if run.status != "succeeded":
        figures["run_error"] = run.error or _last_exception(log)
    return {**figures, "cpu_s_by_process": cpu_spent, **breakdown(run)}


def process_cpu() -> dict[str, float]:
    """CPU seconds (user + system) so far of the processes that share the machine's cores
    during a sweep, by kind: the Celery worker (its parent and pool processes, by command
    line, and pool processes that ended), PostgreSQL (live processes, plus what the
    postmaster reaped: a backend that closed its connection), Redis, this process, and
    everything else. Read from /proc (Linux); differences of two readings are what a
    sweep cost each kind."""
    tick = os.sysconf("SC_CLK_TCK")
    totals: dict[str, float] = {}
    for entry in Path("/proc").iterdir():
        if not entry.name.isdigit():
            continue
        try:
            stat = (entry / "stat").read_text()
            command = (entry / "cmdline").read_bytes().replace(b"\0", b" ").decode(errors="replace")
        except OSError:  # ended meanwhile
            continue
        name = stat[stat.index("(") + 1 : stat.rindex(")")]
        fields = stat[stat.rindex(")") + 2 :].split()
        utime, stime, cutime, cstime = (int(x) for x in fields[11:15])
        own = utime + stime
        if "worker_harness.py" in command or "celery" in command:
            kind = "celery_worker"
            own += cutime + cstime  # pool processes the parent reaped (recycled children)
        elif name == "postgres":
            kind = "postgresql"
            if fields[1] == "1" or "postgres -D" in command or "/bin/postgres" in command:
                own += cutime + cstime  # the postmaster: its reaped backends
        elif name.startswith("redis-server"):
            kind = "redis"
        elif int(entry.name) == os.getpid():
            kind = "bench"
        else:
            kind = "other"
        totals[kind] = totals.get(kind, 0.0) + own / tick
    return totals


def _replications_done(run: Any) -> bool:
    """Every replication succeeded, or the run ended (a failure ends it early). Reads the
    run's status alone: the whole row holds the frozen spec (1.9 MB of JSON on openb),
    and reading it four times a second cost PostgreSQL and this process about a tenth of
    a core, taken from the workers being timed."""
    run.refresh_from_db(fields=["status"])
    return run.is_terminal or not run.replications.exclude(status="succeeded").exists()


def _wait_terminal(run: Any, timeout: float) -> bool:
    """True once the run succeeded; False if it failed or is still running at ``timeout``
    (a chord callback that raised leaves it running until the watchdog's sweep)."""
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        run.refresh_from_db(fields=["status"])
        if run.is_terminal:
            return run.status == "succeeded"
        time.sleep(0.25)
    return False


def _last_exception(log: Path) -> str:
    lines = [
        line
        for line in log.read_text(errors="replace").splitlines()
        if re.match(r"^[A-Za-z_.]+(Error|Exception): ", line)
    ]
    return lines[-1] if lines else "the run did not finish (see the worker log)"


def breakdown(run: Any) -> dict[str, Any]:
    """Where the workers' time went, from the stored rows."""
    from django.db.models import F, Func, IntegerField, Sum

    reps = list(run.replications.only("started_at", "finished_at", "wall_seconds", "event_count"))
    stored = run.replications.aggregate(
        bytes=Sum(Func(F("event_log"), function="OCTET_LENGTH", output_field=IntegerField()))
    )["bytes"]
    events = sum(r.event_count for r in reps)
    busy = sum((r.finished_at - r.started_at).total_seconds() for r in reps)
    simulate = sum(r.wall_seconds for r in reps)
    last = max(r.finished_at for r in reps)
    return {
        "tasks": len(reps),
        "events_stored": events,
        "event_log_bytes": stored,
        "event_log_bytes_per_event": round(stored / events, 2) if events and stored else None,
        "task_busy_s": round(busy, 1),
        "simulate_s": round(simulate, 1),
        "store_and_other_s": round(busy - simulate, 1),
        "simulate_share": round(simulate / busy, 3) if busy else None,
        "mean_task_s": round(busy / len(reps), 2),
        "queue_to_first_start_s": round(
            (min(r.started_at for r in reps) - run.created_at).total_seconds(), 2
        ),
        "chord_callback_s": round((run.finished_at - last).total_seconds(), 2)
        if run.finished_at
        else None,
    }


PHASE_ROUNDS = 3
"""One replication's phases are timed this many times; the figures are the medians."""
WRITES = ("encode_events_s", "result_row_s", "workload_records_s")


def replication_phases(experiment: Any) -> dict[str, Any]:
    """:func:`one_replication_phases` :data:`PHASE_ROUNDS` times: the median of each phase,
    the first round's own figures (a worker's first task also pays one-off costs, such as
    the first use of the compressor: 0.11 s against 0.04 s for encoding the log), and
    what issue #14 asks of them: the writes' share of a task (simulate, timeline and
    writes; a worker's later tasks skip the parse and the resolve, its cached parse being
    keyed by the spec's digest) and of a first task (with them)."""
    rounds = [one_replication_phases(experiment) for _ in range(PHASE_ROUNDS)]
    phases: dict[str, Any] = {
        key: statistics.median(r[key] for r in rounds) if key.endswith("_s") else value
        for key, value in rounds[0].items()
    }
    writes = sum(phases[key] for key in WRITES)
    task = phases["simulate_s"] + phases["timeline_s"] + writes
    first_task = task + phases["parse_spec_s"] + phases["resolve_variant_s"]
    phases["writes_s"] = round(writes, 3)
    phases["writes_share_of_task"] = round(writes / task, 3)
    phases["writes_share_of_first_task"] = round(writes / first_task, 3)
    phases["first_round"] = {k: v for k, v in rounds[0].items() if k.endswith("_s")}
    phases["rounds"] = PHASE_ROUNDS
    return phases


def one_replication_phases(experiment: Any) -> dict[str, float]:
    """One replication's phases in this process, as the task runs them (the collector
    paused): parse the frozen spec (without re-validating the variants), resolve the
    variant once, simulate (+ metrics), derive the timeline, encode the event log, store
    the result row with it. The writes are rolled back. Parsing as an experiment is
    saved (every variant validated) is timed too, for comparison."""
    from django.conf import settings
    from django.db import transaction

    import scheduler_core as sc
    from experiments.models import Replication
    from experiments.services.execution import (  # the task's own
        _insert_records,
        _set_result,
        encode_event_log,
    )
    from scheduler_core import timeline as core_timeline
    from scheduler_core.gc_pause import gc_paused

    replication = Replication.objects.filter(run__experiment=experiment).first()
    without_variants = {k: v for k, v in experiment.spec.items() if k != "variants"}
    phases: dict[str, float] = {}
    with _phase(phases, "parse_spec_every_variant_s"):  # as an experiment is saved
        sc.parse_spec(experiment.spec)
    with _phase(phases, "parse_spec_without_variants_s"):
        sc.parse_spec(without_variants)
    with gc_paused():  # as the task runs (execution._run)
        with _phase(phases, "parse_spec_s"):  # as the task parses the frozen spec
            spec = sc.parse_spec(experiment.spec, check_variants=False)
        with _phase(phases, "resolve_variant_s"):
            resolved = sc.resolve_variant(spec, replication.variant)
        with _phase(phases, "simulate_s"):
            result = sc.simulate(spec, resolved, 0)
        with _phase(phases, "timeline_s"):
            timeline = core_timeline.build(
                result.events, resolved.spec, max_spans=settings.LAB_MAX_STORED_TIMELINE_SPANS
            ).to_json()
        with _phase(phases, "encode_events_s"):
            blob = encode_event_log(result)
        with transaction.atomic():
            replication.timeline, replication.event_log = timeline, blob
            with _phase(phases, "result_row_s"):
                _set_result(replication, result)
            with _phase(phases, "workload_records_s"):
                _insert_records(replication, result)
            transaction.set_rollback(True)
    events = len(result.events)
    return {
        **phases,
        "events": events,
        "event_log_bytes": len(blob),
        "event_log_bytes_per_event": round(len(blob) / max(1, events), 2),
    }


@contextmanager
def _phase(phases: dict[str, float], name: str) -> Iterator[None]:
    started = time.perf_counter()
    yield
    phases[name] = round(time.perf_counter() - started, 3)


def main() -> int:
    parser = argparse.ArgumentParser(
        description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter
    )
    parser.add_argument("--concurrency", default="1,2", help="worker processes per run")
    parser.add_argument("--replications", type=int, default=3)
    parser.add_argument(
        "--conn-max-age",
        type=int,
        default=60,
        help="the workers' DB_CONN_MAX_AGE (the settings' default: 60; 0 reconnects per task)",
    )
    parser.add_argument("--record", action="store_true", help="write bench/baselines.json")
    args = parser.parse_args()
    if not all(f.exists() for f in FILES):
        print(f"the openb trace is not available under {TRACE}", file=sys.stderr)
        return 2
    os.environ.update(BENCH_ENV)
    import django

    django.setup()
    load_before = os.getloadavg()[0]
    recreate_database()
    experiment, trace = store_experiment(args.replications)
    runs = []
    with tempfile.TemporaryDirectory(prefix="bench-workers-") as var_dir:
        for concurrency in (int(c) for c in args.concurrency.split(",")):
            runs.append(timed_run(experiment, concurrency, Path(var_dir), args.conn_max_age))
            print(json.dumps(runs[-1]), file=sys.stderr)
    phases = replication_phases(experiment)
    figures = summary(runs, trace, phases, args.replications, load_before)
    figures["worker_conn_max_age"] = args.conn_max_age
    print(json.dumps(figures, indent=2))
    if args.record:
        _record(figures)
    return 0


def summary(
    runs: list[dict[str, Any]],
    trace: dict[str, Any],
    phases: dict[str, Any],
    replications: int,
    load_before: float,
) -> dict[str, Any]:
    """Speed-ups against the first concurrency: to the last replication (always known) and
    to the run's success (when its chord callback succeeded)."""
    for run in runs:
        run["speedup_replications"] = round(
            runs[0]["replications_done_s"] / run["replications_done_s"], 2
        )
        if runs[0]["wall_s"] and run["wall_s"]:
            run["speedup"] = round(runs[0]["wall_s"] / run["wall_s"], 2)
    return {
        "variants": len(variants()),
        "replications": replications,
        **trace,
        "runs": runs,
        "one_replication": phases,
        "cpus": os.cpu_count(),
        "load_average_before": round(load_before, 2),
        "load_average_after": round(os.getloadavg()[0], 2),
        "database": "postgresql",
        "broker": "redis",
        "pool": "prefork",
    }


def _record(figures: dict[str, Any]) -> None:
    """Merge into baselines.json, keeping what other benchmarks recorded."""
    data = json.loads(BASELINES.read_text()) if BASELINES.exists() else {}
    data["workers_openb"] = {
        **figures,
        "python": platform.python_version(),
        "machine": platform.machine(),
        "recorded": time.strftime("%Y-%m-%d"),
    }
    BASELINES.write_text(json.dumps(data, indent=2, sort_keys=True) + "\n")


if __name__ == "__main__":
    raise SystemExit(main())
