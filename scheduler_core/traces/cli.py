"""`python -m scheduler_core import FORMAT FILE...`: a recorded cluster as a spec YAML.

Errors are one per line, ``file:line:column: message``, exit status 2, never a traceback.
"""

from __future__ import annotations

import argparse
import json
import sys
from pathlib import Path
from typing import Any

import yaml

from scheduler_core.durations import parse_duration
from scheduler_core.traces import FORMATS, ImportOptions, import_experiment
from scheduler_core.traces.build import ImportResult
from scheduler_core.traces.defaults import DefaultsError, KindDefaults
from scheduler_core.traces.errors import TraceError, format_error
from scheduler_core.traces.load import LoadError, check_load
from scheduler_core.traces.qos import MappingError, QosMapping, load_mapping
from scheduler_core.traces.scenarios import ReplayScenarios, ScenarioError
from scheduler_core.traces.source import TraceFile
from scheduler_core.traces.yamlout import dump_spec

EPILOG = """examples:
  import openb openb_node_list_all_node.csv openb_pod_list_default.csv -o openb.yaml
  import openb nodes.csv pods.csv --qos-map BE=best-effort:0,Burstable=best-effort:0
  import openb nodes.csv pods.csv --inject-urgent 4x8@3600 --spot-reclaim 10%@7200
  import dlrm disaggregated_DLRM_trace.csv --nodes spot:node_info_df.csv
  import pai pai_machine_spec.csv pai_machine_spec.header
  import kubectl snapshot.json --inject-urgent 2x8@0 --horizon 7200
  import openb --show-qos-map > qos.yaml   (edit, then: --qos-map qos.yaml)
  import csv --show-defaults
"""


def register(sub: Any) -> None:
    """Add the ``import`` command to the CLI's subparsers."""
    parser = sub.add_parser(
        "import",
        help="import a recorded cluster (trace) as a spec",
        description=__doc__,
        epilog=EPILOG,
        formatter_class=argparse.RawDescriptionHelpFormatter,
    )
    parser.add_argument("format", choices=sorted(FORMATS), help="the files' format")
    parser.add_argument("files", nargs="*", metavar="FILE", help="the trace's files")
    parser.add_argument(
        "-o", "--output", help="write the spec here (.yaml or .json); default: stdout"
    )
    _import_options(parser)
    _scenario_options(parser)
    parser.add_argument(
        "--show-qos-map",
        action="store_true",
        help="print the QoS mapping in force (YAML, to edit) and stop",
    )
    parser.add_argument(
        "--show-defaults",
        action="store_true",
        help="print the per-kind defaults in force (YAML) and stop",
    )
    parser.set_defaults(handler=run_import)


def _import_options(parser: argparse.ArgumentParser) -> None:
    parser.add_argument(
        "--qos-map",
        metavar="MAP",
        help="QOS=CLASS[:VALUE[:POLICY]],... or a YAML/JSON mapping file (see --show-qos-map)",
    )
    parser.add_argument(
        "--defaults",
        action="append",
        default=[],
        metavar="KIND.FIELD=V",
        help="override a per-kind default, e.g. "
        "training.checkpointIntervalSeconds=600 (comma-separated, repeatable)",
    )
    parser.add_argument(
        "--nodes",
        metavar="FORMAT:FILE[,FILE]",
        help="take the cluster from a node inventory (pai, spot, csv, jsonl)",
    )
    parser.add_argument(
        "--start",
        type=_seconds,
        metavar="S",
        help="trace time that becomes t = 0 (default: the window's start)",
    )
    parser.add_argument(
        "--horizon", type=_seconds, metavar="S", help="simulated seconds, or e.g. 24h, 1d"
    )
    parser.add_argument(
        "--compress",
        type=float,
        default=1.0,
        metavar="N",
        help="arrivals N times as dense (each arrival time / N, durations "
        "kept): a recorded load is often light",
    )
    parser.add_argument(
        "--sample", type=int, metavar="N", help="keep at most N workloads, drawn with --seed"
    )
    parser.add_argument(
        "--pending",
        choices=("skip", "keep"),
        default="skip",
        help="pods never bound in the recording (default: skip)",
    )
    parser.add_argument(
        "--snapshot-time",
        metavar="ISO8601",
        help="kubectl: the snapshot's time (default: its latest timestamp)",
    )
    parser.add_argument("--name", help="the experiment's name")
    parser.add_argument(
        "--placement-study",
        type=float,
        metavar="LOAD",
        help="openb: import for the placement-study mode at LOAD %% arrived load "
        "(fractional GPUs kept as gpuMilli, no time; docs/placement-study.md)",
    )


def _scenario_options(parser: argparse.ArgumentParser) -> None:
    group = parser.add_argument_group("scenarios on the recorded cluster")
    group.add_argument(
        "--inject-urgent",
        metavar="MxG@T",
        help="an urgent all-or-nothing group: M members of G GPUs at t = T s",
    )
    group.add_argument(
        "--urgent-duration",
        type=float,
        default=3600.0,
        metavar="S",
        help="the urgent group's work in seconds (default 3600)",
    )
    group.add_argument(
        "--spot-reclaim",
        action="append",
        default=[],
        metavar="SHARE@T",
        help="a variant reclaiming SHARE (0.1 or 10%%) of the GPU nodes at t = T s (repeatable)",
    )
    group.add_argument(
        "--spot-notice",
        type=float,
        default=120.0,
        metavar="S",
        help="spot interruption notice (default 120 s)",
    )
    group.add_argument(
        "--compare-qos-map", metavar="MAP", help="a variant with this alternative QoS mapping"
    )
    group.add_argument(
        "--compare-policies",
        metavar="P1,P2",
        help="one variant per preemption policy, e.g. pod,none",
    )
    group.add_argument(
        "--seed", type=int, default=0, help="picks the reclaimed nodes and the --sample"
    )


def run_import(args: argparse.Namespace) -> int:
    """The ``import`` command; bad input is reported, never raised."""
    try:
        return _run(args)
    except TraceError as exc:
        for error in exc.errors:
            print(format_error(error), file=sys.stderr)
    except (MappingError, DefaultsError, ScenarioError) as exc:
        print(f"error: {exc}", file=sys.stderr)
    return 2


def _run(args: argparse.Namespace) -> int:
    fmt = FORMATS[args.format]
    defaults = _defaults(args.defaults)
    base_map = fmt.qos_map
    qos_map = _mapping(args.qos_map, base_map) if args.qos_map else None
    if args.show_defaults:
        print(yaml.safe_dump(defaults.as_table(), sort_keys=False), end="")
        return 0
    if args.show_qos_map:
        return _show_mapping(qos_map or base_map, args.format)
    if not args.files:
        raise ScenarioError(f"name the {args.format} file(s): {fmt.files}")
    try:
        check_load(start=args.start, compress=args.compress, sample=args.sample)
    except LoadError as exc:
        raise ScenarioError(f"--{exc.field}: {exc}") from None
    options = ImportOptions(
        qos_map=qos_map,
        defaults=defaults,
        start=args.start,
        pending=args.pending,
        horizon_seconds=args.horizon,
        snapshot_time=args.snapshot_time,
        nodes=_nodes(args.nodes),
        name=args.name,
        compress=args.compress,
        sample=args.sample,
        sample_seed=args.seed,
        placement_study=args.placement_study,
    )
    result = import_experiment(args.format, args.files, options, _scenarios(args))
    _write(result.mapping, result, args)
    return 0


def _seconds(text: str) -> float:
    """A duration argument (``3600``, ``24h``, ``1d``), refused with the accepted forms."""
    try:
        return parse_duration(text)
    except ValueError as exc:
        raise argparse.ArgumentTypeError(str(exc)) from None


def _defaults(items: list[str]) -> KindDefaults:
    overrides: dict[str, str] = {}
    for item in (part.strip() for text in items for part in text.split(",")):
        if not item:
            continue
        key, sep, value = item.partition("=")
        if not sep:
            raise DefaultsError(f"--defaults: '{item}' is not KIND.FIELD=VALUE")
        overrides[key.strip()] = value
    return KindDefaults.builtin().with_overrides(overrides)


def _mapping(argument: str, base: QosMapping | None) -> QosMapping:
    if base is None:
        raise MappingError("this format has no QoS labels to map")
    return load_mapping(_mapping_text(argument, "--qos-map"), base)


def _mapping_text(argument: str, option: str) -> str:
    """A mapping given inline (``QOS=CLASS,...``) or as a file's path: its text."""
    path = Path(argument)
    text = path.read_text(encoding="utf-8") if "=" not in argument and path.exists() else argument
    if "=" not in text and "\n" not in text and not path.exists():
        raise MappingError(f"{option}: {argument}: no such file (or use QOS=CLASS,...)")
    return text


def _show_mapping(mapping: QosMapping | None, fmt: str) -> int:
    if mapping is None:
        raise MappingError(f"{fmt} has no QoS labels: priority classes come from the files")
    print(yaml.safe_dump(mapping.to_document(), sort_keys=False), end="")
    return 0


def _nodes(argument: str | None) -> tuple[str, tuple[TraceFile, ...]] | None:
    if argument is None:
        return None
    fmt, sep, paths = argument.partition(":")
    if not sep or not paths:
        raise ScenarioError(f"--nodes: '{argument}' is not FORMAT:FILE[,FILE]")
    return fmt, tuple(TraceFile.from_path(p) for p in paths.split(","))


def _scenarios(args: argparse.Namespace) -> ReplayScenarios:
    """The scenario options as the core takes them (the same object the web app builds)."""
    compare = (
        _mapping_text(args.compare_qos_map, "--compare-qos-map") if args.compare_qos_map else ""
    )
    policies = tuple(p.strip() for p in (args.compare_policies or "").split(",") if p.strip())
    return ReplayScenarios(
        inject_urgent=args.inject_urgent or "",
        urgent_duration=args.urgent_duration,
        spot_reclaims=tuple(args.spot_reclaim),
        spot_notice=args.spot_notice,
        seed=args.seed,
        compare_qos_map=compare,
        compare_policies=policies,
    )


def _write(mapping: dict[str, Any], result: ImportResult, args: argparse.Namespace) -> None:
    counts = ", ".join(f"{k.replace('_', ' ')} {v}" for k, v in result.counts.items())
    read = ", ".join(f"{kind} {n}" for kind, n in sorted(result.kinds.items()))
    header = [
        f"python -m scheduler_core import {args.format} "
        + " ".join(Path(f).name for f in args.files),
        counts,
        *([f"read: {read}"] if read else []),
        *result.notes,
    ]
    if args.output and args.output.endswith(".json"):
        text = json.dumps(mapping, indent=1) + "\n"
    else:
        text = dump_spec(mapping, header)
    if args.output:
        Path(args.output).write_text(text, encoding="utf-8")
    else:
        sys.stdout.write(text)
    print(f"imported {args.format}: {counts}", file=sys.stderr)
    if result.kinds:
        kinds = ", ".join(f"{kind} {n}" for kind, n in sorted(result.kinds.items()))
        print(f"read: {kinds}", file=sys.stderr)
    for note in result.notes:
        print(f"note: {note}", file=sys.stderr)
