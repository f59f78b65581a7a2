"""The FGD paper's experiment through the workers (issue #18 §4): the 17 openb workload
files x the 6 paper policies x 10 seeds = 1,020 placement-study runs, as a user runs
them: each file imported for the placement-study mode (``--placement-study 130``, the
fractional requests kept), stored as an experiment of 6 variants x 10 replications, and
the 17 runs started at once on real ``celery worker`` processes over PostgreSQL and
Redis. Timed wall-clock from the first enqueue to the last run succeeded (its
aggregate computed and its page precomputed). Target: <= 10 min. Not a test.

    python bench/bench_placement_workers.py [--concurrency 2] [--files default,cpu050]
                                            [--seeds 10] [--chunk 10] [--record]

Then each run's stored means at 130 % are compared with the paper's published ones
(scheduler_core/fgd_published.json): the count within ±0.5 pp and the files whose
policy order matches. ``--record`` writes bench/baselines.json ``placement_workers``.
The traces are read from ../shared/traces (not in the repository: licences).
"""

from __future__ import annotations

import argparse
import json
import os
import platform
import sys
import tempfile
import time
from pathlib import Path
from typing import Any

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))

DATABASE = os.environ.get("BENCH_DATABASE", "dl_study_bench")
BROKER_URL = os.environ.get("BENCH_REDIS_URL", "redis://127.0.0.1:6379/3")
os.environ.setdefault("BENCH_DATABASE", DATABASE)
os.environ.setdefault("BENCH_REDIS_URL", BROKER_URL)

from bench import bench_workers as bw  # noqa: E402 (after the path and names are set)
from bench.bench_placement import NODES, PAPER_FILES, TOLERANCE_PP, TRACE  # noqa: E402

RUN_TIMEOUT_SECONDS = 3 * 3600.0


def store_experiments(files: list[str], seeds: int) -> list[Any]:
    """One experiment per workload file, imported as a user would (the core importer in
    placement-study mode at 130 %), with the paper's seeds 42.. as replications."""
    from django.contrib.auth import get_user_model

    from experiments.services import experiment_create
    from experiments.specs import spec_parse
    from scheduler_core.traces import import_trace
    from scheduler_core.traces.options import ImportOptions

    owner, _ = get_user_model().objects.get_or_create(username="bench")
    experiments = []
    for name in files:
        pods = TRACE / f"openb_pod_list_{name}.csv"
        result = import_trace("openb", [NODES, pods], ImportOptions(placement_study=130.0))
        mapping = {**result.mapping, "name": f"openb {name}", "replications": seeds}
        experiments.append(experiment_create(owner=owner, spec=spec_parse(document=mapping)))
    return experiments


def timed_runs(experiments: list[Any], concurrency: int, var_dir: Path, chunk: int) -> Any:
    """Start the worker, enqueue every run at once, wait until all succeeded."""
    from experiments.models import Run, Status
    from experiments.services import run_enqueue
    from tests.web.live import Stack, wait_for

    stack = Stack(var_dir=var_dir, queue=bw.QUEUE, extra_env={"LAB_STUDY_CHUNK": str(chunk)})
    log = var_dir / "worker.log"
    try:
        stack.start_worker(name="worker", concurrency=concurrency)
        wait_for(
            lambda: log.exists() and b" ready." in log.read_bytes(),
            timeout=120,
            what="the worker",
            stack=stack,
        )
        started = time.perf_counter()
        runs = [run_enqueue(experiment=e, user=None) for e in experiments]
        ids = [r.pk for r in runs]

        def finished() -> bool:
            states = Run.objects.filter(pk__in=ids).values_list("status", flat=True)
            return all(s in (Status.SUCCEEDED, Status.FAILED, Status.CANCELLED) for s in states)

        wait_for(finished, timeout=RUN_TIMEOUT_SECONDS, what="the runs", stack=stack, every=1.0)
        wall = time.perf_counter() - started
    finally:
        stack.stop_all()
    return Run.objects.filter(pk__in=ids).order_by("pk"), wall, log


def compare(runs: Any) -> dict[str, Any]:
    """Our stored means at 130 % against the paper's, per file and policy."""
    from scheduler_core.study_spec import policy_order, published

    paper = published()
    within = total = orders = 0
    worst: tuple[float, str] = (0.0, "")
    per_file = {}
    for run in runs:
        name = run.spec["placementStudy"].get("paperWorkload")
        rows = {row["variant"]: row for row in run.aggregate}
        ours = {v: row["study"]["atLoad"]["mean"] for v, row in rows.items()}
        theirs = {v: paper[name][v]["mean"] for v in rows if name and v in paper.get(name, {})}
        for v, mean in theirs.items():
            delta = ours[v] - mean
            total += 1
            within += abs(delta) <= TOLERANCE_PP
            if abs(delta) > abs(worst[0]):
                worst = (round(delta, 3), f"{name} {v}")
        same = policy_order({v: rows[v]["study"] for v in theirs}) == sorted(
            theirs, key=lambda v: -theirs[v]
        )
        orders += same
        per_file[name] = {"order_matches": same, "ours": ours}
    return {
        "means_within_0_5pp": within,
        "means": total,
        "orders_match": orders,
        "files": len(per_file),
        "largest_difference_pp": worst[0],
        "largest_difference_at": worst[1],
        "per_file": per_file,
    }


def main() -> int:
    parser = argparse.ArgumentParser(
        description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter
    )
    parser.add_argument("--concurrency", type=int, default=2, help="worker processes")
    parser.add_argument("--files", default=",".join(PAPER_FILES))
    parser.add_argument("--seeds", type=int, default=10)
    parser.add_argument("--chunk", type=int, default=10, help="LAB_STUDY_CHUNK")
    parser.add_argument("--record", action="store_true", help="write bench/baselines.json")
    args = parser.parse_args()
    os.environ.update(bw.BENCH_ENV)
    import django

    django.setup()
    load_before = os.getloadavg()
    bw.recreate_database()
    files = [f.strip() for f in args.files.split(",") if f.strip()]
    experiments = store_experiments(files, args.seeds)
    with tempfile.TemporaryDirectory(prefix="bench-placement-workers-") as var_dir:
        runs, wall, log = timed_runs(experiments, args.concurrency, Path(var_dir), args.chunk)
        failed = [f"run {r.pk}: {r.error}" for r in runs if r.status != "succeeded"]
        if failed:
            print("\n".join(failed), file=sys.stderr)
            print(bw._last_exception(log), file=sys.stderr)
            return 1
    replications = sum(r.replications.count() for r in runs)
    busy = sum(
        (rep.finished_at - rep.started_at).total_seconds()
        for r in runs
        for rep in r.replications.only("started_at", "finished_at")
    )
    figures = {
        "files": len(files),
        "policies": 6,
        "seeds": args.seeds,
        "runs": replications,
        "tasks": len(files) * 6 * -(-args.seeds // args.chunk),
        "chunk": args.chunk,
        "concurrency": args.concurrency,
        "wall_s": round(wall, 1),
        "per_run_wall_s": round(wall / replications, 3),
        "claim_to_store_s_sum": round(busy, 1),
        "target_s": 600,
        "meets_target": wall <= 600,
        "load_average_before": [round(x, 2) for x in load_before],
        "load_average_after": [round(x, 2) for x in os.getloadavg()],
        "cpus": os.cpu_count(),
        "database": "postgresql",
        "broker": "redis",
        **compare(runs),
    }
    print(json.dumps({k: v for k, v in figures.items() if k != "per_file"}, indent=2))
    if args.record:
        data = json.loads(bw.BASELINES.read_text()) if bw.BASELINES.exists() else {}
        data["placement_workers"] = {
            **figures,
            "python": platform.python_version(),
            "machine": platform.machine(),
            "recorded": time.strftime("%Y-%m-%d"),
        }
        bw.BASELINES.write_text(json.dumps(data, indent=2, sort_keys=True) + "\n")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
