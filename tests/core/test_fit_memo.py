"""Issue #14: Cluster.any_fits keeps a "no" per pod shape and then tests only the nodes
changed since. Differential: on random clusters under random binds, releases,
nominations and cordons, every answer equals the whole-array test made afresh, and a
storm run gives the log of runs that always test every node."""

from __future__ import annotations

import random
from typing import Any

import pytest

import scheduler_core as sc
from scheduler_core.cluster import Cluster
from scheduler_core.engine import Engine
from scheduler_core.spec import resolve_variant


def _fresh(cluster: Cluster, pod: Any) -> bool:
    """The reference: the whole-array Filter test, nothing remembered."""
    rows = cluster.eligible_rows(pod.workload)
    claims = cluster.claim_arrays(pod.priority)
    every = None if len(rows) == len(cluster.nodes) else rows
    return bool(cluster._fits_rows(pod, claims, every).any())


def _spec(seed: int) -> dict[str, Any]:
    rng = random.Random(seed)
    return {
        "cluster": {
            "nodePools": [
                {
                    "name": "a",
                    "count": rng.randint(2, 6),
                    "gpus": 4,
                    "cpu": 8,
                    "memory": 32,
                    "labels": {"zone": "a"},
                },
                {
                    "name": "b",
                    "count": rng.randint(2, 6),
                    "gpus": 2,
                    "cpu": 4,
                    "memory": 16,
                    "maxPods": 3,
                },
            ]
        },
        "priorityClasses": [
            {"name": "low", "value": 0, "globalDefault": True},
            {"name": "high", "value": 10},
        ],
        "workloads": [
            {"name": "small", "members": 60, "gpus": 1, "cpu": 1.5, "memory": 3},
            {
                "name": "big",
                "members": 30,
                "gpus": 2,
                "cpu": 3,
                "memory": 8,
                "priorityClassName": "high",
            },
            {
                "name": "zonal",
                "members": 30,
                "gpus": 0,
                "cpu": 2.5,
                "memory": 2,
                "nodeSelector": {"zone": "a"},
            },
        ],
    }


@pytest.mark.parametrize("seed", range(8))
def test_a_remembered_no_is_the_fresh_answer_on_random_changes(seed: int) -> None:
    rng = random.Random(seed)
    engine = Engine(resolve_variant(sc.parse_spec(_spec(seed)), "default"), seed=seed)
    cluster = engine.cluster
    pods = [
        engine._new_pod(engine.by_name[name], i)
        for name, count in (("small", 60), ("big", 30), ("zonal", 30))
        for i in range(count)
    ]
    askers = [engine._new_pod(engine.by_name[name], 0) for name in ("small", "big", "zonal")]
    bound: list[Any] = []
    nominated: list[Any] = []
    answers = {True: 0, False: 0}
    for _ in range(600):
        roll = rng.random()
        if roll < 0.4:
            pod = rng.choice([p for p in pods if p.node is None and p.nominated is None])
            node = rng.choice(cluster.nodes)
            if cluster.holds(pod, node):
                cluster.assign(pod, node)
                bound.append(pod)
        elif roll < 0.7 and bound:
            pod = bound.pop(rng.randrange(len(bound)))
            cluster.release(pod)
            pod.node = None
        elif roll < 0.85:
            if nominated and rng.random() < 0.5:
                pod = nominated.pop(rng.randrange(len(nominated)))
                node = pod.nominated
                del node.nominated[pod]
                pod.nominated = None
            else:
                pod = rng.choice([p for p in pods if p.node is None and p.nominated is None])
                node = rng.choice(cluster.nodes)
                pod.nominated = node
                node.nominated[pod] = None
                nominated.append(pod)
            cluster.nominations_changed(node)
        else:
            node = rng.choice(cluster.nodes)
            cluster.set_schedulable(node, alive=True, cordoned=not node.cordoned)
        for asker in rng.sample(askers, len(askers)):
            expected = _fresh(cluster, asker)
            assert cluster.any_fits(asker) == expected
            answers[expected] += 1
    assert answers[True], answers  # both answers were exercised
    assert answers[False], answers


def test_a_storm_gives_the_log_of_whole_array_tests(monkeypatch: pytest.MonkeyPatch) -> None:
    """The scheduler_perf storm shape (every node full, each preemptor asks whether any
    node fits before it preempts): the same log and records as testing every node."""
    from bench.bench_scheduler_perf import perf_spec

    spec = sc.parse_spec(perf_spec(120, 120))
    engine = Engine(resolve_variant(spec, "default"), seed=3)
    log = engine.run()
    records = engine.decisions()
    assert engine.cluster._no_fit, "the storm never remembered a no"
    monkeypatch.setattr(Cluster, "any_fits", _fresh)
    reference = Engine(resolve_variant(spec, "default"), seed=3)
    assert reference.run() == log
    assert reference.decisions() == records
