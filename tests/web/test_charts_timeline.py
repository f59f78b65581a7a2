"""The GPU timeline: pod spans read from a real event log, node groups, the per-group
occupancy that makes a 10,000-node cluster drawable, and the figures built from them."""

from __future__ import annotations

import json
from collections import defaultdict

import pytest

from experiments.charts import spans as sp
from experiments.charts import style
from experiments.charts import timeline as tl
from experiments.charts.data import Row
from scheduler_core import timeline as core_timeline
from scheduler_core.state_area import from_spans
from tests.web.charts_support import simulated, validated


def _s1_pod():
    s1 = simulated("s1-training-vs-shards")
    writes = {w["name"]: w["checkpoint"]["writeSeconds"] for w in s1.document["workloads"]}
    events = s1.results["pod"].events
    found = core_timeline.pod_spans(
        events,
        end=s1.horizon,
        write_seconds=writes,
        capacity=sp.node_capacity(s1.document["cluster"]),
    )
    return s1, events, found


def _row(time, reason, pod="", node="", value=0.0, workload="w", related=""):
    return Row(time, reason, workload, pod, node, value, related)


def test_a_preempted_pod_loads_runs_and_terminates_until_its_gpus_are_free():
    _, _, found = _s1_pod()

    train3 = [(s.state, s.start, s.end) for s in found if s.pod == "train-3" and not s.under]
    assert train3 == [
        ("loading", -3500.0, -3380.0),
        ("running", -3380.0, 10.0),
        ("terminating", 10.0, 15.0),
    ]
    urgent0 = [(s.state, s.start, s.end) for s in found if s.pod == "urgent-0"]
    assert urgent0 == [("loading", 15.0, 75.0), ("running", 75.0, 1875.0)]


def test_checkpoint_writes_are_drawn_once_per_pod_over_running_spans():
    _, events, found = _s1_pod()

    writes = [s for s in found if s.state == "checkpointing"]
    keys = [(s.pod, s.start) for s in writes]
    assert len(keys) == len(set(keys))
    assert {s.under for s in writes} == {"running"}
    assert all(s.end - s.start == 2.0 for s in writes if s.workload == "eval")
    eval_writes = {
        e.time
        for e in events
        if e.reason == "CheckpointWritten" and e.workload == "eval" and 0 <= e.time < 1000
    }
    assert {s.end for s in writes if s.pod == "eval-0" and 0 <= s.end < 1000} == eval_writes


@pytest.mark.parametrize(
    "preset",
    ["s1-training-vs-shards", "s12-topology-placement", "s5-loading-treadmill", "s9-spot-reclaim"],
)
def test_pods_of_one_node_never_share_a_gpu_slot(preset):
    sim = simulated(preset)
    capacity = sp.node_capacity(sim.document["cluster"])
    for result in sim.results.values():
        found = [
            s
            for s in core_timeline.pod_spans(result.events, end=sim.horizon, capacity=capacity)
            if not s.under
        ]
        by_node = defaultdict(list)
        for span in found:
            assert len(span.slots) == span.gpus
            by_node[span.node].append(span)
        for node, node_spans in by_node.items():
            for a in node_spans:
                for b in node_spans:
                    if a.pod != b.pod and a.start < b.end and b.start < a.end:
                        assert not set(a.slots) & set(b.slots), (node, a, b)
                assert max(a.slots) < capacity[node]


def test_stranded_capacity_covers_the_live_members_for_value_over_their_gpus():
    events = [
        _row(0, "Scheduled", "a", "n", 2),
        _row(0, "Scheduled", "b", "n", 2),
        _row(10, "Ready", "a", "n"),
        _row(10, "Ready", "b", "n"),
        _row(100, "Stranded", value=200.0),
    ]

    found = core_timeline.pod_spans(events, end=200, capacity={"n": 8})

    stranded = sorted((s.pod, s.start, s.end) for s in found if s.state == "stranded")
    assert stranded == [("a", 50.0, 100.0), ("b", 50.0, 100.0)]


def test_preemptions_link_each_victim_to_the_node_its_preemptor_was_nominated_to():
    _, events, _ = _s1_pod()

    marks = core_timeline.preemptions(events)

    assert [(m.victim, m.victim_node, m.preemptor, m.preemptor_node) for m in marks] == [
        ("train-3", "node-b", "urgent-0", "node-b"),
        ("train-1", "node-a", "urgent-1", "node-a"),
        ("train-0", "node-a", "urgent-2", "node-a"),
        ("train-2", "node-b", "urgent-3", "node-b"),
    ]


def test_nodes_group_by_rack_label():
    groups = sp.node_groups(simulated("s12-topology-placement").document["cluster"])

    assert [(g.name, g.nodes, g.gpus) for g in groups] == [
        ("rack r0", ("r0-n0", "r0-n1"), 16),
        ("rack r1", ("r1-n0", "r1-n1"), 16),
        ("rack r2", ("r2-n0", "r2-n1"), 16),
        ("rack r3", ("r3-n0", "r3-n1"), 16),
    ]


def test_a_10000_node_pool_is_cut_into_groups_of_at_most_64_nodes():
    cluster = {
        "nodePools": [
            {"name": "gpu", "count": 10_000, "gpus": 8},
            {"name": "cpu", "count": 3, "gpus": 0},
        ],
        "nodes": [{"name": "special", "gpus": 4}],
    }

    groups = sp.node_groups(cluster)

    assert len(groups) == 157 + 1 + 1
    assert groups[0].name == "gpu gpu-0…gpu-63"
    assert groups[0].nodes[-1] == "gpu-63"
    assert groups[156].name == "gpu gpu-9984…gpu-9999"
    assert len(groups[156].nodes) == 16
    assert [(g.name, g.gpus) for g in groups[157:]] == [("cpu", 0), ("nodes", 4)]
    assert sum(len(g.nodes) for g in groups) == 10_004
    assert max(len(g.nodes) for g in groups) == 64


def test_occupancy_integrates_gpu_seconds_per_time_slice():
    spans = [
        sp.Span("n1", "p", "w", "running", 5.0, 25.0, 2.0),
        sp.Span("n2", "q", "w", "loading", -50.0, 100.0, 1.0),
        sp.Span("elsewhere", "r", "w", "running", 0.0, 30.0, 8.0),
    ]

    held = sp.occupancy(spans, {"n1": 0, "n2": 1}, 2, start=0.0, end=30.0, bins=3)

    assert held == [[10.0, 20.0, 10.0], [10.0, 10.0, 10.0]]


def _big_cluster_spans(nodes: int, pods_per_node: int, horizon: float):
    """Spans and preemptions for a 10,000-node cluster without simulating it."""
    spans, marks = [], []
    for n in range(nodes):
        node = f"gpu-{n}"
        for k in range(pods_per_node):
            start = (n * 37 + k * 1000) % horizon
            spans.append(
                sp.Span(
                    node,
                    f"p{n}-{k}",
                    f"w{n % 50}",
                    "running",
                    start,
                    min(horizon, start + 900),
                    4.0,
                    slots=(0, 1, 2, 3),
                )
            )
        if n % 100 == 0:
            marks.append(sp.Preemption(float(n % horizon), f"p{n}-0", node, "urgent", node))
    return spans, marks


def test_a_10000_node_run_becomes_a_bounded_heatmap():
    horizon = 7200.0
    spans, marks = _big_cluster_spans(10_000, 3, horizon)
    groups = sp.node_groups({"nodePools": [{"name": "gpu", "count": 10_000, "gpus": 8}]})

    figure = validated(tl.occupancy_figure(spans, marks, groups, start=0.0, end=horizon, title="t"))

    heatmap, dots = figure.data
    assert (heatmap.type, dots.type) == ("heatmap", "scatter")
    assert len(heatmap.z) == len(groups) == 157
    assert {len(row) for row in heatmap.z} == {tl.HEATMAP_BINS}
    assert all(0.0 <= v <= 1.0 for row in heatmap.z for v in row)
    assert heatmap.colorscale[0][1] == "#f7fbff"  # idle is light, busy is dark
    held = sum(v for row in heatmap.z for v in row) * 64 * 8 * horizon / tl.HEATMAP_BINS
    assert held == pytest.approx(sum(s.gpus * (s.end - s.start) for s in spans), rel=0.01)
    assert sum(dots.customdata) == len(marks) == 100
    assert len(json.dumps(figure.to_plotly_json(), default=str)) < 300_000


@pytest.mark.parametrize("count", [12, 157, 250])
def test_heatmap_row_labels_never_overlap_and_rows_keep_their_names(count):
    """Every row keeps its group's name (the hover and a click read it); the axis labels
    every row while they fit, else every k-th, never closer than LABEL_PITCH pixels."""
    groups = [sp.NodeGroup(f"rack r{i:03d}", (f"n{i}",), 8) for i in range(count)]

    figure = validated(tl.occupancy_figure([], [], groups, start=0.0, end=100.0, title="t"))

    names = [g.name for g in groups]
    assert list(figure.data[0].y) == names
    labels = list(figure.layout.yaxis.tickvals)
    step = names.index(labels[1]) if len(labels) > 1 else 1
    assert labels == names[::step]
    assert step == 1 or (figure.layout.height - 90) / count * step >= tl.LABEL_PITCH
    assert (figure.layout.height - 90) / count * (step - 1) < tl.LABEL_PITCH
    assert list(figure.layout.yaxis.ticktext) == labels


def test_heatmap_dots_merge_time_slices_rather_than_exceed_the_svg_bound():
    """Victims in every slice of 157 groups would be 18,840 SVG markers: the dots count
    them over wider slices instead, and every victim is still counted once."""
    horizon = 7200.0
    groups = sp.node_groups({"nodePools": [{"name": "gpu", "count": 10_000, "gpus": 8}]})
    width = horizon / tl.HEATMAP_BINS
    marks = [
        core_timeline.Preemption(
            (b + 0.5) * width, f"v{g}-{b}", group.nodes[0], "urgent", group.nodes[1]
        )
        for g, group in enumerate(groups)
        for b in range(tl.HEATMAP_BINS)
    ]

    figure = validated(tl.occupancy_figure([], marks, groups, start=0.0, end=horizon, title="t"))

    _, dots = figure.data
    # By 8: 157 x 15 cells is still over 2,000; by 16: 157 x 8 (the last 8 slices wide).
    assert len(dots.x) == 157 * 8 <= tl.MAX_DOTS
    assert sum(dots.customdata) == len(marks) == 157 * tl.HEATMAP_BINS
    assert sorted(set(dots.customdata)) == [8, 16]
    assert sorted(set(dots.x))[:2] == [480.0, 1440.0]  # centres of 960 s slices


def test_the_gantt_of_one_group_draws_its_pods_on_their_gpus():
    s1, _, found = _s1_pod()
    marks = core_timeline.preemptions(s1.results["pod"].events)
    capacity = sp.node_capacity(s1.document["cluster"])

    figure = validated(
        tl.gantt_figure(
            found,
            marks,
            ["node-a", "node-b"],
            capacity=capacity,
            start=0.0,
            end=s1.horizon,
            title="GPU timeline",
        )
    )

    bars = [t for t in figure.data if t.showlegend is False and t.hoverinfo != "skip"]
    by_name = {t.name: t for t in bars}
    assert len(by_name) == len(bars)
    assert set(by_name) == {"loading", "running", "terminating", "checkpointing", "stranded"}
    assert all(t.type == "bar" and t.orientation == "h" for t in by_name.values())
    assert len(by_name["terminating"].x) == 4
    # A patterned state's hatch: one trace over exactly its bars, never hovered.
    hatches = {t.name: t for t in figure.data if t.type == "bar" and t.hoverinfo == "skip"}
    assert {name: t.marker.pattern.shape for name, t in hatches.items()} == {
        "loading": "/",
        "terminating": "-",
    }
    for name, hatch in hatches.items():
        under = by_name[name]
        assert (hatch.y, hatch.x, hatch.base) == (under.y, under.x, under.base)
        assert hatch.marker.pattern.fillmode == "overlay"
    victims = next(t for t in figure.data if t.name == "victim")
    assert sorted(c[0] for c in victims.customdata) == ["train-0", "train-1", "train-2", "train-3"]
    links = next(t for t in figure.data if t.name == "preemption link")
    assert len(links.x) == 3 * 4
    assert list(figure.layout.yaxis.ticktext) == ["node-a", "node-b"]
    keys = [t.name for t in figure.data if t.showlegend is not False and t.type == "bar"]
    assert keys[:5] == ["loading", "running", "checkpointing", "terminating", "stranded"]
    assert "workload train" in keys


def test_the_gantt_keeps_the_longest_overlays_when_there_are_too_many():
    many = [
        sp.Span("n", f"p{i}", "w", "checkpointing", i, i + 1 + i % 7, 1.0, "running", (0,))
        for i in range(tl.MAX_OVERLAYS + 500)
    ]

    figure = validated(
        tl.gantt_figure(many, [], ["n"], capacity={"n": 1}, start=0, end=5000, title="t")
    )

    drawn = next(t for t in figure.data if t.name == "checkpointing" and t.showlegend is False)
    lengths = sorted((s.end - s.start for s in many), reverse=True)
    assert len(drawn.x) == tl.MAX_OVERLAYS
    assert sorted(drawn.x, reverse=True) == lengths[: tl.MAX_OVERLAYS]
    assert f"of {tl.MAX_OVERLAYS + 500}" in figure.layout.title.text


@pytest.mark.parametrize(
    ("slots", "runs"),
    [((0, 1, 2), [(0, 3)]), ((3, 0, 1), [(0, 2), (3, 1)]), ((), [])],
    ids=["one-run", "split", "none"],
)
def test_contiguous_runs(slots, runs):
    assert tl.contiguous_runs(slots) == runs


def test_gpus_by_state_move_overlays_out_of_the_state_they_cover():
    spans = [
        sp.Span("n", "p", "w", "running", 0.0, 100.0, 4.0, slots=(0, 1, 2, 3)),
        sp.Span("n", "p", "w", "stranded", 0.0, 50.0, 4.0, "running", (0, 1, 2, 3)),
    ]

    figure = validated(tl.state_area_figure(from_spans(spans, end=100.0, slices=2), title="t"))

    gpus = {t.name: list(t.y)[:-1] for t in figure.data}  # the last point closes the step
    assert gpus["running"] == [0.0, 4.0]
    assert gpus["stranded"] == [4.0, 0.0]
    assert gpus["loading"] == [0.0, 0.0]


def test_gpus_by_state_are_steps_from_each_slices_left_edge():
    """Issue 16 §2: a slice's value holds for the whole slice, so steps, not slopes."""
    spans = [sp.Span("n", "p", "w", "running", 0.0, 50.0, 4.0, slots=(0, 1, 2, 3))]
    figure = validated(tl.state_area_figure(from_spans(spans, end=100.0, slices=2), title="t"))
    running = next(t for t in figure.data if t.name == "running")
    assert running.line.shape == "hv"
    assert list(running.x) == [0.0, 50.0, 100.0]
    assert list(running.y) == [4.0, 0.0, 0.0]


@pytest.mark.parametrize(
    "preset",
    [
        "s1-training-vs-shards",
        "s7-three-class-setup",
        "s15-fair-sharing",
        "s4-preemption-not-helpful",
    ],
)
def test_no_workload_is_drawn_in_a_state_colour(preset):
    """A workload's bars and a state's (checkpoint writes, stranded GPUs, the legend's
    keys) never share a colour: s1's urgent workload was drawn in the checkpoint green,
    so the legend and the bars could not tell the two apart. Presets with more
    workloads than the palette has colours cycle it, and still stay clear."""
    sim = simulated(preset)
    capacity = sp.node_capacity(sim.document["cluster"])
    for result in sim.results.values():
        found = core_timeline.pod_spans(result.events, end=sim.horizon, capacity=capacity)
        figure = validated(
            tl.gantt_figure(
                found,
                core_timeline.preemptions(result.events),
                list(capacity),
                capacity=capacity,
                start=0.0,
                end=sim.horizon,
                title="t",
            )
        )
        workloads: set[str] = set()
        states: set[str] = set()
        for t in figure.data:
            if t.type != "bar" or t.hoverinfo == "skip":
                continue
            colours = [t.marker.color] if isinstance(t.marker.color, str) else t.marker.color
            if t.legendgroup == "workloads" or (t.name in sp.BASE_STATES and t.showlegend is False):
                workloads.update(colours)
            else:
                states.update(colours)
        assert len({s.workload for s in found}) > 2
        assert workloads
        assert states
        assert workloads.isdisjoint(states), workloads & states
        assert workloads.isdisjoint(style.STATE_COLORS.values())
        assert min(style.delta_e(w, s) for w in workloads for s in states) >= style.MIN_DELTA_E


def test_the_workload_palette_keeps_clear_of_every_reserved_colour():
    palette = style.WORKLOAD_COLORS
    assert len(palette) == len(set(palette)) == style.WORKLOAD_PALETTE_SIZE
    for colour in palette:
        for reserved in style.RESERVED_COLORS:
            assert style.delta_e(colour, reserved) >= style.MIN_DELTA_E, (colour, reserved)
    for i, colour in enumerate(palette):
        assert all(style.delta_e(colour, o) >= style.MIN_DELTA_E for o in palette[i + 1 :])
    # The walk is what keeps them out: Tableau's blue, green and red are candidates.
    assert set(style.STATE_COLORS.values()) & set(style._WORKLOAD_CANDIDATES)
    with pytest.raises(ValueError, match="workload colours"):
        style._workload_palette(palette, style.RESERVED_COLORS, 13)


@pytest.mark.parametrize("workloads", [1, 3, 14])
def test_a_few_node_gantt_is_tall_enough_for_its_whole_legend(workloads):
    """Plotly caps a legend beside the plot at the plot's height and scrolls the rest:
    one 1-GPU node with a legend of 3 marks, 5 states and up to 12 workloads. The rule
    is plotly.js 4's (legend/draw.js): an entry is max(1.3 x 11, 16) + 3 = 19 px, plus
    the gap between groups and 5 px above and below; the browser test of the run page
    checks that no legend scrolls."""
    spans = [
        sp.Span("n", f"p{i}", f"w{i:02d}", "running", 10.0 * i, 10.0 * i + 9, 1.0, slots=(0,))
        for i in range(workloads)
    ]

    figure = validated(
        tl.gantt_figure(spans, [], ["n"], capacity={"n": 1}, start=0, end=200, title="t")
    )

    shown = [t for t in figure.data if t.showlegend is not False and t.name]
    assert len(shown) == 3 + 5 + min(workloads, tl.MAX_WORKLOAD_KEYS)
    groups = {t.legendgroup for t in shown}
    needed = 19 * len(shown) + (len(groups) - 1) * (figure.layout.legend.tracegroupgap or 10) + 10
    layout = figure.layout
    assert layout.height - layout.margin.t - layout.margin.b >= needed
    assert layout.height > tl._gantt_height(["n"], {"n": 1})  # the legend made it taller
