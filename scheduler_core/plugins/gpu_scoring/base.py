"""The Score extension point of a placement study, and what every GPU policy shares.

A policy scores the nodes that passed Filter with whole numbers in [0, 100], as
kube-scheduler Score plugins do: the simulator's policies truncate to integers, and
those truncations make ties, which ``selectHost`` then breaks at random. Keeping the
integers is what makes our allocation curves land on the published ones.
"""

from __future__ import annotations

from abc import ABC, abstractmethod
from collections.abc import Sequence
from typing import ClassVar

import numpy as np

from scheduler_core.placement_study import (
    DeviceCluster,
    IntArray,
    StudyPod,
    best_fit_device,
    first_free_devices,
)

MAX_NODE_SCORE = 100
MAX_SPEC_CPU = 128_000
"""The simulator's normalisers (``open-gpu-share/utils/const.go``): the largest node."""
MAX_SPEC_GPU = 8_000


class GpuScorer(ABC):
    """A placement policy: Score plus the device rule used when the pod binds."""

    name: ClassVar[str]
    per_node: ClassVar[bool] = True
    """A node's score depends on that node and the pod alone (not on the other nodes,
    nor on a draw), so a run may keep it until the node is bound again
    (``placement_study.IncrementalSelect``). Random and BestFit say False."""

    def __init__(self) -> None:
        self.rng = np.random.default_rng(0)

    def prepare(
        self, cluster: DeviceCluster, workload: Sequence[StudyPod], rng: np.random.Generator
    ) -> None:
        """Called once before the first pod, with the trace's pods (FGD learns its
        typical pods from them) and the run's generator (the only randomness allowed)."""
        self.rng = rng

    @abstractmethod
    def score(self, cluster: DeviceCluster, pod: StudyPod, nodes: IntArray) -> IntArray:
        """Integer scores in [0, 100] for ``nodes`` (all feasible), higher is better."""

    def devices(self, cluster: DeviceCluster, pod: StudyPod, node: int) -> tuple[int, ...]:
        """The devices ``pod`` takes on ``node``: the first free ones for whole GPUs, the
        tightest fitting one for a share (the simulator's default ``best`` selection)."""
        if pod.gpus == 0:
            return ()
        if not pod.shared:
            return first_free_devices(cluster.dev[node], pod.gpus)
        return (best_fit_device(cluster.dev[node], pod.milli),)
