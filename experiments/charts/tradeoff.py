"""The trade-off a policy choice makes: how soon the preemptor is useful against how
much work the displaced lose. The Pareto front answers "which policy, at what cost"."""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

import scheduler_core as sc
from experiments.charts.data import VariantResults
from experiments.charts.metrics import is_number, metric_title, pareto_front
from experiments.charts.style import (
    BEST_COLOR,
    Figure,
    axis,
    base_layout,
    figure,
    trace,
    variant_colors,
)

X_METRIC = "time_to_group_useful"
Y_METRIC = "lost_work"
FRONT_NAME = "Pareto front"


def tradeoff_figure(
    variants: Sequence[VariantResults], *, x_metric: str = X_METRIC, y_metric: str = Y_METRIC
) -> Figure:
    """A point per variant (with its 95% intervals), the Pareto-optimal ones outlined and
    joined; variants lacking either number are named in a note, not drawn."""
    points = [(v.mean(x_metric), v.mean(y_metric)) for v in variants]
    front = set(pareto_front(points, eligible=[not v.unserved for v in variants]))
    colors = variant_colors([v.color_key for v in variants])
    names = _shared_labels(variants, points)
    traces = [_front_line(variants, points, front)]
    traces += [
        _point(v, colors[i], points[i], i in front, names.get(i, ""), x_metric, y_metric)
        for i, v in enumerate(variants)
        if is_number(points[i][0]) and is_number(points[i][1])
    ]
    missing = [
        _missing_label(v, p, x_metric, y_metric)
        for v, p in zip(variants, points, strict=True)
        if not (is_number(p[0]) and is_number(p[1]))
    ]
    return figure(
        traces,
        {
            **base_layout(
                title="Trade-off: preemptor useful sooner vs. work lost",
                height=380,
                legend={"orientation": "v", "x": 1.02, "y": 1},
            ),
            "xaxis": axis(metric_title(x_metric), range=_padded([p[0] for p in points])),
            "yaxis": axis(metric_title(y_metric), range=_padded([p[1] for p in points])),
            "annotations": [_missing_note(missing)] if missing else [],
        },
    )


def _shared_labels(variants: Sequence[VariantResults], points: list) -> dict[int, str]:
    """One text per distinct point, naming every variant on it (coinciding variants are
    common: two policies often pick the same victims), on the first of them."""
    by_point: dict[tuple, list[int]] = {}
    for i, point in enumerate(points):
        by_point.setdefault(point, []).append(i)
    return {ids[0]: ", ".join(variants[i].label for i in ids) for ids in by_point.values()}


def _padded(values: list[float | None]) -> list[float]:
    """From zero (the ideal) to a quarter past the largest value, room for the labels."""
    top = max((v for v in values if is_number(v)), default=0.0)
    return [0.0, top * 1.3 if top > 0 else 1.0]


def _front_line(
    variants: Sequence[VariantResults],
    points: list,
    front: set[int],
) -> dict[str, Any]:
    ordered = sorted(front, key=lambda i: (points[i][0], points[i][1]))
    return trace(
        "scatter",
        x=[points[i][0] for i in ordered],
        y=[points[i][1] for i in ordered],
        mode="lines",
        name=FRONT_NAME,
        line={"color": BEST_COLOR, "width": 2, "dash": "dash", "shape": "hv"},
        customdata=[variants[i].label for i in ordered],
        hovertemplate="Pareto-optimal: %{customdata}<extra></extra>",
    )


def _point(
    variant: VariantResults,
    color: str,
    point: tuple,
    on_front: bool,
    text: str,
    x_metric: str,
    y_metric: str,
) -> dict[str, Any]:
    return trace(
        "scatter",
        x=[point[0]],
        y=[point[1]],
        mode="markers+text",
        name=variant.label,
        text=[text + (" ★" if on_front and text else "")],
        textposition="top center",
        error_x={
            "type": "data",
            "array": [variant.ci95(x_metric) or 0.0],
            "visible": bool(variant.ci95(x_metric)),
        },
        error_y={
            "type": "data",
            "array": [variant.ci95(y_metric) or 0.0],
            "visible": bool(variant.ci95(y_metric)),
        },
        marker={
            "size": 14,
            "color": color,
            "line": {"color": BEST_COLOR if on_front else "white", "width": 3 if on_front else 1},
        },
        customdata=[
            [
                variant.preemption,
                variant.placement,
                "on the Pareto front" if on_front else "dominated",
            ]
        ],
        hovertemplate=f"{variant.label}<br>useful after %{{x:,.4~g}}s, lost %{{y:,.4~g}} GPU·s"
        "<br>preemption %{customdata[0]}, placement %{customdata[1]}"
        "<br>%{customdata[2]}<extra></extra>",
    )


def _missing_label(variant: VariantResults, point: tuple, x_metric: str, y_metric: str) -> str:
    """'none (time to group useful: never (> horizon))': why a variant is not drawn, in
    the registry's words for the missing value."""
    gone = [m for m, v in zip((x_metric, y_metric), point, strict=True) if not is_number(v)]
    reasons = "; ".join(
        f"{sc.metric_info(m).label.lower()}: {sc.metric_info(m).null}" for m in gone
    )
    return f"{variant.label} ({reasons})"


def _missing_note(labels: list[str]) -> dict:
    return {
        "xref": "paper",
        "yref": "paper",
        "x": 0,
        "y": 1.0,
        "yanchor": "bottom",
        "showarrow": False,
        "font": {"size": 11, "color": "#6e7781"},
        "text": "not drawn: " + ", ".join(labels),
    }
