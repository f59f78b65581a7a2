"""The scheduler_perf preemption workloads (bench/bench_scheduler_perf.py) at small scale:
the shape upstream's performance-config.yaml gives them, and the same outcome from the
array path as from the Python reference (issue #14)."""

from __future__ import annotations

import pytest

import scheduler_core as sc
from bench.bench_scheduler_perf import check, outcome, perf_spec, run
from scheduler_core.engine import Engine
from scheduler_core.plugins.default_preemption import DefaultPreemption
from scheduler_core.spec import resolve_variant


@pytest.mark.parametrize(
    ("nodes", "preemptors", "measured", "churn"),
    [(20, 20, 0, 0.0), (80, 80, 0, 0.0), (80, 0, 80, 2.0)],
    ids=["storm-20", "storm-80", "churn-80"],
)
def test_every_preemptor_evicts_exactly_three_low_pods(
    nodes: int, preemptors: int, measured: int, churn: float
) -> None:
    """PreemptionAsync: 4 low pods of 900m on a 4-CPU node, a preemptor of 3 CPU. The
    fewest victims that make room are 3 (0.4 + 2 x 0.9 < 3 <= 0.4 + 3 x 0.9), and
    SelectVictimsOnNode's reprieve puts the 4th back; every preemptor gets a node of its
    own and binds once its victims are gone (grace 0)."""
    _, log = run(sc.parse_spec(perf_spec(nodes, preemptors, measured, churn)))
    counts = outcome(log)
    check(counts)
    assert counts["preemptors"] == preemptors + int(churn / 0.2)
    assert counts["victims"] == 3 * counts["preemptors"]
    assert counts["measured_scheduled"] == measured


def test_array_decisions_on_a_storm_match_the_python_steps() -> None:
    """Differential on the storm (100 nodes: above the sizes where the arrays hand over to
    Python): claims of thousands of nominations as arrays, the reach pre-filter and the
    any-node-fits test give the reference's log, event for event."""
    spec = sc.parse_spec(perf_spec(100, 100))
    fast = Engine(resolve_variant(spec, "default"), seed=3, explain=False).run()
    DefaultPreemption.use_arrays = False
    try:
        reference = Engine(resolve_variant(spec, "default"), seed=3, explain=False).run()
    finally:
        DefaultPreemption.use_arrays = True
    assert fast == reference
    assert sum(1 for e in fast if e.reason == "VictimsSelected") == 100
