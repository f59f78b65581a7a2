"""Issue #14: the fast paths give the same answers as the reference paths, and the
quadratic costs are gone (generous bounds on large inputs, not timed benchmarks)."""

from __future__ import annotations

import time
from types import SimpleNamespace

from scheduler_core.spec import _initial_count_errors


def test_initial_count_check_is_linear_in_recorded_pods() -> None:
    """60,000 recorded members of one workload: a list scanned per pod took ~20 s; a set
    takes milliseconds. The bound is 10x generous for a busy shared machine. The errors
    are still found, at the same paths, among that many pods."""
    n = 60_000
    pods = [SimpleNamespace(workload="w", member=i) for i in range(n)]
    pods.append(SimpleNamespace(workload="w", member=n - 1))  # a member twice
    pods.append(SimpleNamespace(workload="v", member=None))
    pods.append(SimpleNamespace(workload="v", member=None))  # more pods than members
    spec = SimpleNamespace(initial_state=pods)
    workloads = {"w": SimpleNamespace(members=n + 1), "v": SimpleNamespace(members=1)}
    started = time.process_time()
    errors = list(_initial_count_errors(spec, workloads))  # type: ignore[arg-type]
    elapsed = time.process_time() - started
    assert [e["path"] for e in errors] == [
        f"initialState[{n}].member",
        f"initialState[{n + 2}].workload",
    ]
    assert elapsed < 2.0, f"{elapsed:.1f} s for {n:,} recorded pods"


# ----------------------------------------------------------------------------- doomed twins
import random  # noqa: E402
from collections.abc import Iterator  # noqa: E402
from contextlib import contextmanager  # noqa: E402
from typing import Any  # noqa: E402

import pytest  # noqa: E402

import scheduler_core as sc  # noqa: E402
from scheduler_core.engine import Engine  # noqa: E402
from scheduler_core.fast import skip_randrange  # noqa: E402
from scheduler_core.presets import list_presets  # noqa: E402
from scheduler_core.spec import expand_variants, resolve_variant  # noqa: E402

POLICIES = ("none", "pod", "workload-aware", "checkpoint-aware")


@contextmanager
def twins_one_by_one() -> Iterator[None]:
    """The reference: every pod queued and replayed on its own, as before issue #14."""
    Engine.collapse_twins = False
    try:
        yield
    finally:
        Engine.collapse_twins = True


def random_cluster(seed: int, policy: str) -> dict[str, Any]:
    """A small overloaded cluster: mixed sizes and priorities, bare pods and Jobs, some
    PDBs, a gang, a Never class, so twins pile up, preempt, and get preempted."""
    rng = random.Random(seed)
    nodes = rng.randint(2, 6)
    classes = [
        {"name": "low", "value": 10, "globalDefault": True},
        {"name": "mid", "value": 100},
        {"name": "high", "value": 1000},
        {"name": "polite", "value": 500, "preemptionPolicy": "Never"},
    ]
    workloads = []
    for i in range(rng.randint(30, 90)):
        w: dict[str, Any] = {
            "name": f"w{i}",
            "gpus": rng.choice((1, 1, 2, 4, 8)),
            "priorityClassName": rng.choice(("low", "low", "mid", "high", "polite")),
            "arrival": round(rng.uniform(0, 1500), 1),
            "durationSeconds": rng.choice((60, 300, 900, 2400)),
            "terminationGracePeriodSeconds": rng.choice((0, 30)),
            "controller": {"kind": rng.choice(("none", "job", "deployment"))},
        }
        if rng.random() < 0.15:
            w["members"] = 2
            w["pdb"] = {"minAvailable": 1}
        workloads.append(w)
    workloads.append(
        {
            "name": "gang",
            "members": 3,
            "gpus": 2,
            "arrival": 400,
            "priorityClassName": "high",
            "durationSeconds": 600,
            "podGroup": {"minCount": 3},
        }
    )
    return {
        "horizonSeconds": 2400,
        "seed": seed,
        "cluster": {"nodePools": [{"name": "gpu", "count": nodes, "gpus": 8}]},
        "priorityClasses": classes,
        "workloads": workloads,
        "policy": {"preemption": policy},
    }


def test_bulk_draws_leave_the_generator_where_single_draws_do() -> None:
    """The draws a class replay owes are made in bulk: the generator must end in the same
    state as after the same number of ``randrange(n)`` calls, rejections included."""
    for n in (1, 2, 3, 7, 100, 1000, 2**20 + 3, 2**31 - 1, 2**32, 2**40):
        for count in (0, 1, 31, 32, 33, 1000, 5000):
            plain, bulk = random.Random(n + count), random.Random(n + count)
            for _ in range(count):
                plain.randrange(n)
            skip_randrange(bulk, n, count)
            assert plain.getstate() == bulk.getstate(), (n, count)


@pytest.mark.parametrize("policy", POLICIES)
@pytest.mark.parametrize("seed", range(6))
def test_class_replay_gives_the_log_of_one_by_one_replay(policy: str, seed: int) -> None:
    """Differential: same spec and seed, twins as cohorts vs one by one: the same event
    log, event for event (so the same victims, bindings and failure counts)."""
    spec = sc.parse_spec(random_cluster(seed, policy))
    with twins_one_by_one():
        reference = Engine(resolve_variant(spec, "default"), seed=seed).run()
    engine = Engine(resolve_variant(spec, "default"), seed=seed)
    assert engine.run() == reference
    assert engine.replayed > 0 or policy != "none"


def test_presets_keep_their_event_logs() -> None:
    """Every preset variant, two replications: the class replay changes no event."""
    for preset in list_presets():
        spec = preset.spec()
        for variant in expand_variants(spec):
            for replication in range(2):
                fast = sc.simulate(spec, variant, replication).events
                with twins_one_by_one():
                    slow = sc.simulate(spec, variant, replication).events
                assert fast == slow, (preset.id, variant.name, replication)


def _popped(pods: int, policy: str) -> int:
    """Pods popped one by one from activeQ on a backlogged 10-node cluster."""
    spec = sc.parse_spec(_backlog(pods, policy))
    engine = Engine(resolve_variant(spec, "default"), seed=1)
    engine.run()
    return engine.popped


def _backlog(pods: int, policy: str) -> dict[str, Any]:
    rng = random.Random(pods)
    horizon = pods * 3.6
    return {
        "horizonSeconds": horizon,
        "cluster": {"nodePools": [{"name": "gpu", "count": 10, "gpus": 8}]},
        "priorityClasses": [
            {"name": "low", "value": 10, "globalDefault": True},
            {"name": "high", "value": 1000},
        ],
        "workloads": [
            {
                "name": f"w{i}",
                "gpus": rng.choice((1, 2, 4, 8)),
                "priorityClassName": rng.choice(("low", "low", "high")),
                "arrival": round(rng.uniform(0, 0.8 * horizon), 1),
                "durationSeconds": 600,
            }
            for i in range(pods)
        ],
        "policy": {"preemption": policy},
    }


@pytest.mark.parametrize("policy", ["none", "pod"])
def test_doomed_retries_grow_linearly_with_the_backlog(policy: str) -> None:
    """Every release wakes the whole pool; one by one, 4x the pods meant ~16x the pops.
    With twins replayed as a class, the pods handled one by one grow with the pods."""
    small, large = _popped(400, policy), _popped(1600, policy)
    assert large < 6 * small, (small, large)


# ----------------------------------------------------------------------------- array decisions
from scheduler_core import fast_preemption  # noqa: E402
from scheduler_core.plugins.default_preemption import (  # noqa: E402
    DefaultPreemption,
    pick_one_node,
)


@contextmanager
def python_decisions() -> Iterator[None]:
    """The reference: every DefaultPreemption decision made by the Python steps."""
    DefaultPreemption.use_arrays = False
    try:
        yield
    finally:
        DefaultPreemption.use_arrays = True


def no_pdb_cluster(seed: int) -> dict[str, Any]:
    """Like :func:`random_cluster` without PDBs (where the array path decides), with
    CPU and memory requests that bind before GPUs do on some nodes, a pod-count limit,
    and recorded nominations."""
    data = random_cluster(seed, "pod")
    rng = random.Random(seed)
    for w in data["workloads"]:
        w.pop("pdb", None)
        w["cpu"] = rng.choice((1, 4, 16, 30.5))
        w["memory"] = rng.choice((8, 64, 200.25))
    data["cluster"] = {
        "nodePools": [
            {
                "name": "gpu",
                "count": rng.randint(2, 12),
                "gpus": 8,
                "cpu": 64,
                "memory": 512,
                "maxPods": rng.choice((4, 110)),
            },
            {"name": "big", "count": rng.randint(1, 3), "gpus": 16, "cpu": 128, "memory": 1024},
        ]
    }
    return data


def test_array_decisions_give_the_log_of_python_decisions(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    """Differential (§4.2-4.4): the same run with every decision made in Python and with
    the array path (also on few nodes, where it would hand over to the Python steps):
    same victims, nodes and nominations, event for event. Records off: a recorder turns
    the array path off, and both runs would be the Python steps."""
    monkeypatch.setattr(fast_preemption, "FEW", 0)
    monkeypatch.setattr(fast_preemption, "ALIKE_MIN", 0)
    preempting = 0
    for seed in range(12):
        spec = sc.parse_spec(no_pdb_cluster(seed))
        with python_decisions():
            reference = Engine(resolve_variant(spec, "default"), seed=seed, explain=False).run()
        fast = Engine(resolve_variant(spec, "default"), seed=seed, explain=False).run()
        assert fast == reference, seed
        preempting += any(e.reason == "Preempted" for e in reference)
    assert preempting >= 8


@pytest.mark.parametrize(("tables", "signatures"), [(1, 2), (2, 16), (32, 1 << 14)])
def test_remembered_outcomes_give_the_log_of_python_decisions(
    tables: int, signatures: int, monkeypatch: pytest.MonkeyPatch
) -> None:
    """Differential (§4.3): SelectVictimsOnNode's outcomes kept per signature across
    decisions (one table per preemptor priority and request) give the victims, nodes
    and nominations of the Python steps, also when the tables start afresh at every new
    shape (one table) and when signature ids outgrow a table (those rows reprieved at
    every decision)."""
    monkeypatch.setattr(fast_preemption, "FEW", 0)
    monkeypatch.setattr(fast_preemption, "ALIKE_MIN", 0)
    monkeypatch.setattr(fast_preemption, "MAX_TABLES", tables)
    monkeypatch.setattr(fast_preemption, "TABLE_SIGNATURES", signatures)
    shapes: set[int] = set()
    for seed in range(12, 20):
        spec = sc.parse_spec(no_pdb_cluster(seed))
        with python_decisions():
            reference = Engine(resolve_variant(spec, "default"), seed=seed, explain=False).run()
        fast = Engine(resolve_variant(spec, "default"), seed=seed, explain=False)
        assert fast.run() == reference, seed
        shapes.add(len(fast.cluster.arrays.outcomes))
    assert max(shapes) >= 1  # the tables were used


def test_a_decision_reprieves_only_signatures_not_met_before(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    """The reprieve runs once per (signature, priority, request): the same preemptor
    decided again reprieves no node and chooses the same node and victims; a preemptor
    of another request reprieves afresh."""
    rng = random.Random(3)
    nodes = 400
    spec = sc.parse_spec(
        {
            "horizonSeconds": 10,
            "cluster": {"nodePools": [{"name": "gpu", "count": nodes, "gpus": 8, "cpu": 64}]},
            "priorityClasses": [
                {"name": f"p{v}", "value": v, "globalDefault": v == 1} for v in (1, 2, 3, 1000)
            ],
            "workloads": [
                *(
                    {
                        "name": f"bg{v}",
                        "members": nodes * 4,
                        "gpus": 2,
                        "durationSeconds": 36000,
                        "priorityClassName": f"p{v}",
                    }
                    for v in (1, 2, 3)
                ),
                *(
                    {
                        "name": f"urgent{gpus}",
                        "members": 1,
                        "gpus": gpus,
                        "arrival": 20,
                        "priorityClassName": "p1000",
                    }
                    for gpus in (2, 4)
                ),
            ],
            "initialState": [
                {
                    "workload": f"bg{rng.choice((1, 2, 3))}",
                    "node": f"gpu-{i // 4}",
                    "startedAt": -rng.randint(1, 5),
                }
                for i in range(nodes * 4)
            ],
        }
    )
    engine = Engine(resolve_variant(spec, "default"), seed=3, explain=False)
    engine.run()
    reprieved: list[int] = []
    for name in ("_select", "_select_few"):
        real = getattr(fast_preemption, name)

        def counted(a: Any, pod: Any, rows: Any, need: Any, real: Any = real) -> Any:
            reprieved.append(len(rows))
            return real(a, pod, rows, need)

        monkeypatch.setattr(fast_preemption, name, counted)
    policy = engine.preemption
    chosen = []
    state = engine.rng.getstate()
    for workload in ("urgent4", "urgent4", "urgent2"):
        engine.rng.setstate(state)  # the same offset draw each time
        reprieved.clear()
        pod = engine._new_pod(engine.by_name[workload], 0)
        candidate = fast_preemption.choose(engine, policy, pod)
        assert candidate is not None
        chosen.append(((candidate.node, candidate.victims), sum(reprieved)))
    (first, first_count), (again, again_count), (_, other_count) = chosen
    assert first_count > 0
    assert (again, again_count) == (first, 0)
    assert other_count > 0


@pytest.mark.parametrize("few", [0, fast_preemption.FEW])
@pytest.mark.parametrize("seed", range(30))
def test_array_choice_is_the_reference_choice_on_random_full_clusters(
    seed: int, few: int, monkeypatch: pytest.MonkeyPatch
) -> None:
    """Differential on one decision: random full clusters (random priorities, sizes and
    start times, many nodes so the numCandidates stop rule and the offset matter): the
    array path picks the node ``find_candidates`` + ``pick_one_node`` pick, with the same
    victims, after the same random draw."""
    monkeypatch.setattr(fast_preemption, "FEW", few)
    rng = random.Random(seed)
    nodes = rng.choice((5, 40, 300))
    per_node = rng.choice((2, 4, 8))
    members = nodes * per_node
    spec = sc.parse_spec(
        {
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
                    "startedAt": -rng.randint(1, 5),
                }
                for i in range(members)
            ],
        }
    )
    engine = Engine(resolve_variant(spec, "default"), seed=seed)
    engine.run()
    preemptor = engine._new_pod(engine.by_name["urgent"], 0)
    policy = engine.preemption
    state = engine.rng.getstate()
    candidates = policy.find_candidates(engine, preemptor)
    expected = pick_one_node(candidates) if candidates else None
    after = engine.rng.getstate()
    engine.rng.setstate(state)
    chosen = fast_preemption.choose(engine, policy, preemptor)
    assert engine.rng.getstate() == after
    if expected is None:
        assert chosen is None
    else:
        assert chosen is not None
        assert (chosen.node, chosen.victims) == (expected.node, expected.victims)


def test_node_arrays_follow_each_node_in_its_own_order() -> None:
    """The arrays hold, per node, the bound pods in ``node.pods`` order with their
    priorities and requests, through binds, releases, compaction and growth."""
    rng = random.Random(7)
    spec = sc.parse_spec(
        {
            "cluster": {
                "nodePools": [{"name": "gpu", "count": 3, "gpus": 64, "cpu": 1000, "memory": 10000}]
            },
            "priorityClasses": [{"name": "p", "value": 5, "globalDefault": True}],
            "workloads": [{"name": "w", "members": 400, "gpus": 1, "cpu": 1.5}],
        }
    )
    engine = Engine(resolve_variant(spec, "default"), seed=1)
    cluster, arrays = engine.cluster, engine.cluster.arrays
    pods = [engine._new_pod(engine.by_name["w"], i) for i in range(400)]
    bound: list[Any] = []
    for step in range(3000):
        room = [n for n in cluster.nodes if n.free_gpus >= 1]
        if bound and (rng.random() < 0.45 or not room):
            pod = bound.pop(rng.randrange(len(bound)))
            cluster.release(pod)
            pod.node = None
        else:
            pod = rng.choice([p for p in pods if p.node is None])
            node = rng.choice(room)
            pod.bound_at = float(step)
            cluster.assign(pod, node)
            bound.append(pod)
        for node in cluster.nodes:
            live = arrays.prio[node.idx] != fast_preemption.BIG
            assert arrays.seq[node.idx][live].tolist() == [p.seq for p in node.pods]
            assert arrays.pack[node.idx][live][:, 3].tolist() == [p.bound_at for p in node.pods]
            assert arrays.free_cpu[node.idx] == node.free_cpu
    assert arrays.width > 8


# ----------------------------------------------------------------------------- narrow verdicts
@contextmanager
def full_attempts() -> Iterator[None]:
    """The reference: no cached verdict, every pod a full scheduling attempt."""
    Engine.cache_verdicts = False
    try:
        with twins_one_by_one():
            yield
    finally:
        Engine.cache_verdicts = True


@pytest.mark.parametrize("policy", POLICIES)
@pytest.mark.parametrize("seed", range(6))
def test_narrow_verdicts_give_the_log_of_full_attempts(policy: str, seed: int) -> None:
    """Differential: a failed verdict kept across changes on nodes that cannot help
    (DefaultPreemption's queueing hint) gives the log of a full attempt every time."""
    spec = sc.parse_spec(random_cluster(seed, policy))
    with full_attempts():
        reference = Engine(resolve_variant(spec, "default"), seed=seed).run()
    engine = Engine(resolve_variant(spec, "default"), seed=seed)
    assert engine.run() == reference


def test_a_release_elsewhere_keeps_a_verdict_that_one_node_cannot_change() -> None:
    """With the epoch rule alone, every change dropped every verdict, so each class's
    first retry after any release was a full attempt of its own; with the hint, more
    classes replay as cohorts and fewer pods are popped one by one, for the same log."""
    spec = sc.parse_spec(_backlog(1600, "pod"))
    narrow = Engine(resolve_variant(spec, "default"), seed=1)
    log = narrow.run()
    epoch_only = Engine(resolve_variant(spec, "default"), seed=1)
    epoch_only._hint = None
    assert epoch_only.run() == log
    assert narrow.popped < epoch_only.popped, (narrow.popped, epoch_only.popped)


# ----------------------------------------------------------------------------- collector
def test_the_collector_is_paused_during_a_run_and_restored_after() -> None:
    """Engine.run pauses the cyclic collector (its passes over the growing log grew
    faster than the run) and gives it back as it was, also when a run stops on its event
    limit; a caller that had it off keeps it off. The log is the same either way."""
    import gc

    spec = sc.parse_spec(random_cluster(3, "pod"))
    seen: list[bool] = []
    original = Engine._scheduling_pass

    def watching(self: Engine) -> None:
        seen.append(gc.isenabled())
        original(self)

    assert gc.isenabled()
    Engine._scheduling_pass = watching  # type: ignore[method-assign]
    try:
        paused = sc.simulate(spec, "default").events
        assert seen
        assert not any(seen), "the collector ran during the run"
        assert gc.isenabled(), "the collector was not given back"
        with pytest.raises(sc.SimulationLimitError):
            sc.simulate(spec, "default", max_events=5)
        assert gc.isenabled(), "a run that stopped on its limit kept the collector off"
        gc.disable()
        try:
            assert sc.simulate(spec, "default").events == paused
            assert not gc.isenabled(), "a caller's paused collector was switched on"
        finally:
            gc.enable()
    finally:
        Engine._scheduling_pass = original  # type: ignore[method-assign]
    assert paused  # a run with events, not an empty one


def test_parsing_resolving_and_timelines_pause_the_collector_and_give_it_back(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    """parse_spec, resolve_variant and the timeline's build, to_json and from_json run
    with the cyclic collector paused too (gc_pause): on the openb trace, with a task's
    spec and log alive, its full passes made to_json 0.43 s instead of 0.02 s and
    resolve_variant 0.67 s instead of 0.24 s. Each gives the collector back, also when
    the spec is refused; a caller that had it off keeps it off."""
    import dataclasses
    import gc

    from scheduler_core import spec as spec_module
    from scheduler_core import timeline

    seen: dict[str, list[bool]] = {}

    def watch(module: Any, name: str) -> None:
        original = getattr(module, name)

        def watching(*args: Any, **kwargs: Any) -> Any:
            seen.setdefault(name, []).append(gc.isenabled())
            return original(*args, **kwargs)

        monkeypatch.setattr(module, name, watching)

    class Watched(list):  # type: ignore[type-arg]
        def __iter__(self) -> Any:
            seen.setdefault("to_json", []).append(gc.isenabled())
            return super().__iter__()

    class WatchedMapping(dict):  # type: ignore[type-arg]
        def get(self, *args: Any) -> Any:
            seen.setdefault("from_json", []).append(gc.isenabled())
            return super().get(*args)

    watch(spec_module, "_cross_field_errors")  # inside parse_spec and resolve_variant
    watch(timeline, "_read")  # inside build
    document = random_cluster(3, "pod")
    document["variants"] = [{"name": "ckpt", "set": {"policy.checkpointVictims": True}}]
    assert gc.isenabled()
    spec = sc.parse_spec(document)
    resolved = resolve_variant(spec, "ckpt")
    result = sc.simulate(spec, resolved)
    built = timeline.build(result.events, resolved.spec)
    stored = dataclasses.replace(built, spans=Watched(built.spans)).to_json()
    assert timeline.Timeline.from_json(WatchedMapping(stored)).spans == list(built.spans)
    assert gc.isenabled(), "the collector was not given back"
    # parse + resolve (+ the resolve inside simulate), build, to_json, from_json
    assert len(seen["_cross_field_errors"]) >= 2
    assert seen["_read"]
    assert seen["to_json"]
    assert seen["from_json"]
    assert not any(flag for flags in seen.values() for flag in flags), seen
    with pytest.raises(sc.SpecError):
        sc.parse_spec({**document, "horizonSeconds": -1})
    assert gc.isenabled(), "a refused spec kept the collector off"
    gc.disable()
    try:
        sc.parse_spec(document)
        assert not gc.isenabled(), "a caller's paused collector was switched on"
    finally:
        gc.enable()


@pytest.mark.parametrize("few_kinds", [0, fast_preemption.FEW_KINDS], ids=["numpy", "python"])
def test_storm_decisions_per_signature_give_the_python_log_and_records(
    few_kinds: int, monkeypatch: pytest.MonkeyPatch
) -> None:
    """Differential (§4.3-4.4) on the scheduler_perf storm shape, where every full node
    has the same pod-set signature and one evaluation is broadcast to all: the same
    event log and the same decision records as the Python steps, with the per-signature
    reprieve done in Python (``few_kinds``) or with numpy."""
    import sys
    from pathlib import Path

    sys.path.insert(0, str(Path(__file__).resolve().parents[2] / "bench"))
    from bench_scheduler_perf import perf_spec

    monkeypatch.setattr(fast_preemption, "FEW_KINDS", few_kinds)
    monkeypatch.setattr(fast_preemption, "FEW", 0)
    monkeypatch.setattr(fast_preemption, "ALIKE_MIN", 0)
    spec = sc.parse_spec(perf_spec(120, 120))
    with python_decisions():
        engine = Engine(resolve_variant(spec, "default"), seed=3, explain=True)
        reference, reference_records = engine.run(), engine.decisions()
    engine = Engine(resolve_variant(spec, "default"), seed=3, explain=True)
    fast, records = engine.run(), engine.decisions()
    assert fast == reference
    assert records == reference_records
    assert sum(e.reason == "Preempted" for e in fast) == 3 * 120


@pytest.mark.parametrize("spare", [0, 7, 40])
def test_storm_on_part_of_the_cluster_gives_the_python_log_and_records(
    spare: int, monkeypatch: pytest.MonkeyPatch
) -> None:
    """Differential (§4.2-4.4) on the storm shape where the preemptors may use only some
    nodes (a nodeSelector on the pool listed second, so their rows are not the node
    indexes): the reach test and the rotation from the offset on the eligible rows give
    the Python steps' log and records, as on a cluster whose every node is eligible
    (``spare`` 0: the arrays are read without a gather)."""
    import sys
    from pathlib import Path

    sys.path.insert(0, str(Path(__file__).resolve().parents[2] / "bench"))
    from bench_scheduler_perf import LOW_PODS_PER_NODE, perf_spec

    monkeypatch.setattr(fast_preemption, "FEW", 0)
    monkeypatch.setattr(fast_preemption, "ALIKE_MIN", 0)
    data = perf_spec(90, 90)
    pool = data["cluster"]["nodePools"][0]
    pool["labels"] = {"pool": "a"}
    if spare:
        data["cluster"]["nodePools"].insert(0, {**pool, "name": "spare", "count": spare})
        del data["cluster"]["nodePools"][0]["labels"]
        data["workloads"][0]["members"] += spare * LOW_PODS_PER_NODE
        data["initialState"] += [
            {"workload": "low", "node": f"spare-{i}", "member": 360 + 4 * i + j}
            for i in range(spare)
            for j in range(LOW_PODS_PER_NODE)
        ]
    data["workloads"][1]["nodeSelector"] = {"pool": "a"}
    spec = sc.parse_spec(data)
    with python_decisions():
        engine = Engine(resolve_variant(spec, "default"), seed=5, explain=True)
        reference, reference_records = engine.run(), engine.decisions()
    engine = Engine(resolve_variant(spec, "default"), seed=5, explain=True)
    fast, records = engine.run(), engine.decisions()
    assert fast == reference
    assert records == reference_records
    preempted = {e.node for e in fast if e.reason == "Preempted"}
    assert len(preempted) == 90
    assert all(node.startswith("node-") for node in preempted)


@pytest.mark.parametrize("seed", [1, 2, 3])
def test_storm_with_start_times_per_node_gives_the_python_log_and_records(
    seed: int, monkeypatch: pytest.MonkeyPatch
) -> None:
    """Differential (§4.4 rule 5) on the storm shape where the full nodes share one
    signature (the same pods in the same MoreImportantPod order) but not their start
    times: the one reprieve broadcast to every row must still read each row's own start
    times, so the node rule 5 picks, the log and the records are the Python steps'."""
    import sys
    from pathlib import Path

    sys.path.insert(0, str(Path(__file__).resolve().parents[2] / "bench"))
    from bench_scheduler_perf import LOW_PODS_PER_NODE, perf_spec

    monkeypatch.setattr(fast_preemption, "FEW", 0)
    monkeypatch.setattr(fast_preemption, "ALIKE_MIN", 0)
    rng = random.Random(seed)
    data = perf_spec(150, 60)
    for entry in data["initialState"]:  # the same order on every node, not the same times
        member = entry["member"] % LOW_PODS_PER_NODE
        entry["startedAt"] = round(-1.0 - 10 * member - rng.uniform(0, 5), 3)
    spec = sc.parse_spec(data)
    with python_decisions():
        engine = Engine(resolve_variant(spec, "default"), seed=seed, explain=True)
        reference, reference_records = engine.run(), engine.decisions()
    engine = Engine(resolve_variant(spec, "default"), seed=seed, explain=True)
    fast, records = engine.run(), engine.decisions()
    assert fast == reference
    assert records == reference_records
    rules = {d.rule for d in records if d.kind == "Preemption"}
    assert "latest start time of the highest-priority victims" in rules


def test_storm_of_mixed_preemptors_gives_the_python_log_and_records(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    """Differential (§4.3) on a storm whose preemptors differ in request and priority:
    the reprieve kept per (signature, need, priority) for rows alike must not serve one
    preemptor the victims of another (1.2 CPU needs one victim, 3 CPU three), so the log
    and the records are the Python steps'."""
    import sys
    from pathlib import Path

    sys.path.insert(0, str(Path(__file__).resolve().parents[2] / "bench"))
    from bench_scheduler_perf import perf_spec

    monkeypatch.setattr(fast_preemption, "FEW", 0)
    monkeypatch.setattr(fast_preemption, "ALIKE_MIN", 0)
    data = perf_spec(200, 40)
    data["priorityClasses"].append({"name": "top", "value": 20})
    data["workloads"] += [
        {**data["workloads"][1], "name": "small", "cpu": 1.2},
        {**data["workloads"][1], "name": "urgent", "priorityClassName": "top", "cpu": 2.1},
    ]
    spec = sc.parse_spec(data)
    with python_decisions():
        engine = Engine(resolve_variant(spec, "default"), seed=4, explain=True)
        reference, reference_records = engine.run(), engine.decisions()
    engine = Engine(resolve_variant(spec, "default"), seed=4, explain=True)
    fast, records = engine.run(), engine.decisions()
    assert fast == reference
    assert records == reference_records
    counts = {len(d.victims) for d in records if d.kind == "Preemption"}
    assert {1, 2, 3} <= counts


def test_cohorts_keep_members_in_seq_order_through_joins_and_splits() -> None:
    """A cohort's members stay in ``seq`` order (activeQ's order among equal queue fields)
    and unique when a few out-of-order members join (put in place one by one) or many
    do (sorted again when next looked at), and a split at an activeQ key gives exactly
    the members before the key back to the replay and the rest back to activeQ, with
    every pod's cohort index following it. Long cohorts take the in-place cut."""
    from scheduler_core.queue import INSORT_MAX, Cohort, SchedulingQueue

    rng = random.Random(14)
    for trial in range(300):
        queue = SchedulingQueue(1.0, 10.0)
        seqs = sorted(rng.sample(range(20_000), rng.randint(2, 400)))
        pods = [SimpleNamespace(seq=s, priority=5, gpus=1) for s in seqs]
        cohort = Cohort(("class",), pods[0], 1, 0.0, 0.0, 0.0)  # type: ignore[arg-type]
        cohort.pods = list(pods)
        cohort.base = dict.fromkeys(seqs, 0)
        joining = sorted(
            rng.sample(sorted(set(range(20_000)) - set(seqs)), rng.randint(1, 2 * INSORT_MAX)),
        )
        newcomers = [SimpleNamespace(seq=s, priority=5, gpus=1) for s in joining]
        cohort.base.update(dict.fromkeys(joining, 0))
        cohort.extend(newcomers)  # type: ignore[arg-type]
        expected = sorted(seqs + joining)
        members = cohort.members()
        assert [p.seq for p in members] == expected, trial
        for p in members:
            queue._where[p.seq] = cohort
        cut = rng.choice(expected[1:])  # some members on each side
        replayed = queue.split_before(cohort, (-5, 0.0, cut))
        assert [p.seq for p in replayed.members()] == [s for s in expected if s < cut], trial
        for s in expected:
            part = queue._where[s]
            assert (part is replayed) == (s < cut), (trial, s)
        back = queue._where[expected[-1]]
        assert [p.seq for p in back.members()] == [s for s in expected if s >= cut], trial
        assert len(replayed) + len(back) == len(expected)


# ---------------------------------------------------------------------- eligibility
def _eligibility_cluster(seed: int) -> dict[str, Any]:
    """Node pools that differ in every way the static filters look at (labels, taints,
    GPU model, capacity), and workloads that select on each."""
    rng = random.Random(seed)
    pools = []
    for i in range(rng.randint(3, 7)):
        pool: dict[str, Any] = {
            "name": f"p{i}",
            "count": rng.randint(1, 5),
            "gpus": rng.choice((0, 4, 8)),
            "cpu": rng.choice((16, 64)),
            "memory": rng.choice((64, 512)),
            "labels": {"zone": rng.choice("ab"), "tier": rng.choice(("spot", "on-demand"))},
            "gpuModel": rng.choice(("", "A100", "H100")),
        }
        if rng.random() < 0.4:
            pool["taints"] = [{"key": "dedicated", "value": rng.choice(("ml", "batch"))}]
        pools.append(pool)
    for gpus, cpu, memory in ((4, 64, 512), (8, 64, 512), (8, 16, 512), (8, 64, 64)):
        # alike in all but one of GPUs, CPU, memory
        pools.append(
            {
                "name": f"c{gpus}-{cpu}-{memory}",
                "count": 2,
                "gpus": gpus,
                "cpu": cpu,
                "memory": memory,
            }
        )
    for model in ("A100", "H100"):  # every request fits some node (the spec says so)
        pools.append(
            {
                "name": model.lower(),
                "count": 1,
                "gpus": 8,
                "cpu": 64,
                "memory": 512,
                "gpuModel": model,
            }
        )
    workloads = []
    for i in range(rng.randint(8, 20)):
        w: dict[str, Any] = {
            "name": f"w{i}",
            "gpus": rng.choice((0, 1, 4, 8)),
            "cpu": rng.choice((1, 32)),
            "memory": rng.choice((8, 128)),
            "arrival": 10 * i,
            "durationSeconds": 100,
        }
        if rng.random() < 0.5:
            w["nodeSelector"] = {rng.choice(("zone", "tier")): rng.choice(("a", "b", "spot"))}
        if rng.random() < 0.4:
            w["tolerations"] = [{"key": "dedicated", "value": rng.choice(("ml", "batch"))}]
        if rng.random() < 0.3 and w["gpus"]:
            w["gpuModels"] = rng.sample(["A100", "H100"], rng.randint(1, 2))
        workloads.append(w)
    return {
        "horizonSeconds": 500,
        "seed": seed,
        "cluster": {"nodePools": pools},
        "priorityClasses": [{"name": "low", "value": 10, "globalDefault": True}],
        "workloads": workloads,
    }


@pytest.mark.parametrize("seed", range(20))
def test_eligible_nodes_are_the_nodes_every_static_filter_passes(seed: int) -> None:
    """eligible_nodes runs the static filters once per kind of node (the nodes alike in
    all they read) instead of once per node: it must give every node that passes them,
    in node order, for every workload, also after nodes are cordoned, lost and
    restored (a new version of the cluster)."""
    spec = sc.parse_spec(_eligibility_cluster(seed))
    engine = Engine(resolve_variant(spec, "default"), seed=seed)
    cluster = engine.cluster
    rng = random.Random(seed)

    def check() -> None:
        for workload in engine.workloads:
            expected = [n for n in cluster.nodes if cluster.static_filter(workload, n).ok]
            nodes, where = cluster.eligible_nodes(workload)
            assert nodes == expected, (workload.name, nodes, expected)
            assert where == {n: i for i, n in enumerate(expected)}
            assert cluster.eligible_rows(workload).tolist() == [n.idx for n in expected]

    check()
    kinds, _ = cluster._node_kinds()
    assert len(kinds) < len(cluster.nodes) or len(cluster.nodes) <= len(spec.cluster.node_pools)
    for _ in range(3):
        for node in rng.sample(cluster.nodes, max(1, len(cluster.nodes) // 3)):
            cluster.set_schedulable(node, alive=rng.random() < 0.5, cordoned=rng.random() < 0.5)
        check()
    for node in cluster.nodes:
        cluster.set_schedulable(node, alive=True, cordoned=False)
    check()
