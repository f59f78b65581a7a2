"""The checkpoint planner's chart: expected wall-clock time and ETTR against the
interval, each with its 95 % band, the empirical optimum and its band of intervals
not distinguishable from it, and the Young and Daly optima drawn beside it.

Every number is the core's (``scheduler_core.checkpoint_planner.PlanResult``); this
module only draws it. Wall-clock time is shown in hours, intervals on a log axis
labelled as durations (the sweep is log-spaced)."""

from __future__ import annotations

import math
from collections.abc import Callable, Sequence
from typing import Any

import scheduler_core as sc
from experiments.charts.style import BEST_COLOR, MUTED, Figure, axis, base_layout, figure, trace
from scheduler_core.checkpoint_planner import Estimate, PlanPoint, PlanResult

HOUR = 3600.0
SIMULATED = "#0072B2"
CLOSED_FORM = "#D55E00"
YOUNG_COLOR, DALY_COLOR = "#CC79A7", "#C17D00"  # 3:1 on white, as style.VARIANT_COLORS
WALL_AXIS, ETTR_AXIS = ("x", "y"), ("x2", "y2")


def planner_figure(result: PlanResult) -> Figure:
    """Two panels sharing the interval axis: wall-clock time (top), ETTR (bottom)."""
    points = result.points
    traces = [
        *_series(points, lambda p: p.wall_clock, HOUR, "wall-clock", WALL_AXIS, True),
        *_closed_form(points, lambda p: _hours(p.daly_wall_clock), WALL_AXIS, True),
        *_series(points, lambda p: p.ettr, 1.0, "ETTR", ETTR_AXIS, False),
        *_closed_form(points, lambda p: p.daly_ettr, ETTR_AXIS, False),
        *_optimum_markers(result),
    ]
    ticks = _interval_ticks(points)
    return figure(
        traces,
        {
            **base_layout(title="", height=620, margin={"l": 70, "r": 20, "t": 30, "b": 60}),
            "legend": {"orientation": "h", "x": 0, "y": -0.12, "yanchor": "top"},
            "xaxis": axis("", type="log", matches="x2", anchor="y", showticklabels=False, **ticks),
            "xaxis2": axis(
                "checkpoint interval (work between writes, log scale)",
                type="log",
                anchor="y2",
                **ticks,
            ),
            "yaxis": axis("expected wall-clock time (h)", domain=[0.55, 1.0]),
            "yaxis2": axis("ETTR", domain=[0.0, 0.45], anchor="x2"),
            "shapes": _band_shapes(result) + _optimum_lines(result),
            "annotations": _optimum_labels(result),
        },
    )


def _hours(value: float | None) -> float | None:
    return value / HOUR if value is not None else None


def _series(
    points: Sequence[PlanPoint],
    pick: Callable[[PlanPoint], Estimate | None],
    scale: float,
    label: str,
    axes: tuple[str, str],
    legend: bool,
) -> list[dict[str, Any]]:
    """The simulated mean with its 95 % band (a filled polygon under the line)."""
    drawn = [(p, e) for p in points if (e := pick(p)) is not None]
    xs = [p.interval_seconds for p, _ in drawn]
    band = trace(
        "scatter",
        x=xs + xs[::-1],
        y=[e.high / scale for _, e in drawn] + [e.low / scale for _, e in drawn][::-1],
        mode="lines",
        fill="toself",
        fillcolor="rgba(0,114,178,0.18)",
        line={"width": 0},
        hoverinfo="skip",
        name="simulated, 95 % band",
        legendgroup="band",
        showlegend=legend,
        xaxis=axes[0],
        yaxis=axes[1],
    )
    mean = trace(
        "scatter",
        x=xs,
        y=[e.mean / scale for _, e in drawn],
        mode="lines+markers",
        line={"color": SIMULATED, "width": 2},
        marker={"size": 7, "color": SIMULATED},
        name="simulated mean",
        legendgroup="mean",
        showlegend=legend,
        customdata=[
            [
                sc.format_duration(p.interval_seconds),
                e.low / scale,
                e.high / scale,
                e.n,
                p.unfinished,
            ]
            for p, e in drawn
        ],
        hovertemplate=f"every %{{customdata[0]}}: {label} %{{y:,.4~g}}"
        "<br>95 %: %{customdata[1]:,.4~g} to %{customdata[2]:,.4~g} (n = %{customdata[3]})"
        "<br>not finished: %{customdata[4]}<extra></extra>",
        xaxis=axes[0],
        yaxis=axes[1],
    )
    return [band, mean]


def _closed_form(
    points: Sequence[PlanPoint],
    pick: Callable[[PlanPoint], float | None],
    axes: tuple[str, str],
    legend: bool,
) -> list[dict[str, Any]]:
    drawn = [(p.interval_seconds, v) for p in points if (v := pick(p)) is not None]
    if not drawn:
        return []
    return [
        trace(
            "scatter",
            x=[x for x, _ in drawn],
            y=[y for _, y in drawn],
            mode="lines",
            line={"color": CLOSED_FORM, "width": 2, "dash": "dash"},
            name="Daly's closed form",
            legendgroup="daly-curve",
            showlegend=legend,
            hovertemplate="closed form: %{y:,.4~g}<extra></extra>",
            xaxis=axes[0],
            yaxis=axes[1],
        )
    ]


def _optimum_markers(result: PlanResult) -> list[dict[str, Any]]:
    """A star on each curve at the empirical optimum."""
    best = next((p for p in result.points if p.interval_seconds == result.optimum_interval), None)
    if best is None or best.wall_clock is None:
        return []
    out = [_star(best.interval_seconds, best.wall_clock.mean / HOUR, WALL_AXIS, True)]
    if best.ettr is not None:
        out.append(_star(best.interval_seconds, best.ettr.mean, ETTR_AXIS, False))
    return out


def _star(x: float, y: float, axes: tuple[str, str], legend: bool) -> dict[str, Any]:
    return trace(
        "scatter",
        x=[x],
        y=[y],
        mode="markers",
        marker={
            "symbol": "star",
            "size": 18,
            "color": BEST_COLOR,
            "line": {"color": "white", "width": 1},
        },
        name=f"empirical optimum ({sc.format_duration(x)})",
        legendgroup="optimum",
        showlegend=legend,
        hovertemplate=f"empirical optimum: every {sc.format_duration(x)}<extra></extra>",
        xaxis=axes[0],
        yaxis=axes[1],
    )


def _band_shapes(result: PlanResult) -> list[dict[str, Any]]:
    """The intervals not distinguishable from the optimum, shaded over both panels."""
    if result.band is None or result.band[0] == result.band[1]:
        return []
    low, high = result.band
    return [
        {
            "type": "rect",
            "xref": "x2",
            "yref": "paper",
            "x0": low,
            "x1": high,
            "y0": 0,
            "y1": 1,
            "fillcolor": "rgba(26,127,55,0.08)",
            "line": {"width": 0},
            "layer": "below",
        }
    ]


def _optimum_lines(result: PlanResult) -> list[dict[str, Any]]:
    return [
        {
            "type": "line",
            "xref": "x2",
            "yref": "paper",
            "x0": x,
            "x1": x,
            "y0": 0,
            "y1": 1,
            "line": {"color": color, "width": 2, "dash": "dot"},
        }
        for x, color in _closed_optima(result)
    ]


def _closed_optima(result: PlanResult) -> list[tuple[float, str]]:
    return [
        (x, color)
        for x, color in ((result.young_interval, YOUNG_COLOR), (result.daly_interval, DALY_COLOR))
        if x is not None and x > 0
    ]


def _optimum_labels(result: PlanResult) -> list[dict[str, Any]]:
    labels = []
    names = {YOUNG_COLOR: "Young", DALY_COLOR: "Daly"}
    for index, (x, color) in enumerate(_closed_optima(result)):
        labels.append(
            {
                "xref": "x2",
                "yref": "paper",
                "x": _log10(x),
                "y": 1.0 - 0.05 * index,
                "yanchor": "top",
                "xanchor": "left",
                "showarrow": False,
                "font": {"size": 11, "color": color},
                "text": f" {names[color]} {sc.format_duration(round(x))}",
            }
        )
    if result.band is not None and result.band[0] != result.band[1]:
        labels.append(
            {
                "xref": "x2",
                "yref": "paper",
                "x": _log10(result.band[0]),
                "y": 0.0,
                "yanchor": "bottom",
                "xanchor": "left",
                "showarrow": False,
                "font": {"size": 10, "color": MUTED},
                "text": " not distinguishable from the optimum",
            }
        )
    return labels


def _log10(value: float) -> float:
    """Annotations on a log axis take the exponent (Plotly's rule for log axes)."""
    return math.log10(value)


def _interval_ticks(points: Sequence[PlanPoint]) -> dict[str, Any]:
    values = [p.interval_seconds for p in points]
    return {
        "tickmode": "array",
        "tickvals": values,
        "ticktext": [sc.format_duration(v) for v in values],
        "tickangle": -35,
    }
