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
    pods.append(SimpleNamespace(workload="w", member=n - 1))   # a member twice
    pods.append(SimpleNamespace(workload="v", member=None))
    pods.append(SimpleNamespace(workload="v", member=None))    # more pods than members
    spec = SimpleNamespace(initial_state=pods)
    workloads = {"w": SimpleNamespace(members=n + 1), "v": SimpleNamespace(members=1)}
    started = time.process_time()
    errors = list(_initial_count_errors(spec, workloads))  # type: ignore[arg-type]
    elapsed = time.process_time() - started
    assert [e["path"] for e in errors] == [f"initialState[{n}].member",
                                           f"initialState[{n + 2}].workload"]
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
    classes = [{"name": "low", "value": 10, "globalDefault": True}, {"name": "mid", "value": 100},
               {"name": "high", "value": 1000},
               {"name": "polite", "value": 500, "preemptionPolicy": "Never"}]
    workloads = []
    for i in range(rng.randint(30, 90)):
        w: dict[str, Any] = {
            "name": f"w{i}", "gpus": rng.choice((1, 1, 2, 4, 8)),
            "priorityClassName": rng.choice(("low", "low", "mid", "high", "polite")),
            "arrival": round(rng.uniform(0, 1500), 1),
            "durationSeconds": rng.choice((60, 300, 900, 2400)),
            "terminationGracePeriodSeconds": rng.choice((0, 30)),
            "controller": {"kind": rng.choice(("none", "job", "deployment"))}}
        if rng.random() < 0.15:
            w["members"] = 2
            w["pdb"] = {"minAvailable": 1}
        workloads.append(w)
    workloads.append({"name": "gang", "members": 3, "gpus": 2, "arrival": 400,
                      "priorityClassName": "high", "durationSeconds": 600,
                      "podGroup": {"minCount": 3}})
    return {"horizonSeconds": 2400, "seed": seed,
            "cluster": {"nodePools": [{"name": "gpu", "count": nodes, "gpus": 8}]},
            "priorityClasses": classes, "workloads": workloads,
            "policy": {"preemption": policy}}


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
    return {"horizonSeconds": horizon,
            "cluster": {"nodePools": [{"name": "gpu", "count": 10, "gpus": 8}]},
            "priorityClasses": [{"name": "low", "value": 10, "globalDefault": True},
                                {"name": "high", "value": 1000}],
            "workloads": [{"name": f"w{i}", "gpus": rng.choice((1, 2, 4, 8)),
                           "priorityClassName": rng.choice(("low", "low", "high")),
                           "arrival": round(rng.uniform(0, 0.8 * horizon), 1),
                           "durationSeconds": 600} for i in range(pods)],
            "policy": {"preemption": policy}}


@pytest.mark.parametrize("policy", ["none", "pod"])
def test_doomed_retries_grow_linearly_with_the_backlog(policy: str) -> None:
    """Every release wakes the whole pool; one by one, 4x the pods meant ~16x the pops.
    With twins replayed as a class, the pods handled one by one grow with the pods."""
    small, large = _popped(400, policy), _popped(1600, policy)
    assert large < 6 * small, (small, large)
