"""Failure models (issue #17 §1, docs/failures.md): the statistics of the draws, what a
failure costs, Kubernetes' NotReady semantics, determinism and the errors."""

from __future__ import annotations

import itertools
import math
import random
import statistics
from typing import Any

import pytest

import scheduler_core as sc
from scheduler_core import events as ev
from scheduler_core.failures import draw_events, sample
from scheduler_core.plugins.disruptions import NODE_MONITOR_GRACE_SECONDS
from scheduler_core.spec import FailureDistribution

DAY = 86400.0


def fleet(failures: list[dict[str, Any]], **extra: Any) -> dict[str, Any]:
    return {
        "horizonSeconds": extra.pop("horizonSeconds", 30 * DAY),
        "cluster": {
            "nodePools": [
                {"name": "r1", "count": 10, "gpus": 8, "labels": {"rack": "r1"}},
                {"name": "r2", "count": 10, "gpus": 8, "labels": {"rack": "r2"}},
            ]
        },
        "workloads": [
            {
                "name": "train",
                "kind": "training",
                "members": 16,
                "gpus": 8,
                "recovery": {"model": "synchronous"},
                "startupSeconds": 300,
                "checkpoint": {"intervalSeconds": 1800, "writeSeconds": 60},
            }
        ],
        "failures": failures,
        **extra,
    }


def mean_ci(values: list[float]) -> tuple[float, float]:
    """The sample mean and the half-width of its 95 % confidence interval."""
    return statistics.fmean(values), 1.96 * statistics.stdev(values) / math.sqrt(len(values))


def errors_of(document: dict[str, Any], **kwargs: Any) -> dict[str, str]:
    with pytest.raises(sc.SpecError) as caught:
        sc.parse_spec(document, **kwargs)
    return {e["path"]: e["message"] for e in caught.value.errors}


# ------------------------------------------------------------------------- statistics
def test_the_sampled_mtbf_of_a_cluster_wide_process_is_within_its_confidence_interval() -> None:
    mtbf = 3600.0
    spec = sc.parse_spec(
        fleet(
            [
                {
                    "per": "scope",
                    "interArrival": {"distribution": "exponential", "meanSeconds": mtbf},
                    "repair": {"distribution": "constant", "meanSeconds": 60},
                }
            ],
            horizonSeconds=60 * DAY,
        ),
        limits=sc.LIBRARY_LIMITS,
    )
    times = [e.at for e in draw_events(spec, seed=7)]
    gaps = [b - a for a, b in itertools.pairwise(times)]
    mean, half = mean_ci(gaps)
    assert len(gaps) > 1000
    assert abs(mean - mtbf) <= half
    # exponential: the standard deviation equals the mean
    assert statistics.stdev(gaps) == pytest.approx(mtbf, rel=0.1)


def test_per_node_up_times_have_the_mtbf_and_each_failure_waits_for_the_repair() -> None:
    mtbf, repair = 2 * DAY, 3600.0
    spec = sc.parse_spec(
        fleet(
            [
                {
                    "interArrival": {"distribution": "exponential", "meanSeconds": mtbf},
                    "repair": {"distribution": "constant", "meanSeconds": repair},
                }
            ],
            horizonSeconds=300 * DAY,
        ),
        limits=sc.LIBRARY_LIMITS,
    )
    by_node: dict[str, list[float]] = {}
    for event in draw_events(spec, seed=3):
        [node] = event.nodes
        assert event.recover_after_seconds == repair
        by_node.setdefault(node, []).append(event.at)
    assert len(by_node) == 20
    up = [b - a - repair for times in by_node.values() for a, b in itertools.pairwise(times)]
    assert min(up) >= 0  # a node does not fail again while it is being repaired
    mean, half = mean_ci(up)
    assert abs(mean - mtbf) <= half


@pytest.mark.parametrize(
    "dist",
    [
        {"distribution": "weibull", "meanSeconds": 1000, "shape": 0.7},
        {"distribution": "weibull", "meanSeconds": 1000, "shape": 3.0},
        {"distribution": "lognormal", "meanSeconds": 1000, "sigma": 1.2},
        {"distribution": "empirical", "samplesSeconds": [200, 800, 2000]},
    ],
)
def test_every_family_is_parametrised_by_its_mean(dist: dict[str, Any]) -> None:
    parsed = FailureDistribution.model_validate(dist)
    rng = random.Random(11)
    mean, half = mean_ci([sample(parsed, rng) for _ in range(40_000)])
    assert abs(mean - 1000) <= half


def test_correlated_failures_take_a_fraction_of_one_domain() -> None:
    spec = sc.parse_spec(
        fleet(
            [
                {
                    "kind": "correlated",
                    "domainLabel": "rack",
                    "fraction": 0.5,
                    "interArrival": {"distribution": "exponential", "meanSeconds": 5 * DAY},
                    "repair": {"distribution": "constant", "meanSeconds": 3600},
                }
            ]
        )
    )
    drawn = draw_events(spec, seed=1)
    assert drawn
    for event in drawn:
        assert len(event.nodes) == 5
        assert len({name.split("-")[0] for name in event.nodes}) == 1  # one rack


# ------------------------------------------------------------------------- determinism
def test_draws_are_deterministic_and_replications_redraw_them() -> None:
    spec = sc.parse_spec(
        fleet(
            [
                {
                    "interArrival": {
                        "distribution": "weibull",
                        "meanSeconds": 10 * DAY,
                        "shape": 0.8,
                    },
                    "repair": {"distribution": "lognormal", "meanSeconds": 4 * 3600},
                }
            ],
            replications=2,
        )
    )
    first, again = sc.simulate(spec, "default", 0), sc.simulate(spec, "default", 0)
    other = sc.simulate(spec, "default", 1)
    assert first.events == again.events
    lost = [[e.time for e in r.events if e.reason == ev.NODE_LOST] for r in (first, other)]
    assert lost[0]
    assert lost[1]
    assert lost[0] != lost[1]


def test_every_variant_of_a_replication_sees_the_same_failures() -> None:
    """Common random numbers: a difference between variants is the policy's."""
    spec = sc.parse_spec(
        fleet(
            [
                {
                    "interArrival": {"distribution": "exponential", "meanSeconds": 10 * DAY},
                    "repair": {"distribution": "constant", "meanSeconds": 3600},
                }
            ],
            grid={"workloads.train.checkpoint.intervalSeconds": [600, 3600]},
        )
    )
    logs = [
        [(e.time, e.node) for e in sc.simulate(spec, name).events if e.reason == ev.NODE_LOST]
        for name in sc.variant_names(spec)
    ]
    assert logs[0]
    assert logs[0] == logs[1]


# ------------------------------------------------------------------------- what a failure costs
def single_job(csv: str, **checkpoint: Any) -> sc.ReplicationResult:
    spec = sc.parse_spec(
        {
            "horizonSeconds": 2000,
            "cluster": {"nodes": [{"name": "a", "gpus": 8}, {"name": "b", "gpus": 8}]},
            "workloads": [
                {
                    "name": "job",
                    "kind": "training",
                    "gpus": 8,
                    "durationSeconds": 5000,
                    "checkpoint": {"intervalSeconds": 100, "writeSeconds": 20, **checkpoint},
                }
            ],
            "failures": [{"kind": "trace", "csv": csv}],
        }
    )
    return sc.simulate(spec, "default")


def test_a_failure_during_a_write_loses_the_work_since_the_previous_durable_checkpoint() -> None:
    # cycles of 100 s work + 20 s write: checkpoint 1 durable at 120 s (100 s of work);
    # at 230 s the second write (220-240 s, 200 s of work) is not durable yet.
    result = single_job("time,target,duration\n230,a,\n")
    assert [e.value for e in result.events if e.reason == ev.CHECKPOINT and e.time <= 230] == [
        100.0
    ]
    [disrupted] = [e for e in result.events if e.reason == ev.DISRUPTED]
    assert (disrupted.time, disrupted.value) == (230.0, (200 - 100) * 8)


def test_a_failure_just_after_a_write_completes_loses_only_the_work_since_it() -> None:
    result = single_job("250,a\n")  # checkpoint 2 durable at 240 s (200 s); 10 s of work since
    [disrupted] = [e for e in result.events if e.reason == ev.DISRUPTED]
    assert disrupted.value == 10 * 8


def test_a_failed_node_is_not_ready_and_its_pod_is_evicted_after_the_toleration() -> None:
    """docs/kubernetes-rules.md "Node failure": the node stops at once (no SIGTERM, no
    checkpoint on SIGTERM), the node controller marks it NotReady after the monitor
    grace period, the taint manager evicts the pod after tolerationSeconds (300 s by
    default, DefaultTolerationSeconds), and only then does the Job create a replacement."""
    result = single_job("230,a\n", onSigterm=True)
    evicted = 230 + NODE_MONITOR_GRACE_SECONDS + 300
    killing = [e for e in result.events if e.reason == ev.KILLING]
    assert [(e.time, e.pod, e.related) for e in killing] == [(evicted, "job-0", "node-failure")]
    replacement = [e for e in result.events if e.reason == ev.CREATED and e.value == 1.0]
    assert [e.time for e in replacement] == [evicted]
    scheduled = [e for e in result.events if e.reason == ev.SCHEDULED]
    assert [(e.time, e.node) for e in scheduled] == [(0.0, "a"), (evicted, "b")]
    assert [e.time for e in result.events if e.reason == ev.DISRUPTED] == [230.0]
    assert not [e for e in result.events if e.message == "checkpoint on SIGTERM"]


def test_a_hand_placed_node_failure_can_ask_for_the_same_semantics() -> None:
    spec = sc.parse_spec(
        {
            "horizonSeconds": 2000,
            "cluster": {"nodes": [{"name": "a", "gpus": 8}, {"name": "b", "gpus": 8}]},
            "workloads": [{"name": "job", "gpus": 8, "durationSeconds": 5000}],
            "events": [
                {"at": 100, "type": "node-failure", "nodes": ["a"], "tolerationSeconds": 60}
            ],
        }
    )
    result = sc.simulate(spec, "default")
    [killing] = [e for e in result.events if e.reason == ev.KILLING]
    assert killing.time == 100 + NODE_MONITOR_GRACE_SECONDS + 60


# ------------------------------------------------------------------------- ETTR
def test_ettr_is_useful_progress_over_wall_clock_since_submission() -> None:
    spec = sc.parse_spec(
        {
            "horizonSeconds": 10_000,
            "cluster": {"nodes": [{"name": "a", "gpus": 8}]},
            "workloads": [
                {
                    "name": "job",
                    "gpus": 8,
                    "arrival": 1000,
                    "durationSeconds": 3000,
                    "startupSeconds": 1000,
                }
            ],
        }
    )
    result = sc.simulate(spec, "default")
    [record] = result.workloads
    assert record.ettr == pytest.approx(3000 / 4000)  # done at 5000, submitted at 1000
    assert result.summary["ettr"] == pytest.approx(0.75)


def test_ettr_counts_the_wall_clock_to_the_horizon_for_unfinished_work() -> None:
    result = single_job("230,a\n")
    [record] = result.workloads
    assert record.ettr == pytest.approx(record.useful_work / 8 / 2000)
    assert 0 < record.ettr < 1


# ------------------------------------------------------------------------- errors
def random_model(**fields: Any) -> dict[str, Any]:
    return {"interArrival": {"distribution": "exponential", "meanSeconds": 10 * DAY}, **fields}


def test_a_negative_mtbf_is_refused_naming_the_field() -> None:
    errors = errors_of(
        fleet([{"interArrival": {"distribution": "exponential", "meanSeconds": -5}}])
    )
    assert "must be positive, got -5" in errors["failures[0].interArrival"]


def test_an_unknown_distribution_is_refused_naming_the_field() -> None:
    errors = errors_of(fleet([{"interArrival": {"distribution": "gaussian", "meanSeconds": 5}}]))
    message = errors["failures[0].interArrival.distribution"]
    assert "'exponential'" in message
    assert "'weibull'" in message


def test_a_selector_matching_no_node_is_refused_naming_the_field() -> None:
    errors = errors_of(fleet([random_model(selector={"rack": "r9"})]))
    assert errors == {"failures[0].selector": "the selector {rack=r9} matches no node"}
    errors = errors_of(fleet([random_model(pool="r1", selector={"rack": "r2"})]))
    assert errors["failures[0].selector"].endswith("in pool 'r1'")
    assert errors_of(fleet([random_model(pool="r7")])) == {
        "failures[0].pool": "no node pool named 'r7'"
    }


def test_bad_trace_rows_are_refused_with_their_row() -> None:
    errors = errors_of(
        fleet([{"kind": "trace", "csv": "time,target,duration\n10,r1-0,\n20,nowhere,1h\n"}])
    )
    assert errors == {"failures[0].csv": "row 3: no node named 'nowhere' (in the model's scope)"}
    errors = errors_of(fleet([{"kind": "trace", "csv": "soon,r1-0\n"}]))
    assert errors["failures[0].csv"].startswith("row 1: time 'soon'")
    errors = errors_of(fleet([{"kind": "trace", "csv": "5,rack=r9\n"}]))
    assert errors["failures[0].csv"] == "row 1: the selector 'rack=r9' matches no node"


def test_incomplete_models_are_refused() -> None:
    assert "needs interArrival" in errors_of(fleet([{"kind": "random"}]))["failures[0]"]
    assert "needs domainLabel" in errors_of(fleet([random_model(kind="correlated")]))["failures[0]"]
    assert errors_of(fleet([random_model(kind="correlated", domainLabel="zone")])) == {
        "failures[0].domainLabel": "no node in scope has the label 'zone'"
    }


def test_the_expected_failure_count_is_checked_against_the_limits_before_drawing() -> None:
    # 20 nodes x 30 days / 60 s: 864,000 expected failures
    document = fleet([{"interArrival": {"distribution": "exponential", "meanSeconds": 60}}])
    errors = errors_of(document, limits=sc.Limits())
    assert errors == {
        "failures[0]": "864,000 expected failure events is above the limit of "
        "1,000 (LAB_MAX_TIMELINE_EVENTS)"
    }


def test_the_cost_estimate_counts_the_expected_failures() -> None:
    quiet = sc.parse_spec(fleet([]))
    failing = sc.parse_spec(
        fleet([{"interArrival": {"distribution": "exponential", "meanSeconds": DAY}}])
    )
    assert (
        sc.estimate_cost(failing).events_per_replication
        > sc.estimate_cost(quiet).events_per_replication + 20 * 30
    )  # 600 failures expected


def test_spot_reclaims_as_a_random_process_give_notice_and_recapture() -> None:
    """A reclaim is the spot-reclaim source: SIGTERM with the notice as grace, so a
    checkpoint on SIGTERM that fits is kept; repair is the time to recapture the node."""
    spec = sc.parse_spec(
        {
            "horizonSeconds": 5 * DAY,
            "cluster": {"nodePools": [{"name": "spot", "count": 4, "gpus": 8, "spot": True}]},
            "workloads": [
                {
                    "name": "job",
                    "members": 2,
                    "gpus": 8,
                    "durationSeconds": 10 * DAY,
                    "terminationGracePeriodSeconds": 120,
                    "checkpoint": {"intervalSeconds": 3600, "writeSeconds": 20, "onSigterm": True},
                }
            ],
            "failures": [
                {
                    "disruption": "spot-reclaim",
                    "noticeSeconds": 30,
                    "interArrival": {"distribution": "exponential", "meanSeconds": DAY},
                    "repair": {"distribution": "constant", "meanSeconds": 600},
                }
            ],
        }
    )
    drawn = draw_events(spec, seed=2)
    assert drawn
    assert {(e.type, e.notice_seconds, e.recover_after_seconds) for e in drawn} == {
        ("spot-reclaim", 30.0, 600.0)
    }
    result = sc.simulate(spec, "default")
    assert any(e.message == "checkpoint on SIGTERM" for e in result.events)
    kills = [e for e in result.events if e.reason == ev.KILLING]
    assert kills
    assert all(e.related == "spot-reclaim" for e in kills)


def test_planned_drains_on_a_schedule_evict_gracefully_and_uncordon_after_the_window() -> None:
    spec = sc.parse_spec(
        fleet(
            [
                {
                    "disruption": "drain",
                    "per": "scope",
                    "interArrival": {"distribution": "constant", "meanSeconds": DAY},
                    "repair": {"distribution": "constant", "meanSeconds": 3600},
                }
            ],
            horizonSeconds=3.5 * DAY,
        )
    )
    drawn = draw_events(spec, seed=0)
    assert [(e.at, e.type, e.recover_after_seconds) for e in drawn] == [
        (DAY * k, "drain", 3600.0) for k in (1, 2, 3)
    ]
    result = sc.simulate(spec, "default")
    cordoned = [e for e in result.events if e.reason == ev.NODE_CORDONED]
    assert [e.time for e in cordoned] == [DAY, 2 * DAY, 3 * DAY]
    back = [e.time for e in result.events if e.reason == ev.NODE_BACK]
    assert back == [DAY + 3600, 2 * DAY + 3600, 3 * DAY + 3600]
    assert all(e.related == "drain" for e in result.events if e.reason == ev.KILLING)
