"""Kueue admission at one instant (scheduler_core/admission.py): a preemptor waiting for
its victims and the victims it evicted. Found by the properties' random queues
(test_fidelity_kueue_properties.py): the simulator runs every scheduling cycle of an
instant at that instant, and these two specs looped there without end, growing the log
until memory ran out.

Rules (docs/kubernetes-rules.md, "Kueue: a pending preemptor and its victims"):

- Kueue's BestEffortFIFO keeps a workload whose preemptions are pending sticky at the
  head of its ClusterQueue until it is admitted or no longer preempts (the preemptor
  workload of ``pkg/cache/queue/cluster_queue.go``, Kueue#6929 and #7101): the workloads
  behind it wait.
- A victim is requeued once its eviction is observed and admitted in a later cycle, so
  it takes back room freed for its preemptor (or preempts it in turn) at most once a
  cycle: here, not again at the instant of its preemption.
"""

from __future__ import annotations

from collections import Counter
from typing import Any

import scheduler_core as sc
from scheduler_core import events as ev
from scheduler_core.engine import Engine
from tests.core.test_fidelity_kueue_properties import classes

SAME_QUEUE: dict[str, Any] = {
    "horizonSeconds": 400,
    "cluster": {"nodes": [{"name": "n", "gpus": 64, "cpu": 64}]},
    "priorityClasses": classes(),
    "queues": [
        {
            "name": "q0",
            "nominalGpus": 3,
            "cohort": None,
            "orderBy": "priority",
            "queueingStrategy": "BestEffortFIFO",
            "fairSharing": {"weight": 1},
            "preemption": {
                "withinClusterQueue": "LowerPriority",
                "reclaimWithinCohort": "LowerPriority",
            },
        }
    ],
    "workloads": [
        {
            "controller": {"kind": "none"},
            "cpu": 0,
            "memory": 0,
            "name": "w0",
            "gpus": 1,
            "queue": "q0",
            "arrival": 6,
            "durationSeconds": 5,
            "queuePriority": 10,
            "terminationGracePeriodSeconds": 10,
            "priorityClassName": "p2",
        },
        {
            "controller": {"kind": "none"},
            "cpu": 0,
            "memory": 0,
            "name": "w1",
            "gpus": 3,
            "queue": "q0",
            "arrival": 12,
            "durationSeconds": 20,
            "queuePriority": 5,
            "terminationGracePeriodSeconds": 0,
            "priorityClassName": "p1",
        },
        {
            "controller": {"kind": "job"},
            "cpu": 0,
            "memory": 0,
            "name": "w2",
            "gpus": 1,
            "queue": "q0",
            "arrival": 24,
            "durationSeconds": 5,
            "queuePriority": 5,
            "terminationGracePeriodSeconds": 5,
            "priorityClassName": "p3",
        },
        {
            "controller": {"kind": "none"},
            "cpu": 0,
            "memory": 0,
            "name": "w3",
            "gpus": 1,
            "queue": "q0",
            "arrival": 28,
            "durationSeconds": 5,
            "queuePriority": 10,
            "terminationGracePeriodSeconds": 10,
            "priorityClassName": "p0",
        },
        {
            "controller": {"kind": "none"},
            "cpu": 0,
            "memory": 0,
            "name": "w4",
            "gpus": 1,
            "queue": "q0",
            "arrival": 23,
            "durationSeconds": 5,
            "queuePriority": 5,
            "terminationGracePeriodSeconds": 0,
            "priorityClassName": "p0",
        },
        {
            "controller": {"kind": "job"},
            "cpu": 0,
            "memory": 0,
            "name": "w5",
            "gpus": 2,
            "queue": "q0",
            "arrival": 3,
            "durationSeconds": 60,
            "queuePriority": 10,
            "terminationGracePeriodSeconds": 5,
            "priorityClassName": "pm1",
        },
    ],
    "policy": {"preemption": "none"},
    "fairSharing": {
        "preemptionStrategies": ["LessThanOrEqualToFinalShare", "LessThanInitialShare"]
    },
}

PING_PONG: dict[str, Any] = {
    "horizonSeconds": 400,
    "cluster": {"nodes": [{"name": "n", "gpus": 64, "cpu": 64}]},
    "priorityClasses": classes(),
    "queues": [
        {
            "name": "q0",
            "resourceGroups": [
                {
                    "coveredResources": ["gpus", "cpu"],
                    "flavors": [
                        {
                            "name": "f",
                            "resources": [
                                {"name": "gpus", "nominalQuota": 6},
                                {"name": "cpu", "nominalQuota": 1},
                            ],
                        }
                    ],
                }
            ],
            "flavorFungibility": {
                "whenCanBorrow": "MayStopSearch",
                "whenCanPreempt": "TryNextFlavor",
            },
            "cohort": "c",
            "orderBy": "priority",
            "queueingStrategy": "BestEffortFIFO",
            "fairSharing": {"weight": 1},
            "preemption": {"withinClusterQueue": "Never", "reclaimWithinCohort": "Any"},
        },
        {
            "name": "q1",
            "resourceGroups": [
                {
                    "coveredResources": ["gpus", "cpu"],
                    "flavors": [
                        {
                            "name": "f",
                            "resources": [
                                {"name": "gpus", "nominalQuota": 1},
                                {"name": "cpu", "nominalQuota": 2},
                            ],
                        }
                    ],
                }
            ],
            "flavorFungibility": {
                "whenCanBorrow": "TryNextFlavor",
                "whenCanPreempt": "MayStopSearch",
            },
            "cohort": "c",
            "orderBy": "queuePriority",
            "queueingStrategy": "StrictFIFO",
            "fairSharing": {"weight": 2},
            "preemption": {"withinClusterQueue": "Never", "reclaimWithinCohort": "Any"},
        },
    ],
    "workloads": [
        {
            "controller": {"kind": "none"},
            "cpu": 0,
            "memory": 0,
            "name": "w0",
            "gpus": 1,
            "queue": "q0",
            "arrival": 39,
            "durationSeconds": 60,
            "queuePriority": 10,
            "terminationGracePeriodSeconds": 0,
            "priorityClassName": "pm3",
        },
        {
            "controller": {"kind": "none"},
            "cpu": 2,
            "memory": 0,
            "name": "w1",
            "gpus": 3,
            "queue": "q0",
            "arrival": 50,
            "durationSeconds": 5,
            "queuePriority": 5,
            "terminationGracePeriodSeconds": 10,
            "priorityClassName": "pm1",
        },
        {
            "controller": {"kind": "none"},
            "cpu": 0,
            "memory": 0,
            "name": "w2",
            "gpus": 1,
            "queue": "q1",
            "arrival": 12,
            "durationSeconds": 20,
            "queuePriority": 5,
            "terminationGracePeriodSeconds": 0,
            "priorityClassName": "pm2",
        },
        {
            "controller": {"kind": "job"},
            "cpu": 0,
            "memory": 0,
            "name": "w3",
            "gpus": 3,
            "queue": "q0",
            "arrival": 5,
            "durationSeconds": 5,
            "queuePriority": 0,
            "terminationGracePeriodSeconds": 10,
            "priorityClassName": "p2",
        },
        {
            "controller": {"kind": "none"},
            "cpu": 3,
            "memory": 0,
            "name": "w4",
            "gpus": 3,
            "queue": "q1",
            "arrival": 51,
            "durationSeconds": 60,
            "queuePriority": 0,
            "terminationGracePeriodSeconds": 5,
            "priorityClassName": "p1",
        },
        {
            "controller": {"kind": "job"},
            "cpu": 1,
            "memory": 0,
            "name": "w5",
            "gpus": 3,
            "queue": "q0",
            "arrival": 37,
            "durationSeconds": 60,
            "queuePriority": 5,
            "terminationGracePeriodSeconds": 10,
            "priorityClassName": "p0",
        },
    ],
    "policy": {"preemption": "none"},
    "fairSharing": {
        "preemptionStrategies": ["LessThanOrEqualToFinalShare", "LessThanInitialShare"]
    },
}


def _run(doc: dict[str, Any]) -> list[ev.Event]:
    engine = Engine(sc.resolve_variant(sc.parse_spec(doc), "default"), 0, max_events=20_000)
    return engine.run()


def _preemptions_per_instant(log: list[ev.Event]) -> Counter[tuple[float, str]]:
    return Counter((e.time, e.workload) for e in log if e.reason == ev.SUSPENDED)


def test_a_best_effort_fifo_preemptor_waiting_for_its_victims_holds_the_head():
    """w1 (priority 1, 3 GPUs, the queue's whole quota) preempts w3 (grace 10 s) and w4
    (grace 0) at t=29. w4 is gone at once and its quota free, but w1 still waits for w3:
    w4 is not admitted again at t=29 (before the rule it was, was preempted again, and
    so on without end), and w1 is admitted at t=34 when w3's pods are gone."""
    log = _run(SAME_QUEUE)

    at_29 = [(str(e.reason), e.workload) for e in log if e.time == 29.0 and e.workload != ""]
    assert ("WorkloadEvicted", "w4") in at_29
    assert ("Admitted", "w4") not in at_29
    admitted_w1 = [e.time for e in log if e.reason == ev.ADMITTED and e.workload == "w1"]
    assert 34.0 in admitted_w1
    assert max(_preemptions_per_instant(log).values()) == 1


def test_two_workloads_that_may_preempt_each_other_take_one_turn_per_instant():
    """Fair sharing lets w4 (q1) preempt w5 (q0), and reclamation lets w5 preempt w4 back:
    at t=56 they took turns without end. Now each is preempted at most once per instant
    and the run reaches its horizon."""
    log = _run(PING_PONG)

    assert max(_preemptions_per_instant(log).values()) == 1
    assert log[-1].time <= PING_PONG["horizonSeconds"]
    assert len(log) < 2_000


def _behind_a_preemptor(strategy: str) -> dict[str, Any]:
    """p (priority 3) needs the queue's 4 GPUs held by a (3 GPUs, 30 s grace period,
    plain pods: its quota held until they are gone) and b (1 GPU, gone at once); c
    (priority -1, 1 GPU) arrives behind p while p waits for a."""
    base = {"controller": {"kind": "none"}, "cpu": 0, "memory": 0, "durationSeconds": 1000}
    return {
        "horizonSeconds": 100,
        "cluster": {"nodes": [{"name": "n", "gpus": 64, "cpu": 64}]},
        "priorityClasses": classes(),
        "queues": [
            {
                "name": "q",
                "nominalGpus": 4,
                "orderBy": "priority",
                "queueingStrategy": strategy,
                "preemption": {"withinClusterQueue": "LowerPriority"},
            }
        ],
        "workloads": [
            {**base, "name": "a", "gpus": 3, "queue": "q", "arrival": 0,
             "terminationGracePeriodSeconds": 30, "priorityClassName": "p0"},
            {**base, "name": "b", "gpus": 1, "queue": "q", "arrival": 1,
             "terminationGracePeriodSeconds": 0, "priorityClassName": "p0"},
            {**base, "name": "p", "gpus": 4, "queue": "q", "arrival": 10,
             "priorityClassName": "p3"},
            {**base, "name": "c", "gpus": 1, "queue": "q", "arrival": 11,
             "priorityClassName": "pm1"},
        ],
        "policy": {"preemption": "none"},
    }  # fmt: skip


def test_a_workload_behind_a_pending_preemptor_waits_under_either_strategy():
    """b's GPU is free from t=10 while p waits for a's pods. Under StrictFIFO c waits
    behind the head; under BestEffortFIFO too: a pending preemptor is requeued at once
    and stays the head of its queue (Kueue's preemptor workload), so the workloads
    behind it are not tried. Before, BestEffortFIFO admitted c into that GPU at t=11, p
    preempted it, c was admitted again, and so on at t=11 without end. p is admitted
    once a's pods are gone; c still waits then (p holds the whole quota)."""
    for strategy in ("StrictFIFO", "BestEffortFIFO"):
        log = _run(_behind_a_preemptor(strategy))

        admitted = {e.workload: e.time for e in log if e.reason == ev.ADMITTED}
        assert "c" not in admitted, strategy
        assert admitted["p"] > 10.0, strategy
        assert not [e for e in log if e.reason == ev.SUSPENDED and e.workload == "c"], strategy
