"""The preemptor's milestones on one time axis per variant: victims selected, victims
released, group scheduled, group useful. The sources warn that "victims selected" and
"group useful" are different moments; this chart shows how far apart they are."""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

from experiments.charts.data import VariantResults
from experiments.charts.metrics import is_number
from experiments.charts.style import Figure, axis, base_layout, figure, trace

MILESTONES = (
    ("time_to_victims_selected", "victims selected", "diamond"),
    ("time_to_victims_released", "victims released", "square"),
    ("time_to_group_scheduled", "group scheduled", "triangle-up"),
    ("time_to_group_useful", "group useful", "star"),
)
SEGMENTS = (
    ("waiting for a preemption decision", "#d0d7de"),
    ("victims terminating (grace period)", "#E15759"),
    ("binding", "#F2C14E"),
    ("starting up until Ready", "#59A14F"),
)


def milestone_times(variant: VariantResults) -> list[float | None]:
    """Seconds after the preemptor's arrival, mean across replications, in MILESTONES order."""
    return [variant.mean(metric) for metric, _, _ in MILESTONES]


def segments(times: Sequence[float | None]) -> list[tuple[float, float] | None]:
    """The four spans between milestones (None where a milestone is missing). Without a
    preemption the wait before binding starts at the arrival."""
    selected, released, scheduled, useful = times
    decided = released if is_number(released) else selected if is_number(selected) else 0.0
    spans = [(0.0, selected), (selected, released), (decided, scheduled), (scheduled, useful)]
    return [(a, b) if is_number(a) and is_number(b) and b >= a else None for a, b in spans]


def milestones_figure(variants: Sequence[VariantResults]) -> Figure:
    labels = [v.label for v in variants]
    times = [milestone_times(v) for v in variants]
    traces = [
        _segment_trace(labels, [segments(t)[k] for t in times], name, color)
        for k, (name, color) in enumerate(SEGMENTS)
    ]
    traces += [
        _milestone_trace(
            labels, [t[k] for t in times], name, symbol, [v.spread(metric) for v in variants]
        )
        for k, (metric, name, symbol) in enumerate(MILESTONES)
    ]
    return figure(
        traces,
        {
            **base_layout(
                title="The preemptor's milestones (seconds after it arrived)",
                height=max(260, 150 + 40 * len(variants)),
                barmode="overlay",
                margin={"l": 140, "r": 220, "t": 40, "b": 110},
                legend={"orientation": "h", "y": -0.2, "yanchor": "top"},
            ),
            "xaxis": axis("", rangemode="tozero", ticksuffix="s"),
            "yaxis": axis("", type="category", autorange="reversed"),
            "annotations": [_gap_note(label, t) for label, t in zip(labels, times, strict=True)],
        },
    )


def _segment_trace(
    labels: list[str], spans: list[tuple[float, float] | None], name: str, color: str
) -> dict[str, Any]:
    return trace(
        "bar",
        y=labels,
        x=[s[1] - s[0] if s else None for s in spans],
        base=[s[0] if s else None for s in spans],
        orientation="h",
        name=name,
        marker={"color": color},
        width=0.45,
        opacity=0.9,
        hovertemplate="%{y}: " + name + "<br>%{base:,.4~g}s → %{x:,.4~g}s long<extra></extra>",
    )


def _milestone_trace(
    labels: list[str],
    values: list[float | None],
    name: str,
    symbol: str,
    spreads: list[tuple[float | None, float | None]],
) -> dict[str, Any]:
    """The mean's marker, with whiskers from the fastest to the slowest replication."""
    below = [
        v - lo if is_number(v) and is_number(lo) else 0.0
        for v, (lo, _) in zip(values, spreads, strict=True)
    ]
    above = [
        hi - v if is_number(v) and is_number(hi) else 0.0
        for v, (_, hi) in zip(values, spreads, strict=True)
    ]
    return trace(
        "scatter",
        y=labels,
        x=values,
        mode="markers",
        name=name,
        marker={"symbol": symbol, "size": 12, "color": "#24292f"},
        error_x={
            "type": "data",
            "symmetric": False,
            "array": above,
            "arrayminus": below,
            "visible": any(below) or any(above),
            "color": "#57606a",
            "thickness": 1,
        },
        hovertemplate="%{y}: " + name + " at %{x:,.4~g}s (mean; whiskers: "
        "min to max across replications)<extra></extra>",
    )


def _gap_note(label: str, times: list[float | None]) -> dict:
    selected, _, _, useful = times
    if not is_number(useful):
        text = "group never useful within the horizon"
    elif is_number(selected):
        text = f"useful {useful - selected:,.4g}s after victims selected"
    else:
        text = f"useful after {useful:,.4g}s, without preemption"
    return {
        "xref": "paper",
        "x": 1.01,
        "xanchor": "left",
        "y": label,
        "text": text,
        "showarrow": False,
        "font": {"size": 11},
    }
