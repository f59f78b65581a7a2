"""Cluster states a real snapshot holds that hand-written specs rarely do: a PDB with
pods already being disrupted, terminating pods, nominated pending pods, an over-committed
node, workloads that arrived before the window opened. Each test cites the rule it checks:
kubernetes-preemption.md §n, or docs/kubernetes-rules.md where that document is silent.
"""

from __future__ import annotations

from typing import Any

import pytest

import scheduler_core as sc
from scheduler_core import events as ev


def deployment(name: str, members: int, gpus: int = 1, **extra: Any) -> dict[str, Any]:
    return {
        "name": name,
        "members": members,
        "gpus": gpus,
        "controller": {"kind": "deployment"},
        "terminationGracePeriodSeconds": 0,
        "stopSeconds": 0,
        **extra,
    }


# =========================================================================== PDB status
@pytest.mark.parametrize(("disrupted", "second_eviction"), [(0, 10.0), (1, 120.0)])
def test_pods_already_disrupted_count_against_the_budget_until_they_expire(
    lab, disrupted, second_eviction
):
    """docs/kubernetes-rules.md "PDB status disruptedPods" (with §4.3
    filterPodsWithPDBViolation and §4.5, which read disruptionsAllowed): a pod listed in
    status.disruptedPods is not healthy for the disruption controller, so it takes one
    disruption off the budget until the entry expires 2 minutes later. Three replicas on
    `a`, minAvailable 1, and nowhere else to go: a drain at t=10 may evict 2 at once; with
    one pod already disrupted only 1, and the second when the entry expires (t=120)."""
    web = deployment("web", 3, pdb={"minAvailable": 1, "disruptedPods": disrupted})
    out = lab.run(
        nodes=[("a", 8), ("b", 0)],
        workloads=[web],
        initial=[("web", "a", 0, m) for m in range(3)],
        events=[{"at": 10, "type": "drain", "nodes": ["a"]}],
        horizon=200,
    )
    kills = [e.time for e in out.of(ev.KILLING)]
    assert kills[:2] == [10.0, second_eviction]


# =========================================================================== terminating pods
def pod(name: str, gpus: int, cls: str = "low", **extra: Any) -> dict[str, Any]:
    return {"name": name, "gpus": gpus, "priorityClassName": cls, **extra}


CLASSES = {"low": 0, "high": 1000}


def test_a_terminating_pod_frees_its_gpus_at_its_time(lab):
    """docs/kubernetes-rules.md "Terminating pods in a snapshot": `old` has a
    deletionTimestamp and holds all 8 GPUs of `a` until t=30; `new` (same priority, no
    preemption possible) is bound there at 30, not before."""
    out = lab.run(
        nodes=[("a", 8)],
        classes=CLASSES,
        workloads=[pod("old", 8), pod("new", 8)],
        initial=[{"workload": "old", "node": "a", "terminatingUntil": 30}],
    )
    assert [(e.time, e.related) for e in out.of(ev.KILLING, "old-0")] == [(0.0, "initial-state")]
    assert [e.time for e in out.of(ev.RELEASED, "old-0")] == [30.0]
    assert out.scheduled("new-0") == (30.0, "a")
    assert out.of(ev.PREEMPTED) == []


@pytest.mark.parametrize(("nominated", "mid_preempted_at"), [(True, 30.0), (False, 0.0)])
def test_a_terminating_victim_on_the_nominated_node_blocks_preemption(
    lab, nominated, mid_preempted_at
):
    """§4.1 PodEligibleToPreemptOthers (the §4.0 guards passed): `hi` nominated to `a`,
    where the lower-priority `old` is still terminating (a preemption victim), is not
    eligible to preempt: it waits until old is gone (t=30) and only then evicts `mid`.
    Without the recorded nomination hi is eligible at once (old's GPUs count as leaving)."""
    initial: list[dict[str, Any]] = [
        {"workload": "old", "node": "a", "terminatingUntil": 30},
        {"workload": "mid", "node": "a"},
    ]
    if nominated:
        initial.append({"workload": "hi", "node": "a", "nominated": True})
    out = lab.run(
        nodes=[("a", 8)],
        classes=CLASSES,
        initial=initial,
        workloads=[pod("old", 4), pod("mid", 4), pod("hi", 8, "high")],
    )
    assert [(t, victim) for t, victim, _, _ in out.preempted()] == [(mid_preempted_at, "mid-0")]
    if nominated:
        assert any(
            "terminating pod on the nominated node" in e.message
            for e in out.of(ev.FAILED_SCHEDULING, "hi-0")
        )


# =========================================================================== nominated pods
def test_a_recorded_nomination_is_tried_first(lab):
    """§3 step 2: a pending pod with nominatedNodeName has that node evaluated first and
    used if it passes Filter. MostAllocated would choose `a` (2 of 8 GPUs used); the
    recorded nomination sends `hi` to `b`."""
    initial = [{"workload": "busy", "node": "a"}]
    plain = lab.run(
        nodes=[("a", 8), ("b", 8)],
        classes=CLASSES,
        initial=initial,
        workloads=[pod("busy", 2), pod("hi", 4, "high")],
    )
    assert plain.scheduled("hi-0") == (0.0, "a")
    out = lab.run(
        nodes=[("a", 8), ("b", 8)],
        classes=CLASSES,
        initial=[*initial, {"workload": "hi", "node": "b", "nominated": True}],
        workloads=[pod("busy", 2), pod("hi", 4, "high")],
    )
    assert [e.node for e in out.of(ev.NOMINATED, "hi-0")] == ["b"]
    assert out.scheduled("hi-0") == (0.0, "b")


def test_a_recorded_nomination_reserves_the_node_against_lower_priority_pods(lab):
    """§3 step 3 (RunFilterPluginsWithNominatedPods, pass 1): `hi` (nominated to `a`) is
    in backoff after a failed attempt; when `old` frees a at t=30, `lo` arriving then
    must not take the GPUs hi's nomination holds."""
    initial = [
        {"workload": "old", "node": "a", "terminatingUntil": 30},
        {"workload": "hi", "node": "a", "nominated": True},
    ]
    out = lab.run(
        nodes=[("a", 8)],
        classes=CLASSES,
        initial=initial,
        workloads=[pod("old", 8), pod("hi", 8, "high"), pod("lo", 8, arrival=30)],
    )
    assert out.scheduled("hi-0")[1] == "a"
    assert out.scheduled("lo-0") is None


def test_a_pending_pod_cannot_be_nominated_and_terminating(lab):
    doc = lab.doc(
        nodes=[("a", 8)],
        workloads=[pod("x", 1)],
        initial=[{"workload": "x", "node": "a", "nominated": True, "terminatingUntil": 5}],
    )
    doc["priorityClasses"] = [{"name": "low", "value": 0}]
    with pytest.raises(sc.SpecError, match=r"initialState\[0\].*nominated pod is pending"):
        sc.parse_spec(doc)


# =========================================================================== over-commit
def snapshot(lab, **scenario: Any) -> dict[str, Any]:
    doc = lab.doc(**scenario)
    doc["origin"] = "snapshot"
    return doc


def test_a_snapshot_pod_larger_than_every_node_warns_and_stays_pending(lab):
    """docs/kubernetes-rules.md "Over-committed snapshots": in a recorded cluster a pod
    can outgrow every node (a node shrank). The import warns and the pod stays Pending,
    with kube-scheduler's message (NodeResourcesFit: Insufficient, per node; preemption
    cannot help, §4.1 step 3: no node is Unschedulable, all are unresolvable)."""
    doc = snapshot(lab, nodes=[("a", 4), ("b", 2)], workloads=[pod("big", 8)], horizon=30)
    doc["priorityClasses"] = [{"name": "low", "value": 0}]
    spec = sc.parse_spec(doc)
    assert sc.spec_warnings(spec) == [
        {
            "path": "workloads[0].gpus",
            "message": "a member needs 8 GPU(s), 1 CPU and 1 GiB, more than "
            "any node has: it stays Pending (FailedScheduling)",
        }
    ]
    out = lab.run_doc(doc)
    assert out.scheduled("big-0") is None
    [failed] = out.of(ev.FAILED_SCHEDULING, "big-0")
    assert failed.message == (
        "0/2 nodes are available: 2 Insufficient nvidia.com/gpu. "
        "preemption: 0/2 nodes are available: 2 Preemption is not "
        "helpful for scheduling."
    )


def test_a_hand_written_pod_larger_than_every_node_is_still_an_error(lab):
    """The same workload in a hand-written spec is a mistake: a clear validation error."""
    doc = lab.doc(nodes=[("a", 4)], workloads=[pod("big", 8)])
    doc["priorityClasses"] = [{"name": "low", "value": 0}]
    with pytest.raises(sc.SpecError, match=r"workloads\[0\]\.gpus.*more than any node has"):
        sc.parse_spec(doc)
    assert sc.spec_warnings(sc.parse_spec({**doc, "workloads": [pod("ok", 4)]})) == []


def test_an_over_committed_snapshot_node_warns_and_the_pod_goes_pending(lab):
    """docs/kubernetes-rules.md "Over-committed snapshots": `a` (4 GPUs) is recorded with
    two 4-GPU pods. The second gets a warning, no error; it is Pending and the scheduler
    places it on `b` like any pending pod."""
    doc = snapshot(
        lab,
        nodes=[("a", 4), ("b", 4)],
        workloads=[pod("x", 4), pod("y", 4)],
        initial=[("x", "a", 0), ("y", "a", 0)],
        horizon=30,
    )
    doc["priorityClasses"] = [{"name": "low", "value": 0}]
    assert [w["path"] for w in sc.spec_warnings(sc.parse_spec(doc))] == ["initialState[1].node"]
    out = lab.run_doc(doc)
    assert out.scheduled("x-0") == (0.0, "a")
    assert out.scheduled("y-0") == (0.0, "b")
    assert not any("initial state" in e.message for e in out.of(ev.FAILED_SCHEDULING))
