"""GpuPacking: use partly used GPUs first, then free GPUs on used nodes, then free nodes.

Source: the FGD paper's baseline "Packing" (Weng et al., ATC '23, §5.1), simulator
``pkg/simulator/plugin/gpu_packing_score.go`` (``getPackingScore``), integer arithmetic:
1. a share fits a partly used device: ``max(100 - sum(free% of the device) / 10, 50)``;
2. it needs fully free devices on a used node: ``max(50 - devices used, 33)``;
3. the node is entirely free: ``max(33 - free devices, free devices)``.
CPU-only pods score 0 everywhere. The devices are the tightest ones that fit.
"""

from __future__ import annotations

import numpy as np

from scheduler_core.placement_study import MILLI, DeviceCluster, IntArray, StudyPod
from scheduler_core.plugins.gpu_scoring.base import MAX_NODE_SCORE, GpuScorer

HALF = MAX_NODE_SCORE // 2
THIRD = MAX_NODE_SCORE // 3


class GpuPackingScore(GpuScorer):
    name = "GpuPacking"

    def score(self, cluster: DeviceCluster, pod: StudyPod, nodes: IntArray) -> IntArray:
        if pod.milli <= 0:
            return np.zeros(len(nodes), np.int64)
        free = cluster.idle[nodes]
        idle_node = np.maximum(THIRD - free, free)
        if pod.shared:
            dev = cluster.dev[nodes]
            tightest = np.where(dev >= pod.milli, dev, 2 * MILLI).min(axis=1)
            on_used = np.maximum(MAX_NODE_SCORE - (tightest * 100 // MILLI) // 10, HALF)
            used_node = np.where(tightest == MILLI, max(HALF - 1, THIRD), on_used)
        else:
            used_node = np.full(len(nodes), max(HALF - pod.gpus, THIRD))
        return np.where(free == cluster.gpus[nodes], idle_node, used_node).astype(np.int64)
