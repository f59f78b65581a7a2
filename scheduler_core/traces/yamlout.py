"""The imported spec as YAML a person can read and a diff can follow: one line per
workload, node pool or initial pod (flow style), everything else in block style.

The general YAML emitter writes 8,152 workloads as ~100,000 lines; this writes 8,152.
Strings are plain when unambiguous, else double-quoted JSON (valid YAML); floats always
carry a dot and never an exponent, so YAML 1.1 loaders read them back as the same numbers.
"""

from __future__ import annotations

import json
import re
from collections.abc import Iterable, Mapping
from decimal import Decimal
from typing import Any

_PLAIN_KEY = re.compile(r"^[A-Za-z_][A-Za-z0-9_-]*$")
_PLAIN_TEXT = re.compile(r"^[A-Za-z][A-Za-z0-9_./-]*$")
_RESERVED = {"y", "n", "yes", "no", "on", "off", "true", "false", "null", "~"}


def dump_spec(mapping: Mapping[str, Any], comments: Iterable[str] = ()) -> str:
    """``mapping`` as YAML; ``comments`` become ``#`` lines at the top (import notes)."""
    lines = [f"# {line}" for c in comments for line in str(c).splitlines()]
    lines.extend(_block(mapping, 0))
    return "\n".join(lines) + "\n"


def _block(mapping: Mapping[str, Any], indent: int) -> list[str]:
    pad = " " * indent
    lines = []
    for key, value in mapping.items():
        head = f"{pad}{_key(key)}:"
        if isinstance(value, Mapping) and value:
            lines.append(head)
            lines.extend(_block(value, indent + 2))
        elif isinstance(value, list) and value and all(_is_int(v) for v in value):
            lines.extend(_int_list(head, value, indent))
        elif isinstance(value, list) and value:
            lines.append(head)
            lines.extend(f"{pad}  - {_flow(item)}" for item in value)
        else:
            lines.append(f"{head} {_flow(value)}")
    return lines


def _is_int(value: Any) -> bool:
    return isinstance(value, int) and not isinstance(value, bool)


INTS_PER_LINE = 25


def _int_list(head: str, values: list[int], indent: int) -> list[str]:
    """A list of numbers (a study's ``podOrder``: 8,152 of them) as one flow sequence
    wrapped every ``INTS_PER_LINE`` numbers, not one line per number."""
    pad = " " * (indent + 2)
    chunks = [values[i : i + INTS_PER_LINE] for i in range(0, len(values), INTS_PER_LINE)]
    body = [", ".join(str(v) for v in chunk) for chunk in chunks]
    if len(body) == 1:
        return [f"{head} [{body[0]}]"]
    return [f"{head} [{body[0]},", *(f"{pad}{b}," for b in body[1:-1]), f"{pad}{body[-1]}]"]


def _flow(value: Any) -> str:
    if isinstance(value, Mapping):
        return "{" + ", ".join(f"{_key(k)}: {_flow(v)}" for k, v in value.items()) + "}"
    if isinstance(value, (list, tuple)):
        return "[" + ", ".join(_flow(v) for v in value) + "]"
    return _scalar(value)


def _key(key: Any) -> str:
    text = str(key)
    if _PLAIN_KEY.match(text) and text.lower() not in _RESERVED:
        return text
    return json.dumps(text, ensure_ascii=False)


def _scalar(value: Any) -> str:
    if value is None:
        return "null"
    if isinstance(value, bool):
        return "true" if value else "false"
    if isinstance(value, int):
        return str(value)
    if isinstance(value, float):
        return _float(value)
    text = str(value)
    if _PLAIN_TEXT.match(text) and text.lower() not in _RESERVED:
        return text
    return json.dumps(text, ensure_ascii=False)


def _float(value: float) -> str:
    if value.is_integer():
        return f"{value:.1f}"
    text = repr(value)
    if "e" in text or "E" in text:
        text = format(Decimal(text), "f")  # the same digits, written out
    return text
