"""GPU fragmentation over time, as the FGD paper measures it (#18 §1).

Weng et al., "Beware of Fragmentation: Scheduling GPU-Sharing Workloads with
Fragmentation Gradient Descent", USENIX ATC'23, §3.2 ("Quantifying GPU fragmentation"):

- for a node n and a task m, F_n(m) is the node's free GPU capacity that m cannot use:
  all of it when m cannot run on n at all (too little CPU, memory or GPU, another GPU
  model, or m asks for no GPU); otherwise the free part of each device that holds less
  than min(request, 1) GPU;
- for a target workload M of task kinds with popularities p_m, F_n(M) = sum p_m F_n(m),
  and the cluster's fragmentation is the sum over its nodes.

The target workload here is the experiment's own: one kind per workload, weighted by its
members (the "typical pod" of docs/metrics.md). The metric is the time average over
[0, horizon] of F(t), as a share of the cluster's GPUs: 0 when every free GPU could be
used by the pods that come, 1 when nothing free is usable. Only measured where devices
are tracked one by one (some workload shares a device with gpuMilli): on whole GPUs the
log's stranded capacity already tells that story, and MIG instances are fixed slices.

The cluster recomputes one node's F_n(M) on every change of that node, so the running
total costs O(kinds x devices) per bind or release, never a pass over the cluster.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass
from typing import TYPE_CHECKING

from scheduler_core.devices import FULL

if TYPE_CHECKING:
    from scheduler_core.model import Node
    from scheduler_core.spec import ExperimentSpec


@dataclass(frozen=True, slots=True)
class TaskKind:
    """One kind of pod of the target workload, with its popularity p_m."""

    gpus: int
    milli: int
    cpu: float
    mem: float
    models: tuple[str, ...]
    popularity: float

    @property
    def request(self) -> int:
        """min(request, 1) GPU in milli: what one device must hold for it."""
        return self.milli or (FULL if self.gpus else 0)


def target_workload(spec: ExperimentSpec) -> tuple[TaskKind, ...]:
    """The experiment's pod kinds, each weighted by its share of all members."""
    counts: dict[tuple[int, int, float, float, tuple[str, ...]], int] = {}
    for w in spec.workloads:
        key = (w.gpus, w.gpu_milli or 0, w.cpu, w.memory, tuple(w.gpu_models))
        counts[key] = counts.get(key, 0) + w.members
    total = sum(counts.values()) or 1
    return tuple(TaskKind(*key, count / total) for key, count in sorted(counts.items()))


def node_fragmentation(node: Node, kinds: tuple[TaskKind, ...]) -> float:
    """F_n(M) in milli-GPU (FGD §3.2); 0 for a node that is gone or cordoned."""
    free = node.dev_free
    if free is None or not node.schedulable:
        return 0.0
    unallocated = sum(free)
    if unallocated == 0:
        return 0.0
    total = 0.0
    for kind in kinds:
        total += kind.popularity * _for_task(node, free, unallocated, kind)
    return total


def _for_task(node: Node, free: list[int], unallocated: int, kind: TaskKind) -> float:
    request = kind.request
    if (
        request == 0
        or kind.cpu > node.free_cpu + 1e-9
        or kind.mem > node.free_mem + 1e-9
        or (kind.models and node.gpu_model not in kind.models)
        or (kind.gpus > 0 and node.free_gpus < kind.gpus)
        or (kind.milli > 0 and max(free) < kind.milli)
    ):
        return float(unallocated)
    return float(sum(left for left in free if left < request))


class FragmentationMeter:
    """The time integral of the cluster's F(t), kept up to date node by node."""

    def __init__(self, kinds: tuple[TaskKind, ...], clock: Callable[[], float]) -> None:
        self.kinds = kinds
        self.clock = clock
        self.per_node: dict[int, float] = {}
        self.current = 0.0
        self.integral = 0.0
        self.since = 0.0

    def changed(self, node: Node) -> None:
        """A node's devices, resources or schedulability changed: integrate up to now,
        then replace its term."""
        self._advance(self.clock())
        value = node_fragmentation(node, self.kinds)
        self.current += value - self.per_node.get(node.idx, 0.0)
        self.per_node[node.idx] = value

    def _advance(self, now: float) -> None:
        start = max(self.since, 0.0)
        if now > start:
            self.integral += self.current * (now - start)
        self.since = max(self.since, now)

    def share(self, horizon: float, total_gpus: int) -> float | None:
        """Mean F(t) over [0, horizon] as a share of the cluster's GPUs."""
        self._advance(horizon)
        if horizon <= 0 or total_gpus <= 0:
            return None
        return self.integral / (horizon * total_gpus * FULL)
