"""The headline charts: one value per variant (the mean across replications) with its
95% interval and every replication's own value, the best variant marked (through the
core's metric registry), a variant whose urgent workload was never useful flagged."""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

import scheduler_core as sc
from experiments.charts.data import VariantResults
from experiments.charts.metrics import best_indexes, is_number, metric_title
from experiments.charts.style import (
    BEST_COLOR,
    Figure,
    axis,
    base_layout,
    figure,
    trace,
    variant_colors,
)

BEST_MARK = "★ best"
UNSERVED_MARK = "⚠ urgent never useful"
ALL_ZERO_MARK = "0 for every variant"
FLAG_COLOR = "#cf222e"


def headline_figure(variants: Sequence[VariantResults], metric: str) -> Figure:
    """Bars of the means, error bars of the 95% half-widths (only with replications),
    dots for the replications; the best variant's bar outlined and labelled."""
    labels = [v.label for v in variants]
    means = [v.mean(metric) for v in variants]
    best = best_indexes(means, metric, unserved=[v.unserved for v in variants])
    return figure(
        [_bars(variants, metric, best), _replication_dots(variants, metric)],
        {
            **base_layout(
                title=metric_title(metric),
                height=300,
                showlegend=False,
                bargap=0.35,
                margin={"l": 50, "r": 10, "t": 40, "b": 80},
            ),
            "xaxis": axis("", type="category", categoryarray=labels, categoryorder="array"),
            "yaxis": axis("", rangemode="tozero"),
            "annotations": _annotations(variants, metric, best),
        },
    )


def _bars(variants: Sequence[VariantResults], metric: str, best: list[int]) -> dict[str, Any]:
    ci = [v.ci95(metric) or 0.0 for v in variants]
    replicated = any(len(v.samples.get(metric, ())) > 1 for v in variants)
    return trace(
        "bar",
        x=[v.label for v in variants],
        y=[v.mean(metric) for v in variants],
        name="mean",
        marker={
            "color": variant_colors([v.color_key for v in variants]),
            "line": {
                "color": [
                    BEST_COLOR if i in best else "rgba(0,0,0,0)" for i in range(len(variants))
                ],
                "width": [3 if i in best else 0 for i in range(len(variants))],
            },
        },
        error_y={"type": "data", "array": ci, "visible": replicated, "color": "#24292f"},
        customdata=[[v.preemption, v.placement, len(v.samples.get(metric, ()))] for v in variants],
        hovertemplate="%{x}<br>mean %{y:,.4~g}<br>preemption %{customdata[0]}, placement "
        "%{customdata[1]}<br>%{customdata[2]} replication(s)<extra></extra>",
    )


def _replication_dots(variants: Sequence[VariantResults], metric: str) -> dict[str, Any]:
    xs, ys = [], []
    for variant in variants:
        for value in variant.samples.get(metric, ()):
            if is_number(value):
                xs.append(variant.label)
                ys.append(value)
    return trace(
        "scatter",
        x=xs,
        y=ys,
        mode="markers",
        name="replications",
        marker={"color": "#24292f", "size": 6, "opacity": 0.7, "symbol": "circle-open"},
        hovertemplate="%{x}<br>replication %{y:,.4~g}<extra></extra>",
    )


def _annotations(
    variants: Sequence[VariantResults],
    metric: str,
    best: list[int],
) -> list[dict]:
    """★ over the best; over a bar with no value the registry's null reading (a time that
    never happened reads "never (> horizon)", not 0); ⚠ under an unserved variant."""
    labels = [v.label for v in variants]
    means = [v.mean(metric) for v in variants]
    marks = [
        {
            "x": labels[i],
            "y": means[i],
            "text": BEST_MARK,
            "showarrow": False,
            "yshift": 14,
            "font": {"color": BEST_COLOR, "size": 12},
        }
        for i in best
    ]
    null = sc.metric_info(metric).null
    reading = _wrapped(null, _slot_chars(len(labels)))
    lines = reading.count("<br>") + 1
    size = 11 if len(labels) <= 4 else 9  # a word of the reading must fit a narrow slot
    missing = [
        {
            "x": label,
            "y": 0,
            "text": reading,
            "showarrow": False,
            "yanchor": "bottom",  # upwards from the axis, however many lines
            "yshift": 2,
            "font": {"color": "#6e7781", "size": size},
            "hovertext": f"no value: {null}",
        }
        for label, mean in zip(labels, means, strict=True)
        if not is_number(mean)
    ]
    flags = [
        {
            "x": v.label,
            "y": mean if is_number(mean) else 0,
            "text": UNSERVED_MARK,
            "showarrow": False,
            "yshift": 14 if is_number(mean) else 2 + round(1.2 * size) * lines + 10,
            "font": {"color": FLAG_COLOR, "size": 10},
            "hovertext": "an urgent workload never became useful before the horizon: "
            "this variant is never named best",
        }
        for v, mean in zip(variants, means, strict=True)
        if v.unserved
    ]
    numbers = [m for m in means if is_number(m)]
    if numbers and not any(numbers):
        # Bars of height 0 draw nothing: say so, or the chart reads as empty or broken.
        flags.append(
            {
                "xref": "paper",
                "yref": "paper",
                "x": 0.5,
                "y": 0.5,
                "text": ALL_ZERO_MARK,
                "showarrow": False,
                "font": {"color": "#6e7781", "size": 12},
            }
        )
    return marks + missing + flags


SLOT_CHARS = 54
"""About how many characters of an annotation fit across a headline chart's bars (three
charts a row): one bar's slot holds its share of them."""


def _slot_chars(bars: int) -> int:
    """How wide a line of a bar's reading may be: 18 characters up to three bars, less as
    the bars get narrower (five variants: 10), never under 8."""
    return 18 if bars <= 3 else max(8, SLOT_CHARS // bars)


def _wrapped(text: str, width: int = 18) -> str:
    """A long reading on as few lines as keep it inside its own bar's slot: two, split at
    the space nearest its middle, where each half fits ``width``; else word by word,
    each line at most ``width`` characters (a longer word alone on its line). Five
    variants' "none recovered in the horizon" overlapped their neighbours on two lines."""
    spaces = [i for i, c in enumerate(text) if c == " "]
    if len(text) <= width or not spaces:
        return text
    cut = min(spaces, key=lambda i: abs(i - len(text) / 2))
    if max(cut, len(text) - cut - 1) <= width:
        return text[:cut] + "<br>" + text[cut + 1 :]
    lines: list[str] = []
    for word in text.split(" "):
        if lines and len(lines[-1]) + 1 + len(word) <= width:
            lines[-1] += " " + word
        else:
            lines.append(word)
    return "<br>".join(lines)
