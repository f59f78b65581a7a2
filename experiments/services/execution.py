"""Executing one (variant, replication): claim it, simulate it, store its results.

A Celery message can be delivered more than once (a worker killed before it
acknowledged, a visibility timeout passing), so every step is safe to repeat:

1. Claim with a conditional update on ``attempt`` (an optimistic version): a queued
   row, or a running row whose heartbeat went stale (its worker died). A duplicate that
   finds a fresh heartbeat gets ``BUSY`` and retries later instead of running twice.
2. Simulate, writing progress and a heartbeat at a throttled rate. A report that
   updates no row means the run was cancelled or another delivery took over: stop.
3. Store in one transaction that re-checks the claim, replacing anything an earlier
   delivery wrote: results are complete or absent, never half-written.
"""

from __future__ import annotations

import itertools
import logging
import time
from datetime import timedelta

from celery.exceptions import SoftTimeLimitExceeded
from django.conf import settings
from django.db import connection, transaction
from django.utils import timezone

import scheduler_core as sc
from experiments.models import TERMINAL_STATUSES, Replication, Run, RunEvent, Status
from experiments.services.outcome import Outcome
from experiments.services.runs import run_fail

logger = logging.getLogger(__name__)
EVENT_BATCH = 5000


class ReplicationAbandonedError(Exception):
    """This delivery no longer owns the replication (cancelled, or taken over)."""


def replication_execute(*, replication_id: int) -> Outcome:
    """Run one replication to completion, or learn why not. Safe to call repeatedly."""
    claim = _claim(replication_id)
    if isinstance(claim, Outcome):
        return claim
    replication, attempt = claim
    try:
        result = _simulate(replication, attempt)
        _store(replication, attempt, result)
    except ReplicationAbandonedError:
        logger.info("replication %s: abandoned by attempt %s", replication_id, attempt)
    except SoftTimeLimitExceeded:
        run_fail(run_id=replication.run_id, reason=(
            f"variant '{replication.variant}' replication {replication.replication} took "
            f"longer than the task time limit of {settings.CELERY_TASK_SOFT_TIME_LIMIT} s"))
    except Exception as exc:
        logger.exception("replication %s failed", replication_id)
        run_fail(run_id=replication.run_id, reason=(
            f"variant '{replication.variant}' replication {replication.replication} failed: "
            f"{type(exc).__name__}: {exc}"))
    return Outcome.DONE


def _claim(replication_id: int) -> tuple[Replication, int] | Outcome:
    """Take the replication for this delivery; returns it with the attempt number."""
    replication = Replication.objects.select_related("run").filter(pk=replication_id).first()
    if replication is None or replication.run.is_terminal or \
            replication.status in TERMINAL_STATUSES:
        return Outcome.DONE
    now = timezone.now()
    if replication.status == Status.RUNNING and not _is_stale(replication, now):
        return Outcome.BUSY
    if replication.attempt >= settings.LAB_MAX_ATTEMPTS:
        run_fail(run_id=replication.run_id, reason=(
            f"variant '{replication.variant}' replication {replication.replication}: the worker "
            f"was lost {replication.attempt} times while simulating it"))
        return Outcome.DONE
    attempt = replication.attempt + 1
    claimed = Replication.objects.filter(
        pk=replication_id, attempt=replication.attempt,
        status__in=(Status.QUEUED, Status.RUNNING),
    ).update(status=Status.RUNNING, attempt=attempt, progress=0.0, heartbeat_at=now,
             started_at=now)
    if not claimed:
        return Outcome.BUSY
    Run.objects.filter(pk=replication.run_id, status=Status.QUEUED).update(
        status=Status.RUNNING, started_at=now)
    return replication, attempt


def _is_stale(replication: Replication, now: timezone.datetime) -> bool:
    limit = timedelta(seconds=settings.LAB_HEARTBEAT_STALE_SECONDS)
    return replication.heartbeat_at is None or now - replication.heartbeat_at > limit


class _ProgressReporter:
    """The ``progress`` callback: a heartbeat at most every LAB_PROGRESS_EVERY_SECONDS,
    and the place where a cancelled or taken-over delivery finds out it must stop."""

    def __init__(self, replication_id: int, attempt: int) -> None:
        self.replication_id = replication_id
        self.attempt = attempt
        self.last = float("-inf")  # the first report always writes

    def __call__(self, fraction: float) -> None:
        clock = time.monotonic()
        if clock - self.last < settings.LAB_PROGRESS_EVERY_SECONDS and fraction < 1.0:
            return
        self.last = clock
        self.beat(min(fraction, 0.99))

    def beat(self, fraction: float | None = None) -> None:
        values = {"heartbeat_at": timezone.now()}
        if fraction is not None:
            values["progress"] = fraction
        updated = Replication.objects.filter(
            pk=self.replication_id, attempt=self.attempt, status=Status.RUNNING,
        ).update(**values)
        if not updated:
            raise ReplicationAbandonedError


def _simulate(replication: Replication, attempt: int) -> sc.ReplicationResult:
    reporter = _ProgressReporter(replication.pk, attempt)
    # The run's frozen spec was validated whole when the run started; this task resolves
    # (and validates) only its own variant.
    spec = sc.parse_spec(replication.run.spec, check_variants=False)
    result = sc.simulate(spec, replication.variant, replication.replication, progress=reporter)
    reporter.beat()  # still ours? (cheap) and a fresh heartbeat before the long write
    return result


@transaction.atomic
def _store(claimed: Replication, attempt: int, result: sc.ReplicationResult) -> None:
    """Write the result if this delivery still owns the replication; else write nothing."""
    run = Run.objects.select_for_update().get(pk=claimed.run_id)
    replication = Replication.objects.select_for_update().get(pk=claimed.pk)
    if run.is_terminal or replication.status != Status.RUNNING or replication.attempt != attempt:
        raise ReplicationAbandonedError
    RunEvent.objects.filter(replication=replication).delete()  # an earlier delivery's rows
    _insert_events(replication, result)
    _set_result(replication, result)
    done = run.replications.filter(status=Status.SUCCEEDED).count()
    run.progress = done / run.replications.count()
    run.save(update_fields=["progress"])


_EVENT_COLUMNS = ("replication_id", "seq", "time", "reason", "workload", "pod", "node", "value",
                  "related", "message")


def _insert_events(replication: Replication, result: sc.ReplicationResult) -> None:
    """Bulk-insert the event log as plain rows (no model objects: a run may have
    100,000 events). PostgreSQL gets them through COPY, the others in batches."""
    rows = ((replication.pk, seq, e.time, e.reason, e.workload, e.pod, e.node, float(e.value),
             e.related, e.message) for seq, e in enumerate(result.events))
    table = connection.ops.quote_name(RunEvent._meta.db_table)
    columns = ", ".join(connection.ops.quote_name(c) for c in _EVENT_COLUMNS)
    with connection.cursor() as cursor:
        if connection.vendor == "postgresql":
            with cursor.cursor.copy(f"COPY {table} ({columns}) FROM STDIN") as copy:
                for row in rows:
                    copy.write_row(row)
            return
        placeholders = ", ".join(["%s"] * len(_EVENT_COLUMNS))
        insert = f"INSERT INTO {table} ({columns}) VALUES ({placeholders})"
        while batch := list(itertools.islice(rows, EVENT_BATCH)):
            cursor.executemany(insert, batch)


def _set_result(replication: Replication, result: sc.ReplicationResult) -> None:
    data = result.to_dict(include_events=False)
    for field in ("seed", "preemption", "placement", "summary", "distributions",
                  "by_priority_class", "workloads", "events_processed", "wall_seconds"):
        setattr(replication, field, data[field])
    replication.event_count = len(result.events)
    replication.status = Status.SUCCEEDED
    replication.progress = 1.0
    replication.finished_at = timezone.now()
    replication.save()
