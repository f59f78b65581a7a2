"""A finished simulation leaves nothing alive (issue #14: ``Engine.release``).

An engine is one big reference cycle (its pods reach their workloads, applications and
the engine again), which the cyclic collector frees, except through a numpy object array:
numpy does not show the collector what such an array holds, so the node arrays' bound
pods and the array decisions' recorded victims kept every run alive for good. A worker
simulating replication after replication kept each one (about 215,000 objects on the
openb trace) and walked them all again on every full collection."""

from __future__ import annotations

import gc
import weakref
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from typing import Any

import pytest

import scheduler_core as sc
from bench.bench_scheduler_perf import perf_spec
from scheduler_core import engine as engine_module
from scheduler_core.decisions import PREEMPTION
from scheduler_core.engine import Engine
from scheduler_core.experiment import simulate
from tests.core.test_speed import no_pdb_cluster


@contextmanager
def _watched_engines() -> Iterator[list[weakref.ref[Engine]]]:
    """A weak reference to every engine made inside the block."""
    made: list[weakref.ref[Engine]] = []
    init = Engine.__init__

    def watched(self: Engine, *args: Any, **kw: Any) -> None:
        init(self, *args, **kw)
        made.append(weakref.ref(self))

    Engine.__init__ = watched  # type: ignore[method-assign]
    try:
        yield made
    finally:
        Engine.__init__ = init  # type: ignore[method-assign]


def _engines_left(
    spec: sc.ExperimentSpec, variant: str, read: Callable[[Any], None], **kwargs: Any
) -> int:
    """Simulate, ``read`` the result (its records name their victims from the pods the
    run held), drop it and collect: how many engines are still alive."""
    with _watched_engines() as made:
        result = simulate(spec, variant, 0, **kwargs)
    read(result)
    del result
    gc.collect()
    assert len(made) == 1
    return sum(ref() is not None for ref in made)


def _names_the_victims(result: Any) -> None:
    """Every preemption recorded names its candidates' victims: the preempted pods."""
    preempted = {e.pod for e in result.events if e.reason == "Preempted"}
    listed = [d for d in result.decisions if d.kind == PREEMPTION]
    assert preempted
    assert listed
    named = {v for d in listed for c in d.as_dict()["candidates"] for v in c["victims"]}
    assert preempted <= named


@pytest.mark.parametrize("explain", [True, False])
@pytest.mark.parametrize("policy", ["pod", "workload-aware", "checkpoint-aware"])
def test_a_run_decided_on_the_arrays_is_freed_once_done(policy: str, explain: bool) -> None:
    """Preemptions decided on the arrays (with and without their records, whose victims
    are object arrays): no engine outlives its result, and the records still name every
    victim after the run let go of its pods."""
    spec = sc.parse_spec({**no_pdb_cluster(3), "policy": {"preemption": policy}})

    def read(result: Any) -> None:
        if explain:
            _names_the_victims(result)
        else:
            assert any(e.reason == "Preempted" for e in result.events)

    assert _engines_left(spec, "default", read, explain=explain) == 0


def test_a_storm_s_engine_is_freed_with_its_records_kept() -> None:
    """The kube-scheduler storm's shape (every node alike, every decision on the arrays,
    many candidates per record): its records read in full after the run, then freed."""
    spec = sc.parse_spec(perf_spec(100, 100))
    assert _engines_left(spec, "default", _names_the_victims, explain=True) == 0


def test_a_run_that_fails_is_freed_too() -> None:
    """A run stopped by its event budget (SimulationLimitError) releases its engine."""
    spec = sc.parse_spec({**no_pdb_cluster(3), "policy": {"preemption": "pod"}})
    with _watched_engines() as made, pytest.raises(engine_module.SimulationLimitError):
        simulate(spec, "default", 0, max_events=50)
    gc.collect()
    assert made
    assert all(ref() is None for ref in made)


def test_the_metrics_and_the_timeline_leave_no_cyclic_garbage() -> None:
    """Reading a log into its metrics and its timeline builds one record per workload and
    one span per pod interval: they must be freed when dropped, not left to the cyclic
    collector (a worker pays its pass over them after every task). A reader whose
    dispatch table held its own bound methods pointed at itself, and took all of them
    into its cycle."""
    from scheduler_core import timeline
    from scheduler_core.experiment import workload_infos
    from scheduler_core.metrics import compute
    from scheduler_core.spec import resolve_variant

    spec = sc.get_preset("s6-checkpoint-frequency").spec()
    resolved = resolve_variant(spec, sc.variant_names(spec)[0])
    log = simulate(spec, resolved.name, 0).events
    infos = workload_infos(resolved.spec)
    gc.collect()
    was_enabled = gc.isenabled()
    gc.disable()
    try:
        metrics = compute(log, infos, horizon=resolved.spec.horizon_seconds, total_gpus=64.0)
        built = timeline.build(log, resolved.spec)
        assert metrics.workloads
        assert built.spans
        del metrics, built
        assert gc.collect() == 0
    finally:
        if was_enabled:
            gc.enable()


@pytest.mark.parametrize(
    "preset",
    [
        "s1-training-vs-shards",
        "s8-gang-at-scale",
        "s10-queue-priority",
        "s13-fleet-reliability",
        "s15-fair-sharing",
        "s16-shared-gpus",
    ],
)
def test_a_finished_run_is_freed_without_the_cyclic_collector(preset: str) -> None:
    """``Engine.release`` cuts the run's cycles (pods and their workloads' slots, pods
    and their nodes, applications and the engine, the engine and its components, the
    event heap), so a simulation leaves no cyclic garbage: a worker no longer pays a
    collector pass over a whole run after every task. Every variant, records on."""
    spec = sc.get_preset(preset).spec()
    simulate(spec, sc.variant_names(spec)[0], 0)  # anything cached on first use
    gc.collect()
    was_enabled = gc.isenabled()
    gc.disable()
    try:
        for variant in sc.variant_names(spec):
            result = simulate(spec, variant, 0)
            assert result.events
            del result
            assert gc.collect() == 0, variant
    finally:
        if was_enabled:
            gc.enable()


def test_release_twice_is_harmless() -> None:
    spec = sc.get_preset("s1-training-vs-shards").spec()
    engine = Engine(sc.resolve_variant(spec, sc.variant_names(spec)[0]), seed=0)
    engine.run()
    engine.release()
    engine.release()
    assert engine.events_processed > 0
