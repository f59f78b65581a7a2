"""What a run will cost, read off the spec without simulating it.

A shared service cannot start a simulation to learn whether it is too big: at the
limits one replication passed 10 GB after 22 minutes. The estimate counts what drives
the cost (pods and their lifecycle events, checkpoints written, pods hit by timeline
disruptions, drain retries) and turns the count into seconds and megabytes with
coefficients measured on this machine's benchmarks (``bench/bench_estimate.py`` checks
them against real runs of every preset and records the ratio in
``bench/baselines.json``). It is an order of magnitude, good for "~2 min, ~300 MB" on a
button and for refusing a run over budget, not a promise: preemption churn depends on
the dice.
"""

from __future__ import annotations

import math
from collections.abc import Sequence
from dataclasses import asdict, dataclass
from typing import Any

from scheduler_core.limits import Limits, number
from scheduler_core.spec import (
    ExperimentSpec,
    RecoveryModel,
    RequeuingStrategy,
    ResolvedVariant,
    Workload,
    expand_variants,
    resolve_variant,
)

# Calibration (bench/bench_estimate.py, 2-core x86_64, Python 3.11):
EVENTS_PER_POD = 7.0
"""Log events of one pod's life: created, scheduled, ready, completed or killed,
released, plus the scheduling failures and preemptions of a contended cluster."""
EVENTS_PER_WORKLOAD = 5.0
"""Arrived, completed and the three end-of-run accounting events."""
EVENTS_PER_DISRUPTED_POD = 8.0
"""Killing, released, disrupted, re-created, re-scheduled, ready, resumed, recovered."""
ENGINE_EVENTS_PER_LOG_EVENT = 0.3
DRAIN_RETRY_SECONDS = 5.0
SECONDS_PER_EVENT = 3.0e-5
SECONDS_PER_EVENT_PER_NODE = 2.5e-8
"""A scheduling decision looks at more nodes in a bigger cluster. Measured on a shared,
loaded 2-core box: ~50 us per logged event on 300 nodes, ~90 us on 1,500 (an idle box
is two to three times faster)."""
SECONDS_PER_REPLICATION = 0.015
"""Building the engine and computing the metrics of even a tiny run."""
SECONDS_PER_DRAIN_RETRY = 5.0e-6
BASE_MB = 58.0
"""The interpreter, pydantic, numpy (the array paths import it with the core) and the
simulator, before the spec: 54 MB after ``import scheduler_core``, 57-59 MB at the peak of
the smallest preset (``bench/bench_estimate.py``, 2026-12-02; 35 MB before numpy)."""
BYTES_PER_EVENT = 350.0
BYTES_PER_POD = 3000.0
BYTES_PER_NODE = 2500.0


@dataclass(frozen=True, slots=True)
class CostEstimate:
    """The expected cost of a run, per replication (the costliest variant) and in all."""

    events_per_replication: int
    """Log events of the costliest replication: what is stored as event rows."""
    seconds_per_replication: float
    """Worker seconds of the slowest replication."""
    memory_mb_per_replication: float
    """Peak memory of the largest replication (the worker's, which runs one at a time)."""
    replications: int
    """Simulations in the run: variants x replications."""
    events: int
    """Log events of the whole run."""
    seconds: float
    """Worker seconds of the whole run (spread over however many workers there are)."""

    def as_dict(self) -> dict[str, Any]:
        """JSON-ready, for the API."""
        return asdict(self)

    def label(self) -> str:
        """``~2 min, ~300 MB``: what the run button says."""
        return f"~{_duration(self.seconds)}, ~{_megabytes(self.memory_mb_per_replication)}"


@dataclass(frozen=True, slots=True)
class _Replication:
    events: float
    seconds: float
    memory_mb: float


def estimate_cost(spec: ExperimentSpec, *, variants: Sequence[str] | None = None) -> CostEstimate:
    """Estimate a run's events, time and memory from the spec alone (no simulation).

    Each variant is resolved (its overrides can change the cluster, the workloads and
    the horizon); ``variants`` restricts the run to some of them, as the CLI's
    ``--variant`` does. Raises :class:`~scheduler_core.spec.SpecError` like
    :func:`~scheduler_core.spec.resolve_variant` for a spec that does not validate.
    """
    chosen = [v for v in expand_variants(spec) if variants is None or v.name in variants]
    return estimate_resolved(spec, [resolve_variant(spec, v) for v in chosen])


def estimate_resolved(spec: ExperimentSpec, resolved: Sequence[ResolvedVariant]) -> CostEstimate:
    """:func:`estimate_cost` for variants already resolved (validation has them)."""
    costs = [_replication(r.spec) for r in resolved] or [_replication(spec)]
    reps = spec.replications
    return CostEstimate(
        events_per_replication=round(max(c.events for c in costs)),
        seconds_per_replication=max(c.seconds for c in costs),
        memory_mb_per_replication=max(c.memory_mb for c in costs),
        replications=len(costs) * reps,
        events=round(sum(c.events for c in costs) * reps),
        seconds=sum(c.seconds for c in costs) * reps,
    )


def _replication(spec: ExperimentSpec) -> _Replication:
    nodes = sum(p.count for p in spec.cluster.node_pools) + len(spec.cluster.nodes)
    pods = sum(w.members for w in spec.workloads)
    horizon = spec.horizon_seconds
    checkpoints = sum(_checkpoints(w, horizon) for w in spec.workloads)
    disrupted, drain_retries = _disruptions(spec, nodes, pods)
    events = (
        pods * EVENTS_PER_POD
        + len(spec.workloads) * EVENTS_PER_WORKLOAD
        + checkpoints
        + disrupted * EVENTS_PER_DISRUPTED_POD
        + _requeue_events(spec)
    )
    seconds = (
        events * (SECONDS_PER_EVENT + nodes * SECONDS_PER_EVENT_PER_NODE)
        + drain_retries * SECONDS_PER_DRAIN_RETRY
        + SECONDS_PER_REPLICATION
    )
    memory = (
        BASE_MB + (events * BYTES_PER_EVENT + pods * BYTES_PER_POD + nodes * BYTES_PER_NODE) / 2**20
    )
    return _Replication(events, seconds, memory)


def _checkpoints(workload: Workload, horizon: float) -> float:
    """``CheckpointWritten`` rows the workload logs if it runs undisturbed from its
    arrival: one per running segment of each unit, however many writes it stands for
    (app.py logs a segment's periodic writes as one row; the writes themselves are closed
    form and cost no engine event). A unit that runs shorter than one interval plus its
    write logs none, hence the fraction."""
    interval = workload.checkpoint.interval_seconds
    if interval is None:
        return 0.0
    running = max(0.0, horizon - max(0.0, workload.arrival))
    if workload.duration_seconds is not None:
        running = min(running, workload.duration_seconds)
    units = (
        1
        if workload.recovery.model in (RecoveryModel.SYNCHRONOUS, RecoveryModel.ELASTIC)
        else workload.members
    )
    return units * min(1.0, running / (interval + workload.checkpoint.write_seconds))


def _requeue_events(spec: ExperimentSpec) -> float:
    """Kueue's waitForPodsReady can evict and readmit a queued workload again and again:
    at worst every admission times out, each cycle recreating its pods."""
    wait = spec.wait_for_pods_ready
    if wait is None:
        return 0.0
    cycles = _timeout_cycles(spec.horizon_seconds, wait.timeout_seconds, wait.requeuing_strategy)
    return sum(
        cycles * (w.members * EVENTS_PER_POD + EVENTS_PER_WORKLOAD)
        for w in spec.workloads
        if w.queue is not None
    )


def _timeout_cycles(horizon: float, timeout: float, strategy: RequeuingStrategy) -> float:
    """Admissions that all time out within the horizon: each costs the timeout plus its
    backoff (doubling up to the cap), at most backoffLimitCount + 1 of them."""
    base, cap = strategy.backoff_base_seconds, strategy.backoff_max_seconds
    limit = strategy.backoff_limit_count
    most = math.inf if limit is None else limit + 1.0
    t, n, wait = 0.0, 0.0, min(base, cap)
    while t < horizon and n < most and wait < cap and wait > 0:
        t += timeout + wait
        n += 1
        wait = min(cap, wait * 2)
    if t < horizon and n < most:
        n += (horizon - t) / (timeout + wait)
    return min(n, most)


def _disruptions(spec: ExperimentSpec, nodes: int, pods: int) -> tuple[float, float]:
    """Pods the timeline disrupts, and drain retries (a blocked drain retries every 5 s)."""
    pools = {p.name: p.count for p in spec.cluster.node_pools}
    per_node = pods / nodes if nodes else 0.0
    disrupted = retries = 0.0
    for event in spec.events:
        if event.nodes:
            hit = float(len(event.nodes))
        else:
            size = pools.get(event.pool or "", 0)
            hit = event.count if event.count is not None else size * (event.fraction or 1.0)
            hit = min(hit, size)
        disrupted += hit * per_node
        if event.type == "drain":
            window = max(0.0, spec.horizon_seconds - event.at)
            if event.timeout_seconds is not None:
                window = min(window, event.timeout_seconds)
            retries += hit * window / DRAIN_RETRY_SECONDS
    if spec.failures:
        from scheduler_core.failures import expected_nodes_hit  # late: it builds on the spec

        disrupted += expected_nodes_hit(spec) * per_node
    return disrupted, retries


def budget_errors(estimate: CostEstimate, limits: Limits) -> list[dict[str, str]]:
    """The budgets the estimate is over, each with the number and the setting to raise."""
    checks = (
        (estimate.events, limits.max_run_events, "events", "LAB_MAX_RUN_EVENTS", number),
        (
            estimate.seconds,
            limits.max_run_seconds,
            "worker seconds",
            "LAB_MAX_RUN_SECONDS",
            lambda v: number(round(v)),
        ),
        (
            estimate.memory_mb_per_replication,
            limits.max_replication_memory_mb,
            "MB per replication",
            "LAB_MAX_REPLICATION_MEMORY_MB",
            lambda v: number(round(v)),
        ),
    )
    return [
        {
            "path": "",
            "message": f"this run is estimated at {show(value)} {what}, above the "
            f"budget of {show(budget)} ({setting})",
        }
        for value, budget, what, setting, show in checks
        if budget is not None and value > budget
    ]


def _duration(seconds: float) -> str:
    if seconds < 60:
        return f"{max(1, round(seconds))} s"
    if seconds < 3600:
        return f"{round(seconds / 60)} min"
    return f"{seconds / 3600:.1f} h"


def _megabytes(mb: float) -> str:
    if mb < 1000:
        return f"{round(mb, -1 if mb >= 100 else 0):.0f} MB"
    return f"{mb / 1024:.1f} GB"
