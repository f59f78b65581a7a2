"""Event rows as ``kubectl describe`` shows events: Type, Reason, when, From, Message.

Kubernetes' own reasons keep Kubernetes' wording and sources (default-scheduler,
kubelet, job-controller); what comes from our application model (checkpoints, lost work,
stranded capacity, recovery) says so in its source, "application model", because no
real cluster would emit it.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping
from typing import Any

from scheduler_core.events import COUNTED, LAB, NORMAL, Reason, reason_info

Describe = Callable[[Mapping[str, Any]], str]


def _n(value: float) -> str:
    return f"{value:,.0f}" if float(value).is_integer() or abs(value) >= 100 else f"{value:.3g}"


def _or(text: str, fallback: str) -> str:
    return text or fallback


R = Reason
MESSAGES: dict[Reason, Describe] = {
    R.ARRIVED: lambda e: f"Workload submitted with {_n(e['value'])} member(s)",
    R.QUEUED: lambda e: _or(e["message"], f"Waiting in queue {e['related']}"),
    R.ADMITTED: lambda e: f"Admitted by queue {e['related']}",
    R.SUSPENDED: lambda e: _or(e["message"], "Evicted by its queue"),
    R.QUOTA_EXCEEDED: lambda e: _or(
        e["message"], f"exceeded quota of priority class {e['related']}"
    ),
    R.CREATED: lambda e: f"Created pod: {e['pod']}" + (" (replacement)" if e["value"] else ""),
    R.FAILED_SCHEDULING: lambda e: e["message"],
    R.NOT_HELPFUL: lambda e: e["message"],
    R.NOMINATED: lambda e: f"Nominated to node {e['node']} while its victims terminate",
    R.VICTIMS_SELECTED: lambda e: (
        f"Preempting {_n(e['value'])} victim(s) from node {e['node']}: {e['message']}"
    ),
    R.PREEMPTED: lambda e: _or(
        e["message"], f"Preempted by pod {e['related']} on node {e['node']}"
    ),
    R.OVER_EVICTED: lambda e: e["message"],
    R.GROUP_BROKEN: lambda e: e["message"],
    R.SCHEDULED: lambda e: (
        f"Successfully assigned {e['pod']} to {e['node']} ({_n(e['value'])} GPU)"
    ),
    R.READY: lambda e: "Container started and Ready (startup done)",
    R.KILLING: lambda e: (
        f"Stopping container ({e['related'] or 'deleted'}): stops after {_n(e['value'])}s"
    ),
    R.RELEASED: lambda e: f"Pod terminated; {_n(e['value'])} GPU(s) freed on {e['node']}",
    R.COMPLETED: lambda e: f"Pod completed; {_n(e['value'])} GPU(s) freed",
    R.WORKLOAD_DONE: lambda e: "Workload completed",
    R.CHECKPOINT: lambda e: (
        (f"{e['related']} checkpoints written; the last " if e["related"] else "Checkpoint ")
        + f"durable at {_n(e['value'])}s of progress"
        + _suffix(e["message"])
    ),
    R.DISRUPTED: lambda e: (
        f"{_n(e['value'])} GPU·s of work lost ({e['related']})" + _suffix(e["message"])
    ),
    R.LOADING_LOST: lambda e: f"Evicted before Ready: {_n(e['value'])} GPU·s of startup lost",
    R.SESSION_LOST: lambda e: "Interactive session ended by the disruption",
    R.STRANDED: lambda e: f"{_n(e['value'])} GPU·s held without progress" + _suffix(e["message"]),
    R.RESUMED: lambda e: f"Useful progress again after the disruption at {_n(e['value'])}s",
    R.RECOVERED: lambda e: f"Progress back where it was at the disruption at {_n(e['value'])}s",
    R.USEFUL_AT_START: lambda e: f"{_n(e['value'])} GPU·s of progress made before the run",
    R.USEFUL: lambda e: f"{_n(e['value'])} GPU·s of progress kept",
    R.REMAINING: lambda e: f"{_n(e['value'])} GPU·s of work still to do",
    R.COMPUTED: lambda e: f"{_n(e['value'])} GPU·s of progress computed",
    R.NODE_NOTICE: lambda e: _or(e["message"], "Spot instance interruption notice"),
    R.NODE_CORDONED: lambda e: _or(e["message"], "Node marked unschedulable"),
    R.NODE_LOST: lambda e: _or(e["message"], "Node lost") + f" ({_n(e['value'])} GPUs)",
    R.NODE_BACK: lambda e: f"Node Ready ({_n(e['value'])} GPUs)",
    R.STANDBY_CALLED: lambda e: (
        _or(e["message"], f"Spare called in for {e['related']}")
        + f" (serving in {_n(e['value'])} s)"
    ),
    R.STANDBY_IN_SERVICE: lambda e: _or(e["message"], f"Serving in place of {e['related']}"),
    R.TO_STANDBY: lambda e: _or(e["message"], "Joins the spare pool"),
    R.PODS_READY_TIMEOUT: lambda e: e["message"],
    R.WORKLOAD_FAILED: lambda e: f"{e['related']}: {e['message']}",
}
"""Messages in Kubernetes' wording; type and source come from the core's registry."""
del R


def _raw(event: Mapping[str, Any]) -> str:
    return event["message"]


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
    info = reason_info(event["reason"])
    kind, source = (info.type, info.source) if info else (NORMAL, LAB)
    text = MESSAGES.get(event["reason"], _raw)
    count = int(event["value"]) if event["reason"] in COUNTED and event["value"] > 1 else 1
    return {
        "type": kind,
        "reason": event["reason"],
        "at": clock(event["time"]),
        "time": event["time"],
        "object": _object(event),
        "node": event["node"],
        "from": source,
        "message": text(event),
        "count": count,
        "workload": event["workload"],
        "pod": event["pod"],
    }


def _object(event: Mapping[str, Any]) -> str:
    if event["pod"]:
        return f"pod/{event['pod']}"
    if event["workload"]:
        return f"workload/{event['workload']}"
    return f"node/{event['node']}" if event["node"] else ""
