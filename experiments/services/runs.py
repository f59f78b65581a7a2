"""A run's life: enqueue, cancel, fail, finalize, and the sweep that guarantees no run
stays "running" forever after its worker vanished.

Every transition locks the Run row first (``select_for_update``) and checks the status
it expects, so a cancel, a failure and a late result can race in any order and the
first one wins; the others find a terminal run and do nothing.
"""

from __future__ import annotations

import logging
from collections.abc import Sequence
from dataclasses import dataclass
from datetime import datetime, timedelta
from typing import Any, cast

from django.conf import settings
from django.contrib.auth import get_user_model
from django.contrib.auth.models import User
from django.db import transaction
from django.db.models import Max, Q
from django.utils import timezone

import scheduler_core as sc
from experiments.models import (
    ACTIVE_STATUSES,
    Experiment,
    Replication,
    Run,
    Status,
    WorkloadRecord,
)
from experiments.services.outcome import Outcome
from experiments.specs import product_version, spec_document, spec_parse

logger = logging.getLogger(__name__)


class RunStartThrottledError(Exception):
    """The user started their allowance of runs this period; ``retry_after`` seconds."""

    def __init__(self, retry_after: float) -> None:
        super().__init__(f"too many runs started; try again in {retry_after:.0f} s")
        self.retry_after = retry_after


@transaction.atomic
def run_start(*, experiment: Experiment, user: User, rate: tuple[int, int] | None) -> Run:
    """``run_enqueue`` under a per-user allowance of ``rate`` = (runs, seconds).

    The count and the insert are one step: the user's row is locked (``SELECT ... FOR
    UPDATE``) before counting their recent runs, so concurrent starts of one user queue
    behind each other and each one counts the runs the others inserted. (On SQLite the
    immediate transaction already serializes writers.) Raises ``RunStartThrottledError``.
    """
    if rate is not None:
        get_user_model().objects.select_for_update().filter(pk=user.pk).first()
        wait = _start_wait(user, *rate)
        if wait is not None:
            raise RunStartThrottledError(wait)
    return run_enqueue(experiment=experiment, user=user)


def _start_wait(user: User, limit: int, seconds: int) -> float | None:
    """Seconds until the oldest of the user's last ``limit`` runs leaves the window."""
    since = timezone.now() - timedelta(seconds=seconds)
    recent = list(
        Run.objects.filter(created_by=user, created_at__gte=since)
        .order_by("-created_at")
        .values_list("created_at", flat=True)[:limit]
    )
    if len(recent) < limit:
        return None
    return max(1.0, (recent[-1] - since).total_seconds())


@transaction.atomic
def run_enqueue(*, experiment: Experiment, user: User | None) -> Run:
    """Freeze the experiment's spec into a new run with one replication row per
    (variant, replication), and enqueue its chord once the rows are committed.

    Raises ``sc.SpecError`` if the spec no longer passes (limits may have changed).
    """
    spec = spec_parse(document=experiment.spec)
    run = Run.objects.create(
        experiment=experiment,
        created_by=user,
        spec=spec_document(spec),
        product_version=product_version(),
    )
    Replication.objects.bulk_create(
        Replication(run=run, variant_index=index, variant=name, replication=number)
        for index, name in enumerate(sc.variant_names(spec))
        for number in range(spec.replications)
    )
    replication_ids = list(run.replications.values_list("pk", flat=True))
    from experiments import tasks  # tasks call services: import at use, not at load
    from experiments.services.study import chunk_size, study_chunks

    chunks = (
        study_chunks(list(run.replications.all()), chunk_size())
        if spec.placement_study is not None
        else None
    )
    transaction.on_commit(
        lambda: tasks.enqueue_run(run=run, replication_ids=replication_ids, chunks=chunks)
    )
    return run


def run_cancel(*, run: Run) -> bool:
    """Stop a run: mark it cancelled, drop what it wrote, revoke its queued tasks.
    Running tasks notice at their next progress report and stop without writing."""
    cancelled = _stop(run_id=run.pk, status=Status.CANCELLED, reason="")
    if cancelled:
        from experiments import tasks

        ids = list(Replication.objects.filter(run_id=run.pk).values_list("pk", flat=True))
        transaction.on_commit(lambda: tasks.revoke_run(run=run, replication_ids=ids))
    run.refresh_from_db()
    return cancelled


def run_fail(*, run_id: int, reason: str) -> bool:
    """Mark a run failed with the reason shown on its page; keep none of its results."""
    failed = _stop(run_id=run_id, status=Status.FAILED, reason=reason)
    if failed:
        logger.warning("run %s failed: %s", run_id, reason)
    return failed


@transaction.atomic
def _stop(*, run_id: int, status: Status, reason: str) -> bool:
    run = Run.objects.select_for_update().filter(pk=run_id).first()
    if run is None or run.is_terminal:
        return False
    now = timezone.now()
    WorkloadRecord.objects.filter(replication__run_id=run_id).delete()
    run.replications.update(
        summary={},
        distributions={},
        by_priority_class={},
        event_count=0,
        event_log=None,
        study=None,
    )
    run.replications.filter(status__in=ACTIVE_STATUSES).update(status=status, finished_at=now)
    Run.objects.filter(pk=run_id).update(status=status, error=reason, finished_at=now, aggregate=[])
    return True


AGGREGATED_COLUMNS = (
    "run_id",
    "status",
    "variant_index",
    "variant",
    "replication",
    "preemption",
    "placement",
    "summary",
    "study",
)
"""The replication columns the run's aggregates are built from."""


@transaction.atomic
def run_finalize(*, run_id: int) -> Outcome:
    """The chord's last step: once every replication has succeeded, aggregate them per
    variant and mark the run succeeded. ``BUSY`` means some are not done yet."""
    run = Run.objects.select_for_update().filter(pk=run_id).first()
    if run is None or run.is_terminal:
        return Outcome.DONE
    # Only what the aggregates read: each replication's timeline, decisions and event
    # log stay in the database (decoding 48 openb timelines took seconds of this step).
    replications = list(
        run.replications.order_by("variant_index", "replication").only(*AGGREGATED_COLUMNS)
    )
    if any(r.status != Status.SUCCEEDED for r in replications):
        return Outcome.BUSY
    if run.spec.get("placementStudy") is not None:
        from experiments.services.study import study_aggregates  # it imports this module

        run.aggregate = study_aggregates(run.spec, replications)
    else:
        run.aggregate = variant_aggregates(replications)
    run.status = Status.SUCCEEDED
    run.progress = 1.0
    run.finished_at = timezone.now()
    _precompute_run_page(run)
    run.save(update_fields=["aggregate", "status", "progress", "finished_at"])
    transaction.on_commit(lambda: _precompute_timelines(run))
    return Outcome.DONE


def _precompute_run_page(run: Run) -> None:
    """The run page's charts, into the shared cache under the state about to be saved
    (issue #16 §5): the first browser to see the run succeeded reads them rather than
    drawing them. Before the save, so no viewer ever finds the run finished and its
    charts missing; a failure costs the page its head start only."""
    from experiments.selectors_run_page import run_page_precompute  # reads the views' glue

    seconds = run_page_precompute(run=run)
    logger.info("run %s: run page precomputed in %.2f s", run.pk, seconds)


def _precompute_timelines(run: Run) -> None:
    """The other variants' timelines, after the run is published (they do not hold its
    success back)."""
    from experiments.selectors_run_page import run_timelines_precompute

    seconds = run_timelines_precompute(run=run)
    logger.info("run %s: variant timelines precomputed in %.2f s", run.pk, seconds)


@dataclass(frozen=True, slots=True)
class _StoredReplication:
    """What ``sc.aggregate`` reads of a replication result: its summary."""

    summary: dict[str, float | None]


def variant_aggregates(replications: Sequence[Replication]) -> list[dict[str, Any]]:
    """Per variant, in run order: mean, 95% CI, min, max and n of every metric across its
    replications, computed by ``scheduler_core.aggregate`` (no second copy of the math)."""
    by_variant: dict[int, list[Replication]] = {}
    for replication in replications:
        by_variant.setdefault(replication.variant_index, []).append(replication)
    return [
        {
            "variant": reps[0].variant,
            "preemption": reps[0].preemption,
            "placement": reps[0].placement,
            "metrics": sc.aggregate(_as_results(reps)),
        }
        for _, reps in sorted(by_variant.items())
    ]


def _as_results(replications: list[Replication]) -> list[sc.ReplicationResult]:
    """Stored summaries in the shape ``sc.aggregate`` reads (it reads ``.summary`` only)."""
    return cast("list[sc.ReplicationResult]", [_StoredReplication(r.summary) for r in replications])


def runs_sweep_stale(*, now: datetime | None = None) -> list[int]:
    """The watchdog (a periodic task): no run stays active forever.

    1. A replication running without a heartbeat for ``LAB_WORKER_LOST_SECONDS`` lost
       its worker, and no other delivery took it over in time: fail its run, saying so.
    2. A running run with no activity at all for that long lost its queued tasks
       (a broker that keeps no unacknowledged messages): fail it.
    3. A run queued for ``LAB_QUEUED_TIMEOUT_SECONDS`` was never picked up: fail it.
    4. A run whose replications all succeeded but that was never aggregated (its chord
       callback was lost): finalize it.

    Returns the ids of the runs it changed.
    """
    now = now or timezone.now()
    lost_before = now - timedelta(seconds=settings.LAB_WORKER_LOST_SECONDS)
    changed = [
        run_id
        for run_id, reason in _lost_runs(lost_before)
        if run_fail(run_id=run_id, reason=reason)
    ]
    queued_before = now - timedelta(seconds=settings.LAB_QUEUED_TIMEOUT_SECONDS)
    for run_id in Run.objects.filter(
        status=Status.QUEUED, created_at__lt=queued_before
    ).values_list("pk", flat=True):
        reason = (
            f"no worker picked the run up within {settings.LAB_QUEUED_TIMEOUT_SECONDS:g} s "
            "(is a Celery worker running?)"
        )
        if run_fail(run_id=run_id, reason=reason):
            changed.append(run_id)
    for run_id in _unfinalized_runs():
        if run_finalize(run_id=run_id) is Outcome.DONE:
            changed.append(run_id)
    return changed


def _lost_runs(lost_before: datetime) -> list[tuple[int, str]]:
    silent = Replication.objects.filter(
        run__status=Status.RUNNING, status=Status.RUNNING, heartbeat_at__lt=lost_before
    ).order_by("run_id", "variant_index", "replication")
    found: dict[int, str] = {}
    for rep in silent:
        found.setdefault(
            rep.run_id,
            (
                f"worker lost: variant '{rep.variant}' replication {rep.replication} sent no "
                f"heartbeat for over {settings.LAB_WORKER_LOST_SECONDS:g} s "
                f"(attempt {rep.attempt}) and no other worker took it over"
            ),
        )
    idle = (
        Run.objects.filter(status=Status.RUNNING, started_at__lt=lost_before)
        .annotate(
            last_beat=Max("replications__heartbeat_at"),
            last_finish=Max("replications__finished_at"),
        )
        .filter(Q(last_beat__lt=lost_before) | Q(last_beat__isnull=True))
        .filter(Q(last_finish__lt=lost_before) | Q(last_finish__isnull=True))
        .filter(replications__status=Status.QUEUED)
        .distinct()
    )
    for run in idle:
        found.setdefault(
            run.pk,
            (
                f"tasks lost: nothing happened for over {settings.LAB_WORKER_LOST_SECONDS:g} s "
                "while some replications were still queued (the worker holding them stopped)"
            ),
        )
    return sorted(found.items())


def _unfinalized_runs() -> list[int]:
    unfinished = Replication.objects.exclude(status=Status.SUCCEEDED).values("run_id")
    return list(
        Run.objects.filter(status=Status.RUNNING)
        .exclude(pk__in=unfinished)
        .values_list("pk", flat=True)
    )
