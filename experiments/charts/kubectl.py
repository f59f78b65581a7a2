"""Event rows as ``kubectl describe`` shows events: Type, Reason, when, From, Message.

Kubernetes' own reasons keep Kubernetes' wording and sources (default-scheduler,
kubelet, job-controller); what comes from our application model (checkpoints, lost work,
stranded capacity, recovery) says so in its source, "application model", because no
real cluster would emit it.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping
from typing import Any

NORMAL, WARNING = "Normal", "Warning"
SCHEDULER, KUBELET, CONTROLLER = "default-scheduler", "kubelet", "job-controller"
MODEL, LAB, QUEUE, NODES = "application model", "disruption-lab", "admission-queue", \
    "node-controller"

Describe = Callable[[Mapping[str, Any]], str]


def _n(value: float) -> str:
    return f"{value:,.0f}" if float(value).is_integer() or abs(value) >= 100 else f"{value:.3g}"


def _or(text: str, fallback: str) -> str:
    return text or fallback


REASONS: dict[str, tuple[str, str, Describe]] = {
    "Arrived": (NORMAL, CONTROLLER, lambda e: f"Workload submitted with {_n(e['value'])} "
                                              "member(s)"),
    "Queued": (NORMAL, QUEUE, lambda e: _or(e["message"], f"Waiting in queue {e['related']}")),
    "Admitted": (NORMAL, QUEUE, lambda e: f"Admitted by queue {e['related']}"),
    "WorkloadEvicted": (WARNING, QUEUE, lambda e: _or(e["message"], "Evicted by its queue")),
    "FailedCreate": (WARNING, CONTROLLER, lambda e: _or(
        e["message"], f"exceeded quota of priority class {e['related']}")),
    "Created": (NORMAL, CONTROLLER, lambda e: f"Created pod: {e['pod']}"
                + (" (replacement)" if e["value"] else "")),
    "FailedScheduling": (WARNING, SCHEDULER, lambda e: e["message"]),
    "PreemptionNotHelpful": (WARNING, SCHEDULER, lambda e: e["message"]),
    "Nominated": (NORMAL, SCHEDULER, lambda e: f"Nominated to node {e['node']} while its "
                                               "victims terminate"),
    "VictimsSelected": (NORMAL, SCHEDULER, lambda e: f"Preempting {_n(e['value'])} victim(s) "
                                                     f"from node {e['node']}: {e['message']}"),
    "Preempted": (WARNING, SCHEDULER, lambda e: _or(
        e["message"], f"Preempted by pod {e['related']} on node {e['node']}")),
    "OverEviction": (WARNING, LAB, lambda e: e["message"]),
    "GroupBroken": (WARNING, LAB, lambda e: e["message"]),
    "Scheduled": (NORMAL, SCHEDULER, lambda e: f"Successfully assigned {e['pod']} to "
                                               f"{e['node']} ({_n(e['value'])} GPU)"),
    "Ready": (NORMAL, KUBELET, lambda e: "Container started and Ready (startup done)"),
    "Killing": (NORMAL, KUBELET, lambda e: f"Stopping container ({e['related'] or 'deleted'}): "
                                           f"stops after {_n(e['value'])}s"),
    "Released": (NORMAL, KUBELET, lambda e: f"Pod terminated; {_n(e['value'])} GPU(s) freed "
                                            f"on {e['node']}"),
    "Completed": (NORMAL, KUBELET, lambda e: f"Pod completed; {_n(e['value'])} GPU(s) freed"),
    "WorkloadCompleted": (NORMAL, CONTROLLER, lambda e: "Workload completed"),
    "CheckpointWritten": (NORMAL, MODEL, lambda e: f"Checkpoint durable at {_n(e['value'])}s "
                                                   "of progress" + _suffix(e["message"])),
    "Disrupted": (WARNING, MODEL, lambda e: f"{_n(e['value'])} GPU·s of work lost "
                                            f"({e['related']})" + _suffix(e["message"])),
    "EvictedWhileLoading": (WARNING, MODEL, lambda e: f"Evicted before Ready: {_n(e['value'])} "
                                                      "GPU·s of startup lost"),
    "SessionLost": (WARNING, MODEL, lambda e: "Interactive session ended by the disruption"),
    "Stranded": (WARNING, MODEL, lambda e: f"{_n(e['value'])} GPU·s held without progress"
                                           + _suffix(e["message"])),
    "Resumed": (NORMAL, MODEL, lambda e: "Useful progress again after the disruption at "
                                         f"{_n(e['value'])}s"),
    "Recovered": (NORMAL, MODEL, lambda e: "Progress back where it was at the disruption at "
                                           f"{_n(e['value'])}s"),
    "UsefulWorkAtStart": (NORMAL, LAB, lambda e: f"{_n(e['value'])} GPU·s of progress made "
                                                 "before the run"),
    "UsefulWork": (NORMAL, LAB, lambda e: f"{_n(e['value'])} GPU·s of progress kept"),
    "RemainingWork": (NORMAL, LAB, lambda e: f"{_n(e['value'])} GPU·s of work still to do"),
    "ComputedWork": (NORMAL, LAB, lambda e: f"{_n(e['value'])} GPU·s of progress computed"),
    "SpotInterruptionNotice": (WARNING, "cloud-provider", lambda e: _or(
        e["message"], "Spot instance interruption notice")),
    "NodeCordoned": (NORMAL, NODES, lambda e: _or(e["message"], "Node marked unschedulable")),
    "NodeLost": (WARNING, NODES, lambda e: _or(e["message"], "Node lost") + f" "
                                           f"({_n(e['value'])} GPUs)"),
    "NodeReady": (NORMAL, NODES, lambda e: f"Node Ready ({_n(e['value'])} GPUs)"),
}
COUNTED = frozenset({"FailedScheduling", "PreemptionNotHelpful"})
"""Reasons whose ``value`` counts identical attempts, shown like kubectl's "x7"."""


def _suffix(message: str) -> str:
    return f": {message}" if message else ""


def clock(seconds: float) -> str:
    """Simulated time as h:mm:ss (tenths when not whole); negative before the run."""
    sign = "-" if seconds < 0 else ""
    tenths_total = round(abs(seconds) * 10)
    whole, tenth = divmod(tenths_total, 10)
    hours, rest = divmod(whole, 3600)
    minutes, secs = divmod(rest, 60)
    return f"{sign}{hours}:{minutes:02d}:{secs:02d}" + (f".{tenth}" if tenth else "")


def describe(event: Mapping[str, Any]) -> dict[str, Any]:
    """One row of the event log viewer."""
    kind, source, text = REASONS.get(event["reason"], (NORMAL, LAB, lambda e: e["message"]))
    count = int(event["value"]) if event["reason"] in COUNTED and event["value"] > 1 else 1
    return {"type": kind, "reason": event["reason"], "at": clock(event["time"]),
            "time": event["time"], "object": _object(event), "node": event["node"],
            "from": source, "message": text(event), "count": count,
            "workload": event["workload"], "pod": event["pod"]}


def _object(event: Mapping[str, Any]) -> str:
    if event["pod"]:
        return f"pod/{event['pod']}"
    if event["workload"]:
        return f"workload/{event['workload']}"
    return f"node/{event['node']}" if event["node"] else ""
