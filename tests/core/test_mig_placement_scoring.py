"""Placement scoring counts MIG resources (#18, docs/shared-gpus.md "Placement scoring").

kube-scheduler's NodeResourcesFit scores the resources of its ``scoringStrategy.resources``
list; for an extended resource the pod does not request (or the node does not have) it
returns no allocatable and the resource is left out, and the rest are averaged by weight
(``pkg/scheduler/framework/plugins/noderesources/resource_allocation.go``,
``most_allocated.go``, ``least_allocated.go``). Our list is ``nvidia.com/gpu`` and every
``nvidia.com/mig-<profile>``, weight 1. So a MIG pod packs (MostAllocated) or spreads
(LeastAllocated) by the instances of its profile, and a whole-GPU pod ignores MIG.
"""

from __future__ import annotations

from typing import Any

import pytest

import scheduler_core as sc
from scheduler_core import events as ev
from scheduler_core.cluster import Cluster
from scheduler_core.model import Pod, Workload
from scheduler_core.plugins.placement import LeastAllocated, MostAllocated


def placements(
    placement: str, nodes: list[dict[str, Any]], workloads: list[dict[str, Any]]
) -> dict[str, str]:
    spec = sc.parse_spec(
        {
            "horizonSeconds": 100,
            "cluster": {"nodes": nodes},
            "policy": {"placement": placement},
            "workloads": [{"durationSeconds": 1000, "gpus": 0, **w} for w in workloads],
        }
    )
    result = sc.simulate(spec, "default")
    return {e.pod: e.node for e in result.events if e.reason == ev.SCHEDULED}


MIG_NODES = [{"name": f"n{i}", "gpus": 0, "mig": {"1g.10gb": 7}} for i in range(3)]


@pytest.mark.parametrize(
    ("placement", "expected"),
    [
        ("MostAllocated", {"m-0": "n0", "m-1": "n0", "m-2": "n0"}),
        ("LeastAllocated", {"m-0": "n0", "m-1": "n1", "m-2": "n2"}),
    ],
)
def test_mig_pods_pack_or_spread_by_their_profile(placement: str, expected: dict[str, str]) -> None:
    """Three 1g.10gb pods one after another on three nodes of 7 such instances (and no
    whole GPU): MostAllocated puts each on the node where the most of the profile is
    allocated after placement, LeastAllocated on the one where the least is."""
    workloads = [{"name": "m", "members": 3, "mig": {"1g.10gb": 1}}]
    assert placements(placement, MIG_NODES, workloads) == expected


def test_only_the_requested_profile_counts() -> None:
    """Node a has its 3g.40gb instances taken and its 1g.10gb ones free; node b has 3
    of its 7 1g.10gb taken. For a 1g.10gb pod, a's 3g.40gb are not a requested
    resource: MostAllocated scores a 1/7 and b 4/7, and picks b."""
    nodes = [
        {"name": "a", "gpus": 0, "mig": {"3g.40gb": 2, "1g.10gb": 7}, "labels": {"n": "a"}},
        {"name": "b", "gpus": 0, "mig": {"1g.10gb": 7}, "labels": {"n": "b"}},
    ]
    workloads = [
        {"name": "big", "members": 2, "mig": {"3g.40gb": 1}, "nodeSelector": {"n": "a"}},
        {"name": "small", "members": 3, "mig": {"1g.10gb": 1}, "nodeSelector": {"n": "b"}},
        {"name": "p", "arrival": 10, "mig": {"1g.10gb": 1}},
    ]
    assert placements("MostAllocated", nodes, workloads)["p-0"] == "b"
    assert placements("LeastAllocated", nodes, workloads)["p-0"] == "a"


def test_a_whole_gpu_pod_is_not_scored_on_mig_instances() -> None:
    """Node a: 4 free GPUs and all 7 1g.10gb instances taken; node b: 1 of 4 GPUs
    taken. A 1-GPU pod does not request nvidia.com/mig-1g.10gb, so only GPUs count:
    MostAllocated picks b (2/4 against a's 1/4)."""
    nodes = [
        {"name": "a", "gpus": 4, "mig": {"1g.10gb": 7}, "labels": {"n": "a"}},
        {"name": "b", "gpus": 4, "labels": {"n": "b"}},
    ]
    workloads = [
        {"name": "m", "members": 7, "mig": {"1g.10gb": 1}, "nodeSelector": {"n": "a"}},
        {"name": "w", "gpus": 1, "nodeSelector": {"n": "b"}},
        {"name": "p", "arrival": 10, "gpus": 1},
    ]
    assert placements("MostAllocated", nodes, workloads)["p-0"] == "b"
    assert placements("LeastAllocated", nodes, workloads)["p-0"] == "a"


def test_a_pod_of_gpus_and_instances_averages_its_resources() -> None:
    """Weight 1 each: a pod of 1 GPU and 1 1g.10gb on a node of 4 GPUs (1 taken) and 7
    instances (6 taken) scores (2/4 + 7/7) / 2 with MostAllocated, and the complement's
    mean, (2/4 + 0/7) / 2, with LeastAllocated."""
    spec = sc.parse_spec(
        {
            "cluster": {"nodes": [{"name": "a", "gpus": 4, "mig": {"1g.10gb": 7}}]},
            "workloads": [{"name": "p", "gpus": 1, "mig": {"1g.10gb": 1}}],
        }
    )
    [node] = Cluster(spec).nodes
    node.free_gpus, node.mig_free = 3, {"1g.10gb": 1}
    pod = Pod(0, "p-0", Workload(0, spec.workloads[0], 0, "", False), 0, 0.0)
    assert MostAllocated().score(node, pod) == pytest.approx((2 / 4 + 7 / 7) / 2)
    assert LeastAllocated().score(node, pod) == pytest.approx((2 / 4 + 0 / 7) / 2)
