"""Reads: who may see what, and the shapes the pages (and later the API and charts) show.

Visibility is one rule, applied everywhere through ``experiment_visible_qs``: the owner,
the users it is shared with, superusers (operators), or everyone when the deployment
sets ``LAB_SHARE_ALL``. Only the owner may change, run, cancel or delete.
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass
from typing import Any

from django.conf import settings
from django.contrib.auth import get_user_model
from django.contrib.auth.models import AnonymousUser, User
from django.db.models import Count, OuterRef, Q, QuerySet, Subquery

import scheduler_core as sc
from experiments import event_log
from experiments.event_log import EventLog
from experiments.models import PRESET_TAG, RESULT_BLOBS, Experiment, Replication, Run, Status


def experiment_visible_qs(*, user: User | AnonymousUser) -> QuerySet[Experiment]:
    """Every experiment ``user`` may view."""
    experiments = Experiment.objects.select_related("owner")
    if not user.is_authenticated:  # e.g. the OpenAPI schema generator's fake request
        return experiments.none()
    if settings.LAB_SHARE_ALL or user.is_superuser:
        return experiments.all()
    return experiments.filter(Q(owner=user) | Q(shared_with=user)).distinct()


def experiment_list(
    *,
    user: User | AnonymousUser,
    filters: Mapping[str, str] | None = None,
) -> QuerySet[Experiment]:
    """Visible experiments, newest first; ``filters`` may hold ``q`` (name or
    description contains), ``tag`` and ``owner`` (username)."""
    filters = filters or {}
    experiments = experiment_visible_qs(user=user).prefetch_related("tags")
    if filters.get("q"):
        experiments = experiments.filter(
            Q(name__icontains=filters["q"]) | Q(description__icontains=filters["q"])
        )
    if filters.get("tag"):
        experiments = experiments.filter(tags__name=filters["tag"])
    if filters.get("owner"):
        experiments = experiments.filter(owner__username=filters["owner"])
    # The newest run's status and id, so the list says at a glance what the last run did.
    newest = Run.objects.filter(experiment=OuterRef("pk")).order_by("-created_at", "-id")
    # Explicit order: Django drops Meta.ordering from GROUP BY queries (the count).
    return experiments.annotate(
        run_count=Count("runs", distinct=True),
        last_run_status=Subquery(newest.values("status")[:1]),
        last_run_id=Subquery(newest.values("pk")[:1]),
    ).order_by("-updated_at", "-id")


def presets_to_offer(*, user: User | AnonymousUser) -> list[sc.Preset]:
    """The presets not already in ``user``'s own list, so each preset is listed once:
    as the user's installed experiment (tagged ``preset``) or as a card to start from."""
    installed = set(
        Experiment.objects.filter(owner_id=user.pk, tags__name=PRESET_TAG)
        .exclude(source_preset="")
        .values_list("source_preset", flat=True)
    )
    return [preset for preset in sc.list_presets(studies=True) if preset.id not in installed]


def experiment_get(*, user: User | AnonymousUser, pk: int) -> Experiment | None:
    """The experiment if ``user`` may view it, else None (callers answer 404)."""
    return experiment_visible_qs(user=user).filter(pk=pk).first()


def experiment_can_edit(*, user: User | AnonymousUser, experiment: Experiment) -> bool:
    """Change, run, cancel, delete: the owner only."""
    return experiment.owner_id == user.pk


def experiment_facts(*, experiment: Experiment) -> dict[str, Any]:
    """Headline sizes of the stored spec, for the detail page. Read from the stored
    document, so a spec that no longer validates (an older version wrote it) still shows."""
    spec = experiment.spec
    cluster = spec.get("cluster") or {}
    pools, nodes = cluster.get("nodePools") or [], cluster.get("nodes") or []
    workloads = spec.get("workloads") or []
    try:
        variants: int | None = len(sc.variant_names(sc.parse_spec(spec)))
    except sc.SpecError:
        variants = None
    return {
        "nodes": sum(p.get("count", 1) for p in pools) + len(nodes),
        "gpus": sum(p.get("count", 1) * p.get("gpus", 0) for p in pools)
        + sum(n.get("gpus", 0) for n in nodes),
        "workloads": len(workloads),
        "pods": sum(w.get("members", 1) for w in workloads),
        "variants": variants,
        "replications": spec.get("replications"),
        "horizon_seconds": spec.get("horizonSeconds"),
    }


def run_get(*, user: User | AnonymousUser, pk: int) -> Run | None:
    """A run whose experiment ``user`` may view, else None."""
    visible = experiment_visible_qs(user=user).values("pk")
    return (
        Run.objects.select_related("experiment", "experiment__owner", "created_by")
        .filter(pk=pk, experiment__in=visible)
        .first()
    )


def run_get_brief(*, user: User | AnonymousUser, pk: int) -> Run | None:
    """``run_get`` without the run's and its experiment's specs: the reads that answer
    from the cache need neither, and a large spec (thousands of workloads) costs more to
    load than the rest of the request. ``run.spec`` still loads on first use."""
    visible = experiment_visible_qs(user=user).values("pk")
    return (
        Run.objects.select_related("experiment", "created_by")
        .only(*BRIEF_RUN_FIELDS)
        .filter(pk=pk, experiment__in=visible)
        .first()
    )


BRIEF_RUN_FIELDS = (
    "experiment__id",
    "experiment__owner_id",
    "experiment__name",
    "experiment__version",
    "experiment__updated_at",
    "created_by__id",
    "created_by__username",
    "status",
    "progress",
    "error",
    "aggregate",
    "product_version",
    "task_token",
    "created_at",
    "started_at",
    "finished_at",
)
"""What the cached reads use of a run (``can_edit`` needs only the owner's id)."""


def run_replication_count(*, run: Run) -> int:
    """Replications per variant, as the run's spec asked: read from the stored spec by
    the database (one key), not by loading the whole document."""
    found = Run.objects.filter(pk=run.pk).values_list("spec__replications", flat=True).first()
    return int(found) if isinstance(found, int | float) else 1


def run_list(*, experiment: Experiment) -> QuerySet[Run]:
    """An experiment's runs, newest first, without their specs and aggregates (a list
    shows neither, and on a large run each is megabytes)."""
    return (
        experiment.runs.select_related("created_by")
        .defer("spec", "aggregate")
        .order_by("-created_at", "-id")
    )


def run_overview(*, user: User | AnonymousUser, status: str = "") -> QuerySet[Run]:
    """Every run ``user`` may see, newest first, for the Runs page; ``status`` narrows it
    to one state (an unknown state is ignored rather than showing nothing)."""
    visible = experiment_visible_qs(user=user).values("pk")
    runs = (
        Run.objects.select_related("experiment", "created_by")
        .filter(experiment__in=visible)
        .order_by("-created_at", "-id")
    )
    if status in Status.values:
        runs = runs.filter(status=status)
    return runs


@dataclass(frozen=True, slots=True)
class VariantProgress:
    index: int
    name: str
    total: int
    succeeded: int
    progress: float
    status: str


def run_progress(*, run: Run) -> list[VariantProgress]:
    """Per variant: how many replications finished, and the mean progress of all."""
    rows = run.replications.order_by("variant_index", "replication").values(
        "variant_index", "variant", "status", "progress"
    )
    grouped: dict[int, list[Mapping[str, Any]]] = {}
    for row in rows:
        grouped.setdefault(row["variant_index"], []).append(row)
    return [_variant_progress(index, reps) for index, reps in grouped.items()]


def _variant_progress(index: int, reps: list[Mapping[str, Any]]) -> VariantProgress:
    status = _variant_status({rep["status"] for rep in reps})
    succeeded = sum(rep["status"] == Status.SUCCEEDED for rep in reps)
    progress = sum(1.0 if rep["status"] == Status.SUCCEEDED else rep["progress"] for rep in reps)
    return VariantProgress(
        index=index,
        name=reps[0]["variant"],
        total=len(reps),
        succeeded=succeeded,
        progress=progress / len(reps),
        status=str(status),
    )


def _variant_status(statuses: set[str]) -> Status:
    """A variant is running from its first claimed replication to its last: one whose
    first replications are done and the next still queued is running, not queued."""
    for final in (Status.FAILED, Status.CANCELLED):
        if final in statuses:
            return final
    if Status.RUNNING in statuses or {Status.SUCCEEDED, Status.QUEUED} <= statuses:
        return Status.RUNNING
    return Status.QUEUED if Status.QUEUED in statuses else Status.SUCCEEDED


def run_status(*, run: Run) -> dict[str, Any]:
    """The small JSON the run page polls for live progress."""
    variants = run_progress(run=run)
    overall = sum(v.progress * v.total for v in variants) / max(1, sum(v.total for v in variants))
    return {
        "id": run.pk,
        "status": run.status,
        "is_terminal": run.is_terminal,
        "progress": 1.0 if run.status == Status.SUCCEEDED else round(overall, 4),
        "error": run.error,
        "variants": [
            {
                "name": v.name,
                "status": v.status,
                "progress": round(v.progress, 4),
                "succeeded": v.succeeded,
                "total": v.total,
            }
            for v in variants
        ],
    }


@dataclass(frozen=True, slots=True)
class MetricRow:
    metric: str
    cells: list[dict[str, float | None]]


def run_summary_table(*, run: Run) -> list[MetricRow]:
    """Metric rows by variant columns of {mean, ci95, min, max, n}, in METRIC_NAMES order."""
    return [
        MetricRow(
            metric=name, cells=[variant["metrics"].get(name, {}) for variant in run.aggregate]
        )
        for name in sc.METRIC_NAMES
    ]


def run_replications(*, run: Run) -> QuerySet[Replication]:
    """The run page's table of replications: without the distributions, timelines,
    decisions and event logs, which are megabytes on a large run (the charts read them
    on demand)."""
    return run.replications.order_by("variant_index", "replication").defer(
        "distributions", "by_priority_class", *RESULT_BLOBS
    )


def replication_event_log(
    *, replication_id: int, columns: Sequence[str] = event_log.COLUMNS
) -> EventLog:
    """A replication's whole stored event log in simulator order (``columns`` only),
    to filter with ``EventLog.filter``; empty for a replication without results. The
    one read of the stored log: every page, API, export and chart goes through it."""
    blob = Replication.objects.filter(pk=replication_id).values_list("event_log", flat=True)
    return EventLog.decode(blob.first(), columns)


def users_by_username(*, usernames: Iterable[str]) -> tuple[list[User], list[str]]:
    """The users named, and the names that match nobody."""
    wanted = [name for name in dict.fromkeys(usernames) if name]
    found = {u.get_username(): u for u in get_user_model().objects.filter(username__in=wanted)}
    return [found[n] for n in wanted if n in found], [n for n in wanted if n not in found]
