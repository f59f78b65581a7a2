"""How much one experiment may ask for, checked before anything is built from the spec.

A spec that passes validation must have a bounded, predictable cost, so the counts that
decide the cost (nodes, pods, workloads, timeline events, horizon, simulations) are
checked right after the spec's shape is known and before any node name, variant or grid
point is built: ``nodePools[0].count: 1000000000`` is refused in microseconds, not after
building a billion names. Every resolved variant and grid point is checked again, so an
override (``set:``) cannot smuggle in what the spec itself would be refused for.

A deployment sets its limits through ``LAB_MAX_*`` environment variables (the web app's
settings, the CLI's environment); each message names the setting to raise. A plain
library call gets :data:`LIBRARY_LIMITS`: ceilings far above any real cluster that only
keep a typo from exhausting the machine.
"""

from __future__ import annotations

import math
import os
from collections.abc import Iterable, Mapping
from dataclasses import dataclass, fields, replace
from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    from scheduler_core.spec import ExperimentSpec


@dataclass(frozen=True, slots=True)
class Limits:
    """Per-experiment ceilings; each field is read from the ``LAB_MAX_*`` setting named in
    its metadata. ``None`` for a budget means no budget."""

    max_nodes: int = 5000
    max_workloads: int = 10_000
    max_pods: int = 50_000
    max_horizon_seconds: float = 60 * 86400.0
    max_tasks: int = 5000
    max_timeline_events: int = 1000
    max_events_per_replication: int | None = 5_000_000
    """Events one replication may log (and store as rows) before it is stopped."""
    max_run_events: int | None = 50_000_000
    """Budget: expected log events of the whole run (all variants and replications)."""
    max_run_seconds: float | None = 4 * 3600.0
    """Budget: expected worker seconds of the whole run."""
    max_replication_memory_mb: float | None = 4000.0
    """Budget: expected peak memory of one replication."""

    @property
    def has_budget(self) -> bool:
        """Whether a cost estimate must be checked at all (not for a plain library call)."""
        return any(
            v is not None
            for v in (self.max_run_events, self.max_run_seconds, self.max_replication_memory_mb)
        )

    @classmethod
    def from_settings(cls, values: Mapping[str, Any]) -> Limits:
        """Limits from ``{"LAB_MAX_NODES": 5000, ...}`` (the web app's ``LAB_LIMITS``);
        a setting not given keeps its default."""
        known = {setting_name(f.name): f.name for f in fields(cls)}
        unknown = sorted(set(values) - set(known))
        if unknown:
            raise ValueError(f"unknown limit setting(s): {', '.join(unknown)}")
        return replace(cls(), **{known[k]: v for k, v in values.items()})

    @classmethod
    def from_env(cls, environ: Mapping[str, str] | None = None) -> Limits:
        """Limits from ``LAB_MAX_*`` environment variables (the CLI); ``0`` or ``none``
        turns a budget off."""
        environ = os.environ if environ is None else environ
        values: dict[str, Any] = {}
        for f in fields(cls):
            name = setting_name(f.name)
            raw = environ.get(name)
            if raw is None or not raw.strip():
                continue
            values[name] = _env_value(name, raw, f.type)
        return cls.from_settings(values)


def setting_name(field_name: str) -> str:
    """``max_pods`` -> ``LAB_MAX_PODS``: the setting an operator raises."""
    return f"LAB_{field_name.upper()}"


def _env_value(name: str, raw: str, kind: Any) -> int | float | None:
    text = raw.strip().lower()
    budget = "None" in str(kind)
    if budget and text in ("0", "none", "off"):
        return None
    try:
        value = float(text) if "float" in str(kind) else int(text.replace("_", ""))
    except ValueError:
        raise ValueError(f"{name}={raw!r} is not a number") from None
    if not math.isfinite(value) or value <= 0:
        raise ValueError(f"{name}={raw!r} must be a positive number")
    return value


LIBRARY_LIMITS = Limits(
    max_nodes=200_000,
    max_workloads=1_000_000,
    max_pods=2_000_000,
    max_horizon_seconds=366 * 86400.0,
    max_tasks=100_000,
    max_timeline_events=100_000,
    max_events_per_replication=None,
    max_run_events=None,
    max_run_seconds=None,
    max_replication_memory_mb=None,
)
"""For a plain library call: far above any real cluster (10,000 nodes and 100,000 pods
is the largest benchmark), low enough that a typo cannot exhaust the machine."""


def count_errors(
    spec: ExperimentSpec, limits: Limits, *, tasks: int | None = None, prefix: str = ""
) -> list[dict[str, str]]:
    """The counts above their limits, each naming the field and the setting. Cheap: it
    reads counts only, so it runs before anything is built from them."""
    checks: list[tuple[str, str, float, int | float]] = []
    for i, pool in enumerate(spec.cluster.node_pools):
        if pool.count > limits.max_nodes:  # name the pool that is too big, not "cluster"
            checks.append((f"cluster.nodePools[{i}].count", "nodes", pool.count, limits.max_nodes))
    nodes = sum(pool.count for pool in spec.cluster.node_pools) + len(spec.cluster.nodes)
    if not checks:
        checks.append(("cluster", "nodes", nodes, limits.max_nodes))
    checks.append(("workloads", "workloads", len(spec.workloads), limits.max_workloads))
    checks.extend(_member_checks(spec, limits))
    checks.append(("events", "timeline events", len(spec.events), limits.max_timeline_events))
    if spec.failures:
        from scheduler_core.failures import count_checks  # late: it builds on the spec

        checks.extend(
            (path, "expected failure events", count, limits.max_timeline_events)
            for path, count in count_checks(spec)
        )
    checks.append(
        ("horizonSeconds", "seconds of horizon", spec.horizon_seconds, limits.max_horizon_seconds)
    )
    if tasks is not None:
        checks.append(
            ("replications", "simulations (variants x replications)", tasks, limits.max_tasks)
        )
    return [
        {
            "path": prefix + path,
            "message": f"{number(value)} {what} is above the limit of {number(limit)} "
            f"({_SETTINGS[what]})",
        }
        for path, what, value, limit in checks
        if value > limit
    ]


def _member_checks(
    spec: ExperimentSpec, limits: Limits
) -> Iterable[tuple[str, str, float, int | float]]:
    pods = 0
    for i, workload in enumerate(spec.workloads):
        pods += workload.members
        if workload.members > limits.max_pods:
            yield (
                f"workloads[{i}].members",
                "pods (members of all workloads)",
                workload.members,
                limits.max_pods,
            )
            return
    yield ("workloads", "pods (members of all workloads)", pods, limits.max_pods)


_SETTINGS = {
    "nodes": "LAB_MAX_NODES",
    "workloads": "LAB_MAX_WORKLOADS",
    "pods (members of all workloads)": "LAB_MAX_PODS",
    "timeline events": "LAB_MAX_TIMELINE_EVENTS",
    "expected failure events": "LAB_MAX_TIMELINE_EVENTS",
    "seconds of horizon": "LAB_MAX_HORIZON_SECONDS",
    "simulations (variants x replications)": "LAB_MAX_TASKS",
}


def number(value: float) -> str:
    """``1000000000`` -> ``1,000,000,000``; ``1.5`` stays ``1.5``."""
    return f"{value:,.0f}" if float(value).is_integer() else f"{value:,}"
