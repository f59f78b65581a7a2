"""Fleet-reliability benchmark (issue #17 §3). Not a test: run by hand.

    python bench/bench_failures.py [--variant NAME] [--repeat 3] [--planner] [--record]

Simulates each variant of the ``s13-fleet-reliability`` preset (2,048 x 8-GPU nodes, one
2,000-member synchronous job, 54 days, ~460 drawn node failures) in this one process, so
on one core, metrics included; prints the median wall seconds per variant against the
5 s target. ``--record`` merges the figures into bench/baselines.json under
``fleet_reliability``. ``--planner`` instead runs the whole ``s14-checkpoint-planner``
sweep (12 intervals x 200 replications) in this one process and records it under
``checkpoint_planner``: the workers' 60 s target is for the run spread over them.
"""

from __future__ import annotations

import argparse
import json
import platform
import resource
import statistics
import sys
import time
from pathlib import Path
from typing import Any

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

import scheduler_core as sc

BASELINES = Path(__file__).with_name("baselines.json")
PRESET = "s13-fleet-reliability"
PLANNER = "s14-checkpoint-planner"
TARGET_S = 5.0
PLANNER_TARGET_S = 60.0


def bench_variant(spec: sc.ExperimentSpec, variant: str, repeat: int) -> dict[str, Any]:
    """Median of ``repeat`` simulations of one variant, with what it simulated."""
    times = []
    result = None
    for _ in range(repeat):
        started = time.perf_counter()
        result = sc.simulate(spec, variant)
        times.append(time.perf_counter() - started)
    assert result is not None
    [record] = result.workloads
    return {
        "simulate_s_median": round(statistics.median(times), 3),
        "simulate_s_max": round(max(times), 3),
        "log_events": len(result.events),
        "interruptions": record.disruptions,
        "ettr": round(result.summary["ettr"] or 0, 4),
        "lost_work_gpu_hours": round(record.lost_work / 3600),
    }


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--variant", action="append", help="only this variant (repeatable)")
    parser.add_argument("--repeat", type=int, default=3)
    parser.add_argument("--planner", action="store_true", help="time the s14 sweep instead")
    parser.add_argument("--record", action="store_true", help="write bench/baselines.json")
    args = parser.parse_args()
    if args.planner:
        figures = bench_planner()
        if args.record:
            _record("checkpoint_planner", figures)
        return 0
    started = time.perf_counter()
    spec = sc.get_preset(PRESET).spec()
    parse_s = time.perf_counter() - started
    figures: dict[str, Any] = {"parse_s": round(parse_s, 3), "variants": {}}
    for name in args.variant or sc.variant_names(spec):
        figures["variants"][name] = row = bench_variant(spec, name, args.repeat)
        verdict = "within" if row["simulate_s_median"] <= TARGET_S else "ABOVE"
        print(
            f"{name}: {row['simulate_s_median']:.2f} s median of {args.repeat} "
            f"({verdict} the {TARGET_S:g} s target), {row['interruptions']} interruptions, "
            f"ETTR {row['ettr']:.3f}, {row['log_events']:,} log events"
        )
    figures["peak_mb"] = round(resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024)
    print(f"parse {parse_s:.2f} s, peak {figures['peak_mb']} MB")
    if args.record:
        _record("fleet_reliability", figures)
    return 0


def bench_planner() -> dict[str, Any]:
    """Every variant x replication of the planner, one process; the empirical optimum."""
    spec = sc.get_preset(PLANNER).spec()
    started = time.perf_counter()
    means: dict[str, float] = {}
    for name in sc.variant_names(spec):
        variant = sc.resolve_variant(spec, name)
        times = [
            sc.simulate(spec, variant, r).workloads[0].completion_time or spec.horizon_seconds
            for r in range(spec.replications)
        ]
        means[name] = statistics.fmean(times)
    seconds = time.perf_counter() - started
    simulations = len(means) * spec.replications
    best = min(means, key=means.__getitem__)
    print(
        f"{simulations:,} simulations in {seconds:.1f} s on one core "
        f"({1000 * seconds / simulations:.1f} ms each; target {PLANNER_TARGET_S:g} s on the "
        f"workers); empirical optimum {best}, mean completion {means[best] / 3600:.1f} h"
    )
    return {
        "simulations": simulations,
        "one_core_s": round(seconds, 1),
        "ms_per_simulation": round(1000 * seconds / simulations, 1),
        "optimum": best,
        "mean_completion_h": {k: round(v / 3600, 2) for k, v in means.items()},
    }


def _record(key: str, figures: dict[str, Any]) -> None:
    """Merge into baselines.json, keeping what other benchmarks recorded."""
    data = json.loads(BASELINES.read_text()) if BASELINES.exists() else {}
    data[key] = {
        **figures,
        "python": platform.python_version(),
        "machine": platform.machine(),
        "recorded": time.strftime("%Y-%m-%d"),
    }
    BASELINES.write_text(json.dumps(data, indent=2, sort_keys=True) + "\n")


if __name__ == "__main__":
    raise SystemExit(main())
