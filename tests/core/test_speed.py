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
