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

import random
from typing import Any

import numpy as np
import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

import scheduler_core as sc
from bench.bench_preemption import full_spec
from scheduler_core import fast_checkpoint, fast_costs
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


# ---------------------------------------------------------------- the cost model on arrays
# (scheduler_core/fast_costs.py): every pod's weighted eviction cost, bit for bit the
# Python cost model's, for every application kind and segment state.

APP_KINDS: tuple[dict[str, Any], ...] = (
    {"recovery": {"model": "independent"}},
    {"recovery": {"model": "interactive"}},
    {"recovery": {"model": "serving"}},  # durationSeconds dropped below: a ServingApp
    {"recovery": {"model": "serving"}, "durationSeconds": 20000},  # a PerMemberApp
    {"recovery": {"model": "synchronous"}, "members": 3},
    {"recovery": {"model": "elastic", "minMembers": 2}, "members": 3},
)


def app_kinds_cluster(seed: int) -> dict[str, Any]:
    """A full cluster running every application kind (shards, sessions, replicas with and
    without a duration, synchronous and elastic groups), with and without periodic
    checkpoints, SIGTERM checkpoints that fit the grace period or not, startups long
    enough that preemptors meet starting pods, and higher-priority single pods arriving
    all along: checkpoint-aware preempts pods in every segment state."""
    rng = random.Random(seed)
    workloads: list[dict[str, Any]] = []
    for i in range(rng.randint(6, 10)):
        kind = dict(rng.choice(APP_KINDS))
        w: dict[str, Any] = {
            "name": f"bg{i}",
            "members": 1,
            "gpus": rng.choice((1, 2, 4)),
            "cpu": 1,
            "durationSeconds": rng.choice((900, 3000, 20000)),
            "arrival": rng.choice((0, 0, 30, 200)),
            "startupSeconds": rng.choice((0, 45, 400)),
            "terminationGracePeriodSeconds": rng.choice((5, 30, 120)),
            "stopSeconds": rng.choice((0, 3)),
            "priorityClassName": rng.choice(("p1", "p2")),
            **kind,
        }
        if kind["recovery"]["model"] == "serving" and "durationSeconds" not in kind:
            w["durationSeconds"] = None
        w["members"] = kind.get("members", rng.randint(2, 6))
        interval = rng.choice((None, 60.0, 137.5, 600.0))
        if interval is not None:
            w["checkpoint"] = {
                "intervalSeconds": interval,
                "writeSeconds": rng.choice((0.0, 7.25, 40.0)),
                "onSigterm": rng.random() < 0.3,
            }
        workloads.append(w)
    for j in range(rng.randint(4, 9)):
        workloads.append(
            {
                "name": f"hi{j}",
                "members": 1,
                "gpus": rng.choice((1, 2, 4, 8)),
                "cpu": 1,
                "durationSeconds": rng.choice((120, 700)),
                "arrival": rng.uniform(60, 2500),
                "priorityClassName": "p9",
            }
        )
    weights = rng.choice(
        (
            {},
            {"lostWork": 2.5, "session": 100.0, "startup": 0.3},
            {"strandedCapacity": 0.1, "recovery": 7.0, "lostWork": 0.0},
        )
    )
    return {
        "horizonSeconds": 3000,
        "cluster": {"nodePools": [{"name": "gpu", "count": rng.randint(3, 7), "gpus": 8}]},
        "priorityClasses": [
            {"name": "p1", "value": 1, "globalDefault": True},
            {"name": "p2", "value": 2},
            {"name": "p9", "value": 9},
        ],
        "workloads": workloads,
        "policy": {
            "preemption": "checkpoint-aware",
            "checkpointAwareWeights": weights,
            "checkpointVictims": rng.random() < 0.3,
        },
    }


SEEN = (
    "per-member",
    "serving",
    "group",
    "starting",
    "stalled group",
    "never checkpointed",
    "checkpointed",
    "writing a checkpoint",
    "SIGTERM checkpoint fits",
)


def _checked_costs(seen: dict[str, int]) -> Any:
    """``CostTable.costs``, each result compared with the Python cost model's (the
    reference ``CheckpointAwarePreemption._costs`` it is handed) bit for bit, counting
    the kinds and segment states met."""
    original = fast_costs.CostTable.costs

    def checked(self: fast_costs.CostTable, pods: Any, seqs: Any, *args: Any) -> Any:
        full, rest, workloads = original(self, pods, seqs, *args)
        python = args[-1]
        now = args[1]
        for i, pod in enumerate(pods()):
            expected = python(pod)
            assert (full[i].hex(), rest[i].hex()) == (expected[0].hex(), expected[1].hex()), (
                pod,
                now,
            )
            assert workloads[i] == pod.workload.idx
            assert self.starting[pod.seq] == (pod.state is sc.model.PodState.STARTING), pod
            _count(self, pod, now, seen)
        return full, rest, workloads

    return checked


def _count(table: fast_costs.CostTable, pod: Any, now: float, seen: dict[str, int]) -> None:
    kind = int(table.kind[pod.seq])
    names = {fast_costs.PER_MEMBER: "per-member", fast_costs.SERVING: "serving"}
    seen[names.get(kind, "group")] += 1
    if pod.state is sc.model.PodState.STARTING:
        seen["starting"] += 1
        return
    if table.fits[pod.seq]:
        seen["SIGTERM checkpoint fits"] += 1
    if kind == fast_costs.SERVING:
        return
    app = pod.workload.app
    unit = app.unit if kind == fast_costs.GROUP else app.units[pod.member]
    if kind == fast_costs.GROUP and not unit.running:
        seen["stalled group"] += 1
    if unit.interval is None or not unit.running:
        return
    cycle = unit.interval + unit.write
    x = now - unit.seg_start
    seen["checkpointed" if x >= cycle else "never checkpointed"] += 1
    if unit.write and x % cycle > unit.interval:
        seen["writing a checkpoint"] += 1


def test_vectorised_cost_is_the_cost_model_for_every_application_kind(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    """Every pod a checkpoint-aware array decision weighs gets, from the arrays, the very
    floats the Python cost model gives it (``eviction_cost`` and the weighted sums), for
    every application kind, starting pods, stalled groups, units never checkpointed,
    checkpointed, in the middle of writing one, and SIGTERM checkpoints that fit."""
    monkeypatch.setattr(fast_checkpoint, "FEW", 0)
    seen = dict.fromkeys(SEEN, 0)
    monkeypatch.setattr(fast_costs.CostTable, "costs", _checked_costs(seen))
    for seed in range(10):
        spec = sc.parse_spec(app_kinds_cluster(seed))
        simulate(spec, "default", seed=seed, explain=False)
    assert all(seen.values()), seen


@pytest.mark.parametrize("explain", [False, True])
def test_runs_of_every_application_kind_give_the_reference_log(explain: bool) -> None:
    """Differential on whole runs of every application kind: the array decisions (costs
    on arrays) give the log and the records of the Python steps."""
    preempting = 0
    for seed in range(10):
        spec = sc.parse_spec(app_kinds_cluster(seed))
        with python_decisions():
            reference = simulate(spec, "default", seed=seed, explain=explain)
        fast = simulate(spec, "default", seed=seed, explain=explain)
        assert fast.events == reference.events, seed
        assert [d.as_dict() for d in fast.decisions] == [
            d.as_dict() for d in reference.decisions
        ], seed
        preempting += sum(e.reason == "Preempted" for e in reference.events)
    assert preempting >= 20


@settings(max_examples=300, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(data=st.data())
def test_vectorised_cost_at_checkpoint_edges(data: st.DataObject) -> None:
    """Pods put in any segment state (running or not, any progress and durable
    checkpoint, starting or Ready or terminating), looked at exactly on a checkpoint's
    completion, at the start of a write, in the middle of one, a hair before or after,
    and before the first: the arrays give the Python cost model's floats."""
    spec = sc.parse_spec(app_kinds_cluster(data.draw(st.integers(0, 30), label="spec")))
    engine = Engine(resolve_variant(spec, "default"), seed=1, explain=False)
    engine.run()  # every workload has arrived: its member slots hold pods
    policy = engine.preemption
    assert isinstance(policy, CheckpointAwarePreemption)
    policy.memoise = False
    table = engine.cost_table
    pods = [p for w in engine.workloads for p in w.slots if p is not None]
    chosen = data.draw(st.lists(st.sampled_from(pods), min_size=1, max_size=8, unique=True))
    now = data.draw(st.sampled_from((0.0, 1.0, 1234.5, 86400.0)), label="segment start")
    starts = []
    for pod in chosen:
        pod.state = data.draw(st.sampled_from(list(sc.model.PodState)[1:4]), label="state")
        pod.bound_at = now - data.draw(st.sampled_from((0.0, 0.5, 45.0)), label="bound")
        starts.append(pod.bound_at)
        table._fit(pod.seq + 1)  # what the engine writes where a bound pod's state changes
        table.starting[pod.seq] = pod.state is sc.model.PodState.STARTING
        app = pod.workload.app
        unit = getattr(app, "unit", None)
        if unit is None and hasattr(app, "units"):
            unit = app.units[pod.member]
        if unit is None:
            continue
        unit.running = data.draw(st.booleans(), label="running")
        unit.p0 = data.draw(st.sampled_from((0.0, 10.0, 333.3)), label="p0")
        unit.durable = data.draw(st.sampled_from((0.0, 5.0, unit.p0)), label="durable")
        unit.rate = data.draw(st.sampled_from((1.0, 2 / 3, 0.5)), label="rate")
        unit.seg_start = now
        table.sync(unit)
    k = data.draw(st.sampled_from((0, 1, 2, 7, 1000)), label="checkpoints")
    offset = data.draw(st.sampled_from(("done", "writing", "mid-write", "before", "after")))
    unit = next(
        (u for p in chosen for u in [getattr(p.workload.app, "unit", None)] if u is not None),
        None,
    ) or next(
        (p.workload.app.units[p.member] for p in chosen if hasattr(p.workload.app, "units")), None
    )
    interval = unit.interval if unit is not None and unit.interval is not None else 60.0
    write = unit.write if unit is not None else 0.0
    cycle = interval + write
    at = {
        "done": k * cycle,
        "writing": k * cycle + interval,
        "mid-write": k * cycle + interval + write / 2,
        "before": k * cycle - 1e-10,
        "after": k * cycle + 1e-10,
    }[offset]
    policy.now = now + max(0.0, at)
    seqs = np.array([p.seq for p in chosen], dtype=np.int64)
    weighed = np.empty(len(chosen), dtype=object)
    weighed[:] = chosen
    full, rest, _ = table.costs(
        lambda: weighed, seqs, np.array(starts), policy.now, policy.weights, policy._costs
    )
    for i, pod in enumerate(chosen):
        expected = policy._costs(pod)
        assert (full[i].hex(), rest[i].hex()) == (expected[0].hex(), expected[1].hex()), pod


@settings(max_examples=100, deadline=None)
@given(
    steps=st.lists(
        st.tuples(
            st.sampled_from(("start", "stop", "rollback", "sigterm")),
            st.floats(0, 5000),
            st.sampled_from((0.0, 0.5, 1.0)),
        ),
        max_size=20,
    )
)
def test_units_write_their_segment_state_through(steps: list[tuple[str, float, float]]) -> None:
    """Whatever a unit of work goes through (segments started and stopped, rollbacks, a
    checkpoint on SIGTERM), its row of the cost arrays holds its state."""
    from scheduler_core.app import Progress

    table = fast_costs.CostTable()
    units = [Progress(None, None, 0.0), Progress(3000.0, 60.0, 7.5)] + [
        Progress(500.0, 100.0, 0.0)
        for _ in range(70)  # past the first growth
    ]
    for unit in units:
        table.register(unit)
    t = 0.0
    for name, dt, rate in steps:
        t += dt
        for unit in (units[0], units[1], units[-1]):
            if name == "start":
                unit.start(t, rate)
            elif name == "stop":
                unit.stop(t)
            elif name == "rollback":
                unit.rollback()
            else:
                unit.checkpointed()
    for unit in units:
        row = table.segment[unit.index].tolist()
        assert row == [unit.p0, unit.durable, unit.seg_start, unit.rate, float(unit.running)]
        assert table.write[unit.index] == unit.write
        assert bool(table.timed[unit.index]) == (unit.interval is not None)


def _alike_always(spec: sc.ExperimentSpec) -> tuple[Any, Any]:
    """:func:`_both_ways` with the alike paths taken for any chunk, however small
    (hypothesis cannot use pytest's per-test monkeypatch across its examples)."""
    original = fast_checkpoint.ALIKE_MIN, fast_checkpoint.FEW
    fast_checkpoint.ALIKE_MIN, fast_checkpoint.FEW = 0, 0
    try:
        return _both_ways(spec)
    finally:
        fast_checkpoint.ALIKE_MIN, fast_checkpoint.FEW = original


@settings(max_examples=80, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(data=st.data())
def test_alike_rows_are_reprieved_once_and_give_the_reference_decision(
    data: st.DataObject,
) -> None:
    """Differential on one decision over nodes that repeat a few templates (start times
    drawn from one or two values, so rows alike in shapes, starts and costs are common):
    the arrays reprieve one row of each kind and broadcast it, and still give the
    reference's node, victims, candidates in cheapest-first order and costs; All-mode
    units still go to the reference."""
    from tests.core.test_fast_group import templated_cluster

    spec = sc.parse_spec(templated_cluster(data, "checkpoint-aware"))
    expected, got = _alike_always(spec)
    assert got == expected


def _templated(templates: int, starts: tuple[int, ...]) -> sc.ExperimentSpec:
    from tests.core.test_fast_group import templated_spec

    return templated_spec(templates, starts, "checkpoint-aware")


def test_templated_decisions_reprieve_each_kind_of_row_once(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    """Not a silent fallback: on 400 templated nodes the chunk's rows fall into a few
    kinds, only those are reprieved, and the decision is still the reference's."""
    reprieved: list[int] = []
    kinds: list[int] = []
    alike, rows_of = fast_checkpoint._kinds, fast_checkpoint._orders

    def counted_alike(*args: Any) -> Any:
        found = alike(*args)
        kinds.append(-1 if found is None else len(found[0]))
        return found

    def counted_rows(host: Any, pod: Any, rows: Any, *args: Any) -> Any:
        reprieved.append(len(rows))
        return rows_of(host, pod, rows, *args)

    monkeypatch.setattr(fast_checkpoint, "_kinds", counted_alike)
    monkeypatch.setattr(fast_checkpoint, "_orders", counted_rows)
    monkeypatch.setattr(fast_checkpoint, "FEW", 0)
    for templates in (1, 3):
        kinds.clear()
        reprieved.clear()
        expected, got = _both_ways(_templated(templates, (-1,)))
        assert got == expected
        assert kinds, "the chunk was looked at"
        assert all(0 < k <= 2 * templates for k in kinds), kinds
        assert reprieved == kinds  # one row of each kind, not the chunk


def test_a_hash_collision_falls_back_to_every_row(monkeypatch: pytest.MonkeyPatch) -> None:
    """The row hash only proposes kinds; rows are compared before they are merged. With
    every row hashed alike (as if all collided) nothing is merged and the decision is
    still the reference's."""
    monkeypatch.setattr(fast_checkpoint, "_HASH", np.zeros_like(fast_checkpoint._HASH))
    monkeypatch.setattr(fast_checkpoint, "FEW", 0)
    kinds: list[Any] = []
    alike = fast_checkpoint._kinds
    monkeypatch.setattr(fast_checkpoint, "_kinds", lambda *a: kinds.append(alike(*a)) or kinds[-1])
    expected, got = _both_ways(_templated(3, (-1, -2)))
    assert got == expected
    assert kinds, "the chunk was looked at"
    assert all(k is None for k in kinds)


def test_rows_are_one_kind_when_their_pods_compare_alike() -> None:
    """What makes two rows one kind (``_kinds``): their group signature and, for every
    pair of lower-priority columns, how the two pods compare in cost, in cost per GPU and
    in start time, and whether they share a workload. A value moved without changing any
    comparison keeps the row in its kind (it sums its own costs); moved past its
    neighbour's, or a pod given a workload of its own, the row is a kind of its own."""
    engine = Engine(resolve_variant(_templated(1, (-1,)), "default"), seed=1)
    engine.run()
    pod = engine._new_pod(engine.by_name["urgent"], 0)
    policy = engine.preemption
    assert isinstance(policy, CheckpointAwarePreemption)
    a = engine.cluster.arrays
    rows = np.arange(len(engine.cluster.nodes))
    width = int(a.used[rows].max())
    pack = a.pack[rows, :width].copy()
    lower = a.prio[rows, :width] < pod.priority
    cells = np.flatnonzero(lower.ravel())
    with policy.deciding():
        policy.now = engine.now
        full, _, group = fast_checkpoint._cell_costs(engine, policy, rows, width, pack, cells)
    found = fast_checkpoint._kinds(engine, rows, lower, pack, full, group)
    assert found is not None
    assert len(found[0]) == 1  # one template, one start: every row alike
    columns = np.flatnonzero(lower[5])
    column = int(columns[0])
    assert len(columns) >= 2

    def kinds_with(name: str, value: float) -> np.ndarray:
        parts = {"pack": pack.copy(), "full": full.copy(), "group": group.copy()}
        if name == "start":
            parts["pack"][5, column, 3] = value
        elif name == "row":  # the whole row's costs doubled (exact), its starts moved
            parts["full"][5] *= 2.0
            parts["pack"][5, :, 3] -= 1024.0
        else:
            parts[name][5, column] = value
        found = fast_checkpoint._kinds(
            engine, rows, lower, parts["pack"], parts["full"], parts["group"]
        )
        assert found is not None, name
        return found[1]

    # every cost and start of the row moved, every comparison kept: one kind
    assert full[5, column] > 0.0
    assert (kinds_with("row", 0.0) == 0).all()
    # moved past every other pod of the row, or given a workload or start of its own
    for name, value in (
        ("full", float(full[5].max()) + 1.0),
        ("start", float(pack[5, :, 3].min()) - 1.0),
        ("group", float(group.max()) + 1.0),
    ):
        inverse = kinds_with(name, value)
        assert inverse[5] != inverse[4], name
        assert (np.delete(inverse, 5) == inverse[4]).all(), name


def test_rows_apart_only_in_tied_start_times_list_their_victims_apart() -> None:
    """End to end, why start times are part of a row's kind although the costs and the
    signature agree: two serving pods on each node (1 and 2 GPUs, so the 2-GPU one is
    dearer and reprieved first), started together on some nodes and a second apart on
    the others. Both are evicted; the reference lists victims by MoreImportantPod, whose
    tie (the same start) keeps the reprieve order: (2-GPU, 1-GPU) where they started
    together, (1-GPU, 2-GPU) where the 1-GPU pod started first."""
    nodes = 300
    # a checkpoint on SIGTERM fits the grace period: nothing unsaved is lost, so each
    # pod costs its recovery alone (30 s times its GPUs), whatever its start
    saved = {
        "startupSeconds": 30,
        "stopSeconds": 1,
        "checkpoint": {"intervalSeconds": 600, "writeSeconds": 5, "onSigterm": True},
    }
    spec = sc.parse_spec(
        {
            "horizonSeconds": 10,
            "cluster": {"nodePools": [{"name": "gpu", "count": nodes, "gpus": 3}]},
            "priorityClasses": [
                {"name": "low", "value": 1, "globalDefault": True},
                {"name": "high", "value": 1000},
            ],
            "workloads": [
                {"name": "one", "members": nodes, "gpus": 1, "durationSeconds": 36000, **saved},
                {"name": "two", "members": nodes, "gpus": 2, "durationSeconds": 36000, **saved},
                {
                    "name": "urgent",
                    "members": 1,
                    "gpus": 3,
                    "arrival": 20,
                    "priorityClassName": "high",
                },
            ],
            "initialState": [
                *(
                    {"workload": "one", "node": f"gpu-{i}", "member": i, "startedAt": -100}
                    for i in range(nodes)
                ),
                *(
                    {"workload": "two", "node": f"gpu-{i}", "member": i, "startedAt": -100 + i % 2}
                    for i in range(nodes)
                ),
            ],
            "policy": {"preemption": "checkpoint-aware"},
        }
    )
    expected, got = _both_ways(spec)
    assert got == expected
    orders = {tuple(v.split("-")[0] for v in c["victims"]) for c in expected["candidates"]}
    assert orders == {("two", "one"), ("one", "two")}, orders


@settings(max_examples=200, deadline=None)
@given(
    rows=st.lists(
        st.lists(st.tuples(st.integers(0, 3), st.booleans()), min_size=6, max_size=6),
        min_size=1,
        max_size=8,
    )
)
def test_a_victims_group_is_seen_when_an_earlier_victim_shares_its_workload(
    rows: list[list[tuple[int, bool]]],
) -> None:
    """``_seen_before`` (cost_of counts a group's loss once, at its first victim in the
    victims' order) against its definition, position by position: a victim is "seen"
    when a victim before it in its row belongs to the same workload. Non-victims never
    count, whatever their workload."""
    v_group = np.array([[g for g, _ in row] for row in rows], dtype=np.int64)
    victim = np.array([[v for _, v in row] for row in rows], dtype=bool)

    seen = fast_checkpoint._seen_before(v_group, victim)

    for r, row in enumerate(rows):
        for j, (g, is_victim) in enumerate(row):
            expected = any(row[i][1] and row[i][0] == g for i in range(j)) and is_victim
            assert bool(seen[r, j]) == expected, (r, j, row)


def _distinct_starts(nodes: int, checkpoint: bool) -> sc.ExperimentSpec:
    """Every node full with four 1-GPU pods of one synchronous job and two 2-GPU pods of
    another, each pod started at a millisecond of its own (so every pod's lost work, and
    every node's costs, differ), in the same order on every node; a 4-GPU preemptor."""
    extra = (
        {"checkpoint": {"intervalSeconds": 300, "writeSeconds": 7}, "startupSeconds": 20}
        if checkpoint
        else {}
    )
    return sc.parse_spec(full_spec(nodes, "checkpoint-aware", distinct=True, low_extra=extra))


@pytest.mark.parametrize("checkpoint", [False, True])
def test_rows_whose_pods_started_apart_in_one_order_are_one_kind(
    checkpoint: bool, monkeypatch: pytest.MonkeyPatch
) -> None:
    """Pods each started at a moment of their own cost differently on every node, but
    where they compare alike the nodes are one kind: on 400 such nodes the chunk is
    reprieved a few rows at a time, every node sums its own costs, and the decision
    (node, victims, every candidate in cheapest-first order with its cost) is still the
    reference's."""
    monkeypatch.setattr(fast_checkpoint, "FEW", 0)
    found: list[Any] = []
    alike = fast_checkpoint._kinds
    monkeypatch.setattr(fast_checkpoint, "_kinds", lambda *a: found.append(alike(*a)) or found[-1])
    expected, got = _both_ways(_distinct_starts(400, checkpoint))
    assert got == expected
    costs = [c["cost"] for c in expected["candidates"]]
    assert len(set(costs)) > len(costs) // 2, "the nodes' costs differ"
    assert found, "the chunk was looked at"
    assert all(f is not None and len(f[0]) <= 4 for f in found), [
        None if f is None else len(f[0]) for f in found
    ]


def ordered_cluster(data: st.DataObject) -> dict[str, Any]:
    """Templated nodes (:func:`tests.core.test_fast_group.templated_cluster`'s shapes)
    whose pods each start at a millisecond of their own: each node from a start of its
    own, its pods a few seconds apart in the template's order, or (some nodes) in a
    shuffled order; some workloads checkpoint periodically. Nodes compare alike where
    their pods' costs keep one order, and apart elsewhere."""
    from tests.core.test_fast_group import KINDS, _cluster_document, node_templates

    nodes = data.draw(st.sampled_from((150, 400)), label="nodes")
    kinds = data.draw(st.sampled_from((("lone", "single"), KINDS)), label="kinds")
    count = data.draw(st.integers(1, 3), label="templates")
    shuffled = data.draw(st.sampled_from((0.0, 0.1, 0.5)), label="shuffled")
    rng = random.Random(data.draw(st.integers(0, 2**16), label="seed"))
    shapes, templates = node_templates(rng, kinds, count, 64.0)
    placed: dict[tuple[str, int], list[tuple[int, float]]] = {key: [] for key in shapes}
    for node in range(nodes):
        template = templates[min(int(rng.expovariate(1.0)), count - 1)]
        offsets = list(range(len(template)))
        if rng.random() < shuffled:
            rng.shuffle(offsets)
        base = -rng.randint(1_000, 900_000) / 1000
        for key, offset in zip(template, offsets, strict=True):
            placed[key].append((node, base - 3.0 * offset))
    document = _cluster_document(data, "checkpoint-aware", nodes, 64.0, shapes, placed)
    for workload in document["workloads"]:
        if workload["name"] != "urgent" and rng.random() < 0.5:
            workload["checkpoint"] = {"intervalSeconds": rng.choice((60, 600)), "writeSeconds": 5}
    return document


@settings(max_examples=60, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(data=st.data())
def test_rows_of_one_kind_give_the_reference_decision_whatever_their_costs(
    data: st.DataObject,
) -> None:
    """Differential on one decision over templated nodes whose pods each started at a
    moment of their own (:func:`ordered_cluster`): rows of one kind are reprieved once
    and each sums its own costs, and the node, victims, candidates (cheapest first) and
    costs are still the reference's; All-mode units still go to the reference."""
    spec = sc.parse_spec(ordered_cluster(data))
    expected, got = _alike_always(spec)
    assert got == expected
