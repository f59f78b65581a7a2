"""Public entry points: simulate one (variant, replication), or a whole experiment.

``simulate`` is what a Celery task calls: a pure function of (spec, variant, replication)
returning flat, JSON-ready records. ``run_experiment`` runs every variant and replication
in-process (the CLI) and adds the replication aggregates.
"""

from __future__ import annotations

import time
from collections.abc import Callable, Mapping, Sequence
from dataclasses import asdict, dataclass
from typing import Any

from scheduler_core.decisions import Decision
from scheduler_core.engine import Engine
from scheduler_core.events import Event
from scheduler_core.failures import with_failures
from scheduler_core.gc_pause import gc_paused
from scheduler_core.metrics import SUMMARY_NAMES, WorkloadInfo, WorkloadRecord, compute
from scheduler_core.metrics import confidence_interval as _ci
from scheduler_core.spec import (
    SEED_STRIDE,
    ExperimentSpec,
    ResolvedVariant,
    SpecError,
    Variant,
    expand_variants,
    resolve_variant,
)

Progress = Callable[[float], None]


@dataclass(frozen=True, slots=True)
class ReplicationResult:
    """One simulated (variant, replication): summary, per-workload records, event log."""

    variant: str
    replication: int
    seed: int
    preemption: str
    placement: str
    summary: dict[str, float | None]
    distributions: dict[str, dict[str, float]]
    by_priority_class: dict[str, dict[str, float | None]]
    workloads: tuple[WorkloadRecord, ...]
    events: tuple[Event, ...]
    events_processed: int
    wall_seconds: float
    decisions: tuple[Decision, ...] = ()
    diagnosis: str = ""
    """One sentence when the urgent workloads never preempt or never run (decisions.py)."""

    def to_dict(self, *, include_events: bool = True) -> dict[str, Any]:
        data = {
            "variant": self.variant,
            "replication": self.replication,
            "seed": self.seed,
            "preemption": self.preemption,
            "placement": self.placement,
            "summary": self.summary,
            "distributions": self.distributions,
            "by_priority_class": self.by_priority_class,
            "workloads": [asdict(w) for w in self.workloads],
            "events_processed": self.events_processed,
            "wall_seconds": self.wall_seconds,
            "diagnosis": self.diagnosis,
        }
        if include_events:
            data["events"] = [e.as_dict() for e in self.events]
            data["decisions"] = [d.as_dict() for d in self.decisions]
        return data


def replication_seed(base: int, replication: int) -> int:
    """Every variant gets the same seed for a replication (common random numbers), so
    differences between variants come from the policy, not from the dice."""
    return base * SEED_STRIDE + replication


def simulate(
    spec: ExperimentSpec,
    variant: str | Variant | ResolvedVariant,
    replication: int = 0,
    *,
    seed: int | None = None,
    progress: Progress | None = None,
    max_events: int | None = None,
    explain: bool = True,
) -> ReplicationResult:
    """Simulate one variant once. Deterministic: same inputs, identical result.

    ``max_events`` bounds the event log: past it the simulation stops with
    :class:`~scheduler_core.engine.SimulationLimitError` instead of growing without end.
    A placement-study spec has no replay: refused, naming the field (it runs through
    ``scheduler_core.study_spec.run_variant_study``)."""
    if spec.placement_study is not None:
        raise SpecError(
            [
                {
                    "path": "placementStudy",
                    "message": "a placement study is not replayed in time; run it with "
                    "study_spec.run_variant_study (the CLI's run and the workers do)",
                }
            ]
        )
    resolved = variant if isinstance(variant, ResolvedVariant) else resolve_variant(spec, variant)
    run_seed = replication_seed(spec.seed if seed is None else seed, replication)
    resolved = with_failures(resolved, run_seed)
    started = time.perf_counter()
    # The collector stays paused for the whole replication, not just the run: building
    # the cluster and its pods, the decision records and the metrics also make hundreds
    # of thousands of long-lived, acyclic objects (issue #14: at 10,000 nodes the metrics
    # took 1.5 s with the collector on, 0.4 s with it paused).
    # The engine is released however the run ends (Engine.release: otherwise numpy's
    # object arrays keep the whole run alive in a worker that goes on simulating).
    with gc_paused():
        engine = Engine(resolved, run_seed, progress, max_events=max_events, explain=explain)
        try:
            log = engine.run()
            decisions = engine.decisions()
            metrics = compute(
                log,
                workload_infos(resolved.spec),
                horizon=resolved.spec.horizon_seconds,
                total_gpus=engine.cluster.gpu_capacity_at_start,
                fragmentation=engine.fragmentation(),
            )
            diagnosis = engine.diagnosis(log, decisions)
        finally:
            engine.release()
    return ReplicationResult(
        variant=resolved.name,
        replication=replication,
        seed=run_seed,
        preemption=resolved.preemption,
        placement=resolved.placement,
        summary=metrics.summary,
        distributions=metrics.distributions,
        by_priority_class=metrics.by_priority_class,
        workloads=metrics.workloads,
        events=tuple(log),
        events_processed=engine.events_processed,
        wall_seconds=time.perf_counter() - started,
        decisions=tuple(decisions),
        diagnosis=diagnosis,
    )


def workload_infos(spec: ExperimentSpec) -> list[WorkloadInfo]:
    """Static facts the metrics need (priority resolved as the admission plugin does)."""
    from scheduler_core.engine import resolve_priority

    infos = []
    for w in spec.workloads:
        value, _, label = resolve_priority(spec, w)
        min_count = w.pod_group.min_count if w.pod_group else w.members
        infos.append(
            WorkloadInfo(
                w.name,
                w.kind.value,
                label,
                value,
                w.members,
                w.gpus,
                min_count,
                w.urgent,
                w.recovery.model.value,
                w.gpu_amount,
            )
        )
    return infos


@dataclass(frozen=True, slots=True)
class VariantResult:
    name: str
    replications: tuple[ReplicationResult, ...]
    aggregate: dict[str, dict[str, float | None]]

    def to_dict(self, *, include_events: bool = False) -> dict[str, Any]:
        first = self.replications[0]
        return {
            "name": self.name,
            "preemption": first.preemption,
            "placement": first.placement,
            "summary": {k: v["mean"] for k, v in self.aggregate.items()},
            "aggregate": self.aggregate,
            "workloads": [asdict(w) for w in first.workloads],
            "replications": [r.to_dict(include_events=include_events) for r in self.replications],
        }


def aggregate(replications: Sequence[Any]) -> dict[str, dict[str, float | None]]:
    """Per metric: mean across replications with its 95% confidence half-width, min, max.

    Takes anything with a ``summary`` mapping (results, stored rows) or the summary
    mappings themselves (what a database keeps)."""
    summaries: list[Mapping[str, float | None]] = [
        r if isinstance(r, Mapping) else r.summary for r in replications
    ]
    out: dict[str, dict[str, float | None]] = {}
    for name in SUMMARY_NAMES:
        values = [v for s in summaries if (v := s.get(name)) is not None]
        if not values:
            out[name] = {"mean": None, "ci95": None, "min": None, "max": None, "n": 0}
            continue
        mean, half = _ci(values)
        out[name] = {
            "mean": mean,
            "ci95": half,
            "min": min(values),
            "max": max(values),
            "n": len(values),
        }
    return out


def run_experiment(
    spec: ExperimentSpec,
    *,
    seed: int | None = None,
    variants: Sequence[str] | None = None,
    progress: Progress | None = None,
    max_events: int | None = None,
) -> list[VariantResult]:
    """Every variant x replication, in order; ``progress`` gets the overall fraction done;
    ``max_events`` bounds each replication's log (see :func:`simulate`)."""
    chosen = [v for v in expand_variants(spec) if variants is None or v.name in variants]
    total = len(chosen) * spec.replications
    results = []
    for i, variant in enumerate(chosen):
        resolved = resolve_variant(spec, variant)
        reps = []
        for r in range(spec.replications):
            done = i * spec.replications + r
            step = None if progress is None else _scaled(progress, done, total)
            reps.append(
                simulate(spec, resolved, r, seed=seed, progress=step, max_events=max_events)
            )
        results.append(VariantResult(variant.name, tuple(reps), aggregate(reps)))
    return results


def _scaled(progress: Progress, done: int, total: int) -> Progress:
    return lambda fraction: progress((done + fraction) / total)
