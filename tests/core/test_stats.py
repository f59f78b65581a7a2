"""Interval statistics and the metric registry (issue #12 §1 registry, §2)."""

from __future__ import annotations

import math
import statistics

import pytest

import scheduler_core as sc
from scheduler_core.metric_registry import NEVER, REGISTRY, Better
from scheduler_core.metrics import confidence_interval
from scheduler_core.stats import IntervalMethod, difference, t_cdf, t_critical, t_quantile

# Two-sided 95% critical values t_{0.975, df}, from the standard published table.
T975 = {
    1: 12.706,
    2: 4.303,
    3: 3.182,
    4: 2.776,
    5: 2.571,
    6: 2.447,
    7: 2.365,
    8: 2.306,
    9: 2.262,
    10: 2.228,
    11: 2.201,
    12: 2.179,
    13: 2.160,
    14: 2.145,
    15: 2.131,
    16: 2.120,
    17: 2.110,
    18: 2.101,
    19: 2.093,
    20: 2.086,
    21: 2.080,
    22: 2.074,
    23: 2.069,
    24: 2.064,
    25: 2.060,
    26: 2.056,
    27: 2.052,
    28: 2.048,
    29: 2.045,
    30: 2.042,
    40: 2.021,
    60: 2.000,
    120: 1.980,
    math.inf: 1.960,
}


@pytest.mark.parametrize("df", list(T975))
def test_t_critical_matches_the_table_to_three_decimals(df):
    assert round(t_critical(df), 3) == T975[df]


@pytest.mark.parametrize(
    ("p", "df", "t"),
    [
        (0.95, 1, 6.314),
        (0.995, 7, 3.499),
        (0.9, 1, 3.078),
        (0.99, 25, 2.485),
        (0.05, 10, -1.812),
        (0.5, 3, 0.0),
    ],
)
def test_t_quantile_other_levels(p, df, t):
    assert round(t_quantile(p, df), 3) == t


def test_t_cdf_inverts_the_quantile_for_fractional_df():
    """Welch's df is fractional: the quantile is computed, not looked up."""
    for df in (0.7, 2.5, 7.3, 41.9):
        assert t_cdf(t_quantile(0.975, df), df) == pytest.approx(0.975, abs=1e-10)
    assert T975[2] > t_critical(2.5) > T975[3]


def test_confidence_interval_uses_every_df_not_the_next_larger_table_entry():
    """The old table jumped from df 10 to 15: n = 12 (df 11) used t(15) = 2.131, too
    narrow; the exact t(11) = 2.201."""
    values = [float(v) for v in range(12)]
    mean, half = confidence_interval(values)
    assert mean == pytest.approx(5.5)
    assert half == pytest.approx(2.200985 * statistics.stdev(values) / math.sqrt(12), rel=1e-6)
    assert confidence_interval([4.0]) == (4.0, 0.0)


def test_t_quantile_refuses_bad_input():
    with pytest.raises(ValueError, match="p must be"):
        t_quantile(1.0, 3)
    with pytest.raises(ValueError, match="df must be"):
        t_quantile(0.9, 0)


def test_paired_difference_uses_the_per_seed_differences():
    """Same seeds: the seed-to-seed noise cancels; the interval is t(n-1) sd(d)/sqrt(n)."""
    base = {11: 100.0, 12: 200.0, 13: 300.0}
    other = {11: 110.0, 12: 212.0, 13: 308.0}  # d = 10, 12, 8
    found = difference(base, other)
    assert found.method is IntervalMethod.PAIRED
    assert found.n == 3
    assert found.mean == pytest.approx(10.0)
    assert found.half_width == pytest.approx(4.303 * 2.0 / math.sqrt(3), rel=1e-3)
    # Treated as independent the interval would be ~25 times wider.
    welch = difference(base, {21: 110.0, 22: 212.0, 23: 308.0})
    assert welch.method is IntervalMethod.WELCH
    assert welch.half_width > 20 * found.half_width


def test_welch_difference_matches_the_textbook_formula():
    a, b = [1.0, 2.0, 3.0, 4.0], [2.0, 4.0, 9.0]
    found = difference(dict(enumerate(a)), {10 + i: v for i, v in enumerate(b)})
    va, vb = statistics.variance(a) / 4, statistics.variance(b) / 3
    df = (va + vb) ** 2 / (va**2 / 3 + vb**2 / 2)
    assert found.method is IntervalMethod.WELCH
    assert found.mean == pytest.approx(5.0 - 2.5)
    assert found.half_width == pytest.approx(t_critical(df) * math.sqrt(va + vb))


def test_difference_without_enough_replications_has_no_interval():
    assert difference({1: 5.0}, {1: 7.0}).method is IntervalMethod.NONE
    assert difference({1: 5.0}, {1: 7.0}).mean == 2.0
    none = difference({1: None, 2: None}, {1: 3.0, 2: 4.0})
    assert (none.mean, none.half_width, none.method) == (None, None, IntervalMethod.NONE)


def test_a_null_on_one_seed_breaks_the_pairing_honestly():
    """A seed missing a value on one side cannot be paired: fall back to Welch."""
    found = difference({1: 1.0, 2: 2.0, 3: None}, {1: 2.0, 2: 3.0, 3: 5.0})
    assert found.method is IntervalMethod.WELCH


# ------------------------------------------------------------------- the registry
def test_every_metric_computed_is_in_the_registry_and_vice_versa():
    result = sc.simulate(sc.get_preset("s1-training-vs-shards").spec(), "pod")
    assert set(result.summary) == set(REGISTRY)
    assert list(REGISTRY) == list(sc.SUMMARY_NAMES)
    aggregate = sc.aggregate([result])
    assert set(aggregate) == set(REGISTRY)


def test_every_registry_entry_is_complete():
    for info in REGISTRY.values():
        assert all((info.label, info.definition, info.workloads, info.null)), info.name
        assert info.unit in ("s", "GPU·s", "count", "ratio"), info.name
        assert info.time == (info.unit == "s")
    assert {n for n, i in REGISTRY.items() if i.better is Better.HIGHER} == {
        "gpu_utilization",
        "goodput",
        "ettr",
    }
    for name in (
        "time_to_group_useful",
        "time_to_group_scheduled",
        "completion_time",
        "queue_wait",
    ):
        assert REGISTRY[name].null == NEVER == "never (> horizon)"


def test_registry_document_lists_every_metric_and_interval_method():
    doc = sc.registry_document()
    assert [m["name"] for m in doc["metrics"]] == list(sc.SUMMARY_NAMES)
    assert set(doc["interval_methods"]) == {"paired", "welch", "none"}
    assert doc["metrics"][6]["title"] == "Lost work (GPU·s)"


# ------------------------------------------------------------ the unserved variant
@pytest.fixture(scope="module")
def s8():
    return {v.name: v for v in sc.run_experiment(sc.get_preset("s8-gang-at-scale").spec())}


def test_s8_none_is_flagged_because_its_gang_is_never_useful(s8):
    """S8 (scenarios): with preemption `none` the 1,000-member group never binds."""
    assert s8["none"].aggregate["urgent_never_useful"]["mean"] == 1
    assert s8["none"].aggregate["time_to_group_useful"]["mean"] is None
    assert sc.is_unserved(s8["none"].aggregate)
    assert not sc.is_unserved(s8["pod"].aggregate)
    assert not sc.is_unserved(s8["workload-aware"].aggregate)


def test_an_unserved_variant_never_wins_a_metric(s8):
    """`none` has zero lost work and zero queue wait only because it served nobody."""
    names = list(s8)
    unserved = [sc.is_unserved(s8[n].aggregate) for n in names]
    for metric in ("lost_work", "queue_wait", "time_to_group_useful", "pods_terminated"):
        means = [s8[n].aggregate[metric]["mean"] for n in names]
        best = sc.best_indexes(means, metric, unserved=unserved)
        assert names.index("none") not in best, metric
    lost = [s8[n].aggregate["lost_work"]["mean"] for n in names]
    assert sc.best_indexes(lost, "lost_work") == [names.index("none")]  # what it was before
    assert sc.best_indexes(lost, "lost_work", unserved=unserved) == [names.index("workload-aware")]


def test_best_follows_the_registry_direction():
    assert sc.best_indexes([0.5, 0.9, None], "goodput") == [1]
    assert sc.best_indexes([10.0, 5.0, 5.0], "lost_work") == [1, 2]
    assert sc.best_indexes([3.0, 3.0], "lost_work") == []
    assert sc.best_indexes([3.0, None], "lost_work") == []


# ------------------------------------------------------------ the parameter diff
def test_parameter_diff_names_what_differs_between_resolved_variants():
    """S6's two variants differ only in the batch job's checkpoint interval; S8's only in
    the preemption policy (a variant's policy is part of what it ran)."""
    from scheduler_core.spec_diff import parameter_diff, variant_parameters

    for preset, path in (
        ("s6-checkpoint-frequency", "workloads.batch-train.checkpoint.intervalSeconds"),
        ("s8-gang-at-scale", "policy.preemption"),
    ):
        spec = sc.get_preset(preset).spec()
        flat = [variant_parameters(spec, name) for name in sc.variant_names(spec)]
        rows, more = parameter_diff(flat)
        assert [row.path for row in rows] == [path], preset
        assert more == 0
    spec = sc.get_preset("s8-gang-at-scale").spec()
    rows, _ = parameter_diff([variant_parameters(spec, "pod")] * 2)
    assert rows == []


def test_parameter_diff_shows_a_path_one_side_lacks():
    from scheduler_core.spec_diff import flatten, parameter_diff

    assert flatten({"a": {"b": 1}, "w": [{"name": "x", "g": 2}], "e": []}) == {
        "a.b": 1,
        "w.x.name": "x",
        "w.x.g": 2,
        "e": [],
    }
    rows, _ = parameter_diff([{"a": 1, "b": 2}, {"a": 1}], limit=10)
    assert [(r.path, r.texts()) for r in rows] == [("b", ["2", "(absent)"])]
    rows, more = parameter_diff([{f"k{i}": i for i in range(5)}, {}], limit=2)
    assert (len(rows), more) == (2, 3)
