"""Fidelity of topology-aware group placement against Kueue TAS (kubernetes-preemption.md
§8): phase 2a (the level and the domains: BestFit's tightest fitting domain,
LeastFreeCapacity's smallest, `required` vs `preferred` with its fallback one level up
and the greedy spread at the top), `sortedDomains` and its tie-break by level values,
and phase 2b (greedy fill down to the nodes, best fit for the last domain).

Nodes carry `block` and `rack` labels; a node's GPU count is its free capacity (members
take 1 GPU each), so a rack's count is the sum of its nodes' GPUs. The group ``g`` is a
gang of ``n`` members (minCount = n) arriving at t=0 under `policy.preemption: none`
unless a test says otherwise.
"""

from __future__ import annotations

from collections import Counter

import pytest

from scheduler_core import events as ev

CLASSES = {"top": 1000, "hi": 100, "lo": 0}


def rack_nodes(layout: dict[str, list[int]], block: str = "b1") -> list[dict]:
    """{rack: [gpus per node]} -> nodes named `<rack>-n<i>` in one block."""
    return [
        {"name": f"{rack}-n{i}", "gpus": gpus, "labels": {"block": block, "rack": rack}}
        for rack, sizes in layout.items()
        for i, gpus in enumerate(sizes)
    ]


def place(
    lab,
    nodes: list[dict],
    members: int,
    *,
    policy=None,
    levels=("block", "rack"),
    workloads=(),
    initial=(),
    **topology,
) -> Counter:
    """Run the group and return how many members bound on each node."""
    group = {
        "name": "g",
        "members": members,
        "gpus": 1,
        "priorityClassName": "hi",
        "podGroup": {"minCount": members, "topology": {"levels": list(levels), **topology}},
    }
    out = lab.run(
        nodes=nodes,
        classes=CLASSES,
        workloads=[*workloads, group],
        initial=list(initial),
        policy=policy or {"preemption": "none"},
        horizon=30,
    )
    return Counter(e.node for e in out.of(ev.SCHEDULED) if e.workload == "g")


# =========================================================================== phase 2a
@pytest.mark.parametrize("algorithm", ["BestFit", "LeastFreeCapacity"])
@pytest.mark.parametrize(
    ("members", "rack"), [(2, "r2"), (3, "r3"), (4, "r1")], ids=["needs-2", "needs-3", "needs-4"]
)
def test_the_tightest_rack_that_fits_is_chosen(lab, algorithm, members, rack):
    """§8 phase 2a at the required level: racks of 4 (r1), 2 (r2) and 3 (r3) members.
    BestFit: the top (largest) domain fits, so findBestFitDomain takes the smallest count
    >= needed; LeastFreeCapacity: the first fitting in ascending order. Both land in the
    tightest rack that fits."""
    nodes = rack_nodes({"r1": [4], "r2": [2], "r3": [3]})
    placed = place(lab, nodes, members, required="rack", algorithm=algorithm)
    assert placed == {f"{rack}-n0": members}


@pytest.mark.parametrize("mode", ["required", "preferred"])
def test_required_fails_rather_than_spread(lab, mode):
    """§8: `required`: all in one domain of the level or nothing (the group stays
    pending, nothing bound); `preferred` spreads (here at the top level, one block:
    BestFit fills r1 first, then best-fits the rest)."""
    nodes = rack_nodes({"r1": [2], "r2": [2]})
    placed = place(lab, nodes, 3, **{mode: "rack"})
    if mode == "required":
        assert placed == Counter()
    else:
        assert placed == {"r1-n0": 2, "r2-n0": 1}


def test_preferred_falls_back_one_level_up_to_the_tightest_block(lab):
    """§8 preferred: no rack holds 4, so the search goes one level up; both blocks fit and
    BestFit takes the tightest (b1: racks of 2 + 2) over b2 (3 + 3)."""
    nodes = rack_nodes({"r1": [2], "r2": [2]}, "b1") + rack_nodes({"r3": [3], "r4": [3]}, "b2")
    assert place(lab, nodes, 4, preferred="rack") == {"r1-n0": 2, "r2-n0": 2}


def test_preferred_spreads_over_blocks_at_the_top(lab):
    """§8: no block holds 7 either: at the top level, domains are taken greedily in sorted
    order (b2 = 6 first), and once the rest (1) fits in one, the best fit for it is used
    (b1's rack of 1 rather than its rack of 2)."""
    nodes = rack_nodes({"r1": [2], "r2": [1]}, "b1") + rack_nodes({"r3": [3], "r4": [3]}, "b2")
    assert place(lab, nodes, 7, preferred="rack") == {"r3-n0": 3, "r4-n0": 3, "r2-n0": 1}


def test_required_block_is_not_split_across_blocks(lab):
    """§8 required at the outer level: 5 members, blocks of 4 and 3 → nothing placed."""
    nodes = rack_nodes({"r1": [2], "r2": [2]}, "b1") + rack_nodes({"r3": [3]}, "b2")
    assert place(lab, nodes, 5, required="block") == Counter()


# =========================================================================== sortedDomains
@pytest.mark.parametrize("algorithm", ["BestFit", "LeastFreeCapacity"])
def test_equal_domains_are_ordered_by_their_level_values(lab, algorithm):
    """§8 sortedDomains: equal counts are ordered by level values ascending, so r-a wins
    over r-b although r-b's node is listed first; inside r-a the two equal nodes are
    ordered by name the same way."""
    nodes = rack_nodes({"r-b": [2], "r-a": [1, 1]})
    nodes = [nodes[0], nodes[2], nodes[1]]  # r-b-n0, r-a-n1, r-a-n0
    assert place(lab, nodes, 1, required="rack", algorithm=algorithm) == {"r-a-n0": 1}


# =========================================================================== phase 2b
@pytest.mark.parametrize(
    ("algorithm", "expected"),
    [
        ("BestFit", {"r1-n2": 3, "r1-n1": 2}),
        ("LeastFreeCapacity", {"r1-n0": 1, "r1-n1": 2, "r1-n2": 2}),
    ],
    ids=["bestfit-largest-first-then-best-fit", "least-free-capacity-smallest-first"],
)
def test_a_domain_is_filled_greedily_down_to_the_nodes(lab, algorithm, expected):
    """§8 phase 2b (updateCountsToMinimumGeneric): inside the chosen rack (nodes of 1, 2
    and 3) 5 members are spread greedily in sorted order. BestFit takes the largest node
    (3), then the best fit for the remaining 2 (the node of 2, not 3-1); LeastFreeCapacity
    starts from the smallest node (1, then 2) and puts the rest (2) on the node of 3."""
    nodes = rack_nodes({"r1": [1, 2, 3]})
    assert place(lab, nodes, 5, required="rack", algorithm=algorithm) == expected


def test_best_fit_uses_the_tightest_node_for_the_last_members(lab):
    """§8 phase 2b with BestFit: nodes of 4, 2 and 1; 5 members: the node of 4 first,
    then the remaining 1 goes to the node of 1 (best fit), keeping the node of 2 whole."""
    nodes = rack_nodes({"r1": [4, 2, 1]})
    assert place(lab, nodes, 5, required="rack") == {"r1-n0": 4, "r1-n2": 1}


def test_capacity_counts_only_what_is_free(lab):
    """§8 phase 1: a node's count is what its free resources allow: r1's 4-GPU node holds
    3 GPUs of a running pod, so r1 counts 1 + 2 = 3 and r2 (2) is tighter for 2 members
    than r1, but only r1 fits 3."""
    nodes = rack_nodes({"r1": [4, 2], "r2": [2]})
    busy = {"name": "busy", "gpus": 3, "priorityClassName": "top"}
    placed = place(
        lab, nodes, 3, required="rack", workloads=[busy], initial=[("busy", "r1-n0", -10)]
    )
    assert placed == {"r1-n1": 2, "r1-n0": 1}


# =========================================================================== with preemption
def test_workload_aware_preemption_places_the_group_with_its_topology(lab):
    """§6.3 + §8 (KEP-5710: take the single best placement): with every lower unit
    removed, only r1 can hold both members (r2 keeps a `top` pod), so the victims are
    r1's two pods although r2 has a free node; both members bind in r1 once they stop."""
    nodes = [{**n, "gpus": 1} for n in rack_nodes({"r1": [1, 1], "r2": [1, 1]})]
    low = {"name": "low", "members": 2, "gpus": 1, "priorityClassName": "lo"}
    keep = {"name": "keep", "gpus": 1, "priorityClassName": "top"}
    placed = place(
        lab,
        nodes,
        2,
        required="rack",
        policy={"preemption": "workload-aware"},
        workloads=[low, keep],
        initial=[("low", "r1-n0", -10, 0), ("low", "r1-n1", -10, 1), ("keep", "r2-n0", -10)],
    )
    assert placed == {"r1-n0": 1, "r1-n1": 1}


def test_pod_preemption_is_not_eligible_for_a_topology_constrained_group(lab):
    """§4.0 guard 1 (K136): a pod with a schedulingGroup whose PodGroup has
    schedulingConstraints, with TopologyAwareWorkloadScheduling on (the engine honours
    the constraint, so it is), gets Unschedulable "not eligible due to placement-based
    pod group scheduling limitation" from DefaultPreemption: nobody is evicted."""
    nodes = [{**n, "gpus": 1} for n in rack_nodes({"r1": [1, 1], "r2": [1, 1]})]
    low = {"name": "low", "members": 2, "gpus": 1, "priorityClassName": "lo"}
    keep = {"name": "keep", "gpus": 1, "priorityClassName": "top"}
    group = {
        "name": "g",
        "members": 2,
        "gpus": 1,
        "priorityClassName": "hi",
        "podGroup": {"minCount": 2, "topology": {"levels": ["block", "rack"], "required": "rack"}},
    }
    out = lab.run(
        nodes=nodes,
        classes=CLASSES,
        workloads=[low, keep, group],
        initial=[("low", "r1-n0", -10, 0), ("low", "r1-n1", -10, 1), ("keep", "r2-n0", -10)],
        policy={"preemption": "pod"},
        horizon=30,
    )
    assert out.preempted() == []
    assert (
        "placement-based pod group scheduling limitation"
        in out.of(ev.FAILED_SCHEDULING, "g-0")[0].message
    )
