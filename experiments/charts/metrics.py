"""Which way is better for each metric, and the two ways the pages single out variants:
the best one per metric and the Pareto front of a trade-off."""

from __future__ import annotations

import math
from collections.abc import Sequence
from typing import TypeGuard

from experiments.display import metric_display

HEADLINE_METRICS = ("time_to_victims_released", "time_to_group_useful", "lost_work",
                    "time_to_recover", "stranded_capacity")
"""The five numbers the run page leads with (issue 5 §1)."""

HIGHER_IS_BETTER = frozenset({"gpu_utilization", "goodput"})
"""Every other metric of metrics.md is a delay, a cost or a count of harm: lower wins."""


def higher_is_better(metric: str) -> bool:
    return metric in HIGHER_IS_BETTER


def metric_title(metric: str) -> str:
    """'Lost work (GPU·s)': the label with its unit, as the summary table shows it."""
    display = metric_display(metric)
    if display.unit in ("count", ""):
        return display.label
    return f"{display.label} ({'%' if display.unit == 'ratio' else display.unit})"


def is_number(value: object) -> TypeGuard[float]:
    """A finite number (not None, not a bool, not NaN): what a chart can place."""
    return isinstance(value, int | float) and not isinstance(value, bool) and math.isfinite(value)


def best_indexes(values: Sequence[float | None], metric: str, *, tolerance: float = 1e-9,
                 ) -> list[int]:
    """Every position holding the best value (ties all win); none when fewer than two
    values are comparable, because a lone number is not "best" of anything, or when all
    are equal, because then nothing stands out."""
    present = [(i, v) for i, v in enumerate(values) if is_number(v)]
    if len(present) < 2:
        return []
    pick = max if higher_is_better(metric) else min
    best = pick(v for _, v in present)
    winners = [i for i, v in present if abs(v - best) <= tolerance * max(1.0, abs(best))]
    return [] if len(winners) == len(present) else winners


def pareto_front(points: Sequence[tuple[float | None, float | None]]) -> list[int]:
    """Positions of the points no other point beats on both axes (both minimised).

    A point is dominated when another is no worse on both and better on one. Points with
    a missing coordinate are never on the front. Equal points are all kept.
    """
    valid = [(i, (x, y)) for i, (x, y) in enumerate(points) if is_number(x) and is_number(y)]
    return [i for i, (x, y) in valid
            if not any(ox <= x and oy <= y and (ox < x or oy < y) for _, (ox, oy) in valid)]
