"""Import errors that point at the bad spot in the user's file.

A trace import is all-or-nothing: readers record every problem they find (up to a cap,
so a wrong file does not produce 100,000 lines) and the import raises one
:class:`TraceError` at the end instead of returning a half-built cluster.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import TypedDict

MAX_ERRORS = 50


class ImportErrorItem(TypedDict):
    """One problem: ``line`` and ``column`` are 1-based; 0 means "the whole file/row"."""

    file: str
    line: int
    column: int
    message: str


class TraceError(ValueError):
    """A trace that cannot be imported; ``errors`` lists ``{file, line, column, message}``."""

    def __init__(self, errors: list[ImportErrorItem]) -> None:
        self.errors = errors
        super().__init__("\n".join(format_error(e) for e in errors))


def format_error(error: ImportErrorItem) -> str:
    """``file:line:column: message``, the shape compilers use, so editors can jump to it."""
    return f"{error['file']}:{error['line']}:{error['column']}: {error['message']}"


class ErrorLimitError(Exception):
    """Raised inside a reader once the cap is reached, to stop reading a hopeless file."""


@dataclass
class ErrorLog:
    """Collects errors across every file of one import."""

    errors: list[ImportErrorItem] = field(default_factory=list)
    limit: int = MAX_ERRORS

    def add(self, file: str, line: int, column: int, message: str) -> None:
        self.errors.append({"file": file, "line": line, "column": column, "message": message})
        if len(self.errors) >= self.limit:
            self.errors.append(
                {
                    "file": file,
                    "line": line,
                    "column": 0,
                    "message": f"too many errors; stopped after {self.limit}",
                }
            )
            raise ErrorLimitError

    def __bool__(self) -> bool:
        return bool(self.errors)

    def raise_if_any(self) -> None:
        """Nothing half-imported: any recorded error fails the whole import."""
        if self.errors:
            raise TraceError(list(self.errors))
