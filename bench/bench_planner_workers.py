"""The checkpoint-planner preset through the workers (issue #17 §3): ``s14-checkpoint-
planner``, 12 intervals x 200 replications (2,400 tasks), run through the real stack
(PostgreSQL, Redis, real ``celery worker`` processes), then the planner's result read
as the plan page and the API read it. Target: <= 60 s on the workers. Not a test.

    python bench/bench_planner_workers.py [--concurrency 2] [--replications 200] [--record]

It reuses bench_workers.py's machinery (a fresh database of its own, a worker started
and timed from enqueue to the run's success, where the time went), with its own
database and broker queue. ``--record`` writes bench/baselines.json ``planner_workers``.
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

from bench import bench_workers as bw  # noqa: E402 (after the path is set)

PRESET = "s14-checkpoint-planner"
DATABASE = os.environ.get("BENCH_DATABASE", "disruption_lab_bench_planner")
BROKER_URL = os.environ.get("BENCH_REDIS_URL", "redis://127.0.0.1:6379/13")
LIMITS = {"LAB_MAX_TASKS": "5000"}  # the default: 2,400 tasks (openb's bench lowers it)
ENV = {
    **bw.BENCH_ENV,
    **LIMITS,
    "DATABASE_URL": f"{bw.SERVER_URL}/{DATABASE}",
    "CELERY_BROKER_URL": BROKER_URL,
    "CELERY_RESULT_BACKEND": BROKER_URL,
    "TEST_REDIS_URL": BROKER_URL,
}


def store_experiment(replications: int) -> Any:
    from django.contrib.auth import get_user_model

    import scheduler_core as sc
    from experiments.services import experiment_create
    from experiments.specs import spec_document, spec_parse

    document = {**spec_document(sc.get_preset(PRESET).spec()), "replications": replications}
    owner, _ = get_user_model().objects.get_or_create(username="bench")
    return experiment_create(owner=owner, spec=spec_parse(document=document))


def celery_tasks(experiment: Any) -> int:
    """How many tasks the last run was sent as (chunks of replications)."""
    from experiments import tasks

    run = experiment.runs.order_by("-created_at").first()
    return len(tasks.chunks(list(run.replications.values_list("pk", flat=True))))


def read_plan(experiment: Any) -> dict[str, Any]:
    """The planner's result of the last run, built once (cold) as the page does."""
    from experiments import selectors_planner

    run = experiment.runs.order_by("-created_at").first()
    started = time.perf_counter()
    result = selectors_planner._build(run)  # the cache's builder, timed without the cache
    built = time.perf_counter() - started
    assert result is not None
    return {
        "plan_build_s": round(built, 2),
        "optimum_interval_s": result.optimum_interval,
        "band_s": list(result.band) if result.band else None,
        "young_s": round(result.young_interval or 0, 1),
        "daly_s": round(result.daly_interval or 0, 1),
    }


def main() -> int:
    parser = argparse.ArgumentParser(
        description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter
    )
    parser.add_argument("--concurrency", default="2", help="worker processes per run")
    parser.add_argument("--replications", type=int, default=200)
    parser.add_argument("--record", action="store_true", help="write bench/baselines.json")
    args = parser.parse_args()
    os.environ.update(ENV)
    bw.DATABASE = DATABASE  # recreate_database() drops and creates this one
    bw.LIMITS = LIMITS  # what timed_run gives its workers
    import django

    django.setup()
    load_before = os.getloadavg()[0]
    bw.recreate_database()
    experiment = store_experiment(args.replications)
    runs = []
    with tempfile.TemporaryDirectory(prefix="bench-planner-") as var_dir:
        for concurrency in (int(c) for c in args.concurrency.split(",")):
            runs.append(bw.timed_run(experiment, concurrency, Path(var_dir)))
            runs[-1].update(read_plan(experiment), celery_tasks=celery_tasks(experiment))
            print(json.dumps(runs[-1]), file=sys.stderr)
    figures = {
        "preset": PRESET,
        "replications": args.replications,
        "runs": runs,
        "cpus": os.cpu_count(),
        "load_average_before": round(load_before, 2),
        "load_average_after": round(os.getloadavg()[0], 2),
        "database": "postgresql",
        "broker": "redis",
    }
    print(json.dumps(figures, indent=2))
    if args.record:
        _record(figures)
    return 0


def _record(figures: dict[str, Any]) -> None:
    data = json.loads(bw.BASELINES.read_text()) if bw.BASELINES.exists() else {}
    data["planner_workers"] = {
        **figures,
        "python": platform.python_version(),
        "machine": platform.machine(),
        "recorded": time.strftime("%Y-%m-%d"),
    }
    bw.BASELINES.write_text(json.dumps(data, indent=2, sort_keys=True) + "\n")


if __name__ == "__main__":
    raise SystemExit(main())
