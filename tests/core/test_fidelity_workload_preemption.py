"""Fidelity of workload-aware preemption (kubernetes-preemption.md §6, KEP-5710, master
behaviour): victim units (§6.1), moreImportantVictim (§6.2) and the group algorithm with
its fixed placement, PDB split, nomination and "ongoing preemption" rule (§6.3).

Every scenario runs `policy.preemption: workload-aware`. Pods are placed with
``initialState``; a unit is named after its workload (pod ``x-0``, ``x-1``...). The
preemptor is a gang ``p`` (``podGroup.minCount`` = its members) unless a test says it is
a single pod. The victims of a decision are read from the VictimsSelected event of the
preemptor's first member.
"""

from __future__ import annotations

import pytest

from scheduler_core import events as ev

CLASSES = [
    {"name": "top", "value": 1_000_000},
    {"name": "hi", "value": 100},
    {"name": "p10", "value": 10},
    {"name": "p5", "value": 5},
    {"name": "lo", "value": 0},
    {"name": "top-never", "value": 1_000_000, "preemptionPolicy": "Never"},
    {"name": "hi-never", "value": 100, "preemptionPolicy": "Never"},
]
WAP = {"preemption": "workload-aware"}


def pod(name: str, cls: str, gpus: int = 2, **extra) -> dict:
    """A plain pod (a one-member workload without a PodGroup)."""
    return {"name": name, "gpus": gpus, "priorityClassName": cls, **extra}


def group(name: str, cls: str, members: int, gpus: int, mode: str = "Single", **extra) -> dict:
    return {
        "name": name,
        "members": members,
        "gpus": gpus,
        "priorityClassName": cls,
        "podGroup": {"minCount": members, "disruptionMode": mode},
        **extra,
    }


def preemptor(members: int = 1, gpus: int = 2, cls: str = "hi", **extra) -> dict:
    return group("p", cls, members, gpus, arrival=0, **extra)


def victims(out, lead: str = "p-0") -> list[str]:
    """The victims of ``lead``'s single decision, as listed."""
    decisions = out.decisions(lead)
    assert len(decisions) == 1, decisions
    return decisions[0][2]


# =========================================================================== §6.1 units
@pytest.mark.parametrize(
    ("mode", "expected"),
    [
        ("All", ["v-0", "v-1"]),
        ("Single", ["v-0"]),
    ],
    ids=["all-mode-group-is-one-unit-across-nodes", "single-mode-members-are-own-units"],
)
def test_an_all_mode_group_is_evicted_whole_across_nodes(lab, mode, expected):
    """§6.1: the scheduled pods of a disruptionMode All group, on every node, are one
    unit; one 2-GPU preemptor that needs only n1 still evicts v-1 on n2 (§6.3: "a
    mode-All group is never partly preempted, even if one pod would be enough")."""
    out = lab.run(
        nodes=[("n1", 2), ("n2", 2)],
        classes=CLASSES,
        policy=WAP,
        horizon=30,
        workloads=[group("v", "lo", 2, 2, mode), preemptor()],
        initial=[("v", "n1", -10, 0), ("v", "n2", -10, 1)],
    )
    assert victims(out) == expected
    assert sorted((e.pod, e.node) for e in out.of(ev.PREEMPTED)) == [
        (v, f"n{int(v[-1]) + 1}") for v in expected
    ]


@pytest.mark.parametrize(
    ("mode", "q_class", "expected"),
    [
        ("All", "lo", {"q-0"}),
        ("All", "p5", {"v-0", "v-1"}),
        ("Single", "p5", {"v-0"}),
    ],
    ids=[
        "group-unit-outranks-the-plain-pod",
        "all-group-goes-whole-for-a-single-pod",
        "single-mode-member-goes-alone",
    ],
)
def test_a_single_pod_preemptor_takes_an_all_group_whole_or_not_at_all(
    lab, mode, q_class, expected
):
    """§6 intro / §6.3 last bullet (KEP-5710 cases 2 and 4): a *single pod* preemptor
    (`p`, no PodGroup) facing a mode-All group takes it whole or not at all. n1 (4 GPUs)
    holds v-0 (of group v, `lo`) and the plain pod `q`; v-1 runs on n2. If q is kept
    (higher priority), v goes whole, v-1 on n2 included."""
    out = lab.run(
        nodes=[{"name": "n1", "gpus": 4, "labels": {"pool": "a"}}, ("n2", 2)],
        classes=CLASSES,
        policy=WAP,
        horizon=30,
        workloads=[
            group("v", "lo", 2, 2, mode),
            pod("q", q_class),
            pod("p", "hi", nodeSelector={"pool": "a"}),
        ],
        initial=[("v", "n1", -10, 0), ("v", "n2", -10, 1), ("q", "n1", -5)],
    )
    assert set(victims(out)) == expected
    assert {e.pod for e in out.of(ev.PREEMPTED)} == expected


@pytest.mark.parametrize(
    ("holders", "expected"),
    [
        ([("a", "hi"), ("b", "lo")], None),
        ([("a", "hi"), ("b", "hi")], None),
        ([("a", "p10"), ("b", "lo")], ["a-0", "b-0"]),
    ],
    ids=["equal-unit-is-not-a-victim", "all-equal", "both-lower"],
)
def test_only_strictly_lower_priority_units_are_victims(lab, holders, expected):
    """§6.3: potential units have priority < the preemptor's, strictly. The 4-GPU
    preemptor cannot fit n1 while an equal-priority unit stays there."""
    out = lab.run(
        nodes=[("n1", 4)],
        classes=CLASSES,
        policy=WAP,
        horizon=30,
        workloads=[*(pod(n, c) for n, c in holders), preemptor(gpus=4)],
        initial=[(n, "n1", -10) for n, _ in holders],
    )
    if expected is None:
        assert out.preempted() == []
        assert out.scheduled("p-0") is None
    else:
        assert victims(out) == expected


def test_no_lower_units_means_no_preemption_victims_found(lab):
    """§6.3: no unit below the preemptor → UnschedulableAndUnresolvable "No preemption
    victims found for incoming preemptor"."""
    out = lab.run(
        nodes=[("n1", 2)],
        classes=CLASSES,
        policy=WAP,
        horizon=30,
        workloads=[pod("a", "hi"), preemptor()],
        initial=[("a", "n1", -10)],
    )
    assert out.preempted() == []
    assert out.of(ev.FAILED_SCHEDULING, "p-0")[0].message.endswith(
        "No preemption victims found for incoming preemptor"
    )


def test_a_never_group_evicts_nobody(lab):
    """§6.3: the group's preemptionPolicy (KMASTER: the PodGroup's, from its class) Never
    → "not eligible due to preemptionPolicy=Never."; it still waits in the queue."""
    out = lab.run(
        nodes=[("n1", 2)],
        classes=CLASSES,
        policy=WAP,
        horizon=30,
        workloads=[pod("a", "lo"), preemptor(cls="hi-never")],
        initial=[("a", "n1", -10)],
    )
    assert out.preempted() == []
    assert out.of(ev.FAILED_SCHEDULING, "p-0")[0].message.endswith(
        "not eligible due to preemptionPolicy=Never."
    )


# =========================================================================== §6.2 order
def unit(name: str, kind: str, cls: str, started: float) -> tuple[dict, list[tuple]]:
    """A 2-GPU unit on n1: a plain pod, a one-member Single-mode group, or an All-mode
    group of ``kind`` = "all-N" (N pods of 2/N GPUs)."""
    if kind == "pod":
        return pod(name, cls), [(name, "n1", started)]
    if kind == "single":
        return group(name, cls, 1, 2), [(name, "n1", started)]
    size = int(kind.split("-")[1])
    return (
        group(name, cls, size, 2 // size, "All"),
        [(name, "n1", started, i) for i in range(size)],
    )


@pytest.mark.parametrize(
    ("a", "b"),
    [
        (("pod", "p10", -10), ("pod", "p5", -100)),
        (("pod", "p10", -10), ("all-2", "p5", -100)),
        (("single", "p5", -10), ("pod", "p5", -100)),
        (("all-2", "p5", -10), ("pod", "p5", -100)),
        (("pod", "p5", -100), ("pod", "p5", -10)),
        (("all-2", "p5", -10), ("all-1", "p5", -100)),
        (("all-2", "p5", -10), ("single", "p5", -100)),
        (("all-2", "p5", -100), ("all-2", "p5", -10)),
        (("single", "p5", -100), ("single", "p5", -10)),
    ],
    ids=[
        "1-higher-priority-kept",
        "1-priority-before-group-rule",
        "2-single-mode-member-over-plain-pod",
        "2-group-over-plain-pod",
        "3-plain-pods-oldest-kept",
        "4-more-pods-kept-despite-age",
        "4-all-group-over-one-member-unit",
        "5-equal-size-oldest-kept",
        "5-one-member-units-oldest-kept",
    ],
)
def test_reprieve_follows_more_important_victim(lab, a, b):
    """§6.2 moreImportantVictim, rules 1-5: n1 (4 GPUs) holds two 2-GPU units and the
    2-GPU preemptor needs one of them gone. Units are reprieved most important first, so
    `a` (the more important) stays and `b` is the victim, whole."""
    spec_a, init_a = unit("a", *a)
    spec_b, init_b = unit("b", *b)
    out = lab.run(
        nodes=[("n1", 4)],
        classes=CLASSES,
        policy=WAP,
        horizon=30,
        workloads=[spec_a, spec_b, preemptor()],
        initial=[*init_a, *init_b],
    )
    assert sorted(victims(out)) == sorted(f"b-{i[3] if len(i) > 3 else 0}" for i in init_b)


@pytest.mark.parametrize(
    ("pdb", "expected"),
    [
        (None, ["a-0", "a-1"]),
        ({"minAvailable": 0}, ["a-0", "a-1"]),
        ({"minAvailable": 1}, ["b-0"]),
        ({"minAvailable": 2}, ["b-0"]),
    ],
    ids=[
        "no-pdb",
        "budget-covers-both-pods",
        "one-pod-over-budget-makes-the-unit-violating",
        "no-budget",
    ],
)
def test_pdb_violating_units_are_reprieved_first(lab, pdb, expected):
    """§6.3 filterVictimsWithPDBViolation: budgets are consumed pod by pod across the
    unit, and a unit is violating if ANY of its pods is; violating units are reprieved
    first. `a` (All group of 2, `lo`) is less important than the plain pod `b` (p5)."""
    a = group("a", "lo", 2, 1, "All", controller={"kind": "deployment"})
    if pdb is not None:
        a["pdb"] = pdb
    out = lab.run(
        nodes=[("n1", 4)],
        classes=CLASSES,
        policy=WAP,
        horizon=30,
        workloads=[a, pod("b", "p5"), preemptor()],
        initial=[("a", "n1", -10, 0), ("a", "n1", -10, 1), ("b", "n1", -10)],
    )
    assert victims(out) == expected


# =========================================================================== §6.3
@pytest.mark.parametrize(
    ("placement", "node", "expected"),
    [
        ("MostAllocated", "n1", ["a-0"]),
        ("LeastAllocated", "n2", ["b-0"]),
    ],
    ids=["packed-on-n1-evicts-the-more-important-unit", "spread-on-n2"],
)
def test_reprieve_checks_the_placement_fixed_by_the_first_run(lab, placement, node, expected):
    """§6.3 KMASTER: the group is placed once, with every potential victim gone, and the
    reprieve only checks that exact assignment. n1 (4 GPUs) holds `h` (top) and `a`
    (p10); n2 (4 GPUs) holds `b` and the older `c` (both p5). With every lower unit
    removed, n1 has 2 GPUs free and n2 has 4, so bin-packing places p-0 on n1: `a`, the
    most important unit, cannot be added back there and is evicted, while b and c stay
    (K136, which re-runs the scheduling function after each add-back, would have moved
    p-0 to n2 and evicted b). Spreading places p-0 on n2: `a` stays, the older `c` is
    reprieved before `b`, and b goes."""
    out = lab.run(
        nodes=[("n1", 4), ("n2", 4)],
        classes=CLASSES,
        horizon=30,
        policy={**WAP, "placement": placement},
        workloads=[pod("h", "top"), pod("a", "p10"), pod("b", "p5"), pod("c", "p5"), preemptor()],
        initial=[("h", "n1", -10), ("a", "n1", -10), ("b", "n2", -10), ("c", "n2", -20)],
    )
    assert out.decisions("p-0") == [(0.0, node, expected)]
    assert out.scheduled("p-0") == (5.0, node)


def test_victims_blocking_members_beyond_min_count_are_removed_too(lab):
    """§6.3: the scheduling function places every member it can once all victims are
    gone; units blocking any placed member are not reprieved, even though minCount (2)
    members would fit with one victim fewer."""
    p = preemptor(members=3)
    p["podGroup"]["minCount"] = 2
    out = lab.run(
        nodes=[("n1", 2), ("n2", 2), ("n3", 2)],
        classes=CLASSES,
        policy=WAP,
        horizon=30,
        workloads=[pod("v1", "lo"), pod("v2", "lo"), p],
        initial=[("v1", "n2", -10), ("v2", "n3", -20)],
    )
    assert sorted(victims(out)) == ["v1-0", "v2-0"]


def test_every_assigned_member_is_nominated(lab):
    """§6.3: each assigned preemptor pod is nominated to its proposed node
    (NominatingMode=Override), including the member that fits a free node; nobody binds
    until the victim has stopped (5 s)."""
    out = lab.run(
        nodes=[("n1", 2), ("n2", 2)],
        classes=CLASSES,
        policy=WAP,
        horizon=3,
        workloads=[pod("v", "lo"), preemptor(members=2)],
        initial=[("v", "n2", -10)],
    )
    assert [(e.time, e.pod, e.node) for e in out.of(ev.NOMINATED)] == [
        (0.0, "p-0", "n1"),
        (0.0, "p-1", "n2"),
    ]
    assert [out.pod(f"p-{i}").nominated.name for i in range(2)] == ["n1", "n2"]
    assert out.bindings().keys() == {"v-0"}


def ongoing_scenario() -> dict:
    """p (2 members) preempts v1 on n2 at t=0 (p-0 → free n1, p-1 → n2; v3 on n3 is
    older, so it is reprieved). v1 needs 20 s to stop. `h` (top, Never) takes n1 at t=2
    (p-0's lower nomination is ignored). `waker` completes at t=5: the group retries
    while v1 still terminates on p-1's nominated node."""
    return {
        "nodes": [("n1", 2), ("n2", 2), ("n3", 2), {"name": "side", "gpus": 0}],
        "classes": CLASSES,
        "policy": WAP,
        "horizon": 60,
        "workloads": [
            pod("v1", "lo", stopSeconds=20),
            pod("v3", "lo"),
            pod("h", "top-never", arrival=2),
            pod("waker", "top", gpus=0, durationSeconds=5, cpu=0.1),
            preemptor(members=2),
        ],
        "initial": [("v1", "n2", -10), ("v3", "n3", -100), ("waker", "side", 0)],
    }


def test_no_new_preemption_while_earlier_victims_terminate_on_nominated_nodes(lab):
    """§6.3 KMASTER eligibility ("ongoing preemption on nominated nodes"): retried at
    t=5, the group would need v3 too (n1 is gone), but v1 is still terminating by
    preemption on p-1's nominated node: no new victims. v3 is preempted only at t=20,
    once v1 has stopped; both members bind when v3 has stopped (t=25)."""
    out = lab.run(**ongoing_scenario())
    assert out.decisions("p-0") == [(0.0, "n1", ["v1-0"]), (20.0, "n2", ["v3-0"])]
    assert out.scheduled("h-0") == (2.0, "n1")
    assert {out.scheduled("p-0"), out.scheduled("p-1")} == {(25.0, "n2"), (25.0, "n3")}


def test_a_failed_group_preemption_clears_every_nomination(lab):
    """§5 Workload Scheduling Cycle: "If not [victims found]: standard backoff, and all
    NNNs of the group are cleared" (as §4.1 step 3 does for a single pod). p is
    nominated to n1 and n2 at t=0; `h` (top, Never) takes n1 at t=2. When v1 stops
    (t=5) the group retries, p-0 no longer fits anywhere and there is no lower unit left:
    no victims, so neither member may keep a nomination."""
    out = lab.run(
        nodes=[("n1", 2), ("n2", 2)],
        classes=CLASSES,
        policy=WAP,
        horizon=8,
        workloads=[pod("v1", "lo"), pod("h", "top-never", arrival=2), preemptor(members=2)],
        initial=[("v1", "n2", -10)],
    )
    assert out.decisions("p-0") == [(0.0, "n1", ["v1-0"])]
    assert any(
        e.message.endswith("No preemption victims found for incoming preemptor")
        for e in out.of(ev.FAILED_SCHEDULING, "p-0")
    )
    assert [out.pod("p-0").nominated, out.pod("p-1").nominated] == [None, None]
    assert not out.engine.cluster.by_name["n2"].nominated
