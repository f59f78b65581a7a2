"""Speak Kubernetes: the user's own manifests and cluster snapshots as an experiment.

One public reader for the CLI (``python -m scheduler_core import k8s FILES...``), the
browser's import page and the REST API (format ``k8s``)::

    result = read_manifests(["manifests/", "snapshot.json"])
    result.spec, result.mapping, result.counts, result.notes

Inputs: YAML (multi-document) or JSON, ``kind: List`` / ``kubectl get -o yaml|json``,
folders, a KWOK snapshot, a kube-scheduler-simulator export. All or nothing: any error
raises :class:`~scheduler_core.traces.TraceError` with ``{file, line, column, message}``
items and nothing is returned. docs/kubernetes.md lists what is read, what is
approximated, and the ``disruption-lab.io/`` annotations.
"""

from __future__ import annotations

from collections.abc import Iterable, Sequence
from pathlib import Path

from scheduler_core.k8s.documents import Item, expand_sources, read_items
from scheduler_core.k8s.experiment import restore_experiment
from scheduler_core.k8s.reader import ManifestReader
from scheduler_core.k8s.templates import ANNOTATIONS, PREFIX
from scheduler_core.traces.build import ImportResult
from scheduler_core.traces.errors import ErrorLimitError, ErrorLog, TraceError
from scheduler_core.traces.options import Draft, ImportOptions
from scheduler_core.traces.source import TraceFile

DEFAULT_POOL = {"name": "gpu", "count": 4, "gpus": 8, "cpu": 96, "memory": 1024}
"""The cluster of an input without Node objects (manifests only), as the notes say."""

ANNOTATION_NAMES = tuple(PREFIX + name for name in ANNOTATIONS)


def read_manifests(
    sources: Iterable[TraceFile | str | Path], options: ImportOptions | None = None
) -> ImportResult:
    """Read manifests (paths, folders or :class:`TraceFile`) into a validated spec, or
    raise ``TraceError``. The one entry point the CLI and the web app share."""
    from scheduler_core.traces import import_trace

    return import_trace("k8s", list(sources), options)


def read_manifest_texts(
    texts: Sequence[tuple[str, str]], options: ImportOptions | None = None
) -> ImportResult:
    """Pasted text: ``[(text, name), ...]`` (the name is what errors call the file)."""
    import io

    return read_manifests(
        [TraceFile.from_stream(io.StringIO(text), name) for text, name in texts], options
    )


def read_snapshot(files: Sequence[TraceFile], options: ImportOptions, log: ErrorLog) -> Draft:
    """The trace-import reader (``FORMATS['k8s']``, also ``kubectl``): every object of
    every file, then the draft."""
    reader = ManifestReader(options, log)
    try:
        for file in expand_sources(files, log):
            for item in read_items(file, log):
                reader.add(item)
        if log:
            return reader.draft
        draft = reader.build()
        if not log:
            restore_experiment(draft, reader.of, options, log)
    finally:
        reader.release()
    draft.checked = True  # read_items ran the loader's checks wherever they can fail
    if draft.cluster is None and draft.nodes.node_count == 0:
        draft.cluster = {"nodePools": [dict(DEFAULT_POOL)]}
        draft.notes.insert(
            0,
            "no Node in the input: the cluster is a default pool of "
            f"{DEFAULT_POOL['count']} nodes with {DEFAULT_POOL['gpus']} GPUs "
            "each (import a snapshot, or edit it)",
        )
    return draft


__all__ = [
    "ANNOTATION_NAMES",
    "ErrorLimitError",
    "ImportOptions",
    "ImportResult",
    "Item",
    "TraceError",
    "read_manifest_texts",
    "read_manifests",
    "read_snapshot",
]
