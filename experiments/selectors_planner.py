"""Reads for the checkpoint planner: which runs are interval sweeps, and their curve.

The curve itself (means, 95 % bands, optimum, Young and Daly) is computed by
``scheduler_core.checkpoint_planner.plan_result`` from the stored replications; this
module only picks the job's record out of each replication."""

from __future__ import annotations

from collections.abc import Iterable, Mapping
from typing import Any

import scheduler_core as sc
from experiments import selectors_cache
from experiments.models import Experiment, Run, Status, WorkloadRecord
from scheduler_core.checkpoint_planner import (
    Observation,
    PlanResult,
    plan_result,
    swept_workload,
    variant_intervals,
)


def run_swept_workload(*, run: Run) -> str | None:
    """The job whose checkpoint interval the run sweeps, or None (not a planner run).
    The stored document's grid is looked at first, so the run page never parses a big
    recorded cluster's spec just to learn that it sweeps nothing."""
    grid = run.spec.get("grid") or {}
    if run.spec.get("variants") or len(grid) != 1:
        return None
    (key,) = grid
    if not str(key).endswith(".checkpoint.intervalSeconds"):
        return None
    return swept_workload(_spec(run.spec))


def run_plan(*, run: Run) -> PlanResult | None:
    """The planner's result of a succeeded sweep; None while it runs or for another run.
    Cached with the run's other reads (a sweep has thousands of replications)."""
    if run.status != Status.SUCCEEDED:
        return None
    return selectors_cache.run_cached(run=run, kind="plan", build=lambda: _build(run))


def _build(run: Run) -> PlanResult | None:
    spec = _spec(run.spec)
    workload = swept_workload(spec)
    if workload is None:
        return None
    intervals = variant_intervals(spec)
    rows = WorkloadRecord.objects.filter(
        replication__run=run, replication__status=Status.SUCCEEDED, workload=workload
    ).values_list("replication__variant", "replication__seed", "completion_time", "ettr")
    return plan_result(spec, workload, list(_observations(rows, intervals)))


def _observations(
    rows: Iterable[tuple[str, int | None, float | None, float | None]],
    intervals: Mapping[str, float],
) -> Iterable[Observation]:
    """One observation per replication of a swept variant: the swept job's record."""
    for variant, seed, completion_time, ettr in rows:
        if variant not in intervals:
            continue
        yield Observation(
            interval_seconds=intervals[variant],
            seed=seed or 0,
            completion_time=completion_time,
            ettr=ettr,
        )


def plannable_workloads(*, experiment: Experiment) -> list[str]:
    """The workloads a plan may sweep: every one that does work (training first)."""
    workloads = experiment.spec.get("workloads") or []
    ranked = sorted(workloads, key=lambda w: (w.get("kind") != "training", w.get("name", "")))
    return [w["name"] for w in ranked if w.get("kind") not in ("inference", "notebook")]


def _spec(document: Mapping[str, Any]) -> sc.ExperimentSpec:
    return sc.parse_spec(document, check_variants=False)
