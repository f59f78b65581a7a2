"""A replication's event log as one zstd-compressed Parquet blob, and the reads on it.

One row per event in the database cost about 295 bytes (six indexes) and more than half
of a Celery task's time. The log is written once, never updated, and always read one
replication at a time, so it is stored whole, as a column of its replication
(``Replication.event_log``): a few bytes per event (the columns repeat: dictionary
encoding and zstd fold them), written in one statement inside the transaction that
stores the results, and deleted with the row that holds it.

Reads decode the columns they need into Arrow and filter there; a row's ``seq`` is its
position in the log, so the simulator's order among equal times is the row order.
Nothing here reads or compares reason names: filters take them from the caller.
"""

from __future__ import annotations

import io
from collections.abc import Iterable, Iterator, Mapping, Sequence
from dataclasses import asdict, dataclass
from typing import Any, overload

import pyarrow as pa
import pyarrow.compute as pc
import pyarrow.parquet as pq

SCHEMA = pa.schema(
    [
        ("time", pa.float64()),
        ("reason", pa.string()),
        ("workload", pa.string()),
        ("pod", pa.string()),
        ("node", pa.string()),
        ("value", pa.float64()),
        ("related", pa.string()),
        ("message", pa.string()),
        ("decision", pa.int32()),
    ]
)
"""The stored columns. A change to them is a data migration (as 0005 was), so a blob
carries no version of its own."""
COLUMNS = tuple(SCHEMA.names)
TEXT_FILTERS = ("reason", "workload", "pod", "node")
"""Exact-match filters, by column."""
ZSTD_LEVEL = 3
"""Measured on the openb log (65,800 events, 2026-12-04): level 3 writes 4.60 bytes per
event in 10-15 ms, level 9 4.35 bytes in 22-35 ms. Writing is part of every task, the
5 % more bytes are not worth twice the compression time."""

EventRow = tuple[float, str, str, str, str, float, str, str, int | None]
"""(time, reason, workload, pod, node, value, related, message, decision): one event as
the encoder takes it, in ``COLUMNS`` order."""


def encode(rows: Iterable[EventRow]) -> bytes:
    """The rows, in log order, as one Parquet file in memory (:func:`encode_columns`)."""
    columns: list[Sequence[Any]] = list(zip(*rows, strict=True)) or [() for _ in COLUMNS]
    return encode_columns(columns)


def encode_columns(columns: Sequence[Sequence[Any]]) -> bytes:
    """The log as one Parquet file in memory, from its columns in ``COLUMNS`` order (each
    as long as the log; a string column may hold ``str`` subclasses such as the
    simulator's reasons, stored as their text). Strings are dictionary encoded (a log
    names a few thousand pods many times over), floats byte-stream split (their
    exponents then compress), everything zstd. The writer takes columns because a
    worker has them as such: building a tuple per event and transposing them was a
    third of the encoding of a 65,800-event log."""
    table = pa.Table.from_arrays(
        [pa.array(values, type=SCHEMA.field(i).type) for i, values in enumerate(columns)],
        schema=SCHEMA,
    )
    out = io.BytesIO()
    pq.write_table(
        table,
        out,
        compression="zstd",
        compression_level=ZSTD_LEVEL,
        use_dictionary=["reason", "workload", "pod", "node", "related", "message"],
        use_byte_stream_split=["time", "value"],
        write_statistics=False,  # nothing reads by row group: no min/max per column
        store_schema=False,  # the Parquet types read back as SCHEMA's: 0.8 kB less per blob
    )
    return out.getvalue()


@dataclass(frozen=True, slots=True)
class StoredEvent:
    """One stored event; ``decision`` is the id of the decision record that explains it
    (None: none does)."""

    seq: int
    time: float
    reason: str
    workload: str
    pod: str
    node: str
    value: float
    related: str
    message: str
    decision: int | None

    def as_dict(self) -> dict[str, Any]:
        return asdict(self)


class EventLog(Sequence[StoredEvent]):
    """A replication's events (or a filtered subset), in log order.

    Holds the decoded Arrow columns and the positions of the chosen rows; a slice
    materialises only its own rows, so Django's and DRF's paginators page it cheaply.
    """

    def __init__(self, table: pa.Table, positions: pa.Array | None = None) -> None:
        self._table = table
        self._positions = (
            positions if positions is not None else pa.array(range(table.num_rows), pa.int64())
        )

    @classmethod
    def decode(cls, blob: bytes | memoryview | None, columns: Sequence[str] = COLUMNS) -> EventLog:
        """The stored blob, ``columns`` only (the others are not decompressed); no blob
        (a replication without results) is an empty log."""
        if not blob:
            return cls(SCHEMA.empty_table().select(list(columns)))
        return cls(pq.read_table(pa.BufferReader(bytes(blob)), columns=list(columns)))

    def filter(
        self,
        exact: Mapping[str, str] | None = None,
        *,
        reasons: Iterable[str] = (),
        time_min: float | None = None,
        time_max: float | None = None,
        after_setup: bool = False,
    ) -> EventLog:
        """The events matching every filter given: ``exact`` values by column (of
        ``TEXT_FILTERS``; an empty value filters nothing), any of ``reasons``,
        ``time_min <= time <= time_max``; ``after_setup`` keeps only t > 0 (the setup
        rows are the initial placement)."""
        exact = {name: value for name, value in (exact or {}).items() if value}
        unknown = set(exact) - set(TEXT_FILTERS)
        if unknown:
            raise ValueError(f"no exact filter on {', '.join(sorted(unknown))}")
        masks = [pc.equal(self._column(name), value) for name, value in exact.items()]
        wanted = list(reasons)
        if wanted:
            masks.append(pc.is_in(self._column("reason"), value_set=pa.array(wanted, pa.string())))
        if time_min is not None:
            masks.append(pc.greater_equal(self._column("time"), time_min))
        if time_max is not None:
            masks.append(pc.less_equal(self._column("time"), time_max))
        if after_setup:
            masks.append(pc.greater(self._column("time"), 0.0))
        if not masks:
            return self
        mask = masks[0]
        for more in masks[1:]:
            mask = pc.and_(mask, more)
        return EventLog(self._table, self._positions.filter(mask))

    def _column(self, name: str) -> pa.Array:
        return self._table.column(name).combine_chunks().take(self._positions)

    def reasons(self) -> list[str]:
        """The distinct reasons present, sorted (what a filter can offer)."""
        return sorted(pc.unique(self._column("reason")).to_pylist())

    def setup_count(self) -> int:
        """Rows at t <= 0: the initial placement, which the log viewers fold away so
        that what happened (the preemption) shows first."""
        return len(self) - len(self.filter(after_setup=True))

    def __len__(self) -> int:
        return len(self._positions)

    @overload
    def __getitem__(self, index: int) -> StoredEvent: ...

    @overload
    def __getitem__(self, index: slice) -> list[StoredEvent]: ...

    def __getitem__(self, index: int | slice) -> StoredEvent | list[StoredEvent]:
        if isinstance(index, int):
            found = self[index : index + 1] if index >= 0 else self[index:][:1]
            if not found:
                raise IndexError(index)
            return found[0]
        start, stop, step = index.indices(len(self))
        return list(self._events(self._positions[start:stop:step] if step == 1 else None, index))

    def __iter__(self) -> Iterator[StoredEvent]:
        return self._events(self._positions, slice(None))

    def _events(self, positions: pa.Array | None, index: slice) -> Iterator[StoredEvent]:
        if positions is None:  # a stepped slice: rare, done on Python lists
            positions = pa.array(self._positions.to_pylist()[index], pa.int64())
        rows = self._table.take(positions)
        missing = [None] * rows.num_rows
        values = [
            rows.column(name).to_pylist() if name in rows.column_names else missing
            for name in COLUMNS
        ]
        for seq, *fields in zip(positions.to_pylist(), *values, strict=True):
            yield StoredEvent(seq, *fields)

    def columns(self, names: Sequence[str]) -> Iterator[tuple[Any, ...]]:
        """The chosen rows as plain tuples of ``names`` (cheaper than events when a
        chart reads 100,000 of them), ``seq`` first."""
        rows = self._table.take(self._positions)
        values = [rows.column(name).to_pylist() for name in names]
        return zip(self._positions.to_pylist(), *values, strict=True)
