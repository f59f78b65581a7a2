"""Importing recorded cluster traces as an ordinary experiment (issue 7).

All or nothing: ``scheduler_core.traces.import_experiment`` (the core function the CLI
calls too) reads every file, adds the replay scenarios and validates the spec before
anything is stored, and the experiment is created in one transaction afterwards, so a
bad row anywhere leaves no experiment, no tags and no sharing behind.

What the import read (counts per kind) and what it approximated or left out (the
notes, object by object) come back with the experiment: the page and the API show them.
"""

from __future__ import annotations

import codecs
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass
from typing import IO, Any

from django.contrib.auth.models import User
from django.db import transaction

from experiments.models import Experiment
from experiments.services.experiments import experiment_create
from experiments.specs import spec_limit_errors
from scheduler_core.placement_study import MAX_LOAD_PERCENT
from scheduler_core.spec import SpecError
from scheduler_core.traces import (
    FORMATS,
    ImportOptions,
    ImportResult,
    KindDefaults,
    ReplayScenarios,
    TraceError,
    TraceFile,
    import_experiment,
)
from scheduler_core.traces.defaults import DefaultsError
from scheduler_core.traces.load import LoadError, check_load
from scheduler_core.traces.qos import MappingError, load_mapping
from scheduler_core.traces.scenarios import ScenarioFieldError

ErrorItem = dict[str, Any]
CHUNK_BYTES = 1 << 16


class ImportRejectedError(Exception):
    """The import failed; ``errors`` are ``{path, message}`` items, and those found in a
    file add ``file``, ``line`` and ``column`` (1-based; 0 = the whole file or row)."""

    def __init__(self, errors: list[ErrorItem]) -> None:
        self.errors = errors
        super().__init__("; ".join(e["message"] for e in errors))


@dataclass(frozen=True)
class ImportedExperiment:
    """A stored import and what the importer said about it: ``counts`` of what it
    made (``nodes``, ``pods``, ``workloads``...), ``kinds`` of what it read and ``notes``
    on what was approximated or left out (every object not used is named in one)."""

    experiment: Experiment
    counts: dict[str, int]
    notes: list[str]
    kinds: dict[str, int]
    """Input objects per kind (Kubernetes imports; empty for the trace formats)."""


@dataclass(frozen=True, slots=True)
class ImportWindow:
    """Which part of a recorded load to import, and how dense (``scheduler_core.traces.
    load``): the trace time that becomes t = 0, arrivals compressed by ``compress``, at most
    ``sample`` workloads drawn with ``seed``."""

    start_seconds: float | None = None
    compress: float = 1.0
    sample: int | None = None
    seed: int = 0
    placement_study: float | None = None
    """openb only: import for the placement-study mode at this arrived load (%), the
    fractional GPU requests kept (``ImportOptions.placement_study``)."""


def import_read(
    *,
    fmt: str,
    uploads: Sequence[tuple[IO[Any], str]],
    qos_map: str = "",
    defaults: str = "",
    name: str = "",
    horizon_seconds: float | None = None,
    scenarios: ReplayScenarios | None = None,
    window: ImportWindow | None = None,
) -> ImportResult:
    """Read and validate ``uploads`` without storing anything (the page's preview, and
    the first half of :func:`experiment_import`). Raises ``ImportRejectedError``."""
    options = import_options(
        fmt=fmt,
        qos_map=qos_map,
        defaults=defaults,
        name=name,
        horizon_seconds=horizon_seconds,
        window=window,
    )
    names = [file_name for _, file_name in uploads]
    undecodable = [_located(error, names) for error in map(_not_utf8, uploads) if error]
    if undecodable:
        raise ImportRejectedError(undecodable)
    files = [TraceFile.from_stream(stream, file_name) for stream, file_name in uploads]
    try:
        result = import_experiment(fmt, files, options, scenarios)
    except TraceError as exc:
        raise ImportRejectedError([_located(dict(error), names) for error in exc.errors]) from None
    except ScenarioFieldError as exc:
        raise ImportRejectedError([{"path": exc.field, "message": str(exc)}]) from None
    limits = spec_limit_errors(result.spec)
    if limits:
        raise ImportRejectedError(
            [
                {**_what_brings_it_under(e, result.spec), "file": "", "line": 0, "column": 0}
                for e in limits
            ]
        )
    return result


def _what_brings_it_under(error: dict[str, Any], spec: Any) -> dict[str, Any]:
    """A limit refusing an import names the setting (the core's message does) and the
    import field that would bring the spec under it: the workload or pod counts by
    ``sample``, the horizon by ``horizon_seconds``; the node inventory has none."""
    message, path = str(error["message"]), str(error.get("path", ""))
    if "LAB_MAX_WORKLOADS" in message or "LAB_MAX_PODS" in message:
        return {
            "path": "sample",
            "message": f"{message}: set 'sample' (at most N workloads) "
            "lower, or import a shorter window ('start', 'horizon_seconds')",
        }
    if "LAB_MAX_HORIZON_SECONDS" in message:
        return {
            "path": "horizon_seconds",
            "message": f"{message}: set 'horizon_seconds' to a shorter window",
        }
    if "LAB_MAX_NODES" in message:
        return {
            "path": path,
            "message": f"{message}: no import option shrinks the node "
            "inventory; the operator can raise LAB_MAX_NODES",
        }
    return error


def experiment_import(
    *,
    owner: User,
    fmt: str,
    uploads: Sequence[tuple[IO[Any], str]],
    qos_map: str = "",
    defaults: str = "",
    name: str = "",
    horizon_seconds: float | None = None,
    tags: Iterable[str] = (),
    shared_with: Iterable[User] = (),
    scenarios: ReplayScenarios | None = None,
    window: ImportWindow | None = None,
) -> ImportedExperiment:
    """Read ``uploads`` (file object, file name) in format ``fmt`` into a new experiment
    owned by ``owner``. ``qos_map`` is a YAML/JSON mapping or ``QOS=CLASS[:VALUE],...``;
    ``defaults`` is ``KIND.FIELD=VALUE`` items separated by commas or new lines;
    ``scenarios`` are added to the spec before it is stored.

    Raises ``ImportRejectedError`` and stores nothing if anything is wrong."""
    result = import_read(
        fmt=fmt,
        uploads=uploads,
        qos_map=qos_map,
        defaults=defaults,
        name=name,
        horizon_seconds=horizon_seconds,
        scenarios=scenarios,
        window=window,
    )
    with transaction.atomic():
        experiment = experiment_create(
            owner=owner, spec=result.spec, tags=tags, shared_with=shared_with
        )
    return ImportedExperiment(
        experiment, dict(result.counts), list(result.notes), dict(result.kinds)
    )


def import_options(
    *,
    fmt: str,
    qos_map: str,
    defaults: str,
    name: str,
    horizon_seconds: float | None,
    window: ImportWindow | None = None,
) -> ImportOptions:
    """The importer's options from the form's text fields; a bad one is an error at its
    field (``qos_map``, ``defaults``)."""
    if fmt not in FORMATS:
        raise ImportRejectedError([{"path": "format", "message": f"unknown format '{fmt}'"}])
    try:
        mapping = _qos_mapping(fmt, qos_map) if qos_map.strip() else None
    except (MappingError, SpecError) as exc:  # malformed YAML arrives as a SpecError
        raise ImportRejectedError([{"path": "qos_map", "message": str(exc)}]) from None
    try:
        table = KindDefaults.builtin().with_overrides(_assignments(defaults))
    except DefaultsError as exc:
        raise ImportRejectedError([{"path": "defaults", "message": str(exc)}]) from None
    window = window or ImportWindow()
    try:
        check_load(start=window.start_seconds, compress=window.compress, sample=window.sample)
    except LoadError as exc:
        field = "start_seconds" if exc.field == "start" else exc.field
        raise ImportRejectedError([{"path": field, "message": str(exc)}]) from None
    study = window.placement_study
    if study is not None and fmt != "openb":
        message = "only an openb node and pod list imports as a placement study"
        raise ImportRejectedError([{"path": "placement_study", "message": message}])
    if study is not None and not 0 < study <= MAX_LOAD_PERCENT:
        message = f"the arrived load must be above 0 and at most {MAX_LOAD_PERCENT} %"
        raise ImportRejectedError([{"path": "placement_study", "message": message}])
    return ImportOptions(
        qos_map=mapping,
        defaults=table,
        name=name or None,
        horizon_seconds=horizon_seconds,
        start=window.start_seconds,
        compress=window.compress,
        sample=window.sample,
        sample_seed=window.seed,
        placement_study=study,
    )


def _qos_mapping(fmt: str, text: str) -> Any:
    base = FORMATS[fmt].qos_map
    if base is None:
        raise MappingError(f"{fmt} has no QoS labels: priority classes come from the files")
    return load_mapping(text, base)


def _assignments(text: str) -> dict[str, str]:
    """``training.checkpointIntervalSeconds=600, batch.recovery=elastic`` → a dict."""
    overrides: dict[str, str] = {}
    for item in (part.strip() for line in text.splitlines() for part in line.split(",")):
        if not item:
            continue
        key, sep, value = item.partition("=")
        if not sep:
            raise DefaultsError(f"'{item}' is not KIND.FIELD=VALUE")
        overrides[key.strip()] = value.strip()
    return overrides


def _not_utf8(upload: tuple[IO[Any], str]) -> ErrorItem | None:
    """The CSV readers of ``scheduler_core.traces`` let a decoding error escape (only
    its JSON readers report one), so uploads are checked here first, chunk by chunk,
    and a binary file is an error at its file rather than a server error."""
    stream, name = upload
    decoder = codecs.getincrementaldecoder("utf-8-sig")()
    stream.seek(0)
    try:
        while chunk := stream.read(CHUNK_BYTES):
            if isinstance(chunk, bytes):
                decoder.decode(chunk)
        decoder.decode(b"", final=True)
    except UnicodeDecodeError as exc:
        return {"file": name, "line": 0, "column": 0, "message": f"not UTF-8 text ({exc.reason})"}
    finally:
        stream.seek(0)
    return None


def _located(error: Mapping[str, Any], names: Sequence[str]) -> ErrorItem:
    """A trace error gets the request path of its upload: ``files[1]`` for the second."""
    file = str(error.get("file", ""))
    path = f"files[{names.index(file)}]" if file in names else "files"
    return {
        "path": path,
        "file": file,
        "line": int(error.get("line", 0)),
        "column": int(error.get("column", 0)),
        "message": str(error["message"]),
    }


def trace_formats() -> list[dict[str, Any]]:
    """The importable formats, what files each expects, and whether it maps QoS labels."""
    return [
        {
            "name": f.name,
            "title": f.title,
            "files": f.files,
            "qos_map": f.qos_map.to_document() if f.qos_map else None,
            "node_inventory": f.node_inventory,
        }
        for f in FORMATS.values()
    ]


def kind_defaults() -> dict[str, dict[str, Any]]:
    """The per-kind defaults an import fills in (what ``defaults`` overrides)."""
    return KindDefaults.builtin().as_table()


__all__ = [
    "ImportRejectedError",
    "ImportedExperiment",
    "experiment_import",
    "import_options",
    "import_read",
    "kind_defaults",
    "trace_formats",
]
