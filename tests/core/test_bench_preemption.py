"""The growth benchmark's prefilled shape (issue #14's "10,000 nodes x 10k pods" row) is
what it claims to be: every GPU held at the start by a pod below every arrival, so the
arrivals preempt under a preempting policy and wait under ``none``."""

from __future__ import annotations

import scheduler_core as sc
from bench.bench_preemption import full_cluster


def test_prefilled_cluster_starts_full_and_arrivals_preempt() -> None:
    spec = full_cluster(10, 60, "pod", prefilled=True)
    filler = next(w for w in spec.workloads if w.name == "filler")
    assert filler.members == 10 * 8
    assert len(spec.initial_state) == 10 * 8
    classes = {p.name: p.value for p in spec.priority_classes}
    arriving = [w for w in spec.workloads if w.name != "filler"]
    assert all(classes[w.priority_class_name or "batch"] > classes["filler"] for w in arriving)

    result = sc.simulate(spec, "default")
    assert any(e.reason == "VictimsSelected" for e in result.events)

    waiting = sc.simulate(full_cluster(10, 60, "none", prefilled=True), "default")
    assert not any(e.reason == "VictimsSelected" for e in waiting.events)


def test_unfilled_cluster_has_no_initial_state() -> None:
    assert not full_cluster(10, 60, "pod").initial_state
