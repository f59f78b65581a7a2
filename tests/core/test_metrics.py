"""metrics.md, number by number, on small runs whose figures can be worked out by hand."""

from __future__ import annotations

from typing import Any

import pytest

import scheduler_core as sc
from scheduler_core import events as ev
from scheduler_core.metrics import confidence_interval, percentile

TWO_NODES = {"nodes": [{"name": "a", "gpus": 8}, {"name": "b", "gpus": 8}]}
CLASSES = [{"name": "low", "value": 10, "globalDefault": True}, {"name": "high", "value": 1000}]


def simulate(workloads: list[dict[str, Any]], **extra: Any) -> sc.ReplicationResult:
    spec = {
        "horizonSeconds": 1000,
        "cluster": TWO_NODES,
        "priorityClasses": CLASSES,
        "workloads": workloads,
        **extra,
    }
    return sc.simulate(sc.parse_spec(spec), "default")


def record(result: sc.ReplicationResult, name: str) -> Any:
    return next(r for r in result.workloads if r.workload == name)


def synchronous_group_preempted() -> sc.ReplicationResult:
    """`train`: 2 members x 4 GPUs on node a, checkpoint every 100 s (write 0); node b is
    full of high-priority `block`. At t=250 a 4-GPU urgent pod evicts one member, so the
    group loses 50 s x 8 GPUs and the survivor is stranded."""
    return simulate(
        [
            {
                "name": "train",
                "members": 2,
                "gpus": 4,
                "durationSeconds": 5000,
                "recovery": {"model": "synchronous"},
                "checkpoint": {"intervalSeconds": 100},
                "terminationGracePeriodSeconds": 30,
                "stopSeconds": 10,
                "startupSeconds": 0,
                "controller": {"kind": "job"},
            },
            {
                "name": "block",
                "gpus": 8,
                "durationSeconds": 5000,
                "priorityClassName": "high",
                "controller": {"kind": "none"},
            },
            {
                "name": "urgent",
                "gpus": 4,
                "arrival": 250,
                "durationSeconds": 300,
                "priorityClassName": "high",
                "urgent": True,
                "startupSeconds": 20,
                "controller": {"kind": "none"},
            },
        ],
        initialState=[
            {"workload": "train", "node": "a"},
            {"workload": "train", "node": "a"},
            {"workload": "block", "node": "b"},
        ],
    )


def test_lost_work_is_every_members_gpus_since_the_checkpoint() -> None:
    """metrics.md lost_work, synchronous group: all members' GPUs x (disruption - last
    checkpoint) = 8 x (250 - 200)."""
    assert record(synchronous_group_preempted(), "train").lost_work == 400


def test_preemptor_milestones() -> None:
    """Selected at arrival, released after the victim's stopSeconds (10 s), scheduled then,
    useful after the urgent pod's 20 s startup."""
    urgent = record(synchronous_group_preempted(), "urgent")
    assert urgent.time_to_victims_selected == 0
    assert urgent.time_to_victims_released == 10
    assert urgent.release_latency == 10
    assert urgent.time_to_group_scheduled == 10
    assert urgent.time_to_group_useful == 30
    assert urgent.completion_time == 330


def test_the_survivor_is_stranded_until_the_group_can_run_again() -> None:
    """The surviving member (4 GPUs) holds its GPUs without progress from 250 until the
    horizon: the replacement cannot fit while the urgent pod runs until 580, then it
    binds and the group resumes."""
    result = synchronous_group_preempted()
    train = record(result, "train")
    resumed = [e for e in result.events if e.reason == ev.RESUMED and e.workload == "train"]
    assert [e.time for e in resumed] == [580.0]
    assert train.stranded_capacity == 4 * (580 - 250)
    assert train.time_to_resume == 330
    assert train.time_to_recover == 330 + 50  # redo the 50 s lost
    assert train.pods_terminated == 1
    assert train.restarts == 1


def test_gpu_utilization_and_goodput() -> None:
    """Allocated GPU-seconds over what the cluster offered; useful progress over that."""
    result = synchronous_group_preempted()
    # b: block 8 GPUs all along; a: the survivor 4 all along, the victim 4 until it stops
    # at 260, the urgent pod 4 from 260 to 580 (20 s startup + 300 s), the replacement 4
    # from 580: node a is never idle.
    allocated = (8 * 1000) + (4 * 1000) + (4 * 260) + (4 * 320) + 4 * (1000 - 580)
    assert allocated == 16 * 1000
    assert result.summary["gpu_utilization"] == pytest.approx(allocated / (16 * 1000))
    useful = sum(max(0.0, r.useful_work) for r in result.workloads)
    assert result.summary["goodput"] == pytest.approx(useful / allocated)


def test_wasted_gpu_seconds_adds_lost_stranded_and_evicted_startup() -> None:
    train = record(synchronous_group_preempted(), "train")
    assert train.wasted_gpu_seconds == train.lost_work + train.stranded_capacity


def test_independent_shard_loses_only_its_own_work() -> None:
    result = simulate(
        [
            {
                "name": "shards",
                "members": 8,
                "gpus": 1,
                "durationSeconds": 5000,
                "checkpoint": {"intervalSeconds": 60},
                "controller": {"kind": "none"},
            },
            {
                "name": "block",
                "gpus": 8,
                "durationSeconds": 5000,
                "priorityClassName": "high",
                "controller": {"kind": "none"},
            },
            {
                "name": "urgent",
                "gpus": 1,
                "arrival": 90,
                "durationSeconds": 100,
                "priorityClassName": "high",
                "controller": {"kind": "none"},
            },
        ],
        initialState=[
            *({"workload": "shards", "node": "a"} for _ in range(8)),
            {"workload": "block", "node": "b"},
        ],
    )
    assert record(result, "shards").lost_work == 30  # one shard, 1 GPU x (90 - 60)
    assert record(result, "shards").pods_terminated == 1


def test_preempted_while_loading_loses_the_startup_spent() -> None:
    result = simulate(
        [
            {
                "name": "replica",
                "kind": "inference",
                "gpus": 8,
                "startupSeconds": 300,
                "recovery": {"model": "serving"},
                "controller": {"kind": "deployment"},
            },
            {
                "name": "block",
                "gpus": 8,
                "durationSeconds": 5000,
                "priorityClassName": "high",
                "controller": {"kind": "none"},
            },
            {
                "name": "urgent",
                "gpus": 8,
                "arrival": 120,
                "durationSeconds": 100,
                "priorityClassName": "high",
                "controller": {"kind": "none"},
            },
        ]
    )
    replica = record(result, "replica")
    assert replica.preempted_while_loading == 1
    assert replica.lost_work == 8 * 120


def test_session_lost_is_counted() -> None:
    result = simulate(
        [
            {
                "name": "notebook",
                "kind": "notebook",
                "gpus": 8,
                "recovery": {"model": "interactive"},
                "controller": {"kind": "none"},
            },
            {
                "name": "block",
                "gpus": 8,
                "durationSeconds": 5000,
                "priorityClassName": "high",
                "controller": {"kind": "none"},
            },
            {
                "name": "urgent",
                "gpus": 8,
                "arrival": 100,
                "durationSeconds": 100,
                "priorityClassName": "high",
                "controller": {"kind": "none"},
            },
        ]
    )
    assert record(result, "notebook").sessions_lost == 1
    assert result.summary["sessions_lost"] == 1


def test_queue_wait_and_completion_per_priority_class() -> None:
    result = simulate(
        [
            {"name": f"job-{i}", "gpus": 8, "durationSeconds": 100, "controller": {"kind": "none"}}
            for i in range(3)
        ]
    )
    waits = sorted(r.queue_wait for r in result.workloads)
    assert waits == [0, 0, 100]
    by_class = result.by_priority_class["low"]
    assert by_class["queue_wait_p50"] == 0
    assert by_class["completion_time_p95"] == pytest.approx(percentile([100, 100, 200], 95))


def test_replications_aggregate_to_a_mean_and_a_confidence_interval() -> None:
    """A spot reclaim of a random half of the pool differs per replication."""
    spec = sc.parse_spec(
        {
            "horizonSeconds": 2000,
            "replications": 4,
            "seed": 3,
            "cluster": {"nodePools": [{"name": "gpu", "count": 4, "gpus": 8}]},
            "priorityClasses": CLASSES,
            "workloads": [
                {
                    "name": "job",
                    "members": 3,
                    "gpus": 8,
                    "durationSeconds": 5000,
                    "checkpoint": {"intervalSeconds": 400},
                }
            ],
            "events": [
                {"at": 700, "type": "spot-reclaim", "pool": "gpu", "count": 2, "noticeSeconds": 60}
            ],
        }
    )
    [variant] = sc.run_experiment(spec)
    lost = [r.summary["lost_work"] for r in variant.replications]
    assert len(lost) == 4
    mean, half = confidence_interval(lost)
    assert variant.aggregate["lost_work"]["mean"] == pytest.approx(mean)
    assert variant.aggregate["lost_work"]["ci95"] == pytest.approx(half)
    assert variant.aggregate["lost_work"]["n"] == 4
    assert len({r.seed for r in variant.replications}) == 4


def test_confidence_interval_uses_students_t() -> None:
    mean, half = confidence_interval([1.0, 2.0, 3.0])
    assert mean == 2.0
    assert half == pytest.approx(4.303 * 1.0 / 3**0.5, rel=1e-4)  # t(0.975, 2) = 4.3027
