"""The first view of a large run after a restart (issue #12 §1): the run page's data
computed by a fresh process with an empty cache, from the timeline the worker stored
with each replication (``stored``) or derived from the event log as it was before
(``derive``). Not a test: run by hand.

    python bench/bench_timeline.py --setup            # build the run once (kept)
    python bench/bench_timeline.py --view stored      # one fresh-process first view
    python bench/bench_timeline.py --view derive      # the same, deriving from the log

Uses the 10,000-node, >100,000-event run of ``bench_run_page.py`` in a PostgreSQL
database of its own. Each ``--view`` prints the seconds ``run_charts`` took in-process;
time whole processes A/B alternately to compare on a shared machine.
"""

from __future__ import annotations

import argparse
import os
import sys
import tempfile
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))

from bench.bench_run_page import ensure_database, ensure_run, setup_django  # noqa: E402

DEFAULT_DATABASE = "postgres://postgres@127.0.0.1:5432/disruption_lab_bench_timeline"


def store_timelines(run_id: int) -> None:
    """What the worker now does at its store step, for a run built before it did."""
    from experiments.models import Replication
    from experiments.services.timelines import replication_timeline_derive

    for pk in Replication.objects.filter(run_id=run_id, timeline__isnull=True).values_list(
        "pk", flat=True
    ):
        replication_timeline_derive(replication_id=pk)


def first_view(run_id: int, mode: str) -> float:
    """Seconds to compute the run page's data with an empty cache. ``derive`` takes the
    path of a row stored without a timeline (read the log, derive, write it back), in a
    transaction rolled back afterwards, so the stored timelines stay."""
    from django.core.cache import cache
    from django.db import transaction

    from experiments.models import Replication, Run
    from experiments.views import chart_data

    cache.clear()
    with transaction.atomic():
        if mode == "derive":
            Replication.objects.filter(run_id=run_id).update(timeline=None)
        run = Run.objects.get(pk=run_id)
        started = time.perf_counter()
        chart_data.run_charts(run=run)
        elapsed = time.perf_counter() - started
        transaction.set_rollback(True)
    return elapsed


def main() -> int:
    parser = argparse.ArgumentParser(
        description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter
    )
    parser.add_argument(
        "--database-url", default=os.environ.get("BENCH_DATABASE_URL", DEFAULT_DATABASE)
    )
    parser.add_argument("--setup", action="store_true")
    parser.add_argument("--view", choices=("stored", "derive"))
    args = parser.parse_args()
    ensure_database(args.database_url)
    setup_django(args.database_url, tempfile.mkdtemp(prefix="bench-timeline-"))
    run_id, events = ensure_run()
    if args.setup:
        store_timelines(run_id)
        print(f"run {run_id}: {events:,} events, timelines stored", file=sys.stderr)
    if args.view:
        print(f"{args.view}: run_charts {first_view(run_id, args.view):.3f} s ({events:,} events)")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
