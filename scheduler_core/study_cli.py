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
from collections.abc import Callable, Sequence
from typing import Any

from scheduler_core.placement_study import (
    DEFAULT_STREAM,
    STREAMS,
    StudyInputError,
    StudyRun,
    load_openb_study,
    run_study,
)
from scheduler_core.plugins.gpu_scoring import PAPER_POLICIES, make_policy, policy_names
from scheduler_core.spec import ExperimentSpec, variant_names
from scheduler_core.study_spec import (
    policy_order,
    run_variant_study,
    study_record,
    study_seconds,
    study_seed,
    study_summary,
)

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
    parser.add_argument(
        "--stream",
        choices=STREAMS,
        default=DEFAULT_STREAM,
        help="go: the FGD simulator's own random stream for each seed (default); "
        "numpy: a numpy generator seeded with the seed",
    )
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
    runs = [
        run_study(study, policy, seed, stream=args.stream) for policy in policies for seed in seeds
    ]
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


# ----------------------------------------------------------------------------- `run` on a spec


def run_spec_study(
    spec: ExperimentSpec,
    *,
    seed: int | None = None,
    variants: Sequence[str] | None = None,
    as_json: bool = False,
    progress: Callable[[float], None] | None = None,
) -> str:
    """``run`` on a spec with ``placementStudy``: every variant's replications (seeds
    ``seed + r``), printed as the table above or, with ``--json``, every replication's
    record and each variant's summary (the numbers the web app stores)."""
    if seed is not None:
        spec = spec.model_copy(update={"seed": seed})
    names = [n for n in variant_names(spec) if not variants or n in variants]
    replications = list(range(spec.replications))
    total, done = len(names) * len(replications), 0
    records: dict[str, list[dict[str, Any]]] = {}

    def each(_replication: int, _run: StudyRun) -> None:
        nonlocal done
        done += 1
        if progress is not None:
            progress(done / total)

    for name in names:
        runs = run_variant_study(spec, name, replications, each=each)
        records[name] = [study_record(r) for r in runs]
    summaries = {name: study_summary(recs) for name, recs in records.items()}
    if as_json:
        document = {
            "experiment": spec.name,
            "placementStudy": spec.placement_study.model_dump(by_alias=True)
            if spec.placement_study
            else None,
            "variants": [
                {"name": n, "summary": summaries[n], "replications": records[n]} for n in names
            ],
        }
        return json.dumps(document, indent=1)
    at = spec.placement_study.arrived_load_percent if spec.placement_study else 130.0
    lines = [
        f"{spec.name}: GPU allocation ratio (%) at {at:g} % arrived load, "
        f"{len(replications)} seed(s) from {study_seed(spec, 0)}",
        "variant\tmean\t±95%\tsd\tfailed pods",
    ]
    for name in policy_order(summaries):
        s = summaries[name]["atLoad"]
        lines.append(f"{name}\t{s['mean']:.2f}\t{s['ci95']:.2f}\t{s['sd']:.2f}\t")
        lines[-1] += str(summaries[name]["failed"])
    return "\n".join(lines)


def describe_study_estimate(spec: ExperimentSpec) -> str:
    """``validate``'s cost line for a placement study."""
    runs = len(variant_names(spec)) * spec.replications
    return (
        f"estimate: placement study, {runs} run(s) (variants x seeds), "
        f"~{study_seconds(spec, runs):,.0f} worker seconds"
    )
