"""Placement policies of a study: Score plugins over per-device node state.

A variant (or the CLI's ``--policy``) names them; the registry maps names to classes.
A new policy is one module here plus one line in ``POLICIES``.
"""

from __future__ import annotations

from collections.abc import Callable

from scheduler_core.placement_study import StudyInputError
from scheduler_core.plugins.gpu_scoring.allocated import LeastAllocatedScore, MostAllocatedScore
from scheduler_core.plugins.gpu_scoring.base import GpuScorer
from scheduler_core.plugins.gpu_scoring.best_fit import BestFitScore
from scheduler_core.plugins.gpu_scoring.dot_product import DotProductScore
from scheduler_core.plugins.gpu_scoring.fgd import FGDScore
from scheduler_core.plugins.gpu_scoring.gpu_clustering import GpuClusteringScore
from scheduler_core.plugins.gpu_scoring.gpu_packing import GpuPackingScore
from scheduler_core.plugins.gpu_scoring.random_score import RandomScore

POLICIES: dict[str, Callable[[], GpuScorer]] = {
    "Random": RandomScore,
    "DotProduct": DotProductScore,
    "GpuClustering": GpuClusteringScore,
    "GpuPacking": GpuPackingScore,
    "BestFit": BestFitScore,
    "FGD": FGDScore,
    "MostAllocated": MostAllocatedScore,
    "LeastAllocated": LeastAllocatedScore,
}
PAPER_POLICIES = ("Random", "DotProduct", "GpuClustering", "GpuPacking", "BestFit", "FGD")
"""The six policies of the FGD paper's Fig. 9, in its order."""


def make_policy(name: str) -> GpuScorer:
    factory = POLICIES.get(name)
    if factory is None:
        raise StudyInputError(
            f"policy: unknown placement policy '{name}' (known: {', '.join(POLICIES)})"
        )
    return factory()


def policy_names() -> list[str]:
    return list(POLICIES)
