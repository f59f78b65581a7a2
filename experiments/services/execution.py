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

Guard rails: a simulation that runs out of memory (the pool process's address-space cap,
``LAB_WORKER_MEMORY_LIMIT_MB``) or past its deadline (``LAB_SIMULATION_DEADLINE_SECONDS``)
fails its run at once, with the reason: delivering it again would only repeat it. A
database that cannot be reached fails nothing: a lost heartbeat is skipped, the store is
retried with back-off (the result is kept in memory), and a claim that cannot be made
is handed back to the task to retry later (``Outcome.DATABASE_DOWN``).
"""

from __future__ import annotations

import contextlib
import itertools
import logging
import operator
import time
from collections.abc import Callable
from dataclasses import dataclass
from datetime import datetime, timedelta
from typing import Any

from celery.exceptions import SoftTimeLimitExceeded
from django.conf import settings
from django.db import InterfaceError, OperationalError, connection, transaction
from django.utils import timezone

import scheduler_core as sc
from experiments import event_log
from experiments.models import (
    RESULT_BLOBS,
    TERMINAL_STATUSES,
    Replication,
    Run,
    Status,
    WorkloadRecord,
    spec_digest_of,
    timeline_costs_of,
)
from experiments.services.outcome import Outcome
from experiments.services.runs import run_fail
from experiments.services.timelines import heatmap_rows_of
from scheduler_core import timeline as core_timeline
from scheduler_core.gc_pause import gc_paused
from scheduler_core.metrics import RECORD_FIELDS
from scheduler_core.spec import ResolvedVariant

logger = logging.getLogger(__name__)


DATABASE_ERRORS = (OperationalError, InterfaceError)
DB_RETRY_FIRST_SECONDS = 0.5
DB_RETRY_MAX_SECONDS = 10.0


class ReplicationAbandonedError(Exception):
    """This delivery no longer owns the replication (cancelled, or taken over)."""


class SimulationDeadlineError(Exception):
    """The simulation ran past ``LAB_SIMULATION_DEADLINE_SECONDS``."""


def replication_execute(*, replication_id: int) -> Outcome:
    """Run one replication to completion, or learn why not. Safe to call repeatedly."""
    try:
        claim = _claim(replication_id)
    except DATABASE_ERRORS:
        logger.warning(
            "replication %s: database unreachable, claim deferred", replication_id, exc_info=True
        )
        _drop_connection()
        return Outcome.DATABASE_DOWN
    if isinstance(claim, Outcome):
        return claim
    replication, attempt = claim
    try:
        reason = _run(replication, attempt)
    except DATABASE_ERRORS:
        # Still down after LAB_DB_RETRY_SECONDS: the claim stands, its heartbeat ages,
        # and the retried task (or another delivery) takes the work over once it is stale.
        logger.warning(
            "replication %s: database unreachable, handed back", replication_id, exc_info=True
        )
        _drop_connection()
        return Outcome.DATABASE_DOWN
    if reason:
        run_fail(
            run_id=replication.run_id,
            reason=(
                f"variant '{replication.variant}' replication {replication.replication} {reason}"
            ),
        )
    return Outcome.DONE


@gc_paused()
def _run(replication: Replication, attempt: int) -> str:
    """Simulate and store; the reason the run must fail, or ``""``. Out of memory, the
    result and the simulator's state are gone by the time the reason is returned (the
    exception and its frames die with the ``except`` block), so failing has room.

    The cyclic collector is paused throughout (``gc_pause``): every phase builds tens of
    thousands of long-lived objects next to the others' (a recorded cluster's spec, a
    70,000-event log, its decision records), and with the collector on, its full passes
    over all of them took half of the timeline's and encoding's time on the openb trace,
    and lengthened the store, which holds the run's row lock. It resumes however the task
    ends, before a failure is written, and its first pass frees the simulator's cycles."""
    try:
        result = _simulate(replication, attempt)
        _retrying(lambda: _store(replication, attempt, result))
    except ReplicationAbandonedError:
        logger.info("replication %s: abandoned by attempt %s", replication.pk, attempt)
    except MemoryError:
        logger.warning("replication %s ran out of memory", replication.pk)
        limit = settings.LAB_WORKER_MEMORY_LIMIT_MB
        return (
            "ran out of memory: the simulation needed more than the worker's cap of "
            f"{limit} MB (LAB_WORKER_MEMORY_LIMIT_MB); make the spec smaller "
            "(fewer pods, nodes or days)"
            if limit
            else "ran out of memory; make the spec smaller (fewer pods, nodes or days)"
        )
    except SimulationDeadlineError:
        return (
            f"took longer than the simulation deadline of "
            f"{settings.LAB_SIMULATION_DEADLINE_SECONDS:g} s "
            "(LAB_SIMULATION_DEADLINE_SECONDS)"
        )
    except SoftTimeLimitExceeded:
        return (
            f"took longer than the task time limit of {settings.CELERY_TASK_SOFT_TIME_LIMIT} "
            "s (CELERY_TASK_TIME_LIMIT)"
        )
    except DATABASE_ERRORS:
        raise
    except Exception as exc:
        logger.exception("replication %s failed", replication.pk)
        return f"failed: {type(exc).__name__}: {exc}"
    return ""


def _retrying(step: Callable[[], None]) -> None:
    """``step`` until it goes through, waiting out a database blip with doubling pauses
    for up to ``LAB_DB_RETRY_SECONDS``; then the last database error is raised."""
    deadline = time.monotonic() + settings.LAB_DB_RETRY_SECONDS
    pause = DB_RETRY_FIRST_SECONDS
    while True:
        try:
            step()
            return
        except DATABASE_ERRORS:
            if time.monotonic() + pause > deadline:
                raise
            logger.warning("database unreachable; storing again in %.1f s", pause, exc_info=True)
            _drop_connection()
            time.sleep(pause)
            pause = min(pause * 2, DB_RETRY_MAX_SECONDS)


def _drop_connection() -> None:
    """Forget a broken connection, so the next query opens a fresh one (not inside an
    outer transaction, which owns the connection: tests run in one)."""
    if connection.in_atomic_block:
        return
    with contextlib.suppress(*DATABASE_ERRORS):
        connection.close()


@gc_paused()
def _claim(replication_id: int) -> tuple[Replication, int] | Outcome:
    """Take the replication for this delivery; returns it with the attempt number.

    The row is read without the columns an earlier delivery may have stored, which this
    one replaces, and without the run's frozen spec (1.9 MB of JSON for the openb trace,
    hundreds of thousands of objects): the task reads it only if this worker has not
    parsed it yet (:func:`_frozen_variant`, by ``Run.spec_digest``). Reading and
    decoding it, and hashing it again to know it, were 0.13 s of every openb task and
    38 ms of the database's. With the collector paused, as for the task's work."""
    replication = (
        Replication.objects.select_related("run")
        .defer(*RESULT_BLOBS, "run__aggregate", "run__spec")
        .filter(pk=replication_id)
        .first()
    )
    if (
        replication is None
        or replication.run.is_terminal
        or replication.status in TERMINAL_STATUSES
    ):
        return Outcome.DONE
    now = timezone.now()
    if replication.status == Status.RUNNING and not _is_stale(replication, now):
        return Outcome.BUSY
    if replication.attempt >= settings.LAB_MAX_ATTEMPTS:
        run_fail(
            run_id=replication.run_id,
            reason=(
                f"variant '{replication.variant}' replication {replication.replication}: "
                f"the worker was lost {replication.attempt} times while simulating it"
            ),
        )
        return Outcome.DONE
    attempt = replication.attempt + 1
    claimed = Replication.objects.filter(
        pk=replication_id,
        attempt=replication.attempt,
        status__in=(Status.QUEUED, Status.RUNNING),
    ).update(status=Status.RUNNING, attempt=attempt, progress=0.0, heartbeat_at=now, started_at=now)
    if not claimed:
        return Outcome.BUSY
    Run.objects.filter(pk=replication.run_id, status=Status.QUEUED).update(
        status=Status.RUNNING, started_at=now
    )
    return replication, attempt


def _is_stale(replication: Replication, now: datetime) -> bool:
    limit = timedelta(seconds=settings.LAB_HEARTBEAT_STALE_SECONDS)
    return replication.heartbeat_at is None or now - replication.heartbeat_at > limit


class _ProgressReporter:
    """The ``progress`` callback: a heartbeat at most every LAB_PROGRESS_EVERY_SECONDS,
    and the place where a cancelled or taken-over delivery finds out it must stop."""

    def __init__(self, replication_id: int, attempt: int) -> None:
        self.replication_id = replication_id
        self.attempt = attempt
        self.last = float("-inf")  # the first report always writes
        self.deadline = time.monotonic() + settings.LAB_SIMULATION_DEADLINE_SECONDS

    def __call__(self, fraction: float) -> None:
        clock = time.monotonic()
        if clock > self.deadline:
            raise SimulationDeadlineError
        if clock - self.last < settings.LAB_PROGRESS_EVERY_SECONDS and fraction < 1.0:
            return
        self.last = clock
        try:
            self.beat(min(fraction, 0.99))
        except DATABASE_ERRORS:
            # A missed heartbeat costs nothing while the database is back within
            # LAB_HEARTBEAT_STALE_SECONDS; the simulation goes on, the next beat reconnects.
            logger.warning(
                "replication %s: heartbeat skipped (database unreachable)", self.replication_id
            )
            _drop_connection()

    def beat(self, fraction: float | None = None) -> None:
        values: dict[str, datetime | float] = {"heartbeat_at": timezone.now()}
        if fraction is not None:
            values["progress"] = fraction
        updated = Replication.objects.filter(
            pk=self.replication_id,
            attempt=self.attempt,
            status=Status.RUNNING,
        ).update(**values)
        if not updated:
            raise ReplicationAbandonedError


def _simulate(replication: Replication, attempt: int) -> _Result:
    """Parse the run's frozen spec, simulate this replication, derive its timeline and
    encode its log (with the collector paused: :func:`_run`)."""
    reporter = _ProgressReporter(replication.pk, attempt)
    spec, resolved = _frozen_variant(replication.run, replication.variant)
    result = sc.simulate(spec, resolved, replication.replication, progress=reporter)
    # What the time charts draw, derived here once rather than on a page's first view;
    # no more spans built than the row keeps (the core stops reading them past it).
    timeline = core_timeline.build(
        result.events,
        resolved.spec,
        max_spans=settings.LAB_MAX_STORED_TIMELINE_SPANS,
        node_rows=heatmap_rows_of(resolved.spec),
    ).to_json()
    # Encoded here too, outside the transaction that stores it: the lock is held for a
    # write of one column, not for the compression.
    log = encode_event_log(result)
    _retrying(reporter.beat)  # still ours? (cheap) and a fresh heartbeat before the write
    return _Result(result, timeline, log)


_FrozenKey = tuple[str, str]
_parsed: dict[str, sc.ExperimentSpec] = {}
_resolved: dict[_FrozenKey, ResolvedVariant] = {}


def _frozen_variant(run: Run, variant: str) -> tuple[sc.ExperimentSpec, ResolvedVariant]:
    """The run's frozen spec parsed and ``variant`` resolved, as this worker process last
    made them when the document is the same. A run's replications arrive variant by
    variant, so a worker that takes several parses the spec once and resolves each
    variant once for its replications (resolving it once serves the simulation and the
    timeline too: ``core_timeline.for_variant`` would resolve it again): on openb that
    was 0.26 s of each 1.9 s task. Keyed by the digest of the document itself
    (``Run.spec_digest``, written with the spec; computed here for a row from before it
    existed), never by a row id, so a reused id or an edited copy cannot be served a
    stale parse; both are pure functions of the document. The spec is read from the
    database only when it must be parsed. One spec and one variant are kept (a variant
    with overrides is a second copy of the whole spec), replaced by the next run's."""
    digest = run.spec_digest or spec_digest_of(run.spec)
    spec = _parsed.get(digest)
    if spec is None:
        _parsed.clear()
        _resolved.clear()
        # validated whole when the run started: this task resolves (and validates) only
        # its own variant
        spec = _parsed[digest] = sc.parse_spec(run.spec, check_variants=False)
    resolved = _resolved.get((digest, variant))
    if resolved is None:
        _resolved.clear()
        resolved = _resolved[(digest, variant)] = sc.resolve_variant(spec, variant)
    return spec, resolved


@dataclass(frozen=True, slots=True)
class _Result:
    """A simulation's result, the timeline derived from it and its encoded event log,
    as they are stored."""

    simulation: sc.ReplicationResult
    timeline: dict[str, Any]
    event_log: bytes


@transaction.atomic
def _store(claimed: Replication, attempt: int, result: _Result) -> None:
    """Write the result if this delivery still owns the replication; else write nothing.

    Both rows are locked and read with only the columns the checks need: the run's
    frozen spec (1.9 MB of JSON for the openb trace) and the replication's stored
    columns, which this write replaces, are not decoded while the run's lock is held
    (they were 0.76 s of a task's store). Saving writes the loaded columns and those
    assigned here."""
    run = Run.objects.select_for_update().only("status").get(pk=claimed.run_id)
    replication = (
        Replication.objects.select_for_update()
        .only("run_id", "status", "attempt")
        .get(pk=claimed.pk)
    )
    if run.is_terminal or replication.status != Status.RUNNING or replication.attempt != attempt:
        raise ReplicationAbandonedError
    replication.timeline = result.timeline
    replication.timeline_costs = timeline_costs_of(result.timeline)
    replication.event_log = result.event_log  # replaces an earlier delivery's, if any
    _set_result(replication, result.simulation)
    _insert_records(replication, result.simulation)
    done = run.replications.filter(status=Status.SUCCEEDED).count()
    run.progress = done / run.replications.count()
    run.save(update_fields=["progress"])


def encode_event_log(result: sc.ReplicationResult) -> bytes:
    """The event log as it is stored (``experiments.event_log``), each event with the
    id of the decision that explains it. Built column by column (a list comprehension
    per column, the reasons as the simulator's own ``str`` members), not a tuple per
    event."""
    events = result.events
    links = decision_links(result)
    reasons = [e.reason for e in events]
    if links:
        decisions: list[int | None] = [
            links.get((e.time, str(reason), e.pod or e.workload))
            for e, reason in zip(events, reasons, strict=True)
        ]
    else:
        decisions = [None] * len(events)
    return event_log.encode_columns(
        (
            [e.time for e in events],
            reasons,
            [e.workload for e in events],
            [e.pod for e in events],
            [e.node for e in events],
            [float(e.value) for e in events],
            [e.related for e in events],
            [e.message for e in events],
            decisions,
        )
    )


RECORD_BATCH = 2000
_RECORD_COLUMNS = ("replication_id", "position", *RECORD_FIELDS)
_record_values = operator.attrgetter(*RECORD_FIELDS)
"""A record's fields as a tuple, in ``RECORD_FIELDS`` order (one C call per record)."""


def _insert_records(replication: Replication, result: sc.ReplicationResult) -> None:
    """The per-workload records as rows, in the simulator's order, replacing an earlier
    delivery's. Plain tuples, no model objects (openb has 7,254 records: bulk_create
    took 20 s of a loaded machine where COPY takes a fraction); PostgreSQL gets them
    through COPY, the others in batches."""
    WorkloadRecord.objects.filter(replication=replication).delete()
    rows = (
        (replication.pk, position, *_record_values(record))
        for position, record in enumerate(result.workloads)
    )
    table = connection.ops.quote_name(WorkloadRecord._meta.db_table)
    columns = ", ".join(connection.ops.quote_name(c) for c in _RECORD_COLUMNS)
    with connection.cursor() as cursor:
        if connection.vendor == "postgresql":
            with cursor.cursor.copy(f"COPY {table} ({columns}) FROM STDIN") as copy:
                for row in rows:
                    copy.write_row(row)
            return
        placeholders = ", ".join(["%s"] * len(_RECORD_COLUMNS))
        insert = f"INSERT INTO {table} ({columns}) VALUES ({placeholders})"
        while batch := list(itertools.islice(rows, RECORD_BATCH)):
            cursor.executemany(insert, batch)


def decision_links(result: sc.ReplicationResult) -> dict[tuple[float, str, str], int]:
    """(time, reason, pod or workload) of an event -> the decision that explains it; each
    record names the events it explains, so the web app never guesses from event names."""
    return {key: d.id for d in result.decisions for key in d.events}


def _set_result(replication: Replication, result: sc.ReplicationResult) -> None:
    """The replication's result columns, read from the result itself: its ``to_dict``
    also turns every per-workload record into a dict (7,254 on the openb trace, 1.2 s),
    which the rows below (:func:`_insert_records`) store instead."""
    replication.decisions = [d.as_dict() for d in result.decisions]
    replication.diagnosis = result.diagnosis
    for field in (
        "seed",
        "preemption",
        "placement",
        "summary",
        "distributions",
        "by_priority_class",
        "events_processed",
        "wall_seconds",
    ):
        setattr(replication, field, getattr(result, field))
    replication.event_count = len(result.events)
    replication.status = Status.SUCCEEDED
    replication.progress = 1.0
    replication.finished_at = timezone.now()
    replication.save()
