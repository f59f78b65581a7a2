"""Each replication's timeline (``scheduler_core.timeline``): stored by the worker with
the results, so a page never derives it from the log on a view; rows stored before
timelines existed (or by a version that read the log differently) get theirs derived
once, on their first view, and written back."""

from __future__ import annotations

from collections.abc import Iterable

from django.conf import settings

import scheduler_core as sc
from experiments import selectors_charts
from experiments.charts.spans import heatmap_rows
from experiments.models import Replication, Status, timeline_costs_of
from scheduler_core import timeline as core_timeline
from scheduler_core.timeline import Cost, Recovery, Timeline


def replication_timeline(*, replication_id: int) -> Timeline:
    """The stored timeline, else derived and stored."""
    stored = selectors_charts.stored_timeline(replication_id=replication_id)
    if stored is not None:
        return Timeline.from_json(stored)
    return replication_timeline_derive(replication_id=replication_id)


def replication_costs(
    *,
    replication_ids: Iterable[int],
) -> dict[int, tuple[list[Cost], list[Recovery]]]:
    """Cost increments and recoveries per replication, from the stored timelines (those
    missing are derived and stored)."""
    found = selectors_charts.stored_costs(replication_ids=replication_ids)
    out: dict[int, tuple[list[Cost], list[Recovery]]] = {}
    for pk, costs in found.items():
        if costs is None:
            derived = replication_timeline_derive(replication_id=pk)
            costs = (derived.costs, derived.recoveries)
        out[pk] = costs
    return out


def heatmap_rows_of(spec: sc.ExperimentSpec) -> dict[str, int] | None:
    """Each node's row in the run page's heatmap of node groups for a variant's resolved
    ``spec`` (the groups the page draws, from the same cluster document), None when the
    page draws one Gantt instead."""
    return heatmap_rows(spec.cluster.model_dump(mode="json", by_alias=True, exclude_none=True))


def replication_timeline_derive(*, replication_id: int) -> Timeline:
    """Derive a succeeded replication's timeline from its stored log and write it back."""
    document, variant, rows = selectors_charts.timeline_source(replication_id=replication_id)
    spec = sc.parse_spec(document, check_variants=False)
    resolved = sc.resolve_variant(spec, variant).spec
    derived = core_timeline.build(
        rows,
        resolved,
        max_spans=settings.LAB_MAX_STORED_TIMELINE_SPANS,
        node_rows=heatmap_rows_of(resolved),
    )
    stored = derived.to_json()
    Replication.objects.filter(pk=replication_id, status=Status.SUCCEEDED).update(
        timeline=stored, timeline_costs=timeline_costs_of(stored)
    )
    return Timeline.from_json(stored) if stored["omitted_spans"] else derived
