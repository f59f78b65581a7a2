"""Fidelity of gang scheduling (kubernetes-preemption.md §5: Workload API, PodGroup, the
Workload Scheduling Cycle of KEP-4671 beta).

A gang (``podGroup.scheduling: gang``) is tried in one snapshot: every pending member
that fits is assumed, and the group binds only if at least ``minCount`` members fit;
otherwise nothing binds and nothing is held. ``basic`` groups bind member by member.
Members take the PodGroup's priority class (master), and the group is ordered in the
queue as one, by that priority.

Scenarios use `policy.preemption: none` unless preemption is the point, so only the
scheduling cycle decides who binds. A "blocker" is a top-priority pod whose GPUs free when
its ``durationSeconds`` ends.
"""

from __future__ import annotations

import pytest

import scheduler_core as sc
from scheduler_core import events as ev
from scheduler_core.model import PodState

CLASSES = [
    {"name": "top", "value": 1_000_000},
    {"name": "hi", "value": 100},
    {"name": "mid", "value": 50},
    {"name": "lo", "value": 0},
    {"name": "hi-never", "value": 100, "preemptionPolicy": "Never"},
    {"name": "mid-never", "value": 50, "preemptionPolicy": "Never"},
    {"name": "lo-never", "value": 0, "preemptionPolicy": "Never"},
]
NO_PREEMPTION = {"preemption": "none"}


def blocker(name: str, gpus: int = 2, until: float = 50.0, members: int = 1) -> dict:
    return {
        "name": name,
        "members": members,
        "gpus": gpus,
        "priorityClassName": "top",
        "durationSeconds": until,
    }


def gang(
    name: str,
    members: int,
    min_count: int,
    *,
    gpus: int = 2,
    arrival: float = 1.0,
    scheduling: str = "gang",
    **extra,
) -> dict:
    return {
        "name": name,
        "members": members,
        "gpus": gpus,
        "arrival": arrival,
        "podGroup": {"minCount": min_count, "scheduling": scheduling},
        **extra,
    }


def three_nodes_one_blocked(lab, group: dict, *, horizon: float = 100.0, policy=None):
    """n1, n2, n3 (2 GPUs each); `blk` holds n3 until t=50; ``group`` arrives at t=1."""
    return lab.run(
        nodes=[("n1", 2), ("n2", 2), ("n3", 2)],
        classes=CLASSES,
        workloads=[blocker("blk"), {"priorityClassName": "lo", **group}],
        initial=[("blk", "n3", 0)],
        policy=policy or NO_PREEMPTION,
        horizon=horizon,
    )


def group_bindings(out, workload: str) -> dict[str, tuple[float, str]]:
    return {
        pod: where for pod, where in out.bindings().items() if pod.rsplit("-", 1)[0] == workload
    }


# =========================================================================== all or nothing
def test_no_member_binds_until_min_count_fit_in_one_cycle(lab):
    """§5 Workload Scheduling Cycle: 3 members (minCount 3) and only 2 free nodes until
    the blocker ends at t=50. Nothing binds at t=1 (two members *would* fit); all three
    bind together at t=50, in one cycle."""
    out = three_nodes_one_blocked(lab, gang("g", 3, 3))
    assert group_bindings(out, "g") == {
        "g-0": (50.0, "n1"),
        "g-1": (50.0, "n2"),
        "g-2": (50.0, "n3"),
    }


def test_a_group_that_cannot_fit_holds_no_gpus(lab):
    """§5 (KEP-4671) / scenarios S8: if fewer than minCount fit, every assumed member is
    forgotten: no Scheduled event, no pod bound, and the two free nodes stay free."""
    out = three_nodes_one_blocked(lab, gang("g", 3, 3), horizon=40)
    assert (
        out.of(ev.SCHEDULED, "g-0") + out.of(ev.SCHEDULED, "g-1") + out.of(ev.SCHEDULED, "g-2")
        == []
    )
    cluster = out.engine.cluster
    assert [cluster.by_name[n].free_gpus for n in ("n1", "n2", "n3")] == [2, 2, 0]
    assert [out.pod(f"g-{i}").node for i in range(3)] == [None, None, None]
    assert {out.pod(f"g-{i}").state for i in range(3)} == {PodState.PENDING}


def test_min_count_below_members_binds_the_quorum_and_leaves_the_rest_pending(lab):
    """§5: `schedulable >= minCount` → bind; the unschedulable remainder is requeued and
    binds later by itself (the group already has its quorum)."""
    out = three_nodes_one_blocked(lab, gang("g", 3, 2))
    assert group_bindings(out, "g") == {"g-0": (1.0, "n1"), "g-1": (1.0, "n2"), "g-2": (50.0, "n3")}


def test_basic_scheduling_binds_members_one_by_one(lab):
    """§5: with the Basic policy the cycle does not apply minCount: each member binds as
    soon as it fits, even though only two of three (minCount 3) can run before t=50."""
    out = three_nodes_one_blocked(lab, gang("g", 3, 3, scheduling="basic"))
    assert group_bindings(out, "g") == {"g-0": (1.0, "n1"), "g-1": (1.0, "n2"), "g-2": (50.0, "n3")}


def test_members_that_fit_are_not_bound_while_the_rest_preempt(lab):
    """§5 + §4.0 (`pod` policy, workload-aware preemption off): g-0 fits n1 but g-1 needs
    n2, held by `low`. Only g-1 preempts (each member that did not fit preempts for
    itself); g-0 is not bound meanwhile, and both bind together when `low` has stopped
    (its 5 s stop time)."""
    out = lab.run(
        nodes=[("n1", 2), ("n2", 2)],
        classes=CLASSES,
        workloads=[
            {"name": "low", "gpus": 2, "priorityClassName": "lo"},
            {**gang("g", 2, 2, arrival=0), "priorityClassName": "hi"},
        ],
        initial=[("low", "n2", -10)],
    )
    assert out.decisions("g-0") == []
    assert out.decisions("g-1") == [(0.0, "n2", ["low-0"])]
    assert group_bindings(out, "g") == {"g-0": (5.0, "n1"), "g-1": (5.0, "n2")}


# =========================================================================== priority
def test_members_take_the_pod_group_priority_class(lab):
    """§1 / §5 (master: PodGroup priority for members): members naming no class get the
    group's `hi` (100), so the group preempts a `mid` (50) pod; the group's
    preemptionPolicy comes from that class too."""
    group = gang("g", 1, 1, arrival=0)
    group["podGroup"]["priorityClassName"] = "hi"
    out = lab.run(
        nodes=[("n1", 2)],
        classes=CLASSES,
        workloads=[{"name": "m", "gpus": 2, "priorityClassName": "mid"}, group],
        initial=[("m", "n1", -10)],
    )
    assert out.engine.by_name["g"].priority == 100
    assert out.pod("g-0").priority == 100
    assert out.decisions("g-0") == [(0.0, "n1", ["m-0"])]


@pytest.mark.parametrize(
    ("group_class", "first"),
    [
        ("hi-never", "group"),
        ("lo-never", "solo"),
        ("mid-never", "solo"),
    ],
    ids=["higher-group-first", "lower-group-after", "equal-priority-earlier-timestamp-first"],
)
def test_the_group_is_ordered_as_one_by_its_group_priority(lab, group_class, first):
    """§5: the queued PodGroup is ordered by the PodGroup priority (then timestamp, §2).
    `solo` (mid, 2 GPUs) arrives at t=1, the 2-member gang at t=2 (group class from
    `podGroup.priorityClassName`, members name none); everything is `Never`. When the
    4-GPU blocker ends at t=50 only one of them can have the 2 nodes' GPUs it needs."""
    group = gang("g", 2, 2, arrival=2)
    group["podGroup"]["priorityClassName"] = group_class
    out = lab.run(
        nodes=[("n1", 2), ("n2", 2)],
        classes=CLASSES,
        workloads=[
            blocker("blk", members=2),
            {"name": "solo", "gpus": 2, "arrival": 1, "priorityClassName": "mid-never"},
            group,
        ],
        initial=[("blk", "n1", 0), ("blk", "n2", 0)],
        horizon=60,
    )
    group_at = {t for t, _ in group_bindings(out, "g").values()}
    if first == "group":
        assert group_at == {50.0}
        assert out.scheduled("solo-0") is None
    else:
        assert out.scheduled("solo-0") is not None
        assert out.scheduled("solo-0")[0] == 50.0
        assert group_bindings(out, "g") == {}


# =========================================================================== replacements
def test_replacements_of_a_running_group_bind_individually_once_it_has_quorum(lab):
    """§5 (Permit: `scheduledPodsCount >= minCount` lets pods through; a partly running
    group schedules its remainder): g (4 members, minCount 2) runs on n1..n4; n3 and n4
    fail at t=5 and the Job recreates both members at once. Only n5 is free: with two
    members still running (the quorum), one replacement binds there by itself at t=5;
    the other waits."""
    out = lab.run(
        nodes=[("n1", 2), ("n2", 2), ("n3", 2), ("n4", 2), ("n5", 2)],
        classes=CLASSES,
        workloads=[
            {**gang("g", 4, 2, arrival=0), "priorityClassName": "lo", "controller": {"kind": "job"}}
        ],
        initial=[("g", f"n{i + 1}", -10, i) for i in range(4)],
        events=[{"at": 5, "type": "node-failure", "nodes": ["n3", "n4"]}],
        policy=NO_PREEMPTION,
        horizon=30,
    )
    replacements = {pod: where for pod, where in out.bindings().items() if "-r" in pod}
    assert list(replacements.values()) == [(5.0, "n5")]
    assert len([e for e in out.of(ev.CREATED) if e.workload == "g" and e.value == 1.0]) == 2


def test_replacements_below_quorum_wait_for_min_count(lab):
    """§5: the same group with minCount 4 has lost its quorum (2 of 4 running); the two
    replacements form a cycle that needs both, so neither binds on n5 alone."""
    out = lab.run(
        nodes=[("n1", 2), ("n2", 2), ("n3", 2), ("n4", 2), ("n5", 2)],
        classes=CLASSES,
        workloads=[
            {**gang("g", 4, 4, arrival=0), "priorityClassName": "lo", "controller": {"kind": "job"}}
        ],
        initial=[("g", f"n{i + 1}", -10, i) for i in range(4)],
        events=[{"at": 5, "type": "node-failure", "nodes": ["n3", "n4"]}],
        policy=NO_PREEMPTION,
        horizon=30,
    )
    assert {pod for pod in out.bindings() if "-r" in pod} == set()
    assert out.engine.cluster.by_name["n5"].free_gpus == 2


# =========================================================================== PreEnqueue
@pytest.mark.parametrize(
    ("min_count", "victims_below", "bound"),
    [
        (3, False, set()),
        (3, True, set()),
        (2, False, {"g-0", "g-1"}),
    ],
    ids=[
        "too-few-pods-exist-nothing-binds",
        "too-few-pods-exist-nobody-preempted",
        "quorum-of-existing-pods-binds-without-the-refused-one",
    ],
)
def test_only_pods_that_exist_are_scheduled_with_their_group(lab, min_count, victims_below, bound):
    """§5 Gang PreEnqueue: a pod is held until minCount pods of its group have been
    observed. A ResourceQuota (4 GPUs for `hi`) refuses g-2 (FailedCreate), so only g-0
    and g-1 exist: with minCount 3 nothing binds and nobody is preempted for the group;
    with minCount 2 the two existing pods bind and g-2 (which does not exist) does not."""
    workloads = [{**gang("g", 3, min_count, arrival=0), "priorityClassName": "hi"}]
    initial = []
    if victims_below:
        workloads.insert(0, {"name": "low", "members": 3, "gpus": 2, "priorityClassName": "lo"})
        initial = [("low", f"n{i + 1}", -10, i) for i in range(3)]
    doc = lab.doc(
        nodes=[("n1", 2), ("n2", 2), ("n3", 2)],
        classes=CLASSES,
        workloads=workloads,
        initial=initial,
        horizon=30,
        policy={"preemption": "pod"},
    )
    doc["resourceQuotas"] = [{"priorityClassName": "hi", "gpus": 4}]
    out = lab.run_doc(doc)
    assert [e.pod for e in out.of(ev.QUOTA_EXCEEDED)] == ["g-2"]
    assert set(group_bindings(out, "g")) == bound
    assert out.preempted() == []


# =========================================================================== spec errors
def spec_with_group(group: dict, member_class: str | None = None) -> dict:
    workload = {"name": "g", "members": 2, "podGroup": group}
    if member_class is not None:
        workload["priorityClassName"] = member_class
    return {
        "cluster": {"nodes": [{"name": "n1"}]},
        "priorityClasses": [{"name": "train", "value": 10}, {"name": "urgent", "value": 100}],
        "workloads": [workload],
    }


def test_disruption_mode_all_with_basic_scheduling_is_a_spec_error():
    """§5 (KEP-5710 / KMASTER v1beta1): `All` is not allowed with the Basic policy."""
    with pytest.raises(sc.SpecError, match=r"workloads\[0\]\.podGroup.*disruptionMode All"):
        sc.parse_spec(
            spec_with_group({"minCount": 2, "scheduling": "basic", "disruptionMode": "All"})
        )


@pytest.mark.parametrize("mode", ["Single", "All"])
def test_disruption_modes_are_allowed_with_gang_scheduling(mode):
    """§5: Single (the default) and All are both valid for a gang."""
    spec = sc.parse_spec(spec_with_group({"minCount": 2, "disruptionMode": mode}))
    assert spec.workloads[0].pod_group.disruption_mode == mode


def test_pod_group_class_disagreeing_with_the_members_class_names_both():
    """domain.md §3 "Member priorities must agree with the group's": the error names the
    field and both classes."""
    with pytest.raises(sc.SpecError) as info:
        sc.parse_spec(
            spec_with_group({"minCount": 2, "priorityClassName": "urgent"}, member_class="train")
        )
    assert [e["path"] for e in info.value.errors] == ["workloads[0].podGroup.priorityClassName"]
    message = info.value.errors[0]["message"]
    assert "'urgent'" in message
    assert "'train'" in message


def test_pod_group_class_agreeing_with_the_members_class_is_accepted():
    spec = sc.parse_spec(
        spec_with_group({"minCount": 2, "priorityClassName": "urgent"}, member_class="urgent")
    )
    assert spec.workloads[0].pod_group.priority_class_name == "urgent"
