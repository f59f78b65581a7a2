"""The checkpoint-interval planner (issue #17 §2): one job, one failure model, a sweep.

Three steps, all here so that every number the planner shows comes from the core:

1. :func:`plan_spec` turns an experiment and a :class:`PlanRequest` (what the one-click
   form asks) into a spec whose grid sweeps the job's ``checkpoint.intervalSeconds``,
   with the chosen failure model and replications, and a horizon long enough for the
   job to finish at the worst interval of the sweep.
2. The spec runs like any other (a variant per interval, replications re-drawing the
   failures; every variant of one replication sees the same failures).
3. :func:`plan_result` reads the job's completion time and ETTR per replication and
   returns the curve with its 95 % bands (``stats.mean_interval``), the empirical
   optimum with the intervals statistically indistinguishable from it (paired by seed,
   ``stats.difference``), and the Young and Daly closed forms beside it
   (``checkpoint_optima``), with the inputs the closed forms were given.
"""

from __future__ import annotations

import math
from collections.abc import Hashable, Mapping, Sequence
from dataclasses import asdict, dataclass, field
from typing import Any, Literal

from scheduler_core.checkpoint_optima import (
    daly_interval,
    expected_ettr,
    expected_wall_clock,
    young_interval,
)
from scheduler_core.durations import format_duration
from scheduler_core.failures import mean_of
from scheduler_core.plugins.disruptions import NODE_MONITOR_GRACE_SECONDS
from scheduler_core.spec import (
    MIN_CHECKPOINT_INTERVAL_SECONDS,
    ExperimentSpec,
    FailureModel,
    SpecError,
    Workload,
    expand_variants,
    parse_spec,
)
from scheduler_core.stats import difference, mean_interval

GRID_KEY = "workloads.{}.checkpoint.intervalSeconds"
MIN_POINTS, MAX_POINTS = 3, 40
MAX_REPLICATIONS = 1000
HORIZON_MARGIN = 3.0
"""The swept spec's horizon is this many times the closed form's expected wall-clock time
at the worst interval of the sweep: the job finishes within it in nearly every
replication, so a mean completion time is rarely censored (the rest are counted)."""
Distribution = Literal["exponential", "weibull", "lognormal"]

FORMULAS = (
    ("Young (1974)", "τ = √(2 δ M)"),
    (
        "Daly (2006)",
        "τ = √(2 δ M) · (1 + ⅓ √(δ / 2M) + (δ / 2M) / 9) - δ  for δ < 2M, else τ = M",
    ),
    ("Daly's expected wall-clock time", "T(τ) = M · e^(R/M) · (e^((τ + δ)/M) - 1) · W / τ"),
    ("ETTR (closed form)", "W / T(τ)"),
)
"""What the assumptions panel writes out: δ the checkpoint write, M the job's mean time
between failures, R the restart after a failure, W the work."""

SEMANTICS = (
    "A checkpoint write blocks progress for δ seconds and is durable only when it "
    "completes: a failure during a write loses everything since the previous durable "
    "checkpoint, and the write time spent.",
    "A failure during a restart costs the restart spent so far and no progress (there is "
    "none since the checkpoint); the job restarts again. Daly's e^(R/M) counts exactly "
    "these repeated restarts.",
    "The interval τ is the work between two writes (checkpoint.intervalSeconds), so one "
    "cycle lasts τ + δ; Young and Daly use the same convention.",
    "The simulation adds what the closed forms leave out: the NotReady grace and the pod "
    "toleration before the eviction, a finite pool of spare nodes (the job waits for a "
    "repair when none is free), the first start-up, and non-exponential failures.",
)


@dataclass(frozen=True, slots=True)
class PlanRequest:
    """What the planner form asks: the job, its failure model, the sweep."""

    workload: str
    mtbf_seconds: float
    """Per node: the mean time a node stays up between failures."""
    repair_seconds: float = 4 * 3600.0
    distribution: Distribution = "exponential"
    shape: float = 1.0
    """Weibull's shape k (k < 1: infant mortality, k > 1: wear-out)."""
    sigma: float = 1.0
    """Lognormal: sigma of the logarithm."""
    min_interval_seconds: float = 300.0
    max_interval_seconds: float = 3 * 3600.0
    points: int = 12
    replications: int = 50
    work_seconds: float | None = None
    """The work to finish (the job's durationSeconds); None keeps the job's own."""


def plan_intervals(low: float, high: float, points: int) -> list[int]:
    """``points`` intervals from ``low`` to ``high``, evenly spaced on a log scale (the
    wall-clock curve is flat near its optimum and steep at both ends), in whole seconds.
    Raises SpecError naming ``planner.<field>``."""
    errors = _interval_errors(low, high, points)
    if errors:
        raise SpecError(errors)
    ratio = (high / low) ** (1.0 / (points - 1))
    values = [round(low * ratio**i) for i in range(points)]
    return sorted(set(values))


def _interval_errors(low: float, high: float, points: int) -> list[dict[str, str]]:
    errors = []
    if not low >= MIN_CHECKPOINT_INTERVAL_SECONDS:
        errors.append(
            _error("minIntervalSeconds", f"must be at least {MIN_CHECKPOINT_INTERVAL_SECONDS:g} s")
        )
    if not high > low:
        errors.append(_error("maxIntervalSeconds", "must be above the smallest interval"))
    if not MIN_POINTS <= points <= MAX_POINTS:
        errors.append(_error("points", f"must be from {MIN_POINTS} to {MAX_POINTS}"))
    elif not errors and round(high) - round(low) < points - 1:
        errors.append(_error("points", f"{points} whole-second intervals do not fit in the range"))
    return errors


def _error(name: str, message: str) -> dict[str, str]:
    return {"path": f"planner.{name}", "message": message}


def plan_spec(
    spec: ExperimentSpec, request: PlanRequest, *, max_horizon_seconds: float | None = None
) -> ExperimentSpec:
    """The experiment, swept over the checkpoint interval of ``request.workload``.

    1. Check the request (every error names its ``planner.*`` field).
    2. Replace the spec's failure models by the request's (random, every node on its own
       clock), its variants and grid by the interval sweep, its replications.
    3. Stretch the horizon to HORIZON_MARGIN x the closed form's wall-clock time at the
       worst interval, refusing (on ``planner.maxIntervalSeconds``) a sweep that would
       need more than ``max_horizon_seconds``.
    4. Validate the result like any spec (raises SpecError).
    """
    workload = _planned_workload(spec, request)
    intervals = plan_intervals(
        request.min_interval_seconds, request.max_interval_seconds, request.points
    )
    data = spec.model_dump(mode="json", by_alias=True, exclude={"variants", "grid"})
    for entry in data["workloads"]:
        if entry["name"] == workload.name and request.work_seconds is not None:
            entry["durationSeconds"] = request.work_seconds
        if entry["name"] == workload.name and entry["checkpoint"]["intervalSeconds"] is None:
            entry["checkpoint"]["intervalSeconds"] = intervals[0]
    data["failures"] = [_failure_model(request)]
    data["grid"] = {GRID_KEY.format(workload.name): intervals}
    data["replications"] = request.replications
    data["name"] = _plan_name(spec.name)
    planned = parse_spec(data, check_variants=False)
    data["horizonSeconds"] = _horizon(planned, workload.name, intervals, max_horizon_seconds)
    return parse_spec(data)


def _planned_workload(spec: ExperimentSpec, request: PlanRequest) -> Workload:
    errors = _request_errors(request)
    found = next((w for w in spec.workloads if w.name == request.workload), None)
    if found is None:
        names = ", ".join(w.name for w in spec.workloads) or "none"
        errors.append(_error("workload", f"no workload '{request.workload}' (there are: {names})"))
    elif found.duration_seconds is None and request.work_seconds is None:
        errors.append(
            _error(
                "workSeconds",
                f"'{found.name}' runs to the horizon (no durationSeconds): give the work to finish",
            )
        )
    if errors:
        raise SpecError(errors)
    assert found is not None
    return found


def _request_errors(request: PlanRequest) -> list[dict[str, str]]:
    checks = (
        (
            "mtbfSeconds",
            request.mtbf_seconds > 0,
            "must be positive (a mean time between failures)",
        ),
        ("repairSeconds", request.repair_seconds > 0, "must be positive"),
        ("shape", request.shape > 0, "must be positive"),
        ("sigma", request.sigma > 0, "must be positive"),
        (
            "replications",
            2 <= request.replications <= MAX_REPLICATIONS,
            f"must be from 2 (a band needs two) to {MAX_REPLICATIONS}",
        ),
        (
            "workSeconds",
            request.work_seconds is None or request.work_seconds > 0,
            "must be positive",
        ),
    )
    errors = [_error(name, message) for name, ok, message in checks if not ok]
    if request.distribution not in ("exponential", "weibull", "lognormal"):
        errors.append(
            _error(
                "distribution",
                f"unknown distribution '{request.distribution}' "
                "(exponential, weibull or lognormal)",
            )
        )
    return errors


def _failure_model(request: PlanRequest) -> dict[str, Any]:
    inter: dict[str, Any] = {
        "distribution": request.distribution,
        "meanSeconds": request.mtbf_seconds,
    }
    if request.distribution == "weibull":
        inter["shape"] = request.shape
    if request.distribution == "lognormal":
        inter["sigma"] = request.sigma
    return {
        "name": "planner-failures",
        "interArrival": inter,
        "repair": {"distribution": "exponential", "meanSeconds": request.repair_seconds},
    }


def _plan_name(name: str) -> str:
    suffix = " · checkpoint plan"
    return name if name.endswith(suffix) else f"{name[: 200 - len(suffix)]}{suffix}"


def _horizon(
    spec: ExperimentSpec, workload: str, intervals: Sequence[int], limit: float | None
) -> float:
    inputs = closed_form_inputs(spec, workload)
    assert inputs is not None  # the planner's own failure model always reaches the job
    job = next(w for w in spec.workloads if w.name == workload)
    worst = max(
        expected_wall_clock(
            inputs.work_seconds,
            i,
            inputs.write_seconds,
            inputs.restart_seconds,
            inputs.mtbf_seconds,
        )
        for i in (intervals[0], intervals[-1])
    )
    needed = max(0.0, job.arrival) + job.startup_seconds + HORIZON_MARGIN * worst
    if limit is not None and needed > limit:
        raise SpecError(
            [
                _error(
                    "maxIntervalSeconds",
                    f"at the ends of this sweep the job is expected to take "
                    f"{format_duration(worst)}; the horizon it needs "
                    f"({format_duration(needed)}) is above the limit of "
                    f"{format_duration(limit)}: narrow the interval range, shorten the work "
                    "or raise the MTBF",
                )
            ]
        )
    return max(spec.horizon_seconds, math.ceil(needed))


# ------------------------------------------------------------------ the closed form's inputs
@dataclass(frozen=True, slots=True)
class ClosedFormInputs:
    """What Young and Daly are given for one job, read from the spec."""

    mtbf_seconds: float
    """The job's: one member's failure stops a synchronous job, so per-node failures on
    ``members`` nodes reach it ``members`` times as often."""
    write_seconds: float
    restart_seconds: float
    """NotReady grace + toleration + startup (node failures); notice + startup (spot)."""
    work_seconds: float
    notes: tuple[str, ...] = ()
    """What the closed form leaves out of this spec's failure models."""


def closed_form_inputs(spec: ExperimentSpec, workload: str) -> ClosedFormInputs | None:
    """The job's MTBF, write and restart times; None if no random failure model reaches
    it (a trace only, or none at all), where the closed forms have nothing to say."""
    job = next((w for w in spec.workloads if w.name == workload), None)
    if job is None:
        return None
    rates: list[tuple[float, float]] = []  # (failures per second of the job, restart)
    notes: list[str] = []
    for index, model in enumerate(spec.failures):
        rate = _job_rate(spec, model, job.members)
        if rate is None:
            notes.append(f"failures[{index}] ({model.kind}, {model.disruption}) is not counted")
            continue
        rates.append((rate, _restart(model) + job.startup_seconds))
        if model.inter_arrival is not None and model.inter_arrival.distribution != "exponential":
            notes.append(
                f"failures[{index}] is {model.inter_arrival.distribution}: the closed forms "
                "assume exponential failures and take its mean"
            )
    total = sum(rate for rate, _ in rates)
    if total <= 0:
        return None
    return ClosedFormInputs(
        mtbf_seconds=1.0 / total,
        write_seconds=job.checkpoint.write_seconds,
        restart_seconds=sum(rate * restart for rate, restart in rates) / total,
        work_seconds=job.duration_seconds or spec.horizon_seconds,
        notes=tuple(notes),
    )


def _job_rate(spec: ExperimentSpec, model: FailureModel, members: int) -> float | None:
    """Failures per second that hit one of the job's ``members`` nodes (assumed in the
    model's scope when the scope is large enough); None for what the closed form cannot
    express (traces, correlated failures, drains)."""
    if model.kind != "random" or model.disruption == "drain" or model.inter_arrival is None:
        return None
    scope = _scope_size(spec, model)
    if scope == 0:
        return None
    mean = mean_of(model.inter_arrival)
    hit = min(members, scope)
    return hit / mean if model.per == "node" else hit / (scope * mean)


def _scope_size(spec: ExperimentSpec, model: FailureModel) -> int:
    def matches(pool: str | None, labels: Mapping[str, str]) -> bool:
        return (model.pool is None or pool == model.pool) and all(
            labels.get(k) == v for k, v in model.selector.items()
        )

    return sum(p.count for p in spec.cluster.node_pools if matches(p.name, p.labels)) + sum(
        1 for n in spec.cluster.nodes if matches(None, n.labels)
    )


def _restart(model: FailureModel) -> float:
    if model.disruption == "spot-reclaim":
        return model.notice_seconds
    return NODE_MONITOR_GRACE_SECONDS + model.toleration_seconds


# ------------------------------------------------------------------------------ the sweep
def swept_workload(spec: ExperimentSpec) -> str | None:
    """The workload whose checkpoint interval the spec's grid sweeps, alone (a planner
    spec, or a preset like s14); None for any other spec."""
    if spec.variants or len(spec.grid) != 1:
        return None
    (key,) = spec.grid
    parts = key.split(".")
    if len(parts) != 4 or parts[0] != "workloads" or parts[2:] != ["checkpoint", "intervalSeconds"]:
        return None
    return parts[1] if any(w.name == parts[1] for w in spec.workloads) else None


def variant_intervals(spec: ExperimentSpec) -> dict[str, float]:
    """Variant name -> the checkpoint interval it runs, for a swept spec."""
    workload = swept_workload(spec)
    if workload is None:
        return {}
    key = GRID_KEY.format(workload)
    return {v.name: float(v.set[key]) for v in expand_variants(spec) if key in v.set}


# ----------------------------------------------------------------------------- the result
@dataclass(frozen=True, slots=True)
class Observation:
    """One replication of one interval: the job's completion time (None: not done by
    the horizon) and ETTR."""

    interval_seconds: float
    seed: int
    completion_time: float | None
    ettr: float | None


@dataclass(frozen=True, slots=True)
class Estimate:
    """A mean across replications and the half-width of its 95 % interval."""

    mean: float
    half_width: float
    n: int

    @property
    def low(self) -> float:
        return self.mean - self.half_width

    @property
    def high(self) -> float:
        return self.mean + self.half_width


@dataclass(frozen=True, slots=True)
class PlanPoint:
    interval_seconds: float
    replications: int
    unfinished: int
    """Replications in which the job was not done by the horizon: its wall-clock mean
    leaves them out (so it is a lower bound) and the optimum is never such a point."""
    wall_clock: Estimate | None
    ettr: Estimate | None
    daly_wall_clock: float | None
    daly_ettr: float | None
    near_optimum: bool = False
    """Not distinguishable from the optimum: the 95 % interval of its paired difference
    in wall-clock time from the optimum's includes zero."""


@dataclass(frozen=True, slots=True)
class PlanResult:
    workload: str
    work_seconds: float
    points: tuple[PlanPoint, ...]
    optimum_interval: float | None
    """The interval with the lowest mean wall-clock time (the highest ETTR with it)."""
    optimum_ettr_interval: float | None
    band: tuple[float, float] | None
    """The smallest and largest interval not distinguishable from the optimum."""
    young_interval: float | None
    daly_interval: float | None
    inputs: ClosedFormInputs | None
    formulas: tuple[tuple[str, str], ...] = FORMULAS
    semantics: tuple[str, ...] = SEMANTICS
    notes: tuple[str, ...] = field(default=())

    def to_json(self) -> dict[str, Any]:
        return asdict(self)

    def wall_clock_for(self, work_seconds: float) -> list[dict[str, float | None]]:
        """The expected wall-clock time to finish ``work_seconds`` of work, per interval:
        Daly's closed form, and the simulated mean with its band scaled by the work
        (a long job's wall-clock time grows in proportion to its work: the
        renewal-reward theorem), exact for the work the job was simulated with."""
        if not work_seconds > 0:
            raise ValueError(f"the work must be positive, got {work_seconds:g}")
        scale = work_seconds / self.work_seconds
        return [_work_row(point, scale, work_seconds, self.inputs) for point in self.points]


def _work_row(
    point: PlanPoint, scale: float, work: float, inputs: ClosedFormInputs | None
) -> dict[str, float | None]:
    wall = point.wall_clock
    return {
        "interval_seconds": point.interval_seconds,
        "work_seconds": work,
        "simulated_mean": wall.mean * scale if wall else None,
        "simulated_low": wall.low * scale if wall else None,
        "simulated_high": wall.high * scale if wall else None,
        "daly": (
            expected_wall_clock(
                work,
                point.interval_seconds,
                inputs.write_seconds,
                inputs.restart_seconds,
                inputs.mtbf_seconds,
            )
            if inputs
            else None
        ),
    }


def plan_result(
    spec: ExperimentSpec, workload: str, observations: Sequence[Observation]
) -> PlanResult:
    """The planner's curve from the replications of a swept spec (see module doc)."""
    inputs = closed_form_inputs(spec, workload)
    by_interval: dict[float, list[Observation]] = {}
    for obs in observations:
        by_interval.setdefault(obs.interval_seconds, []).append(obs)
    points = [_point(i, by_interval[i], inputs) for i in sorted(by_interval)]
    best = _optimum(points)
    near = _near_optimum(best, by_interval) if best is not None else set()
    points = [_with_near(p, p.interval_seconds in near) for p in points]
    band = (min(near), max(near)) if near else None
    job = next(w for w in spec.workloads if w.name == workload)
    return PlanResult(
        workload=workload,
        work_seconds=job.duration_seconds or spec.horizon_seconds,
        points=tuple(points),
        optimum_interval=best,
        optimum_ettr_interval=_best_ettr(points),
        band=band,
        young_interval=young_interval(inputs.write_seconds, inputs.mtbf_seconds)
        if inputs
        else None,
        daly_interval=daly_interval(inputs.write_seconds, inputs.mtbf_seconds) if inputs else None,
        inputs=inputs,
        notes=_notes(points, inputs),
    )


def _point(
    interval: float, observations: list[Observation], inputs: ClosedFormInputs | None
) -> PlanPoint:
    done = [o.completion_time for o in observations if o.completion_time is not None]
    ettrs = [o.ettr for o in observations if o.ettr is not None]
    return PlanPoint(
        interval_seconds=interval,
        replications=len(observations),
        unfinished=len(observations) - len(done),
        wall_clock=_estimate(done),
        ettr=_estimate(ettrs),
        daly_wall_clock=_daly(inputs, interval, wall=True),
        daly_ettr=_daly(inputs, interval, wall=False),
    )


def _estimate(values: list[float]) -> Estimate | None:
    if not values:
        return None
    mean, half = mean_interval(values)
    return Estimate(mean, half, len(values))


def _daly(inputs: ClosedFormInputs | None, interval: float, *, wall: bool) -> float | None:
    if inputs is None:
        return None
    args = (interval, inputs.write_seconds, inputs.restart_seconds, inputs.mtbf_seconds)
    if wall:
        return expected_wall_clock(inputs.work_seconds, *args)
    return expected_ettr(*args)


def _optimum(points: Sequence[PlanPoint]) -> float | None:
    """The lowest mean wall-clock time among intervals where every replication finished
    (a censored mean would flatter the interval); ties go to the longer interval (fewer
    writes on the storage)."""
    complete = [p for p in points if p.wall_clock is not None and p.unfinished == 0]
    if not complete:
        return None
    best = min(
        complete, key=lambda p: (p.wall_clock.mean if p.wall_clock else 0.0, -p.interval_seconds)
    )
    return best.interval_seconds


def _best_ettr(points: Sequence[PlanPoint]) -> float | None:
    rated = [p for p in points if p.ettr is not None]
    if not rated:
        return None
    return max(
        rated, key=lambda p: (p.ettr.mean if p.ettr else 0.0, p.interval_seconds)
    ).interval_seconds


def _near_optimum(best: float, by_interval: Mapping[float, list[Observation]]) -> set[float]:
    """Intervals whose wall-clock time is not significantly above the optimum's: paired
    by seed (every interval of one replication saw the same failures), so the band is
    the sweep's, not the dice's."""
    base = _by_seed(by_interval[best])
    near = {best}
    for interval, observations in by_interval.items():
        if interval == best or any(o.completion_time is None for o in observations):
            continue
        diff = difference(base, _by_seed(observations))
        if diff.mean is not None and diff.half_width is not None and diff.mean <= diff.half_width:
            near.add(interval)
    return near


def _by_seed(observations: list[Observation]) -> dict[Hashable, float | None]:
    return {o.seed: o.completion_time for o in observations}


def _with_near(point: PlanPoint, near: bool) -> PlanPoint:
    return PlanPoint(
        interval_seconds=point.interval_seconds,
        replications=point.replications,
        unfinished=point.unfinished,
        wall_clock=point.wall_clock,
        ettr=point.ettr,
        daly_wall_clock=point.daly_wall_clock,
        daly_ettr=point.daly_ettr,
        near_optimum=near,
    )


def _notes(points: Sequence[PlanPoint], inputs: ClosedFormInputs | None) -> tuple[str, ...]:
    notes = (
        list(inputs.notes)
        if inputs
        else ["no random failure model reaches the job: no closed form"]
    )
    censored = [p for p in points if p.unfinished]
    for p in censored:
        notes.append(
            f"at {format_duration(p.interval_seconds)} the job did not finish by the horizon in "
            f"{p.unfinished} of {p.replications} replications: that mean leaves them out"
        )
    return tuple(notes)
