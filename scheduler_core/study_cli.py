"""``python -m scheduler_core placement-study``: the FGD paper's packing run from the shell.

    python -m scheduler_core placement-study --nodes openb_node_list_gpu_node.csv \\
        --pods openb_pod_list_default.csv --policy FGD,BestFit --seeds 42-51 [--load 130]
        [--json]

Prints, per policy, the mean GPU allocation ratio at the asked arrived load over the
seeds (with its spread and each seed's value); ``--json`` prints every run's curve (the
allocation ratio at every 1 % of arrived load) instead. Bad input is one line naming the
file, row and field, and exit status 2.
"""

from __future__ import annotations

import argparse
import json
import statistics
from typing import Any

from scheduler_core.placement_study import StudyInputError, StudyRun, load_openb_study, run_study
from scheduler_core.plugins.gpu_scoring import PAPER_POLICIES, make_policy, policy_names

MAX_SEEDS = 100


def register(sub: Any) -> None:
    """Add the ``placement-study`` command to the CLI's subparsers."""
    parser = sub.add_parser(
        "placement-study",
        help="time-less packing study (FGD paper): allocation vs arrived load per policy",
        description=__doc__,
        formatter_class=argparse.RawDescriptionHelpFormatter,
    )
    parser.add_argument("--nodes", required=True, help="openb node list (CSV)")
    parser.add_argument("--pods", required=True, help="openb pod list (CSV)")
    parser.add_argument(
        "--policy",
        default=",".join(PAPER_POLICIES),
        help=f"comma-separated, from: {', '.join(policy_names())}",
    )
    parser.add_argument("--seeds", default="42", help="replications: 42, 42,43 or 42-51")
    parser.add_argument("--load", type=float, default=130.0, help="arrived load, %% of GPUs")
    parser.add_argument("--json", action="store_true", help="every run's curve as JSON")
    parser.set_defaults(handler=_study)


def parse_seeds(text: str) -> list[int]:
    """``42``, ``42,43`` or ``42-51``; at most 100 replications."""
    try:
        if "-" in text.strip("-"):
            low, high = (int(x) for x in text.split("-", 1))
            seeds = list(range(low, high + 1))
        else:
            seeds = [int(x) for x in text.split(",")]
    except ValueError:
        raise StudyInputError(f"--seeds: '{text}' is not 42, 42,43 or 42-51") from None
    if not seeds or len(seeds) > MAX_SEEDS or min(seeds) < 0:
        raise StudyInputError(f"--seeds: give 1 to {MAX_SEEDS} seeds, none negative")
    return seeds


def _study(args: argparse.Namespace) -> int:
    policies = [p.strip() for p in args.policy.split(",") if p.strip()]
    for policy in policies:
        make_policy(policy)  # an unknown name fails before any run
    seeds = parse_seeds(args.seeds)
    study = load_openb_study(args.nodes, args.pods, args.load)
    runs = [run_study(study, policy, seed) for policy in policies for seed in seeds]
    print(json.dumps(_document(runs), indent=1) if args.json else _table(runs, args.load))
    return 0


def _document(runs: list[StudyRun]) -> dict[str, Any]:
    return {
        "runs": [
            {
                "policy": r.policy,
                "seed": r.seed,
                "pods": r.pods,
                "failed": r.failed,
                "curve": r.curve(),
            }
            for r in runs
        ]
    }


def _table(runs: list[StudyRun], load: float) -> str:
    at = int(load)
    lines = [f"GPU allocation ratio (%) at {at} % arrived load", "policy\tmean\tsd\tper seed"]
    for policy in dict.fromkeys(r.policy for r in runs):
        values = [r.curve().get(at, r.final_allocation) for r in runs if r.policy == policy]
        spread = statistics.pstdev(values) if len(values) > 1 else 0.0
        each = " ".join(f"{v:.2f}" for v in values)
        lines.append(f"{policy}\t{statistics.fmean(values):.2f}\t{spread:.2f}\t{each}")
    return "\n".join(lines)
