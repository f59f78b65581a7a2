"""Failure models: random node failures, spot reclaims and trace replay, as timeline events.

A spec's ``failures:`` section describes *how* nodes fail (docs/failures.md); each
replication draws *when* and *which* from its own seed and gets plain ``node-failure``
timeline events, so the engine simulates a drawn failure exactly like a hand-placed one.
Every variant of a replication draws the same failures (common random numbers): a
difference between two checkpoint intervals is then the interval's, not the dice's.

The draws use their own ``random.Random`` per failure model, seeded from the
replication's seed and the model's index: adding a model leaves the others' draws as
they were, and the engine's own random stream (the preemption candidate offset) is not
disturbed.
"""

from __future__ import annotations

import csv
import io
import math
import random
from collections.abc import Iterable, Iterator, Sequence
from dataclasses import dataclass

from scheduler_core.durations import parse_duration
from scheduler_core.spec import (
    ExperimentSpec,
    FailureDistribution,
    FailureModel,
    ResolvedVariant,
    SpecError,
    TimelineEvent,
)

GENERATION_SLACK = 10.0
"""A draw may exceed its expected count; generation stops at this many times the
expected count (and at least :data:`GENERATION_FLOOR` events) so that an accepted spec
has a bounded cost whatever the dice do."""
GENERATION_FLOOR = 1000


@dataclass(frozen=True, slots=True)
class ScopeNode:
    """A node a failure model may hit: its name, pool and labels (built from the spec)."""

    name: str
    pool: str | None
    labels: dict[str, str]


# ----------------------------------------------------------------------------- sampling
def sample(dist: FailureDistribution, rng: random.Random) -> float:
    """One duration from ``dist``; every family is parametrised by its mean."""
    mean = dist.mean_seconds or 0.0
    if dist.distribution == "exponential":
        return rng.expovariate(1.0 / mean)
    if dist.distribution == "weibull":
        scale = mean / math.gamma(1.0 + 1.0 / dist.shape)
        return rng.weibullvariate(scale, dist.shape)
    if dist.distribution == "lognormal":
        mu = math.log(mean) - dist.sigma**2 / 2.0
        return rng.lognormvariate(mu, dist.sigma)
    if dist.distribution == "empirical":
        return rng.choice(dist.samples_seconds)
    return mean


def mean_of(dist: FailureDistribution) -> float:
    """The distribution's mean (empirical: the samples' mean)."""
    if dist.distribution == "empirical":
        return sum(dist.samples_seconds) / len(dist.samples_seconds)
    return dist.mean_seconds or 0.0


# ----------------------------------------------------------------------------- scope
def cluster_nodes(spec: ExperimentSpec) -> list[ScopeNode]:
    """Every node in engine order (pools first), with its pool and labels."""
    nodes = [
        ScopeNode(f"{p.name}-{i}", p.name, p.labels)
        for p in spec.cluster.node_pools
        for i in range(p.count)
    ]
    return nodes + [ScopeNode(n.name, None, n.labels) for n in spec.cluster.nodes]


def in_scope(model: FailureModel, nodes: Sequence[ScopeNode]) -> list[ScopeNode]:
    """The nodes of the model's pool (if any) that carry every label of its selector."""
    return [
        n
        for n in nodes
        if (model.pool is None or n.pool == model.pool)
        and all(n.labels.get(k) == v for k, v in model.selector.items())
    ]


def _scope_size(spec: ExperimentSpec, model: FailureModel) -> int:
    """How many nodes are in scope, counted per pool without building names (cheap)."""

    def matches(pool: str | None, labels: dict[str, str]) -> bool:
        return (model.pool is None or pool == model.pool) and all(
            labels.get(k) == v for k, v in model.selector.items()
        )

    return sum(p.count for p in spec.cluster.node_pools if matches(p.name, p.labels)) + sum(
        1 for n in spec.cluster.nodes if matches(None, n.labels)
    )


# ----------------------------------------------------------------------------- cost
def expected_events(spec: ExperimentSpec, model: FailureModel) -> float:
    """Timeline events the model is expected to produce over the horizon: what the
    limits check counts before any is drawn."""
    if model.kind == "trace":
        return float(sum(1 for line in model.csv.splitlines() if line.strip()))
    assert model.inter_arrival is not None
    clocks = 1 if model.per == "scope" else _clocks(spec, model)
    return clocks * spec.horizon_seconds / mean_of(model.inter_arrival)


def _clocks(spec: ExperimentSpec, model: FailureModel) -> int:
    """Independent failure clocks: one per node, or per domain for correlated failures."""
    if model.kind != "correlated":
        return _scope_size(spec, model)
    label = model.domain_label or ""
    values = {p.labels.get(label) for p in spec.cluster.node_pools if label in p.labels}
    values |= {n.labels.get(label) for n in spec.cluster.nodes if label in n.labels}
    return max(1, len(values))


def expected_nodes_hit(spec: ExperimentSpec) -> float:
    """Node failures expected over the horizon, over every model: what the cost estimate
    counts as disrupted nodes (a correlated failure takes ``fraction`` of a domain)."""
    total = 0.0
    for model in spec.failures:
        per_event = 1.0
        if model.kind == "correlated":
            per_event = max(1.0, model.fraction * _scope_size(spec, model) / _clocks(spec, model))
        total += expected_events(spec, model) * per_event
    return total


def count_checks(spec: ExperimentSpec) -> Iterator[tuple[str, float]]:
    """(path, expected timeline events) per failure model, for the limits check."""
    for i, model in enumerate(spec.failures):
        yield f"failures[{i}]", expected_events(spec, model)


# ----------------------------------------------------------------------------- validation
def failure_errors(spec: ExperimentSpec) -> Iterator[dict[str, str]]:
    """Rules across fields: the pool exists, the selector and domain label match nodes,
    every trace row reads and names a node."""
    nodes = cluster_nodes(spec)
    pools = {p.name for p in spec.cluster.node_pools}
    for i, model in enumerate(spec.failures):
        path = f"failures[{i}]"
        if model.pool is not None and model.pool not in pools:
            yield {"path": f"{path}.pool", "message": f"no node pool named '{model.pool}'"}
            continue
        scope = in_scope(model, nodes)
        if not scope:
            where = f" in pool '{model.pool}'" if model.pool else ""
            yield {
                "path": f"{path}.selector",
                "message": f"the selector {_selector_text(model.selector)} matches no node{where}",
            }
            continue
        if model.kind == "correlated" and not any(model.domain_label in n.labels for n in scope):
            yield {
                "path": f"{path}.domainLabel",
                "message": f"no node in scope has the label '{model.domain_label}'",
            }
        if model.kind == "trace":
            try:
                trace_rows(model, scope)
            except SpecError as exc:
                yield from ({"path": f"{path}.csv", "message": e["message"]} for e in exc.errors)


def _selector_text(selector: dict[str, str]) -> str:
    return "{" + ", ".join(f"{k}={v}" for k, v in selector.items()) + "}"


# ----------------------------------------------------------------------------- trace
@dataclass(frozen=True, slots=True)
class TraceRow:
    at: float
    nodes: tuple[str, ...]
    duration: float | None


def trace_rows(model: FailureModel, scope: Sequence[ScopeNode]) -> list[TraceRow]:
    """The rows of a failure trace: ``time,target,duration`` (a header row is optional);
    target is a node name or a ``label=value`` selector; an empty duration: never back."""
    by_name = {n.name for n in scope}
    rows = []
    reader = csv.reader(io.StringIO(model.csv))
    for number, row in enumerate(reader, start=1):
        cells = [c.strip() for c in row]
        if not any(cells) or (number == 1 and cells[0].lower() == "time"):
            continue
        if len(cells) not in (2, 3):
            raise _row_error(number, f"expected time,target,duration, got {len(cells)} column(s)")
        at = _row_seconds(cells[0], number, "time")
        duration = (
            _row_seconds(cells[2], number, "duration") if len(cells) == 3 and cells[2] else None
        )
        rows.append(TraceRow(at, _row_targets(cells[1], scope, by_name, number), duration))
    return rows


def _row_targets(
    target: str, scope: Sequence[ScopeNode], names: set[str], number: int
) -> tuple[str, ...]:
    if "=" in target:
        key, _, value = target.partition("=")
        hit = tuple(n.name for n in scope if n.labels.get(key.strip()) == value.strip())
        if not hit:
            raise _row_error(number, f"the selector '{target}' matches no node")
        return hit
    if target not in names:
        raise _row_error(number, f"no node named '{target}' (in the model's scope)")
    return (target,)


def _row_seconds(text: str, number: int, column: str) -> float:
    try:
        value = float(text) if _is_number(text) else parse_duration(text)
    except ValueError as exc:
        raise _row_error(number, f"{column} '{text}': {exc}") from None
    if not math.isfinite(value) or value < 0:
        raise _row_error(number, f"{column} must be a non-negative duration, got '{text}'")
    return value


def _is_number(text: str) -> bool:
    try:
        float(text)
    except ValueError:
        return False
    return True


def _row_error(number: int, message: str) -> SpecError:
    return SpecError([{"path": "csv", "message": f"row {number}: {message}"}])


# ----------------------------------------------------------------------------- draws
def draw_events(spec: ExperimentSpec, seed: int) -> list[TimelineEvent]:
    """Every failure of every model for one replication, in time order."""
    nodes = cluster_nodes(spec)
    events: list[TimelineEvent] = []
    for index, model in enumerate(spec.failures):
        rng = random.Random(f"failures/{seed}/{index}")
        scope = in_scope(model, nodes)
        cap = max(GENERATION_FLOOR, int(GENERATION_SLACK * expected_events(spec, model)))
        drawn = _model_events(model, scope, rng, spec.horizon_seconds)
        for _, event in zip(range(cap), drawn, strict=False):
            events.append(event)
    events.sort(key=lambda e: e.at)
    return events


def _model_events(
    model: FailureModel, scope: list[ScopeNode], rng: random.Random, horizon: float
) -> Iterator[TimelineEvent]:
    if model.kind == "trace":
        for row in trace_rows(model, scope):
            if row.at <= horizon:
                yield _event(model, row.at, row.nodes, row.duration)
        return
    domains = _domains(model, scope)
    if model.per == "node":
        for members in domains:
            yield from _renewal(model, members, rng, horizon)
    else:
        yield from _pooled(model, domains, rng, horizon)


def _domains(model: FailureModel, scope: list[ScopeNode]) -> list[list[str]]:
    """Random failures: every node is its own domain; correlated: nodes by label value."""
    if model.kind != "correlated":
        return [[n.name] for n in scope]
    label = model.domain_label or ""
    by_value: dict[str, list[str]] = {}
    for node in scope:
        if label in node.labels:
            by_value.setdefault(node.labels[label], []).append(node.name)
    return [by_value[v] for v in sorted(by_value)]


def _renewal(
    model: FailureModel, members: list[str], rng: random.Random, horizon: float
) -> Iterator[TimelineEvent]:
    """One domain on its own clock: up for a drawn time, down for a drawn repair, again.
    The inter-arrival is measured from the repair (the up time, MTTF in the strict sense)."""
    assert model.inter_arrival is not None
    t = sample(model.inter_arrival, rng)
    while t <= horizon:
        hit = _hit(model, members, rng)
        repair = sample(model.repair, rng) if model.repair is not None else None
        yield _event(model, t, hit, repair)
        if repair is None:
            return
        t += repair + sample(model.inter_arrival, rng)


def _pooled(
    model: FailureModel, domains: list[list[str]], rng: random.Random, horizon: float
) -> Iterator[TimelineEvent]:
    """One clock for the whole scope: each failure hits a random domain that is up."""
    assert model.inter_arrival is not None
    down_until: dict[str, float] = {}
    t = sample(model.inter_arrival, rng)
    while t <= horizon:
        up = [d for d in domains if all(down_until.get(n, -1.0) <= t for n in d)]
        if up:
            hit = _hit(model, rng.choice(up), rng)
            repair = sample(model.repair, rng) if model.repair is not None else None
            for name in hit:
                down_until[name] = math.inf if repair is None else t + repair
            yield _event(model, t, hit, repair)
        t += sample(model.inter_arrival, rng)


def _hit(model: FailureModel, members: list[str], rng: random.Random) -> tuple[str, ...]:
    """The hosts of a domain that fail together: ``fraction`` of them, at least one."""
    if model.kind != "correlated" or model.fraction >= 1.0:
        return tuple(members)
    count = max(1, round(model.fraction * len(members)))
    order = {name: i for i, name in enumerate(members)}
    return tuple(sorted(rng.sample(members, count), key=order.__getitem__))


def _event(
    model: FailureModel, at: float, nodes: Iterable[str], repair: float | None
) -> TimelineEvent:
    # Built without re-validation: every value comes from a validated spec (a draw is
    # finite and non-negative), and a replication may draw thousands of them.
    failure = model.disruption == "node-failure"
    return TimelineEvent.model_construct(
        at=at,
        type=model.disruption,
        nodes=list(nodes),
        recover_after_seconds=repair,
        notice_seconds=model.notice_seconds,
        toleration_seconds=model.toleration_seconds if failure else None,
    )


def with_failures(variant: ResolvedVariant, seed: int) -> ResolvedVariant:
    """The variant with its failure models drawn for ``seed`` appended to its timeline;
    unchanged when it has none."""
    spec = variant.spec
    if not spec.failures:
        return variant
    drawn = draw_events(spec, seed)
    timeline = spec.model_copy(update={"events": [*spec.events, *drawn], "failures": []})
    return ResolvedVariant(
        name=variant.name, spec=timeline, preemption=variant.preemption, placement=variant.placement
    )
