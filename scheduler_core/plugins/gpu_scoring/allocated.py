"""MostAllocated and LeastAllocated on GPU milli: bin-packing and spreading.

Source: kube-scheduler's ``NodeResourcesFit`` scoring strategies ``MostAllocated`` and
``LeastAllocated`` (``pkg/scheduler/framework/plugins/noderesources/most_allocated.go``,
``least_allocated.go``: ``requested * 100 / allocatable``, and its complement), applied
to the one resource a GPU study is about: the node's GPU milli after placement. The
share goes to the tightest device (packing) or the emptiest one (spreading). Kept beside
the FGD set because the time-based engine offers these two.
"""

from __future__ import annotations

import numpy as np

from scheduler_core.placement_study import (
    MILLI,
    DeviceCluster,
    IntArray,
    StudyPod,
    worst_fit_device,
)
from scheduler_core.plugins.gpu_scoring.base import MAX_NODE_SCORE, GpuScorer


def _requested_score(cluster: DeviceCluster, pod: StudyPod, nodes: IntArray) -> IntArray:
    capacity = cluster.gpus[nodes] * MILLI
    used = capacity - cluster.free[nodes] + pod.total_milli
    return np.where(capacity > 0, used * MAX_NODE_SCORE // np.maximum(capacity, 1), 0)


class MostAllocatedScore(GpuScorer):
    name = "MostAllocated"

    def score(self, cluster: DeviceCluster, pod: StudyPod, nodes: IntArray) -> IntArray:
        return _requested_score(cluster, pod, nodes).astype(np.int64)


class LeastAllocatedScore(GpuScorer):
    name = "LeastAllocated"

    def score(self, cluster: DeviceCluster, pod: StudyPod, nodes: IntArray) -> IntArray:
        has_gpus = cluster.gpus[nodes] > 0
        spread = MAX_NODE_SCORE - _requested_score(cluster, pod, nodes)
        return np.where(has_gpus, spread, 0).astype(np.int64)

    def devices(self, cluster: DeviceCluster, pod: StudyPod, node: int) -> tuple[int, ...]:
        if not pod.shared:
            return super().devices(cluster, pod, node)
        return (worst_fit_device(cluster.dev[node], pod.milli),)
