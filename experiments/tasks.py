"""Celery tasks: ids in, one service call, nothing else.

A run is a chord: ``simulate_replications`` tasks, each for a chunk of consecutive
(variant, replication) rows, then ``aggregate_run``. A run of many small replications
(the checkpoint planner's 2,400) would otherwise pay a task round trip per replication;
a run of a few large ones still gets one task per replication (:func:`chunks`). Task ids
are derived from the run (its id and random token) and the rows' ids, so a cancel can
revoke them without storing anything, and no id ever meets a stale result of another run
in the result backend (row ids restart with a database).
"""

from __future__ import annotations

import logging
import math
import time
from typing import Any

from celery import Task, chord, shared_task
from django.conf import settings
from django.core.cache import cache
from django.db import InterfaceError, OperationalError, close_old_connections

from experiments import services
from experiments.models import Run
from experiments.services import Outcome
from experiments.services.exports import export_build, exports_sweep

logger = logging.getLogger(__name__)
AGGREGATE_RETRY_SECONDS = 5
DATABASE_RETRY_MAX_SECONDS = 60


def database_backoff(retries: int) -> float:
    """Seconds before trying again with the database down: 2, 4, 8, ... up to a minute."""
    return float(min(DATABASE_RETRY_MAX_SECONDS, 2 ** (retries + 1)))


def busy_countdown() -> float:
    """How long a delivery that found its rows running elsewhere waits before it looks
    again: half the heartbeat's staleness, so a dead holder is noticed on the next look."""
    return max(1.0, settings.LAB_HEARTBEAT_STALE_SECONDS / 2)


def retry_unless_done(task: Task, outcome: Outcome) -> None:
    """Send the task back to the queue unless its work is done: later for rows another
    delivery holds (BUSY), with back-off while the database is down. The chord counts a
    task only when it returns, so a retry keeps the run's completion exact."""
    if outcome is Outcome.BUSY:
        raise task.retry(countdown=busy_countdown())
    if outcome is Outcome.DATABASE_DOWN:
        raise task.retry(countdown=database_backoff(task.request.retries))


def replication_task_id(run: Run, replication_id: int) -> str:
    return f"run-{run.pk}-{run.task_token}-replication-{replication_id}"


def chunk_task_id(run: Run, chunk: list[int]) -> str:
    return f"run-{run.pk}-{run.task_token}-replications-{chunk[0]}-{chunk[-1]}"


def replication_chunks(replication_ids: list[int], tasks: int | None = None) -> list[list[int]]:
    """The rows in id order (variant by variant), cut into at most ``tasks`` chunks of
    equal size (``LAB_TASKS_PER_RUN``): a run with no more rows than that gets one task
    per replication, as before, so large replications still spread over every worker;
    beyond it, each task takes several and the per-task cost is paid once per chunk."""
    ordered = sorted(replication_ids)
    size = max(1, math.ceil(len(ordered) / (tasks or settings.LAB_TASKS_PER_RUN)))
    return [ordered[i : i + size] for i in range(0, len(ordered), size)]


def study_task_id(run: Run, first_replication_id: int) -> str:
    """A study chunk is named by its first replication (``revoke_run`` derives them all)."""
    return f"run-{run.pk}-{run.task_token}-study-{first_replication_id}"


def aggregate_task_id(run: Run) -> str:
    return f"run-{run.pk}-{run.task_token}-aggregate"


@shared_task(
    bind=True,
    name="experiments.tasks.simulate_replication",
    max_retries=None,
    acks_late=True,
    reject_on_worker_lost=True,
)
def simulate_replication(self: Task, replication_id: int) -> int:
    """Simulate one (variant, replication). A duplicate delivery that finds the work in
    progress elsewhere waits and looks again, so the chord only counts it when done.
    Runs are now sent as chunks (``simulate_replications``); this one stays for the
    messages an earlier version queued."""
    retry_unless_done(self, services.replication_execute(replication_id=replication_id))
    return replication_id


@shared_task(
    bind=True,
    name="experiments.tasks.simulate_replications",
    max_retries=None,
    acks_late=True,
    reject_on_worker_lost=True,
)
def simulate_replications(self: Task, replication_ids: list[int]) -> list[int]:
    """Simulate a chunk of replications one after another (each reports its own progress
    and is stored on its own, exactly as ``simulate_replication`` does it). The rows
    still to do go back to the queue as a retry of this task, so the chord counts the
    chunk once all are done: after ``LAB_TASK_CHUNK_SECONDS`` (no delivery outlives the
    broker's visibility timeout or the task time limit), with the database down (with
    back-off), or for rows another delivery is running (they are looked at again later)."""
    started = time.monotonic()
    busy: list[int] = []
    for position, replication_id in enumerate(replication_ids):
        if position and time.monotonic() - started > settings.LAB_TASK_CHUNK_SECONDS:
            raise self.retry(args=[busy + replication_ids[position:]], countdown=0)
        outcome = services.replication_execute(replication_id=replication_id)
        if outcome is Outcome.DATABASE_DOWN:
            rest = busy + replication_ids[position:]
            raise self.retry(args=[rest], countdown=database_backoff(self.request.retries))
        if outcome is Outcome.BUSY:
            busy.append(replication_id)
    if busy:
        raise self.retry(args=[busy], countdown=busy_countdown())
    return replication_ids


@shared_task(
    bind=True,
    name="experiments.tasks.simulate_study_chunk",
    max_retries=None,
    acks_late=True,
    reject_on_worker_lost=True,
)
def simulate_study_chunk(self: Task, replication_ids: list[int]) -> list[int]:
    """Run a chunk of one placement-study variant's seeds (``services.study``): one task
    per chunk, not per seed, because a study run is about a second."""
    retry_unless_done(self, services.study_chunk_execute(replication_ids=replication_ids))
    return replication_ids


@shared_task(
    bind=True,
    name="experiments.tasks.aggregate_run",
    max_retries=None,
    acks_late=True,
    reject_on_worker_lost=True,
)
def aggregate_run(self: Task, _chunks: list[Any], run_id: int) -> int:
    """The chord's callback: aggregate the run once every replication has its result.
    A database blip is waited out (with back-off) rather than losing the run."""
    try:
        outcome = services.run_finalize(run_id=run_id)
    except (OperationalError, InterfaceError):
        logger.warning("run %s: database unreachable while aggregating", run_id, exc_info=True)
        close_old_connections()
        raise self.retry(countdown=database_backoff(self.request.retries)) from None
    if outcome is Outcome.BUSY:
        raise self.retry(countdown=AGGREGATE_RETRY_SECONDS)
    return run_id


@shared_task(name="experiments.tasks.build_export", acks_late=True, reject_on_worker_lost=True)
def build_export(
    run_id: int, task_token: str, table: str, fmt: str, filters: dict[str, Any], slot: str
) -> str | None:
    """Write one export of a succeeded run to its file (issue #10 §4), once; ``slot``
    is the requesting user's build slot, let go when done."""
    return export_build(
        run_id=run_id, task_token=task_token, table=table, fmt=fmt, filters=filters, slot=slot
    )


@shared_task(name="experiments.tasks.sweep_stale_runs")
def sweep_stale_runs() -> list[int]:
    """Periodic watchdog (Celery beat): fail runs whose worker vanished, and, at most
    once per ``LAB_EXPORT_SWEEP_SECONDS``, remove export files no run owns."""
    changed = services.runs_sweep_stale()
    if cache.add("export-sweep", 1, settings.LAB_EXPORT_SWEEP_SECONDS):
        exports_sweep()
    return changed


def enqueue_run(
    *, run: Run, replication_ids: list[int], chunks: list[list[int]] | None = None
) -> None:
    """Send a run's chord. Called by ``run_enqueue`` once its rows are committed; a
    placement study sends its ``chunks`` of replications (one variant's seeds each) to
    ``simulate_study_chunk``, a replay its rows cut by ``replication_chunks``."""
    if chunks is not None:
        header = [
            simulate_study_chunk.si(ids).set(task_id=study_task_id(run, ids[0])) for ids in chunks
        ]
    else:
        header = [
            simulate_replications.si(chunk).set(task_id=chunk_task_id(run, chunk))
            for chunk in replication_chunks(replication_ids)
        ]
    body = aggregate_run.s(run.pk).set(task_id=aggregate_task_id(run))
    chord(header)(body)


def run_task_ids(*, run: Run, replication_ids: list[int]) -> list[str]:
    """The ids of every task ``enqueue_run`` sent for the run, the callback last."""
    return [chunk_task_id(run, chunk) for chunk in replication_chunks(replication_ids)] + [
        aggregate_task_id(run)
    ]


def revoke_run(*, run: Run, replication_ids: list[int]) -> None:
    """Best effort: drop a cancelled run's tasks that no worker has started. Workers
    already running one stop on their own (the run's status says so), so a broker
    that cannot be reached only costs a little wasted work."""
    ids = run_task_ids(run=run, replication_ids=replication_ids)
    ids[-1:-1] = [study_task_id(run, rid) for rid in replication_ids]
    if settings.CELERY_TASK_ALWAYS_EAGER:
        return
    try:
        simulate_replication.app.control.revoke(ids)
    except Exception:
        logger.warning("could not revoke the tasks of run %s", run.pk, exc_info=True)
