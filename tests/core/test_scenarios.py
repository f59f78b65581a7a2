"""Each canonical scenario (scenarios.md) as an acceptance test of its preset."""

from __future__ import annotations

from functools import cache

import pytest

import scheduler_core as sc
from scheduler_core import events as ev
from scheduler_core.experiment import ReplicationResult


@cache
def run(preset: str, variant: str) -> ReplicationResult:
    return sc.simulate(sc.get_preset(preset).spec(), variant)


def events(result: ReplicationResult, reason: str, workload: str | None = None) -> list[ev.Event]:
    return [e for e in result.events
            if e.reason == reason and (workload is None or e.workload == workload)]


def record(result: ReplicationResult, workload: str) -> sc.metrics.WorkloadRecord:
    return next(r for r in result.workloads if r.workload == workload)


def first_time(result: ReplicationResult, reason: str, pod: str) -> float:
    return next(e.time for e in result.events if e.reason == reason and e.pod == pod)


def test_presets_list_every_scenario_of_the_core() -> None:
    codes = {p.id.split("-", 1)[0] for p in sc.list_presets()}
    assert {"s2", "s3", "s4", "s5", "s6", "s7", "s9", "s11"} <= codes


@pytest.mark.parametrize("preset", [p.id for p in sc.list_presets()])
def test_every_preset_is_valid_and_runs_every_variant(preset: str) -> None:
    spec = sc.get_preset(preset).spec()
    for name in sc.variant_names(spec):
        result = run(preset, name)
        assert result.events, name
        assert set(result.summary) == set(sc.SUMMARY_NAMES)


# ------------------------------------------------------------------------------ S2
S2 = "s2-jump-the-queue"


def test_s2_never_evicts_nobody() -> None:
    result = run(S2, "never")
    assert events(result, ev.PREEMPTED) == []
    assert result.summary["lost_work"] == 0


def test_s2_evaluation_starts_before_background_jobs_that_arrived_earlier() -> None:
    result = run(S2, "never")
    eval_start = first_time(result, ev.SCHEDULED, "evaluation-0")
    assert eval_start == 1200.0  # when train-c frees 4 GPUs on gpu-1
    for late in ("background-2-0", "background-3-0"):
        assert first_time(result, ev.SCHEDULED, late) == eval_start
    order = [e.pod for e in events(result, ev.SCHEDULED) if e.time == eval_start]
    assert order == ["evaluation-0", "background-2-0", "background-3-0"]


def test_s2_a_retry_is_not_a_reservation() -> None:
    """The single GPU freed at 600 s goes to a 1-GPU background job, not the 2-GPU eval."""
    result = run(S2, "never")
    assert first_time(result, ev.SCHEDULED, "background-1-0") == 600.0
    assert first_time(result, ev.SCHEDULED, "evaluation-0") > 600.0


def test_s2_preempt_lower_priority_starts_at_once_and_training_pays() -> None:
    never, preempt = run(S2, "never"), run(S2, "preempt-lower-priority")
    assert record(preempt, "evaluation").time_to_group_scheduled < 60
    assert record(never, "evaluation").time_to_group_scheduled == 1000
    lost_by_training = sum(r.lost_work for r in preempt.workloads if r.kind == "training")
    assert lost_by_training > 0


# ------------------------------------------------------------------------------ S3
S3 = "s3-grace-period"


@pytest.mark.parametrize(("variant", "grace"), [("grace-300s", 300), ("grace-30s", 30)],
                         ids=["300s", "30s"])
def test_s3_victims_released_after_the_grace_period(variant: str, grace: int) -> None:
    notebook = record(run(S3, variant), "notebook")
    assert notebook.time_to_victims_released == grace
    assert notebook.time_to_group_useful == grace + 20  # plus the notebook's startup


def test_s3_nominated_node_is_set_while_the_victim_terminates() -> None:
    result = run(S3, "grace-300s")
    nominated = events(result, ev.NOMINATED, "notebook")
    assert [(e.time, e.node) for e in nominated] == [(100.0, "node-a")]
    assert first_time(result, ev.RELEASED, "batch-job-0") == 400.0
    assert first_time(result, ev.SCHEDULED, "notebook-0") == 400.0


# ------------------------------------------------------------------------------ S4
S4 = "s4-preemption-not-helpful"


def test_s4_spreading_makes_preemption_not_helpful() -> None:
    result = run(S4, "spread")
    interactive = record(result, "interactive")
    assert interactive.preemption_not_helpful > 0
    assert interactive.time_to_group_scheduled is None
    assert events(result, ev.PREEMPTED) == []
    batch_nodes = {e.node for e in events(result, ev.SCHEDULED) if e.workload.startswith("batch")}
    assert len(batch_nodes) == 4


def test_s4_bin_packing_lets_preemption_succeed() -> None:
    result = run(S4, "bin-pack")
    interactive = record(result, "interactive")
    assert interactive.preemption_not_helpful == 0
    assert interactive.time_to_group_scheduled is not None
    victims = events(result, ev.PREEMPTED)
    assert len(victims) == 2
    assert all(v.workload.startswith("batch") for v in victims)


# ------------------------------------------------------------------------------ S5
S5 = "s5-loading-treadmill"


def test_s5_replicas_are_evicted_while_loading_more_often_than_they_get_ready() -> None:
    result = run(S5, "aggressive")
    inference = record(result, "llm-inference")
    replica_readies = [e for e in events(result, ev.READY, "llm-inference")
                       if e.time > 0 and "-" in e.pod.removeprefix("llm-inference-")]
    assert inference.preempted_while_loading > 2 * len(replica_readies)


def test_s5_serving_capacity_near_zero_under_the_treadmill() -> None:
    """Served GPU-seconds against what 4 Ready replicas would serve over the run."""
    aggressive, warm = run(S5, "aggressive"), run(S5, "warm-cache")
    desired = 4 * 2 * 2400
    served = record(aggressive, "llm-inference").useful_work
    assert served < 0.25 * desired
    assert record(warm, "llm-inference").useful_work > served


def test_s5_warm_cache_shortens_the_treadmill() -> None:
    warm = record(run(S5, "warm-cache"), "llm-inference")
    aggressive = record(run(S5, "aggressive"), "llm-inference")
    assert warm.lost_work < aggressive.lost_work


def test_s5_pdb_is_best_effort_preemption_prefers_a_node_without_violations() -> None:
    """§4.4 rule 1: with the PDB, the batch node (no violations) is chosen instead."""
    result = run(S5, "pdb")
    first = events(result, ev.VICTIMS_SELECTED)[0]
    assert first.message.startswith("batch-")
    assert record(result, "batch").pods_terminated > 0


# ------------------------------------------------------------------------------ S6
S6 = "s6-checkpoint-frequency"


def test_s6_checkpoint_frequency_changes_lost_work_by_orders_of_magnitude() -> None:
    frequent, hourly = run(S6, "intervalSeconds=30"), run(S6, "intervalSeconds=3600")
    assert hourly.summary["lost_work"] > 100 * frequent.summary["lost_work"] > 0
    assert hourly.summary["pods_terminated"] == frequent.summary["pods_terminated"] == 2


# ------------------------------------------------------------------------------ S7
S7 = "s7-three-class-setup"


def _lost_by(result: ReplicationResult, priority_class: str) -> float:
    return sum(r.lost_work for r in result.workloads if r.priority_class == priority_class)


def test_s7_three_classes_lose_far_less_training_work() -> None:
    three, everything = run(S7, "three-class"), run(S7, "everything-preempts")
    assert _lost_by(three, "training") * 5 < _lost_by(everything, "training")


def test_s7_interactive_latency_is_similar() -> None:
    three, everything = run(S7, "three-class"), run(S7, "everything-preempts")
    a = three.summary["time_to_group_useful"]
    b = everything.summary["time_to_group_useful"]
    assert a is not None
    assert b is not None
    assert abs(a - b) <= 5


def test_s7_never_training_evicts_no_batch() -> None:
    three = run(S7, "three-class")
    preemptors = {e.workload for e in events(three, ev.VICTIMS_SELECTED)}
    assert all(w.startswith("notebook") for w in preemptors)


# ------------------------------------------------------------------------------ S9
S9 = "s9-spot-reclaim"


def test_s9_checkpoint_on_notice_saves_the_work() -> None:
    plain, on_notice = run(S9, "no-checkpoint-on-notice"), run(S9, "checkpoint-on-notice")
    spot = ("spot-train-a", "spot-train-b")
    assert sum(record(plain, w).lost_work for w in spot) > 0
    assert sum(record(on_notice, w).lost_work for w in spot) == 0


@pytest.mark.parametrize("variant", ["no-checkpoint-on-notice", "checkpoint-on-notice"])
def test_s9_on_demand_jobs_are_unaffected(variant: str) -> None:
    ondemand = record(run(S9, variant), "ondemand-train")
    assert ondemand.pods_terminated == 0
    assert ondemand.lost_work == 0


def test_s9_reclaimed_nodes_leave_after_the_notice() -> None:
    result = run(S9, "no-checkpoint-on-notice")
    lost = events(result, ev.NODE_LOST)
    assert [(e.time, e.node) for e in lost] == [(1620.0, "spot-0"), (1620.0, "spot-1")]


# ------------------------------------------------------------------------------ S11
S11 = "s11-pod-replacement-policy"


def test_s11_terminating_or_failed_replaces_while_the_old_pod_holds_its_gpus() -> None:
    result = run(S11, "terminating-or-failed")
    released = first_time(result, ev.RELEASED, "job-0")
    created = [e for e in events(result, ev.CREATED, "job") if e.value == 1]
    assert [e.time for e in created] == [300.0]
    assert first_time(result, ev.SCHEDULED, created[0].pod) < released == 420.0


def test_s11_failed_waits_until_the_old_pod_is_gone() -> None:
    result = run(S11, "failed")
    released = first_time(result, ev.RELEASED, "job-0")
    created = [e for e in events(result, ev.CREATED, "job") if e.value == 1]
    assert [e.time for e in created] == [released] == [420.0]
