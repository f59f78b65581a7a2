"""Costs over time and recovery curves, checked against the simulator's own totals, and
the bounds that keep big runs drawable."""

from __future__ import annotations

import itertools

import pytest

import scheduler_core as sc
from experiments.charts import work
from experiments.charts.data import Row
from experiments.charts.downsample import thin_steps, time_edges
from experiments.charts.style import BUNDLED_TRACES
from scheduler_core import timeline as core_timeline
from tests.web.charts_support import costs_of, simulated, validated

PRESETS = [
    "s1-training-vs-shards",
    "s5-loading-treadmill",
    "s6-checkpoint-frequency",
    "s9-spot-reclaim",
    "s12-topology-placement",
]


@pytest.mark.parametrize("preset", PRESETS)
def test_cumulative_costs_end_at_the_summary_totals(preset):
    sim = simulated(preset)
    for name, result in sim.results.items():
        costs = [core_timeline.cost_increments(result.events)]
        _, lost = work.cumulative(costs, "lost", end=sim.horizon)
        _, wasted = work.cumulative(costs, "wasted", end=sim.horizon)
        assert lost[-1] == pytest.approx(result.summary["lost_work"]), name
        assert wasted[-1] == pytest.approx(result.summary["wasted_gpu_seconds"]), name


def test_cumulative_costs_are_the_mean_over_replications():
    one = [Row(10.0, "Disrupted", "w", "p", "n", 100.0, "preemption")]
    other = [Row(20.0, "Disrupted", "w", "p", "n", 300.0, "preemption")]

    xs, ys = work.cumulative(
        [core_timeline.cost_increments(one), core_timeline.cost_increments(other)], "lost", end=60.0
    )

    assert (xs, ys) == ([0.0, 10.0, 20.0, 60.0], [0.0, 50.0, 200.0, 200.0])


def test_the_cost_figure_has_a_line_per_variant_and_cost():
    sim = simulated("s1-training-vs-shards")

    figure = validated(work.cumulative_cost_figure(sim.variant_costs(), end=sim.horizon))

    assert [t.type for t in figure.data] == ["scatter"] * 8
    assert figure.data[0].name == "pod: lost work"
    assert figure.data[1].line.dash == "dot"
    assert figure.data[0].line.shape == "hv"
    assert figure.data[0].y[-1] == 12240.0
    assert figure.data[5].y[-1] == 336.0


def test_s1_recoveries_follow_resumed_and_recovered_events():
    sim = simulated("s1-training-vs-shards")

    found = core_timeline.recoveries(sim.results["pod"].events)

    assert found == [work.Recovery("train", 10.0, 12240.0, 1995.0, 3525.0)]
    assert core_timeline.recovery_curve(found[0], end=sim.horizon) == (
        [0.0, 1985.0, 3515.0],
        [-12240.0, -12240.0, 0.0],
    )
    mean = sim.results["pod"].summary["time_to_recover"]
    assert core_timeline.recovery_curve(found[0], end=sim.horizon)[0][-1] == mean


@pytest.mark.parametrize(
    ("recovery", "curve"),
    [
        (work.Recovery("w", 100.0, 50.0, None, None), ([0.0, 900.0], [-50.0, -50.0])),
        (
            work.Recovery("w", 100.0, 50.0, 400.0, None),
            ([0.0, 300.0, 900.0], [-50.0, -50.0, -50.0]),
        ),
    ],
    ids=["never-resumed", "resumed-not-recovered"],
)
def test_unfinished_recoveries_run_flat_to_the_end(recovery, curve):
    assert core_timeline.recovery_curve(recovery, end=1000.0) == curve


def test_recovery_curves_are_capped_per_variant():
    events = [
        Row(float(i), "Disrupted", f"w{i}", "p", "n", float(i), "preemption")
        for i in range(1, work.MAX_CURVES + 51)
    ]
    series = [costs_of("v", [events])]

    figure = validated(work.recovery_figure(series, end=10_000.0))

    trace = figure.data[0]
    assert trace.type == "scatter"
    assert trace.y.count(None) == work.MAX_CURVES
    assert min(y for y in trace.y if y is not None) == -(work.MAX_CURVES + 50)
    assert f"the {work.MAX_CURVES} costliest" in figure.layout.title.text


def test_thin_steps_bounds_the_points_and_keeps_the_ends():
    xs = [float(i) for i in range(100_000)]
    ys = [float(i // 3) for i in range(100_000)]

    thin_x, thin_y = thin_steps(xs, ys, max_points=600)

    assert len(thin_x) <= 600
    assert (thin_x[0], thin_y[0], thin_x[-1], thin_y[-1]) == (0.0, 0.0, 99_999.0, 33_333.0)
    assert thin_x == sorted(thin_x)
    assert all(y == x // 3 for x, y in zip(thin_x, thin_y, strict=True))
    assert max(b - a for a, b in itertools.pairwise(thin_x)) <= 100_000 / 299 + 1


def test_thin_steps_leaves_short_series_alone():
    assert thin_steps([0.0, 1.0], [5.0, 6.0]) == ([0.0, 1.0], [5.0, 6.0])


def test_time_edges_cover_the_window_in_equal_slices():
    assert time_edges(0.0, 30.0, 3) == [0.0, 10.0, 20.0, 30.0]
    assert time_edges(5.0, 5.0, 2) == [5.0, 5.5, 6.0]


def test_every_summary_metric_has_a_direction():
    from experiments.charts.metrics import HIGHER_IS_BETTER

    assert set(HIGHER_IS_BETTER) <= set(sc.SUMMARY_NAMES)


def test_recovery_figures_stay_svg_with_bounded_points():
    """The served plotly.js has no WebGL traces: the most curves the figure keeps per
    variant (MAX_CURVES) still draw as one SVG line per variant."""
    events = [
        Row(float(i), "Disrupted", f"w{i}", "p", "n", float(i), "preemption")
        for i in range(1, work.MAX_CURVES + 50)
    ]
    three = [costs_of(f"v{k}", [events]) for k in range(3)]

    figure = validated(work.recovery_figure(three, end=10_000.0))

    assert {t.type for t in figure.data} == {"scatter"} <= set(BUNDLED_TRACES)
    assert [t.mode for t in figure.data] == ["lines"] * 3
    assert [sum(x is None for x in t.x) for t in figure.data] == [work.MAX_CURVES] * 3


def test_recovery_curves_of_the_same_shape_are_drawn_once():
    """Five jobs that lose 50 GPU·s, resume 30 s later and recover 90 s after the
    disruption draw one curve (its hover counts the others); a sixth that recovers later
    draws its own."""
    rows = []
    for i in range(6):
        t = 100.0 * (i + 1)
        recovered = 90.0 if i < 5 else 200.0
        rows += [
            Row(t, "Disrupted", f"w{i}", "p", "n", 50.0, "preemption"),
            Row(t + 30.0, "Resumed", f"w{i}", "p", "n", t, ""),
            Row(t + recovered, "Recovered", f"w{i}", "p", "n", t, ""),
        ]

    (curves,) = validated(work.recovery_figure([costs_of("v", [rows])], end=5_000.0)).data

    assert list(curves.x) == [0.0, 30.0, 90.0, None, 0.0, 30.0, 200.0, None]
    assert list(curves.y) == [-50.0, -50.0, 0.0, None, -50.0, -50.0, 0.0, None]
    assert curves.text[0] == "w0 disrupted at 100s (and 4 more alike)"
    assert curves.text[4] == "w5 disrupted at 600s"
