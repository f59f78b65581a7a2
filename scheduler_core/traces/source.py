"""Opening trace files and reading them row by row, with the line and column of each value.

Files are streamed: a path or an uploaded file object (bytes or text, as a Django
``UploadedFile`` or a ``BytesIO``) is decoded incrementally and handed to the ``csv``
module line by line, so a 500 MB trace never sits in memory as text. A JSON or YAML
document, which its parser needs whole, is read and decoded in one piece instead
(:meth:`TraceFile.text`): its bytes and its text, never a string per line.
"""

from __future__ import annotations

import codecs
import csv
import math
from abc import ABC, abstractmethod
from collections.abc import Callable, Iterable, Iterator
from contextlib import contextmanager
from dataclasses import dataclass
from functools import partial
from pathlib import Path
from typing import IO, Any

from scheduler_core.traces.errors import ErrorLog, TraceError

CHUNK_BYTES = 1 << 16


@dataclass(frozen=True)
class TraceFile:
    """A named source of text: what errors call ``file``, and how to read it once."""

    name: str
    opener: Callable[[], IO[Any]]
    close_after: bool = True

    @classmethod
    def from_path(cls, path: str | Path) -> TraceFile:
        return cls(str(path), partial(open, path, "rb"))

    @classmethod
    def from_stream(cls, stream: IO[Any], name: str) -> TraceFile:
        """An already open file object (an upload), left open. Each read starts from the
        beginning when the stream can seek (uploads can), as a two-pass reader needs."""
        return cls(name, partial(_rewound, stream), close_after=False)

    @contextmanager
    def lines(self) -> Iterator[Iterator[str]]:
        """The file's lines, line endings kept (the csv module needs them in quoted fields)."""
        with self._opened() as stream:
            yield _decoded_lines(stream, self.name)

    def text(self) -> str:
        """The whole file as one string, decoded as :meth:`lines` decodes it but without
        cutting it into lines: a JSON or YAML document is parsed whole, and an indented
        ``kubectl get -o json`` dump has millions of lines, each one a string to build
        and join again (a quarter of its import)."""
        with self._opened() as stream:
            return _decoded_text(stream, self.name)

    @contextmanager
    def _opened(self) -> Iterator[IO[Any]]:
        try:
            stream = self.opener()
        except OSError as exc:
            raise TraceError(
                [{"file": self.name, "line": 0, "column": 0, "message": exc.strerror or str(exc)}]
            ) from None
        try:
            yield stream
        finally:
            if self.close_after:
                stream.close()


def _rewound(stream: IO[Any]) -> IO[Any]:
    if getattr(stream, "seekable", lambda: False)():
        stream.seek(0)
    return stream


def as_trace_file(source: TraceFile | str | Path) -> TraceFile:
    return source if isinstance(source, TraceFile) else TraceFile.from_path(source)


def _decoded_lines(stream: IO[Any], name: str) -> Iterator[str]:
    """UTF-8 (a byte-order mark is dropped) decoded chunk by chunk, split after each "\n"
    only, as the csv module counts lines ("\r\n" stays whole across chunks). Bytes that
    are not UTF-8 stop the import with an error at the line they are on."""
    decoder = codecs.getincrementaldecoder("utf-8-sig")()
    pending = ""
    done = 0
    while True:
        chunk = stream.read(CHUNK_BYTES)
        if not chunk:
            break
        text = _decode(decoder, chunk, name, done + pending.count("\n") + 1)
        if done == 0 and not pending and text.startswith("\ufeff"):
            text = text[1:]
        parts = (pending + text).split("\n")
        pending = parts.pop()
        done += len(parts)
        yield from (part + "\n" for part in parts)
    tail = pending + _decode(decoder, b"", name, done + 1, final=True)
    if tail:
        yield tail


def _decode(
    decoder: codecs.IncrementalDecoder,
    chunk: bytes | str,
    name: str,
    line: int,
    *,
    final: bool = False,
) -> str:
    if isinstance(chunk, str):
        return chunk
    try:
        return decoder.decode(chunk, final=final)
    except UnicodeDecodeError as exc:
        raise TraceError(
            [
                {
                    "file": name,
                    "line": line + chunk[: exc.start].count(b"\n"),
                    "column": 0,
                    "message": f"not UTF-8 text ({exc.reason})",
                }
            ]
        ) from None


def _decoded_text(stream: IO[Any], name: str) -> str:
    """:func:`_decoded_lines` joined: the same text (a byte-order mark dropped), the same
    error at the line a byte that is not UTF-8 is on. Read and decoded in one piece: the
    text is needed whole anyway, and a join of chunks would copy it once more."""
    decoder = codecs.getincrementaldecoder("utf-8-sig")()
    text = _decode(decoder, stream.read(), name, 1, final=True)
    return text[1:] if text.startswith("\ufeff") else text


def read_text(file: TraceFile) -> str:
    """A whole (JSON) document; its readers need the full text anyway."""
    try:
        return file.text()
    except UnicodeDecodeError as exc:  # a text-mode stream that decodes on its own
        raise TraceError(
            [
                {
                    "file": file.name,
                    "line": 0,
                    "column": 0,
                    "message": f"not UTF-8 text ({exc.reason})",
                }
            ]
        ) from None


class Record(ABC):
    """One row or record: typed getters that record an error (and return None) on a bad
    value. Subclasses say where a field's raw value is and which column it is in."""

    __slots__ = ("file", "line", "log", "ok")

    def __init__(self, file: str, line: int, log: ErrorLog) -> None:
        self.file, self.line, self.log = file, line, log
        self.ok = True

    @abstractmethod
    def raw(self, column: str) -> Any:
        """The field's value as stored (a CSV string, a JSON value); None when absent."""

    @abstractmethod
    def column_number(self, column: str) -> int:
        """1-based position of the field in its line; 0 when it is not there."""

    def error(self, column: str | None, message: str) -> None:
        """Record a problem with this row; ``column`` None means the whole row."""
        self.ok = False
        number = self.column_number(column) if column else 0
        prefix = f"{column}: " if column else ""
        self.log.add(self.file, self.line, number, prefix + message)

    def text(self, column: str, *, required: bool = True) -> str | None:
        """The stripped value as text; empty is None (an error when ``required``)."""
        value = self.raw(column)
        if isinstance(value, (dict, list)):
            self.error(column, "must be a single value")
            return None
        text = "" if value is None else str(value).strip()
        if text:
            return text
        if required:
            self.error(column, "is empty")
        return None

    def number(self, column: str, *, required: bool = True, minimum: float = 0.0) -> float | None:
        """A finite number >= ``minimum`` (traces write '475.00000000000006')."""
        value = self.text(column, required=required)
        if value is None:
            return None
        try:
            number = float(value)
        except ValueError:
            self.error(column, f"'{value}' is not a number")
            return None
        if not math.isfinite(number) or number < minimum:
            self.error(column, f"{value} is out of range (must be at least {minimum:g})")
            return None
        return number

    def integer(self, column: str, *, required: bool = True, minimum: int = 0) -> int | None:
        """A whole number; '8' and '8.0' are fine, '1.5' is an error."""
        value = self.text(column, required=required)
        if value is None:
            return None
        try:
            number = float(value)
        except ValueError:
            number = math.nan
        if not number.is_integer():
            self.error(column, f"'{value}' is not a whole number")
            return None
        if number < minimum:
            self.error(column, f"{value} is out of range (must be at least {minimum})")
            return None
        return int(number)

    def choice(self, column: str, choices: Iterable[str], *, required: bool = True) -> str | None:
        value = self.text(column, required=required)
        allowed = list(choices)
        if value is not None and value not in allowed:
            self.error(column, f"'{value}' is not one of {', '.join(allowed)}")
            return None
        return value

    def boolean(self, column: str, *, default: bool = False) -> bool:
        value = self.text(column, required=False)
        if value is None:
            return default
        if value.lower() in ("true", "yes", "1"):
            return True
        if value.lower() in ("false", "no", "0"):
            return False
        self.error(column, f"'{value}' is not true or false")
        return default


class Row(Record):
    """A CSV row: fields by header position."""

    __slots__ = ("index", "values")

    def __init__(
        self, file: str, line: int, values: list[str], index: dict[str, int], log: ErrorLog
    ) -> None:
        super().__init__(file, line, log)
        self.values, self.index = values, index

    def raw(self, column: str) -> Any:
        position = self.index.get(column)
        return None if position is None else self.values[position]

    def column_number(self, column: str) -> int:
        position = self.index.get(column)
        return 0 if position is None else position + 1

    def has(self, column: str) -> bool:
        return column in self.index


class CsvTable:
    """A CSV file with a header row (or a header given separately), read row by row."""

    def __init__(
        self, name: str, lines: Iterator[str], log: ErrorLog, header: list[str] | None = None
    ) -> None:
        self.name = name
        self.log = log
        self._reader = csv.reader(lines)
        self._header_lines = 0 if header is not None else 1
        self.columns = header if header is not None else self._read_header()
        self.index = {c: i for i, c in enumerate(self.columns)}

    def _read_header(self) -> list[str]:
        try:
            header = next(self._reader, [])
        except (csv.Error, UnicodeDecodeError) as exc:
            self.log.add(self.name, 1, 0, f"unreadable header: {exc}")
            return []
        return [c.strip() for c in header]

    def require(self, *columns: str) -> bool:
        """Every needed column is present, or one error per missing column (line 1)."""
        missing = [c for c in columns if c not in self.index]
        for column in missing:
            self.log.add(
                self.name,
                self._header_lines,
                0,
                f"missing column '{column}' "
                f"(the header has: {', '.join(self.columns) or 'nothing'})",
            )
        return not missing

    def rows(self) -> Iterator[Row]:
        """Every non-blank row; a row with the wrong number of fields is an error."""
        reader = self._reader
        width = len(self.columns)
        while True:
            try:
                values = next(reader)
            except StopIteration:
                return
            except (csv.Error, UnicodeDecodeError) as exc:
                self.log.add(self.name, reader.line_num + 1, 0, f"unreadable row: {exc}")
                return
            line = reader.line_num
            if not values or values == [""]:
                continue
            if len(values) != width:
                self.log.add(
                    self.name,
                    line,
                    min(len(values), width) + 1,
                    f"expected {width} fields ({', '.join(self.columns)}), found {len(values)}",
                )
                continue
            yield Row(self.name, line, values, self.index, self.log)
