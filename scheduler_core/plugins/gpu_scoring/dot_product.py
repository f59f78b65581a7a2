"""DotProduct: Tetris-style alignment of the node's free vector with the pod's request.

Source: the FGD paper's baseline "DotProd" (Weng et al., ATC '23, §5.1, after Tetris,
SIGCOMM '14), simulator ``pkg/simulator/plugin/dot_product_score.go`` with the paper's
settings ``dimExtMethod: merge``, ``normMethod: max``, ``gpuSelMethod: best``. Both
vectors are (CPU, GPU milli) over (128 cores, 8 GPUs); the score is
``int(100 * (1 - (free . request) / 2))``: the smaller the product, the fuller the node
(so it packs).
"""

from __future__ import annotations

import numpy as np

from scheduler_core.placement_study import DeviceCluster, IntArray, StudyPod
from scheduler_core.plugins.gpu_scoring.base import (
    MAX_NODE_SCORE,
    MAX_SPEC_CPU,
    MAX_SPEC_GPU,
    GpuScorer,
)


class DotProductScore(GpuScorer):
    name = "DotProduct"

    def score(self, cluster: DeviceCluster, pod: StudyPod, nodes: IntArray) -> IntArray:
        free_cpu = cluster.cpu_left[nodes] / MAX_SPEC_CPU
        free_gpu = cluster.free[nodes] / MAX_SPEC_GPU
        dot = free_cpu * (pod.cpu / MAX_SPEC_CPU) + free_gpu * (pod.total_milli / MAX_SPEC_GPU)
        score = 1 - dot / 2
        return np.asarray(float(MAX_NODE_SCORE) * score).astype(np.int64)
