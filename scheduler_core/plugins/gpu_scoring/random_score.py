"""Random: a node drawn uniformly among those that fit, and a random fitting device.

Source: the FGD paper's baseline "Random" (Weng et al., ATC '23, §5.1), simulator
``pkg/simulator/plugin/random_score.go`` (PreScore draws one feasible node, Score gives
it 100 and every other node 0) with ``gpuSelMethod: random``
(``allocateGpuIdBasedOnRandomFit`` in ``open_gpu_share.go``). The draw must be explicit:
the simulator breaks ties by node order, so equal scores would pack.
"""

from __future__ import annotations

import numpy as np

from scheduler_core.placement_study import DeviceCluster, IntArray, StudyPod
from scheduler_core.plugins.gpu_scoring.base import MAX_NODE_SCORE, GpuScorer


class RandomScore(GpuScorer):
    name = "Random"
    per_node = False
    """One draw per Score call."""

    def score(self, cluster: DeviceCluster, pod: StudyPod, nodes: IntArray) -> IntArray:
        scores = np.zeros(len(nodes), np.int64)
        scores[int(self.rng.integers(len(nodes)))] = MAX_NODE_SCORE
        return scores

    def devices(self, cluster: DeviceCluster, pod: StudyPod, node: int) -> tuple[int, ...]:
        if not pod.shared:
            return super().devices(cluster, pod, node)
        fitting = np.flatnonzero(cluster.dev[node] >= pod.milli)
        return (int(fitting[int(self.rng.integers(len(fitting)))]),)
