"""What disruptions cost over time: cumulative lost work and wasted GPU-seconds per
variant, and how each displaced workload climbed back after its disruption."""

from __future__ import annotations

from collections.abc import Iterable, Sequence
from dataclasses import dataclass
from typing import Any

from experiments.charts.data import EventLike, VariantEvents
from experiments.charts.downsample import MAX_LINE_POINTS, round_all, thin_steps
from experiments.charts.style import (
    Figure,
    axis,
    base_layout,
    figure,
    scatter_kind,
    trace,
    variant_colors,
)

MAX_CURVES = 1000


# ---------------------------------------------------------------- cumulative costs
@dataclass(frozen=True, slots=True)
class Cost:
    """An increment of cost at ``time``: lost work, stranded capacity or the startup of
    a Ready pod thrown away by its eviction (the three parts of wasted GPU-seconds)."""

    time: float
    lost: float
    wasted: float


def cost_increments(events: Iterable[EventLike]) -> list[Cost]:
    """The increments in log order, counted as ``scheduler_core.metrics`` counts them,
    so the last cumulative value equals the summary's total."""
    bound: dict[str, tuple[float, float]] = {}
    ready_at: dict[str, float] = {}
    out: list[Cost] = []
    for e in events:
        if e.reason == "Disrupted":
            out.append(Cost(e.time, e.value, e.value))
        elif e.reason == "Stranded":
            out.append(Cost(e.time, 0.0, e.value))
        elif e.reason == "Scheduled":
            bound[e.pod] = (e.time, float(e.value))
        elif e.reason == "Ready":
            ready_at[e.pod] = e.time
        elif e.reason == "Killing" and e.pod in ready_at and e.pod in bound:
            out.append(Cost(e.time, 0.0, (ready_at.pop(e.pod) - bound[e.pod][0]) * bound[e.pod][1]))
        elif e.reason in ("Released", "Completed"):
            ready_at.pop(e.pod, None)
            bound.pop(e.pod, None)
    return out


def cumulative(replications: Sequence[Sequence[EventLike]], field: str, *, end: float,
               ) -> tuple[list[float], list[float]]:
    """The mean over replications of the running total of ``field`` ('lost' or
    'wasted'), from 0 at time 0 (or the first cost) to ``end``, as a step series."""
    share = 1.0 / max(1, len(replications))
    steps = sorted((c.time, getattr(c, field) * share)
                   for events in replications for c in cost_increments(events)
                   if getattr(c, field))
    xs, ys, total = [min(0.0, steps[0][0]) if steps else 0.0], [0.0], 0.0
    for time, amount in steps:
        total += amount
        xs.append(time)
        ys.append(total)
    xs.append(max(end, xs[-1]))
    ys.append(total)
    return xs, ys


def cumulative_cost_figure(variants: Sequence[VariantEvents], *, end: float) -> Figure:
    """Per variant, lost work (solid) and wasted GPU-seconds (dotted) summed over the
    run, each line at most ``MAX_LINE_POINTS`` points (WebGL when they add up)."""
    traces = []
    colors = variant_colors([v.color_key for v in variants])
    for i, variant in enumerate(variants):
        for field, dash, name in (("lost", "solid", "lost work"),
                                  ("wasted", "dot", "wasted GPU·s")):
            xs, ys = thin_steps(*cumulative(variant.replications, field, end=end),
                                max_points=MAX_LINE_POINTS)
            traces.append(trace(
                "scatter", x=round_all(xs), y=round_all(ys), mode="lines",
                name=f"{variant.label}: {name}", legendgroup=variant.label,
                line={"color": colors[i], "dash": dash, "shape": "hv", "width": 2},
                hovertemplate=f"{variant.label}<br>{name} %{{y:,.0f}} GPU·s by %{{x:,.0f}}s"
                              "<extra></extra>"))
    return figure(_webgl_if_large(traces), {
        **base_layout(title="Cumulative lost work and wasted GPU-seconds "
                            "(mean over replications)", height=340),
        "xaxis": axis("", ticksuffix="s"), "yaxis": axis("GPU·s", rangemode="tozero")})


def _webgl_if_large(traces: list[dict[str, Any]]) -> list[dict[str, Any]]:
    """One kind for the whole figure: WebGL once its points outnumber what SVG draws
    faster (``style.WEBGL_MIN_POINTS``)."""
    kind = scatter_kind(sum(len(t["x"]) for t in traces))
    return [{**t, "type": kind} for t in traces]


# ---------------------------------------------------------------- recovery curves
@dataclass(frozen=True, slots=True)
class Recovery:
    """One disruption of one workload: the work it lost and when it resumed useful
    progress and got back to where it was (None: not by the end of the run)."""

    workload: str
    time: float
    lost: float
    resumed: float | None
    recovered: float | None


def recoveries(events: Iterable[EventLike]) -> list[Recovery]:
    """Members of a workload disrupted at the same instant are one disruption."""
    lost: dict[tuple[str, float], float] = {}
    resumed: dict[tuple[str, float], float] = {}
    recovered: dict[tuple[str, float], float] = {}
    for e in events:
        if e.reason == "Disrupted":
            key = (e.workload, e.time)
            lost[key] = lost.get(key, 0.0) + e.value
        elif e.reason == "Resumed":
            resumed.setdefault((e.workload, e.value), e.time)
        elif e.reason == "Recovered":
            recovered.setdefault((e.workload, e.value), e.time)
    return [Recovery(w, t, amount, resumed.get((w, t)), recovered.get((w, t)))
            for (w, t), amount in lost.items()]


def recovery_curve(r: Recovery, *, end: float) -> tuple[list[float], list[float]]:
    """Progress relative to the disruption point, against seconds since it: down by the
    lost work at once, flat until the workload resumes, back to zero when it recovers."""
    stop = end - r.time
    if r.resumed is None:
        return [0.0, stop], [-r.lost, -r.lost]
    if r.recovered is None:
        return [0.0, r.resumed - r.time, stop], [-r.lost, -r.lost, -r.lost]
    return [0.0, r.resumed - r.time, r.recovered - r.time], [-r.lost, -r.lost, 0.0]


def recovery_figure(variants: Sequence[VariantEvents], *, end: float) -> Figure:
    """Every disruption's curve, one trace per variant (the ``MAX_CURVES`` costliest per
    variant when there are more; WebGL when the curves add up)."""
    traces, thinned = [], False
    colors = variant_colors([v.color_key for v in variants])
    for i, variant in enumerate(variants):
        found = [r for events in variant.replications for r in recoveries(events)]
        found.sort(key=lambda r: r.lost, reverse=True)
        thinned |= len(found) > MAX_CURVES
        traces.append(_curves_trace(found[:MAX_CURVES], variant.label, colors[i], end))
    note = f" (the {MAX_CURVES} costliest per variant)" if thinned else ""
    return figure(_webgl_if_large(traces), {
        **base_layout(title="Recovery after each disruption" + note, height=340),
        "xaxis": axis("seconds since the disruption", rangemode="tozero", ticksuffix="s"),
        "yaxis": axis("GPU·s behind the disruption point")})


def _curves_trace(found: list[Recovery], label: str, color: str, end: float,
                  ) -> dict[str, Any]:
    xs: list[float | None] = []
    ys: list[float | None] = []
    text: list[str | None] = []
    for r in found:
        cx, cy = recovery_curve(r, end=end)
        xs += [*round_all(cx), None]
        ys += [*round_all(cy), None]
        text += [f"{r.workload} disrupted at {r.time:,.0f}s"] * len(cx) + [None]
    return trace("scatter", x=xs, y=ys, mode="lines", name=label, text=text,
                 line={"color": color, "width": 1.5}, connectgaps=False,
                 hovertemplate="%{text}<br>%{y:,.0f} GPU·s at +%{x:,.0f}s"
                               f"<extra>{label}</extra>")
