"""The one way a spec document becomes Python data: the CLI, the editor's YAML tab, the
REST API and the trace importers all read through :func:`load_document`.

Why one loader: a document read two ways means two products. Here JSON is read as JSON
(YAML 1.1 would turn ``1e308`` into a string and accept ``NaN``), YAML as YAML, and
both refuse what would otherwise pass silently or take a worker down:

- a key given twice (both readers would keep the last one without a word), with its line;
- YAML aliases that expand a few hundred bytes into billions of values (an anchor bomb);
- nesting deeper than any spec needs (a 100,000-deep JSON array overflows the stack);
- NUL characters and lone surrogates in strings, which no database or file can store.

Every refusal is a :class:`~scheduler_core.spec.SpecError` naming where the problem is.
"""

from __future__ import annotations

import json
import re
from collections.abc import Mapping
from typing import TYPE_CHECKING, Any

import yaml

MAX_DEPTH = 64
"""Nesting levels a document may have. A spec needs about eight; grid and override
values a few more."""
MAX_ALIAS_EXPANSION = 100_000
"""Values that YAML aliases may add to a document beyond those written out. Anchors and
merge keys for shared defaults stay far below it; an anchor bomb reaches it at once."""

_BAD_CHARACTER = re.compile("[\x00\ud800-\udfff]")
if TYPE_CHECKING:  # the C loader is untyped; it has the pure-Python one's interface
    _BASE_LOADER = yaml.SafeLoader
else:
    _BASE_LOADER = getattr(yaml, "CSafeLoader", yaml.SafeLoader)


class DocumentError(ValueError):
    """A document that cannot be read; ``path`` and ``message`` as in a SpecError item."""

    def __init__(self, message: str, path: str = "") -> None:
        self.path = path
        self.message = message
        super().__init__(f"{path}: {message}" if path else message)


class _DuplicateKeyError(ValueError):
    def __init__(self, key: str) -> None:
        self.key = key
        super().__init__(key)


class _StrictLoader(_BASE_LOADER):
    """PyYAML's safe loader (libyaml's when built with it) that refuses duplicate keys."""

    def construct_mapping(self, node: yaml.MappingNode, deep: bool = False) -> dict[Any, Any]:
        seen: set[Any] = set()
        for key_node, _ in node.value:
            if key_node.tag == "tag:yaml.org,2002:merge":
                continue  # explicit keys may override merged ones: that is what << is for
            key = self.construct_object(key_node, deep=True)
            try:
                duplicate = key in seen
            except TypeError:  # an unhashable key: SafeConstructor reports it properly
                break
            if duplicate:
                mark = key_node.start_mark
                raise DocumentError(
                    f"duplicate key '{key}' at line {mark.line + 1}, column {mark.column + 1}"
                )
            seen.add(key)
        return super().construct_mapping(node, deep=deep)


def load_document(text: str, *, fmt: str | None = None) -> Any:
    """Parse a spec document: JSON when ``fmt`` is ``"json"`` or the text starts like a
    JSON object or array, YAML otherwise (a YAML flow mapping such as ``{a: 1}`` that is
    not JSON is read as YAML). Raises :class:`DocumentError`.

    The result is plain data whose strings hold no NUL or lone surrogate, nested at most
    :data:`MAX_DEPTH` deep, that aliases do not expand by more than
    :data:`MAX_ALIAS_EXPANSION` values.
    """
    _check_text(text)
    stripped = text.lstrip()
    if fmt == "json":
        data = _load_json(text)
    elif stripped.startswith(("{", "[")):
        try:
            data = _load_json(text)
        except DocumentError as json_error:
            if stripped.startswith(('{"', "[")) or "duplicate key" in json_error.message:
                raise
            data = _load_yaml(text)
    else:
        data = _load_yaml(text)
    check_data(data)
    return data


def _check_text(text: str) -> None:
    match = _BAD_CHARACTER.search(text)
    if match:
        line = text.count("\n", 0, match.start()) + 1
        what = "a NUL character" if match.group() == "\x00" else "a lone surrogate"
        raise DocumentError(f"{what} at line {line}: text may not contain it")


def _load_json(text: str) -> Any:
    try:
        return json.loads(text, object_pairs_hook=_unique_pairs, parse_constant=_no_constant)
    except _DuplicateKeyError as exc:
        raise DocumentError(f"duplicate key '{exc.key}'{_json_key_line(text, exc.key)}") from None
    except json.JSONDecodeError as exc:
        raise DocumentError(
            f"malformed JSON: line {exc.lineno}, column {exc.colno}: {exc.msg}"
        ) from None
    except RecursionError:
        raise DocumentError(f"nested more than {MAX_DEPTH} levels deep") from None
    except ValueError as exc:  # NaN/Infinity, or an integer of more than 4,300 digits
        raise DocumentError(f"malformed JSON: {exc}") from None


def _unique_pairs(pairs: list[tuple[str, Any]]) -> dict[str, Any]:
    result: dict[str, Any] = {}
    for key, value in pairs:
        if key in result:
            raise _DuplicateKeyError(key)
        result[key] = value
    return result


def _no_constant(name: str) -> Any:
    raise ValueError(f"{name} is not a JSON number")


def _json_key_line(text: str, key: str) -> str:
    """The line of the key's second occurrence: where the duplicate most likely is (the
    fast C decoder does not say where it was)."""
    pattern = re.compile(re.escape(json.dumps(key)) + r"\s*:")
    matches = list(pattern.finditer(text))
    if len(matches) < 2:
        return ""
    return f" at line {text.count(chr(10), 0, matches[1].start()) + 1}"


def _load_yaml(text: str) -> Any:
    try:
        return yaml.load(text, Loader=_StrictLoader)  # a SafeLoader subclass
    except DocumentError:
        raise
    except yaml.YAMLError as exc:
        mark = getattr(exc, "problem_mark", None)
        where = f"line {mark.line + 1}, column {mark.column + 1}: " if mark else ""
        problem = getattr(exc, "problem", None) or str(exc)
        raise DocumentError(f"malformed YAML: {where}{problem}") from None
    except RecursionError:
        raise DocumentError(f"nested more than {MAX_DEPTH} levels deep") from None
    except ValueError as exc:  # e.g. an integer of more than 4,300 digits
        raise DocumentError(f"malformed YAML: {exc}") from None


def check_data(data: Any) -> None:
    """Refuse parsed data that is too deep, expands too far through shared (aliased)
    values, or holds a string no store can keep. One pass over each distinct container,
    so an anchor bomb costs as much as it is long, not as much as it expands."""
    expanded: dict[int, int] = {}
    open_: set[int] = set()
    written = 0
    stack: list[tuple[Any, str, int, bool]] = [(data, "", 0, False)]
    while stack:
        value, path, depth, children_done = stack.pop()
        if isinstance(value, str):
            _check_string(value, path)
            continue
        if not isinstance(value, Mapping | list):
            continue
        ident = id(value)
        if children_done:
            open_.discard(ident)
            expanded[ident] = 1 + sum(expanded.get(id(c), 1) for c in _children(value))
            continue
        if ident in open_:
            raise DocumentError("an alias refers to a value that contains it", path)
        if ident in expanded:
            continue  # shared through an alias: walked once, counted in every parent's sum
        if depth >= MAX_DEPTH:
            raise DocumentError(f"nested more than {MAX_DEPTH} levels deep", path)
        expanded[ident] = 1
        open_.add(ident)
        stack.append((value, path, depth, True))
        items = value.items() if isinstance(value, Mapping) else enumerate(value)
        written += 1
        for key, child in items:
            if isinstance(key, str):
                _check_string(key, path)
            if not isinstance(child, Mapping | list):
                written += 1
            stack.append((child, _join(path, key), depth + 1, False))
    if expanded.get(id(data), 1) - written > MAX_ALIAS_EXPANSION:
        raise DocumentError(
            f"YAML aliases expand the document by more than "
            f"{MAX_ALIAS_EXPANSION:,} values; write the values out"
        )


def _children(value: Mapping[Any, Any] | list[Any]) -> Any:
    return value.values() if isinstance(value, Mapping) else value


def _check_string(value: str, path: str) -> None:
    match = _BAD_CHARACTER.search(value)
    if match:
        what = "a NUL character" if match.group() == "\x00" else "a lone surrogate"
        raise DocumentError(f"contains {what}, which text may not contain", path)


def _join(path: str, key: Any) -> str:
    if isinstance(key, int):
        return f"{path}[{key}]"
    return f"{path}.{key}" if path else str(key)
