"""The summary chart builders on their output: trace types, values, the best variant
and the Pareto front marked; no browser, no database rows."""

from __future__ import annotations

import pytest

import scheduler_core as sc
from experiments.charts.data import VariantResults
from experiments.charts.headline import ALL_ZERO_MARK, BEST_MARK, headline_figure
from experiments.charts.metrics import best_indexes, metric_title, pareto_front
from experiments.charts.milestones import milestones_figure, segments
from experiments.charts.tradeoff import FRONT_NAME, tradeoff_figure
from tests.web.charts_support import replicated, simulated, validated, variant


def _texts(figure) -> list[str]:
    return [a.text for a in figure.layout.annotations]


@pytest.mark.parametrize(
    ("values", "metric", "best"),
    [
        ([3.0, 1.0, 2.0], "lost_work", [1]),
        ([0.5, 0.9, 0.7], "goodput", [1]),
        ([0.5, 0.9, 0.7], "gpu_utilization", [1]),
        ([1.0, 1.0, 2.0], "lost_work", [0, 1]),
        ([2.0, 2.0], "lost_work", []),
        ([None, 4.0, 9.0], "time_to_group_useful", [1]),
        ([None, 4.0], "time_to_group_useful", []),
        ([5.0], "lost_work", []),
    ],
    ids=[
        "lowest-wins",
        "goodput-highest",
        "utilization-highest",
        "ties-all-win",
        "all-equal-none",
        "blank-never-best",
        "one-value-is-not-best",
        "single-variant",
    ],
)
def test_best_indexes(values, metric, best):
    assert best_indexes(values, metric) == best


@pytest.mark.parametrize(
    ("points", "front"),
    [
        ([(1, 5), (2, 2), (5, 1), (3, 3)], [0, 1, 2]),
        ([(1, 1), (2, 2), (3, 3)], [0]),
        ([(1, 1), (1, 1), (2, 0)], [0, 1, 2]),
        ([(1, 2), (1, 3)], [0]),
        ([(None, 1), (2, 2)], [1]),
        ([], []),
    ],
    ids=[
        "trade-off-curve",
        "one-dominates",
        "equal-points-kept",
        "tie-on-x-better-y",
        "missing-coordinate-off-front",
        "empty",
    ],
)
def test_pareto_front(points, front):
    assert pareto_front(points) == front


def test_headline_draws_one_bar_per_variant_at_the_mean_and_marks_the_best():
    figure = validated(
        headline_figure(
            [
                variant("pod", lost_work=12240.0),
                variant("wa-all", lost_work=96.0),
                variant("none", lost_work=None),
            ],
            "lost_work",
        )
    )

    bars, dots = figure.data
    assert (bars.type, dots.type) == ("bar", "scatter")
    assert list(bars.x) == ["pod", "wa-all", "none"]
    assert list(bars.y) == [12240.0, 96.0, None]
    assert list(bars.marker.line.width) == [0, 3, 0]
    assert bars.error_y.visible is False
    assert list(dots.x) == ["pod", "wa-all"]
    assert [(a.text, a.x) for a in figure.layout.annotations] == [
        (BEST_MARK, "wa-all"),
        (sc.metric_info("lost_work").null, "none"),
    ]
    assert figure.layout.title.text == "Lost work (GPU·s)"


def test_a_missing_value_reads_inside_its_own_bar_slot_however_many_variants():
    """Five variants' "none recovered in the horizon" on two lines overlapped their
    neighbours: the reading wraps to the slot's width, drawn upwards from the axis."""
    names = ["baseline", "checkpoint-victims", "notebook-2gpu", "three-nodes", "two-hours"]
    figure = validated(
        headline_figure(
            [variant(n, time_to_recover=None if n != "two-hours" else 3000.0) for n in names],
            "time_to_recover",
        )
    )
    missing = [a for a in figure.layout.annotations if a.text != BEST_MARK]
    assert [a.x for a in missing] == names[:4]
    for annotation in missing:
        lines = annotation.text.split("<br>")
        assert " ".join(lines) == sc.metric_info("time_to_recover").null
        assert max(len(line) for line in lines) <= 10
        assert annotation.yanchor == "bottom"

    few = validated(headline_figure([variant("a", time_to_recover=None)], "time_to_recover"))
    assert few.layout.annotations[0].text == "none recovered<br>in the horizon"


def test_headline_shows_the_spread_of_replications():
    figure = validated(
        headline_figure(
            [
                replicated("a", "time_to_recover", [10.0, 12.0, 14.0]),
                replicated("b", "time_to_recover", [20.0, 22.0]),
            ],
            "time_to_recover",
        )
    )

    bars, dots = figure.data
    assert bars.error_y.visible is True
    assert list(bars.error_y.array) == [1.5, 1.5]
    assert list(bars.y) == [12.0, 21.0]
    assert list(dots.x) == ["a", "a", "a", "b", "b"]
    assert list(dots.y) == [10.0, 12.0, 14.0, 20.0, 22.0]
    assert _texts(figure) == [BEST_MARK]


def test_the_s1_headline_says_fewest_pods_terminated_is_not_least_lost_work():
    """Scenario S1: the variants that lose least evict more pods."""
    variants = simulated("s1-training-vs-shards").variants()

    lost = validated(headline_figure(variants, "lost_work"))
    terminated = validated(headline_figure(variants, "pods_terminated"))

    best_lost = {a.x for a in lost.layout.annotations if a.text == BEST_MARK}
    best_terminated = {a.x for a in terminated.layout.annotations if a.text == BEST_MARK}
    assert best_lost == {"workload-aware-all", "checkpoint-aware"}
    assert best_terminated == {"pod", "workload-aware-single"}


@pytest.mark.parametrize(
    ("times", "expected"),
    [
        ([0.0, 300.0, 300.0, 330.0], [(0.0, 0.0), (0.0, 300.0), (300.0, 300.0), (300.0, 330.0)]),
        ([None, None, 12.0, 70.0], [None, None, (0.0, 12.0), (12.0, 70.0)]),
        ([0.0, 5.0, 5.0, None], [(0.0, 0.0), (0.0, 5.0), (5.0, 5.0), None]),
    ],
    ids=["preempted", "no-preemption-waits-from-arrival", "never-useful"],
)
def test_milestone_segments(times, expected):
    assert segments(times) == expected


def test_milestones_put_every_variant_on_one_axis_and_name_the_gap():
    figure = validated(
        milestones_figure(
            [
                variant(
                    "grace-300s",
                    time_to_victims_selected=0.0,
                    time_to_victims_released=300.0,
                    time_to_group_scheduled=300.0,
                    time_to_group_useful=330.0,
                ),
                variant("never", time_to_group_scheduled=None, time_to_group_useful=None),
            ]
        )
    )

    names = [t.name for t in figure.data]
    assert names[:4] == [
        "waiting for a preemption decision",
        "victims terminating (grace period)",
        "binding",
        "starting up until Ready",
    ]
    assert names[4:] == ["victims selected", "victims released", "group scheduled", "group useful"]
    terminating = figure.data[1]
    assert terminating.type == "bar"
    assert list(terminating.base) == [0.0, None]
    assert list(terminating.x) == [300.0, None]
    useful = figure.data[7]
    assert list(useful.x) == [330.0, None]
    assert _texts(figure) == [
        "useful 330s after victims selected",
        "group never useful within the horizon",
    ]


def test_tradeoff_marks_the_pareto_front_and_names_variants_it_cannot_place():
    figure = validated(
        tradeoff_figure(
            [
                variant("fast-costly", time_to_group_useful=10.0, lost_work=900.0),
                variant("slow-cheap", time_to_group_useful=60.0, lost_work=50.0),
                variant("dominated", time_to_group_useful=70.0, lost_work=1000.0),
                variant("never", time_to_group_useful=None, lost_work=0.0),
            ]
        )
    )

    front, *points = figure.data
    assert front.name == FRONT_NAME
    assert list(front.customdata) == ["fast-costly", "slow-cheap"]
    assert (list(front.x), list(front.y)) == ([10.0, 60.0], [900.0, 50.0])
    assert [p.name for p in points] == ["fast-costly", "slow-cheap", "dominated"]
    assert [p.marker.line.width for p in points] == [3, 3, 1]
    assert [p.text[0] for p in points] == ["fast-costly ★", "slow-cheap ★", "dominated"]
    assert _texts(figure) == ["not drawn: never (time to group useful: never (> horizon))"]
    assert figure.layout.xaxis.title.text == metric_title("time_to_group_useful")


def test_tradeoff_names_coinciding_variants_once():
    variants = simulated("s1-training-vs-shards").variants()

    figure = validated(tradeoff_figure(variants))

    texts = [t.text[0] for t in figure.data[1:]]
    assert texts == ["pod, workload-aware-single", "", "workload-aware-all, checkpoint-aware ★", ""]


def test_milestones_show_the_spread_of_replications():
    """Every summary chart shows the spread, not one replication (issue #12 §2): the
    milestone markers carry min-to-max whiskers."""
    spread = VariantResults(
        "a",
        "pod",
        "MostAllocated",
        {"time_to_group_useful": {"mean": 20.0, "ci95": 5.0, "min": 12.0, "max": 31.0, "n": 3}},
        {"time_to_group_useful": [12.0, 17.0, 31.0]},
    )
    figure = validated(milestones_figure([spread]))
    useful = next(t for t in figure.data if t.name == "group useful")
    assert useful.error_x.visible is True
    assert (list(useful.error_x.arrayminus), list(useful.error_x.array)) == ([8.0], [11.0])


def test_an_unserved_variant_is_never_on_the_pareto_front():
    """A variant whose urgent workload was never useful is not "the best answer at its
    price", even where its numbers would put it on the front."""
    served = variant("served", time_to_group_useful=50.0, lost_work=500.0)
    unserved = VariantResults(
        "unserved",
        "none",
        "MostAllocated",
        {
            "time_to_group_useful": {"mean": 10.0, "n": 1},
            "lost_work": {"mean": 0.0, "n": 1},
            "urgent_never_useful": {"mean": 1.0, "max": 1.0, "n": 1},
        },
        {},
    )
    figure = validated(tradeoff_figure([served, unserved]))
    front = next(t for t in figure.data if t.name == FRONT_NAME)
    assert list(front.customdata) == ["served"]


def test_a_headline_chart_of_zeros_says_so_instead_of_looking_empty():
    """Issue 16 §2: bars of height 0 draw nothing; the chart says every value is 0."""
    zeros = validated(
        headline_figure(
            [variant("pod", stranded_capacity=0.0), variant("wa", stranded_capacity=0.0)],
            "stranded_capacity",
        )
    )
    some = validated(
        headline_figure(
            [variant("pod", stranded_capacity=0.0), variant("wa", stranded_capacity=5.0)],
            "stranded_capacity",
        )
    )

    assert ALL_ZERO_MARK in _texts(zeros)
    assert ALL_ZERO_MARK not in _texts(some)
