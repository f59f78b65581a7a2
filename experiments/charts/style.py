"""One look for every chart: colours for variants, workloads and pod states, and the
layout defaults the pages share."""

from __future__ import annotations

import math
import zlib
from collections.abc import Sequence
from typing import Any

from scheduler_core.state_area import STATES as STATES  # re-exported: the charts draw these

Figure = dict[str, Any]
"""A Plotly figure as JSON-ready dicts ({"data": [...], "layout": {...}}): what the page
sends. The builders skip ``plotly.graph_objects`` validation at request time (it cost
more than the drawing for a large run); the tests validate every builder's output
through ``plotly.graph_objects.Figure`` instead, which rejects any unknown property."""

BUNDLED_TRACES = ("scatter", "bar", "heatmap")
"""The trace types in the plotly.js the app serves (tools/plotly/build.mjs builds it with
exactly these): every chart is cartesian SVG. No WebGL: a WebGL context costs ~0.5 s to
start in software-rendered Chromium, and the builders bound every figure's points (lines
thinned, markers binned) so SVG draws them faster; ``scattergl`` alone would have added
about a megabyte of script to every first visit."""

# Okabe-Ito, then Tableau: distinguishable by most colour-blind readers, in this order.
# The light members are darkened until each has WCAG's 3:1 contrast for graphics on the
# white plot background (Okabe-Ito's yellow #F0E442 had 1.3:1, its orange #E69F00 and sky
# blue #56B4E9 and Tableau's orange #F28E2B about 2.3:1); their hues stay apart.
VARIANT_COLORS = (
    "#0072B2",
    "#C17D00",
    "#009E73",
    "#CC79A7",
    "#2E8FC7",
    "#D55E00",
    "#9A8200",
    "#000000",
    "#4E79A7",
    "#C96A1B",
    "#59A14F",
    "#B07AA1",
)
BEST_COLOR = "#1a7f37"
MUTED = "#8c959f"
FONT = "system-ui, -apple-system, Segoe UI, Roboto, sans-serif"

# A pod's span: the state decides the pattern, the workload the colour. The states are
# the core's (``scheduler_core.state_area.STATES``), in the order they stack.
STATE_PATTERNS = {
    "loading": "/",
    "running": "",
    "checkpointing": "x",
    "terminating": "-",
    "stranded": ".",
}
STATE_COLORS = {
    "loading": "#F2C14E",
    "running": "#4E79A7",
    "checkpointing": "#59A14F",
    "terminating": "#E15759",
    "stranded": "#7F7F7F",
}
STATE_KEY_COLOR = "#d0d7de"
"""The legend key of a patterned state (its bars take their workload's colour)."""
VICTIM_COLOR = "#cf222e"
PREEMPTOR_COLOR = "#24292f"
RESERVED_COLORS = (*STATE_COLORS.values(), STATE_KEY_COLOR, VICTIM_COLOR, PREEMPTOR_COLOR)
"""Colours that mean something on the GPU timeline other than "this workload": a
workload drawn in one of them (or one close to it) reads as a checkpoint write, a
stranded GPU or a preemption."""

MIN_DELTA_E = 20.0
"""CIE76 distance a workload colour keeps from every reserved colour and from every other
workload colour: about 2.3 is a just-noticeable difference, 20 tells two bars apart at a
glance even when one is a sliver over the other."""

_WORKLOAD_CANDIDATES = (
    # Tableau 10, then Tableau 20's light members, then Paul Tol's muted scheme and
    # Okabe-Ito: the palette takes the first that keep MIN_DELTA_E from what came before.
    "#4E79A7",
    "#F28E2B",
    "#59A14F",
    "#B07AA1",
    "#76B7B2",
    "#EDC948",
    "#FF9DA7",
    "#9C755F",
    "#BAB0AC",
    "#E15759",
    "#86BCB6",
    "#D4A6C8",
    "#A0CBE8",
    "#FFBE7D",
    "#8CD17D",
    "#B6992D",
    "#F1CE63",
    "#499894",
    "#FF9D9A",
    "#79706E",
    "#D37295",
    "#FABFD2",
    "#D7B5A6",
    "#332288",
    "#88CCEE",
    "#44AA99",
    "#117733",
    "#999933",
    "#DDCC77",
    "#CC6677",
    "#882255",
    "#AA4499",
    "#E69F00",
    "#56B4E9",
    "#009E73",
    "#0072B2",
    "#D55E00",
    "#CC79A7",
)
WORKLOAD_PALETTE_SIZE = 12


def _lab(hex_colour: str) -> tuple[float, float, float]:
    """CIELAB (D65) of an sRGB ``#rrggbb``: distances there follow what the eye sees,
    unlike distances between RGB triples."""
    channels = [int(hex_colour[i : i + 2], 16) / 255 for i in (1, 3, 5)]
    r, g, b = (c / 12.92 if c <= 0.04045 else ((c + 0.055) / 1.055) ** 2.4 for c in channels)
    xyz = (
        (0.4124 * r + 0.3576 * g + 0.1805 * b) / 0.95047,
        0.2126 * r + 0.7152 * g + 0.0722 * b,
        (0.0193 * r + 0.1192 * g + 0.9505 * b) / 1.08883,
    )
    fx, fy, fz = (t ** (1 / 3) if t > 0.008856 else 7.787 * t + 16 / 116 for t in xyz)
    return 116 * fy - 16, 500 * (fx - fy), 200 * (fy - fz)


def delta_e(a: str, b: str) -> float:
    """CIE76 colour difference between two ``#rrggbb`` colours."""
    return math.dist(_lab(a), _lab(b))


def _workload_palette(
    candidates: Sequence[str], reserved: Sequence[str], size: int
) -> tuple[str, ...]:
    """The first ``size`` candidates at least MIN_DELTA_E from every reserved colour and
    from each other: state and workload colours are disjoint by construction, so no
    workload can be mistaken for checkpointing (the clash of Tableau's green, which was
    both s1's urgent workload and the checkpoint writes over it)."""
    kept: list[str] = []
    for colour in candidates:
        if all(delta_e(colour, other) >= MIN_DELTA_E for other in (*reserved, *kept)):
            kept.append(colour)
    if len(kept) < size:
        raise ValueError(f"only {len(kept)} workload colours stay clear of the reserved ones")
    return tuple(kept[:size])


WORKLOAD_COLORS = _workload_palette(_WORKLOAD_CANDIDATES, RESERVED_COLORS, WORKLOAD_PALETTE_SIZE)


def figure(traces: list[dict[str, Any]], layout: dict[str, Any]) -> Figure:
    return {"data": traces, "layout": layout}


def trace(kind: str, **properties: Any) -> dict[str, Any]:
    """A trace of ``kind`` ("bar", "scatter", ...) with Plotly's property names."""
    return {"type": kind, **properties}


def variant_color(name: str) -> str:
    """A variant's colour, fixed by its name: a stable hash (CRC-32, not Python's salted
    ``hash``) into the palette, so ``pod`` is the same colour on every page, in every run
    and in every export, whatever else is drawn beside it."""
    return VARIANT_COLORS[_slot(name)]


def _slot(name: str) -> int:
    return zlib.crc32(name.encode()) % len(VARIANT_COLORS)


def variant_colors(names: Sequence[str]) -> list[str]:
    """Colours for the variants of one figure: each its own ``variant_color`` unless an
    earlier one in the figure took it (two names that hash alike, or one name from two
    runs), then the next free colour, so equal series never hide each other."""
    taken: set[int] = set()
    out = []
    for name in names:
        slot = _slot(name)
        for step in range(len(VARIANT_COLORS)):
            if (slot + step) % len(VARIANT_COLORS) not in taken:
                slot = (slot + step) % len(VARIANT_COLORS)
                break
        taken.add(slot)
        if len(taken) == len(VARIANT_COLORS):
            taken.clear()
        out.append(VARIANT_COLORS[slot])
    return out


def workload_color(index: int) -> str:
    return WORKLOAD_COLORS[index % len(WORKLOAD_COLORS)]


def base_layout(*, title: str, height: int = 320, **extra: Any) -> dict[str, Any]:
    """Compact, readable defaults; a chart's own settings override them."""
    layout: dict[str, Any] = {
        "title": {"text": title, "x": 0, "xanchor": "left", "font": {"size": 14}},
        "height": height,
        "margin": {"l": 60, "r": 20, "t": 40, "b": 50},
        "font": {"family": FONT, "size": 12},
        "paper_bgcolor": "white",
        "plot_bgcolor": "white",
        "hoverlabel": {"namelength": -1},
        # Beside the plot, never under it: below, it covered the x axis's title. Plotly
        # widens the right margin to fit a legend placed outside the plot.
        "legend": {"orientation": "v", "x": 1.02, "xanchor": "left", "y": 1, "yanchor": "top"},
    }
    layout.update(extra)
    return layout


def axis(title: str, **extra: Any) -> dict[str, Any]:
    """An axis whose tick labels and title always fit: ``automargin`` grows the margin
    for long node or variant names instead of clipping them."""
    return {
        "title": {"text": title},
        "gridcolor": "#eaeef2",
        "zerolinecolor": "#d0d7de",
        "automargin": True,
        **extra,
    }


MAX_LABEL = 28
"""Characters of a category label shown on an axis; the whole name is in the hover."""


def short_label(text: str, limit: int = MAX_LABEL) -> str:
    """A long name cut to ``limit`` characters with an ellipsis, for tick labels."""
    return text if len(text) <= limit else text[: limit - 1] + "…"


def category_ticks(labels: list[str]) -> dict[str, Any]:
    """Axis settings that show ``labels`` shortened while the data keep the full names
    (so hovers and clicks still name the whole thing)."""
    return {
        "tickmode": "array",
        "tickvals": labels,
        "ticktext": [short_label(label) for label in labels],
    }
