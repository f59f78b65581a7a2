"""Layout of the GPU timeline: node groups and the occupancy a heatmap draws.

Pod spans and preemption links are derived by ``scheduler_core.timeline`` from the log
(the core owns every reading of its events); this module only arranges them:

1. ``node_groups`` splits the cluster into groups a person can scan: racks (a ``rack``,
   ``block`` or ``zone`` label), else pools, cut into chunks of at most 64 nodes.
2. ``occupancy`` integrates spans into GPU-seconds per group and time slice, so a 10,000
   node cluster becomes a few hundred rows of a heatmap instead of 10,000 Gantt rows.
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping
from dataclasses import dataclass
from typing import Any

from scheduler_core.state_area import BASE_STATES, OVERLAY_STATES
from scheduler_core.timeline import Preemption, Span, mig_device_count

__all__ = [
    "BASE_STATES",
    "GROUP_LABELS",
    "MAX_GROUP_NODES",
    "OVERLAY_STATES",
    "SMALL_CLUSTER",
    "NodeGroup",
    "Preemption",
    "Span",
    "heatmap_rows",
    "mig_labels",
    "node_capacity",
    "node_groups",
    "occupancy",
]

GROUP_LABELS = ("rack", "block", "zone", "topology.kubernetes.io/zone")
MAX_GROUP_NODES = 64
SMALL_CLUSTER = 64
"""Up to this many nodes the run page draws one Gantt of them all, above it a heatmap
of node groups."""


@dataclass(frozen=True, slots=True)
class NodeGroup:
    name: str
    nodes: tuple[str, ...]
    gpus: int


def node_groups(
    cluster: Mapping[str, Any],
    *,
    max_nodes: int = MAX_GROUP_NODES,
) -> list[NodeGroup]:
    """Groups in the cluster's own order: by topology label when nodes carry one, else
    by pool (named nodes together), every group cut into chunks of ``max_nodes``."""
    keyed: dict[str, list[tuple[str, int]]] = {}
    for name, gpus, group in _nodes(cluster):
        keyed.setdefault(group, []).append((name, gpus))
    return [chunk for group, nodes in keyed.items() for chunk in _chunks(group, nodes, max_nodes)]


def heatmap_rows(cluster: Mapping[str, Any]) -> dict[str, int] | None:
    """Each node's row in the run page's heatmap of node groups (:func:`node_groups`),
    None for a cluster small enough to be drawn as one Gantt (no heatmap). The worker
    hands it to the timeline, which keeps each row's GPUs held when it keeps no spans."""
    groups = node_groups(cluster)
    if sum(len(g.nodes) for g in groups) <= SMALL_CLUSTER:
        return None
    return {node: i for i, group in enumerate(groups) for node in group.nodes}


def node_capacity(cluster: Mapping[str, Any]) -> dict[str, int]:
    """GPU slots per node of a stored spec's ``cluster``: its whole devices, then the
    devices its MIG instances are carved from (``scheduler_core.timeline`` lays the
    spans out on the same slots)."""
    return {name: gpus for name, gpus, _ in _nodes(cluster)}


def mig_labels(document: Mapping[str, Any], variant: str | None = None) -> dict[str, str]:
    """What each MIG workload of a stored spec holds per pod, by workload name, for the
    Gantt's hover text: ``MIG 3g.40gb``, ``MIG 2 x 1g.10gb``, profiles joined by ``+``.
    The timeline draws an instance at its fraction in milli-GPU; the profile is what the
    pod asked for, and what a reader of ``nvidia.com/mig-3g.40gb`` recognises. A named
    ``variant``'s ``set`` overrides of ``workloads.<name>.mig`` (or of ``gpuMilli``,
    which replaces it) apply; a workload none of them makes MIG keeps the milli label."""
    overrides: dict[str, Any] = {}
    for listed in document.get("variants") or []:
        if variant is not None and listed.get("name") == variant:
            overrides = dict(listed.get("set") or {})
    labels = {}
    for workload in document.get("workloads") or []:
        name = str(workload.get("name", ""))
        mig = overrides.get(f"workloads.{name}.mig", workload.get("mig")) or {}
        if overrides.get(f"workloads.{name}.gpuMilli") is not None:
            mig = {}
        if mig:
            parts = [f"{n} x {p}" if n > 1 else p for p, n in sorted(mig.items())]
            labels[name] = "MIG " + " + ".join(parts)
    return labels


def _devices(shape: Mapping[str, Any]) -> int:
    return int(shape.get("gpus", 0)) + mig_device_count(shape.get("mig") or {})


def _nodes(cluster: Mapping[str, Any]) -> Iterable[tuple[str, int, str]]:
    """(node, gpus, group) in ``Cluster.node_names`` order: pools, then named nodes."""
    for pool in cluster.get("nodePools") or []:
        group = _label_group(pool.get("labels") or {}) or pool["name"]
        for i in range(pool.get("count", 1)):
            yield f"{pool['name']}-{i}", _devices(pool), group
    for node in cluster.get("nodes") or []:
        yield node["name"], _devices(node), _label_group(node.get("labels") or {}) or "nodes"


def _label_group(labels: Mapping[str, str]) -> str:
    return next(
        (f"{key.rsplit('/', 1)[-1]} {labels[key]}" for key in GROUP_LABELS if labels.get(key)), ""
    )


def _chunks(group: str, nodes: list[tuple[str, int]], size: int) -> list[NodeGroup]:
    if len(nodes) <= size:
        return [NodeGroup(group, tuple(n for n, _ in nodes), sum(g for _, g in nodes))]
    return [
        NodeGroup(
            f"{group} {part[0][0]}…{part[-1][0]}",
            tuple(n for n, _ in part),
            sum(g for _, g in part),
        )
        for part in (nodes[i : i + size] for i in range(0, len(nodes), size))
    ]


def occupancy(
    spans: Iterable[Span],
    rows: Mapping[str, int] | None,
    n_rows: int,
    *,
    start: float,
    end: float,
    bins: int,
) -> list[list[float]]:
    """GPU-seconds per row and time slice held by ``spans``; ``rows`` maps a node to its
    row (nodes not in it are skipped; None puts every node in row 0). Linear in the
    number of spans plus rows by bins, whatever the spans' lengths: a difference array
    carries the slices a span covers whole."""
    width = (end - start) / bins
    totals = [[0.0] * bins for _ in range(n_rows)]
    carry = [[0.0] * (bins + 1) for _ in range(n_rows)]
    for span in spans:
        row = 0 if rows is None else rows.get(span.node)
        if row is not None:
            _integrate(totals[row], carry[row], span, start, width, bins)
    for row_totals, row_carry in zip(totals, carry, strict=True):
        running = 0.0
        for i in range(bins):
            running += row_carry[i]
            row_totals[i] += running
    return totals


def _integrate(
    totals: list[float], carry: list[float], span: Span, start: float, width: float, bins: int
) -> None:
    a = max(span.start, start)
    b = min(span.end, start + bins * width)
    if b <= a:
        return
    first = min(bins - 1, int((a - start) / width))
    last = min(bins - 1, int((b - start) / width))
    if first == last:
        totals[first] += (b - a) * span.gpus
        return
    totals[first] += (start + (first + 1) * width - a) * span.gpus
    totals[last] += (b - (start + last * width)) * span.gpus
    if last > first + 1:
        carry[first + 1] += width * span.gpus
        carry[last] -= width * span.gpus
