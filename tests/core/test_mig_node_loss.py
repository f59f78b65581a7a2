"""A lost MIG node takes away the GPUs it holds (#18 §1, docs/shared-gpus.md).

``NodeLost`` and ``NodeReady`` carry the GPUs leaving and rejoining (docs/events.md), and
``_available_gpu_seconds`` (metrics.py) subtracts them from the capacity utilisation is
measured against, ``Cluster.gpu_capacity_at_start``, which counts a MIG instance as its
compute slices over its device's (spec.mig_gpu_fraction). So a node's whole GPUs alone
are not what it takes away: a node of MIG instances would leave the cluster with 0 GPUs.
"""

from __future__ import annotations

from typing import Any

import pytest

import scheduler_core as sc
from scheduler_core import events as ev
from scheduler_core.cluster import Cluster

FAILURE = "100,a,300\n"
"""Node a fails at 100 s and is repaired 300 s later."""


def run(node_a: dict[str, Any], request: dict[str, Any]) -> sc.ReplicationResult:
    spec = sc.parse_spec(
        {
            "horizonSeconds": 1000,
            "cluster": {"nodes": [{"name": "a", **node_a}, {"name": "b", "gpus": 1}]},
            "workloads": [
                {"name": "w", "durationSeconds": 5000, **request},
            ],
            "failures": [{"kind": "trace", "csv": FAILURE}],
        }
    )
    return sc.simulate(spec, "default")


def node_values(result: sc.ReplicationResult, node: str) -> list[tuple[str, float]]:
    return [
        (e.reason, e.value)
        for e in result.events
        if e.node == node and e.reason in (ev.NODE_LOST, ev.NODE_BACK)
    ]


def test_a_lost_mig_node_carries_its_instances_as_fractions_of_a_gpu() -> None:
    # 1 whole GPU + 2 x 3g.40gb (3/7 each) + 1 x 1g.10gb (1/7): 2 GPUs in all.
    node = {"gpus": 1, "mig": {"3g.40gb": 2, "1g.10gb": 1}}
    result = run(node, {"gpus": 0, "mig": {"3g.40gb": 1}})
    assert node_values(result, "a") == [
        (ev.NODE_LOST, pytest.approx(2.0)),
        (ev.NODE_BACK, pytest.approx(2.0)),
    ]


def test_node_capacity_adds_up_to_the_clusters_capacity_at_start() -> None:
    spec = sc.parse_spec(
        {
            "cluster": {
                "nodes": [
                    {"name": "a", "gpus": 1, "mig": {"3g.40gb": 2, "1g.10gb": 1}},
                    {"name": "b", "gpus": 0, "mig": {"2g.12gb": 3}},
                    {"name": "c", "gpus": 4},
                ]
            },
            "workloads": [{"name": "w", "gpus": 0, "mig": {"1g.10gb": 1}}],
        }
    )
    cluster = Cluster(spec)
    assert [n.capacity for n in cluster.nodes] == pytest.approx([2.0, 1.5, 4.0])
    assert cluster.gpu_capacity_at_start == pytest.approx(7.5)


def test_losing_a_node_of_7g_instances_costs_the_same_as_losing_whole_gpus() -> None:
    """``7g.80gb`` is a whole device (7/7): the same failure of the same node gives the
    same NodeLost value and the same utilisation, whose denominator (available
    GPU-seconds) drops by the node's 2 GPUs for the 300 s it is away. One pod of 2 GPUs
    fits node a only, so placement cannot differ."""
    whole = run({"gpus": 2}, {"gpus": 2})
    sliced = run({"gpus": 0, "mig": {"7g.80gb": 2}}, {"gpus": 0, "mig": {"7g.80gb": 2}})
    assert (
        node_values(sliced, "a")
        == node_values(whole, "a")
        == [
            (ev.NODE_LOST, 2.0),
            (ev.NODE_BACK, 2.0),
        ]
    )
    assert sliced.summary["gpu_utilization"] == pytest.approx(whole.summary["gpu_utilization"])
    # by hand: 3 GPUs for 1000 s, less node a's 2 for 300 s; the pod stays bound to its
    # 2 GPUs throughout (the taint manager would evict it 40 + 300 s after the failure,
    # but the node is back at 400 s), so it holds them for the whole 1000 s.
    assert whole.summary["gpu_utilization"] == pytest.approx(2 * 1000 / (3000 - 2 * 300))
    assert sliced.summary == pytest.approx(whole.summary, nan_ok=True)
