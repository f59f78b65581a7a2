"""The group policies' fast paths against their Python reference (issue #14).

`workload-aware` decides a single pod's preemption on numpy arrays
(scheduler_core/fast_group.py); `checkpoint-aware` memoises its cost model within a
decision. Both must choose exactly what the Python steps choose: the same node, the
same victims, after the same random draw (KEP-5710 §6.2 moreImportantVictim order,
kube-scheduler's SelectVictimsOnNode reprieve and pickOneNodeForPreemption rules).
"""

from __future__ import annotations

import random
from collections.abc import Iterator
from contextlib import contextmanager
from typing import Any

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

import scheduler_core as sc
from scheduler_core import fast_group, fast_preemption
from scheduler_core.engine import Engine
from scheduler_core.plugins.default_preemption import DefaultPreemption, pick_one_node
from scheduler_core.plugins.workload_preemption import CheckpointAwarePreemption
from scheduler_core.spec import resolve_variant
from tests.core.test_speed import no_pdb_cluster

PRIORITIES = (1, 2, 50)
KINDS = ("lone", "single", "all")
CPUS = (0.1, 0.3, 0.7, 1.0, 4.0)
"""Binary-inexact requests: sums land a rounding error off the boundary, where the
reference's 1e-9 slack decides."""


@contextmanager
def python_decisions() -> Iterator[None]:
    """The reference: every decision made by the Python steps."""
    DefaultPreemption.use_arrays = False
    try:
        yield
    finally:
        DefaultPreemption.use_arrays = True


def full_cluster(data: st.DataObject, policy: str) -> dict[str, Any]:
    """Nodes filled with pods of lone workloads and of Single- and All-mode groups spread
    over nodes (units that span nodes), at three priorities below the preemptor's."""
    nodes = data.draw(st.sampled_from((3, 20, 150)), label="nodes")
    node_cpu = data.draw(st.sampled_from((4.0, 8.0, 64.0)), label="node cpu")
    seed = data.draw(st.integers(0, 2**16), label="seed")
    rng = random.Random(seed)
    shapes = {
        (kind, prio): (rng.choice((1, 2)), rng.choice(CPUS))
        for kind in KINDS
        for prio in PRIORITIES
    }
    placed: dict[tuple[str, int], list[tuple[int, float]]] = {key: [] for key in shapes}
    for node in range(nodes):
        gpus_left, cpu_left = 8, node_cpu
        while gpus_left > 0:
            key = rng.choice(list(shapes))
            gpus, cpu = shapes[key]
            if gpus > gpus_left or cpu > cpu_left or rng.random() < 0.1:
                break
            gpus_left -= gpus
            cpu_left -= cpu
            placed[key].append((node, -rng.randint(1, 5)))
    return _cluster_document(data, policy, nodes, node_cpu, shapes, placed)


def _cluster_document(
    data: st.DataObject,
    policy: str,
    nodes: int,
    node_cpu: float,
    shapes: dict[tuple[str, int], tuple[int, float]],
    placed: dict[tuple[str, int], list[tuple[int, float]]],
) -> dict[str, Any]:
    """The spec of a cluster whose pods are ``placed`` (node and start per member of each
    (kind, priority) workload of ``shapes``), with a preemptor drawn from ``data``."""
    workloads: list[dict[str, Any]] = []
    initial: list[dict[str, Any]] = []
    for (kind, prio), members in placed.items():
        if not members:
            continue
        name = f"{kind}{prio}"
        gpus, cpu = shapes[(kind, prio)]
        w: dict[str, Any] = {
            "name": name,
            "members": len(members),
            "gpus": gpus,
            "cpu": cpu,
            "durationSeconds": 36000,
            "priorityClassName": f"p{prio}",
        }
        if kind != "lone":
            mode = "All" if kind == "all" else "Single"
            w["podGroup"] = {"minCount": len(members), "disruptionMode": mode}
        workloads.append(w)
        initial += [
            {"workload": name, "node": f"gpu-{node}", "member": i, "startedAt": started}
            for i, (node, started) in enumerate(members)
        ]
    workloads.append(
        {
            "name": "urgent",
            "members": 1,
            "gpus": data.draw(st.sampled_from((1, 2, 4, 8)), label="preemptor gpus"),
            "cpu": data.draw(st.sampled_from((0.3, 1.0, 2.1, 3.7, 3.97)), label="cpu per 4")
            * node_cpu
            / 4,
            "arrival": 20,
            "priorityClassName": "p1000",
        }
    )
    return {
        "horizonSeconds": 10,
        "cluster": {"nodePools": [{"name": "gpu", "count": nodes, "gpus": 8, "cpu": node_cpu}]},
        "priorityClasses": [
            {"name": f"p{v}", "value": v, "globalDefault": v == 1} for v in (*PRIORITIES, 1000)
        ],
        "workloads": workloads,
        "initialState": initial,
        "policy": {"preemption": policy},
    }


@settings(max_examples=150, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(data=st.data())
def test_array_choice_is_the_workload_aware_reference_choice(data: st.DataObject) -> None:
    """Differential on one decision: on random full clusters the array path picks the
    node and victims that ``find_candidates`` + ``pick_one_node`` pick (KEP-5710 units,
    moreImportantVictim reprieve, §4.4 rules), after the same random draw; also when it
    hands short visit orders to the Python steps."""
    few = data.draw(st.sampled_from((0, fast_group.FEW)), label="few")
    spec = sc.parse_spec(full_cluster(data, "workload-aware"))
    original = fast_group.FEW
    fast_group.FEW = few
    try:
        expected, chosen = both_choices(spec)
    finally:
        fast_group.FEW = original
    same_choice(expected, chosen)


def both_choices(spec: sc.ExperimentSpec) -> tuple[Any, Any]:
    """The urgent pod's candidate chosen by ``find_candidates`` + ``pick_one_node`` and by
    :func:`fast_group.choose`, which must have made the same random draw."""
    engine = Engine(resolve_variant(spec, "default"), seed=1)
    engine.run()
    preemptor = engine._new_pod(engine.by_name["urgent"], 0)
    policy = engine.preemption
    state = engine.rng.getstate()
    candidates = policy.find_candidates(engine, preemptor)
    expected = pick_one_node(candidates) if candidates else None
    after = engine.rng.getstate()
    engine.rng.setstate(state)
    chosen = fast_group.choose(engine, policy, preemptor)
    assert engine.rng.getstate() == after
    return expected, chosen


def same_choice(expected: Any, chosen: Any) -> None:
    """The same node and victims, or no candidate for either."""
    if expected is None:
        assert chosen is None
    else:
        assert chosen is not None
        assert (chosen.node, chosen.victims) == (expected.node, expected.victims)


def node_templates(
    rng: random.Random, kinds: tuple[str, ...], count: int, node_cpu: float
) -> tuple[dict[tuple[str, int], tuple[int, float]], list[list[tuple[str, int]]]]:
    """A shape (GPUs, CPU) per (kind, priority) and ``count`` node templates, each the
    shapes drawn until the next one would not fit an 8-GPU node of ``node_cpu``: the
    nodes of the templated clusters repeat these."""
    shapes = {
        (kind, prio): (rng.choice((1, 2)), rng.choice(CPUS))
        for kind in kinds
        for prio in PRIORITIES
    }
    templates = []
    for _ in range(count):
        template, gpus_left, cpu_left = [], 8, node_cpu
        while True:
            key = rng.choice(list(shapes))
            gpus, cpu = shapes[key]
            if gpus > gpus_left or cpu > cpu_left:
                break
            template.append(key)
            gpus_left, cpu_left = gpus_left - gpus, cpu_left - cpu
        templates.append(template)
    return shapes, templates


def templated_cluster(data: st.DataObject, policy: str) -> dict[str, Any]:
    """:func:`full_cluster` where nodes repeat a few templates (the same pods in the same
    columns, start times all equal or drawn from two values, so ties are common): the
    rows a decision meets share group signatures, so the arrays reprieve one row per
    signature."""
    nodes = data.draw(st.sampled_from((40, 150, 400)), label="nodes")
    node_cpu = data.draw(st.sampled_from((8.0, 64.0)), label="node cpu")
    kinds = data.draw(st.sampled_from((("lone", "single"), KINDS)), label="kinds")
    count = data.draw(st.integers(1, 6), label="templates")
    starts = data.draw(st.sampled_from(((-1,), (-1, -2))), label="starts")
    rng = random.Random(data.draw(st.integers(0, 2**16), label="seed"))
    shapes, templates = node_templates(rng, kinds, count, node_cpu)
    placed: dict[tuple[str, int], list[tuple[int, float]]] = {key: [] for key in shapes}
    for node in range(nodes):
        for key in templates[min(int(rng.expovariate(1.0)), count - 1)]:
            placed[key].append((node, rng.choice(starts)))
    return _cluster_document(data, policy, nodes, node_cpu, shapes, placed)


@settings(max_examples=120, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(data=st.data())
def test_alike_rows_are_reprieved_once_and_choose_the_reference(data: st.DataObject) -> None:
    """Differential on one decision over nodes that repeat a few templates: the array
    path reprieves one row per group signature (in Python for a few signatures, on
    arrays for more) and broadcasts it, and still picks the node and victims of
    ``find_candidates`` + ``pick_one_node`` (moreImportantVictim reprieve, §4.4 rules),
    after the same random draw; All-mode units fall back to the rows' own path."""
    spec = sc.parse_spec(templated_cluster(data, "workload-aware"))
    with looking_for_alike_rows():
        expected, chosen = both_choices(spec)
    same_choice(expected, chosen)


def test_templated_decisions_take_the_alike_paths(monkeypatch: pytest.MonkeyPatch) -> None:
    """Not a silent fallback: on templated nodes without All-mode groups the decision is
    made from one reprieve per signature, in Python for a few signatures and on arrays
    for more (the differential above checks what they choose)."""
    taken: dict[str, int] = {"few": 0, "alike": 0, "rows": 0}
    for name in ("few", "alike", "rows"):
        function = getattr(fast_group, f"_evaluate_{name}")

        def counted(*args: Any, _f: Any = function, _n: str = name, **kwargs: Any) -> Any:
            taken[_n] += 1
            return _f(*args, **kwargs)

        monkeypatch.setattr(fast_group, f"_evaluate_{name}", counted)
    cases = (((-1,), 1), ((-1,), 3), ((-1, -2), 5))  # one signature, a few, many
    for starts, templates in cases:
        spec = templated_spec(templates, starts, "workload-aware")
        expected, chosen = both_choices(spec)
        assert chosen is not None
        same_choice(expected, chosen)
    assert taken["few"] >= 2
    assert taken["alike"] >= 1
    assert taken["rows"] == 0


@contextmanager
def looking_for_alike_rows() -> Iterator[None]:
    """Alike rows looked for in chunks of any size (small clusters too)."""
    original = fast_group.ALIKE_MIN
    fast_group.ALIKE_MIN = fast_preemption.ALIKE_MIN = 0
    try:
        yield
    finally:
        fast_group.ALIKE_MIN = fast_preemption.ALIKE_MIN = original


def templated_spec(templates: int, starts: tuple[int, ...], policy: str) -> sc.ExperimentSpec:
    """:func:`templated_cluster` with fixed answers: 400 nodes of 64 CPUs repeating
    ``templates`` templates of lone and single-group pods started at ``starts``, a
    4-GPU preemptor."""
    answers = {
        "nodes": 400,
        "node cpu": 64.0,
        "kinds": ("lone", "single"),
        "templates": templates,
        "starts": starts,
        "seed": 7,
        "preemptor gpus": 4,
        "cpu per 4": 1.0,
    }
    return sc.parse_spec(templated_cluster(_Fixed(answers), policy))  # type: ignore[arg-type]


class _Fixed:
    """A stand-in for hypothesis's data object that answers each draw by its label."""

    def __init__(self, answers: dict[str, Any]) -> None:
        self.answers = answers

    def draw(self, strategy: Any, label: str) -> Any:
        return self.answers[label]


def test_the_array_path_decides_workload_aware_single_pods() -> None:
    """Not a silent fallback: with no PDB, workload-aware's single pods go to the arrays,
    with or without a recorder (the arrays list every candidate for it); so do
    checkpoint-aware's (scheduler_core/fast_checkpoint.py, tests/core/test_fast_checkpoint.py)."""
    spec = sc.parse_spec({**no_pdb_cluster(3), "policy": {"preemption": "workload-aware"}})
    engine = Engine(resolve_variant(spec, "default"), seed=3, explain=False)
    assert engine.preemption.arrays_decide(engine)
    engine = Engine(resolve_variant(spec, "default"), seed=3)
    assert engine.preemption.arrays_decide(engine), "a recorder gets its candidates too"
    spec = sc.parse_spec({**no_pdb_cluster(3), "policy": {"preemption": "checkpoint-aware"}})
    engine = Engine(resolve_variant(spec, "default"), seed=3, explain=False)
    assert engine.preemption.arrays_decide(engine)


def all_mode_cluster(seed: int, policy: str) -> dict[str, Any]:
    """:func:`no_pdb_cluster` with some workloads turned into All- and Single-mode
    groups, so single-pod preemptors meet units that span nodes."""
    data = no_pdb_cluster(seed)
    rng = random.Random(seed)
    for w in data["workloads"]:
        if w["name"] != "gang" and rng.random() < 0.2:
            w["members"] = rng.choice((2, 3))
            w["controller"] = {"kind": "none"}
            mode = rng.choice(("All", "Single"))
            w["podGroup"] = {"minCount": w["members"], "disruptionMode": mode}
    return {**data, "policy": {"preemption": policy}}


@pytest.mark.parametrize("policy", ["workload-aware", "checkpoint-aware"])
def test_fast_decisions_give_the_log_of_python_decisions(
    policy: str, monkeypatch: pytest.MonkeyPatch
) -> None:
    """Differential on whole runs: arrays (workload-aware) and memoised costs
    (checkpoint-aware) against every decision in Python, with nominations claiming
    room, groups preempting and All-mode units: the same log, event for event."""
    monkeypatch.setattr(fast_group, "FEW", 0)
    preempting = 0
    for seed in range(10):
        spec = sc.parse_spec(all_mode_cluster(seed, policy))
        with python_decisions(), no_memo():
            reference = Engine(resolve_variant(spec, "default"), seed=seed, explain=False).run()
        fast = Engine(resolve_variant(spec, "default"), seed=seed, explain=False).run()
        assert fast == reference, seed
        preempting += any(e.reason == "Preempted" for e in reference)
    assert preempting >= 6


@contextmanager
def no_memo() -> Iterator[None]:
    """checkpoint-aware evaluating its cost model afresh each time it needs a cost."""
    CheckpointAwarePreemption.memoise = False
    try:
        yield
    finally:
        CheckpointAwarePreemption.memoise = True


def small_gang_benchmark(monkeypatch: pytest.MonkeyPatch) -> tuple[sc.ExperimentSpec, Any]:
    """kube-scheduler's workload-aware benchmark (bench/bench_workload_preemption.py) at
    120 nodes, 120 All-mode gangs and 12 preemptors, and the log the Python steps give."""
    from bench.bench_workload_preemption import spec as benchmark

    monkeypatch.setattr("bench.bench_workload_preemption.NODES", 120)
    monkeypatch.setattr("bench.bench_workload_preemption.GROUPS", 120)
    monkeypatch.setattr("bench.bench_workload_preemption.PREEMPTORS", 12)
    spec = benchmark("all", "workload-aware")
    with python_decisions():
        reference = Engine(resolve_variant(spec, "default"), seed=1, explain=False).run()
    return spec, reference


def test_upstream_benchmark_gangs_are_decided_on_the_arrays(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    """kube-scheduler's workload-aware preemption benchmark (bench/
    bench_workload_preemption.py), scaled down: every node holds one pod of each of ten
    All-mode gangs, so every candidate row spans nodes. Each such row has one pod per
    unit on the node, and :func:`fast_group._spanning_rows` decides it without the
    per-row reference (``_spanning_row`` is never asked); the run's log is the one the
    Python steps give (KEP-5710 §6.2 order, SelectVictimsOnNode's reprieve)."""
    spec, reference = small_gang_benchmark(monkeypatch)
    by_rows = fast_group._spanning_rows
    rows_decided = 0

    def counted(*args: Any) -> Any:
        nonlocal rows_decided
        decided = by_rows(*args)
        rows_decided += len(decided)
        return decided

    def refused(*args: Any) -> Any:
        raise AssertionError("a row of the benchmark went to the per-row reference")

    monkeypatch.setattr(fast_group, "_spanning_rows", counted)
    monkeypatch.setattr(fast_group, "_spanning_row", refused)
    fast = Engine(resolve_variant(spec, "default"), seed=1, explain=False).run()
    assert fast == reference
    preempted = sum(e.reason == "Preempted" for e in fast)
    assert preempted >= 100
    assert preempted % 10 == 0  # whole gangs of ten
    assert rows_decided >= 100 * (preempted // 100)  # numCandidates: 100 rows an attempt


def test_chunks_of_all_mode_units_work_out_no_signatures(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    """Rows holding an All-mode unit below the preemptor are decided unit by unit, which
    neither alike path takes; so a chunk of them must not pay for its rows' signatures
    (kube-scheduler's workload-aware benchmark changed 100 rows an attempt and spent
    1.7 ms of a 7.9 ms attempt on them). The decisions are still the reference's."""
    from scheduler_core.fast_nodes import NodeArrays

    spec, reference = small_gang_benchmark(monkeypatch)

    def refused(self: NodeArrays, row: int) -> tuple[int, int]:
        raise AssertionError(f"row {row}'s signature was worked out")

    monkeypatch.setattr(NodeArrays, "_signature", refused)
    with looking_for_alike_rows():  # chunks of any size would look for alike rows
        fast = Engine(resolve_variant(spec, "default"), seed=1, explain=False).run()
    assert fast == reference
    assert sum(e.reason == "Preempted" for e in fast) >= 100
