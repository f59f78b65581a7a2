"""Synthetic clusters: a ``synthetic:`` section of a spec, expanded into nodes and workloads.

A spec may say *how* its load looks instead of listing it: node shapes and counts (up
to 10,000 nodes), Poisson arrivals over a window, a mix of GPU sizes and group sizes,
lognormal durations, shares of workload kinds and of priority classes, and a seed.
``parse_spec`` calls :func:`expand` before validation, so the section behaves like any
other part of the spec: errors carry paths such as ``synthetic.gpuMix``, and the same
section + seed always expands to the same workloads (its own ``random.Random``).

    synthetic:
      seed: 7
      nodes: [{name: gpu, count: 100, gpus: 8}]
      arrivals: {ratePerHour: 120, durationSeconds: 7200}
      gpuMix: {1: 0.6, 2: 0.1, 4: 0.1, 8: 0.2}
      duration: {medianSeconds: 1800, sigma: 1.0}
      kinds: {batch: 0.7, training: 0.2, notebook: 0.1}
      priorityMix: {low: 0.8, high: 0.2}     # classes from priorityClasses
"""

from __future__ import annotations

import math
import random
from collections.abc import Mapping
from typing import Annotated, Any

from pydantic import Field, ValidationError, field_validator, model_validator

from scheduler_core.spec import (
    SYSTEM_CLASSES,
    Model,
    NodeShape,
    SpecError,
    WorkloadKind,
    _pydantic_errors,
)
from scheduler_core.traces.defaults import DefaultsError, KindDefaults

MAX_NODES = 10_000
MAX_WORKLOADS = 200_000
Share = Annotated[float, Field(ge=0)]


class SyntheticNodes(NodeShape):
    """A pool of identical nodes (``name-0`` ... ``name-(count-1)``)."""

    name: str = Field(default="node", min_length=1, pattern=r"^[a-z0-9]([-a-z0-9]*[a-z0-9])?$")
    count: int = Field(default=1, ge=1, le=MAX_NODES)


class Arrivals(Model):
    """A Poisson process: ``ratePerHour`` on average, from ``startSeconds`` for
    ``durationSeconds``."""

    rate_per_hour: float = Field(gt=0)
    duration_seconds: float = Field(gt=0)
    start_seconds: float = Field(default=0.0, ge=0)


class LogNormal(Model):
    """Durations of work: lognormal with this median (``exp(mu)``) and ``sigma``."""

    median_seconds: float = Field(gt=0)
    sigma: float = Field(default=1.0, ge=0, le=5)
    min_seconds: float = Field(default=1.0, ge=0)


class Synthetic(Model):
    """The ``synthetic:`` section (see the module docstring for an example)."""

    seed: int | None = Field(default=None, ge=0, description="default: the spec's seed")
    nodes: list[SyntheticNodes] = Field(min_length=1)
    arrivals: Arrivals
    gpu_mix: dict[int, Share] = Field(default_factory=lambda: {1: 1.0})
    members_mix: dict[int, Share] = Field(default_factory=lambda: {1: 1.0})
    duration: LogNormal
    kinds: dict[WorkloadKind, Share] = Field(default_factory=lambda: {WorkloadKind.BATCH: 1.0})
    priority_mix: dict[str, Share] = Field(default_factory=dict)
    defaults: dict[str, Any] = Field(
        default_factory=dict, description="per-kind default overrides, 'kind.field': value"
    )
    name_prefix: str = Field(default="syn", pattern=r"^[a-z0-9]([-a-z0-9]*[a-z0-9])?$")

    @field_validator("gpu_mix", "members_mix", "kinds", "priority_mix")
    @classmethod
    def _shares(cls, mix: dict[Any, float]) -> dict[Any, float]:
        if mix and sum(mix.values()) <= 0:
            raise ValueError("the shares must add up to more than 0")
        return mix

    @field_validator("gpu_mix")
    @classmethod
    def _gpus(cls, mix: dict[int, float]) -> dict[int, float]:
        if any(g < 0 for g in mix):
            raise ValueError("GPU sizes must be at least 0")
        return mix

    @field_validator("members_mix")
    @classmethod
    def _members(cls, mix: dict[int, float]) -> dict[int, float]:
        if any(m < 1 for m in mix):
            raise ValueError("group sizes must be at least 1")
        return mix

    @model_validator(mode="after")
    def _size(self) -> Synthetic:
        total = sum(n.count for n in self.nodes)
        if total > MAX_NODES:
            raise ValueError(f"{total:,} nodes: at most {MAX_NODES:,}")
        expected = self.arrivals.rate_per_hour * self.arrivals.duration_seconds / 3600
        if expected > MAX_WORKLOADS:
            raise ValueError(
                f"about {expected:,.0f} arrivals: at most {MAX_WORKLOADS:,} "
                "(lower ratePerHour or durationSeconds)"
            )
        return self


def expand(mapping: Mapping[str, Any]) -> dict[str, Any]:
    """The spec mapping with its ``synthetic`` section replaced by node pools and
    workloads (appended to any the spec lists itself). Raises SpecError."""
    data = dict(mapping)
    section = _validated(data.pop("synthetic"))
    classes = {c.get("name") for c in data.get("priorityClasses") or [] if isinstance(c, dict)}
    _check_references(section, classes | set(SYSTEM_CLASSES))
    defaults = _defaults(section)
    cluster = dict(data.get("cluster") or {})
    cluster["nodePools"] = [
        *cluster.get("nodePools", []),
        *(n.model_dump(mode="json", by_alias=True) for n in section.nodes),
    ]
    data["cluster"] = cluster
    seed = section.seed if section.seed is not None else int(data.get("seed") or 0)
    data["workloads"] = [
        *data.get("workloads", []),
        *generate(section, random.Random(seed), defaults),
    ]
    data.setdefault(
        "horizonSeconds", section.arrivals.start_seconds + section.arrivals.duration_seconds
    )
    return data


def _validated(raw: Any) -> Synthetic:
    if not isinstance(raw, Mapping):
        raise SpecError([{"path": "synthetic", "message": "must be a mapping"}])
    try:
        return Synthetic.model_validate(raw)
    except ValidationError as exc:
        raise SpecError(
            [{"path": _prefixed(e["path"]), "message": e["message"]} for e in _pydantic_errors(exc)]
        ) from None


def _prefixed(path: str) -> str:
    return f"synthetic.{path}" if path else "synthetic"


def _check_references(section: Synthetic, classes: set[Any]) -> None:
    errors = []
    for name in section.priority_mix:
        if name not in classes:
            errors.append(
                {
                    "path": "synthetic.priorityMix",
                    "message": f"no PriorityClass with name '{name}' was found",
                }
            )
    largest = max(n.gpus for n in section.nodes)
    for gpus in section.gpu_mix:
        if gpus > largest:
            errors.append(
                {
                    "path": "synthetic.gpuMix",
                    "message": f"{gpus} GPUs per member: no node has more than {largest}",
                }
            )
    if errors:
        raise SpecError(errors)


def _defaults(section: Synthetic) -> KindDefaults:
    try:
        return KindDefaults.builtin().with_overrides(section.defaults)
    except DefaultsError as exc:
        raise SpecError([{"path": "synthetic.defaults", "message": str(exc)}]) from None


def generate(
    section: Synthetic, rng: random.Random, defaults: KindDefaults
) -> list[dict[str, Any]]:
    """Draw the workloads, in arrival order. Every draw comes from ``rng`` in a fixed
    order, so a seed fixes the result."""
    arrivals = section.arrivals
    rate = arrivals.rate_per_hour / 3600
    end = arrivals.start_seconds + arrivals.duration_seconds
    mixes = [
        _mix(section.gpu_mix),
        _mix(section.members_mix),
        _mix(section.kinds),
        _mix(section.priority_mix),
    ]
    workloads: list[dict[str, Any]] = []
    t = arrivals.start_seconds + rng.expovariate(rate)
    while t < end:
        workloads.append(_draw(section, rng, mixes, defaults, t, len(workloads)))
        t += rng.expovariate(rate)
    return workloads


def _mix(shares: Mapping[Any, float]) -> tuple[list[Any], list[float]]:
    """Keys in a fixed order (YAML order may vary between writers), cumulative weights."""
    keys = sorted(shares, key=str)
    weights = [shares[k] for k in keys]
    return keys, [sum(weights[: i + 1]) for i in range(len(weights))]


def _pick(rng: random.Random, mix: tuple[list[Any], list[float]]) -> Any:
    keys, cumulative = mix
    if not keys:
        return None
    return rng.choices(keys, cum_weights=cumulative)[0]


def _draw(
    section: Synthetic,
    rng: random.Random,
    mixes: list[tuple[list[Any], list[float]]],
    defaults: KindDefaults,
    arrival: float,
    index: int,
) -> dict[str, Any]:
    gpus, members, kind, priority = (_pick(rng, m) for m in mixes)
    spread = section.duration
    work = max(
        spread.min_seconds, rng.lognormvariate(math.log(spread.median_seconds), spread.sigma)
    )
    kind_name = kind.value if isinstance(kind, WorkloadKind) else str(kind)
    workload: dict[str, Any] = {
        "name": f"{section.name_prefix}-{index:06d}",
        "kind": kind_name,
        "members": members,
        "gpus": gpus,
        "arrival": round(arrival, 3),
        "durationSeconds": round(work),
        **defaults.for_kind(kind_name).workload_fields(),
    }
    if priority is not None:
        workload["priorityClassName"] = priority
    if kind_name == "training" and members > 1:
        workload["podGroup"] = {"minCount": members}
    return workload
