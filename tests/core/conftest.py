"""Shared helpers for the fidelity tests (test_fidelity_*.py): build a small scenario,
run it, and read its event log.

Everything here is exposed through the ``lab`` fixture, so the test modules never import
this file. Scenarios are plain spec mappings (camelCase, as users write them); workloads
default to bare pods (``controller: none``) with a token CPU/memory request, so that GPUs
are the only resource that matters unless a test says otherwise.
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping
from dataclasses import dataclass
from typing import Any

import pytest

import scheduler_core as sc
from scheduler_core import events as ev
from scheduler_core.engine import Engine
from scheduler_core.events import Event

WORKLOAD_DEFAULTS: dict[str, Any] = {"controller": {"kind": "none"}, "cpu": 1, "memory": 1}


@dataclass
class Outcome:
    """The event log of one run (and the engine, to inspect its final state)."""

    events: list[Event]
    engine: Engine

    def of(self, reason: str, pod: str | None = None) -> list[Event]:
        return [e for e in self.events if e.reason == reason and (pod is None or e.pod == pod)]

    def scheduled(self, pod: str) -> tuple[float, str] | None:
        """(time, node) of the pod's first binding, or None if it was never bound."""
        hits = self.of(ev.SCHEDULED, pod)
        return (hits[0].time, hits[0].node) if hits else None

    def bindings(self) -> dict[str, tuple[float, str]]:
        return {e.pod: (e.time, e.node) for e in self.of(ev.SCHEDULED)}

    def preempted(self) -> list[tuple[float, str, str, str]]:
        """Every Preempted event as (time, victim, node, preemptor)."""
        return [(e.time, e.pod, e.node, e.related) for e in self.of(ev.PREEMPTED)]

    def victims_of(self, preemptor: str) -> list[str]:
        """Victims in the order they were evicted for ``preemptor`` (all its decisions)."""
        return [e.pod for e in self.of(ev.PREEMPTED) if e.related == preemptor]

    def decisions(self, preemptor: str) -> list[tuple[float, str, list[str]]]:
        """Each VictimsSelected of ``preemptor``: (time, node, victims as listed)."""
        return [
            (e.time, e.node, e.message.split(", ") if e.message else [])
            for e in self.of(ev.VICTIMS_SELECTED, preemptor)
        ]

    def time_of(self, reason: str, pod: str) -> float:
        hits = self.of(reason, pod)
        assert hits, f"no {reason} event for {pod}"
        return hits[0].time

    def pod(self, name: str) -> Any:
        """The engine's runtime Pod object (final state)."""
        for workload in self.engine.workloads:
            for pod in workload.slots:
                if pod is not None and pod.name == name:
                    return pod
        raise KeyError(name)


def _classes(classes: Mapping[str, int] | Iterable[Mapping[str, Any]]) -> list[dict[str, Any]]:
    if isinstance(classes, Mapping):
        return [{"name": name, "value": value} for name, value in classes.items()]
    return [dict(c) for c in classes]


def _initial(item: tuple | Mapping[str, Any]) -> dict[str, Any]:
    """``(workload, node, startedAt[, member])`` or a mapping."""
    if isinstance(item, Mapping):
        return dict(item)
    doc = {"workload": item[0], "node": item[1], "startedAt": item[2]}
    if len(item) > 3:
        doc["member"] = item[3]
    return doc


def _node(item: str | tuple | Mapping[str, Any]) -> dict[str, Any]:
    """``"name"`` (8 GPUs), ``(name, gpus)`` or a mapping."""
    if isinstance(item, str):
        return {"name": item}
    if isinstance(item, tuple):
        return {"name": item[0], "gpus": item[1]}
    return dict(item)


class Lab:
    """Builds scenario mappings and runs them through the public API or the engine."""

    def doc(
        self,
        *,
        nodes: Iterable[Any],
        workloads: Iterable[Mapping[str, Any]],
        classes: Mapping[str, int] | Iterable[Mapping[str, Any]] = (),
        initial: Iterable[Any] = (),
        policy: Mapping[str, Any] | None = None,
        horizon: float = 600.0,
        events: Iterable[Mapping[str, Any]] = (),
        seed: int = 0,
    ) -> dict[str, Any]:
        return {
            "horizonSeconds": horizon,
            "seed": seed,
            "cluster": {"nodes": [_node(n) for n in nodes]},
            "priorityClasses": _classes(classes),
            "workloads": [{**WORKLOAD_DEFAULTS, **w} for w in workloads],
            "initialState": [_initial(i) for i in initial],
            "events": [dict(e) for e in events],
            "policy": dict(policy or {}),
        }

    def run(self, *, offset: int | None = None, **scenario: Any) -> Outcome:
        """Parse and simulate the "default" variant with seed 0. ``offset`` pins the
        DryRunPreemption start offset (§4.2: the random part, made an input)."""
        return self.run_doc(self.doc(**scenario), offset=offset)

    @staticmethod
    def run_doc(doc: Mapping[str, Any], *, offset: int | None = None, seed: int = 0) -> Outcome:
        spec = sc.parse_spec(doc)
        engine = Engine(sc.resolve_variant(spec, "default"), seed)
        if offset is not None:
            engine.random_offset = lambda n: offset % n  # type: ignore[method-assign]
        log = engine.run()
        return Outcome(log, engine)


@pytest.fixture
def lab() -> Lab:
    return Lab()
