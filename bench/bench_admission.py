"""The cost of Kueue admission under pressure. Not a test: run by hand.

    python bench/bench_admission.py [--workloads N] [--record]

Four ClusterQueues in one cohort, BestEffortFIFO, preemption within the queue and across
the cohort, N workloads arriving every 3 s: every waiting workload is retried at every
admission pass, each retry runs the flavor assigner and, when it does not fit, a
preemption search. Three shapes: GPUs alone with classic preemption, the same with fair
sharing, and GPUs and CPU in two flavors. Printed per shape: events and seconds;
``--record`` writes them into bench/baselines.json (``admission``). The machine is
shared: compare figures from the same session only.
"""

from __future__ import annotations

import argparse
import json
import platform
import sys
import time
from pathlib import Path
from typing import Any

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

import scheduler_core as sc

BASELINES = Path(__file__).with_name("baselines.json")


def _queue(j: int, shape: str) -> dict[str, Any]:
    queue: dict[str, Any] = {
        "name": f"q{j}",
        "cohort": "c",
        "orderBy": "priority",
        "queueingStrategy": "BestEffortFIFO",
        "preemption": {"withinClusterQueue": "LowerPriority", "reclaimWithinCohort": "Any"},
    }
    if shape == "flavors":
        queue["resourceGroups"] = [
            {
                "coveredResources": ["gpus", "cpu"],
                "flavors": [
                    {
                        "name": f,
                        "resources": [
                            {"name": "gpus", "nominalQuota": 8},
                            {"name": "cpu", "nominalQuota": 64},
                        ],
                    }
                    for f in ("on-demand", "spot")
                ],
            }
        ]
    else:
        queue["nominalGpus"] = 16
    return queue


def spec(shape: str, workloads: int) -> sc.ExperimentSpec:
    doc: dict[str, Any] = {
        "horizonSeconds": 20000,
        "cluster": {"nodePools": [{"name": "g", "count": 8, "gpus": 8, "cpu": 128}]},
        "priorityClasses": [{"name": f"p{i}", "value": i} for i in range(5)],
        "queues": [_queue(j, shape) for j in range(4)],
        "workloads": [
            {
                "name": f"w{i}",
                "gpus": 1 + i % 4,
                "cpu": 4,
                "queue": f"q{i % 4}",
                "arrival": i * 3,
                "durationSeconds": 600,
                "priorityClassName": f"p{i % 5}",
            }
            for i in range(workloads)
        ],
    }
    if shape == "fair":
        doc["fairSharing"] = {}
    return sc.parse_spec(doc)


def measure(shape: str, workloads: int) -> dict[str, Any]:
    started = time.perf_counter()
    result = sc.simulate(spec(shape, workloads), "default")
    return {"events": len(result.events), "seconds": round(time.perf_counter() - started, 2)}


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--workloads", type=int, default=150)
    parser.add_argument("--record", action="store_true")
    args = parser.parse_args()
    figures = {shape: measure(shape, args.workloads) for shape in ("classic", "fair", "flavors")}
    for shape, row in figures.items():
        print(f"{shape:8} {row['events']:>7} events {row['seconds']:>8.2f} s")
    if args.record:
        baselines = json.loads(BASELINES.read_text()) if BASELINES.exists() else {}
        baselines["admission"] = {
            "workloads": args.workloads,
            "python": platform.python_version(),
            "recorded": time.strftime("%Y-%m-%d"),
            **figures,
        }
        BASELINES.write_text(json.dumps(baselines, indent=2, sort_keys=True) + "\n")


if __name__ == "__main__":
    main()
