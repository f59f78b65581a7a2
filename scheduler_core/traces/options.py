"""What the user chooses for one import, and the draft an importer hands back."""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any, Literal

from scheduler_core.traces.build import NodeGrouper, Origin, Provenance, compact_workload
from scheduler_core.traces.defaults import KindDefaults
from scheduler_core.traces.qos import QosMapping
from scheduler_core.traces.source import TraceFile


@dataclass(frozen=True)
class ImportOptions:
    """Every choice an import makes that the trace does not dictate.

    ``qos_map`` None means the format's documented default; ``start`` is the trace time
    that becomes t = 0 (None: the start of the recorded window); ``pending`` says what to
    do with pods the recording never bound; ``nodes`` supplies a node inventory
    (format name, files) for traces that have none or to replace theirs."""

    qos_map: QosMapping | None = None
    defaults: KindDefaults = field(default_factory=KindDefaults.builtin)
    start: float | None = None
    pending: Literal["skip", "keep"] = "skip"
    horizon_seconds: float | None = None
    snapshot_time: str | None = None
    nodes: tuple[str, tuple[TraceFile, ...]] | None = None
    name: str | None = None
    compress: float = 1.0
    """Arrivals come this many times as densely (``traces.load``)."""
    sample: int | None = None
    """Keep at most this many workloads, drawn with ``sample_seed`` (``traces.load``)."""
    sample_seed: int = 0
    placement_study: float | None = None
    """Import for the placement-study mode at this arrived load (%): openb's fractional
    requests are kept as ``gpuMilli``, pods of one shape become one workload, no time
    (``traces.openb``, docs/placement-study.md). None: a time-based replay."""


@dataclass
class Draft:
    """An importer's output before validation: spec parts, provenance, counts, notes."""

    name: str
    description: str
    nodes: NodeGrouper = field(default_factory=NodeGrouper)
    priority_classes: list[dict[str, Any]] = field(default_factory=list)
    workloads: list[dict[str, Any]] = field(default_factory=list)
    initial_state: list[dict[str, Any]] = field(default_factory=list)
    horizon_seconds: float = 3600.0
    provenance: Provenance = field(default_factory=Provenance)
    counts: dict[str, int] = field(default_factory=dict)
    notes: list[str] = field(default_factory=list)
    cluster: dict[str, Any] | None = None
    """A cluster given whole (named nodes from a snapshot); else built from ``nodes``."""
    extra: dict[str, Any] = field(default_factory=dict)
    """Further top-level spec sections (queues, resourceQuotas), in the spec's names."""
    checked: bool = False
    """Every value in the draft came from input that passed the document checks (depth,
    aliases, NUL and lone surrogates): the spec need not walk them again."""
    kinds: dict[str, int] = field(default_factory=dict)
    """Objects read per kind (``{"Pod": 140000, "Node": 4000}``): the Kubernetes reader's
    "what was read", beside the notes on what of it was not used."""

    def add_workload(self, fields: dict[str, Any], file: str, line: int) -> None:
        self.provenance.record(f"workloads[{len(self.workloads)}]", Origin(file, line))
        self.workloads.append(compact_workload(fields))

    def mapping(self) -> dict[str, Any]:
        """The spec mapping, in the order a person reads a spec."""
        data: dict[str, Any] = {
            "name": self.name,
            "description": self.description,
            "horizonSeconds": self.horizon_seconds,
            "cluster": self.cluster or self.nodes.cluster(self.provenance),
        }
        if self.priority_classes:
            data["priorityClasses"] = self.priority_classes
        data["workloads"] = self.workloads
        if self.initial_state:
            data["initialState"] = self.initial_state
        data.update(self.extra)
        return data
