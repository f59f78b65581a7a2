"""What the chart pages send the browser: stored results read through
``selectors_charts``, drawn by the pure builders of ``experiments.charts``, serialized
once. The run page's section is cached whole (``selectors_run_page``), the spans a
timeline group click re-reads here.

The glue between the two lives here so that views stay thin and the builders stay pure.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

from django.core.cache import cache
from django.urls import reverse
from django.utils.html import json_script

from experiments import selectors, selectors_charts
from experiments.charts import kubectl, spans, tables, timeline
from experiments.charts.assumptions import assumptions
from experiments.charts.data import VariantCosts, VariantResults
from experiments.charts.headline import headline_figure
from experiments.charts.metrics import HEADLINE_METRICS
from experiments.charts.milestones import milestones_figure
from experiments.charts.tradeoff import tradeoff_figure
from experiments.charts.work import cumulative_cost_figure, recovery_figure
from experiments.models import Replication, Run, Status
from experiments.services.timelines import replication_costs
from experiments.services.timelines import replication_timeline as timeline_of
from scheduler_core import state_area
from scheduler_core.state_area import StateArea

CACHE_VERSION = 4
"""2: figures drawn from the core's timeline (stranded bands fixed, issue #12). 3: workload
colours clear of the state colours, the Gantt tall enough for its legend (issue #16). 4:
the GPUs by state and the heatmap drawn from the core's area past the span budget."""
CACHE_SECONDS = 24 * 3600
EVENTS_PER_PAGE = 100


# ------------------------------------------------------------------- the run page
def run_charts(*, run: Run, replication: str = "") -> dict[str, Any] | None:
    """Everything the run page's charts need, or None until the run has succeeded.
    ``replication`` (the page's ``?replication=`` query parameter, a replication id)
    picks the replication the timeline, workload table and event log open on; the
    first replication when it names none of this run's. Not cached here: its one
    caller, the run page's charts section, is (``selectors_run_page``)."""
    if run.status != Status.SUCCEEDED or not run.aggregate:
        return None
    chosen = int(replication) if replication.isdigit() else None
    return _run_charts(run, chosen) or None


def _run_key(run: Run) -> str:
    """A finished run never changes; its id and finish time name it even across a
    database that was reset while a web process kept its cache."""
    finished = run.finished_at.timestamp() if run.finished_at else 0.0
    return f"{CACHE_VERSION}:{run.pk}:{finished:.6f}"


def _run_charts(run: Run, chosen: int | None = None) -> dict[str, Any]:
    """The page's data; {} (cached as such) when no replication has results to draw."""
    replications = list(
        selectors.run_replications(run=run)
        .filter(status=Status.SUCCEEDED)
        .only("pk", "run_id", "variant_index", "variant", "replication")
    )
    if not replications:
        return {}
    shown = next((r for r in replications if r.pk == chosen), replications[0])
    per_variant: dict[int, int] = {}
    for replication in replications:
        per_variant[replication.variant_index] = per_variant.get(replication.variant_index, 0) + 1
    first: dict[int, int] = {}  # each variant's first replication: its timeline and tables
    for replication in replications:
        first.setdefault(replication.variant_index, replication.pk)
    variants = selectors_charts.run_variant_results(run=run)
    figures = summary_figures(variants)
    figures |= cost_figures(run=run, labels=[v.label for v in variants])
    data = {
        "figures": figures,
        "timeline": replication_timeline(run=run, replication_id=shown.pk),
        "variants": [
            {"index": i, "label": v.label, "replication": first[i]}
            for i, v in enumerate(variants)
            if i in first
        ],
        "workloads": workload_table(replication_id=shown.pk),
        "events": event_page(replication=shown, filters={}),
        "replications": [
            {
                "id": r.pk,
                "label": _replication_label(r, per_variant),
                "variant": r.variant,
                "number": r.replication,
                "log": reverse("experiments:replication-events", args=[run.pk, r.pk]),
            }
            for r in replications
        ],
        "urls": {
            name: reverse(f"experiments:run-chart-{name}", args=[run.pk])
            for name in ("timeline", "workloads", "events")
        },
    }
    return {
        "data_json": json_script(data, "run-charts-data"),
        "replications": data["replications"],
        "replication": shown.pk,
        "unserved": [v.label for v in variants if v.unserved],
        "assumptions": assumptions(run.spec, run.aggregate),
        "headline": [f"headline-{m}" for m in HEADLINE_METRICS],
    }


def _replication_label(replication: Replication, per_variant: dict[int, int]) -> str:
    """The variant's name, with the replication number when it has several."""
    if per_variant.get(replication.variant_index, 0) > 1:
        return f"{replication.variant} · replication {replication.replication}"
    return replication.variant


def summary_figures(variants: Sequence[VariantResults]) -> dict[str, dict[str, Any]]:
    """The charts drawn from summaries alone: headline metrics, milestones, trade-off."""
    figures = {f"headline-{m}": headline_figure(variants, m) for m in HEADLINE_METRICS}
    figures["milestones"] = milestones_figure(variants)
    figures["tradeoff"] = tradeoff_figure(variants)
    return figures


def cost_figures(
    *, run: Run, labels: Sequence[str], indexes: Sequence[int] | None = None
) -> dict[str, dict[str, Any]]:
    """Cumulative costs and recovery curves of the run's variants (all, or ``indexes``),
    averaged over every replication unless the run is too large to read them all."""
    return cost_figures_for(
        [
            (run, i, label)
            for i, label in zip(
                indexes if indexes is not None else range(len(labels)), labels, strict=True
            )
        ]
    )


def cost_figures_for(chosen: Sequence[tuple[Run, int, str]]) -> dict[str, dict[str, Any]]:
    """The same for variants picked from any runs: (run, variant index, label)."""
    ids = _cost_replication_ids(chosen)
    found = replication_costs(replication_ids=[pk for group in ids for pk in group])
    series = [
        VariantCosts(
            label,
            [found[pk][0] for pk in group if pk in found],
            [found[pk][1] for pk in group if pk in found],
            name=_variant_name(run, index),
            end=_variant_horizon(run, index),
        )
        for (run, index, label), group in zip(chosen, ids, strict=True)
    ]
    end = max((s.end or 0.0 for s in series), default=0.0)
    return {
        "costs": cumulative_cost_figure(series, end=end),
        "recovery": recovery_figure(series, end=end),
    }


def _variant_name(run: Run, index: int) -> str:
    return run.aggregate[index]["variant"] if index < len(run.aggregate) else ""


def _variant_horizon(run: Run, index: int) -> float:
    """The variant's own horizon (``selectors_charts.variant_scope``)."""
    scope = selectors_charts.variant_scope(run=run, variant=_variant_name(run, index) or None)
    return float(scope["horizon"])


def _cost_replication_ids(chosen: Sequence[tuple[Run, int, str]]) -> list[list[int]]:
    by_run: dict[int, dict[int, list[int]]] = {}
    for run, _, _ in chosen:
        if run.pk not in by_run:
            large = selectors_charts.run_event_total(run=run) > selectors_charts.COST_EVENT_BUDGET
            by_run[run.pk] = selectors_charts.run_replication_ids(run=run, first_only=large)
    return [by_run[run.pk].get(index, []) for run, index, _ in chosen]


# ------------------------------------------------------------------- the timeline
def replication_timeline(
    *, run: Run, replication_id: int, group: int | None = None
) -> dict[str, Any]:
    """The GPU timeline of one replication: per-node Gantt for a small cluster; for a
    large one a heatmap of node groups and the Gantt of ``group`` (default: the group
    with the most preemption victims)."""
    span_list, marks, omitted, area = _spans(run, replication_id)
    variant = (
        Replication.objects.filter(pk=replication_id, run=run)
        .values_list("variant", flat=True)
        .first()
    )
    scope = selectors_charts.variant_scope(run=run, variant=variant)
    cluster = scope["cluster"]
    groups, capacity = spans.node_groups(cluster), spans.node_capacity(cluster)
    mig = scope["mig"]
    end = float(scope["horizon"])
    left_out = (
        (f" (not drawn: {omitted:,} pod spans or more, past LAB_MAX_STORED_TIMELINE_SPANS)")
        if omitted
        else ""
    )
    figures = {
        "states": timeline.state_area_figure(
            area or state_area.from_spans(span_list, end=end),  # None: a hand-made row
            title="GPUs by pod state, whole cluster",
        )
    }
    if sum(len(g.nodes) for g in groups) <= spans.SMALL_CLUSTER:
        nodes = [n for g in groups for n in g.nodes]
        figures["gantt"] = timeline.gantt_figure(
            span_list,
            marks,
            nodes,
            capacity=capacity,
            start=0.0,
            end=end,
            title="GPU timeline per node" + left_out,
            mig_labels=mig,
        )
        return {"figures": figures, "groups": [], "group": None, "replication": replication_id}
    chosen = group if group is not None and 0 <= group < len(groups) else _busiest(groups, marks)
    # past the budget the core kept each group's GPUs held (its rows are the groups')
    stored = area.groups if area is not None and len(area.groups) == len(groups) else None
    figures["occupancy"] = timeline.occupancy_figure(
        span_list,
        marks,
        groups,
        start=0.0,
        end=end,
        title=f"Share of GPUs held per node group ({len(groups)} groups); click a row"
        + ("" if stored else left_out),
        held=stored,
    )
    figures["gantt"] = timeline.gantt_figure(
        span_list,
        marks,
        groups[chosen].nodes,
        capacity=capacity,
        start=0.0,
        end=end,
        title=f"GPU timeline: {groups[chosen].name}" + left_out,
        mig_labels=mig,
    )
    return {
        "figures": figures,
        "groups": [g.name for g in groups],
        "group": chosen,
        "replication": replication_id,
    }


def _spans(
    run: Run,
    replication_id: int,
) -> tuple[list[spans.Span], list[spans.Preemption], int, StateArea | None]:
    """Spans and preemptions of one replication (stored with it by the worker), how
    many spans the store left out, and the GPUs by state (from every span); cached: a
    group click re-reads them."""
    key = f"run-spans-v3:{_run_key(run)}:{replication_id}"
    found = cache.get(key)
    if found is None:
        derived = timeline_of(replication_id=replication_id)
        found = (derived.spans, derived.preemptions, derived.omitted_spans, derived.states)
        cache.set(key, found, CACHE_SECONDS)
    return found


def _busiest(groups: Sequence[spans.NodeGroup], marks: Sequence[spans.Preemption]) -> int:
    row = {node: i for i, g in enumerate(groups) for node in g.nodes}
    hits = [0] * len(groups)
    for m in marks:
        if m.victim_node in row:
            hits[row[m.victim_node]] += 1
    return max(range(len(groups)), key=lambda i: (hits[i], -i))


# ------------------------------------------------------------ workloads and events
def workload_table(
    *, replication_id: int, query: str = "", sort: str = "-lost_work", page: int = 1
) -> dict[str, Any]:
    records, sort = selectors_charts.replication_workload_records(
        replication_id=replication_id, query=query, sort=sort
    )
    every = selectors_charts.replication_workload_count(replication_id=replication_id)
    page_data = tables.workload_page(records, every=every, query=query, sort=sort, page=page)
    return page_data | {"replication": replication_id}


def event_page(
    *, replication: Replication, filters: dict[str, str], page: int = 1, setup: bool = False
) -> dict[str, Any]:
    """One page of a replication's events, kubectl-style, with the reasons to filter by.
    The setup rows (t <= 0) are folded away unless ``setup`` or a filter is set, so the
    first page shows what happened rather than the initial placement."""
    fold = not setup and not any(filters.values())
    log = selectors.replication_event_log(replication_id=replication.pk)
    events = log.filter(filters, after_setup=fold)
    total = len(events)
    pages = max(1, -(-total // EVENTS_PER_PAGE))
    page = min(max(1, page), pages)
    rows = events[(page - 1) * EVENTS_PER_PAGE : page * EVENTS_PER_PAGE]
    return {
        "rows": [{**kubectl.describe(row.as_dict()), "decision": row.decision} for row in rows],
        "total": total,
        "page": page,
        "pages": pages,
        "filters": filters,
        "replication": replication.pk,
        "setup": not fold,
        "setup_hidden": log.setup_count() if fold else 0,
        "reasons": log.reasons(),
    }


# ------------------------------------------------------------------- the compare page
def compare_study_rows(chosen: Sequence[selectors_charts.ChosenVariant]) -> list[dict[str, Any]]:
    """Each chosen placement-study variant's aggregate row (the core's numbers), named
    by its label on the page (``#12 FGD``), so variants of several runs stay apart."""
    return [{**c.run.aggregate[c.index], "variant": c.results.label, "run": c.run} for c in chosen]


def compare_study_figures(rows: Sequence[dict[str, Any]]) -> dict[str, Any]:
    """The study page's two charts over variants of any study runs: allocation against
    arrived load, one line per chosen variant, and the asked load alone."""
    from experiments.charts.study import study_figure, zoom_figure

    plain = [{k: v for k, v in row.items() if k != "run"} for row in rows]
    return {"study-curve": study_figure(plain), "study-at-load": zoom_figure(plain)}


def compare_figures(chosen: Sequence[selectors_charts.ChosenVariant]) -> dict[str, Any]:
    """The run page's summary and cost charts over variants picked from any runs."""
    figures = summary_figures([c.results for c in chosen])
    return figures | cost_figures_for([(c.run, c.index, c.results.label) for c in chosen])
