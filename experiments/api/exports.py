"""Downloads: CSV, JSON and Parquet written from row iterators, once, to files.

Rows are produced lazily by ``selectors_api`` and written as they come, so a large
run's event log (millions of rows) is never held in memory: CSV and JSON line by line,
Parquet one row group per batch (the footer, written last, indexes them).

A succeeded run never changes, so an export is written once, to a file named by the run
(id and task token), the table, the filters and ``EXPORT_VERSION``, and then served as
a file: the request thread only copies bytes (``sendfile`` where it can). Writing is
atomic (a temporary file renamed into place), so a reader never sees half a file. The
files of a run are removed with it (``remove_run_files``, on delete).
"""

from __future__ import annotations

import csv
import hashlib
import io
import json
import os
import shutil
import tempfile
import types
import typing
from collections.abc import Callable, Iterable, Iterator, Sequence
from dataclasses import fields
from itertools import islice
from pathlib import Path
from typing import Any

import pyarrow as pa
import pyarrow.parquet as pq
from django.conf import settings
from django.http import FileResponse

from experiments import event_log
from scheduler_core.metrics import WorkloadRecord

PARQUET_BATCH_ROWS = 20_000
CONTENT_TYPES = {
    "csv": "text/csv; charset=utf-8",
    "json": "application/json",
    "parquet": "application/vnd.apache.parquet",
}
FORMATS = tuple(CONTENT_TYPES)
EXPORT_VERSION = 1
"""Part of every stored file's name: bump it when what an export contains changes, and
files written by older code are simply never read again."""


# ----------------------------------------------------------------- stored files
def run_directory(*, run_id: int, task_token: str) -> Path:
    """Where a run's exports live. The task token keeps a run of a recreated database
    (whose ids start again) from meeting an older run's files."""
    return Path(settings.LAB_EXPORT_DIR) / f"run-{run_id}-{task_token}"


def export_name(*, table: str, fmt: str, filters: dict[str, Any]) -> str:
    """``events-v1.csv``, or ``events-v1-<digest of the filters>.csv``."""
    if not filters:
        return f"{table}-v{EXPORT_VERSION}.{fmt}"
    canonical = json.dumps(sorted(filters.items()), default=str, ensure_ascii=True)
    digest = hashlib.sha256(canonical.encode()).hexdigest()[:20]
    return f"{table}-v{EXPORT_VERSION}-{digest}.{fmt}"


def write_file(
    path: Path,
    *,
    rows: Iterable[dict[str, Any]],
    columns: Sequence[str],
    schema: pa.Schema,
    fmt: str,
) -> Path:
    """Write ``rows`` to ``path`` in ``fmt``, atomically: into a temporary file of the
    same folder, renamed into place when complete (two writers of the same export both
    write the same bytes; the last rename wins, and a reader sees either file whole)."""
    path.parent.mkdir(parents=True, exist_ok=True)
    handle, temporary = tempfile.mkstemp(dir=path.parent, prefix=f".{path.name}.", suffix=".tmp")
    try:
        with os.fdopen(handle, "wb") as out:
            for chunk in _CHUNKS[fmt](rows, columns, schema):
                out.write(chunk.encode() if isinstance(chunk, str) else chunk)
        os.replace(temporary, path)
    except BaseException:
        Path(temporary).unlink(missing_ok=True)
        raise
    return path


def file_response(path: Path, *, fmt: str, filename: str) -> FileResponse:
    """A stored export as an attachment. The file is opened before the response is
    built, so a concurrent delete (the run removed) cannot leave it half sent."""
    return FileResponse(
        path.open("rb"),
        content_type=CONTENT_TYPES[fmt],
        as_attachment=True,
        filename=f"{filename}.{fmt}",
    )


def remove_run_files(*, run_id: int, task_token: str) -> None:
    """Remove a run's stored exports (it was deleted); nothing there is nothing to do."""
    shutil.rmtree(run_directory(run_id=run_id, task_token=task_token), ignore_errors=True)


class _Line:
    """The file ``csv.writer`` writes to: it hands each line back instead of storing it."""

    def write(self, text: str) -> str:
        return text


def _csv_chunks(
    rows: Iterable[dict[str, Any]], columns: Sequence[str], _schema: pa.Schema
) -> Iterator[str]:
    """A header, then one line per row; floats keep every digit (``repr``), null is empty."""
    writer = csv.writer(_Line())
    yield writer.writerow(columns)
    for row in rows:
        yield writer.writerow([row.get(column) for column in columns])


def _json_chunks(
    rows: Iterable[dict[str, Any]], columns: Sequence[str], _schema: pa.Schema
) -> Iterator[str]:
    """A JSON array of flat objects (``pandas.read_json`` reads it), one per line."""
    separator = "[\n"
    for row in rows:
        yield separator + json.dumps({column: row.get(column) for column in columns})
        separator = ",\n"
    yield "[]\n" if separator == "[\n" else "\n]\n"


class _Sink(io.RawIOBase):
    """Where the Parquet writer writes: bytes are taken out after every row group."""

    def __init__(self) -> None:
        self._chunks: list[bytes] = []
        self._position = 0

    def writable(self) -> bool:
        return True

    def write(self, data: Any) -> int:
        self._chunks.append(bytes(data))
        self._position += len(data)
        return len(data)

    def tell(self) -> int:
        return self._position

    def drain(self) -> bytes:
        data = b"".join(self._chunks)
        self._chunks.clear()
        return data


def _parquet_chunks(
    rows: Iterable[dict[str, Any]], columns: Sequence[str], schema: pa.Schema
) -> Iterator[bytes]:
    """One row group per ``PARQUET_BATCH_ROWS`` rows, each sent as soon as it is written."""
    sink = _Sink()
    writer = pq.ParquetWriter(sink, schema)
    iterator = iter(rows)
    while batch := list(islice(iterator, PARQUET_BATCH_ROWS)):
        writer.write_table(pa.Table.from_pylist(batch, schema=schema))
        yield sink.drain()
    writer.close()
    yield sink.drain()


_CHUNKS: dict[
    str,
    Callable[[Iterable[dict[str, Any]], Sequence[str], pa.Schema], Iterator[str] | Iterator[bytes]],
] = {"csv": _csv_chunks, "json": _json_chunks, "parquet": _parquet_chunks}


# ----------------------------------------------------------------- Arrow schemas
SUMMARY_SCHEMA = pa.schema(
    [
        ("variant", pa.string()),
        ("preemption", pa.string()),
        ("placement", pa.string()),
        ("metric", pa.string()),
        ("mean", pa.float64()),
        ("ci95", pa.float64()),
        ("min", pa.float64()),
        ("max", pa.float64()),
        ("n", pa.int64()),
        ("label", pa.string()),
        ("unit", pa.string()),
        ("better", pa.string()),
    ]
)
EVENT_SCHEMA = pa.schema(
    [("variant", pa.string()), ("replication", pa.int64()), ("seq", pa.int64())]
    + [field for field in event_log.SCHEMA if field.name != "decision"]
)
"""An exported event: where it ran, then the stored columns (the decision link is an
internal id, left out)."""
_ARROW_TYPES = {str: pa.string(), int: pa.int64(), float: pa.float64(), bool: pa.bool_()}


def _arrow_type(annotation: Any) -> pa.DataType:
    """``float | None`` → float64: the record's declared type, nulls allowed."""
    if isinstance(annotation, types.UnionType):
        annotation = next(a for a in typing.get_args(annotation) if a is not type(None))
    return _ARROW_TYPES[annotation]


def _record_schema() -> pa.Schema:
    """Typed from ``scheduler_core``'s WorkloadRecord, so columns keep their types even
    when the first rows hold only nulls."""
    hints = typing.get_type_hints(WorkloadRecord)
    return pa.schema(
        [
            ("variant", pa.string()),
            ("replication", pa.int64()),
            ("seed", pa.int64()),
            *((f.name, _arrow_type(hints[f.name])) for f in fields(WorkloadRecord)),
        ]
    )


RECORD_SCHEMA = _record_schema()
DECISION_SCHEMA = pa.schema(
    [
        ("variant", pa.string()),
        ("replication", pa.int64()),
        ("id", pa.int64()),
        ("time", pa.float64()),
        ("kind", pa.string()),
        ("workload", pa.string()),
        ("pod", pa.string()),
        ("node", pa.string()),
        ("rule", pa.string()),
        ("cause", pa.string()),
        ("message", pa.string()),
        ("victims", pa.string()),
        ("candidates", pa.string()),
        ("reprieved", pa.string()),
        ("units", pa.string()),
        ("targets", pa.string()),
    ]
)
"""Decision records flattened: names space-joined, nested parts as JSON text."""
