"""kube-scheduler's own preemption benchmarks, rebuilt on our engine (issue #14).

    python bench/bench_scheduler_perf.py [basic|storm|churn|all] [--nodes N] [--repeats 3]
                                         [--record]

The shapes come from upstream's
``test/integration/scheduler_perf/default_preemption/performance-config.yaml`` and its
templates (kubernetes/kubernetes):

- nodes: 4 CPU, 32 GiB, 110 pods, no GPUs (``node-default.yaml``);
- ``initPods`` low-priority pods (priority 0, 900m CPU, 500Mi, grace 0,
  ``pod-low-priority.yaml``): four per node, 3.6 of the 4 CPUs;
- preemptors (priority 10, 3 CPU, 500Mi, ``pod-high-priority.yaml``): each must evict
  exactly 3 of a node's 4 low pods (0.4 + 3 x 0.9 >= 3 > 0.4 + 2 x 0.9);
- measured small pods (100m CPU, 500Mi, ``pod-default.yaml``), always schedulable.

The cases:

- ``basic``: ``PreemptionBasic 1000Nodes`` (1,000 nodes, 4,000 low pods, 1,000
  preemptors created at once). Upstream sets no threshold for it.
- ``storm``: ``PreemptionAsync 5000Nodes`` played as a disruption experiment plays it:
  the 5,000 preemptors pending at once on 5,000 full nodes. The target is 2,850
  preemptors per CPU-second, 5x upstream's threshold of 570 pods/s.
- ``churn``: ``PreemptionAsync 5000Nodes`` as upstream runs it: 5,000 measured small
  pods created at once while preemptors arrive every 200 ms; the figure is measured
  pods per CPU-second (upstream's threshold: 570 per second).

The low pods are the recorded cluster (``initialState``: bound at t=0, not measured).
A figure is ``count / (cpu_with - cpu_without)``: simulate CPU seconds
(``time.process_time``, spec parse excluded; no decision recorder, unless ``--explain``
as users run it) of the run minus the same run without the measured pods, each the
minimum of ``--repeats``. Every run checks
its outcome: every preemptor scheduled, one preemption each, exactly 3 victims each.
"""

from __future__ import annotations

import argparse
import json
import math
import platform
import sys
import time
from pathlib import Path
from typing import Any

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

import scheduler_core as sc
from scheduler_core import events as ev
from scheduler_core.engine import Engine
from scheduler_core.events import Event
from scheduler_core.spec import resolve_variant

BASELINES = Path(__file__).with_name("baselines.json")
UPSTREAM_THRESHOLD = 570
"""PreemptionAsync 5000Nodes' threshold in performance-config.yaml (pods per second)."""
TARGET = 5 * UPSTREAM_THRESHOLD
MI = 1 / 1024
"""One MiB in the spec's GiB."""
LOW_PODS_PER_NODE = 4
CHURN_INTERVAL = 0.2
"""intervalMilliseconds: 200 of the churn op."""
CASES = {
    "basic": {"nodes": 1000, "preemptors": 1000, "measured": 0},
    "storm": {"nodes": 5000, "preemptors": 5000, "measured": 0},
    "churn": {"nodes": 5000, "preemptors": 0, "measured": 5000},
}


def perf_spec(
    nodes: int, preemptors: int, measured: int = 0, churn_seconds: float = 0.0
) -> dict[str, Any]:
    """The scheduler_perf cluster: ``nodes`` full nodes, ``preemptors`` arriving at t=1
    at once, ``measured`` small pods at t=1, and churned preemptors every 200 ms over
    ``churn_seconds`` (one workload each, as the churn op creates one pod each time)."""
    low = nodes * LOW_PODS_PER_NODE
    workloads: list[dict[str, Any]] = [
        {
            "name": "low",
            "members": low,
            "gpus": 0,
            "cpu": 0.9,
            "memory": 500 * MI,
            "durationSeconds": 36000,
            "terminationGracePeriodSeconds": 0,
        }
    ]
    if preemptors:
        workloads.append(_preemptor("high", preemptors, arrival=1.0))
    for i in range(int(churn_seconds / CHURN_INTERVAL)):
        workloads.append(_preemptor(f"churn-{i}", 1, arrival=round(1.0 + i * CHURN_INTERVAL, 3)))
    if measured:
        workloads.append(
            {
                "name": "measured",
                "members": measured,
                "gpus": 0,
                "cpu": 0.1,
                "memory": 500 * MI,
                "arrival": 1.0,
                "durationSeconds": 36000,
            }
        )
    return {
        "name": f"scheduler-perf-{nodes}",
        "horizonSeconds": 30 + churn_seconds,
        "cluster": {
            "nodePools": [{"name": "node", "count": nodes, "gpus": 0, "cpu": 4, "memory": 32}]
        },
        "priorityClasses": [
            {"name": "default", "value": 0, "globalDefault": True},
            {"name": "high", "value": 10},
        ],
        "workloads": workloads,
        "initialState": [
            {
                "workload": "low",
                "node": f"node-{i // LOW_PODS_PER_NODE}",
                "member": i,
                "startedAt": -1.0 - i % LOW_PODS_PER_NODE,
            }
            for i in range(low)
        ],
        "policy": {"preemption": "pod"},
    }


def _preemptor(name: str, members: int, arrival: float) -> dict[str, Any]:
    return {
        "name": name,
        "members": members,
        "gpus": 0,
        "cpu": 3,
        "memory": 500 * MI,
        "priorityClassName": "high",
        "arrival": arrival,
        "durationSeconds": 36000,
    }


def run(spec: sc.ExperimentSpec, seed: int = 1, explain: bool = False) -> tuple[float, list[Event]]:
    """Simulate CPU seconds of one run (engine only; ``explain``: with the decision
    recorder, as ``simulate`` runs by default, its records built) and its log."""
    engine = Engine(resolve_variant(spec, "default"), seed=seed, explain=explain)
    started = time.process_time()
    log = engine.run()
    engine.decisions()
    return time.process_time() - started, log


def outcome(log: list[Event]) -> dict[str, int]:
    """What the run did, counted from its event log."""
    preemptors = {e.pod for e in log if e.pod and _preempting(e.workload)}
    selected = [e for e in log if e.reason == ev.VICTIMS_SELECTED]
    return {
        "preemptors": len(preemptors),
        "preemptors_scheduled": sum(
            1 for e in log if e.reason == ev.SCHEDULED and _preempting(e.workload)
        ),
        "preemptions": len(selected),
        "victims": sum(1 for e in log if e.reason == ev.PREEMPTED),
        "min_victims": min((int(e.value or 0) for e in selected), default=0),
        "max_victims": max((int(e.value or 0) for e in selected), default=0),
        "measured_scheduled": sum(
            1 for e in log if e.reason == ev.SCHEDULED and e.workload == "measured"
        ),
    }


def _preempting(workload: str) -> bool:
    return workload == "high" or workload.startswith("churn-")


def check(counts: dict[str, int]) -> None:
    """The benchmark's own assertions: every preemptor preempted once and got scheduled,
    with exactly 3 victims."""
    p = counts["preemptors"]
    assert counts["preemptors_scheduled"] == p, counts
    assert counts["preemptions"] == p, counts
    assert counts["victims"] == 3 * p, counts
    if p:
        assert counts["min_victims"] == counts["max_victims"] == 3, counts


def measure(case: str, nodes: int, repeats: int, explain: bool = False) -> dict[str, Any]:
    shape = CASES[case]
    scale = nodes / shape["nodes"]
    preemptors = round(shape["preemptors"] * scale)
    measured = round(shape["measured"] * scale)
    churn = 10.0 if case == "churn" else 0.0
    full = sc.parse_spec(perf_spec(nodes, preemptors, measured, churn))
    empty = sc.parse_spec(perf_spec(nodes, 0, 0, 0.0))
    with_cpu = without_cpu = math.inf
    log: list[Event] = []
    for _ in range(repeats):  # alternate, so both see the same machine load
        cpu, log = run(full, explain=explain)
        with_cpu = min(with_cpu, cpu)
        without_cpu = min(without_cpu, run(empty, explain=explain)[0])
    counts = outcome(log)
    check(counts)
    work = with_cpu - without_cpu
    counted = measured if case == "churn" else preemptors
    rate = counted / work if work > 0 else math.inf
    return {
        "nodes": nodes,
        "low_pods": nodes * LOW_PODS_PER_NODE,
        **counts,
        "cpu_s": round(with_cpu, 3),
        "setup_cpu_s": round(without_cpu, 3),
        "per_cpu_second": round(rate, 1),
        "counted": "measured pods" if case == "churn" else "preemptors",
        "ratio_to_upstream_threshold": round(rate / UPSTREAM_THRESHOLD, 2),
        "repeats": repeats,
        "explain": explain,
    }


def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("case", nargs="?", default="all", choices=[*CASES, "all"])
    parser.add_argument("--nodes", type=int, default=None)
    parser.add_argument("--repeats", type=int, default=3)
    parser.add_argument("--record", action="store_true")
    parser.add_argument(
        "--explain", action="store_true", help="with the decision recorder, as simulate runs"
    )
    args = parser.parse_args()
    figures = {}
    for case in CASES if args.case == "all" else [args.case]:
        figures[case] = measure(
            case, args.nodes or CASES[case]["nodes"], args.repeats, explain=args.explain
        )
        print(case, json.dumps(figures[case]), flush=True)
    if args.record:
        baselines = json.loads(BASELINES.read_text()) if BASELINES.exists() else {}
        key = "scheduler_perf_explain" if args.explain else "scheduler_perf"
        earlier = baselines.get(key, {})
        kept = earlier.get("cases", {})
        baselines[key] = {
            **earlier,  # what earlier sessions noted beside their cases stays
            "cases": {**kept, **figures},
            "upstream_threshold": UPSTREAM_THRESHOLD,
            "target_storm": TARGET,
            "python": platform.python_version(),
            "recorded": time.strftime("%Y-%m-%d"),
            "note": "per simulate CPU second (run minus setup), min of repeats, shared "
            "2-core machine (noisy)",
        }
        BASELINES.write_text(json.dumps(baselines, indent=2, sort_keys=True) + "\n")


if __name__ == "__main__":
    main()
