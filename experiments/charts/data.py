"""The shapes the builders read: what the database (or ``scheduler_core`` directly)
hands them, with no Django types, so a test can feed a simulation straight in."""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from typing import NamedTuple, Protocol


class EventLike(Protocol):
    """An event log row: ``scheduler_core.events.Event``, a ``RunEvent``, or ``Row``."""

    @property
    def time(self) -> float: ...
    @property
    def reason(self) -> str: ...
    @property
    def workload(self) -> str: ...
    @property
    def pod(self) -> str: ...
    @property
    def node(self) -> str: ...
    @property
    def value(self) -> float: ...
    @property
    def related(self) -> str: ...


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
class VariantEvents:
    """The events of one variant's replications that a time chart needs."""

    label: str
    replications: Sequence[Sequence[EventLike]]
