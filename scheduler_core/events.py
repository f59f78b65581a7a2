"""The event log: what happened, to whom, where and when, like `kubectl describe` events.

Every metric is computed from this log (``metrics.py``) and every chart from the
timeline derived from it (``timeline.py``), so a user can always read why a number is
what it is. Events that carry a quantity put it in ``value``.

:class:`Reason` is the registry of reasons: its values are the strings stored in event
rows and used in API filters (a ``StrEnum``, so they compare equal to those strings and
nothing stored changes), and :data:`REASONS` says, per reason, the Kubernetes event type,
the component that would emit it, and what its ``value`` means and in which unit. A new
reason is added here once; the viewer, the timeline and the metrics read it from here.
"""

from __future__ import annotations

from dataclasses import asdict, dataclass
from enum import StrEnum
from typing import Any


class Reason(StrEnum):
    """Every reason the simulator logs. Pod lifecycle first, then the application
    model's accounting, then nodes."""

    ARRIVED = "Arrived"
    QUEUED = "Queued"
    ADMITTED = "Admitted"
    SUSPENDED = "WorkloadEvicted"
    QUOTA_EXCEEDED = "FailedCreate"
    CREATED = "Created"
    FAILED_SCHEDULING = "FailedScheduling"
    NOT_HELPFUL = "PreemptionNotHelpful"
    NOMINATED = "Nominated"
    VICTIMS_SELECTED = "VictimsSelected"
    PREEMPTED = "Preempted"
    OVER_EVICTED = "OverEviction"
    GROUP_BROKEN = "GroupBroken"
    SCHEDULED = "Scheduled"
    READY = "Ready"
    KILLING = "Killing"
    RELEASED = "Released"
    COMPLETED = "Completed"
    CHECKPOINT = "CheckpointWritten"
    DISRUPTED = "Disrupted"
    LOADING_LOST = "EvictedWhileLoading"
    SESSION_LOST = "SessionLost"
    STRANDED = "Stranded"
    RESUMED = "Resumed"
    RECOVERED = "Recovered"
    WORKLOAD_DONE = "WorkloadCompleted"
    USEFUL_AT_START = "UsefulWorkAtStart"
    USEFUL = "UsefulWork"
    REMAINING = "RemainingWork"
    COMPUTED = "ComputedWork"
    NODE_NOTICE = "SpotInterruptionNotice"
    NODE_CORDONED = "NodeCordoned"
    NODE_LOST = "NodeLost"
    NODE_BACK = "NodeReady"
    STANDBY_CALLED = "StandbyCalled"
    STANDBY_IN_SERVICE = "StandbyInService"
    TO_STANDBY = "NodeToStandby"
    PODS_READY_TIMEOUT = "PodsReadyTimeout"
    WORKLOAD_FAILED = "WorkloadFailed"

    @property
    def info(self) -> ReasonInfo:
        return REASONS[self]


NORMAL, WARNING = "Normal", "Warning"
"""Kubernetes' two event types (``core/v1`` ``EventTypeNormal``/``EventTypeWarning``)."""
SCHEDULER, KUBELET, CONTROLLER = "default-scheduler", "kubelet", "job-controller"
QUEUE, NODES, CLOUD = "admission-queue", "node-controller", "cloud-provider"
MODEL = "application model"
"""What no real cluster emits: the application model's progress, losses and recovery."""
LAB = "disruption-lab"
"""The simulator's own bookkeeping (end-of-run totals, over-eviction diagnostics)."""


@dataclass(frozen=True, slots=True)
class ReasonInfo:
    """What a reason is: its event ``type`` and ``source`` as ``kubectl describe`` would
    show them, what ``value`` holds (``""``: nothing) and its ``unit`` (``""``: none),
    and what ``related`` names."""

    type: str
    source: str
    value: str = ""
    unit: str = ""
    related: str = ""
    doc: str = ""


def _i(
    type_: str, source: str, doc: str, value: str = "", unit: str = "", related: str = ""
) -> ReasonInfo:
    return ReasonInfo(type_, source, value, unit, related, doc)


R = Reason
REASONS: dict[Reason, ReasonInfo] = {
    R.ARRIVED: _i(NORMAL, CONTROLLER, "workload submitted", "members", "pods"),
    R.QUEUED: _i(NORMAL, QUEUE, "waiting in an admission queue (no pods yet)", related="the queue"),
    R.ADMITTED: _i(
        NORMAL, QUEUE, "admitted by its queue: its pods are created", related="the queue"
    ),
    R.SUSPENDED: _i(WARNING, QUEUE, "evicted by queue preemption", related="the preemptor"),
    R.QUOTA_EXCEEDED: _i(
        WARNING,
        CONTROLLER,
        "a ResourceQuota refused the pod; it is retried",
        related="the priority class",
    ),
    R.CREATED: _i(NORMAL, CONTROLLER, "pod created", "1 for a replacement, else 0", "flag"),
    R.FAILED_SCHEDULING: _i(
        WARNING, SCHEDULER, "no node fits the pod", "identical attempts in a row", "attempts"
    ),
    R.NOT_HELPFUL: _i(
        WARNING,
        SCHEDULER,
        "preemption would not let the pod fit",
        "scheduling cycles in that streak",
        "cycles",
    ),
    R.NOMINATED: _i(NORMAL, SCHEDULER, "nominated to a node while its victims terminate"),
    R.VICTIMS_SELECTED: _i(
        NORMAL, SCHEDULER, "on the preemptor: victims chosen on a node", "number of victims", "pods"
    ),
    R.PREEMPTED: _i(WARNING, SCHEDULER, "on a victim", related="the preemptor pod"),
    R.OVER_EVICTED: _i(
        WARNING,
        LAB,
        "on the preemptor: more victims than the minimum",
        "victims beyond the minimum",
        "pods",
    ),
    R.GROUP_BROKEN: _i(WARNING, LAB, "on a victim group", "members still running", "pods"),
    R.SCHEDULED: _i(NORMAL, SCHEDULER, "bound to a node", "GPUs bound", "GPUs"),
    R.READY: _i(NORMAL, KUBELET, "startup done: the pod makes progress"),
    R.KILLING: _i(
        NORMAL,
        KUBELET,
        "SIGTERM sent; GPUs held until Released",
        "seconds until it stops",
        "s",
        related="the cause",
    ),
    R.RELEASED: _i(NORMAL, KUBELET, "stopped, GPUs free", "GPUs freed", "GPUs"),
    R.COMPLETED: _i(NORMAL, KUBELET, "pod finished its work", "GPUs freed", "GPUs"),
    R.CHECKPOINT: _i(
        NORMAL,
        MODEL,
        "a checkpoint became durable; one row stands for a running segment's periodic "
        "writes, the others one interval + write earlier each",
        "durable progress, in seconds of full-strength work",
        "s",
        related="how many periodic writes the row stands for (empty: one)",
    ),
    R.DISRUPTED: _i(
        WARNING, MODEL, "work lost to an interruption", "lost work", "GPU·s", related="the cause"
    ),
    R.LOADING_LOST: _i(
        WARNING, MODEL, "evicted before Ready (the loading treadmill)", "startup lost", "GPU·s"
    ),
    R.SESSION_LOST: _i(WARNING, MODEL, "an interactive session ended by the disruption"),
    R.STRANDED: _i(
        WARNING,
        MODEL,
        "closes an interval in which the workload's live members held GPUs without progress",
        "GPUs held times the interval's length",
        "GPU·s",
    ),
    R.RESUMED: _i(
        NORMAL,
        MODEL,
        "useful progress again after a disruption",
        "time of the disruption it resumes from",
        "s",
    ),
    R.RECOVERED: _i(
        NORMAL,
        MODEL,
        "progress back where it was at a disruption",
        "time of the disruption it recovered from",
        "s",
    ),
    R.WORKLOAD_DONE: _i(NORMAL, CONTROLLER, "workload completed"),
    R.USEFUL_AT_START: _i(
        NORMAL, LAB, "at t=0: progress made before the window", "progress", "GPU·s"
    ),
    R.USEFUL: _i(NORMAL, LAB, "at the end: progress kept", "progress", "GPU·s"),
    R.REMAINING: _i(NORMAL, LAB, "at the end: work still to do", "work", "GPU·s"),
    R.COMPUTED: _i(NORMAL, LAB, "at the end: progress computed in all", "progress", "GPU·s"),
    R.NODE_NOTICE: _i(WARNING, CLOUD, "spot interruption notice"),
    R.NODE_CORDONED: _i(NORMAL, NODES, "node marked unschedulable"),
    R.NODE_LOST: _i(WARNING, NODES, "node left the cluster", "GPUs leaving", "GPUs"),
    R.NODE_BACK: _i(NORMAL, NODES, "node rejoined the cluster", "GPUs rejoining", "GPUs"),
    R.STANDBY_CALLED: _i(
        NORMAL,
        NODES,
        "on a spare: called in for a failed node",
        "seconds until it serves",
        "s",
        related="the failed node",
    ),
    R.STANDBY_IN_SERVICE: _i(
        NORMAL,
        NODES,
        "on a spare: uncordoned, it takes pods in the failed node's place",
        "GPUs entering service",
        "GPUs",
        related="the failed node",
    ),
    R.TO_STANDBY: _i(
        NORMAL, NODES, "a repaired node joins the spare pool (cordoned) instead of serving"
    ),
    R.PODS_READY_TIMEOUT: _i(
        WARNING,
        QUEUE,
        "Kueue waitForPodsReady: pods not all Ready in time; evicted and requeued with backoff",
        "requeue count",
        "count",
        related="the Kueue eviction reason",
    ),
    R.WORKLOAD_FAILED: _i(
        WARNING,
        CONTROLLER,
        "retries exhausted: the Job failed (BackoffLimitExceeded) or Kueue deactivated it "
        "(RequeuingLimitExceeded)",
        "failures or requeues counted",
        "count",
        related="the upstream reason",
    ),
}
del R

# The module-level names the simulator has always used, now enum members.
ARRIVED = Reason.ARRIVED
QUEUED = Reason.QUEUED
ADMITTED = Reason.ADMITTED
SUSPENDED = Reason.SUSPENDED
QUOTA_EXCEEDED = Reason.QUOTA_EXCEEDED
CREATED = Reason.CREATED
FAILED_SCHEDULING = Reason.FAILED_SCHEDULING
NOT_HELPFUL = Reason.NOT_HELPFUL
NOMINATED = Reason.NOMINATED
VICTIMS_SELECTED = Reason.VICTIMS_SELECTED
PREEMPTED = Reason.PREEMPTED
OVER_EVICTED = Reason.OVER_EVICTED
GROUP_BROKEN = Reason.GROUP_BROKEN
SCHEDULED = Reason.SCHEDULED
READY = Reason.READY
KILLING = Reason.KILLING
RELEASED = Reason.RELEASED
COMPLETED = Reason.COMPLETED
CHECKPOINT = Reason.CHECKPOINT
DISRUPTED = Reason.DISRUPTED
LOADING_LOST = Reason.LOADING_LOST
SESSION_LOST = Reason.SESSION_LOST
STRANDED = Reason.STRANDED
RESUMED = Reason.RESUMED
RECOVERED = Reason.RECOVERED
WORKLOAD_DONE = Reason.WORKLOAD_DONE
USEFUL_AT_START = Reason.USEFUL_AT_START
USEFUL = Reason.USEFUL
REMAINING = Reason.REMAINING
COMPUTED = Reason.COMPUTED
NODE_NOTICE = Reason.NODE_NOTICE
NODE_CORDONED = Reason.NODE_CORDONED
NODE_LOST = Reason.NODE_LOST
NODE_BACK = Reason.NODE_BACK
STANDBY_CALLED = Reason.STANDBY_CALLED
STANDBY_IN_SERVICE = Reason.STANDBY_IN_SERVICE
TO_STANDBY = Reason.TO_STANDBY
PODS_READY_TIMEOUT = Reason.PODS_READY_TIMEOUT
WORKLOAD_FAILED = Reason.WORKLOAD_FAILED

COUNTED = frozenset({Reason.FAILED_SCHEDULING, Reason.NOT_HELPFUL})
"""Reasons whose ``value`` counts identical attempts, shown like kubectl's "x7"."""


def reason_info(reason: str) -> ReasonInfo | None:
    """The registry entry of a stored reason string; None for one this version does not
    know (a row written by another version)."""
    try:
        return REASONS[Reason(reason)]
    except ValueError:
        return None


@dataclass(frozen=True, slots=True)
class Event:
    time: float
    reason: Reason
    workload: str = ""
    pod: str = ""
    node: str = ""
    value: float = 0.0
    related: str = ""
    message: str = ""

    def as_dict(self) -> dict[str, Any]:
        """JSON-ready: the reason as its plain string."""
        data = asdict(self)
        data["reason"] = str(self.reason)
        return data


def sort_log(log: list[Event]) -> list[Event]:
    """Time order; events written after the fact (checkpoints, recoveries) slot in.

    ``sorted`` is stable, so events at the same time keep the order they happened in.
    """
    return sorted(log, key=_time)


def _time(event: Event) -> float:
    return event.time
