"""Each canonical scenario (scenarios.md) as an acceptance test of its preset."""

from __future__ import annotations

import itertools
from functools import cache

import pytest

import scheduler_core as sc
from scheduler_core import events as ev
from scheduler_core.experiment import ReplicationResult


@cache
def run(preset: str, variant: str) -> ReplicationResult:
    return sc.simulate(sc.get_preset(preset).spec(), variant)


def events(result: ReplicationResult, reason: str, workload: str | None = None) -> list[ev.Event]:
    return [
        e
        for e in result.events
        if e.reason == reason and (workload is None or e.workload == workload)
    ]


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


@pytest.mark.parametrize(
    ("variant", "grace"), [("grace-300s", 300), ("grace-30s", 30)], ids=["300s", "30s"]
)
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
    replica_readies = [
        e
        for e in events(result, ev.READY, "llm-inference")
        if e.time > 0 and "-" in e.pod.removeprefix("llm-inference-")
    ]
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


def test_s5_min_runtime_stops_the_loading_treadmill() -> None:
    """KAI's min runtime (6 min, longer than the 5-minute load): no replica is preempted
    while loading, and no workload thrashes; the notebooks wait for it instead."""
    guarded = run(S5, "min-runtime")
    assert record(guarded, "llm-inference").preempted_while_loading == 0
    assert record(run(S5, "aggressive"), "llm-inference").preempted_while_loading > 10
    assert guarded.summary["thrashing_workloads"] == 0
    failed = [e.message for e in events(guarded, ev.FAILED_SCHEDULING)]
    assert any("protected by min runtime" in m for m in failed)


def test_s5_a_preemption_rate_limit_slows_the_treadmill() -> None:
    limited = run(S5, "rate-limit")
    aggressive = run(S5, "aggressive")
    assert limited.summary["pods_terminated"] < aggressive.summary["pods_terminated"]
    decided = sorted(e.time for e in events(limited, ev.VICTIMS_SELECTED))
    # one token a minute, burst 1: never two preemptions within 60 s (a decision with
    # more victims spends a token per victim, and the next one waits longer)
    assert all(b - a >= 60 - 1e-6 for a, b in itertools.pairwise(decided))


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


# ------------------------------------------------------------------------------ S1
S1 = "s1-training-vs-shards"


def _victim_workloads(result: ReplicationResult) -> set[str]:
    return {e.workload for e in events(result, ev.PREEMPTED)}


def test_s1_pod_preemption_keeps_the_older_shards_and_evicts_workers() -> None:
    """§4.3: on each node the reprieve keeps the older pods (the shards) first."""
    result = run(S1, "pod")
    assert _victim_workloads(result) == {"train"}
    assert record(result, "train").lost_work > 10_000
    assert record(result, "eval").pods_terminated == 0


def test_s1_single_mode_ties_on_size_and_keeps_the_older_shards() -> None:
    """§6.2 rules 4-5: one-pod units tie on size, so earlier start wins: workers go."""
    assert _victim_workloads(run(S1, "workload-aware-single")) == {"train"}


def test_s1_all_mode_keeps_the_four_pod_training_unit() -> None:
    """§6.2 rule 4: the 4-pod All unit outranks one-pod units, so the shards go."""
    result = run(S1, "workload-aware-all")
    assert _victim_workloads(result) == {"eval"}
    assert record(result, "eval").lost_work < 200
    assert record(result, "train").lost_work == 0


def test_s1_checkpoint_aware_evicts_the_cheap_shards() -> None:
    assert _victim_workloads(run(S1, "checkpoint-aware")) == {"eval"}


def test_s1_urgent_group_becomes_useful_in_every_variant() -> None:
    for variant in ("pod", "workload-aware-single", "workload-aware-all", "checkpoint-aware"):
        assert record(run(S1, variant), "urgent").time_to_group_useful is not None, variant


def test_s1_fewest_terminated_is_not_least_lost_work_in_the_json_output() -> None:
    """scenarios.md S1, read from `run --json` as a user would."""
    import json
    import subprocess
    import sys

    out = subprocess.run(
        [sys.executable, "-m", "scheduler_core", "run", S1, "--json", "--quiet"],
        capture_output=True,
        text=True,
        check=True,
        timeout=120,
    )
    variants = json.loads(out.stdout)["variants"]
    fewest = min(variants, key=lambda v: v["summary"]["pods_terminated"])
    least = min(variants, key=lambda v: v["summary"]["lost_work"])
    assert fewest["name"] != least["name"]
    assert fewest["summary"]["lost_work"] > 10 * least["summary"]["lost_work"]


# ------------------------------------------------------------------------------ S8
S8 = "s8-gang-at-scale"


def test_s8_no_member_is_bound_when_the_group_does_not_fit() -> None:
    result = run(S8, "none")
    assert events(result, ev.SCHEDULED, "big-training") == []
    assert record(result, "big-training").time_to_group_scheduled is None


def test_s8_workload_aware_places_the_group_as_a_unit() -> None:
    result = run(S8, "workload-aware")
    bound = {e.time for e in events(result, ev.SCHEDULED, "big-training")}
    assert len(events(result, ev.SCHEDULED, "big-training")) == 1000
    assert len(bound) == 1  # all members in the same cycle
    assert len(events(result, ev.VICTIMS_SELECTED, "big-training")) == 1
    assert record(result, "batch").pods_terminated == 100


def test_s8_per_pod_preemption_evicts_more_than_group_preemption() -> None:
    per_pod, group = run(S8, "pod"), run(S8, "workload-aware")
    assert per_pod.summary["pods_terminated"] > group.summary["pods_terminated"]


# ------------------------------------------------------------------------------ S10
S10 = "s10-queue-priority"


def test_s10_priority_class_does_not_help_a_workload_waiting_in_its_queue() -> None:
    result = run(S10, "priority-class-only")
    urgent = record(result, "urgent-op")
    assert [e.time for e in events(result, ev.ADMITTED, "urgent-op")] == [3020.0]
    assert urgent.time_to_group_useful == 3020 + 30 - 60
    created = events(result, ev.CREATED, "urgent-op")
    assert [e.time for e in created] == [3020.0]  # no pod while it waited


def test_s10_raising_queue_priority_admits_it_when_a_slot_frees() -> None:
    result = run(S10, "queue-priority")
    assert [e.time for e in events(result, ev.ADMITTED, "urgent-op")] == [1820.0]


def test_s10_kueue_preemption_evicts_the_newest_lower_priority_operation() -> None:
    """§7.2: the most recently admitted lower-priority workload is preempted first."""
    result = run(S10, "kueue-priority-and-preemption")
    evicted = events(result, ev.SUSPENDED)
    assert [(e.time, e.workload) for e in evicted] == [(60.0, "op-b")]
    assert [e.time for e in events(result, ev.ADMITTED, "urgent-op")] == [60.0]


# ------------------------------------------------------------------------------ S12
S12 = "s12-topology-placement"


def test_s12_best_fit_places_the_group_in_one_rack() -> None:
    result = run(S12, "rack-best-fit")
    nodes = {e.node for e in events(result, ev.SCHEDULED, "train")}
    assert len({n.split("-")[0] for n in nodes}) == 1
    assert record(result, "urgent").time_to_group_scheduled is not None


def test_s12_spread_group_makes_the_later_8_gpu_preemptor_not_helpful() -> None:
    result = run(S12, "spread")
    assert len({e.node for e in events(result, ev.SCHEDULED, "train")}) == 8
    urgent = record(result, "urgent")
    assert urgent.preemption_not_helpful > 0
    assert urgent.time_to_group_scheduled is None


def test_a_recorded_pod_stays_on_its_cordoned_node() -> None:
    """Cordoning (and NoSchedule taints) stop new pods; they do not evict running ones."""
    spec = sc.parse_spec(
        {
            "cluster": {
                "nodes": [
                    {
                        "name": "a",
                        "gpus": 8,
                        "taints": [{"key": "node.kubernetes.io/unschedulable"}],
                    }
                ]
            },
            "workloads": [{"name": "old", "gpus": 8}],
            "initialState": [{"workload": "old", "node": "a", "startedAt": -60}],
        }
    )
    result = sc.simulate(spec, "default")
    assert [(e.time, e.node) for e in events(result, ev.SCHEDULED)] == [(-60.0, "a")]


def test_failed_scheduling_names_no_node_even_when_the_pod_binds_later() -> None:
    result = run(S2, "never")
    failures = events(result, ev.FAILED_SCHEDULING, "evaluation")
    assert failures
    assert all(e.node == "" for e in failures)


# =========================================================================== S15
S15 = "s15-fair-sharing"


def admitted_at(result: ReplicationResult, workload: str) -> float:
    return next(e.time for e in events(result, ev.ADMITTED, workload))


def evictions(result: ReplicationResult) -> list[tuple[str, str, str]]:
    """(victim, preemptor, reason) of every queue eviction."""
    return [
        (e.workload, e.related, e.message.rsplit("(", 1)[-1].rstrip(")"))
        for e in events(result, ev.SUSPENDED)
    ]


def test_s15_classic_reclaims_the_nominal_quota_and_no_more() -> None:
    """Classic (§7.3): a-1..a-4 reclaim team A's 8 GPUs from B at once; a-5 and a-6 would
    borrow, so they wait until B's first jobs end (team A's own finish at ~2100)."""
    result = run(S15, "classic-cohort-borrowing")
    assert evictions(result) == [
        (f"b-{12 - i:02d}", f"a-{i + 1}", "InCohortReclamation") for i in range(4)
    ]
    assert [admitted_at(result, f"a-{i}") for i in range(1, 5)] == [300.0, 301.0, 302.0, 303.0]
    assert admitted_at(result, "a-5") > 2000
    assert admitted_at(result, "a-6") > 2000


def test_s15_fair_sharing_splits_the_borrowed_quota_between_the_teams() -> None:
    """Fair sharing (§7.4): within its nominal quota A reclaims as before; beyond it, A
    (share 2/24, then 4/24) preempts B (8/24 borrowed) under LessThanOrEqualToFinalShare
    until both borrow 4: all six of A's jobs start at once, B loses two more jobs."""
    result = run(S15, "fair-sharing")
    assert evictions(result) == [
        *((f"b-{12 - i:02d}", f"a-{i + 1}", "InCohortReclamation") for i in range(4)),
        ("b-08", "a-5", "InCohortFairSharing"),
        ("b-07", "a-6", "InCohortFairSharing"),
    ]
    assert [admitted_at(result, f"a-{i}") for i in range(1, 7)] == [
        300.0,
        301.0,
        302.0,
        303.0,
        304.0,
        305.0,
    ]
    classic = run(S15, "classic-cohort-borrowing")
    assert result.summary["pods_terminated"] == classic.summary["pods_terminated"] + 2
