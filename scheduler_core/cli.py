"""`python -m scheduler_core`: list presets, validate a spec, run an experiment.

Bad input is one line on stderr naming the field, and exit status 2; never a traceback.
"""

from __future__ import annotations

import argparse
import json
import math
import sys
import time
from collections.abc import Sequence
from pathlib import Path
from typing import Any, TextIO

from scheduler_core.decisions import Decision
from scheduler_core.engine import SimulationLimitError
from scheduler_core.estimate import CostEstimate, estimate_cost
from scheduler_core.experiment import VariantResult, run_experiment
from scheduler_core.k8s.cli import register as register_export
from scheduler_core.limits import Limits
from scheduler_core.metric_registry import best_indexes, is_unserved, metric_info, registry_document
from scheduler_core.metrics import METRIC_NAMES
from scheduler_core.presets import get_preset, list_presets
from scheduler_core.spec import (
    MAX_SEED,
    ExperimentSpec,
    SpecError,
    load_document,
    parse_spec,
    spec_warnings,
    variant_names,
)
from scheduler_core.study_cli import describe_study_estimate, run_spec_study
from scheduler_core.study_cli import register as register_study
from scheduler_core.traces.cli import register as register_import

HEADLINE = (
    "time_to_victims_released",
    "time_to_group_useful",
    "lost_work",
    "stranded_capacity",
    "pods_terminated",
    "preempted_while_loading",
    "preemption_not_helpful",
    "time_to_recover",
    "gpu_utilization",
    "gpu_fragmentation",
    "goodput",
    "over_evicted_pods",
    "groups_broken",
    "thrashing_workloads",
)


def main(argv: Sequence[str] | None = None) -> int:
    parser = _parser()
    args = parser.parse_args(argv)
    try:
        return int(args.handler(args))
    except SpecError as exc:
        for error in exc.errors:
            where = f"{error['path']}: " if error["path"] else ""
            print(f"error: {where}{error['message']}", file=sys.stderr)
        return 2
    except OSError as exc:
        print(f"error: {exc.filename}: {exc.strerror}", file=sys.stderr)
        return 2
    except SimulationLimitError as exc:
        print(f"error: {exc}", file=sys.stderr)
        return 2
    except UnicodeDecodeError as exc:
        print(
            f"error: the file is not UTF-8 text ({exc.reason} at byte {exc.start})", file=sys.stderr
        )
        return 2
    except ValueError as exc:  # a LAB_MAX_* environment variable that is not a number
        print(f"error: {exc}", file=sys.stderr)
        return 2


def _parser() -> argparse.ArgumentParser:
    parser = argparse.ArgumentParser(prog="python -m scheduler_core", description=__doc__)
    sub = parser.add_subparsers(required=True, metavar="command")
    presets = sub.add_parser("presets", help="list the built-in scenario presets")
    presets.add_argument("--show", metavar="ID", help="print one preset's YAML")
    presets.set_defaults(handler=_presets)
    schema = sub.add_parser(
        "schema", help="print the spec's JSON Schema (every field, its type and meaning)"
    )
    schema.set_defaults(handler=_schema)
    validate = sub.add_parser("validate", help="check a spec; print its variants")
    validate.add_argument("spec", help="a YAML/JSON file, '-' for stdin, or a preset id")
    validate.set_defaults(handler=_validate)
    run = sub.add_parser("run", help="simulate every variant and compare them")
    run.add_argument("spec", help="a YAML/JSON file, '-' for stdin, or a preset id")
    run.add_argument("--seed", type=int, help="override the spec's seed")
    run.add_argument("--json", action="store_true", help="print the results as JSON")
    run.add_argument("--events", action="store_true", help="with --json: include event logs")
    run.add_argument("--variant", action="append", help="run only this variant (repeatable)")
    run.add_argument("--quiet", action="store_true", help="no progress bar")
    run.add_argument(
        "--explain",
        metavar="POD|WORKLOAD",
        help="print the decisions that concern this pod or workload (first "
        "replication of each variant) and each variant's diagnosis",
    )
    run.set_defaults(handler=_run)
    glossary = sub.add_parser(
        "metrics",
        help="every metric: unit, which way is better, how "
        "it aggregates, what a missing value means",
    )
    glossary.add_argument("--json", action="store_true", help="print the registry as JSON")
    glossary.set_defaults(handler=_metrics)
    register_import(sub)
    register_export(sub)
    register_study(sub)
    return parser


def load_spec_argument(value: str, limits: Limits | None = None) -> ExperimentSpec:
    """A path, '-' for stdin, or a preset id (tried when no such file exists), checked
    against ``limits`` (default: the ``LAB_MAX_*`` environment, as a deployment would).
    A ``.json`` file is read as JSON, anything else through the same core loader as the
    web app (which reads JSON-looking text as JSON too)."""
    limits = Limits.from_env() if limits is None else limits
    if value == "-":
        return parse_spec(load_document(sys.stdin.read()), limits=limits)
    path = Path(value)
    if path.exists():
        text = path.read_text(encoding="utf-8")
        fmt = "json" if path.suffix.lower() == ".json" else None
        return parse_spec(load_document(text, fmt=fmt), limits=limits)
    if "/" not in value and not value.endswith((".yaml", ".yml", ".json")):
        return parse_spec(get_preset(value).text, limits=limits)
    raise SpecError([{"path": "", "message": f"{value}: no such file"}])


def _presets(args: argparse.Namespace) -> int:
    if args.show:
        print(get_preset(args.show).text, end="")
        return 0
    for preset in list_presets(studies=True):
        print(f"{preset.id}\t{preset.name}")
    return 0


def _schema(args: argparse.Namespace) -> int:
    json.dump(ExperimentSpec.model_json_schema(by_alias=True), sys.stdout, indent=2)
    print()
    return 0


def _validate(args: argparse.Namespace) -> int:
    spec = load_spec_argument(args.spec)
    names = variant_names(spec)
    for warning in spec_warnings(spec):
        print(f"warning: {warning['path']}: {warning['message']}", file=sys.stderr)
    print(
        f"ok: {spec.name}: {len(spec.workloads)} workloads, {len(names)} variant(s): "
        + ", ".join(names)
    )
    if spec.placement_study is not None:
        print(describe_study_estimate(spec))
        return 0
    print(describe_estimate(estimate_cost(spec)))
    return 0


def describe_estimate(estimate: CostEstimate) -> str:
    """One line: what the run will cost, before it is started."""
    return (
        f"estimate: {estimate.label()} per run: {estimate.replications} simulation(s), "
        f"~{estimate.events:,} events, ~{estimate.seconds:,.0f} worker seconds, "
        f"~{estimate.memory_mb_per_replication:,.0f} MB per replication"
    )


def _run(args: argparse.Namespace) -> int:
    limits = Limits.from_env()
    spec = load_spec_argument(args.spec, limits)
    if args.seed is not None and not 0 <= args.seed <= MAX_SEED:
        raise SpecError([{"path": "--seed", "message": f"must be between 0 and {MAX_SEED:,}"}])
    if args.variant:
        unknown = set(args.variant) - set(variant_names(spec))
        if unknown:
            raise SpecError(
                [{"path": "--variant", "message": f"no variant named {', '.join(sorted(unknown))}"}]
            )
    bar = None if args.quiet else ProgressBar(sys.stderr)
    if spec.placement_study is not None:
        print(
            run_spec_study(
                spec,
                seed=args.seed,
                variants=args.variant,
                as_json=args.json,
                progress=bar.update if bar else None,
            )
        )
        if bar:
            bar.close()
        return 0
    results = run_experiment(
        spec,
        seed=args.seed,
        variants=args.variant,
        progress=bar.update if bar else None,
        max_events=limits.max_events_per_replication,
    )
    if bar:
        bar.close()
    if args.explain:
        print(format_explanation(results, args.explain))
        return 0
    if args.json:
        payload = {
            "experiment": spec.name,
            "metrics": registry_document()["metrics"],
            "variants": [v.to_dict(include_events=args.events) for v in results],
        }
        json.dump(_finite(payload), sys.stdout, indent=2, allow_nan=False)
        print()
    else:
        print(format_table(results))
    return 0


def format_explanation(results: Sequence[VariantResult], name: str) -> str:
    """The decisions concerning ``name``, per variant, as a reader would want them: when,
    what, kube-scheduler's message, then candidates, rule, victims, reprieved, units."""
    lines: list[str] = []
    for variant in results:
        first = variant.replications[0]
        lines.append(f"== {variant.name} (replication 0, seed {first.seed})")
        if first.diagnosis:
            lines.append(f"diagnosis: {first.diagnosis}")
        found = [d for d in first.decisions if d.concerns(name)]
        if not found:
            lines.append(f"no decision concerns {name}")
        for d in found:
            lines.extend(describe_decision(d))
    return "\n".join(lines)


def describe_decision(d: Decision) -> list[str]:
    head = f"#{d.id} t={d.time:g}s {d.kind} {d.pod or d.workload}"
    lines = [head + (f" -> {d.node}" if d.node else ""), f"  {d.message}"]
    if d.cause:
        lines.append(f"  cause: {d.cause}")
    if d.rule:
        lines.append(f"  decided by: {d.rule}")
    for c in d.candidates:
        cost = "" if c.cost is None else f", expected cost {c.cost:,.1f}"
        lines.append(
            f"  candidate {c.node}: victims {', '.join(c.victims) or '-'}; "
            f"{c.pdb_violations} PDB violation(s){cost}"
        )
    if d.victims:
        lines.append(f"  victims: {', '.join(d.victims)}")
    for r in d.reprieved:
        lines.append(f"  reprieved {r.pod}: {r.why}")
    for u in d.units:
        terms = ", ".join(f"{k} {v:,.1f}" for k, v in u.cost_terms)
        kind = "All-group" if u.whole_group else "unit"
        lines.append(
            f"  {kind} {u.workload} [{' '.join(u.pods)}] priority {u.priority}: "
            f"{'evicted' if u.evicted else 'kept'}" + (f" ({terms})" if terms else "")
        )
    for t in d.targets:
        state = f"taken ({t.reason})" if t.taken else f"not taken: {t.why}"
        lines.append(f"  target {t.workload} in {t.queue}: {state}")
    return lines


def _finite(value: Any) -> Any:
    """JSON has no infinity: a metric that is infinite or undefined is written as null."""
    if isinstance(value, float) and not math.isfinite(value):
        return None
    if isinstance(value, dict):
        return {k: _finite(v) for k, v in value.items()}
    if isinstance(value, list | tuple):
        return [_finite(v) for v in value]
    return value


def format_table(results: Sequence[VariantResult]) -> str:
    """Headline metrics, one column per variant, side by side; * marks the best (the
    registry's direction), a missing value reads as the registry says, and a variant
    whose urgent workload was never useful is named below (it is never best)."""
    names = [v.name for v in results]
    width = max(20, *(len(n) for n in names))
    label = max(len(metric_info(m).title) for m in HEADLINE)
    unserved = [is_unserved(v.aggregate) for v in results]
    lines = [" " * label + "  " + "  ".join(n.rjust(width) for n in names)]
    for metric in HEADLINE:
        stats = [v.aggregate[metric] for v in results]
        best = set(best_indexes([s["mean"] for s in stats], metric, unserved=unserved))
        cells = [_cell(s, metric, width, i in best) for i, s in enumerate(stats)]
        lines.append(metric_info(metric).title.ljust(label) + "  " + "  ".join(cells))
    lines.append(
        "* best (lower is better; higher for utilization, goodput and ETTR); "
        "± is the 95% Student-t half-width across replications"
    )
    lines += [
        f"! {name}: an urgent workload never became useful before the horizon (never counted best)"
        for name, flag in zip(names, unserved, strict=True)
        if flag
    ]
    return "\n".join(lines)


def _cell(stats: dict[str, float | None], metric: str, width: int, best: bool) -> str:
    mean = stats["mean"]
    if mean is None:
        return metric_info(metric).null[:width].rjust(width)
    half = stats.get("ci95")
    if metric_info(metric).unit == "ratio":
        text = f"{mean * 100:.1f}%" + (f" ±{half * 100:.1f}" if half else "")
        return (text + ("*" if best else "")).rjust(width)
    text = f"{mean:.3f}" if abs(mean) < 10 and mean != int(mean) else f"{mean:,.0f}"
    if half:
        text += f" ±{half:.0f}"
    return (text + ("*" if best else "")).rjust(width)


def _metrics(args: argparse.Namespace) -> int:
    """The glossary, from the metric registry."""
    document = registry_document()
    if args.json:
        json.dump(document, sys.stdout, indent=2, ensure_ascii=False)
        print()
        return 0
    for m in document["metrics"]:
        print(
            f"{m['name']} ({m['unit']}, {m['better']} is better)\n  {m['definition']}\n"
            f"  per replication: {m['workloads']}; across: {m['replications']}\n"
            f"  no value reads: {m['null']}"
        )
    return 0


class ProgressBar:
    """A progress bar on stderr, drawn only for runs long enough to need one."""

    def __init__(self, stream: TextIO, delay: float = 1.0) -> None:
        self.stream = stream
        self.started = time.monotonic()
        self.delay = delay
        self.drawn = False
        self.last = -1

    def update(self, fraction: float) -> None:
        if time.monotonic() - self.started < self.delay:
            return
        percent = int(fraction * 100)
        if percent == self.last:
            return
        self.last = percent
        filled = percent * 30 // 100
        elapsed = time.monotonic() - self.started
        self.stream.write(f"\r[{'#' * filled}{'.' * (30 - filled)}] {percent:3d}%  {elapsed:5.1f}s")
        self.stream.flush()
        self.drawn = True

    def close(self) -> None:
        if self.drawn:
            self.stream.write("\n")
            self.stream.flush()


__all__ = ["METRIC_NAMES", "main"]
