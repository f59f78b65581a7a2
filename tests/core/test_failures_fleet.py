"""The fleet-reliability preset (issue #17 §3): 2,048 nodes x 8 GPUs, one synchronous
job on 2,000 of them for 54 days, random node failures, three checkpoint intervals."""

from __future__ import annotations

from functools import cache

import pytest

import scheduler_core as sc
from scheduler_core import events as ev

S13 = "s13-fleet-reliability"
HOURS = 3600.0


@cache
def run(variant: str) -> sc.ReplicationResult:
    return sc.simulate(sc.get_preset(S13).spec(), variant)


def test_the_preset_is_a_fleet_for_54_days() -> None:
    spec = sc.get_preset(S13).spec()
    assert sum(p.count * p.gpus for p in spec.cluster.node_pools) == 2048 * 8
    [job] = spec.workloads
    assert (job.members, job.gpus, job.recovery.model.value) == (2000, 8, "synchronous")
    assert spec.horizon_seconds == 54 * 86400
    assert len(sc.variant_names(spec)) == 3


def test_node_failures_give_about_460_interruptions_in_every_variant() -> None:
    counts = []
    for name in sc.variant_names(sc.get_preset(S13).spec()):
        [record] = run(name).workloads
        counts.append(record.disruptions)
    assert len(set(counts)) == 1  # the same failures in every variant (common random numbers)
    assert 420 <= counts[0] <= 500


def test_the_middle_interval_has_the_best_ettr_and_lost_work_grows_with_the_interval() -> None:
    """Checkpointing every 5 minutes spends a sixth of the time writing; every 3 hours,
    longer than the ~2.8 h between interruptions, loses most of the work; 30 minutes is
    near Young's optimum sqrt(2 x 60 s x MTBF)."""
    ettr = {
        n: run(n).summary["ettr"]
        for n in ("checkpoint-every-5m", "checkpoint-every-30m", "checkpoint-every-3h")
    }
    lost = {n: run(n).summary["lost_work"] for n in ettr}
    assert ettr["checkpoint-every-30m"] > ettr["checkpoint-every-5m"] > ettr["checkpoint-every-3h"]
    assert lost["checkpoint-every-5m"] < lost["checkpoint-every-30m"] < lost["checkpoint-every-3h"]
    assert ettr["checkpoint-every-30m"] == pytest.approx(0.80, abs=0.05)
    # every interruption loses at most one interval of the whole job's work (16,000 GPUs)
    [record] = run("checkpoint-every-30m").workloads
    assert lost["checkpoint-every-30m"] <= record.disruptions * (1800 + 60) * 16_000


def test_a_replacement_waits_for_the_taint_manager_then_runs_on_a_spare_node() -> None:
    result = run("checkpoint-every-30m")
    lost = next(e for e in result.events if e.reason == ev.NODE_LOST and e.time > 0)
    killed = next(e for e in result.events if e.reason == ev.KILLING and e.time >= lost.time)
    assert killed.time == pytest.approx(lost.time + 40 + 300)
    assert killed.node == lost.node
