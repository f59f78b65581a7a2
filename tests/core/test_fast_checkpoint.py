"""checkpoint-aware's single-pod decision on numpy arrays against its Python reference
(issue #14; scheduler_core/fast_checkpoint.py).

checkpoint-aware is ours, not a Kubernetes behaviour (docs: the cost model): per node,
units reprieved most-expensive-first and most-expensive-per-GPU-first, the cheaper victim
set kept; the cheapest candidate wins instead of pickOneNodeForPreemption's rules. The
candidate nodes and the numCandidates stop rule are DryRunPreemption's (§4.2). The array
path must pick the same node and victims after the same random draw, and record the same
candidates with the same costs.
"""

from __future__ import annotations

from typing import Any

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

import scheduler_core as sc
from scheduler_core import fast_checkpoint
from scheduler_core.decisions import CHEAPEST, Recorder
from scheduler_core.engine import Engine
from scheduler_core.experiment import simulate
from scheduler_core.plugins.workload_preemption import CheckpointAwarePreemption
from scheduler_core.spec import resolve_variant
from tests.core.test_fast_group import all_mode_cluster, full_cluster, python_decisions
from tests.core.test_speed import no_pdb_cluster


def _both_ways(spec: sc.ExperimentSpec) -> tuple[Any, Any]:
    """One decision recorded from the reference steps and from the arrays."""
    engine = Engine(resolve_variant(spec, "default"), seed=1)
    engine.run()
    preemptor = engine._new_pod(engine.by_name["urgent"], 0)
    policy = engine.preemption
    assert isinstance(policy, CheckpointAwarePreemption)
    state = engine.rng.getstate()
    with policy.deciding():
        candidates = policy.find_candidates(engine, preemptor)
    considered = list(policy._considered)
    after = engine.rng.getstate()
    engine.rng.setstate(state)
    decided = policy.array_decision(engine, preemptor, listing=True)
    assert engine.rng.getstate() == after
    if not candidates:
        assert decided is None
        return None, None
    assert decided is not None
    assert decided[2] == CHEAPEST
    expected, got = Recorder(engine.cluster), Recorder(engine.cluster)
    with policy.deciding():
        costs = {id(c): policy.cost_of(engine, c.victims) for c in considered}
    expected.preemption(0.0, preemptor, considered, candidates[0], CHEAPEST, costs)
    policy._considered = decided[1] if isinstance(decided[1], list) else []
    if isinstance(decided[1], list):
        with policy.deciding():
            got_costs = {id(c): policy.cost_of(engine, c.victims) for c in decided[1]}
        got.preemption(0.0, preemptor, decided[1], decided[0], CHEAPEST, got_costs)
    else:
        got.preemption(0.0, preemptor, decided[1], decided[0], CHEAPEST)
    engine.rng.setstate(state)
    choice = policy.array_choice(engine, preemptor)
    assert choice is not None
    assert choice.node is candidates[0].node
    return expected.records()[0].as_dict(), got.records()[0].as_dict()


@settings(max_examples=120, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(data=st.data())
def test_one_checkpoint_aware_decision_is_the_reference_decision(data: st.DataObject) -> None:
    """Differential on one decision on random full clusters (lone pods, Single- and
    All-mode units spanning nodes, binary-inexact CPU): the same chosen node and victims,
    the same candidates in the same (cheapest-first) order with the same costs, also when
    short visit orders go to the Python steps."""
    few = data.draw(st.sampled_from((0, fast_checkpoint.FEW)), label="few")
    spec = sc.parse_spec(full_cluster(data, "checkpoint-aware"))
    original = fast_checkpoint.FEW
    fast_checkpoint.FEW = few
    try:
        expected, got = _both_ways(spec)
    finally:
        fast_checkpoint.FEW = original
    assert got == expected


@pytest.mark.parametrize("explain", [False, True])
def test_checkpoint_aware_runs_on_the_arrays_give_the_reference_log(
    explain: bool, monkeypatch: pytest.MonkeyPatch
) -> None:
    """Differential on whole runs (nominations claiming room, groups preempting, All-mode
    units), with and without the decision recorder: the same log, and the same records."""
    monkeypatch.setattr(fast_checkpoint, "FEW", 0)
    preempting = 0
    for seed in range(8):
        spec = sc.parse_spec(all_mode_cluster(seed, "checkpoint-aware"))
        with python_decisions():
            reference = simulate(spec, "default", seed=seed, explain=explain)
        fast = simulate(spec, "default", seed=seed, explain=explain)
        assert fast.events == reference.events, seed
        assert [d.as_dict() for d in fast.decisions] == [
            d.as_dict() for d in reference.decisions
        ], seed
        preempting += any(e.reason == "Preempted" for e in reference.events)
    assert preempting >= 5


def test_checkpoint_aware_single_pods_decide_on_the_arrays() -> None:
    """Not a silent fallback: with no PDB and no guard, checkpoint-aware's single pods go
    to the arrays, with or without a recorder."""
    spec = sc.parse_spec({**no_pdb_cluster(3), "policy": {"preemption": "checkpoint-aware"}})
    for explain in (False, True):
        engine = Engine(resolve_variant(spec, "default"), seed=3, explain=explain)
        assert engine.preemption.arrays_decide(engine)


@pytest.mark.parametrize("seed", range(12))
def test_cheapest_candidate_among_many_is_the_reference_one(
    seed: int, monkeypatch: pytest.MonkeyPatch
) -> None:
    """Up to 400 full nodes at four low priorities with ties everywhere: many candidates
    of different costs, recorded cheapest first with the reference's costs."""
    from tests.core.test_fast_explain import _random_full_cluster

    monkeypatch.setattr(fast_checkpoint, "FEW", 0)
    data = {**_random_full_cluster(seed), "policy": {"preemption": "checkpoint-aware"}}
    expected, got = _both_ways(sc.parse_spec(data))
    assert got == expected
    costs = [c["cost"] for c in expected["candidates"]]
    assert len(set(costs)) > 1
    assert costs == sorted(costs)
