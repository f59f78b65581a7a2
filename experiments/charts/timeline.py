"""The GPU timeline: which pod held which GPUs, in which state, when, and where a
preemption struck. Per node (a Gantt) for a small cluster or one group of a large one;
per group and time slice (a heatmap) for the whole of a large cluster."""

from __future__ import annotations

import math
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any

from experiments.charts.downsample import round_all, slice_centers, time_edges
from experiments.charts.spans import (
    BASE_STATES,
    OVERLAY_STATES,
    NodeGroup,
    Preemption,
    Span,
    occupancy,
)
from experiments.charts.style import (
    PREEMPTOR_COLOR,
    STATE_COLORS,
    STATE_KEY_COLOR,
    STATE_PATTERNS,
    STATES,
    VICTIM_COLOR,
    Figure,
    axis,
    base_layout,
    category_ticks,
    figure,
    short_label,
    trace,
    workload_color,
)
from scheduler_core.spec import MILLI_PER_GPU
from scheduler_core.state_area import StateArea

MAX_OVERLAYS = 1500
HEATMAP_BINS = 120
HATCH = "rgba(0,0,0,0.55)"
"""The strokes of a state's pattern (loading /, terminating -) over a bar."""
HELD_COLORS = [[0.0, "#f7fbff"], [0.5, "#6baed6"], [1.0, "#08306b"]]
"""Idle GPUs light, held GPUs dark (plotly's own "Blues" runs the other way)."""


# ------------------------------------------------------------------ per node (Gantt)
BAND = 0.86
"""Share of a node's row its GPUs fill; the rest is the gap to the next node."""


@dataclass(frozen=True, slots=True)
class _Rows:
    """Where things go on the Gantt's y axis: node ``i`` fills [i, i + BAND], its GPU
    slots split that band evenly."""

    index: dict[str, int]
    capacity: Mapping[str, int]
    mig: Mapping[str, str] = field(default_factory=dict)
    """What a MIG workload's pod holds (spans.mig_labels), by workload: its hover text
    names the profile rather than the milli-GPU it is drawn at."""

    def center(self, node: str) -> float:
        return self.index[node] + BAND / 2

    def band(self, node: str, first: int, count: int) -> tuple[float, float]:
        """Centre and thickness of ``count`` slots from ``first`` on ``node``."""
        per_slot = BAND / max(1, self.capacity.get(node, 0), first + count)
        return self.index[node] + (first + count / 2) * per_slot, count * per_slot * 0.9

    def share_band(self, node: str, device: int, offset: int, milli: int) -> tuple[float, float]:
        """Centre and thickness of ``milli`` of device ``device`` from ``offset``: the
        device's bar (what a whole GPU would fill) cut in thousandths, so a 600-milli
        share fills 60 % of its slot and the rest shows the device partly free."""
        per_slot = BAND / max(1, self.capacity.get(node, 0), device + 1)
        top = self.index[node] + (device + 0.05) * per_slot
        fill = 0.9 * per_slot / MILLI_PER_GPU
        return top + (offset + milli / 2) * fill, milli * fill

    def pieces(self, span: Span) -> list[tuple[tuple[float, float], str]]:
        """Where ``span`` is drawn, (centre, thickness) per bar, with what it holds
        there: one bar per run of whole GPUs, one per range of a share's device."""
        if span.parts:
            (device,) = span.slots
            ranges = list(zip(span.parts[::2], span.parts[1::2], strict=True))
            held = self.mig.get(span.workload) or f"{sum(n for _, n in ranges)} milli-GPU"
            label = f"{held} {'on' if span.workload in self.mig else 'of'} GPU {device}"
            return [(self.share_band(span.node, device, o, n), label) for o, n in ranges]
        label = f"{span.gpus:g} GPU"
        return [(self.band(span.node, f, c), label) for f, c in contiguous_runs(span.slots)]


def gantt_figure(
    spans: Sequence[Span],
    marks: Sequence[Preemption],
    nodes: Sequence[str],
    *,
    capacity: Mapping[str, int],
    start: float,
    end: float,
    title: str,
    mig_labels: Mapping[str, str] | None = None,
) -> Figure:
    """One band per node in ``nodes``, split into its GPUs: each pod's spans as bars on
    the GPUs it holds, coloured by workload and patterned by state, checkpoint writes and
    stranded capacity drawn over them, and preemptions as markers (victim ✕ on its GPUs,
    preemptor ▼ on the node it was nominated to) joined by a dotted line. ``mig_labels``
    (spans.mig_labels) names the MIG profile a pod holds in its hover text."""
    rows = _Rows({node: i for i, node in enumerate(nodes)}, capacity, mig_labels or {})
    spans = [s for s in spans if s.node in rows.index]
    colors = workload_colors(s.workload for s in spans)
    overlays, thinned = _bounded_overlays([s for s in spans if s.state in OVERLAY_STATES])
    traces = [
        bars
        for state in BASE_STATES
        for bars in _state_bars([s for s in spans if s.state == state], state, rows, colors)
    ]
    traces += [
        bars
        for state in OVERLAY_STATES
        for bars in _state_bars([s for s in overlays if s.state == state], state, rows, None)
    ]
    traces += _preemption_traces(marks, spans, rows)
    traces += _legend_keys(colors)
    note = f" (longest {MAX_OVERLAYS} checkpoint/stranded marks of {thinned})" if thinned else ""
    margin = {"l": 110, "r": 20, "t": 40, "b": 40}
    # Tall enough for its legend too: a scrolled legend hides what colours mean.
    plot = max(_gantt_height(nodes, capacity) - margin["t"] - margin["b"], legend_height(traces))
    return figure(
        traces,
        {
            **base_layout(
                title=title + note,
                height=plot + margin["t"] + margin["b"],
                barmode="overlay",
                margin=margin,
                legend={
                    "orientation": "v",
                    "x": 1.01,
                    "y": 1,
                    "font": {"size": LEGEND_FONT},
                    "tracegroupgap": LEGEND_GROUP_GAP,
                },
            ),
            "xaxis": axis("", range=[start, end], ticksuffix="s"),
            "yaxis": axis(
                "",
                tickvals=[rows.center(n) for n in nodes],
                ticktext=[short_label(n) for n in nodes],
                range=[len(nodes), -0.1],
                zeroline=False,
                showgrid=False,
            ),
            "shapes": _initial_state_shade(spans) + _shared_device_outlines(spans, rows),
        },
    )


MAX_DEVICE_OUTLINES = 1000
SHARED_DEVICE_LINE = "#8c959f"


def _shared_device_outlines(spans: Sequence[Span], rows: _Rows) -> list[dict[str, Any]]:
    """A thin frame around every device that shares ever held, over the whole time
    axis: the frame is the whole device, the bars in it the shares, and what the
    frame holds empty the part of the device nobody uses."""
    devices = sorted({(s.node, s.slots[0]) for s in spans if s.parts}, key=str)
    return [
        {
            "type": "rect",
            "xref": "paper",
            "yref": "y",
            "x0": 0,
            "x1": 1,
            "y0": round(center - width / 2, 4),
            "y1": round(center + width / 2, 4),
            "line": {"color": SHARED_DEVICE_LINE, "width": 0.6},
            "fillcolor": "rgba(0,0,0,0)",
            "layer": "below",
        }
        for node, device in devices[:MAX_DEVICE_OUTLINES]
        for center, width in [rows.share_band(node, device, 0, MILLI_PER_GPU)]
    ]


MAX_WORKLOAD_KEYS = 12


LEGEND_FONT = 11
LEGEND_GROUP_GAP = 8
"""Pixels between two legend groups (plotly's default is 10): the Gantt's legend has one
group per state, so this is most of what a few-node Gantt grows by to fit it."""
LEGEND_SLACK = 12
"""Pixels ``automargin`` may take from the plot for the time axis's tick labels."""


def legend_height(traces: Sequence[dict[str, Any]], font: int = LEGEND_FONT) -> int:
    """Pixels a vertical, grouped legend of ``traces`` takes, as plotly.js 4 lays it out
    (legend/draw.js): each one-line entry max(1.3 x font, 16) + 3 px, ``tracegroupgap``
    between groups, and an item gap (5 px) above and below. Plotly caps a legend beside
    the plot at the plot's height and scrolls the rest, so the figure must give the plot
    at least this much."""
    shown = [t for t in traces if t.get("showlegend", True) and t.get("name")]
    groups = len({t.get("legendgroup") or id(t) for t in shown})
    entry = max(1.3 * font, 16) + 3
    needed = len(shown) * entry + max(0, groups - 1) * LEGEND_GROUP_GAP + 2 * 5
    return math.ceil(needed) + LEGEND_SLACK


def _gantt_height(nodes: Sequence[str], capacity: Mapping[str, int]) -> int:
    """About 12 px per GPU, at least 26 px per node, the whole at most 1500 px."""
    return min(1500, 90 + sum(max(26, 12 * capacity.get(n, 1)) for n in nodes))


def _legend_keys(colors: dict[str, str]) -> list[dict[str, Any]]:
    """Legend entries that say what colour and pattern mean: the bars' own entries
    would show whichever workload colour came first."""

    def key(name: str, color: str, pattern: str, group: str) -> dict[str, Any]:
        return trace(
            "bar",
            x=[None],
            y=[None],
            name=name,
            legendgroup=group,
            orientation="h",
            marker={"color": color, "pattern": {"shape": pattern, "fgcolor": HATCH}},
        )

    states = [
        key(state, STATE_KEY_COLOR, STATE_PATTERNS[state], state)
        if state in BASE_STATES
        else key(state, STATE_COLORS[state], "", state)
        for state in STATES
    ]
    shown = list(colors.items())[:MAX_WORKLOAD_KEYS]
    return states + [key(f"workload {name}", color, "", "workloads") for name, color in shown]


def workload_colors(workloads: Iterable[str]) -> dict[str, str]:
    """A colour per workload, stable for a given set (sorted by name)."""
    return {name: workload_color(i) for i, name in enumerate(sorted(set(workloads)))}


def _bounded_overlays(overlays: list[Span]) -> tuple[list[Span], int]:
    """Checkpoint writes can number thousands of slivers: keep the longest."""
    if len(overlays) <= MAX_OVERLAYS:
        return overlays, 0
    kept = sorted(overlays, key=lambda s: s.end - s.start, reverse=True)[:MAX_OVERLAYS]
    return kept, len(overlays)


def contiguous_runs(slots: Sequence[int]) -> list[tuple[int, int]]:
    """(first, count) of each run of consecutive slots: a pod whose GPUs are not
    adjacent is drawn as one bar per run."""
    runs: list[tuple[int, int]] = []
    for slot in sorted(slots):
        if runs and runs[-1][0] + runs[-1][1] == slot:
            runs[-1] = (runs[-1][0], runs[-1][1] + 1)
        else:
            runs.append((slot, 1))
    return runs


def _state_bars(
    spans: list[Span], state: str, rows: _Rows, colors: dict[str, str] | None
) -> list[dict[str, Any]]:
    """The bars of one state, coloured by workload (``colors``) or by the state; a
    patterned state adds its hatch as a second bar trace over the same bars. One
    pattern for the whole trace: a pattern on bars of many colours is one SVG pattern
    per bar, which took half of a large Gantt's drawing time."""
    drawn = [(s, where, label) for s in spans for where, label in rows.pieces(s)]
    pieces = [(s, where) for s, where, _ in drawn]
    shape = {
        "y": [round(y, 4) for _, (y, _) in pieces],
        "width": [round(w, 4) for _, (_, w) in pieces],
        "x": round_all([s.end - s.start for s, _ in pieces]),
        "base": round_all([s.start for s, _ in pieces]),
        "orientation": "h",
        "name": state,
        "legendgroup": state,
        "showlegend": False,
    }
    fill = [colors[s.workload] for s, _ in pieces] if colors else STATE_COLORS[state]
    bars = trace(
        "bar",
        **shape,
        marker={"color": fill, "line": _share_edges([s for s, _ in pieces])},
        customdata=[[s.pod, s.workload, s.gpus, s.node, label] for s, _, label in drawn],
        hovertemplate="%{customdata[0]} (%{customdata[1]}, %{customdata[4]}) on "
        "%{customdata[3]}<br>" + state + " from %{base:,.1f}s for %{x:,.1f}s"
        "<extra></extra>",
    )
    if not (colors and STATE_PATTERNS[state] and pieces):
        return [bars]
    # Overlays are told apart by colour; the base states by their pattern, drawn here as
    # dark strokes on a clear ground (``overlay``: the marker colour is the strokes').
    hatch = trace(
        "bar",
        **shape,
        marker={
            "color": HATCH,
            "line": {"width": 0},
            "pattern": {"shape": STATE_PATTERNS[state], "fillmode": "overlay", "solidity": 0.35},
        },
        hoverinfo="skip",
    )
    return [bars, hatch]


def _share_edges(spans: Sequence[Span]) -> dict[str, Any]:
    """A white edge around each share's bar, so two shares of one workload on one
    device read as two (whole-GPU bars keep none, as before)."""
    if not any(s.parts for s in spans):
        return {"width": 0}
    return {"width": [0.8 if s.parts else 0 for s in spans], "color": "white"}


def _victim_position(mark: Preemption, by_pod: dict[str, list[Span]], rows: _Rows) -> float:
    """The centre of the GPUs (or the share) the victim held when it was preempted."""
    for span in by_pod.get(mark.victim, ()):
        if span.start <= mark.time <= span.end and span.slots:
            return rows.pieces(span)[0][0][0]
    return rows.center(mark.victim_node)


def _preemption_traces(
    marks: Sequence[Preemption], spans: Sequence[Span], rows: _Rows
) -> list[dict[str, Any]]:
    by_pod: dict[str, list[Span]] = {}
    for span in spans:
        by_pod.setdefault(span.pod, []).append(span)
    victims = [(m, _victim_position(m, by_pod, rows)) for m in marks if m.victim_node in rows.index]
    preemptors = {
        (m.time, m.preemptor, m.preemptor_node): rows.center(m.preemptor_node)
        for m in marks
        if m.preemptor_node in rows.index
    }
    links_x: list[float | None] = []
    links_y: list[float | None] = []
    for m, y in victims:
        if m.preemptor_node in rows.index:
            links_x += [m.time, m.time, None]
            links_y += [rows.center(m.preemptor_node), y, None]
    return [
        trace(
            "scatter",
            x=links_x,
            y=links_y,
            mode="lines",
            name="preemption link",
            line={"color": VICTIM_COLOR, "width": 1.5, "dash": "dot"},
            hoverinfo="skip",
            legendgroup="preemption",
        ),
        trace(
            "scatter",
            x=[m.time for m, _ in victims],
            y=[y for _, y in victims],
            mode="markers",
            name="victim",
            legendgroup="preemption",
            marker={
                "symbol": "x",
                "size": 11,
                "color": VICTIM_COLOR,
                "line": {"color": "white", "width": 1},
            },
            customdata=[[m.victim, m.preemptor, m.victim_node] for m, _ in victims],
            hovertemplate="%{customdata[0]} preempted by %{customdata[1]}<br>"
            "at %{x:,.1f}s on %{customdata[2]}<extra></extra>",
        ),
        trace(
            "scatter",
            x=[key[0] for key in preemptors],
            y=list(preemptors.values()),
            mode="markers",
            name="preemptor",
            legendgroup="preemption",
            marker={"symbol": "triangle-down", "size": 12, "color": PREEMPTOR_COLOR},
            customdata=[[key[1], key[2]] for key in preemptors],
            hovertemplate="%{customdata[0]} selects victims, nominated to "
            "%{customdata[1]}<br>at %{x:,.1f}s<extra></extra>",
        ),
    ]


def _initial_state_shade(spans: list[Span]) -> list[dict]:
    earliest = min((s.start for s in spans), default=0.0)
    if earliest >= 0:
        return []
    return [
        {
            "type": "rect",
            "xref": "x",
            "yref": "paper",
            "x0": earliest,
            "x1": 0,
            "y0": 0,
            "y1": 1,
            "fillcolor": "#f6f8fa",
            "line": {"width": 0},
            "layer": "below",
        }
    ]


# -------------------------------------------------------------- per group (heatmap)
def occupancy_figure(
    spans: Sequence[Span],
    marks: Sequence[Preemption],
    groups: Sequence[NodeGroup],
    *,
    start: float,
    end: float,
    title: str,
    bins: int = HEATMAP_BINS,
    held: Sequence[Sequence[float]] | None = None,
) -> Figure:
    """A heatmap of the share of each group's GPUs held (any state) per time slice, with
    the preemptions of each slice as dots: the whole cluster at once, whatever its size.
    Clicking a row opens that group's Gantt on the page. ``held``: each group's mean
    GPUs held per slice of ``[start, end]``, as the core keeps them for a timeline past
    the span budget, instead of the spans."""
    rows = {node: i for i, group in enumerate(groups) for node in group.nodes}
    if held is not None:
        edges = time_edges(start, end, len(held[0]) if held else bins)
        share = [
            [round(v / g.gpus, 3) if g.gpus else 0.0 for v in row]
            for row, g in zip(held, groups, strict=True)
        ]
    else:
        edges = time_edges(start, end, bins)
        width = edges[1] - edges[0]
        seconds = occupancy(
            [s for s in spans if s.state in BASE_STATES],
            rows,
            len(groups),
            start=start,
            end=end,
            bins=bins,
        )
        share = [
            [round(v / (g.gpus * width), 3) if g.gpus else 0.0 for v in row]
            for row, g in zip(seconds, groups, strict=True)
        ]
    centers = slice_centers(edges)
    names = [g.name for g in groups]
    height = _heatmap_height(len(groups))
    heatmap = trace(
        "heatmap",
        z=share,
        x=centers,
        y=names,
        zmin=0,
        zmax=1,
        colorscale=HELD_COLORS,
        colorbar={"title": {"text": "GPUs held"}, "tickformat": ".0%"},
        hovertemplate="%{y}<br>%{x:,.0f}s: %{z:.0%} of GPUs held<extra></extra>",
    )
    return figure(
        [heatmap, _preemption_dots(marks, rows, names, edges)],
        {
            **base_layout(
                title=title,
                height=height,
                margin={"l": 170, "r": 20, "t": 40, "b": 50},
                showlegend=False,
            ),
            "xaxis": axis("", range=[start, end], ticksuffix="s"),
            "yaxis": axis(
                "",
                type="category",
                autorange="reversed",
                **category_ticks(names[:: _label_step(len(groups), height)]),
            ),
        },
    )


def _heatmap_height(rows: int) -> int:
    """Readable rows for a few groups, a bounded canvas for hundreds."""
    return min(1000, 160 + 12 * min(rows, 30) + 3 * rows)


LABEL_PITCH = 15
"""Pixels between two row labels at least: a 12 px label needs that much not to overlap."""


def _label_step(rows: int, height: int) -> int:
    """Label every ``step``-th row: 250 groups on a 1,000 px canvas are 3.6 px each, and a
    label on every row piled 250 illegible names on top of each other (each one measured
    by the browser, a third of the chart's drawing time). The hover names every row."""
    pitch = (height - 90) / max(1, rows)  # the plot area: height less the top and bottom margins
    return max(1, math.ceil(LABEL_PITCH / pitch))


MAX_DOTS = 2000
"""Preemption markers on the heatmap at most: each is an SVG element. Above, the dots
count victims over wider time slices (2, 4, ... heatmap slices), so none is lost."""


def _preemption_dots(
    marks: Sequence[Preemption], rows: dict[str, int], names: list[str], edges: list[float]
) -> dict[str, Any]:
    bins = len(edges) - 1
    merge = 1
    while True:
        width = (edges[1] - edges[0]) * merge
        counts = _victims_per_cell(marks, rows, edges[0], edges[-1], width, -(-bins // merge))
        if len(counts) <= MAX_DOTS or merge >= bins:
            break
        merge *= 2
    keys = sorted(counts)
    return trace(
        "scatter",
        x=[round(edges[0] + (b + 0.5) * width, 1) for _, b in keys],
        y=[names[r] for r, _ in keys],
        mode="markers",
        name="preemptions",
        marker={
            "symbol": "x",
            "color": VICTIM_COLOR,
            "size": [min(14, 5 + 2 * counts[k]) for k in keys],
        },
        customdata=[counts[k] for k in keys],
        hovertemplate="%{y}<br>%{customdata} victim(s) near %{x:,.0f}s<extra></extra>",
    )


def _victims_per_cell(
    marks: Sequence[Preemption],
    rows: dict[str, int],
    start: float,
    end: float,
    width: float,
    bins: int,
) -> dict[tuple[int, int], int]:
    """Victims per (group row, time slice of ``width``)."""
    counts: dict[tuple[int, int], int] = {}
    for m in marks:
        row = rows.get(m.victim_node)
        if row is not None and start <= m.time <= end:
            key = (row, min(bins - 1, int((m.time - start) / width)))
            counts[key] = counts.get(key, 0) + 1
    return counts


# ------------------------------------------------------------ the whole cluster by state
def state_area_figure(area: StateArea, *, title: str) -> Figure:
    """GPUs held per pod state over time, stacked: how much of the cluster was making
    progress and how much was loading, terminating, checkpointing or stranded. Drawn
    from the core's area (``scheduler_core.state_area``: mean GPUs per state per slice,
    gathered from every span, so it draws past the span budget too)."""
    edges = area.edges()
    # Steps, not slopes: a value holds for its whole slice, from the slice's left edge.
    traces = [
        trace(
            "scatter",
            x=edges,
            y=[*area.gpus[state], area.gpus[state][-1]],
            name=state,
            mode="lines",
            stackgroup="gpus",
            line={"width": 0.5, "color": STATE_COLORS[state], "shape": "hv"},
            hovertemplate=state + ": %{y:,.1f} GPUs from %{x:,.0f}s<extra></extra>",
        )
        for state in STATES
    ]
    return figure(
        traces,
        {
            **base_layout(
                title=title,
                height=300,
                legend={"orientation": "v", "x": 1.01, "y": 1, "traceorder": "reversed"},
            ),
            "xaxis": axis("", range=[0.0, area.end], ticksuffix="s"),
            "yaxis": axis("GPUs", rangemode="tozero"),
        },
    )
