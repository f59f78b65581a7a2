"""The spec as export → import must give it back, for comparing the two.

Two differences are unavoidable and carry no meaning for a simulation, so both sides
are brought to one form: the initial state lists each workload's pods together (in
workload order, then member), and every initial pod names its member (one without a
member takes the next free one, as the engine does).
"""

from __future__ import annotations

from typing import Any

from scheduler_core.spec import ExperimentSpec


def normalised(spec: ExperimentSpec) -> dict[str, Any]:
    """``spec`` as a JSON-ready mapping in the form both sides of a round trip share."""
    data = spec.model_dump(mode="json", by_alias=True)
    rank = {w.name: i for i, w in enumerate(spec.workloads)}
    members = {w.name: w.members for w in spec.workloads}
    entries = data["initialState"]
    for name in members:
        own = [e for e in entries if e["workload"] == name]
        taken = {e["member"] for e in own if e["member"] is not None}
        free = iter(m for m in range(members[name]) if m not in taken)
        for entry in own:
            if entry["member"] is None:
                entry["member"] = next(free)
    entries.sort(key=lambda e: (rank.get(e["workload"], len(rank)), e["member"]))
    return data
