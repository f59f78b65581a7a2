"""The event log: what happened, to whom, where and when, like `kubectl describe` events.

Every metric is computed from this log (``metrics.py``), so a user can always read why
a number is what it is. Events that carry a quantity put it in ``value``.
"""

from __future__ import annotations

from dataclasses import asdict, dataclass
from typing import Any

# Reasons. Pod lifecycle:
ARRIVED = "Arrived"                  # workload submitted
QUEUED = "Queued"                    # waiting in an admission queue (no pods yet)
ADMITTED = "Admitted"                # admitted by its queue: its pods are created
SUSPENDED = "WorkloadEvicted"        # evicted by queue preemption; related = the preemptor
QUOTA_EXCEEDED = "FailedCreate"      # a ResourceQuota refused the pod; it is retried
CREATED = "Created"                  # pod created (value 1 for a replacement)
FAILED_SCHEDULING = "FailedScheduling"   # value = how many identical attempts in a row
NOT_HELPFUL = "PreemptionNotHelpful"     # value = how many cycles in that streak
NOMINATED = "Nominated"
VICTIMS_SELECTED = "VictimsSelected"  # on the preemptor; value = number of victims
PREEMPTED = "Preempted"              # on a victim; related = the preemptor pod
OVER_EVICTED = "OverEviction"        # on the preemptor; value = victims beyond the minimum
GROUP_BROKEN = "GroupBroken"         # on a victim group; value = members still running
SCHEDULED = "Scheduled"              # bound; value = GPUs
READY = "Ready"
KILLING = "Killing"                  # SIGTERM sent; value = seconds until it stops;
                                     # related = cause
RELEASED = "Released"                # stopped, GPUs free; value = GPUs
COMPLETED = "Completed"              # pod finished its work
# Application and workload:
CHECKPOINT = "CheckpointWritten"     # value = durable progress (s of full-strength work)
DISRUPTED = "Disrupted"              # value = lost work (GPU-s); related = cause
LOADING_LOST = "EvictedWhileLoading"
SESSION_LOST = "SessionLost"
STRANDED = "Stranded"                # value = GPU-s held without progress in a closed interval
RESUMED = "Resumed"                  # value = time of the disruption it resumes from
RECOVERED = "Recovered"              # value = time of the disruption it recovered from
WORKLOAD_DONE = "WorkloadCompleted"
USEFUL_AT_START = "UsefulWorkAtStart"  # t=0: value = GPU-s of progress made before the window
USEFUL = "UsefulWork"                # at the end: value = GPU-s of progress kept
REMAINING = "RemainingWork"          # at the end: value = GPU-s still to do
COMPUTED = "ComputedWork"            # at the end: value = GPU-s of progress computed in all
# Nodes:
NODE_NOTICE = "SpotInterruptionNotice"
NODE_CORDONED = "NodeCordoned"
NODE_LOST = "NodeLost"               # value = GPUs leaving the cluster
NODE_BACK = "NodeReady"              # value = GPUs rejoining


@dataclass(frozen=True, slots=True)
class Event:
    time: float
    reason: str
    workload: str = ""
    pod: str = ""
    node: str = ""
    value: float = 0.0
    related: str = ""
    message: str = ""

    def as_dict(self) -> dict[str, Any]:
        return asdict(self)


def sort_log(log: list[Event]) -> list[Event]:
    """Time order; events written after the fact (checkpoints, recoveries) slot in.

    ``sorted`` is stable, so events at the same time keep the order they happened in.
    """
    return sorted(log, key=_time)


def _time(event: Event) -> float:
    return event.time
