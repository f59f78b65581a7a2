"""The placement study's chart: GPU allocation ratio against arrived load, per policy.

Drawn from the run's aggregate only (each variant's ``study_summary`` and the paper's
published point, both computed by the core when the run was finalized): one mean line
per variant with the band between its lowest and highest seed, the line where every
arriving GPU request is placed, and the paper's mean ± SD at 130 % where the spec names
the paper's workload.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import Any

from experiments.charts.style import MUTED, Figure, axis, base_layout, figure, trace, variant_colors


def _rgba(color: str, alpha: float) -> str:
    red, green, blue = (int(color[i : i + 2], 16) for i in (1, 3, 5))
    return f"rgba({red},{green},{blue},{alpha})"


def study_figure(rows: Sequence[Mapping[str, Any]]) -> Figure:
    """One figure for all variants; ``rows`` is the run's aggregate, in run order."""
    names = [str(row["variant"]) for row in rows]
    colors = variant_colors(names)
    traces: list[dict[str, Any]] = []
    top = max((max(row["study"]["load"], default=0) for row in rows), default=100)
    traces.append(
        trace(
            "scatter",
            x=[0, min(100, top)],
            y=[0, min(100, top)],
            mode="lines",
            name="every request placed",
            line={"color": MUTED, "dash": "dot", "width": 1},
            hoverinfo="skip",
        )
    )
    for name, color, row in zip(names, colors, rows, strict=True):
        summary = row["study"]
        loads = summary["load"]
        seeds = summary["atLoad"]["n"]
        if seeds > 1:
            traces.append(
                trace(
                    "scatter",
                    x=[*loads, *reversed(loads)],
                    y=[*summary["max"], *reversed(summary["min"])],
                    fill="toself",
                    fillcolor=_rgba(color, 0.18),
                    line={"width": 0},
                    mode="lines",
                    name=f"{name}: lowest to highest of {seeds} seeds",
                    legendgroup=name,
                    showlegend=False,
                    hoverinfo="skip",
                )
            )
        traces.append(
            trace(
                "scatter",
                x=loads,
                y=summary["mean"],
                mode="lines",
                name=name,
                legendgroup=name,
                line={"color": color, "width": 2},
                hovertemplate=f"{name}<br>arrived %{{x}} %<br>allocated %{{y:.2f}} %"
                f" (mean of {seeds})<extra></extra>",
            )
        )
        paper = row.get("paper")
        if paper:
            traces.append(
                trace(
                    "scatter",
                    x=[130],
                    y=[paper["mean"]],
                    error_y={"type": "data", "array": [paper["sd"]], "color": color},
                    mode="markers",
                    marker={
                        "symbol": "diamond-open",
                        "size": 11,
                        "color": color,
                        "line": {"width": 2},
                    },
                    name=f"{name} · paper",
                    legendgroup=name,
                    hovertemplate=f"{name}, the paper's result<br>arrived 130 %<br>"
                    f"allocated %{{y:.2f}} % ± {paper['sd']:.2f} (SD of "
                    f"{int(paper['n'])} seeds)<extra></extra>",
                )
            )
    layout = base_layout(
        title="GPU allocation ratio against arrived load",
        height=460,
        xaxis=axis("Arrived GPU load (% of the cluster's GPU capacity)", rangemode="tozero"),
        yaxis=axis("GPU allocation ratio (%)", rangemode="tozero"),
        hovermode="closest",
    )
    return figure(traces, layout)


def zoom_figure(rows: Sequence[Mapping[str, Any]]) -> Figure:
    """The asked load only, one dot per variant with its 95 % interval across seeds and
    the paper's diamond beside it: the differences the full curve makes too small to
    see (a point or two at the end)."""
    names = [str(row["variant"]) for row in rows]
    colors = variant_colors(names)
    traces: list[dict[str, Any]] = []
    load = None
    for name, color, row in zip(names, colors, rows, strict=True):
        at = row["study"]["atLoad"]
        load = at["load"]
        traces.append(
            trace(
                "scatter",
                x=[name],
                y=[at["mean"]],
                error_y={"type": "data", "array": [at["ci95"] or 0.0], "color": color},
                mode="markers",
                marker={"color": color, "size": 10},
                name=name,
                showlegend=False,
                hovertemplate=f"{name}<br>%{{y:.2f}} % ± {at['ci95'] or 0:.2f} (95 %, "
                f"{at['n']} seeds)<extra></extra>",
            )
        )
        paper = row.get("paper")
        if paper:
            traces.append(
                trace(
                    "scatter",
                    x=[name],
                    y=[paper["mean"]],
                    mode="markers",
                    marker={"symbol": "diamond-open", "size": 11, "color": color},
                    name="the paper",
                    showlegend=False,
                    hovertemplate=f"{name}, the paper<br>%{{y:.2f}} %<extra></extra>",
                )
            )
    title = f"At {load:g} % arrived load" if load is not None else "At the asked load"
    layout = base_layout(
        title=title,
        height=460,
        xaxis=axis("Placement policy", type="category"),
        yaxis=axis("GPU allocation ratio (%)"),
        showlegend=False,
    )
    return figure(traces, layout)
