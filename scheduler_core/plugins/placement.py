"""Score plugins: bin-packing (MostAllocated) and spreading (LeastAllocated) on GPUs.

Scores use the node as it is, without nominated pods (as upstream Score plugins do);
only Filter counts nominations. Among equal scores the node found first in the free-GPU
index wins, which is deterministic for a given history.
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

    def _first_fit(self, cluster: Cluster, pod: Pod, shape: int) -> Node | None:
        for node in cluster.candidates_by_free(shape, pod.gpus, descending=self.spread):
            if cluster.fits(pod, node) and cluster.static_filter(pod.workload, node).ok:
                return node
        return None

    @abstractmethod
    def score(self, node: Node, pod: Pod) -> float:
        """Higher is better: the node's GPU utilisation (or emptiness) after placement."""


class MostAllocated(_GpuScorer):
    """Bin-packing: prefer the node that will be fullest, keeping whole nodes free."""

    spread = False

    def score(self, node: Node, pod: Pod) -> float:
        if node.gpus == 0:
            return 0.0
        return (node.gpus - node.free_gpus + pod.gpus) / node.gpus


class LeastAllocated(_GpuScorer):
    """Spreading: prefer the node that will be emptiest."""

    spread = True

    def score(self, node: Node, pod: Pod) -> float:
        if node.gpus == 0:
            return 0.0
        return (node.free_gpus - pod.gpus) / node.gpus
