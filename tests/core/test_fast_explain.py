"""The array decision paths with a decision recorder (``explain``, the default; issue #14).

Runs record why each preemption went as it did: every candidate node with its victims,
the §4.4 rule that chose, the reprieved pods and the message. The array paths
(scheduler_core/fast_preemption.py, fast_group.py) list the candidates themselves, so a
recording run decides on the arrays too; these tests require the records, the victims
and the event log to be the Python reference's, on random clusters.
"""

from __future__ import annotations

import pickle
import random
from collections.abc import Iterator
from contextlib import contextmanager
from typing import Any

import numpy as np
import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

import scheduler_core as sc
from scheduler_core import fast_group, fast_preemption
from scheduler_core.cli import describe_decision
from scheduler_core.decisions import (
    ONLY_CANDIDATE,
    CandidateNodes,
    CompactCandidates,
    Decision,
    Recorder,
)
from scheduler_core.engine import Engine
from scheduler_core.experiment import simulate
from scheduler_core.plugins.default_preemption import DefaultPreemption, pick_one_node_by_rule
from scheduler_core.spec import resolve_variant
from tests.core.test_fast_group import (
    all_mode_cluster,
    full_cluster,
    looking_for_alike_rows,
    templated_cluster,
)
from tests.core.test_speed import no_pdb_cluster


@contextmanager
def python_decisions() -> Iterator[None]:
    """The reference: every decision made by the Python steps."""
    DefaultPreemption.use_arrays = False
    try:
        yield
    finally:
        DefaultPreemption.use_arrays = True


def _records(decisions: tuple[Decision, ...] | list[Decision]) -> list[dict[str, Any]]:
    return [d.as_dict() for d in decisions]


# ----------------------------------------------------------------------------- whole runs
@pytest.mark.parametrize("policy", ["pod", "workload-aware"])
def test_recorded_runs_on_the_arrays_give_the_reference_records(
    policy: str, monkeypatch: pytest.MonkeyPatch
) -> None:
    """Differential on whole runs with records on (as users run them): the array paths
    (also where few nodes would hand over to the Python steps) give the reference's event
    log and the same decisions, candidate for candidate, victim for victim, with the same
    rule and message."""
    monkeypatch.setattr(fast_preemption, "FEW", 0)
    monkeypatch.setattr(fast_preemption, "ALIKE_MIN", 0)
    monkeypatch.setattr(fast_group, "FEW", 0)
    preemptions = several = 0
    for seed in range(10):
        data = no_pdb_cluster(seed) if policy == "pod" else all_mode_cluster(seed, policy)
        spec = sc.parse_spec({**data, "policy": {"preemption": policy}})
        with python_decisions():
            reference = simulate(spec, "default", seed=seed)
        fast = simulate(spec, "default", seed=seed)
        assert fast.events == reference.events, seed
        assert _records(fast.decisions) == _records(reference.decisions), seed
        assert fast.diagnosis == reference.diagnosis
        for d in reference.decisions:
            if d.kind == "Preemption":
                preemptions += 1
                several += len(d.candidates) > 1
    assert preemptions >= 10
    assert several >= 5, "the rules beyond 'only candidate' must be exercised"


def test_a_recording_run_decides_on_the_arrays() -> None:
    """Not a silent fallback: with a recorder (the default) the `pod` and workload-aware
    single-pod decisions are made on the arrays, and checkpoint-aware's too."""
    for policy in ("pod", "workload-aware"):
        spec = sc.parse_spec({**no_pdb_cluster(3), "policy": {"preemption": policy}})
        engine = Engine(resolve_variant(spec, "default"), seed=3)
        assert engine.recorder is not None
        assert engine.preemption.arrays_decide(engine), policy
    spec = sc.parse_spec({**no_pdb_cluster(3), "policy": {"preemption": "checkpoint-aware"}})
    engine = Engine(resolve_variant(spec, "default"), seed=3)
    assert engine.preemption.arrays_decide(engine)


# ----------------------------------------------------------------------------- one decision
def _random_full_cluster(seed: int) -> dict[str, Any]:
    """Full nodes of pods at four low priorities, random sizes and start times (ties in
    every §4.4 rule), enough nodes that the numCandidates stop rule and the offset
    matter, and one urgent pod."""
    rng = random.Random(seed)
    nodes = rng.choice((5, 60, 400))
    per_node = rng.choice((2, 4, 8))
    members = nodes * per_node
    return {
        "horizonSeconds": 10,
        "cluster": {"nodePools": [{"name": "gpu", "count": nodes, "gpus": 8, "cpu": 64}]},
        "priorityClasses": [
            {"name": f"p{v}", "value": v, "globalDefault": v == 1} for v in (1, 2, 3, 50, 1000)
        ],
        "workloads": [
            *(
                {
                    "name": f"bg{v}",
                    "members": members,
                    "gpus": 8 // per_node,
                    "cpu": rng.choice((1, 8)),
                    "durationSeconds": 36000,
                    "priorityClassName": f"p{v}",
                }
                for v in (1, 2, 3, 50)
            ),
            {
                "name": "urgent",
                "members": 1,
                "gpus": rng.choice((1, 4, 8)),
                "arrival": 20,
                "priorityClassName": "p1000",
            },
        ],
        "initialState": [
            {
                "workload": f"bg{rng.choice((1, 2, 3, 50))}",
                "node": f"gpu-{i // per_node}",
                "startedAt": -rng.randint(1, 3),
            }
            for i in range(members)
        ],
    }


def _one_decision_both_ways(spec: sc.ExperimentSpec) -> tuple[Any, Any, int]:
    """The preemptor's decision recorded from the reference steps and from the array
    path (after the same random draw): both records, and how many candidates."""
    engine = Engine(resolve_variant(spec, "default"), seed=1)
    engine.run()
    preemptor = engine._new_pod(engine.by_name["urgent"], 0)
    policy = engine.preemption
    state = engine.rng.getstate()
    with policy.deciding() if hasattr(policy, "deciding") else _nothing():
        candidates = policy.find_candidates(engine, preemptor)
    after = engine.rng.getstate()
    engine.rng.setstate(state)
    decided = policy.array_decision(engine, preemptor, listing=True)
    assert engine.rng.getstate() == after
    if not candidates:
        assert decided is None
        return None, None, 0
    assert decided is not None
    best, rule = (
        (candidates[0], ONLY_CANDIDATE)
        if len(candidates) == 1
        else pick_one_node_by_rule(candidates)
    )
    assert decided[1] is not None
    expected, got = Recorder(engine.cluster), Recorder(engine.cluster)
    expected.preemption(0.0, preemptor, candidates, best, rule)
    got.preemption(0.0, preemptor, decided[1], decided[0], decided[2])
    return expected.records()[0].as_dict(), got.records()[0].as_dict(), len(candidates)


@contextmanager
def _nothing() -> Iterator[None]:
    yield


@pytest.mark.parametrize("few", [0, fast_preemption.FEW])
@pytest.mark.parametrize("seed", range(16))
def test_one_pod_decision_records_the_reference_candidates(
    seed: int, few: int, monkeypatch: pytest.MonkeyPatch
) -> None:
    """Differential on one `pod` decision at up to 400 full nodes: the record built from
    the array path (candidates in visit order with their victims, rule, message,
    reprieved pods) is the one built from ``find_candidates`` + the §4.4 rules."""
    monkeypatch.setattr(fast_preemption, "FEW", few)
    expected, got, _ = _one_decision_both_ways(sc.parse_spec(_random_full_cluster(seed)))
    assert got == expected


@settings(max_examples=60, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(data=st.data())
def test_one_workload_aware_decision_records_the_reference_candidates(
    data: st.DataObject,
) -> None:
    """Differential on one workload-aware decision: lone pods and Single- and All-mode
    units spanning nodes; the array path's record (victims re-sorted by MoreImportantPod
    as the reference lists them, rows holding All-mode units listed by the reference)
    equals the reference's."""
    few = data.draw(st.sampled_from((0, fast_group.FEW)), label="few")
    spec = sc.parse_spec(full_cluster(data, "workload-aware"))
    original = fast_group.FEW
    fast_group.FEW = few
    try:
        expected, got, _ = _one_decision_both_ways(spec)
    finally:
        fast_group.FEW = original
    assert got == expected


@settings(max_examples=60, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(data=st.data())
def test_alike_rows_record_the_reference_candidates(data: st.DataObject) -> None:
    """Differential on one workload-aware decision over nodes that repeat a few templates
    (one reprieve per group signature, broadcast): every candidate's victims, listed in
    MoreImportantPod order with ties in start time broken per node, as the reference
    lists them."""
    with looking_for_alike_rows():
        expected, got, _ = _one_decision_both_ways(
            sc.parse_spec(templated_cluster(data, "workload-aware"))
        )
    assert got == expected


def test_alike_rows_list_tied_victims_per_node() -> None:
    """One signature on every node (a lone pod in the first column, a Single-mode group's
    pod in the second, both victims), but on odd nodes the two started at the same time:
    the reference lists victims by MoreImportantPod (earlier start first), stably over
    moreImportantVictim order (a group's pod first), so the lone pod comes first on even
    nodes and the group's pod on odd ones; the array path's record lists them so."""
    n = 200
    spec = sc.parse_spec(
        {
            "horizonSeconds": 10,
            "cluster": {"nodePools": [{"name": "gpu", "count": n, "gpus": 8}]},
            "priorityClasses": [
                {"name": "low", "value": 1, "globalDefault": True},
                {"name": "high", "value": 1000},
            ],
            "workloads": [
                {"name": "lone", "members": n, "gpus": 4, "durationSeconds": 36000},
                {
                    "name": "gang",
                    "members": n,
                    "gpus": 4,
                    "durationSeconds": 36000,
                    "podGroup": {"minCount": n, "disruptionMode": "Single"},
                },
                {"name": "urgent", "gpus": 8, "arrival": 20, "priorityClassName": "high"},
            ],
            "initialState": [
                *(
                    {"workload": "lone", "node": f"gpu-{i}", "member": i, "startedAt": -2 + i % 2}
                    for i in range(n)
                ),
                *(
                    {"workload": "gang", "node": f"gpu-{i}", "member": i, "startedAt": -1}
                    for i in range(n)
                ),
            ],
            "policy": {"preemption": "workload-aware"},
        }
    )
    with looking_for_alike_rows():
        expected, got, count = _one_decision_both_ways(spec)
    assert count == 100
    assert got == expected
    orders = {tuple(v.split("-")[0] for v in c["victims"]) for c in got["candidates"]}
    assert orders == {("lone", "gang"), ("gang", "lone")}


@pytest.mark.parametrize("policy", ["pod", "workload-aware"])
def test_runs_on_alike_nodes_give_the_reference_log_and_records(
    policy: str, monkeypatch: pytest.MonkeyPatch
) -> None:
    """Differential on whole runs of the benchmarks' synthetic mix (nodes of one shape
    that fill with the same few pod shapes, arrivals nominated and preempting, so rows
    share signatures while nominations claim room; every visit order on the arrays,
    alike rows looked for in every chunk):
    the array paths give the reference's log and records."""
    from bench.workloads import cluster_spec

    monkeypatch.setattr(fast_preemption, "FEW", 0)
    monkeypatch.setattr(fast_preemption, "ALIKE_MIN", 0)
    monkeypatch.setattr(fast_group, "FEW", 0)
    monkeypatch.setattr(fast_group, "ALIKE_MIN", 0)
    spec = sc.parse_spec(cluster_spec(nodes=40, pods=1500, horizon=3600, preemption=policy))
    with python_decisions():
        reference = simulate(spec, "default", seed=3)
    fast = simulate(spec, "default", seed=3)
    assert sum(e.reason == "Preempted" for e in reference.events) >= 200
    assert fast.events == reference.events
    assert _records(fast.decisions) == _records(reference.decisions)


def test_array_candidates_are_named_only_when_records_are_built() -> None:
    """The compact form is what the recorder keeps while the engine runs (the names of
    up to numCandidates nodes and their victims are built once, at the end)."""
    spec = sc.parse_spec(_random_full_cluster(5))
    engine = Engine(resolve_variant(spec, "default"), seed=1)
    engine.run()
    preemptor = engine._new_pod(engine.by_name["urgent"], 0)
    decided = engine.preemption.array_decision(engine, preemptor, listing=True)
    assert decided is not None
    best, found, rule = decided
    assert isinstance(found, CompactCandidates)
    assert len(found) > 1
    recorder = Recorder(engine.cluster)
    recorder.preemption(0.0, preemptor, found, best, rule)
    assert recorder._raw[0]["candidates"] is found
    record = recorder.records()[0]
    assert len(record.candidates) == len(found)
    assert record.victims == tuple(v.name for v in best.victims)
    assert next(c for c in record.candidates if c.node == best.node.name).victims == (
        record.victims
    )


def test_array_candidates_keep_no_more_than_their_own_arrays() -> None:
    """A record outlives its decision, so its candidates must not be views of the
    decision's larger arrays: a view of the visit order kept all its rows alive (98 MB
    over a 5,000-preemptor storm, whose 500 candidates are sliced from 5,000 rows)."""
    sliced = 0
    for seed in range(12):
        spec = sc.parse_spec(_random_full_cluster(seed))
        engine = Engine(resolve_variant(spec, "default"), seed=1)
        engine.run()
        preemptor = engine._new_pod(engine.by_name["urgent"], 0)
        decided = engine.preemption.array_decision(engine, preemptor, listing=True)
        if decided is None or not isinstance(decided[1], CompactCandidates):
            continue  # no candidate, or a short visit order decided by the reference steps
        found = decided[1]
        sliced += len(found) < len(engine.cluster.nodes)
        for array in (found.rows, found.victims, found.counts):
            base = array.base
            assert not isinstance(base, np.ndarray) or base.size == array.size
    assert sliced >= 3  # decisions whose candidates are a part of the visit order


@pytest.mark.parametrize("seed", [3, 5, 11])
def test_array_candidates_read_as_the_reference_tuple(
    seed: int, monkeypatch: pytest.MonkeyPatch
) -> None:
    """A record from the arrays names its candidates only when they are read
    (:class:`CandidateNodes`), and then is the Python path's record in every way it is
    looked at: equal Decision, equal candidates tuple, item for item, hash, repr,
    ``as_dict`` (before and after they were named), a pickled copy, and the CLI text."""
    monkeypatch.setattr(fast_preemption, "FEW", 0)
    monkeypatch.setattr(fast_preemption, "ALIKE_MIN", 0)
    spec = sc.parse_spec(_random_full_cluster(seed))
    engine = Engine(resolve_variant(spec, "default"), seed=1)
    engine.run()
    preemptor = engine._new_pod(engine.by_name["urgent"], 0)
    policy = engine.preemption
    state = engine.rng.getstate()
    candidates = policy.find_candidates(engine, preemptor)
    engine.rng.setstate(state)
    decided = policy.array_decision(engine, preemptor, listing=True)
    assert decided is not None
    assert len(candidates) > 1
    best, rule = pick_one_node_by_rule(candidates)
    expected, got = Recorder(engine.cluster), Recorder(engine.cluster)
    expected.preemption(0.0, preemptor, candidates, best, rule)
    got.preemption(0.0, preemptor, decided[1], decided[0], decided[2])
    reference, record = expected.records()[0], got.records()[0]
    lazy = record.candidates
    assert isinstance(lazy, CandidateNodes)
    assert isinstance(reference.candidates, tuple)
    assert lazy._built is None
    assert len(lazy) == len(reference.candidates)
    assert record.as_dict() == reference.as_dict()  # named without building the records
    assert lazy._built is None
    assert record == reference
    assert reference == record
    assert lazy == reference.candidates
    assert reference.candidates == lazy
    assert lazy._built is not None
    assert list(lazy) == list(reference.candidates)
    assert lazy[1:3] == reference.candidates[1:3]
    assert lazy[-1] == reference.candidates[-1]
    assert hash(record) == hash(reference)
    assert repr(record) == repr(reference)
    assert record.as_dict() == reference.as_dict()
    assert pickle.loads(pickle.dumps(record)) == reference
    assert describe_decision(record) == describe_decision(reference)
