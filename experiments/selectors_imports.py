"""What an import read, for the Kubernetes import page's preview (nothing is stored).

Everything here is read off the core's :class:`~scheduler_core.traces.ImportResult`
(its spec, counts, objects per kind and notes): the page never re-derives what the
importer decided.
"""

from __future__ import annotations

from collections import Counter
from typing import Any

from scheduler_core.traces import ImportResult

MAX_WORKLOAD_ROWS = 60


def preview_context(result: ImportResult) -> dict[str, Any]:
    """The preview's tables: objects per kind, the cluster, classes, workloads, notes,
    and how many workloads take each kind's defaults."""
    spec = result.spec
    workloads = spec.workloads
    by_kind = Counter(w.kind.value for w in workloads)
    return {
        "kinds": sorted(result.kinds.items()),
        "object_total": sum(result.kinds.values()),
        "counts": result.counts,
        "notes": result.notes,
        "cluster": _cluster(spec),
        "classes": [
            (c.name, c.value, c.preemption_policy.value, c.global_default)
            for c in spec.priority_classes
        ],
        "workloads": [_workload_row(w) for w in workloads[:MAX_WORKLOAD_ROWS]],
        "more_workloads": max(0, len(workloads) - MAX_WORKLOAD_ROWS),
        "workload_count": len(workloads),
        "kind_usage": dict(by_kind),
        "name": spec.name,
    }


def _cluster(spec: Any) -> dict[str, Any]:
    pools = list(spec.cluster.node_pools)
    named = list(spec.cluster.nodes)
    nodes = sum(p.count for p in pools) + len(named)
    gpus = sum(p.count * p.gpus for p in pools) + sum(n.gpus for n in named)
    return {"nodes": nodes, "gpus": gpus, "pools": [(p.name, p.count, p.gpus) for p in pools]}


def _workload_row(workload: Any) -> dict[str, Any]:
    return {
        "name": workload.name,
        "kind": workload.kind.value,
        "members": workload.members,
        "gpus": workload.gpus,
        "priority_class": workload.priority_class_name or "",
        "controller": workload.controller.kind.value,
        "gang": workload.pod_group is not None and workload.pod_group.min_count > 1,
    }
