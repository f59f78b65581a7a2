"""Alibaba cluster-trace-gpu-v2025: GPU-disaggregated DLRM inference instances.

Each instance (pod) becomes a one-member inference workload. Empty times mean the event
happened outside the trace window: no creation time means the instance was already
running at the start (it arrives at 0), no deletion time means it still ran at the end
(``durationSeconds: null``, it runs to the horizon). Times are rounded to whole seconds.
The trace has no node inventory: pass one with ``--nodes`` (spot, pai, csv), or a
cluster is derived, sized to the peak concurrent requests (docs/traces.md).
"""

from __future__ import annotations

import math
from collections.abc import Sequence
from dataclasses import dataclass
from typing import Any

from scheduler_core.traces.build import Origin, dns_name
from scheduler_core.traces.errors import ErrorLog
from scheduler_core.traces.options import Draft, ImportOptions
from scheduler_core.traces.qos import DLRM_QOS, QosEntry, QosMapping
from scheduler_core.traces.source import CsvTable, Row, TraceFile

COLUMNS = (
    "instance_sn",
    "role",
    "app_name",
    "cpu_request",
    "gpu_request",
    "memory_request",
    "creation_time",
    "scheduled_time",
    "deletion_time",
)
ATTRIBUTION = (
    "Alibaba cluster-trace-gpu-v2025 (disaggregated DLRM); research/study use, no "
    "redistribution licence. Cite: Yang et al., NSDI '25."
)
HEADROOM = 1.25
GPU_TAINT = {"key": "nvidia.com/gpu", "value": "present", "effect": "NoSchedule"}
GPU_TOLERATION = {"key": "nvidia.com/gpu", "operator": "Exists", "effect": "NoSchedule"}
GPU_NODE = {"gpus": 8, "cpu": 128.0, "memory": 1024.0, "taints": [GPU_TAINT]}
CPU_NODE = {"gpus": 0, "cpu": 192.0, "memory": 1024.0}


@dataclass(frozen=True, slots=True)
class Instance:
    name: str
    origin: Origin
    entry: QosEntry
    gpus: int
    cpu: float
    memory: float
    start: float
    """When it began holding resources: its scheduled time, 0 if before the window."""
    arrival: float
    end: float | None


def read_dlrm(files: Sequence[TraceFile], options: ImportOptions, log: ErrorLog) -> Draft:
    draft = Draft(name=options.name or "dlrm-replay", description=ATTRIBUTION)
    mapping = options.qos_map or DLRM_QOS
    instances: list[Instance] = []
    pending = 0
    for file in files:
        with file.lines() as lines:
            table = CsvTable(file.name, lines, log)
            if not table.require(*COLUMNS):
                continue
            for row in table.rows():
                instance = _instance(row, mapping)
                if instance is None and row.ok:
                    pending += 1
                elif instance is not None:
                    instances.append(instance)
    draft.priority_classes = mapping.priority_classes()
    draft.counts.update(pods=len(instances) + pending, skipped_pending=pending)
    if log or not instances:
        return draft
    draft.horizon_seconds = options.horizon_seconds or _last_time(instances)
    _add_workloads(draft, instances, options, log)
    if options.nodes is None:
        _derive_cluster(draft, instances)
    draft.notes.append("max_instance_per_node (anti-affinity) is not modelled")
    if pending:
        draft.notes.append(f"{pending} instance(s) left out: never scheduled in the window")
    return draft


def _instance(row: Row, mapping: QosMapping) -> Instance | None:
    """The row's instance; None (with ``row.ok``) for one never scheduled: left out."""
    name, app = row.text("instance_sn"), row.text("app_name")
    role = row.text("role")
    entry = mapping.entry(role or "")
    if role is not None and entry is None:
        row.error("role", f"'{role}' is not in the mapping (mapped: {', '.join(mapping.qos)})")
    gpus, cpu = row.integer("gpu_request"), row.number("cpu_request")
    memory = row.number("memory_request")
    created, scheduled, deleted = (_seconds(row, c) for c in COLUMNS[-3:])
    _check_order(row, created, scheduled, deleted)
    if (
        not row.ok
        or name is None
        or app is None
        or entry is None
        or gpus is None
        or cpu is None
        or memory is None
    ):
        return None
    if created is not None and scheduled is None:
        return None
    return Instance(
        dns_name(f"{app}-{name}"),
        Origin(row.file, row.line),
        entry,
        gpus,
        cpu,
        memory,
        scheduled or 0.0,
        created or 0.0,
        deleted,
    )


def _seconds(row: Row, column: str) -> float | None:
    value = row.number(column, required=False)
    return None if value is None else float(round(value))


def _check_order(
    row: Row, created: float | None, scheduled: float | None, deleted: float | None
) -> None:
    if created is not None and scheduled is not None and scheduled < created:
        row.error("scheduled_time", f"{scheduled:g} is before creation_time {created:g}")
    began = scheduled if scheduled is not None else created
    if began is not None and deleted is not None and deleted < began:
        row.error("deletion_time", f"{deleted:g} is before {began:g}")


def _last_time(instances: list[Instance]) -> float:
    return max(1.0, *(max(i.arrival, i.start, i.end or 0.0) for i in instances))


def _add_workloads(
    draft: Draft, instances: list[Instance], options: ImportOptions, log: ErrorLog
) -> None:
    seen: set[str] = set()
    for instance in sorted(instances, key=lambda i: i.arrival):
        if instance.name in seen:
            log.add(
                instance.origin.file,
                instance.origin.line,
                1,
                f"instance_sn: workload name '{instance.name}' is a duplicate",
            )
            continue
        seen.add(instance.name)
        fields = _workload(instance, options)
        if instance.gpus and options.nodes is None:
            fields["tolerations"] = [GPU_TOLERATION]
        draft.add_workload(fields, instance.origin.file, instance.origin.line)
    draft.counts["workloads"] = len(draft.workloads)


def _workload(instance: Instance, options: ImportOptions) -> dict[str, Any]:
    kind = instance.entry.kind.value
    defaults = options.defaults.for_kind(kind)
    startup = defaults.startup_seconds
    duration = None
    if instance.end is not None:
        lifetime = instance.end - instance.start
        startup = min(startup, lifetime)
        duration = lifetime - startup
    return {
        "name": instance.name,
        "kind": kind,
        "gpus": instance.gpus,
        "cpu": instance.cpu,
        "memory": instance.memory,
        "priorityClassName": instance.entry.priority_class,
        "arrival": instance.arrival,
        "durationSeconds": duration,
        **defaults.workload_fields(),
        "startupSeconds": startup,
    }


def _derive_cluster(draft: Draft, instances: list[Instance]) -> None:
    """Enough 8-GPU nodes for the peak concurrent GPU instances, enough CPU nodes for the
    peak CPU instances, each with 25% headroom for imperfect packing. GPU nodes are tainted
    (and only GPU instances tolerate it), as GPU pools usually are, so CPU instances cannot
    crowd GPU instances out of the capacity sized for them."""
    gpu = [i for i in instances if i.gpus]
    cpu = [i for i in instances if not i.gpus]
    origin = Origin(instances[0].origin.file, 0)
    for name, shape, members in (("gpu", GPU_NODE, gpu), ("cpu", CPU_NODE, cpu)):
        if not members:
            continue
        count = _nodes_needed(members, shape, draft.horizon_seconds)
        for index in range(count):
            draft.nodes.add(f"{name}-{index}", name, shape, origin)
    draft.counts["nodes"] = draft.nodes.node_count
    draft.notes.append(
        f"no node inventory given: derived {draft.nodes.node_count} nodes "
        "(tainted 8-GPU nodes and CPU-only nodes) from the peak concurrent "
        "dominant shares, +25%"
    )


def _nodes_needed(instances: list[Instance], shape: dict[str, Any], horizon: float) -> int:
    """The peak concurrent sum of each instance's dominant share of a node (its largest
    fraction of the node's GPUs, CPUs or memory): a big instance counts for what it
    blocks, not just for its CPUs. Plus headroom for packing."""
    changes: list[tuple[float, int, float]] = []
    for i in instances:
        share = max(
            i.gpus / shape["gpus"] if shape["gpus"] else 0.0,
            i.cpu / shape["cpu"],
            i.memory / shape["memory"],
        )
        changes.append((i.start, 1, share))
        changes.append((horizon if i.end is None else i.end, 0, -share))
    current = peak = 0.0
    for _, _, delta in sorted(changes):
        current += delta
        peak = max(peak, current)
    return max(1, math.ceil(peak * HEADROOM))
