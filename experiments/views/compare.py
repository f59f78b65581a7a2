"""The compare page: variants picked from any runs the user may see, every metric side
by side, the same charts over the selection. Everything it shows is in its URL
(``?v=<run>:<variant>&v=...&baseline=<run>:<variant>&diff=1&t=1``), so it can be shared;
a reference the viewer may not see is left out without a trace of what it named."""

from __future__ import annotations

from typing import Any

from django.http import HttpRequest, HttpResponse
from django.shortcuts import render
from django.utils.html import json_script
from django.views.decorators.http import require_GET

import scheduler_core as sc
from experiments import selectors_charts
from experiments.charts.compare import compare_table
from experiments.charts.style import variant_colors
from experiments.models import Run
from experiments.selectors_charts import ChosenVariant, VariantRef
from experiments.selectors_run_page import is_study_run
from experiments.views import chart_data

MAX_CHOSEN = 24


@require_GET
def compare(request: HttpRequest) -> HttpResponse:
    refs = [
        ref
        for text in request.GET.getlist("v")[:MAX_CHOSEN]
        if (ref := VariantRef.parse(text)) is not None
    ]
    chosen, left_out = selectors_charts.compare_variants(user=request.user, refs=refs)
    # A placement study has no time, timeline or replay metric: its variants are drawn
    # as allocation against arrived load, the replays beside them as before.
    studies = [c for c in chosen if is_study_run(c.run)]
    replays = [c for c in chosen if not is_study_run(c.run)]
    baseline = _baseline(request.GET.get("baseline", ""), replays)
    table = compare_table(
        [c.results for c in replays],
        sc.SUMMARY_NAMES,
        baseline=baseline,
        differences_only=request.GET.get("diff") == "1",
    )
    study_rows = chart_data.compare_study_rows(studies)
    figures = chart_data.compare_figures(replays) if replays else {}
    if studies:
        figures |= chart_data.compare_study_figures(study_rows)
    parameters, more_parameters = selectors_charts.compare_parameters(chosen=chosen)
    return render(
        request,
        "experiments/compare.html",
        {
            "chosen": chosen,
            "replays": replays,
            "study_rows": study_rows,
            "study_has_paper": any(row.get("paper") for row in study_rows),
            "left_out": left_out,
            "table": table,
            "baseline": baseline,
            "heads": list(
                zip(replays, variant_colors([c.results.color_key for c in replays]), strict=True)
            ),
            "unserved": [c.results.label for c in replays if c.results.unserved],
            "intervals": sorted(
                {cell.interval for row in table.rows for cell in row.cells if cell.interval}
            ),
            "parameters": parameters,
            "more_parameters": more_parameters,
            "differences_only": request.GET.get("diff") == "1",
            "transposed": request.GET.get("t") == "1",
            "picker": _picker(request, chosen),
            "data_json": json_script({"figures": figures}, "compare-charts-data") if chosen else "",
            "headline": [name for name in figures if name.startswith("headline-")],
        },
    )


def _baseline(key: str, chosen: list[ChosenVariant]) -> int | None:
    """The chosen variant named by ``baseline`` (default: the first chosen)."""
    if not chosen:
        return None
    return next((i for i, c in enumerate(chosen) if c.ref.key == key), 0)


def _picker(request: HttpRequest, chosen: list[ChosenVariant]) -> list[dict[str, Any]]:
    """Recent finished runs (and the runs already chosen), each with its variants."""
    picked = {c.ref.key for c in chosen}
    runs: dict[int, Run] = {c.run.pk: c.run for c in chosen}
    for run in selectors_charts.compare_candidates(user=request.user):
        runs.setdefault(run.pk, run)
    return [
        {
            "run": run,
            "variants": [
                {
                    "key": f"{run.pk}:{v['variant']}",
                    "name": v["variant"],
                    "checked": f"{run.pk}:{v['variant']}" in picked,
                }
                for v in run.aggregate
            ],
        }
        for run in sorted(runs.values(), key=lambda r: -r.pk)
    ]


@require_GET
def metrics_glossary(request: HttpRequest) -> HttpResponse:
    """Every metric as the core's registry defines it, and the interval methods."""
    document = sc.registry_document()
    return render(
        request,
        "experiments/metrics.html",
        {
            "groups": _grouped(document["metrics"]),
            "methods": document["interval_methods"],
            "never": document["never"],
        },
    )


def _grouped(metrics: list[dict[str, Any]]) -> list[tuple[str, list[dict[str, Any]]]]:
    titles = {
        "preemptor": "The preemptor (the urgent workload)",
        "displaced": "The displaced (victim) workloads",
        "cluster": "The cluster",
        "accounting": "Accounting",
    }
    groups: dict[str, list[dict[str, Any]]] = {}
    for metric in metrics:
        groups.setdefault(metric["group"], []).append(metric)
    return [(titles.get(name, name), entries) for name, entries in groups.items()]
