"""What decision records cost (issue #13: at most 10 % slower). Not a test.

    python bench/bench_decisions.py on|off [--case synthetic-1500|s8|s5]   # one process
    python bench/bench_decisions.py compare [--case ...] [--rounds 5]      # A/B in-process

``on``/``off`` simulate one case once with records on or off and print the wall seconds,
so two whole processes can be timed against each other (alternate them: A B A B ...).
``compare`` alternates on and off in one process and prints the median ratio on/off.
"""

from __future__ import annotations

import argparse
import statistics
import sys
import time
from pathlib import Path
from typing import Any

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

import scheduler_core as sc
from bench.workloads import cluster_spec
from scheduler_core.presets import get_preset


def _case(name: str) -> tuple[Any, str]:
    """(spec, variant): a large synthetic cluster with hundreds of preemptions and many
    failure streaks, or a preset with a failure-heavy log."""
    if name == "synthetic-1500":
        return sc.parse_spec(cluster_spec(nodes=1500, pods=8000, horizon=6 * 3600)), "default"
    if name == "s8":
        return get_preset("s8-gang-at-scale").spec(), "pod"
    if name == "s5":
        return get_preset("s5-loading-treadmill").spec(), "pdb"
    raise SystemExit(f"unknown case {name}")


def once(spec: Any, variant: str, explain: bool) -> tuple[float, int]:
    """CPU seconds of one simulation (the process's own time: on a shared machine it
    moves less than the wall clock), and how many decisions it recorded."""
    started = time.process_time()
    result = sc.simulate(spec, variant, explain=explain)
    return time.process_time() - started, len(result.decisions)


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__)
    parser.add_argument("mode", choices=["on", "off", "compare"])
    parser.add_argument("--case", default="synthetic-1500")
    parser.add_argument("--rounds", type=int, default=5)
    args = parser.parse_args()
    spec, variant = _case(args.case)
    if args.mode != "compare":
        seconds, decisions = once(spec, variant, args.mode == "on")
        print(f"{args.case} records {args.mode}: {seconds:.3f} cpu s, {decisions} decisions")
        return 0
    once(spec, variant, True)  # warm-up
    ratios, on_s, off_s = [], [], []
    for _ in range(args.rounds):
        a, decisions = once(spec, variant, True)
        b, _ = once(spec, variant, False)
        on_s.append(a)
        off_s.append(b)
        ratios.append(a / b)
    print(
        f"{args.case}: {decisions} decisions; on {statistics.median(on_s):.3f} cpu s, "
        f"off {statistics.median(off_s):.3f} cpu s, median ratio on/off "
        f"{statistics.median(ratios):.3f} (min {min(ratios):.3f}, max {max(ratios):.3f})"
    )
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
