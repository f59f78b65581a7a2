"""The shapes the builders read: what the database (or ``scheduler_core`` directly)
hands them, with no Django types, so a test can feed a simulation straight in."""

from __future__ import annotations

from collections.abc import Hashable, Mapping, Sequence
from dataclasses import dataclass, field
from typing import NamedTuple

import scheduler_core as sc
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
    name: str = ""
    """The variant's own name (the label may carry a run prefix): what fixes its colour."""
    seeds: Sequence[int | None] = ()
    """Each replication's seed, in the order of ``samples``: pairs variants that share them."""

    def mean(self, metric: str) -> float | None:
        return (self.aggregate.get(metric) or {}).get("mean")

    def ci95(self, metric: str) -> float | None:
        return (self.aggregate.get(metric) or {}).get("ci95")

    def spread(self, metric: str) -> tuple[float | None, float | None]:
        """(min, max) across replications."""
        entry = self.aggregate.get(metric) or {}
        return entry.get("min"), entry.get("max")

    @property
    def color_key(self) -> str:
        return self.name or self.label

    @property
    def unserved(self) -> bool:
        """An urgent workload never became useful before the horizon (in any replication)."""
        return sc.is_unserved(self.aggregate)

    def by_seed(self, metric: str) -> dict[Hashable, float | None]:
        """Replication values keyed by seed; keys no other variant shares when the seeds
        are unknown (so nothing is paired by accident)."""
        values = self.samples.get(metric, ())
        known = len(self.seeds) == len(values) and None not in self.seeds
        keys: Sequence[Hashable] = (
            self.seeds if known else [(self.label, i) for i in range(len(values))]
        )
        return dict(zip(keys, values, strict=True))


@dataclass(frozen=True, slots=True)
class VariantCosts:
    """What the cost charts draw of one variant: per replication, the cost increments
    and recoveries ``scheduler_core.timeline`` derived from its log."""

    label: str
    costs: Sequence[Sequence[Cost]]
    recoveries: Sequence[Sequence[Recovery]]
    name: str = ""
    """The variant's own name: what fixes its colour (see ``style.variant_color``)."""
    end: float | None = None
    """The variant's own horizon, where its lines end (None: the chart's ``end``); a
    variant may override ``horizonSeconds``."""

    @property
    def color_key(self) -> str:
        return self.name or self.label
