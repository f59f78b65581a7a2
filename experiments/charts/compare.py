"""The comparison table: every metric of every chosen variant side by side, the best
per metric highlighted, deltas against a baseline variant, optionally only the metrics
that differ, in either orientation."""

from __future__ import annotations

import math
from collections.abc import Sequence
from dataclasses import dataclass

from experiments.charts.data import VariantResults
from experiments.charts.metrics import best_indexes, higher_is_better, is_number, metric_title
from experiments.display import format_value, metric_display


@dataclass(frozen=True, slots=True)
class Cell:
    value: float | None
    text: str
    best: bool
    baseline: bool
    delta: str
    verdict: str  # "better", "worse", "same" or "" (no delta)


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

    def by_variant(self) -> list[tuple[str, list[tuple[str, Cell]]]]:
        """The transposed table: one row per variant, one column per metric."""
        return [(label, [(row.title, row.cells[i]) for row in self.rows])
                for i, label in enumerate(self.labels)]


def compare_table(variants: Sequence[VariantResults], metrics: Sequence[str], *,
                  baseline: int | None = None, differences_only: bool = False,
                  ) -> CompareTable:
    if baseline is not None and not 0 <= baseline < len(variants):
        baseline = None
    rows = [_row(variants, metric, baseline) for metric in metrics]
    shown = [r for r in rows if r.differs] if differences_only else rows
    return CompareTable(tuple(v.label for v in variants), baseline, tuple(shown),
                        len(rows) - len(shown))


def _row(variants: Sequence[VariantResults], metric: str, baseline: int | None) -> MetricRow:
    means = [v.mean(metric) for v in variants]
    best = set(best_indexes(means, metric))
    base = means[baseline] if baseline is not None else None
    cells = tuple(_cell(v, metric, i in best, i == baseline, base) for i, v in enumerate(variants))
    return MetricRow(metric, metric_title(metric), cells, _differs(means))


def _cell(variant: VariantResults, metric: str, best: bool, is_baseline: bool,
          base: float | None) -> Cell:
    unit = metric_display(metric).unit
    mean, ci = variant.mean(metric), variant.ci95(metric)
    text = format_value(mean, unit)
    if is_number(mean) and is_number(ci) and ci:
        text += f" ± {format_value(ci, unit)}"
    delta, verdict = ("baseline", "") if is_baseline else _delta(mean, base, metric)
    return Cell(mean, text, best, is_baseline, delta, verdict)


def _delta(value: float | None, base: float | None, metric: str) -> tuple[str, str]:
    """``+12 (+4.0%)`` against the baseline, and whether that is better for this metric."""
    if is_number(value) and is_number(base):
        return _difference(value, base, metric)
    return "", ""


def _difference(value: float, base: float, metric: str) -> tuple[str, str]:
    diff = value - base
    if math.isclose(value, base, rel_tol=1e-9, abs_tol=1e-12):
        return "±0", "same"
    unit = metric_display(metric).unit
    text = ("+" if diff > 0 else "-") + format_value(abs(diff), unit)
    if base:
        text += f" ({diff / abs(base) * 100:+.1f}%)"
    improved = diff > 0 if higher_is_better(metric) else diff < 0
    return text, "better" if improved else "worse"


def _differs(means: list[float | None]) -> bool:
    present = [m for m in means if is_number(m)]
    if len(present) != len(means):
        return bool(present)  # a value beside a blank differs; all blank does not
    return any(not math.isclose(m, present[0], rel_tol=1e-9, abs_tol=1e-12) for m in present)
