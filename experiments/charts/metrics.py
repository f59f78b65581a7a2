"""Which way is better for each metric, and the two ways the pages single out variants:
the best one per metric and the Pareto front of a trade-off. Direction, labels and the
"never useful" rule come from the core's metric registry."""

from __future__ import annotations

import math
from collections.abc import Sequence
from typing import TypeGuard

import scheduler_core as sc
from scheduler_core.metric_registry import Better

HEADLINE_METRICS = (
    "time_to_victims_released",
    "time_to_group_useful",
    "lost_work",
    "time_to_recover",
    "stranded_capacity",
)
"""The five numbers the run page leads with (issue 5 §1)."""

HIGHER_IS_BETTER = frozenset(
    name for name, info in sc.REGISTRY.items() if info.better is Better.HIGHER
)
"""Every other metric is a delay, a cost or a count of harm: lower wins."""


def higher_is_better(metric: str) -> bool:
    return sc.metric_info(metric).better is Better.HIGHER


def metric_title(metric: str) -> str:
    """'Lost work (GPU·s)': the label with its unit, as the summary table shows it."""
    return sc.metric_info(metric).title


def is_number(value: object) -> TypeGuard[float]:
    """A finite number (not None, not a bool, not NaN): what a chart can place."""
    return isinstance(value, int | float) and not isinstance(value, bool) and math.isfinite(value)


def best_indexes(
    values: Sequence[float | None],
    metric: str,
    *,
    unserved: Sequence[bool] | None = None,
    tolerance: float = 1e-9,
) -> list[int]:
    """Every position holding the best value (see ``scheduler_core.best_indexes``: a
    variant whose urgent workload was never useful never wins)."""
    return sc.best_indexes(values, metric, unserved=unserved, tolerance=tolerance)


def pareto_front(
    points: Sequence[tuple[float | None, float | None]], eligible: Sequence[bool] | None = None
) -> list[int]:
    """Positions of the points no other point beats on both axes (both minimised).

    A point is dominated when another is no worse on both and better on one. Points with
    a missing coordinate, or not ``eligible`` (an unserved variant), are never on the
    front. Equal points are all kept.
    """
    ok = eligible or [True] * len(points)
    valid = [
        (i, (x, y)) for i, (x, y) in enumerate(points) if ok[i] and is_number(x) and is_number(y)
    ]
    return [
        i
        for i, (x, y) in valid
        if not any(ox <= x and oy <= y and (ox < x or oy < y) for _, (ox, oy) in valid)
    ]
