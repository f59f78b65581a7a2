"""Score plugins: bin-packing (MostAllocated) and spreading (LeastAllocated) on GPUs.

Scores use the node as it is, without nominated pods (as upstream Score plugins do);
only Filter counts nominations. Among equal scores the node found first in the free-GPU
index wins, which is deterministic for a given history.

The resources scored are those of NodeResourcesFit's ``scoringStrategy.resources`` list
as we configure it: ``nvidia.com/gpu`` and every ``nvidia.com/mig-<profile>``, weight 1
each (upstream's default is cpu and memory; a GPU study lists its GPU resources
instead). Upstream skips an extended resource the pod does not request, or the node does
not have, and averages the others by weight (``resource_allocation.go``,
``calculateResourceAllocatableRequest``; ``most_allocated.go``): so a whole-GPU pod is
scored on ``nvidia.com/gpu`` alone, and a MIG pod on its profiles (and its whole GPUs, if
it asks for some too). docs/shared-gpus.md "Placement scoring".
"""

from __future__ import annotations

from abc import ABC, abstractmethod

from scheduler_core.cluster import Cluster
from scheduler_core.model import Node, Pod

ARRAY_CHECK_NODES = 64
"""Above this many nodes, one array test says first whether any node fits at all."""


class _GpuScorer(ABC):
    spread = False

    def select(self, cluster: Cluster, pod: Pod) -> Node | None:
        """The best node of each shape is the first fitting one in bucket order; the shapes
        then compete on score (utilisation after placement)."""
        many = len(cluster.nodes) > ARRAY_CHECK_NODES
        if many and pod.nominated is None and not cluster.any_fits(pod):
            return None  # the walk below would look at every node to find none
        if pod.mig:
            return self._select_scoring_all(cluster, pod)
        best: Node | None = None
        best_score = -1.0
        for shape, capacity in enumerate(cluster.shape_gpus):
            if capacity < pod.gpus:
                continue
            node = self._first_fit(cluster, pod, shape)
            if node is not None:
                score = self.score(node, pod)
                if score > best_score:
                    best, best_score = node, score
        return best

    def _select_scoring_all(self, cluster: Cluster, pod: Pod) -> Node | None:
        """Every fitting node scored: the free-GPU buckets order nodes by whole GPUs, which
        says nothing of how full their MIG instances are, so the first fit of a bucket is
        not the best-scored node for a MIG pod. Ties go to the first in bucket order."""
        best: Node | None = None
        best_score = -1.0
        for shape, capacity in enumerate(cluster.shape_gpus):
            if capacity < pod.gpus:
                continue
            for node in cluster.candidates_by_free(shape, pod.gpus, descending=self.spread):
                if cluster.fits(pod, node) and cluster.static_filter(pod.workload, node).ok:
                    score = self.score(node, pod)
                    if score > best_score:
                        best, best_score = node, score
        return best

    def _first_fit(self, cluster: Cluster, pod: Pod, shape: int) -> Node | None:
        for node in cluster.candidates_by_free(shape, pod.gpus, descending=self.spread):
            if cluster.fits(pod, node) and cluster.static_filter(pod.workload, node).ok:
                return node
        return None

    @abstractmethod
    def score(self, node: Node, pod: Pod) -> float:
        """Higher is better: the node's GPU utilisation (or emptiness) after placement."""


def requested_fractions(node: Node, pod: Pod) -> list[float]:
    """Per scored resource the MIG pod requests and the node has (module docstring):
    the node's allocated fraction of it after placement, ``requested / allocatable`` as
    upstream's MostAllocated scores each resource (here 0..1 rather than 0..100)."""
    fractions = []
    if pod.gpus and node.gpus:
        fractions.append((node.gpus - node.free_gpus + pod.gpus) / node.gpus)
    for profile, count in pod.mig:
        allocatable = node.mig.get(profile, 0)
        if allocatable:
            used = allocatable - node.mig_free.get(profile, 0)
            fractions.append((used + count) / allocatable)
    return fractions


class MostAllocated(_GpuScorer):
    """Bin-packing: prefer the node that will be fullest, keeping whole nodes free."""

    spread = False

    def score(self, node: Node, pod: Pod) -> float:
        if pod.mig:
            fractions = requested_fractions(node, pod)
            return sum(fractions) / len(fractions) if fractions else 0.0
        if node.gpus == 0:
            return 0.0
        return (node.gpus - node.free_gpus + pod.gpus) / node.gpus


class LeastAllocated(_GpuScorer):
    """Spreading: prefer the node that will be emptiest."""

    spread = True

    def score(self, node: Node, pod: Pod) -> float:
        if pod.mig:
            fractions = requested_fractions(node, pod)
            return sum(1.0 - f for f in fractions) / len(fractions) if fractions else 0.0
        if node.gpus == 0:
            return 0.0
        return (node.free_gpus - pod.gpus) / node.gpus
