"""Bounding what reaches the browser: a line never carries more than a fixed number of
points, whatever the size of the run."""

from __future__ import annotations

import itertools
from collections.abc import Sequence

MAX_LINE_POINTS = 600


def thin_steps(
    xs: Sequence[float],
    ys: Sequence[float],
    max_points: int = MAX_LINE_POINTS,
) -> tuple[list[float], list[float]]:
    """A step series with at most ``max_points`` points that keeps its shape.

    The x range is cut into ``max_points - 2`` equal buckets and each keeps the first and
    last point that falls in it: for a cumulative (monotone) series the drawn line then
    stays within one bucket of the true one, and the final value is exact.
    """
    if len(xs) <= max_points:
        return list(xs), list(ys)
    buckets = max(1, (max_points - 2) // 2)
    start, span = xs[0], (xs[-1] - xs[0]) or 1.0
    kept: dict[int, tuple[int, int]] = {}
    for i, x in enumerate(xs):
        bucket = min(buckets - 1, int((x - start) / span * buckets))
        first, _ = kept.get(bucket, (i, i))
        kept[bucket] = (first, i)
    indexes = sorted({0, len(xs) - 1} | {i for pair in kept.values() for i in pair})
    return [xs[i] for i in indexes], [ys[i] for i in indexes]


def time_edges(start: float, end: float, bins: int) -> list[float]:
    """``bins + 1`` equal slice edges from ``start`` to ``end`` (at least a second wide)."""
    end = max(end, start + 1.0)
    width = (end - start) / bins
    return [start + i * width for i in range(bins)] + [end]


def slice_centers(edges: Sequence[float]) -> list[float]:
    return round_all([(a + b) / 2 for a, b in itertools.pairwise(edges)])


def round_all(values: Sequence[float], digits: int = 1) -> list[float]:
    """Fewer digits, smaller pages: a tenth of a simulated second is plenty on a chart."""
    return [round(v, digits) for v in values]
