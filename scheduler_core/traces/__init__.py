"""Recorded GPU clusters: import real traces (and users' own files) as experiment specs.

One reader per format, each streaming its files row by row and producing a spec
*mapping* that goes through ``parse_spec``. An import is all-or-nothing: any bad row
raises :class:`TraceError` listing ``{file, line, column, message}`` and returns nothing.

    result = import_trace("openb", ["nodes.csv", "pods.csv"])
    result.spec          # an ExperimentSpec, ready to simulate
    result.mapping       # the same as a plain mapping (what the web app stores)
    result.notes         # what was approximated or left out, object by object

The CLI and the web app both call :func:`import_experiment`: the import plus the
replay scenarios asked of it (an urgent group, spot reclaims, ...), validated once.

A web view passes uploaded file objects: ``import_uploads("openb", [(f, f.name), ...])``.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from dataclasses import dataclass, replace
from pathlib import Path
from typing import IO, Any

from scheduler_core.gc_pause import gc_paused
from scheduler_core.traces.build import ImportResult, Provenance, finish
from scheduler_core.traces.defaults import DEFAULT_TABLE, KindDefaults
from scheduler_core.traces.errors import ErrorLimitError, ErrorLog, ImportErrorItem, TraceError
from scheduler_core.traces.load import reshape_load
from scheduler_core.traces.options import Draft, ImportOptions
from scheduler_core.traces.qos import DLRM_QOS, OPENB_QOS, QosMapping
from scheduler_core.traces.scenarios import ReplayScenarios, apply_scenarios
from scheduler_core.traces.source import TraceFile, as_trace_file

Reader = Callable[[Sequence[TraceFile], ImportOptions, ErrorLog], Draft]


@dataclass(frozen=True)
class Format:
    """One importable format: its reader, what it is, and its default QoS mapping."""

    name: str
    title: str
    files: str
    reader: Reader
    qos_map: QosMapping | None = None
    node_inventory: bool = False


def _read_k8s(files: Sequence[TraceFile], options: ImportOptions, log: ErrorLog) -> Draft:
    """The Kubernetes reader (``scheduler_core.k8s``), imported when used: it builds on
    this package."""
    from scheduler_core.k8s import read_snapshot

    return read_snapshot(files, options, log)


def _formats() -> dict[str, Format]:
    from scheduler_core.traces import dlrm, inventory, native, openb

    items = [
        Format(
            "openb",
            "Alibaba GPU v2023 (openb): node list + pod list",
            "openb_node_list_*.csv openb_pod_list_*.csv",
            openb.read_openb,
            OPENB_QOS,
        ),
        Format(
            "dlrm",
            "Alibaba DLRM v2025 inference instances (+ --nodes inventory)",
            "disaggregated_DLRM_trace.csv",
            dlrm.read_dlrm,
            DLRM_QOS,
        ),
        Format(
            "pai",
            "Alibaba PAI v2020 machine list (node inventory)",
            "pai_machine_spec.csv [pai_machine_spec.header]",
            inventory.read_pai,
            node_inventory=True,
        ),
        Format(
            "spot",
            "Alibaba spot GPU v2026 node list (node inventory)",
            "node_info_df.csv",
            inventory.read_spot,
            node_inventory=True,
        ),
        Format(
            "csv",
            "Disruption Lab CSV: nodes, jobs/pods, priority classes",
            "nodes.csv jobs.csv [classes.csv]",
            native.read_csv,
        ),
        Format(
            "jsonl",
            "Disruption Lab JSON Lines: one node/job/class record per line",
            "cluster.jsonl",
            native.read_jsonl,
        ),
        Format(
            "k8s",
            "Kubernetes manifests and snapshots: YAML/JSON, kubectl get -o yaml|json, "
            "KWOK, kube-scheduler-simulator (docs/kubernetes.md)",
            "manifests.yaml [snapshot.json ...] or a folder",
            _read_k8s,
        ),
        Format(
            "kubectl",
            "kubectl get nodes,pods,priorityclasses,poddisruptionbudgets -A -o json "
            "(the k8s reader)",
            "snapshot.json",
            _read_k8s,
        ),
    ]
    return {f.name: f for f in items}


FORMATS: dict[str, Format] = _formats()


def import_trace(
    fmt: str, files: Sequence[TraceFile | str | Path], options: ImportOptions | None = None
) -> ImportResult:
    """Read ``files`` in format ``fmt`` into a validated spec, or raise TraceError."""
    options = options or ImportOptions()
    if fmt not in FORMATS:
        raise TraceError(
            [
                {
                    "file": "",
                    "line": 0,
                    "column": 0,
                    "message": f"unknown format '{fmt}' (known: {', '.join(FORMATS)})",
                }
            ]
        )
    sources = [as_trace_file(f) for f in files]
    log = ErrorLog()
    with gc_paused():
        try:
            draft = FORMATS[fmt].reader(sources, options, log)
            if options.nodes is not None:
                _replace_nodes(draft, options, log)
            reshape_load(draft, options)
        except ErrorLimitError:
            pass
        log.raise_if_any()
        draft.provenance.default_file = sources[0].name if sources else ""
        return finish(
            draft.mapping(),
            draft.provenance,
            draft.counts,
            draft.notes,
            draft.kinds,
            checked=draft.checked and options.nodes is None,
        )


def import_experiment(
    fmt: str,
    files: Sequence[TraceFile | str | Path],
    options: ImportOptions | None = None,
    scenarios: ReplayScenarios | None = None,
) -> ImportResult:
    """The one entry point of the CLI's ``import`` and the web app's import (page and
    API): ``files`` read in format ``fmt``, the ``scenarios`` added to the spec, the
    result validated. Raises ``TraceError`` (located errors) or
    :class:`~scheduler_core.traces.scenarios.ScenarioFieldError` (the scenario's field);
    returns nothing half-made."""
    options = options or ImportOptions()
    result = import_trace(fmt, files, options)
    if not scenarios:
        return result
    qos_map = options.qos_map or (FORMATS[fmt].qos_map if fmt in FORMATS else None)
    mapping = apply_scenarios(
        result.mapping, scenarios, qos_map=qos_map, defaults=options.defaults, fmt=fmt
    )
    return finish(mapping, Provenance(), result.counts, list(result.notes), result.kinds)


def _replace_nodes(draft: Draft, options: ImportOptions, log: ErrorLog) -> None:
    """``--nodes FORMAT:FILE``: another file's node inventory becomes the cluster."""
    assert options.nodes is not None
    fmt, files = options.nodes
    if fmt not in FORMATS or fmt in ("dlrm", "openb"):
        known = ", ".join(n for n in FORMATS if n not in ("dlrm", "openb"))
        log.add(
            files[0].name if files else "",
            0,
            0,
            f"--nodes: '{fmt}' is not a node inventory format (use one of: {known})",
        )
        return
    inventory = FORMATS[fmt].reader(files, replace(options, nodes=None), log)
    if draft.nodes.node_count or draft.cluster:
        draft.notes.append(f"the cluster comes from {', '.join(f.name for f in files)}")
    draft.nodes, draft.cluster = inventory.nodes, inventory.cluster
    draft.counts["nodes"] = inventory.counts.get("nodes", inventory.nodes.node_count)
    draft.notes.extend(inventory.notes)


def import_uploads(
    fmt: str, uploads: Sequence[tuple[IO[Any], str]], options: ImportOptions | None = None
) -> ImportResult | list[ImportErrorItem]:
    """For a web view: uploaded file objects (bytes or text, each with its file name) in,
    the validated import or the list of ``{file, line, column, message}`` out."""
    try:
        return import_trace(fmt, [TraceFile.from_stream(s, name) for s, name in uploads], options)
    except TraceError as exc:
        return exc.errors


__all__ = [
    "DEFAULT_TABLE",
    "FORMATS",
    "ImportOptions",
    "ImportResult",
    "KindDefaults",
    "QosMapping",
    "ReplayScenarios",
    "TraceError",
    "TraceFile",
    "import_experiment",
    "import_trace",
    "import_uploads",
]
