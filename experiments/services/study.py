"""Placement-study runs on the workers: one task per chunk of one variant's seeds.

A study run takes about a second and stores a few kilobytes, so one Celery task per
replication would spend much of the run on round trips (a message, a chord count, a
spec parse and a Study built per seed). A task takes ``LAB_STUDY_CHUNK`` replications
of one variant instead (``study_chunks``): it parses the frozen spec and builds the
study once, then runs the seeds in turn, storing each one as it ends, so the run's
progress moves seed by seed.

Each replication keeps the replay's guarantees (``services.execution``): it is claimed
with a conditional update on ``attempt``, its heartbeat says it is alive, its result is
written in one transaction that re-checks the claim, and a cancelled run stops the chunk
at the next seed. The core computes every number stored: ``study_record`` per seed,
``study_summary`` per variant when the run is finalized.
"""

from __future__ import annotations

import logging
from collections.abc import Sequence
from itertools import groupby
from typing import Any

from django.conf import settings
from django.db import transaction
from django.utils import timezone

import scheduler_core as sc
from experiments.models import Replication, Run, Status
from experiments.services import execution
from experiments.services.outcome import Outcome
from experiments.services.runs import run_fail
from scheduler_core.placement_study import StudyRun
from scheduler_core.study_spec import (
    paper_delta,
    policy_order,
    published_points,
    run_variant_study,
    study_record,
    study_summary,
)

logger = logging.getLogger(__name__)


def is_study(spec: dict[str, Any]) -> bool:
    """Whether a stored (camelCase) spec is a placement study."""
    return spec.get("placementStudy") is not None


def study_chunks(replications: Sequence[Replication], size: int) -> list[list[int]]:
    """Replication ids in chunks of at most ``size``, one variant per chunk, in run order."""
    ordered = sorted(replications, key=lambda r: (r.variant_index, r.replication))
    chunks: list[list[int]] = []
    for _, group in groupby(ordered, key=lambda r: r.variant_index):
        ids = [r.pk for r in group]
        chunks.extend(ids[i : i + size] for i in range(0, len(ids), max(1, size)))
    return chunks


def study_chunk_execute(*, replication_ids: Sequence[int]) -> Outcome:
    """Run a chunk's replications that are not done yet. ``BUSY`` when another delivery
    holds some of them (the task retries and finds them done or stale); safe to repeat."""
    claims: list[tuple[Replication, int]] = []
    busy = False
    for replication_id in replication_ids:
        try:
            claim = execution._claim(replication_id)
        except execution.DATABASE_ERRORS:
            execution._drop_connection()
            return Outcome.DATABASE_DOWN
        if claim is Outcome.BUSY:
            busy = True
        elif not isinstance(claim, Outcome):
            claims.append(claim)
    if claims:
        reason = _run_chunk(claims)
        if reason:
            first = claims[0][0]
            run_fail(run_id=first.run_id, reason=f"variant '{first.variant}' {reason}")
            return Outcome.DONE
    return Outcome.BUSY if busy else Outcome.DONE


def _run_chunk(claims: list[tuple[Replication, int]]) -> str:
    """Simulate the claimed seeds of one variant, storing each as it ends; the reason the
    run must fail, or ``""``."""
    first = claims[0][0]
    attempts = {r.replication: (r, attempt) for r, attempt in claims}
    reporters = {
        number: execution._ProgressReporter(r.pk, attempt)
        for number, (r, attempt) in attempts.items()
    }

    pending = set(attempts)

    def store(number: int, run: StudyRun) -> None:
        replication, attempt = attempts[number]
        reporters[number].beat()  # still ours? a fresh heartbeat before the write
        execution._retrying(lambda: _store(replication, attempt, run))
        pending.discard(number)
        # The seeds still waiting in this chunk are alive too: one heartbeat for all, so
        # none looks stale to another delivery or the sweep while its turn comes.
        Replication.objects.filter(
            pk__in=[attempts[n][0].pk for n in pending], status=Status.RUNNING
        ).update(heartbeat_at=timezone.now())

    try:
        spec = sc.parse_spec(first.run.spec, check_variants=False)
        for reporter in reporters.values():
            reporter.beat(0.0)
        run_variant_study(spec, first.variant, sorted(attempts), each=store)
    except execution.ReplicationAbandonedError:
        logger.info("study chunk of run %s abandoned", first.run_id)
    except MemoryError:
        return "ran out of memory; make the study smaller (fewer pods or nodes)"
    except execution.DATABASE_ERRORS:
        raise
    except Exception as exc:
        logger.exception("study chunk of run %s failed", first.run_id)
        return f"failed: {type(exc).__name__}: {exc}"
    return ""


@transaction.atomic
def _store(claimed: Replication, attempt: int, run: StudyRun) -> None:
    """One seed's record, if this delivery still owns the replication."""
    parent = Run.objects.select_for_update().get(pk=claimed.run_id)
    replication = Replication.objects.select_for_update().defer("event_log").get(pk=claimed.pk)
    if parent.is_terminal or replication.status != Status.RUNNING or replication.attempt != attempt:
        raise execution.ReplicationAbandonedError
    record = study_record(run)
    replication.study = record
    replication.seed = run.seed
    replication.placement = run.policy
    replication.summary = {}
    replication.status = Status.SUCCEEDED
    replication.progress = 1.0
    replication.finished_at = timezone.now()
    replication.save(
        update_fields=[
            "study",
            "seed",
            "placement",
            "summary",
            "status",
            "progress",
            "finished_at",
        ]
    )
    done = parent.replications.filter(status=Status.SUCCEEDED).count()
    parent.progress = done / parent.replications.count()
    parent.save(update_fields=["progress"])


def study_aggregates(
    spec_document: dict[str, Any], replications: Sequence[Replication]
) -> list[dict[str, Any]]:
    """Per variant, in run order: the core's summary of its seeds (``study_summary``),
    the paper's published point for its policy when the spec names a paper workload, and
    its rank by mean allocation at the asked load. ``metrics`` stays empty: a study has
    none of the replay's metrics."""
    spec = sc.parse_spec(spec_document, check_variants=False)
    paper = published_points(spec)
    by_variant: dict[int, list[Replication]] = {}
    for replication in replications:
        by_variant.setdefault(replication.variant_index, []).append(replication)
    rows: list[dict[str, Any]] = []
    for _, reps in sorted(by_variant.items()):
        records = [r.study for r in sorted(reps, key=lambda r: r.replication) if r.study]
        policy = reps[0].placement
        summary = study_summary(records)
        rows.append(
            {
                "variant": reps[0].variant,
                "preemption": "",
                "placement": policy,
                "metrics": {},
                "study": summary,
                "paper": paper.get(policy),
                "paperDelta": paper_delta(summary, paper.get(policy)),
            }
        )
    order = policy_order({row["variant"]: row["study"] for row in rows})
    for row in rows:
        row["rank"] = order.index(row["variant"]) + 1
    return rows


def chunk_size() -> int:
    """Replications per study task (``LAB_STUDY_CHUNK``, default 10)."""
    return max(1, int(settings.LAB_STUDY_CHUNK))
