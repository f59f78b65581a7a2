"""FGD: fragmentation gradient descent, the FGD paper's policy.

Source: Weng et al., "Beware of Fragmentation", USENIX ATC '23, §4 (fragmentation
measure, Eq. 1-3; FGD, Algorithm 1); simulator ``pkg/simulator/plugin/fgd_score.go``
(``calculateGpuShareFragExtendScore``) and ``pkg/utils/frag.go``
(``NodeGpuShareFragAmount``, ``GetTypicalPods``).

1. The *typical pods* are the trace's most frequent request shapes (CPU, GPU milli,
   GPU count, GPU models), taken by decreasing count until they cover 95 % of the pods,
   each weighted by its frequency.
2. A node's *fragmentation* for a typical pod is the free GPU milli it cannot use: all
   of it when the pod does not fit (no CPU, too few devices, wrong model, or a CPU-only
   pod), else the free milli of the devices too small for it. The node's fragmentation
   is the frequency-weighted sum.
3. Score: ``int(100 * sigmoid((frag before - frag after) / 1000))``; a share is tried on
   every device that fits and goes to the first best one.

Per request shape, scores are cached per node and recomputed only for nodes bound since
(``DeviceCluster.version``): a bind changes one node.
"""

from __future__ import annotations

from collections import Counter
from collections.abc import Sequence
from dataclasses import dataclass

import numpy as np
from numpy.typing import NDArray

from scheduler_core.placement_study import (
    MILLI,
    DeviceCluster,
    IntArray,
    StudyPod,
    first_free_devices,
)
from scheduler_core.plugins.gpu_scoring.base import MAX_NODE_SCORE, GpuScorer

POPULARITY = 0.95
"""``podPopularityThreshold: 95`` in the paper's runs (``generate_config_and_run.py``)."""

FloatArray = NDArray[np.float64]
DEDUPE_ABOVE = 32
"""Batches larger than this are scored once per distinct node state."""


@dataclass(frozen=True, slots=True)
class TypicalPod:
    cpu: int
    milli: int
    gpus: int
    models: str
    """The ``|``-joined model list, as the simulator keys it (empty: any model)."""
    frequency: float


def typical_pods(workload: Sequence[StudyPod], popularity: float = POPULARITY) -> list[TypicalPod]:
    """``GetTypicalPods``: shapes by decreasing count (ties: the larger shape first),
    cut once they cover ``popularity`` of the pods, frequencies renormalised to 1."""
    counts = Counter((p.cpu, p.milli, p.gpus, p.model_key) for p in workload)
    ranked = sorted(counts.items(), key=lambda kv: (kv[1], kv[0]), reverse=True)
    expected, covered, chosen = popularity * len(workload), 0, []
    for shape, count in ranked:
        if covered >= expected:
            break
        chosen.append((shape, count))
        covered += count
    return [TypicalPod(*shape, frequency=count / covered) for shape, count in chosen]


class FGDScore(GpuScorer):
    name = "FGD"

    def prepare(
        self, cluster: DeviceCluster, workload: Sequence[StudyPod], rng: np.random.Generator
    ) -> None:
        super().prepare(cluster, workload, rng)
        typical = typical_pods(workload)
        self.t_cpu = np.array([t.cpu for t in typical], np.int64)
        self.t_milli = np.array([t.milli for t in typical], np.int64)
        self.t_gpus = np.array([t.gpus for t in typical], np.int64)
        self.t_freq = np.array([t.frequency for t in typical], np.float64)
        self.access = np.array(
            [[_accessible(model, t) for t in typical] for model in cluster.models], np.bool_
        )
        """access[model, t]: the typical pod is a GPU pod that may run on that model."""
        self._taken = (self.t_milli <= MILLI).astype(np.int64) - (self.t_milli <= 0)
        """Per typical pod: how a fully free device taken away changes its fitting count."""
        self._cache: dict[tuple[int, int, int], _ShapeCache] = {}

    def score(self, cluster: DeviceCluster, pod: StudyPod, nodes: IntArray) -> IntArray:
        cache = self._shape_cache(cluster, pod)
        stale = nodes[cache.seen[nodes] != cluster.version[nodes]]
        if len(stale):
            per_choice = self.node_scores(cluster, pod, stale)
            cache.scores[stale] = per_choice.max(axis=1)
            cache.device[stale] = per_choice.argmax(axis=1)
            cache.seen[stale] = cluster.version[stale]
        return cache.scores[nodes]

    def devices(self, cluster: DeviceCluster, pod: StudyPod, node: int) -> tuple[int, ...]:
        """A share goes to the first device with the best score (computed with it)."""
        if not pod.shared:
            return first_free_devices(cluster.dev[node], pod.gpus)
        self.score(cluster, pod, np.array([node]))
        return (int(self._shape_cache(cluster, pod).device[node]),)

    def _shape_cache(self, cluster: DeviceCluster, pod: StudyPod) -> _ShapeCache:
        key = (pod.cpu, pod.milli, pod.gpus)
        cache = self._cache.get(key)
        if cache is None:
            cache = self._cache[key] = _ShapeCache(len(cluster))
        return cache

    def node_scores(self, cluster: DeviceCluster, pod: StudyPod, nodes: IntArray) -> IntArray:
        """Scores per (node, placement choice): one column per device for a share (-1
        where it does not fit), a single column otherwise.

        A large batch (a shape's first arrival, or a rare one) is computed once per
        distinct node state: nodes that differ only in device order score alike.
        """
        if len(nodes) <= DEDUPE_ABOVE:
            return self._state_scores(
                pod, cluster.cpu_left[nodes], cluster.dev[nodes], cluster.model_idx[nodes]
            )
        order = np.argsort(cluster.dev[nodes], axis=1, kind="stable")
        dev = np.take_along_axis(cluster.dev[nodes], order, axis=1)
        state = np.column_stack([cluster.cpu_left[nodes], cluster.model_idx[nodes], dev])
        unique, inverse = np.unique(state, axis=0, return_inverse=True)
        scores = self._state_scores(pod, unique[:, 0], unique[:, 2:], unique[:, 1])
        per_node = scores[inverse.reshape(-1)]
        if per_node.shape[1] == 1:
            return per_node
        position = np.argsort(order, axis=1)
        return np.take_along_axis(per_node, position, axis=1)

    def _state_scores(
        self, pod: StudyPod, cpu: IntArray, dev: IntArray, model: IntArray
    ) -> IntArray:
        access = self.access[model]
        fits, small = self._device_stats(dev)
        count, tiny = fits.sum(axis=1), small.sum(axis=1)
        free = dev.sum(axis=1)
        before = self._frag(cpu, count, tiny, free, access)
        if pod.shared:
            after_dev = dev - pod.milli
            fits_after, small_after = self._device_stats(after_dev)
            after = self._frag(
                (cpu - pod.cpu)[:, None],
                count[:, None, :] - fits + fits_after,
                tiny[:, None, :] - small + small_after,
                (free - pod.milli)[:, None],
                access[:, None],
            )
            score = _sigmoid_score(before[:, None] - after)
            return np.where(dev >= pod.milli, score, -1)
        count = count - pod.gpus * self._taken
        after = self._frag(cpu - pod.cpu, count, tiny, free - pod.total_milli, access)
        return _sigmoid_score(before - after)[:, None]

    def _device_stats(self, dev: IntArray) -> tuple[IntArray, IntArray]:
        """Per device and typical pod: does it fit (free >= the pod's share), and the
        free milli it leaves unusable (free when it does not fit, else 0)."""
        fits = dev[..., None] >= self.t_milli
        return fits.astype(np.int64), np.where(fits, 0, dev[..., None])

    def _frag(
        self,
        cpu: IntArray,
        fitting_devices: IntArray,
        unusable: IntArray,
        free: IntArray,
        access: NDArray[np.bool_],
    ) -> FloatArray:
        """Eq. 2: per typical pod, the unusable milli if it fits, else all free milli."""
        fits = (fitting_devices >= self.t_gpus) & (cpu[..., None] >= self.t_cpu) & access
        per_pod = np.where(fits, unusable, free[..., None])
        return np.asarray(per_pod @ self.t_freq, np.float64)


class _ShapeCache:
    """Scores of one request shape per node, valid while ``seen`` matches the node's
    version; ``device`` is the share's best device on that node."""

    def __init__(self, nodes: int) -> None:
        self.scores: IntArray = np.zeros(nodes, np.int64)
        self.device: IntArray = np.zeros(nodes, np.int64)
        self.seen: IntArray = np.full(nodes, -1, np.int64)


def _accessible(node_model: str, typical: TypicalPod) -> bool:
    """A typical pod counts as fitting only if it asks for a GPU (CPU-only pods see all
    free GPU milli as fragment) and the node's model is allowed."""
    if typical.milli <= 0:
        return False
    models = [m for m in typical.models.split("|") if m]
    return not models or (bool(node_model) and node_model in models)


def _sigmoid_score(gain: FloatArray) -> IntArray:
    sig = 1.0 / (1.0 + np.exp(-(gain / 1000)))
    return np.asarray(sig * float(MAX_NODE_SCORE)).astype(np.int64)
