"""Scheduler-core benchmarks (issue #2 §4). Not tests: run by hand or with `make bench`.

    python bench/bench_core.py [synthetic-1500|large-10k|decision|all] [--record]

Prints wall seconds, events/s and peak memory; ``--record`` writes them into
bench/baselines.json so a change to the core can be compared before and after.
"""

from __future__ import annotations

import argparse
import json
import platform
import resource
import sys
import time
from pathlib import Path
from typing import Any

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

import scheduler_core as sc
from bench.workloads import cluster_spec
from scheduler_core.engine import Engine
from scheduler_core.spec import resolve_variant

BASELINES = Path(__file__).with_name("baselines.json")


def _peak_mb() -> float:
    return resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024


def bench_simulation(nodes: int, pods: int, horizon: float) -> dict[str, Any]:
    """Parse, simulate and compute metrics for one variant under `pod` preemption."""
    started = time.perf_counter()
    spec = sc.parse_spec(cluster_spec(nodes=nodes, pods=pods, horizon=horizon))
    parsed = time.perf_counter()
    result = sc.simulate(spec, "default")
    done = time.perf_counter()
    simulate_s = done - parsed
    return {
        "nodes": nodes,
        "pods": pods,
        "parse_s": round(parsed - started, 3),
        "simulate_s": round(simulate_s, 3),
        "engine_events": result.events_processed,
        "log_events": len(result.events),
        "engine_events_per_s": round(result.events_processed / simulate_s),
        "log_events_per_s": round(len(result.events) / simulate_s),
        "preemptions": sum(1 for e in result.events if e.reason == "VictimsSelected"),
        "peak_mb": round(_peak_mb()),
    }


def bench_decision(nodes: int = 1500, repeats: int = 200) -> dict[str, Any]:
    """One DefaultPreemption decision on a full 1,500-node cluster: candidates + node choice,
    without actuation, so every repeat sees the same state."""
    spec = sc.parse_spec(cluster_spec(nodes=nodes, pods=nodes * 4, horizon=3600, load=3.0))
    engine = Engine(resolve_variant(spec, "default"), seed=1)
    engine.horizon = 1800
    engine.run()
    policy = engine.preemption
    preemptor = next(
        p
        for w in engine.workloads
        for p in w.slots
        if p is not None and p.priority == 1000 and p.gpus == 8
    )
    preemptor.nominated = None
    held = sum(1 for n in engine.cluster.nodes for _ in n.pods)
    started = time.perf_counter()
    found = 0
    for _ in range(repeats):
        candidates = policy.find_candidates(engine, preemptor)
        found += len(candidates)
    per = (time.perf_counter() - started) / repeats
    return {
        "nodes": nodes,
        "pods_on_nodes": held,
        "candidates_per_decision": found // repeats,
        "decision_ms": round(per * 1000, 3),
    }


def bench_group_decision(
    nodes: int = 10_000, running: int = 60_000, members: int = 1000
) -> dict[str, Any]:
    """One workload-aware decision: a 1,000-member group of 8-GPU pods on a cluster whose
    nodes each hold six 1-GPU low-priority pods, so no member fits without eviction."""
    per_node = running // nodes
    spec = sc.parse_spec(
        {
            "horizonSeconds": 60,
            "cluster": {"nodePools": [{"name": "gpu", "count": nodes, "gpus": 8}]},
            "priorityClasses": [
                {"name": "low", "value": 1, "globalDefault": True},
                {"name": "high", "value": 1000},
            ],
            "workloads": [
                {"name": "background", "members": running, "gpus": 1, "durationSeconds": 36000},
                {
                    "name": "group",
                    "members": members,
                    "gpus": 8,
                    "arrival": 10,
                    "priorityClassName": "high",
                    "recovery": {"model": "synchronous"},
                    "podGroup": {"minCount": members},
                },
            ],
            "initialState": [
                {
                    "workload": "background",
                    "node": f"gpu-{i // per_node}",
                    "startedAt": -100,
                    "member": i,
                }
                for i in range(running)
            ],
            "policy": {"preemption": "workload-aware", "placement": "LeastAllocated"},
        }
    )
    engine = Engine(resolve_variant(spec, "default"), seed=1)
    timings: list[float] = []
    decide = engine.preemption.post_filter_group

    def timed(*args: Any) -> Any:
        started = time.perf_counter()
        status = decide(*args)
        timings.append(time.perf_counter() - started)
        return status

    engine.preemption.post_filter_group = timed  # type: ignore[method-assign]
    engine.run()
    victims = sum(1 for e in engine.log if e.reason == "Preempted")
    return {
        "nodes": nodes,
        "running_pods": running,
        "members": members,
        "decision_s": round(timings[0], 3),
        "victims": victims,
        "peak_mb": round(_peak_mb()),
    }


CASES = {
    "synthetic-1500": lambda: bench_simulation(1500, 8000, 6 * 3600),
    "large-10k": lambda: bench_simulation(10_000, 100_000, 6 * 3600),
    "decision": bench_decision,
    "group-decision": bench_group_decision,
}


def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("case", nargs="?", default="synthetic-1500", choices=[*CASES, "all"])
    parser.add_argument("--record", action="store_true")
    args = parser.parse_args()
    cases = list(CASES) if args.case == "all" else [args.case]
    results = {}
    for case in cases:
        results[case] = CASES[case]()
        print(case, json.dumps(results[case]), flush=True)
    if args.record:
        baselines = json.loads(BASELINES.read_text()) if BASELINES.exists() else {}
        for case, figures in results.items():
            baselines[case] = {
                **figures,
                "python": platform.python_version(),
                "recorded": time.strftime("%Y-%m-%d"),
            }
        BASELINES.write_text(json.dumps(baselines, indent=2, sort_keys=True) + "\n")


if __name__ == "__main__":
    main()
