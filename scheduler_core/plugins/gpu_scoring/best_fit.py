"""BestFit: the node whose free CPU and GPU are closest to the request.

Source: the FGD paper's baseline "Best-fit" (Weng et al., ATC '23, §5.1), simulator
``pkg/simulator/plugin/best_fit_score.go``: ``int(100 * (1 - (0.5 (cpuFree - cpuReq) /
128 cores + 0.5 (gpuFree - gpuReq) / 8 GPUs)))``, then the framework's min-max
normalisation over the scored nodes (``NormalizeScore`` in ``plugin_utils.go``).
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


class BestFitScore(GpuScorer):
    name = "BestFit"
    per_node = False
    """NormalizeScore maps onto the range of all scored nodes."""

    def score(self, cluster: DeviceCluster, pod: StudyPod, nodes: IntArray) -> IntArray:
        cpu = (cluster.cpu_left[nodes] - pod.cpu) / MAX_SPEC_CPU * 0.5
        gpu = (cluster.free[nodes] - pod.total_milli) / MAX_SPEC_GPU * 0.5
        raw = ((1.0 - (cpu + gpu)) * float(MAX_NODE_SCORE)).astype(np.int64)
        return normalize(raw)


def normalize(scores: IntArray) -> IntArray:
    """``NormalizeScore``: map [lowest, highest] onto [0, 100] with integer division
    (all 0 when every node scores the same)."""
    low, high = int(scores.min()), int(scores.max())
    if high == low:
        return np.zeros_like(scores)
    return (scores - low) * MAX_NODE_SCORE // (high - low)
