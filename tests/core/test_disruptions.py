"""Disruption sources on the timeline: node failure, drain, spot reclaim (domain.md §5)."""

from __future__ import annotations

from typing import Any

import scheduler_core as sc
from scheduler_core import events as ev


def run(events: list[dict[str, Any]], **workload: Any) -> sc.ReplicationResult:
    job = {
        "name": "job",
        "members": 2,
        "gpus": 8,
        "durationSeconds": 5000,
        "terminationGracePeriodSeconds": 60,
        "stopSeconds": 20,
        "checkpoint": {"intervalSeconds": 100, "writeSeconds": 0, "onSigterm": True},
        **workload,
    }
    spec = sc.parse_spec(
        {
            "horizonSeconds": 1000,
            "cluster": {
                "nodes": [
                    {"name": "a", "gpus": 8},
                    {"name": "b", "gpus": 8},
                    {"name": "c", "gpus": 8},
                ]
            },
            "workloads": [job],
            "events": events,
        }
    )
    return sc.simulate(spec, "default")


def of(result: sc.ReplicationResult, reason: str) -> list[ev.Event]:
    return [e for e in result.events if e.reason == reason]


def test_node_failure_kills_at_once_without_grace_or_checkpoint() -> None:
    result = run([{"at": 250, "type": "node-failure", "nodes": ["a"]}])
    [killed] = [e for e in of(result, ev.KILLING) if e.node == "a"]
    assert (killed.time, killed.value, killed.related) == (250.0, 0.0, "node-failure")
    assert [e.time for e in of(result, ev.RELEASED)] == [250.0]
    lost = [e.value for e in of(result, ev.DISRUPTED)]
    assert lost == [8 * 50]  # checkpoint on SIGTERM needs a SIGTERM
    assert [e.node for e in of(result, ev.NODE_LOST)] == ["a"]


def test_node_failure_replacement_runs_elsewhere_and_the_node_can_return() -> None:
    result = run([{"at": 250, "type": "node-failure", "nodes": ["a"], "recoverAfterSeconds": 100}])
    replacement = [e for e in of(result, ev.SCHEDULED) if e.time == 250.0]
    assert [e.node for e in replacement] == ["c"]
    assert [e.time for e in of(result, ev.NODE_BACK)] == [350.0]


def test_drain_evicts_gracefully_and_checkpoints_on_sigterm() -> None:
    result = run([{"at": 250, "type": "drain", "nodes": ["a"]}])
    [killed] = of(result, ev.KILLING)
    assert (killed.time, killed.value, killed.related) == (250.0, 20.0, "drain")
    assert [e.value for e in of(result, ev.DISRUPTED)] == [0.0]
    assert [e.node for e in of(result, ev.NODE_CORDONED)] == ["a"]


def test_drain_honours_the_pdb_and_retries() -> None:
    """kubectl drain uses the Eviction API: a PDB blocks it until the budget allows; it
    retries every 5 s (here the replacement becomes Ready elsewhere, then the evicted
    pod may go)."""
    result = run(
        [{"at": 250, "type": "drain", "nodes": ["a", "b"]}],
        controller={"kind": "deployment"},
        pdb={"minAvailable": 1},
    )
    kills = [(e.time, e.node) for e in of(result, ev.KILLING)]
    assert kills[0] == (250.0, "a")
    assert kills[1][1] == "b"
    assert kills[1][0] > 250.0


def test_spot_reclaim_grace_is_capped_by_the_notice() -> None:
    result = run([{"at": 250, "type": "spot-reclaim", "nodes": ["a"], "noticeSeconds": 15}])
    [killed] = of(result, ev.KILLING)
    assert killed.value == 15.0  # stops after min(stopSeconds 20, grace min(60, 15))
    assert [e.time for e in of(result, ev.NODE_LOST)] == [265.0]
