"""The checkpoint-planner preset and the Young / Daly closed forms (issue #17 §2, §3)."""

from __future__ import annotations

import math
import statistics

import pytest

import scheduler_core as sc
from scheduler_core.checkpoint_optima import (
    daly_interval,
    expected_ettr,
    expected_wall_clock,
    young_interval,
)
from scheduler_core.plugins.disruptions import NODE_MONITOR_GRACE_SECONDS
from scheduler_core.spec import resolve_variant

S14 = "s14-checkpoint-planner"


def test_young_is_the_square_root_of_twice_the_write_times_the_mtbf() -> None:
    assert young_interval(60, 10_000) == pytest.approx(math.sqrt(2 * 60 * 10_000))


def test_daly_corrects_young_downwards_and_caps_at_the_mtbf() -> None:
    ratio = 60 / 20_000
    expected = math.sqrt(2 * 60 * 10_000) * (1 + math.sqrt(ratio) / 3 + ratio / 9) - 60
    assert daly_interval(60, 10_000) == pytest.approx(expected)
    assert daly_interval(60, 10_000) < young_interval(60, 10_000)
    assert daly_interval(500, 200) == 200  # a write longer than 2 MTBF: tau = M


def test_daly_minimises_its_own_expected_wall_clock() -> None:
    best = daly_interval(120, 14_400)
    at = [expected_wall_clock(1e6, best * f, 120, 600, 14_400) for f in (0.8, 1.0, 1.25)]
    assert at[1] < at[0]
    assert at[1] < at[2]
    assert expected_ettr(best, 120, 600, 14_400) == pytest.approx(1e6 / at[1])


def test_closed_forms_refuse_a_non_positive_mtbf() -> None:
    with pytest.raises(ValueError, match="MTBF must be positive"):
        young_interval(60, 0)
    with pytest.raises(ValueError, match="must not be negative"):
        daly_interval(-1, 100)


def test_the_planner_preset_sweeps_12_intervals_with_200_replications() -> None:
    spec = sc.parse_spec(sc.get_preset(S14).text, limits=sc.Limits())
    assert len(sc.variant_names(spec)) >= 12
    assert spec.replications >= 200
    assert spec.failures


def completion_times(interval: int, replications: int) -> list[float]:
    spec = sc.get_preset(S14).spec()
    variant = resolve_variant(spec, f"intervalSeconds={interval}")
    return [
        sc.simulate(spec, variant, r).workloads[0].completion_time or math.inf
        for r in range(replications)
    ]


def test_the_simulated_completion_time_matches_dalys_expectation() -> None:
    """With exponential failures (job MTBF = 32 h / 8 nodes = 4 h), a 120 s blocking
    write and a restart of NotReady grace + 300 s toleration + 300 s startup, the
    simulation has Daly's assumptions, so its mean completion time must fall within a
    few percent of his formula; the middle of the sweep beats both ends."""
    restart = NODE_MONITOR_GRACE_SECONDS + 300 + 300
    means = {}
    for interval in (300, 1800, 10_800):
        times = completion_times(interval, 30)
        means[interval] = statistics.fmean(times)
        predicted = expected_wall_clock(2 * 86400, interval, 120, restart, 4 * 3600)
        assert means[interval] == pytest.approx(predicted, rel=0.04), interval
    assert means[1800] < means[300]
    assert means[1800] < means[10_800]
