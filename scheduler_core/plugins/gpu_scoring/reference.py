"""Plain-Python transliterations of the simulator's Go scoring code, one node at a time.

Slow and literal on purpose: the tests check the numpy policies against these on
hand-made and generated nodes, so the fast code cannot drift from the source formulas
(file and function names below are those of hkust-adsl/kubernetes-scheduler-simulator).
"""

from __future__ import annotations

import math
from collections.abc import Sequence
from dataclasses import dataclass, field

from scheduler_core.placement_study import MILLI, StudyPod
from scheduler_core.plugins.gpu_scoring.fgd import TypicalPod

MAX_SPEC_CPU = 128_000
MAX_SPEC_GPU = 8_000


@dataclass
class RefNode:
    """``simontype.NodeResource``: free CPU, the free milli of each device, the model,
    and the kinds of the GPU pods bound (``GpuAffinity``)."""

    cpu_left: int
    devices: list[int]
    model: str = ""
    affinity: dict[str, int] = field(default_factory=dict)

    @property
    def free(self) -> int:
        return sum(self.devices)

    @property
    def fully_free(self) -> int:
        return sum(1 for d in self.devices if d == MILLI)


def _go_div(a: int, b: int) -> int:
    """Go's integer division truncates toward zero."""
    q = abs(a) // abs(b)
    return q if (a >= 0) == (b > 0) else -q


def dot_product(node: RefNode, pod: StudyPod) -> int:
    """``calculateDotProductScore`` with merge / max."""
    if node.cpu_left < pod.cpu:
        return 0
    node_vec = [node.cpu_left / MAX_SPEC_CPU, node.free / MAX_SPEC_GPU]
    pod_vec = [pod.cpu / MAX_SPEC_CPU, pod.total_milli / MAX_SPEC_GPU]
    product = node_vec[0] * pod_vec[0] + node_vec[1] * pod_vec[1]
    return int(100.0 * (1 - product / 2))


def gpu_clustering(node: RefNode, pod: StudyPod) -> int:
    """``GpuClusteringScorePlugin.Score``."""
    if pod.gpus == 0:
        return 0
    kind = "share-gpu" if pod.shared else f"{pod.gpus}-gpu"
    fill = _go_div(100 // 4 * (MAX_SPEC_GPU - node.free), MAX_SPEC_GPU)
    kinds = {k for k, v in node.affinity.items() if v > 0}
    if kind in kinds:
        return fill + (75 if len(kinds) == 1 else 50)
    return fill + (25 if not kinds else 0)


def gpu_packing(node: RefNode, pod: StudyPod) -> int:
    """``getPackingScore``."""
    if pod.milli <= 0:
        return 0
    free = node.fully_free
    if free == len(node.devices):
        return max(100 // 3 - free, free)
    order = sorted(range(len(node.devices)), key=lambda i: node.devices[i])
    need, used_free, chosen = pod.gpus, 0, []
    for i in order:
        if need == 0:
            break
        if pod.milli <= node.devices[i]:
            need -= 1
            chosen.append(i)
            used_free += node.devices[i] == MILLI
    if used_free:
        return max(100 // 2 - used_free, 100 // 3)
    ratio = sum(node.devices[i] * 100 // MILLI for i in chosen)
    return max(100 - ratio // 10, 100 // 2)


def best_fit(node: RefNode, pod: StudyPod) -> int:
    """``getBestFitScore`` before ``NormalizeScore``."""
    score = 0.0
    for free, req, spec in (
        (node.cpu_left, pod.cpu, MAX_SPEC_CPU),
        (node.free, pod.total_milli, MAX_SPEC_GPU),
    ):
        score += (free - req) / spec * 0.5
    return int((1.0 - score) * 100)


def frag_amount(node: RefNode, typical: Sequence[TypicalPod]) -> float:
    """``NodeGpuShareFragAmountScore``: the frag of every quadrant except Q3."""
    total = 0.0
    for t in typical:
        if t.milli == 0 or not _accessible(node.model, t.models):
            total += t.frequency * node.free
            continue
        fitting = sum(1 for d in node.devices if d >= t.milli)
        if fitting >= t.gpus and node.cpu_left >= t.cpu:
            total += t.frequency * sum(d for d in node.devices if d < t.milli)
        else:
            total += t.frequency * node.free
    return total


def _accessible(node_model: str, pod_models: str) -> bool:
    """``IsNodeAccessibleToPodByType``."""
    wanted = [m for m in pod_models.split("|") if m]
    if not wanted:
        return True
    return bool(node_model) and node_model in wanted


def fgd(node: RefNode, pod: StudyPod, typical: Sequence[TypicalPod]) -> tuple[int, int | None]:
    """``calculateGpuShareFragExtendScore``: the score, and the device of a share."""
    before = frag_amount(node, typical)
    if pod.shared:
        best, device = 0, None
        for i, left in enumerate(node.devices):
            if left >= pod.milli:
                after = RefNode(node.cpu_left - pod.cpu, list(node.devices), node.model)
                after.devices[i] -= pod.milli
                score = _sigmoid_score(before - frag_amount(after, typical))
                if device is None or score > best:
                    best, device = score, i
        return best, device
    after = RefNode(node.cpu_left - pod.cpu, list(node.devices), node.model)
    need = pod.gpus
    for i in sorted(range(len(after.devices)), key=lambda i: after.devices[i]):
        if need and pod.milli <= after.devices[i]:
            after.devices[i] -= pod.milli
            need -= 1
    return _sigmoid_score(before - frag_amount(after, typical)), None


def _sigmoid_score(gain: float) -> int:
    return int(1.0 / (1.0 + math.exp(-gain / 1000)) * 100)
