"""Streamed downloads: CSV, JSON and Parquet from row iterators.

Rows are produced lazily by ``selectors_results`` and written as they come, so a large
run's event log (millions of rows) is never held in memory: CSV and JSON line by line,
Parquet one row group per batch (the footer, written last, indexes them).
"""

from __future__ import annotations

import csv
import io
import json
import types
import typing
from collections.abc import Iterable, Iterator, Sequence
from dataclasses import fields
from itertools import islice
from typing import Any

import pyarrow as pa
import pyarrow.parquet as pq
from django.http import StreamingHttpResponse

from scheduler_core.metrics import WorkloadRecord

PARQUET_BATCH_ROWS = 20_000
CONTENT_TYPES = {
    "csv": "text/csv; charset=utf-8",
    "json": "application/json",
    "parquet": "application/vnd.apache.parquet",
}
FORMATS = tuple(CONTENT_TYPES)


def download(*, rows: Iterable[dict[str, Any]], columns: Sequence[str], schema: pa.Schema,
             fmt: str, filename: str) -> StreamingHttpResponse:
    """A streamed attachment of ``rows`` in ``fmt`` (csv, json or parquet)."""
    chunks = {"csv": _csv_chunks, "json": _json_chunks, "parquet": _parquet_chunks}[fmt]
    response = StreamingHttpResponse(chunks(rows, columns, schema),
                                     content_type=CONTENT_TYPES[fmt])
    response["Content-Disposition"] = f'attachment; filename="{filename}.{fmt}"'
    return response


class _Line:
    """The file ``csv.writer`` writes to: it hands each line back instead of storing it."""

    def write(self, text: str) -> str:
        return text


def _csv_chunks(rows: Iterable[dict[str, Any]], columns: Sequence[str],
                _schema: pa.Schema) -> Iterator[str]:
    """A header, then one line per row; floats keep every digit (``repr``), null is empty."""
    writer = csv.writer(_Line())
    yield writer.writerow(columns)
    for row in rows:
        yield writer.writerow([row.get(column) for column in columns])


def _json_chunks(rows: Iterable[dict[str, Any]], columns: Sequence[str],
                 _schema: pa.Schema) -> Iterator[str]:
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


def _parquet_chunks(rows: Iterable[dict[str, Any]], columns: Sequence[str],
                    schema: pa.Schema) -> Iterator[bytes]:
    """One row group per ``PARQUET_BATCH_ROWS`` rows, each sent as soon as it is written."""
    sink = _Sink()
    writer = pq.ParquetWriter(sink, schema)
    iterator = iter(rows)
    while batch := list(islice(iterator, PARQUET_BATCH_ROWS)):
        writer.write_table(pa.Table.from_pylist(batch, schema=schema))
        yield sink.drain()
    writer.close()
    yield sink.drain()


# ----------------------------------------------------------------- Arrow schemas
SUMMARY_SCHEMA = pa.schema([
    ("variant", pa.string()), ("preemption", pa.string()), ("placement", pa.string()),
    ("metric", pa.string()), ("mean", pa.float64()), ("ci95", pa.float64()),
    ("min", pa.float64()), ("max", pa.float64()), ("n", pa.int64()),
    ("label", pa.string()), ("unit", pa.string()), ("better", pa.string()),
])
EVENT_SCHEMA = pa.schema([
    ("variant", pa.string()), ("replication", pa.int64()), ("seq", pa.int64()),
    ("time", pa.float64()), ("reason", pa.string()), ("workload", pa.string()),
    ("pod", pa.string()), ("node", pa.string()), ("value", pa.float64()),
    ("related", pa.string()), ("message", pa.string()),
])
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
    return pa.schema([("variant", pa.string()), ("replication", pa.int64()),
                      ("seed", pa.int64()),
                      *((f.name, _arrow_type(hints[f.name])) for f in fields(WorkloadRecord))])


RECORD_SCHEMA = _record_schema()
