"""The checkpoint-interval planner (issue #17 §2): the swept spec, the closed form's
inputs, and the curve with its bands and optimum."""

from __future__ import annotations

import math

import pytest

import scheduler_core as sc
from scheduler_core import checkpoint_planner as cp
from scheduler_core.checkpoint_optima import daly_interval, expected_wall_clock, young_interval
from scheduler_core.plugins.disruptions import NODE_MONITOR_GRACE_SECONDS
from scheduler_core.spec import resolve_variant

S14 = "s14-checkpoint-planner"


def s14() -> sc.ExperimentSpec:
    return sc.get_preset(S14).spec()


def request(**changes: object) -> cp.PlanRequest:
    values: dict[str, object] = {
        "workload": "train",
        "mtbf_seconds": 32 * 3600.0,
        "repair_seconds": 4 * 3600.0,
        "min_interval_seconds": 300.0,
        "max_interval_seconds": 10_800.0,
        "points": 6,
        "replications": 8,
    }
    values.update(changes)
    return cp.PlanRequest(**values)  # type: ignore[arg-type]


def test_intervals_are_evenly_spaced_on_a_log_scale_in_whole_seconds() -> None:
    assert cp.plan_intervals(100, 10_000, 3) == [100, 1000, 10_000]
    assert cp.plan_intervals(300, 10_800, 12)[0] == 300
    assert cp.plan_intervals(300, 10_800, 12)[-1] == 10_800
    assert len(cp.plan_intervals(300, 10_800, 12)) == 12


@pytest.mark.parametrize(
    ("changes", "path", "words"),
    [
        ({"mtbf_seconds": -5.0}, "planner.mtbfSeconds", "must be positive"),
        ({"distribution": "gamma"}, "planner.distribution", "unknown distribution 'gamma'"),
        ({"workload": "nope"}, "planner.workload", "no workload 'nope' (there are: train)"),
        ({"replications": 1}, "planner.replications", "a band needs two"),
        ({"points": 2}, "planner.points", "from 3 to 40"),
        ({"max_interval_seconds": 200.0}, "planner.maxIntervalSeconds", "above the smallest"),
        ({"min_interval_seconds": 0.5}, "planner.minIntervalSeconds", "at least 1 s"),
        ({"repair_seconds": 0.0}, "planner.repairSeconds", "must be positive"),
    ],
    ids=[
        "negative-mtbf",
        "unknown-distribution",
        "unknown-job",
        "one-replication",
        "two-points",
        "empty-range",
        "sub-second",
        "no-repair",
    ],
)
def test_a_bad_request_names_its_field(changes: dict, path: str, words: str) -> None:
    with pytest.raises(sc.SpecError) as caught:
        cp.plan_spec(s14(), request(**changes))
    assert any(e["path"] == path and words in e["message"] for e in caught.value.errors), (
        caught.value.errors
    )


def test_the_planned_spec_sweeps_the_interval_with_the_chosen_failures() -> None:
    planned = cp.plan_spec(s14(), request(distribution="weibull", shape=0.7, work_seconds=86_400))
    assert planned.grid == {
        "workloads.train.checkpoint.intervalSeconds": cp.plan_intervals(300, 10_800, 6)
    }
    assert planned.replications == 8
    (model,) = planned.failures
    assert model.inter_arrival is not None
    assert (model.inter_arrival.distribution, model.inter_arrival.shape) == ("weibull", 0.7)
    assert model.inter_arrival.mean_seconds == 32 * 3600
    assert planned.workloads[0].duration_seconds == 86_400
    assert planned.name.endswith("· checkpoint plan")
    assert cp.swept_workload(planned) == "train"
    assert sorted(cp.variant_intervals(planned).values()) == cp.plan_intervals(300, 10_800, 6)


def test_the_horizon_stretches_so_the_worst_interval_still_finishes() -> None:
    planned = cp.plan_spec(s14(), request())
    inputs = cp.closed_form_inputs(planned, "train")
    assert inputs is not None
    worst = expected_wall_clock(2 * 86_400, 10_800, 120, inputs.restart_seconds, 14_400)
    assert planned.horizon_seconds >= cp.HORIZON_MARGIN * worst


def test_a_sweep_needing_more_than_the_horizon_limit_is_refused_on_the_interval() -> None:
    with pytest.raises(sc.SpecError) as caught:
        cp.plan_spec(s14(), request(), max_horizon_seconds=5 * 86_400)
    (error,) = caught.value.errors
    assert error["path"] == "planner.maxIntervalSeconds"
    assert "above the limit of 5d" in error["message"]


def test_the_closed_form_sees_the_jobs_mtbf_and_the_kubernetes_restart() -> None:
    """8 nodes with a per-node MTBF of 32 h: the job fails every 4 h. A restart is the
    node controller's NotReady grace, the 300 s default toleration
    (node.kubernetes.io/not-ready, unreachable) and the job's 300 s start-up."""
    inputs = cp.closed_form_inputs(s14(), "train")
    assert inputs == cp.ClosedFormInputs(
        mtbf_seconds=4 * 3600,
        write_seconds=120,
        restart_seconds=NODE_MONITOR_GRACE_SECONDS + 300 + 300,
        work_seconds=2 * 86_400,
    )


def test_a_spec_without_random_failures_has_no_closed_form() -> None:
    data = s14().model_dump(mode="json", by_alias=True)
    data["failures"] = []
    spec = sc.parse_spec(data)
    assert cp.closed_form_inputs(spec, "train") is None
    assert cp.swept_workload(spec) == "train"


def test_only_a_lone_interval_grid_is_a_planner_sweep() -> None:
    data = s14().model_dump(mode="json", by_alias=True)
    data["grid"] = {"workloads.train.startupSeconds": [60, 120]}
    assert cp.swept_workload(sc.parse_spec(data)) is None
    assert cp.variant_intervals(sc.parse_spec(data)) == {}


def observe(spec: sc.ExperimentSpec) -> list[cp.Observation]:
    out = []
    for name, interval in cp.variant_intervals(spec).items():
        variant = resolve_variant(spec, name)
        for replication in range(spec.replications):
            result = sc.simulate(spec, variant, replication)
            (job,) = result.workloads
            out.append(cp.Observation(interval, result.seed, job.completion_time, job.ettr))
    return out


@pytest.fixture(scope="module")
def planned_result() -> cp.PlanResult:
    planned = cp.plan_spec(s14(), request(points=5, replications=12))
    return cp.plan_result(planned, "train", observe(planned))


def test_the_optimum_is_the_lowest_mean_wall_clock_and_the_band_holds_it(
    planned_result: cp.PlanResult,
) -> None:
    points = planned_result.points
    best = min(points, key=lambda p: p.wall_clock.mean if p.wall_clock else math.inf)
    assert planned_result.optimum_interval == best.interval_seconds
    assert planned_result.band is not None
    low, high = planned_result.band
    assert low <= best.interval_seconds <= high
    assert best.near_optimum
    # The sweep's ends (5 min and 3 h) are far worse than the middle: not in the band.
    assert not points[0].near_optimum
    assert not points[-1].near_optimum


def test_each_point_has_its_95_percent_band_from_the_replications(
    planned_result: cp.PlanResult,
) -> None:
    for point in planned_result.points:
        assert point.wall_clock is not None
        assert point.ettr is not None
        assert point.wall_clock.n == point.replications == 12
        assert point.unfinished == 0
        assert 0 < point.wall_clock.half_width < point.wall_clock.mean / 5
        assert 0 < point.ettr.low < point.ettr.mean < point.ettr.high < 1


def test_young_and_daly_sit_beside_the_empirical_optimum(planned_result: cp.PlanResult) -> None:
    assert planned_result.young_interval == pytest.approx(young_interval(120, 14_400))
    assert planned_result.daly_interval == pytest.approx(daly_interval(120, 14_400))
    assert planned_result.band is not None
    low, high = planned_result.band
    # With exponential failures the closed forms' assumptions hold: Daly's optimum falls
    # inside (or at the edge of) the sampled band of the sweep's points around it.
    intervals = [p.interval_seconds for p in planned_result.points]
    below = max(i for i in intervals if i <= low)
    above = min(i for i in intervals if i >= high)
    assert below * 0.5 <= planned_result.daly_interval <= above * 1.5


def test_the_simulated_curve_tracks_dalys_expected_wall_clock(
    planned_result: cp.PlanResult,
) -> None:
    for point in planned_result.points:
        assert point.wall_clock is not None
        assert point.daly_wall_clock is not None
        assert point.wall_clock.mean == pytest.approx(point.daly_wall_clock, rel=0.06)


def test_the_wall_clock_for_other_work_scales_the_simulation_and_asks_daly(
    planned_result: cp.PlanResult,
) -> None:
    rows = planned_result.wall_clock_for(planned_result.work_seconds / 2)
    assert len(rows) == len(planned_result.points)
    for row, point in zip(rows, planned_result.points, strict=True):
        assert point.wall_clock is not None
        assert row["simulated_mean"] == pytest.approx(point.wall_clock.mean / 2)
        inputs = planned_result.inputs
        assert inputs is not None
        assert row["daly"] == pytest.approx(
            expected_wall_clock(
                planned_result.work_seconds / 2,
                point.interval_seconds,
                inputs.write_seconds,
                inputs.restart_seconds,
                inputs.mtbf_seconds,
            )
        )
    with pytest.raises(ValueError, match="work must be positive"):
        planned_result.wall_clock_for(0)


def test_an_unfinished_replication_keeps_its_interval_from_being_the_optimum() -> None:
    spec = s14()
    observations = [cp.Observation(300, seed, 100.0 + seed, 0.5) for seed in range(4)] + [
        cp.Observation(600, seed, 50.0 if seed else None, 0.6) for seed in range(4)
    ]
    result = cp.plan_result(spec, "train", observations)
    assert result.optimum_interval == 300
    assert result.points[1].unfinished == 1
    assert any("did not finish by the horizon in 1 of 4" in note for note in result.notes)


def test_the_result_is_deterministic_and_serialises(planned_result: cp.PlanResult) -> None:
    planned = cp.plan_spec(s14(), request(points=5, replications=12))
    again = cp.plan_result(planned, "train", observe(planned))
    assert again == planned_result
    document = planned_result.to_json()
    assert document["optimum_interval"] == planned_result.optimum_interval
    assert document["points"][0]["wall_clock"]["n"] == 12
    assert [name for name, _ in document["formulas"]][:2] == ["Young (1974)", "Daly (2006)"]
