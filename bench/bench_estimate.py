"""Checks ``scheduler_core.estimate_cost`` against real runs. Not a test: run by hand.

    python bench/bench_estimate.py [--record] [--no-synthetic]

Each case (every preset, and two synthetic clusters) is simulated in a fresh process, so
its peak memory is its own; every variant and replication of the case runs, as a worker
would run them. Printed per case: the estimated and the actual events, seconds and peak
MB, and the ratio actual / estimate. ``--record`` writes the ratios into
bench/baselines.json (``estimate``): a ratio far from 1 means the coefficients in
``scheduler_core/estimate.py`` need re-measuring.
"""

from __future__ import annotations

import argparse
import json
import platform
import resource
import subprocess
import sys
import time
from pathlib import Path
from typing import Any

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

import scheduler_core as sc
from bench.workloads import cluster_spec

BASELINES = Path(__file__).with_name("baselines.json")
SYNTHETIC = {"synthetic-300": (300, 1500, 6 * 3600), "synthetic-1500": (1500, 8000, 6 * 3600)}


def _spec(case: str) -> sc.ExperimentSpec:
    if case in SYNTHETIC:
        nodes, pods, horizon = SYNTHETIC[case]
        return sc.parse_spec(cluster_spec(nodes=nodes, pods=pods, horizon=horizon))
    return sc.get_preset(case).spec()


def measure(case: str) -> dict[str, Any]:
    """Run in a child process: the actual cost of every replication of ``case``."""
    spec = _spec(case)
    started = time.perf_counter()
    events = most = 0
    for result in sc.run_experiment(spec):
        for replication in result.replications:
            events += len(replication.events)
            most = max(most, len(replication.events))
    return {
        "events": events,
        "events_per_replication": most,
        "seconds": time.perf_counter() - started,
        "peak_mb": resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024,
    }


def compare(case: str) -> dict[str, Any]:
    estimate = sc.estimate_cost(_spec(case))
    child = subprocess.run(
        [sys.executable, __file__, "--measure", case], check=True, capture_output=True, text=True
    )
    actual = json.loads(child.stdout)
    return {
        "estimated_events": estimate.events,
        "actual_events": actual["events"],
        "events_ratio": round(actual["events"] / max(1, estimate.events), 2),
        "estimated_s": round(estimate.seconds, 3),
        "actual_s": round(actual["seconds"], 3),
        "seconds_ratio": round(actual["seconds"] / max(1e-9, estimate.seconds), 2),
        "estimated_mb": round(estimate.memory_mb_per_replication),
        "actual_peak_mb": round(actual["peak_mb"]),
        "memory_ratio": round(actual["peak_mb"] / estimate.memory_mb_per_replication, 2),
    }


def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("--record", action="store_true")
    parser.add_argument("--no-synthetic", action="store_true")
    parser.add_argument("--measure", help=argparse.SUPPRESS)
    args = parser.parse_args()
    if args.measure:
        print(json.dumps(measure(args.measure)))
        return
    cases = [p.id for p in sc.list_presets()] + ([] if args.no_synthetic else list(SYNTHETIC))
    results = {}
    for case in cases:
        results[case] = compare(case)
        print(case, json.dumps(results[case]), flush=True)
    ratios = {
        key: [r[key] for r in results.values()]
        for key in ("events_ratio", "seconds_ratio", "memory_ratio")
    }
    summary = {key: {"min": min(v), "max": max(v)} for key, v in ratios.items()}
    print("summary", json.dumps(summary))
    if args.record:
        baselines = json.loads(BASELINES.read_text()) if BASELINES.exists() else {}
        baselines["estimate"] = {
            "cases": results,
            "ratios": summary,
            "python": platform.python_version(),
            "recorded": time.strftime("%Y-%m-%d"),
        }
        BASELINES.write_text(json.dumps(baselines, indent=2, sort_keys=True) + "\n")


if __name__ == "__main__":
    main()
