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
    return {"name": name, "members": members, "gpus": gpus,
            "controller": {"kind": "deployment"}, "terminationGracePeriodSeconds": 0,
            "stopSeconds": 0, **extra}


# =========================================================================== PDB status
@pytest.mark.parametrize(("disrupted", "second_eviction"), [(0, 10.0), (1, 120.0)])
def test_pods_already_disrupted_count_against_the_budget_until_they_expire(
        lab, disrupted, second_eviction):
    """docs/kubernetes-rules.md "PDB status disruptedPods" (with §4.3
    filterPodsWithPDBViolation and §4.5, which read disruptionsAllowed): a pod listed in
    status.disruptedPods is not healthy for the disruption controller, so it takes one
    disruption off the budget until the entry expires 2 minutes later. Three replicas on
    `a`, minAvailable 1, and nowhere else to go: a drain at t=10 may evict 2 at once; with
    one pod already disrupted only 1, and the second when the entry expires (t=120)."""
    web = deployment("web", 3, pdb={"minAvailable": 1, "disruptedPods": disrupted})
    out = lab.run(nodes=[("a", 8), ("b", 0)], workloads=[web],
                  initial=[("web", "a", 0, m) for m in range(3)],
                  events=[{"at": 10, "type": "drain", "nodes": ["a"]}], horizon=200)
    kills = [e.time for e in out.of(ev.KILLING)]
    assert kills[:2] == [10.0, second_eviction]
