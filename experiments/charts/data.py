"""The shapes the builders read: what the database (or ``scheduler_core`` directly)
hands them, with no Django types, so a test can feed a simulation straight in."""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from typing import NamedTuple

from scheduler_core.timeline import Cost, Recovery

__all__ = ["ROW_FIELDS", "Aggregate", "Row", "VariantCosts", "VariantResults"]


class Row(NamedTuple):
    """An event row as the selectors read it (a tuple: 100,000 of them stay cheap)."""

    time: float
    reason: str
    workload: str
    pod: str
    node: str
    value: float
    related: str


ROW_FIELDS = Row._fields

Aggregate = Mapping[str, Mapping[str, float | None]]
"""metric -> {mean, ci95, min, max, n}: one variant's ``Run.aggregate`` entry."""


@dataclass(frozen=True, slots=True)
class VariantResults:
    """One variant's numbers: the aggregate across replications and each replication's
    value, so a chart can show both the mean and the spread."""

    label: str
    preemption: str = ""
    placement: str = ""
    aggregate: Aggregate = field(default_factory=dict)
    samples: Mapping[str, Sequence[float | None]] = field(default_factory=dict)

    def mean(self, metric: str) -> float | None:
        return (self.aggregate.get(metric) or {}).get("mean")

    def ci95(self, metric: str) -> float | None:
        return (self.aggregate.get(metric) or {}).get("ci95")


@dataclass(frozen=True, slots=True)
class VariantCosts:
    """What the cost charts draw of one variant: per replication, the cost increments
    and recoveries ``scheduler_core.timeline`` derived from its log."""

    label: str
    costs: Sequence[Sequence[Cost]]
    recoveries: Sequence[Sequence[Recovery]]
