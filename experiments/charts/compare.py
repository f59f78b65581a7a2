"""The comparison table: every metric of every chosen variant side by side, the best
per metric highlighted (through the core's registry: an unserved variant never wins),
deltas against a baseline variant with their 95% interval (paired when the two ran the
same seeds, Welch's otherwise, and said which), optionally only the metrics that differ,
in either orientation."""

from __future__ import annotations

import math
from collections.abc import Sequence
from dataclasses import dataclass

import scheduler_core as sc
from experiments.charts.data import VariantResults
from experiments.charts.metrics import best_indexes, higher_is_better, is_number, metric_title
from experiments.display import format_value, metric_display
from scheduler_core.stats import Difference, IntervalMethod, difference


@dataclass(frozen=True, slots=True)
class Cell:
    value: float | None
    text: str
    best: bool
    baseline: bool
    delta: str
    verdict: str  # "better", "worse", "same" or "" (no delta)
    interval: str = ""  # "paired", "welch", "none" or "" (no delta)
    significant: bool = False  # the delta's 95% interval excludes zero


@dataclass(frozen=True, slots=True)
class MetricRow:
    metric: str
    title: str
    cells: tuple[Cell, ...]
    differs: bool


@dataclass(frozen=True, slots=True)
class CompareTable:
    labels: tuple[str, ...]
    baseline: int | None
    rows: tuple[MetricRow, ...]
    hidden_same: int
    unserved: tuple[bool, ...] = ()

    def by_variant(self) -> list[tuple[str, list[tuple[str, Cell]]]]:
        """The transposed table: one row per variant, one column per metric."""
        return [
            (label, [(row.title, row.cells[i]) for row in self.rows])
            for i, label in enumerate(self.labels)
        ]


def compare_table(
    variants: Sequence[VariantResults],
    metrics: Sequence[str],
    *,
    baseline: int | None = None,
    differences_only: bool = False,
) -> CompareTable:
    if baseline is not None and not 0 <= baseline < len(variants):
        baseline = None
    rows = [_row(variants, metric, baseline) for metric in metrics]
    shown = [r for r in rows if r.differs] if differences_only else rows
    return CompareTable(
        tuple(v.label for v in variants),
        baseline,
        tuple(shown),
        len(rows) - len(shown),
        tuple(v.unserved for v in variants),
    )


def _row(variants: Sequence[VariantResults], metric: str, baseline: int | None) -> MetricRow:
    means = [v.mean(metric) for v in variants]
    best = set(best_indexes(means, metric, unserved=[v.unserved for v in variants]))
    base = variants[baseline] if baseline is not None else None
    cells = tuple(_cell(v, metric, i in best, i == baseline, base) for i, v in enumerate(variants))
    return MetricRow(metric, metric_title(metric), cells, _differs(means))


def _cell(
    variant: VariantResults, metric: str, best: bool, is_baseline: bool, base: VariantResults | None
) -> Cell:
    unit = metric_display(metric).unit
    mean, ci = variant.mean(metric), variant.ci95(metric)
    text = format_value(mean, unit, null=sc.metric_info(metric).null)
    if is_number(mean) and is_number(ci) and ci:
        text += f" ± {format_value(ci, unit)}"
    if is_baseline:
        return Cell(mean, text, best, True, "baseline", "")
    if base is None:
        return Cell(mean, text, best, False, "", "")
    found = difference(base.by_seed(metric), variant.by_seed(metric))
    delta, verdict = _delta(mean, base.mean(metric), metric, found)
    return Cell(
        mean,
        text,
        best,
        False,
        delta,
        verdict,
        found.method.value if delta else "",
        _significant(found),
    )


def _significant(found: Difference) -> bool:
    return (
        found.mean is not None
        and found.half_width is not None
        and abs(found.mean) > found.half_width
    )


def _delta(
    value: float | None, base: float | None, metric: str, found: Difference
) -> tuple[str, str]:
    """``+12 ± 3 (+4.0%)`` against the baseline, and whether that is better for this
    metric."""
    if is_number(value) and is_number(base):
        return _difference(value, base, metric, found)
    return "", ""


def _difference(value: float, base: float, metric: str, found: Difference) -> tuple[str, str]:
    diff = value - base
    unit = metric_display(metric).unit
    half = found.half_width if found.method is not IntervalMethod.NONE else None
    if math.isclose(value, base, rel_tol=1e-9, abs_tol=1e-12) and not half:
        return "±0", "same"
    text = ("+" if diff > 0 else "-" if diff < 0 else "±") + format_value(abs(diff), unit)
    if half is not None:
        text += f" ± {format_value(half, unit)}"
    if base:
        text += f" ({diff / abs(base) * 100:+.1f}%)"
    if diff == 0:
        return text, "same"
    improved = diff > 0 if higher_is_better(metric) else diff < 0
    return text, "better" if improved else "worse"


def _differs(means: list[float | None]) -> bool:
    present = [m for m in means if is_number(m)]
    if len(present) != len(means):
        return bool(present)  # a value beside a blank differs; all blank does not
    return any(not math.isclose(m, present[0], rel_tol=1e-9, abs_tol=1e-12) for m in present)
