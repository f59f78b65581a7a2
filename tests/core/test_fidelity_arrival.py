"""Arrivals before t=0 (kubernetes-preemption.md §2): a pod that never failed has no
backoff, so it is tried as soon as it is created, whenever that is; and the pending
members of a recorded workload are pending from the workload's own arrival."""

from __future__ import annotations

from scheduler_core import events as ev


def test_a_workload_arriving_before_zero_is_scheduled_at_its_arrival(lab):
    """§2 Backoff: count == 0 gets no backoff; nothing holds the pod until t=0."""
    out = lab.run(
        nodes=[("n1", 8)],
        horizon=200,
        workloads=[{"name": "a", "gpus": 2, "arrival": -50, "durationSeconds": 100}],
    )
    assert out.scheduled("a-0") == (-50.0, "n1")
    assert out.time_of(ev.COMPLETED, "a-0") == 50.0


def test_pending_members_of_a_recorded_workload_are_pending_from_its_arrival(lab):
    """A snapshot: member 0 runs since -300 on the full node; member 1 was pending at the
    snapshot (arrival 0). It is created at 0, not at -300, so the priority-10 member that
    arrived at -300 cannot have preempted anyone before the snapshot was taken."""
    out = lab.run(
        nodes=[("n1", 4)],
        horizon=100,
        classes={"high": 10, "low": 1},
        workloads=[
            {
                "name": "big",
                "gpus": 2,
                "members": 2,
                "priorityClassName": "high",
                "durationSeconds": 1000,
            },
            {"name": "small", "gpus": 2, "priorityClassName": "low", "durationSeconds": 1000},
        ],
        initial=[("big", "n1", -300.0, 0), ("small", "n1", -200.0)],
        policy={"preemption": "pod"},
    )
    created = [e for e in out.of(ev.CREATED) if e.pod == "big-1"]
    assert [e.time for e in created] == [0.0]
    assert out.of(ev.PREEMPTED)[0].time == 0.0
