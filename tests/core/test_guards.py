"""Anti-thrashing guards (issue #17 §2, docs/kubernetes-rules.md "Anti-thrashing
guards"): KAI's minimum runtime before preemption, a cluster-wide preemption rate limit
(a token bucket shaped like Armada's scheduling rate limits), and how a decision
explains them."""

from __future__ import annotations

from typing import Any

import pytest

import scheduler_core as sc
from scheduler_core import events as ev
from scheduler_core.decisions import PREEMPTION

CLASSES = {"low": 100, "high": 1000}


def _one_node(policy: dict[str, Any], high_at: float = 60.0, **extra: Any) -> dict[str, Any]:
    return {
        "nodes": ["n1"],
        "classes": CLASSES,
        "workloads": [
            {"name": "low", "gpus": 8, "priorityClassName": "low"},
            {"name": "high", "gpus": 8, "priorityClassName": "high", "arrival": high_at},
        ],
        "policy": policy,
        "horizon": 1800.0,
        **extra,
    }


def test_without_guards_the_preemptor_evicts_at_once(lab) -> None:
    out = lab.run(**_one_node({}))
    assert [(t, victim) for t, victim, _, _ in out.preempted()] == [(60.0, "low-0")]


def test_min_runtime_protects_a_pod_until_it_has_run_that_long(lab) -> None:
    """KAI preempt-min-runtime: a positive value is the guaranteed runtime before the
    workload may be preempted; the preemption happens as soon as it has run it."""
    out = lab.run(**_one_node({"minRuntimeSeconds": 600}))
    assert [(t, victim) for t, victim, _, _ in out.preempted()] == [(600.0, "low-0")]
    failed = out.of(ev.FAILED_SCHEDULING, "high-0")
    assert failed
    assert "protected by min runtime" in failed[0].message
    assert not out.of(ev.NOT_HELPFUL, "high-0"), "preemption will help: not 'not helpful'"


def test_min_runtime_is_the_cause_of_the_failed_decision(lab) -> None:
    out = lab.run(**_one_node({"minRuntimeSeconds": 600}))
    causes = [d.cause for d in out.engine.decisions() if d.pod == "high-0"]
    assert any("protected by min runtime" in c for c in causes), causes


def test_min_runtime_changes_the_victim_and_the_record_says_why(lab) -> None:
    """Two lower-priority pods share the node; the younger one is protected, so the older
    is evicted (without the guard the reprieve keeps the older and evicts the younger)."""
    doc = {
        "nodes": ["n1"],
        "classes": CLASSES,
        "workloads": [
            {"name": "old", "gpus": 4, "priorityClassName": "low"},
            {"name": "young", "gpus": 4, "priorityClassName": "low", "arrival": 500},
            {"name": "high", "gpus": 4, "priorityClassName": "high", "arrival": 700},
        ],
        "horizon": 1800.0,
    }
    assert lab.run(**doc).victims_of("high-0") == ["young-0"]
    guarded = lab.run(**doc, policy={"minRuntimeSeconds": 600})
    assert guarded.victims_of("high-0") == ["old-0"]
    record = next(d for d in guarded.engine.decisions() if d.kind == PREEMPTION)
    assert ("young-0", "protected by min runtime (ran 200 s of 600 s)") in {
        (r.pod, r.why) for r in record.reprieved
    }


def test_the_rate_limit_spaces_preemptions_by_its_rate(lab) -> None:
    """One token a minute, burst 1: four preemptors that each need one victim evict at
    t=10, 70, 130 and 190 instead of all at t=10."""
    doc = {
        "nodes": ["n1", "n2", "n3", "n4"],
        "classes": CLASSES,
        "workloads": [
            {"name": "low", "members": 4, "gpus": 8, "priorityClassName": "low"},
            {"name": "high", "members": 4, "gpus": 8, "priorityClassName": "high", "arrival": 10},
        ],
        "horizon": 1800.0,
    }
    free = sorted(t for t, *_ in lab.run(**doc).preempted())
    assert free == [10.0] * 4
    limited = lab.run(**doc, policy={"preemptionRateLimit": {"perMinute": 1, "burst": 1}})
    assert sorted(t for t, *_ in limited.preempted()) == pytest.approx([10.0, 70.0, 130.0, 190.0])
    failed = [e for e in limited.of(ev.FAILED_SCHEDULING) if "rate limit" in e.message]
    assert failed, "the refused attempts say the rate limit refused them"


def test_the_rate_limit_burst_allows_that_many_at_once(lab) -> None:
    doc = {
        "nodes": ["n1", "n2", "n3", "n4"],
        "classes": CLASSES,
        "workloads": [
            {"name": "low", "members": 4, "gpus": 8, "priorityClassName": "low"},
            {"name": "high", "members": 4, "gpus": 8, "priorityClassName": "high", "arrival": 10},
        ],
        "policy": {"preemptionRateLimit": {"perMinute": 2, "burst": 2}},
        "horizon": 1800.0,
    }
    times = sorted(t for t, *_ in lab.run(**doc).preempted())
    assert times == pytest.approx([10.0, 10.0, 40.0, 70.0])


def test_guards_apply_to_workload_aware_preemption_too(lab) -> None:
    doc = _one_node({"minRuntimeSeconds": 600, "preemption": "workload-aware"})
    out = lab.run(**doc)
    assert [(t, victim) for t, victim, _, _ in out.preempted()] == [(600.0, "low-0")]


def test_a_guard_can_be_a_variant() -> None:
    """The guards are policy settings, so a variant (or a grid) turns them on."""
    spec = sc.parse_spec(
        {
            "cluster": {"nodes": [{"name": "n1"}]},
            "workloads": [{"name": "w"}],
            "variants": [
                {"name": "plain"},
                {"name": "guarded", "set": {"policy.minRuntimeSeconds": "10m"}},
            ],
        }
    )
    guarded = sc.resolve_variant(spec, "guarded")
    assert guarded.spec.policy.min_runtime_seconds == 600.0
    assert sc.resolve_variant(spec, "plain").spec.policy.min_runtime_seconds == 0.0


@pytest.mark.parametrize(
    ("policy", "path"),
    [
        ({"minRuntimeSeconds": -5}, "policy.minRuntimeSeconds"),
        ({"preemptionRateLimit": {"perMinute": 0}}, "policy.preemptionRateLimit.perMinute"),
        ({"preemptionRateLimit": {"perMinute": 1, "burst": 0}}, "policy.preemptionRateLimit.burst"),
        ({"preemptionRateLimit": {"burst": 3}}, "policy.preemptionRateLimit.perMinute"),
    ],
    ids=["negative-min-runtime", "zero-rate", "zero-burst", "rate-missing"],
)
def test_bad_guard_settings_name_their_field(policy: dict[str, Any], path: str) -> None:
    with pytest.raises(sc.SpecError) as caught:
        sc.parse_spec(
            {"cluster": {"nodes": [{"name": "n1"}]}, "workloads": [{"name": "w"}], "policy": policy}
        )
    assert path in {e["path"] for e in caught.value.errors}


def test_min_runtime_protects_a_whole_group_under_workload_aware_preemption(lab) -> None:
    """An All-mode group is one victim unit: protected while any of its pods is."""
    group = {"minCount": 2, "disruptionMode": "All"}
    doc = {
        "nodes": ["n1", "n2"],
        "classes": CLASSES,
        "workloads": [
            {"name": "low", "members": 2, "gpus": 8, "priorityClassName": "low", "podGroup": group},
            {
                "name": "high",
                "members": 2,
                "gpus": 8,
                "priorityClassName": "high",
                "arrival": 60,
                "podGroup": group,
            },
        ],
        "horizon": 1800.0,
    }
    plain = lab.run(**doc, policy={"preemption": "workload-aware"})
    assert {t for t, *_ in plain.preempted()} == {60.0}
    guarded = lab.run(**doc, policy={"preemption": "workload-aware", "minRuntimeSeconds": 600})
    assert {t for t, *_ in guarded.preempted()} == {600.0}
    assert sorted(v for _, v, _, _ in guarded.preempted()) == ["low-0", "low-1"]
