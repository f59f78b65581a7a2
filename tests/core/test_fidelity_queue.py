"""Fidelity of the scheduling queue (kubernetes-preemption.md §2): activeQ order, backoff,
the unschedulable pool, and what a retry does (and does not) reserve.

Most scenarios use `policy.preemption: none` (or victims of higher priority) so that only
the queue decides who binds. A "blocker" is a top-priority pod that frees its GPUs when
its `durationSeconds` ends; a "waker" is a GPU-less pod on a small side node whose
completion is a cluster event that wakes parked pods without making room for them.
"""

from __future__ import annotations

import pytest

from scheduler_core import events as ev
from scheduler_core.queue import SchedulingQueue

CLASSES = {"top": 1_000_000, "p100": 100, "p60": 60, "p50": 50, "p20": 20, "p10": 10, "p0": 0}
NO_PREEMPTION = {"preemption": "none"}
SIDE_NODE = {"name": "side", "gpus": 1, "cpu": 1}
"""Too little CPU for any 4-CPU pod (UnschedulableAndUnresolvable), 1 GPU free."""


def blocker(name="blocker", gpus=1, until=10.0):
    return {"name": name, "gpus": gpus, "priorityClassName": "top", "durationSeconds": until}


def waker(name, at):
    return {"name": name, "gpus": 0, "cpu": 0.1, "priorityClassName": "top", "durationSeconds": at}


def pending(name, cls, arrival, gpus=1, **extra):
    return {
        "name": name,
        "gpus": gpus,
        "cpu": 4,
        "priorityClassName": cls,
        "arrival": arrival,
        **extra,
    }


class QueuedPod:
    """The fields of a Pod the queue reads and writes (hashable by identity)."""

    attempts = 0
    queue_ts = backoff_until = parked_at = 0.0
    gpus = priority = seq = 0


# --------------------------------------------------------------------------- activeQ order
@pytest.mark.parametrize(
    ("arrivals", "expected_order"),
    [
        ({"a": ("p10", 1), "b": ("p20", 2), "c": ("p20", 3)}, ["b", "c", "a"]),
        ({"a": ("p20", 3), "b": ("p20", 1), "c": ("p10", 2)}, ["b", "a", "c"]),
        ({"a": ("p10", 1), "b": ("p10", 2), "c": ("p10", 3)}, ["a", "b", "c"]),
        ({"a": ("p0", 1), "b": ("p10", 3), "c": ("p20", 2)}, ["c", "b", "a"]),
    ],
    ids=[
        "priority-first-then-earlier",
        "equal-priority-earlier-first",
        "fifo-within-priority",
        "priority-beats-arrival",
    ],
)
def test_active_queue_orders_by_priority_then_timestamp(lab, arrivals, expected_order):
    """§2 PrioritySort.Less: higher priority first; equal priority, earlier timestamp.
    One GPU frees every 10 s; each pod holds it for 10 s."""
    workloads = [blocker()] + [
        pending(name, cls, t, durationSeconds=10) for name, (cls, t) in arrivals.items()
    ]
    out = lab.run(
        nodes=[("n1", 1)],
        classes=CLASSES,
        workloads=workloads,
        initial=[("blocker", "n1", 0)],
        policy=NO_PREEMPTION,
    )
    bound = out.bindings()
    order = sorted(arrivals, key=lambda name: bound[f"{name}-0"][0])
    assert order == expected_order
    assert [bound[f"{name}-0"][0] for name in order] == [10.0, 20.0, 30.0]


def test_queue_timestamp_resets_when_a_pod_is_requeued_after_failure(lab):
    """§2: the timestamp is reset when the pod is re-queued after a failure. `x` arrives
    first (t=0) but fails again at t=1 (woken at 0.5, retried when its 1 s backoff
    ends); `y` arrives at 0.7 and fails once. When the GPU frees at 10, `y` (timestamp
    0.7) goes before `x` (timestamp 1)."""
    out = lab.run(
        nodes=[("n1", 1), SIDE_NODE],
        classes=CLASSES,
        workloads=[blocker(), waker("w1", 0.5), pending("x", "p10", 0), pending("y", "p10", 0.7)],
        initial=[("blocker", "n1", 0), ("w1", "side", 0)],
        policy=NO_PREEMPTION,
    )
    assert out.scheduled("y-0") == (10.0, "n1")
    assert out.scheduled("x-0") is None


# --------------------------------------------------------------------------- backoff
@pytest.mark.parametrize(
    ("attempts", "failed_at", "expiry"),
    [
        (0, 3.5, 3.5),
        (1, 0.0, 1.0),
        (2, 0.0, 2.0),
        (3, 0.0, 4.0),
        (4, 0.0, 8.0),
        (5, 0.0, 10.0),
        (9, 0.0, 10.0),
        (1, 0.6, 1.0),
        (2, 3.5, 5.0),
        (5, 7.9, 17.0),
    ],
    ids=[
        "never-failed-no-backoff",
        "1s",
        "2s",
        "4s",
        "8s",
        "capped-at-10s",
        "stays-capped",
        "truncated-to-whole-second",
        "2s-from-3.5-truncated",
        "capped-and-truncated",
    ],
)
def test_backoff_doubles_from_1s_to_10s_truncated_to_the_second(attempts, failed_at, expiry):
    """§2: duration(count) = min(1 * 2^(count-1), 10); expiry = truncate(timestamp +
    duration) to a whole second (PopFromBackoffQ window); count 0 ⇒ no backoff."""
    assert SchedulingQueue(1.0, 10.0).backoff_expiry(attempts, failed_at) == expiry


def test_max_backoff_zero_disables_backoff():
    """§2: podMaxBackoff = 0 disables backoff."""
    assert SchedulingQueue(1.0, 0.0).backoff_expiry(4, 2.5) == 2.5


@pytest.mark.parametrize(
    ("arrival", "frees_at", "policy", "bound_at"),
    [
        (0.6, 0.8, {}, 1.0),
        (0.0, 0.5, {}, 1.0),
        (0.6, 1.7, {}, 1.7),
        (0.6, 0.8, {"podInitialBackoffSeconds": 2}, 2.0),
        (0.6, 0.8, {"podMaxBackoffSeconds": 0}, 0.8),
    ],
    ids=[
        "woken-in-backoff-waits-for-truncated-expiry",
        "expiry-1s-after-failure-at-0",
        "woken-after-expiry-goes-at-once",
        "initial-backoff-2s",
        "backoff-disabled",
    ],
)
def test_a_woken_pod_waits_out_its_backoff(lab, arrival, frees_at, policy, bound_at):
    """§2: a pod moved out of the unschedulable pool while its backoff runs goes to
    backoffQ and is retried at the (truncated) expiry, not when the event happened."""
    out = lab.run(
        nodes=[("n1", 1)],
        classes=CLASSES,
        workloads=[blocker(until=frees_at), pending("x", "p10", arrival)],
        initial=[("blocker", "n1", 0)],
        policy={**NO_PREEMPTION, **policy},
    )
    assert out.scheduled("x-0") == (bound_at, "n1")


def test_backoff_doubles_on_each_failed_retry_and_caps_at_10s(lab):
    """§2: failures at t=0, 1, 3, 7, 15 (each retry forced by a waker, each waiting for
    the previous backoff of 1, 2, 4, 8 s) give expiries 1, 3, 7, 15, then 15 + min(16, 10)
    = 25. The GPU frees at 15.5, so the pod binds when its last backoff ends, at 25."""
    wakers = [waker(f"w{i}", t) for i, t in enumerate((0.5, 1.5, 3.5, 7.5))]
    out = lab.run(
        nodes=[("n1", 1), SIDE_NODE],
        classes=CLASSES,
        workloads=[blocker(until=15.5), *wakers, pending("x", "p10", 0)],
        initial=[("blocker", "n1", 0)] + [(w["name"], "side", 0) for w in wakers],
        policy=NO_PREEMPTION,
    )
    assert out.scheduled("x-0") == (25.0, "n1")


def test_unschedulable_pods_are_flushed_after_five_minutes():
    """§2: the leftover flush moves a pod parked for longer than 5 min (strictly)."""
    queue = SchedulingQueue(1.0, 10.0)
    pod = QueuedPod()
    queue.park(pod, 0.0)
    assert queue.flush_leftovers(300.0) == 0
    assert queue.flush_leftovers(300.5) == 1
    assert queue.pop() is pod


# --------------------------------------------------------------------------- no reservation
def test_a_retry_is_not_a_reservation(lab):
    """§2 / domain §4: `big` (priority 50, 4 GPUs) waits first, but when 2 GPUs free at
    t=10 the later, lower-priority `small` (2 GPUs) takes them: nobody holds freed capacity
    for a pod that cannot use it. (`big` cannot preempt: both holders are top priority.)"""
    out = lab.run(
        nodes=[("n1", 4)],
        classes=CLASSES,
        workloads=[
            blocker("b1", gpus=2, until=10),
            blocker("b2", gpus=2, until=1e6),
            pending("big", "p50", 0, gpus=4),
            pending("small", "p10", 1, gpus=2),
        ],
        initial=[("b1", "n1", 0), ("b2", "n1", 0)],
    )
    assert out.scheduled("small-0") == (10.0, "n1")
    assert out.scheduled("big-0") is None
    assert out.preempted() == []


def test_never_pods_jump_the_queue_but_evict_nobody(lab):
    """§1/§2: a `Never` pod keeps its priority order in the queue (it binds before the
    earlier, lower-priority `w`) but never evicts: `holder` (60 < 100) on n2 is untouched."""
    classes = [{"name": n, "value": v} for n, v in CLASSES.items()]
    classes.append({"name": "p100-never", "value": 100, "preemptionPolicy": "Never"})
    out = lab.run(
        nodes=[("n1", 1), ("n2", 1)],
        classes=classes,
        workloads=[
            blocker(),
            {"name": "holder", "gpus": 1, "priorityClassName": "p60"},
            pending("w", "p50", 1),
            pending("polite", "p100-never", 2),
        ],
        initial=[("blocker", "n1", 0), ("holder", "n2", -5)],
    )
    assert out.preempted() == []
    assert out.of(ev.VICTIMS_SELECTED) == []
    assert out.scheduled("polite-0") == (10.0, "n1")
    assert out.scheduled("w-0") is None


def test_a_deleted_pod_wakes_pods_that_preemption_could_now_help(lab):
    """§2: a parked pod returns when a relevant cluster event happens; upstream the
    NodeResourcesFit hint queues it on *any* scheduled pod's deletion (a Succeeded pod
    leaves the scheduler's informer, so it counts). `p` (100, 4 GPUs) is not helped at
    t=0: n1 holds `h` (200) and `l` (0), 2 GPUs each. When h completes at t=10, only 2
    GPUs are free, but preempting l now makes room: p is retried at 10, preempts l, and
    binds when l has stopped (5 s)."""
    classes = {**CLASSES, "p200": 200}
    out = lab.run(
        nodes=[("n1", 4)],
        classes=classes,
        workloads=[
            {"name": "h", "gpus": 2, "priorityClassName": "p200", "durationSeconds": 20},
            {"name": "l", "gpus": 2, "priorityClassName": "p0"},
            {"name": "p", "gpus": 4, "priorityClassName": "p100"},
        ],
        initial=[("h", "n1", -10), ("l", "n1", -10)],
    )
    assert out.time_of(ev.NOT_HELPFUL, "p-0") == 0.0
    assert [(e.time, e.node) for e in out.of(ev.VICTIMS_SELECTED, "p-0")] == [(10.0, "n1")]
    assert out.scheduled("p-0") == (15.0, "n1")
