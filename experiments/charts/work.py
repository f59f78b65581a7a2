"""What disruptions cost over time: cumulative lost work and wasted GPU-seconds per
variant, and how each displaced workload climbed back after its disruption. The
increments and recoveries come from ``scheduler_core.timeline``; this module draws them."""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

from experiments.charts.data import VariantCosts
from experiments.charts.downsample import MAX_LINE_POINTS, round_all, thin_steps
from experiments.charts.style import (
    Figure,
    axis,
    base_layout,
    figure,
    trace,
    variant_colors,
)
from scheduler_core.timeline import Cost, Recovery, recovery_curve

__all__ = [
    "MAX_CURVES",
    "Cost",
    "Recovery",
    "cumulative",
    "cumulative_cost_figure",
    "recovery_figure",
]

MAX_CURVES = 1000


# ---------------------------------------------------------------- cumulative costs
def cumulative(
    replications: Sequence[Sequence[Cost]],
    field: str,
    *,
    end: float,
) -> tuple[list[float], list[float]]:
    """The mean over replications of the running total of ``field`` ('lost' or
    'wasted'), from 0 at time 0 (or the first cost) to ``end``, as a step series."""
    share = 1.0 / max(1, len(replications))
    steps = sorted(
        (c.time, getattr(c, field) * share)
        for costs in replications
        for c in costs
        if getattr(c, field)
    )
    xs, ys, total = [min(0.0, steps[0][0]) if steps else 0.0], [0.0], 0.0
    for time, amount in steps:
        total += amount
        xs.append(time)
        ys.append(total)
    xs.append(max(end, xs[-1]))
    ys.append(total)
    return xs, ys


def cumulative_cost_figure(variants: Sequence[VariantCosts], *, end: float) -> Figure:
    """Per variant, lost work (solid) and wasted GPU-seconds (dotted) summed over the
    run, each line at most ``MAX_LINE_POINTS`` points."""
    traces = []
    colors = variant_colors([v.color_key for v in variants])
    for i, variant in enumerate(variants):
        for field, dash, name in (
            ("lost", "solid", "lost work"),
            ("wasted", "dot", "wasted GPU·s"),
        ):
            own = end if variant.end is None else variant.end
            xs, ys = thin_steps(
                *cumulative(variant.costs, field, end=own), max_points=MAX_LINE_POINTS
            )
            traces.append(
                trace(
                    "scatter",
                    x=round_all(xs),
                    y=round_all(ys),
                    mode="lines",
                    name=f"{variant.label}: {name}",
                    legendgroup=variant.label,
                    line={"color": colors[i], "dash": dash, "shape": "hv", "width": 2},
                    hovertemplate=f"{variant.label}<br>{name} %{{y:,.0f}} GPU·s by %{{x:,.0f}}s"
                    "<extra></extra>",
                )
            )
    return figure(
        traces,
        {
            **base_layout(
                title="Cumulative lost work and wasted GPU-seconds (mean over replications)",
                height=340,
            ),
            "xaxis": axis("", ticksuffix="s"),
            "yaxis": axis("GPU·s", rangemode="tozero"),
        },
    )


# ---------------------------------------------------------------- recovery curves
def recovery_figure(variants: Sequence[VariantCosts], *, end: float) -> Figure:
    """Every disruption's curve, one trace per variant (the ``MAX_CURVES`` costliest per
    variant when there are more; curves of the same shape drawn once)."""
    traces, thinned = [], False
    colors = variant_colors([v.color_key for v in variants])
    for i, variant in enumerate(variants):
        found = [r for replication in variant.recoveries for r in replication]
        found.sort(key=lambda r: r.lost, reverse=True)
        thinned |= len(found) > MAX_CURVES
        own = end if variant.end is None else variant.end
        traces.append(_curves_trace(found[:MAX_CURVES], variant.label, colors[i], own))
    note = f" (the {MAX_CURVES} costliest per variant)" if thinned else ""
    return figure(
        traces,
        {
            **base_layout(title="Recovery after each disruption" + note, height=340),
            "xaxis": axis("seconds since the disruption", rangemode="tozero", ticksuffix="s"),
            "yaxis": axis("GPU·s behind the disruption point"),
        },
    )


def _curves_trace(
    found: list[Recovery],
    label: str,
    color: str,
    end: float,
) -> dict[str, Any]:
    """One trace of every curve, gaps between them. Curves that coincide on the chart
    (the same shape to a tenth of a second and GPU·s: jobs alike, disrupted alike) are
    drawn once, their hover naming the first and how many more: the page does not
    carry points nobody can see."""
    shapes: dict[tuple[tuple[float, ...], tuple[float, ...]], list[Recovery]] = {}
    for r in found:
        cx, cy = recovery_curve(r, end=end)
        shapes.setdefault((tuple(round_all(cx)), tuple(round_all(cy))), []).append(r)
    xs: list[float | None] = []
    ys: list[float | None] = []
    text: list[str | None] = []
    for (shape_x, shape_y), alike in shapes.items():
        first = alike[0]
        more = f" (and {len(alike) - 1:,} more alike)" if len(alike) > 1 else ""
        xs += [*shape_x, None]
        ys += [*shape_y, None]
        text += [f"{first.workload} disrupted at {first.time:,.0f}s{more}"] * len(shape_x)
        text.append(None)
    return trace(
        "scatter",
        x=xs,
        y=ys,
        mode="lines",
        name=label,
        text=text,
        line={"color": color, "width": 1.5},
        connectgaps=False,
        hovertemplate=f"%{{text}}<br>%{{y:,.0f}} GPU·s at +%{{x:,.0f}}s<extra>{label}</extra>",
    )
