"""GpuClustering: keep pods of the same GPU shape together.

Source: the FGD paper's baseline "Clustering" (Weng et al., ATC '23, §5.1, after
Alibaba's production heuristic), simulator ``pkg/simulator/plugin/gpu_clustering_score.go``.
A GPU pod's kind is "share" or "k whole GPUs". Score bands, each topped up by
``25 * (8000 - free GPU milli) / 8000`` (fuller first, integer arithmetic):
(75, 100] the node holds only pods of this kind; (50, 75] this kind among others;
(25, 50] no GPU pod yet; [0, 25] only other kinds. CPU-only pods score 0 everywhere.
"""

from __future__ import annotations

import numpy as np

from scheduler_core.placement_study import DeviceCluster, IntArray, StudyPod
from scheduler_core.plugins.gpu_scoring.base import MAX_NODE_SCORE, MAX_SPEC_GPU, GpuScorer

QUARTER = MAX_NODE_SCORE // 4


class GpuClusteringScore(GpuScorer):
    name = "GpuClustering"

    def score(self, cluster: DeviceCluster, pod: StudyPod, nodes: IntArray) -> IntArray:
        if pod.gpus == 0:
            return np.zeros(len(nodes), np.int64)
        free = cluster.free[nodes]
        fill = QUARTER * (MAX_SPEC_GPU - free) // MAX_SPEC_GPU
        kinds = cluster.affinity[nodes]
        same = kinds[:, 0 if pod.shared else pod.gpus] > 0
        present = (kinds > 0).sum(axis=1)
        band = np.where(
            same,
            np.where(present == 1, 3 * QUARTER, 2 * QUARTER),
            np.where(present == 0, QUARTER, 0),
        )
        return (fill + band).astype(np.int64)
