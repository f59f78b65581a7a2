"""Fidelity of DefaultPreemption (kubernetes-preemption.md §3 nominated pods, §4.1
eligibility, §4.2 candidates, §4.3 victims per node, §4.4 node choice, §4.5 actuation).

Scenarios are built from a *layout*: for each node, the pods already running on it, as
``(name, class, gpus, startedAt[, extra spec fields])``; each pod is its own one-member
workload, so pod ``x`` is named ``x-0``. The preemptor is ``p`` (pod ``p-0``), arriving at
t=0 unless a test says otherwise. Where the random DryRunPreemption offset matters it is
pinned (``offset=``), as §4.2 says a simulator should allow.
"""

from __future__ import annotations

from types import SimpleNamespace
from typing import Any

import pytest

from scheduler_core import events as ev
from scheduler_core.plugins.default_preemption import Candidate, DefaultPreemption, pick_one_node
from scheduler_core.spec import Policy

INT32_MIN = -(2**31)
CLASSES: dict[str, int] = {
    "top": 1_000_000,
    "p200": 200,
    "p100": 100,
    "p50": 50,
    "p20": 20,
    "p15": 15,
    "p10": 10,
    "p5": 5,
    "p0": 0,
    "m5": -5,
    "m10": -10,
    "min32": INT32_MIN,
}
NEVER_CLASSES = [
    {"name": f"{name}-never", "value": value, "preemptionPolicy": "Never"}
    for name, value in CLASSES.items()
    if name.startswith("p")
]
ALL_CLASSES = [{"name": n, "value": v} for n, v in CLASSES.items()] + NEVER_CLASSES
PDB = {"pdb": {"minAvailable": 1}}
"""One member, minAvailable 1: disruptionsAllowed = 0, evicting it violates the budget."""


def scenario(
    layout: dict[str, list[tuple]],
    *,
    node_gpus: int = 2,
    preemptor: dict[str, Any] | None = None,
    extra: list[dict[str, Any]] = (),
) -> dict[str, Any]:
    """Keyword arguments for ``lab.run``: the layout's nodes and pods, plus ``p``."""
    workloads, initial = [], []
    for node, pods in layout.items():
        for name, cls, gpus, started_at, *more in pods:
            workloads.append(
                {"name": name, "gpus": gpus, "priorityClassName": cls, **(more[0] if more else {})}
            )
            initial.append((name, node, started_at))
    attacker = {"name": "p", "gpus": node_gpus, "priorityClassName": "p100", **(preemptor or {})}
    return {
        "nodes": [(name, node_gpus) for name in layout],
        "classes": ALL_CLASSES,
        "workloads": [*workloads, attacker, *extra],
        "initial": initial,
    }


def chosen(out) -> tuple[str, list[str]]:
    """(node, victims) of the preemptor's single decision."""
    decisions = out.decisions("p-0")
    assert len(decisions) == 1, decisions
    _, node, victims = decisions[0]
    return node, victims


# =========================================================================== §3 Filter
def test_lower_priority_nomination_is_ignored_and_its_space_taken(lab):
    """§3 (pass 1 adds only nominated pods of priority >= the pod's) and §4.5 last
    bullet: `m` (10) preempts `low` and is nominated to n1; `q` (50, Never) arrives at 5.
    When `low` is released at 10, `q` is popped first, ignores m's nomination, and binds
    on n1. `m` then has no candidate (q is higher), so its nomination is cleared."""
    out = lab.run(
        **scenario(
            {"n1": [("low", "p0", 2, -10, {"stopSeconds": 10})]},
            preemptor={"priorityClassName": "p10"},
            extra=[{"name": "q", "gpus": 2, "priorityClassName": "p50-never", "arrival": 5}],
        )
    )
    assert out.victims_of("p-0") == ["low-0"]
    assert out.scheduled("q-0") == (10.0, "n1")
    assert out.scheduled("p-0") is None
    assert out.pod("p-0").nominated is None


@pytest.mark.parametrize(
    ("q_class", "q_bound", "p_bound"),
    [
        ("p20-never", (6.0, "n1"), (30.0, "n1")),
        ("p10-never", (30.0, "n1"), (10.0, "n1")),
        ("p5-never", (30.0, "n1"), (10.0, "n1")),
    ],
    ids=[
        "higher-pod-ignores-the-nomination",
        "equal-nomination-counts",
        "higher-nomination-counts",
    ],
)
def test_nominated_pods_of_equal_or_higher_priority_count_in_filter(lab, q_class, q_bound, p_bound):
    """§3: `p` (10, 2 GPUs) preempts `low` on n1 (4 GPUs) and is nominated there; its 10 s
    backoff keeps it from binding when `f` frees 2 GPUs at t=5. At t=6 `q` (2 GPUs, Never)
    looks at n1: p's nomination is added when p's priority >= q's, so q does not fit;
    a higher q ignores it and binds at once. `low` takes its full 30 s grace (stops at 30)."""
    out = lab.run(
        policy={"podInitialBackoffSeconds": 10, "podMaxBackoffSeconds": 10},
        **scenario(
            {
                "n1": [
                    ("low", "p0", 2, -10, {"stopSeconds": 60}),
                    ("f", "top", 2, 0, {"durationSeconds": 5}),
                ]
            },
            node_gpus=4,
            preemptor={"priorityClassName": "p10", "gpus": 2},
            extra=[{"name": "q", "gpus": 2, "priorityClassName": q_class, "arrival": 6}],
        ),
    )
    assert out.victims_of("p-0") == ["low-0"]
    assert out.scheduled("q-0") == q_bound
    assert out.scheduled("p-0") == p_bound


def test_the_nominated_node_is_tried_first(lab):
    """§3 step 2: when the nominated node passes Filter it is used and no other node is
    evaluated. `p` is nominated to n1 (2 GPUs); a 10 s backoff keeps it waiting while n2
    (8 GPUs) frees 4 GPUs at t=5. At t=10 both fit and LeastAllocated would prefer n2,
    but p binds on its nominated n1."""
    kwargs = scenario(
        {
            "n1": [("low", "p0", 2, -10, {"stopSeconds": 10})],
            "n2": [("h1", "p200", 4, -10), ("h2", "p200", 4, -10, {"durationSeconds": 15})],
        }
    )
    kwargs["nodes"] = [("n1", 2), ("n2", 8)]
    out = lab.run(
        policy={
            "placement": "LeastAllocated",
            "podInitialBackoffSeconds": 10,
            "podMaxBackoffSeconds": 10,
        },
        **kwargs,
    )
    assert out.decisions("p-0") == [(0.0, "n1", ["low-0"])]
    assert out.scheduled("p-0") == (10.0, "n1")


# =========================================================================== §4.1
WAKER_NODE = {"name": "side", "gpus": 2, "cpu": 1}
"""Has 2 GPUs but too little CPU for the 4-CPU preemptor (UnschedulableAndUnresolvable)."""
WAKER = {"name": "waker", "gpus": 0, "cpu": 0.1, "priorityClassName": "top", "durationSeconds": 5}
"""Completes at t=5: a cluster event that makes the parked preemptor retry."""


def two_victim_nodes(**extra_doc):
    """n1 holds `young` (started -10, stops after 20 s); n2 holds `old` (started -100).
    `p` (100, 2 GPUs, 4 CPU) picks n1 at t=0 (§4.4 rule 5: the latest start)."""
    kwargs = scenario(
        {"n1": [("young", "p0", 2, -10, {"stopSeconds": 20})], "n2": [("old", "p0", 2, -100)]},
        preemptor={"cpu": 4},
        extra=[WAKER],
    )
    kwargs["nodes"].append(WAKER_NODE)
    kwargs["initial"].append(("waker", "side", 0))
    return {**kwargs, **extra_doc}


def test_pod_waits_while_its_victims_terminate_on_the_nominated_node(lab):
    """§4.1: retried at t=5 while `young` (a lower-priority victim with DisruptionTarget)
    still terminates on its nominated node, `p` is not eligible to preempt again: `old`
    on n2 is left alone and `p` binds on n1 when `young` stops at t=20."""
    out = lab.run(**two_victim_nodes())
    assert out.decisions("p-0") == [(0.0, "n1", ["young-0"])]
    assert out.victims_of("p-0") == ["young-0"]
    assert any(
        "terminating pod on the nominated node" in e.message
        for e in out.of(ev.FAILED_SCHEDULING, "p-0")
        if e.time == 5.0
    )
    assert out.scheduled("p-0") == (20.0, "n1")


def test_nominated_node_unresolvable_makes_the_pod_eligible_again(lab):
    """§4.1: n1 is drained (cordoned) at t=3; when `p` retries at t=5 its nominated node
    is UnschedulableAndUnresolvable, so it is eligible and preempts `old` on n2 (n1 is no
    longer a potential node). `old` stops after its 5 s, so `p` binds on n2 at 10."""
    out = lab.run(**two_victim_nodes(events=[{"at": 3, "type": "drain", "nodes": ["n1"]}]))
    assert out.decisions("p-0") == [(0.0, "n1", ["young-0"]), (5.0, "n2", ["old-0"])]
    assert out.scheduled("p-0") == (10.0, "n2")


@pytest.mark.parametrize(
    ("disruption", "second", "bound"),
    [
        ("drain", (20.0, "n2", ["old-0"]), (25.0, "n2")),
        ("node-failure", (3.0, "n2", ["old-0"]), (8.0, "n2")),
    ],
    ids=["victim-stops-on-a-drained-node", "nominated-node-fails"],
)
def test_victims_released_on_an_unschedulable_node_wake_the_preemptor(
    lab, disruption, second, bound
):
    """§2 + §4.1: `p` waits for `young` on n1; n1 is drained (cordoned) or fails at t=3.
    Deleting a scheduled pod is a relevant cluster event whatever its node (upstream
    NodeResourcesFit.isSchedulableAfterPodEvent: Queue), so p is retried when `young` is
    gone (20 after a drain; 3 when the node dies), finds its nominated node unresolvable,
    and preempts `old` on n2 at once; it binds 5 s later when old has stopped."""
    kwargs = scenario(
        {"n1": [("young", "p0", 2, -10, {"stopSeconds": 20})], "n2": [("old", "p0", 2, -100)]}
    )
    out = lab.run(events=[{"at": 3, "type": disruption, "nodes": ["n1"]}], **kwargs)
    assert out.decisions("p-0") == [(0.0, "n1", ["young-0"]), second]
    assert out.scheduled("p-0") == bound


def test_no_candidates_clears_the_nomination(lab):
    """§4.1 step 3: `p` is nominated to n1; `h` (200, Never) takes n1 when `low` stops at
    20 (p's lower nomination is ignored). Retried at 20, `p` finds no candidate (h is
    higher): PostFilterResult{NNN: ""} clears its nomination."""
    out = lab.run(
        horizon=25,
        **scenario(
            {"n1": [("low", "p0", 2, -10, {"stopSeconds": 20})]},
            extra=[{"name": "h", "gpus": 2, "priorityClassName": "p200-never", "arrival": 5}],
        ),
    )
    assert out.scheduled("h-0") == (20.0, "n1")
    assert [e.time for e in out.of(ev.NOT_HELPFUL, "p-0")] == [20.0]
    assert out.pod("p-0").nominated is None
    assert not out.engine.cluster.by_name["n1"].nominated


def test_never_pod_is_not_eligible_to_preempt(lab):
    """§4.1: preemptionPolicy=Never ⇒ "not eligible due to preemptionPolicy=Never."."""
    out = lab.run(
        **scenario({"n1": [("low", "p0", 2, -10)]}, preemptor={"priorityClassName": "p100-never"})
    )
    assert out.preempted() == []
    assert out.of(ev.FAILED_SCHEDULING, "p-0")[0].message.endswith(
        "not eligible due to preemptionPolicy=Never."
    )


# =========================================================================== §4.2
@pytest.mark.parametrize(
    ("nodes", "percentage", "absolute", "expected"),
    [
        (5000, 10, 100, 500),
        (50, 10, 100, 50),
        (1000, 10, 100, 100),
        (999, 10, 100, 100),
        (2000, 10, 100, 200),
        (7, 50, 1, 3),
        (7, 0, 3, 3),
        (3, 0, 5, 3),
        (10, 100, 0, 10),
        (1, 10, 100, 1),
    ],
    ids=[
        "doc-5000-nodes",
        "doc-50-nodes",
        "exactly-absolute",
        "floor-below-absolute",
        "percentage-above-absolute",
        "floor-of-3.5",
        "percentage-0",
        "clamped-to-n",
        "all-nodes",
        "single-node",
    ],
)
def test_num_candidates_is_percentage_clamped_between_absolute_and_n(
    nodes, percentage, absolute, expected
):
    """§4.2: numCandidates = clamp(floor(n * pct / 100), minCandidateNodesAbsolute, n)."""
    policy = Policy(
        min_candidate_nodes_percentage=percentage, min_candidate_nodes_absolute=absolute
    )
    assert DefaultPreemption(policy).num_candidates(nodes) == expected


@pytest.mark.parametrize(
    ("n1_extra", "preemptor", "helps"),
    [
        ({}, {}, True),
        ({"taints": [{"key": "gpu", "value": "reserved"}]}, {}, False),
        (
            {"taints": [{"key": "gpu", "value": "reserved"}]},
            {"tolerations": [{"key": "gpu", "operator": "Exists"}]},
            True,
        ),
        ({"labels": {"zone": "b"}}, {"nodeSelector": {"zone": "a"}}, False),
        ({"gpus": 1}, {}, False),
    ],
    ids=[
        "control",
        "untolerated-taint",
        "tolerated-taint",
        "node-selector-mismatch",
        "node-smaller-than-the-pod",
    ],
)
def test_unresolvable_nodes_are_never_candidates(lab, n1_extra, preemptor, helps):
    """§4.2: only nodes whose Filter status is exactly `Unschedulable` are potential
    nodes; a node failing a filter no eviction can change (taint, selector, a request
    above allocatable) is skipped even if it holds lower-priority pods (`low` tolerates
    everything). n2 holds only higher-priority pods."""
    gpus = n1_extra.get("gpus", 2)
    tolerate_all = {"tolerations": [{"operator": "Exists"}]}
    kwargs = scenario(
        {"n1": [("low", "p0", gpus, -10, tolerate_all)], "n2": [("high", "p200", 2, -10)]},
        preemptor=preemptor,
    )
    kwargs["nodes"] = [{"name": "n1", "gpus": 2, **n1_extra}, ("n2", 2)]
    out = lab.run(**kwargs)
    if helps:
        assert chosen(out) == ("n1", ["low-0"])
    else:
        assert out.preempted() == []
        assert out.time_of(ev.NOT_HELPFUL, "p-0") == 0.0


THREE_NODES = {
    "n0": [("v20", "p20", 2, -10)],
    "n1": [("v10", "p10", 2, -10)],
    "n2": [("v5", "p5", 2, -10)],
}


@pytest.mark.parametrize(
    ("absolute", "offset", "node"),
    [
        (1, 0, "n0"),
        (1, 2, "n2"),
        (2, 0, "n1"),
        (2, 1, "n2"),
        (2, 2, "n2"),
        (3, 0, "n2"),
        (3, 1, "n2"),
    ],
    ids=[
        "1-from-n0",
        "1-from-n2",
        "2-from-n0",
        "2-from-n1",
        "2-from-n2-wraps",
        "all-from-n0",
        "all-from-n1",
    ],
)
def test_dry_run_stops_after_num_candidates_from_the_offset(lab, absolute, offset, node):
    """§4.2: nodes are visited from `offset` (wrapping); with a non-violating candidate in
    hand the search stops once numCandidates candidates were found, and §4.4 rule 2 picks
    the lowest victim among those only."""
    out = lab.run(
        offset=offset,
        policy={"minCandidateNodesPercentage": 0, "minCandidateNodesAbsolute": absolute},
        **scenario(THREE_NODES),
    )
    assert chosen(out)[0] == node


def test_dry_run_looks_past_num_candidates_until_a_non_violating_node(lab):
    """§4.2 (upstream test "preemption looks past numCandidates until a non-PDB violating
    node is found"): numCandidates = 1, n0 and n1 only offer PDB-violating victims, so
    the scan goes on to n2; rule 1 then prefers n2 despite its higher-priority victim."""
    layout = {
        "n0": [("a", "p0", 2, -10, PDB)],
        "n1": [("b", "p0", 2, -10, PDB)],
        "n2": [("c", "p50", 2, -10)],
    }
    out = lab.run(
        offset=0,
        policy={"minCandidateNodesPercentage": 0, "minCandidateNodesAbsolute": 1},
        **scenario(layout),
    )
    assert chosen(out) == ("n2", ["c-0"])


def test_violating_candidates_are_capped_at_num_candidates(lab):
    """§4.2: each list holds at most numCandidates items (add() drops the rest). All
    three nodes violate, so all are scanned, but only n0's candidate is kept: n0 wins
    although n1 and n2 offer lower-priority victims."""
    layout = {
        "n0": [("a", "p10", 2, -10, PDB)],
        "n1": [("b", "p0", 2, -10, PDB)],
        "n2": [("c", "p0", 2, -10, PDB)],
    }
    out = lab.run(
        offset=0,
        policy={"minCandidateNodesPercentage": 0, "minCandidateNodesAbsolute": 1},
        **scenario(layout),
    )
    assert chosen(out) == ("n0", ["a-0"])


# =========================================================================== §4.3
@pytest.mark.parametrize(
    ("holders", "victims"),
    [
        ((("a", "p100"), ("b", "p0")), None),
        ((("a", "p100"), ("b", "p100")), None),
        ((("a", "p50"), ("b", "p0")), ["a-0", "b-0"]),
        ((("a", "p99"), ("b", "p0")), ["a-0", "b-0"]),
    ],
    ids=["equal-priority-is-not-a-victim", "all-equal", "both-lower", "one-below"],
)
def test_only_strictly_lower_priority_pods_are_victims(lab, holders, victims):
    """§4.3: potential victims have priority(p) < priority(pod), strictly. With an equal
    pod left, removing the lower one frees 1 GPU of the 2 needed: not helpful."""
    classes = [*ALL_CLASSES, {"name": "p99", "value": 99}]
    kwargs = scenario({"n1": [(name, cls, 1, -10) for name, cls in holders]})
    out = lab.run(**{**kwargs, "classes": classes})
    if victims is None:
        assert out.preempted() == []
        assert out.time_of(ev.NOT_HELPFUL, "p-0") == 0.0
    else:
        assert chosen(out) == ("n1", victims)


@pytest.mark.parametrize(
    ("pods", "need", "victims"),
    [
        (
            [
                ("a", "p10", 1, -100),
                ("b", "p10", 1, -50),
                ("c", "p10", 1, -10),
                ("d", "p10", 1, -1),
            ],
            2,
            ["c-0", "d-0"],
        ),
        (
            [("a", "p5", 1, -100), ("b", "p20", 1, -1), ("c", "p10", 1, -50), ("d", "p0", 1, -200)],
            2,
            ["a-0", "d-0"],
        ),
        (
            [("a", "p10", 1, -100), ("b", "p10", 1, -50), ("c", "p5", 1, -10), ("d", "p20", 1, -1)],
            2,
            ["b-0", "c-0"],
        ),
        ([("x", "p10", 2, -100), ("y", "p5", 1, -50), ("z", "p5", 1, -10)], 2, ["y-0", "z-0"]),
        ([("x", "p10", 3, -100), ("y", "p5", 1, -50)], 2, ["x-0"]),
        (
            [("a", "p10", 1, -1), ("b", "p10", 1, -2), ("c", "p10", 1, -3), ("d", "p10", 1, -4)],
            3,
            ["c-0", "b-0", "a-0"],
        ),
    ],
    ids=[
        "oldest-kept-first",
        "highest-priority-kept-first",
        "priority-then-age",
        "greedy-keeps-the-big-high-pod",
        "a-high-pod-goes-when-its-size-forces-it",
        "three-youngest-go-in-importance-order",
    ],
)
def test_reprieve_keeps_highest_priority_then_oldest_pod_first(lab, pods, need, victims):
    """§4.3: all lower pods are removed, then added back one by one in MoreImportantPod
    order (higher priority first; equal priority, earlier start first); a pod stays only
    if the preemptor still fits. Victims are listed most important first."""
    out = lab.run(**scenario({"n1": pods}, node_gpus=4, preemptor={"gpus": need}))
    assert chosen(out) == ("n1", victims)


DEPLOYMENT = {"kind": "deployment"}
"""maxUnavailable is relative to the controller's scale (disruption controller
getExpectedScale), so workloads with it are Deployments here (scale = members)."""


@pytest.mark.parametrize(
    ("pdb", "victim"),
    [
        (None, "x-0"),
        ({"minAvailable": 1}, "y-0"),
        ({"maxUnavailable": 0}, "y-0"),
        ({"maxUnavailable": 1}, "x-0"),
        ({"minAvailable": 0}, "x-0"),
    ],
    ids=[
        "no-pdb",
        "min-available-1-violates",
        "max-unavailable-0-violates",
        "max-unavailable-1-allows",
        "min-available-0-allows",
    ],
)
def test_pdb_violating_pods_are_reprieved_first(lab, pdb, victim):
    """§4.3: `x` (5) is less important than `y` (10) and would normally be the victim;
    when evicting x would violate its PDB it is reprieved first, and y goes instead."""
    x_extra = {"pdb": pdb, "controller": DEPLOYMENT} if pdb else {}
    out = lab.run(
        **scenario(
            {"n1": [("x", "p5", 1, -100, x_extra), ("y", "p10", 1, -50)]}, preemptor={"gpus": 1}
        )
    )
    assert chosen(out) == ("n1", [victim])


@pytest.mark.parametrize("controller", [{"kind": "none"}, {"kind": "job"}], ids=["bare-pod", "job"])
def test_max_unavailable_without_a_scalable_controller_allows_no_disruption(lab, controller):
    """§4.3 input `pdb.status.disruptionsAllowed`, as the disruption controller computes
    it (the design doc is silent on this step): with maxUnavailable, expectedCount is the
    sum of the pods' *scalable* controllers' replicas; pods without one add nothing and
    `expectedCount <= 0 ⇒ disruptionsAllowed = 0`. So x is PDB-violating and reprieved."""
    x_extra = {"pdb": {"maxUnavailable": 1}, "controller": controller}
    out = lab.run(
        **scenario(
            {"n1": [("x", "p5", 1, -100, x_extra), ("y", "p10", 1, -50)]}, preemptor={"gpus": 1}
        )
    )
    assert chosen(out) == ("n1", ["y-0"])


@pytest.mark.parametrize(
    ("pdb", "victim"),
    [
        (None, "w-1"),
        ({"maxUnavailable": 1}, "w-0"),
    ],
    ids=["no-pdb-youngest-goes", "budget-consumed-by-the-oldest"],
)
def test_pdb_budget_is_consumed_in_importance_order(lab, pdb, victim):
    """§4.3 filterPodsWithPDBViolation: w-0 (older) and w-1 of a 2-replica Deployment
    share one PDB with disruptionsAllowed = 1. In sorted order w-0 takes the budget and
    w-1 becomes "violating", so w-1 is reprieved first and the *older* w-0 is the victim."""
    workload = {
        "name": "w",
        "members": 2,
        "gpus": 1,
        "priorityClassName": "p5",
        "controller": DEPLOYMENT,
    }
    if pdb:
        workload["pdb"] = pdb
    kwargs = scenario({"n1": []}, preemptor={"gpus": 1})
    kwargs["workloads"].insert(0, workload)
    kwargs["initial"] += [("w", "n1", -100, 0), ("w", "n1", -10, 1)]
    out = lab.run(**kwargs)
    assert chosen(out) == ("n1", [victim])


def test_multi_gpu_pod_needs_its_victims_on_one_node(lab):
    """§4.3 / domain §4: 2 lower-priority GPUs exist, but one per node; each node keeps a
    higher pod, so no single node can fit the 2-GPU preemptor: "not helpful"."""
    layout = {
        "n1": [("h1", "p200", 1, -10), ("l1", "p0", 1, -10)],
        "n2": [("h2", "p200", 1, -10), ("l2", "p0", 1, -10)],
    }
    out = lab.run(**scenario(layout))
    assert out.preempted() == []
    assert out.time_of(ev.NOT_HELPFUL, "p-0") == 0.0
    # §4.1 step 3: each node SelectVictimsOnNode tried keeps its Filter status (FitError,
    # upstream preemption.go): with every victim gone it still lacks a GPU.
    assert out.of(ev.FAILED_SCHEDULING, "p-0")[0].message == (
        "0/2 nodes are available: 2 Insufficient nvidia.com/gpu. preemption: 0/2 nodes are "
        "available: 2 Insufficient nvidia.com/gpu."
    )


@pytest.mark.parametrize(
    "blocker",
    [
        {"gpus": 0, "cpu": 8},
        {"gpus": 0, "memory": 1024},
    ],
    ids=["cpu", "memory"],
)
def test_a_gpu_pod_may_preempt_a_pod_that_holds_no_gpu(lab, blocker):
    """§4.3: potential victims are *all* lower-priority pods, whatever resource blocks
    the preemptor ("Filters" = every resource): a CPU- or memory-only pod is a victim."""
    kwargs = scenario(
        {"n1": [("cpuhog", "p0", 0, -10, blocker)]}, preemptor={"gpus": 1, "cpu": 4, "memory": 8}
    )
    kwargs["nodes"] = [{"name": "n1", "gpus": 8, "cpu": 8, "memory": 1024}]
    out = lab.run(**kwargs)
    assert chosen(out) == ("n1", ["cpuhog-0"])


def test_a_full_pod_count_is_resolved_by_preemption(lab):
    """§4.3: the pod count is a Filter too (pod count + 1 <= allocatable pods)."""
    kwargs = scenario({"n1": [("tiny", "p0", 0, -10)]}, preemptor={"gpus": 1})
    kwargs["nodes"] = [{"name": "n1", "gpus": 8, "maxPods": 1}]
    out = lab.run(**kwargs)
    assert chosen(out) == ("n1", ["tiny-0"])


# =========================================================================== §4.4
RULE_CASES = [
    # (id, n1 pods, n2 pods, offset, expected node)
    ("1-fewest-pdb-violations", [("a", "p0", 2, -10, PDB)], [("b", "p50", 2, -100)], 0, "n2"),
    (
        "2-lowest-highest-victim-priority",
        [("a", "p20", 1, -10), ("b", "p0", 1, -10)],
        [("c", "p15", 1, -100), ("d", "p10", 1, -100)],
        0,
        "n2",
    ),
    (
        "3-smallest-priority-sum",
        [("a", "p10", 1, -1), ("b", "p10", 1, -1)],
        [("c", "p10", 1, -100), ("d", "p5", 1, -100)],
        0,
        "n2",
    ),
    (
        "3-offset-2^31-favours-fewer-negative-victims",
        [("a", "m5", 2, -100)],
        [("c", "m5", 1, -1), ("d", "m10", 1, -1)],
        0,
        "n1",
    ),
    (
        "4-fewest-victims-when-sums-tie",
        [("a", "p0", 2, -100)],
        [("c", "p0", 1, -1), ("d", "min32", 1, -1)],
        0,
        "n1",
    ),
    ("5-latest-start", [("a", "p10", 2, -100)], [("b", "p10", 2, -10)], 0, "n2"),
    (
        "5-latest-start-among-top-priority-victims-only",
        [("x", "p10", 1, -50), ("y", "p5", 1, -1)],
        [("z", "p10", 1, -20), ("w", "p5", 1, -200)],
        0,
        "n2",
    ),
    ("6-first-candidate-offset-0", [("a", "p10", 2, -10)], [("b", "p10", 2, -10)], 0, "n1"),
    ("6-first-candidate-offset-1", [("a", "p10", 2, -10)], [("b", "p10", 2, -10)], 1, "n2"),
]


@pytest.mark.parametrize(
    ("n1", "n2", "offset", "node"), [c[1:] for c in RULE_CASES], ids=[c[0] for c in RULE_CASES]
)
def test_pick_one_node_applies_the_six_rules_in_order(lab, n1, n2, offset, node):
    """§4.4 pickOneNodeForPreemption: each case is decided by the rule in its id, and the
    next rule alone would pick the other node (so skipping or reordering rules fails)."""
    out = lab.run(offset=offset, **scenario({"n1": n1, "n2": n2}))
    assert chosen(out)[0] == node


def victim(priority: int, start: float) -> SimpleNamespace:
    return SimpleNamespace(priority=priority, bound_at=start)


def candidate(name: str, victims: list[tuple[int, float]], violations: int = 0) -> Candidate:
    """Victims must be given most important first, as §4.3 returns them."""
    return Candidate(SimpleNamespace(name=name), [victim(*v) for v in victims], violations)


PICK_CASES = [
    ("1-pdb-beats-everything", [("a", [(0, 0)], 1), ("b", [(90, 0), (90, 0)], 0)], "b"),
    ("1-fewer-violations", [("a", [(0, 0)], 2), ("b", [(0, 0)], 1)], "b"),
    ("2-top-victim", [("a", [(20, 0)], 0), ("b", [(10, 0), (10, 0), (10, 0)], 0)], "b"),
    ("3-sum", [("a", [(10, 0), (10, 5)], 0), ("b", [(10, 0), (5, 0)], 0)], "b"),
    ("3-offset-makes-count-matter", [("a", [(-5, 0), (-10, 0)], 0), ("b", [(-5, 0)], 0)], "b"),
    (
        "4-int32-min-victim-adds-nothing-to-the-sum",
        [("a", [(1_000_000_000, 0)], 0), ("b", [(1_000_000_000, 0), (INT32_MIN, 0)], 0)],
        "a",
    ),
    ("4-count", [("a", [(0, 0), (INT32_MIN, 0)], 0), ("b", [(0, 0)], 0)], "b"),
    (
        "5-latest-earliest-top-start",
        [("a", [(10, -50), (5, -1)], 0), ("b", [(10, -20), (5, -200)], 0)],
        "b",
    ),
    (
        "5-earliest-among-several-tops",
        [("a", [(10, -30), (10, -5)], 0), ("b", [(10, -25), (10, -20)], 0)],
        "b",
    ),
    ("6-first-of-ties", [("a", [(10, -5)], 0), ("b", [(10, -5)], 0), ("c", [(10, -5)], 0)], "a"),
    (
        "6-first-of-the-remaining",
        [("a", [(20, -5)], 0), ("b", [(10, -5)], 0), ("c", [(10, -5)], 0)],
        "b",
    ),
]


@pytest.mark.parametrize(
    ("candidates", "expected"), [c[1:] for c in PICK_CASES], ids=[c[0] for c in PICK_CASES]
)
def test_pick_one_node_rules_between_candidates(candidates, expected):
    """§4.4, unit level: the six score functions in order, each keeping the maximum."""
    picked = pick_one_node([candidate(*c) for c in candidates])
    assert picked.node.name == expected


# =========================================================================== §4.5
@pytest.mark.parametrize(
    ("stops", "grace", "released", "bound_at"),
    [
        ((7,), 30, [7.0], 7.0),
        ((50,), 20, [20.0], 20.0),
        ((3, 8), 30, [3.0, 8.0], 8.0),
        ((3, 45), 30, [3.0, 30.0], 30.0),
    ],
    ids=[
        "stops-before-grace",
        "capped-at-grace",
        "waits-for-the-last-victim",
        "last-victim-capped-at-grace",
    ],
)
def test_capacity_frees_only_when_each_victim_stops(lab, stops, grace, released, bound_at):
    """§4.5: victims are deleted gracefully; each releases its GPU when it stops, at
    min(stopSeconds, terminationGracePeriodSeconds); the preemptor binds on the nominated
    node once the last victim needed is gone (not at the decision)."""
    pods = [
        (f"v{i}", "p0", 1, -10 - i, {"stopSeconds": s, "terminationGracePeriodSeconds": grace})
        for i, s in enumerate(stops)
    ]
    out = lab.run(**scenario({"n1": pods}, node_gpus=len(stops)))
    assert sorted(e.time for e in out.of(ev.RELEASED)) == released
    assert out.scheduled("p-0") == (bound_at, "n1")


@pytest.mark.parametrize(
    "victim_spec",
    [
        {"stopSeconds": 0},
        {"terminationGracePeriodSeconds": 0},
    ],
    ids=["stop-0", "grace-0"],
)
def test_victim_that_stops_at_once_frees_capacity_at_once(lab, victim_spec):
    """§2/§4.5: the victim's deletion is a cluster event for the preemptor (upstream:
    async preemption deletes after the cycle, and events seen while a pod is in flight
    requeue it). Preempting at t=0.5, `p` retries when its 1 s backoff ends (t=1)."""
    out = lab.run(
        **scenario({"n1": [("low", "p0", 2, -10, victim_spec)]}, preemptor={"arrival": 0.5})
    )
    assert out.time_of(ev.RELEASED, "low-0") == 0.5
    assert out.scheduled("p-0") == (1.0, "n1")


def lower_and_higher_nominations(m_class: str):
    """n1 (4 GPUs) holds l1..l4 (p0, 1 GPU, started -40..-10, stop 20 s). `m` (1 GPU)
    preempts the youngest, l4, at t=0 and is nominated to n1. At t=1 `p` (100, 1 GPU)
    preempts on n1 too."""
    pods = [(f"l{i}", "p0", 1, -50 + 10 * i, {"stopSeconds": 20}) for i in range(1, 5)]
    return scenario(
        {"n1": pods},
        node_gpus=4,
        preemptor={"gpus": 1, "arrival": 1},
        extra=[{"name": "m", "gpus": 1, "priorityClassName": m_class}],
    )


def test_lower_priority_nominations_on_the_chosen_node_are_cleared(lab):
    """§4.5: when `p` (100) preempts on n1 at t=1 (victims [l4], already terminating, so
    nothing new is killed), `m` (50, nominated to n1) loses its nomination and goes back
    to activeQ. Retried at once with p's nomination now counting against it (§3), m needs
    2 GPUs on n1 and preempts l3 as well: a second decision and nomination. p binds when
    l4 stops (20). m, retried then in vain (3rd failure: backoff 4 s ⇒ 24), binds at 24
    although l3 stopped at 21."""
    out = lab.run(**lower_and_higher_nominations("p50"))
    assert out.decisions("p-0") == [(1.0, "n1", ["l4-0"])]
    assert out.victims_of("p-0") == []
    assert out.decisions("m-0") == [(0.0, "n1", ["l4-0"]), (1.0, "n1", ["l3-0", "l4-0"])]
    assert out.victims_of("m-0") == ["l4-0", "l3-0"]
    assert [e.time for e in out.of(ev.NOMINATED, "m-0")] == [0.0, 1.0]
    assert out.scheduled("p-0") == (20.0, "n1")
    assert out.scheduled("m-0") == (24.0, "n1")


@pytest.mark.parametrize(
    ("m_class", "m_bound"), [("p100", 22.0), ("p200", 20.0)], ids=["equal", "higher"]
)
def test_equal_or_higher_nominations_on_the_chosen_node_are_kept(lab, m_class, m_bound):
    """§4.5: `m` (>= 100) keeps its nomination when `p` preempts on n1 at t=1, and is
    never re-nominated. Because m's nomination counts in p's Filter (§3), p needs 2 GPUs
    there: l3 and l4 (l4 already terminating, skipped). When l4 stops at 20 a higher m
    binds (p does not count against it); an equal m and p count against each other, fail
    at 20 (2nd failure: backoff 2 s) and bind at 22, after l3 stopped at 21."""
    out = lab.run(**lower_and_higher_nominations(m_class))
    assert out.decisions("p-0") == [(1.0, "n1", ["l3-0", "l4-0"])]
    assert out.victims_of("p-0") == ["l3-0"]
    assert out.decisions("m-0") == [(0.0, "n1", ["l4-0"])]
    assert [e.time for e in out.of(ev.NOMINATED, "m-0")] == [0.0]
    assert out.scheduled("m-0") == (m_bound, "n1")
    assert out.scheduled("p-0") == (22.0, "n1")


def test_victims_already_terminating_are_not_preempted_twice(lab):
    """§4.5: "victims that already have deletionTimestamp are skipped": l4 gets exactly
    one Preempted event although two decisions listed it."""
    out = lab.run(**lower_and_higher_nominations("p100"))
    assert [e.related for e in out.of(ev.PREEMPTED, "l4-0")] == ["m-0"]
    assert out.time_of(ev.RELEASED, "l4-0") == 20.0


def test_pdbs_are_best_effort(lab):
    """§4.5: the scheduler prefers not to violate PDBs but deletes protected pods if it
    must (DELETE, not the Eviction API): the only victim violates its budget."""
    out = lab.run(**scenario({"n1": [("guarded", "p0", 2, -10, PDB)]}))
    assert chosen(out) == ("n1", ["guarded-0"])
    assert out.scheduled("p-0") == (5.0, "n1")


def test_the_preemptor_may_bind_elsewhere_if_another_node_frees_first(lab):
    """§4.5 last bullet: after preemption the preemptor is not guaranteed the node. `p`
    is nominated to n1 (victim stopping until 20); `h` on n2 completes at 5, so p binds
    on n2 at 5. The victim on n1 is not spared: it still stops at 20."""
    out = lab.run(
        **scenario(
            {
                "n1": [("low", "p0", 2, -10, {"stopSeconds": 20})],
                "n2": [("h", "p200", 2, -10, {"durationSeconds": 15})],
            }
        )
    )
    assert out.decisions("p-0") == [(0.0, "n1", ["low-0"])]
    assert out.scheduled("p-0") == (5.0, "n2")
    assert out.time_of(ev.RELEASED, "low-0") == 20.0
    assert out.pod("p-0").nominated is None
