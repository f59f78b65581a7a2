"""The chart bug of issue #12 as a spec: S1 with a one-pod urgent workload at t=600, so
`pod` preemption evicts one worker of the synchronous 4-worker training and its three
survivors hold 6 GPUs without progress until the replacement is Ready (t=2,585)."""

from __future__ import annotations

from typing import Any

import yaml

import scheduler_core as sc

GANG_NAME = "gang: one member preempted"


def gang_document() -> dict[str, Any]:
    document = yaml.safe_load(sc.get_preset("s1-training-vs-shards").text)
    document["name"] = GANG_NAME
    urgent = next(w for w in document["workloads"] if w["name"] == "urgent")
    urgent.update(members=1, arrival=600, podGroup={"minCount": 1})
    document["variants"] = [{"name": "pod", "preemption": "pod"}]
    return document


def stranded_interval_from_events(events: Any) -> tuple[float, float]:
    """What the log says: from the training member's preemption to the Stranded event
    that closes the wait (the replacement's Ready)."""
    preempted = next(e for e in events if e.reason == "Preempted" and e.workload == "train")
    closed = next(e for e in events if e.reason == "Stranded" and e.workload == "train")
    return float(preempted.time), float(closed.time)
