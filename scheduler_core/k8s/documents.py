"""Kubernetes objects out of files: YAML or JSON, one or many documents, ``kind: List``,
``kubectl get -o yaml|json``, a KWOK snapshot, a kube-scheduler-simulator export.

Every object keeps the file, line and column where it starts, so an error about it (a
missing PriorityClass, 1.5 GPUs) points the user at the right spot. JSON takes a fast
path (the C decoder, object by object): a 140,000-pod ``kubectl get -o json`` dump is
read in a second or two, where a YAML parser would need minutes.
"""

from __future__ import annotations

import json
import re
from collections.abc import Iterable, Iterator
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import yaml

from scheduler_core.documents import DocumentError, check_data
from scheduler_core.traces.build import Origin
from scheduler_core.traces.errors import ErrorLog
from scheduler_core.traces.source import TraceFile, as_trace_file, read_text

_LOADER: Any = getattr(yaml, "CSafeLoader", yaml.SafeLoader)
_TEXT_ESCAPES = re.compile(r"\\u(?:0000|[dD][89abcdefABCDEF])")
"""How JSON text can hold a NUL or a lone surrogate (it may hold neither raw): only a
file with one of these escapes has its objects walked by the loader's checks."""
MANIFEST_SUFFIXES = (".yaml", ".yml", ".json")
SIMULATOR_KEYS = {
    "pods": "Pod",
    "nodes": "Node",
    "priorityClasses": "PriorityClass",
    "pvs": "PersistentVolume",
    "pvcs": "PersistentVolumeClaim",
    "storageClasses": "StorageClass",
    "namespaces": "Namespace",
}
"""kube-scheduler-simulator's export: one list per resource, objects without a ``kind``."""
SIMULATOR_CONFIG = "schedulerConfig"
"""The export's scheduler configuration: read as a ``KubeSchedulerConfiguration`` item
(named in the notes, never silently dropped)."""


@dataclass(frozen=True, slots=True)
class Item:
    """One Kubernetes object and where it starts in its file."""

    data: dict[str, Any]
    origin: Origin

    @property
    def kind(self) -> str:
        return str(self.data.get("kind", ""))

    @property
    def api_group(self) -> str:
        version = str(self.data.get("apiVersion", ""))
        return version.rpartition("/")[0] if "/" in version else ""

    @property
    def meta(self) -> dict[str, Any]:
        meta = self.data.get("metadata")
        return meta if isinstance(meta, dict) else {}

    @property
    def spec(self) -> dict[str, Any]:
        spec = self.data.get("spec")
        return spec if isinstance(spec, dict) else {}

    @property
    def status(self) -> dict[str, Any]:
        status = self.data.get("status")
        return status if isinstance(status, dict) else {}

    @property
    def name(self) -> str:
        return str(self.meta.get("name", "?"))

    @property
    def namespace(self) -> str:
        return str(self.meta.get("namespace") or "default")

    @property
    def label(self) -> str:
        """``Pod ml/worker-0``: how errors and notes name the object."""
        where = f"{self.meta['namespace']}/" if self.meta.get("namespace") else ""
        return f"{self.kind} {where}{self.name}"


def expand_sources(sources: Iterable[TraceFile | str | Path], log: ErrorLog) -> list[TraceFile]:
    """Files as given; a folder stands for its manifests (``*.yaml``, ``*.yml``,
    ``*.json``, recursively, in name order)."""
    files: list[TraceFile] = []
    for source in sources:
        path = _folder(source)
        if path is not None:
            found = sorted(
                p for p in path.rglob("*") if p.is_file() and p.suffix.lower() in MANIFEST_SUFFIXES
            )
            if not found:
                log.add(str(path), 0, 0, "no *.yaml, *.yml or *.json file in this folder")
            files.extend(TraceFile.from_path(p) for p in found)
        else:
            files.append(as_trace_file(source))
    return files


def _folder(source: TraceFile | str | Path) -> Path | None:
    """A folder given by path (an upload is never one)."""
    if isinstance(source, TraceFile):
        if not source.close_after:
            return None
        source = source.name
    path = Path(source)
    return path if path.is_dir() else None


def read_items(file: TraceFile, log: ErrorLog) -> list[Item]:
    """Every object of one file, Lists flattened; a syntax error is logged, not raised."""
    text = read_text(file)
    start = _skip(text, 0)
    if start < len(text) and text[start] in "{[":
        return list(_json_items(text, file.name, log))
    return list(_yaml_items(text, file.name, log))


# ============================================================================ JSON
def _json_items(text: str, name: str, log: ErrorLog) -> list[Item]:
    """One pass of the C decoder over the top level, element by element, so each object
    knows its offset; anything unexpected falls back to ``json.loads`` for its error."""
    lines = _Lines(text)
    try:
        found = _json_walk(text, json.JSONDecoder())
    except RecursionError:
        log.add(name, 1, 1, "not JSON this reader accepts: nested too deeply")
        return []
    except (ValueError, IndexError):
        try:
            json.loads(text)
        except json.JSONDecodeError as exc:
            log.add(name, exc.lineno, exc.colno, f"not JSON: {exc.msg}")
            return []
        found = None
    if found is None:
        log.add(
            name,
            1,
            1,
            "expected Kubernetes objects: an object with a kind, a List "
            "with items, or a kube-scheduler-simulator export",
        )
        return []
    escaped = _TEXT_ESCAPES.search(text) is not None
    items = []
    for offset, kind, obj in found:
        if kind and "kind" not in obj:
            obj = {"kind": kind, **obj}
        origin = Origin(name, *lines.position(offset))
        if escaped and not _checked(obj, origin, log):
            continue
        items.append(Item(obj, origin))
    return items


def _checked(obj: dict[str, Any], origin: Origin, log: ErrorLog) -> bool:
    """The loader's checks on one object (``\\u0000`` or a lone surrogate escape)."""
    try:
        check_data(obj)
    except DocumentError as exc:
        where = f"{exc.path}: " if exc.path else ""
        log.add(origin.file, origin.line, origin.column, f"{where}{exc.message}")
        return False
    return True


def _json_walk(
    text: str, decoder: json.JSONDecoder
) -> list[tuple[int, str, dict[str, Any]]] | None:
    """``(offset, implied kind, object)`` for each object, or None for another shape."""
    index = _skip(text, 0)
    if text[index] == "[":
        elements, end = _array(decoder, text, index)
        _expect_end(text, end)
        return [(o, "", v) for o, v in elements if isinstance(v, dict)]
    if text[index] != "{":
        return None
    members: dict[str, Any] = {}
    arrays: dict[str, list[tuple[int, Any]]] = {}
    index = _skip(text, index + 1)
    while text[index] != "}":
        key, index = decoder.raw_decode(text, index)
        index = _skip(text, index)
        if text[index] != ":":
            raise ValueError("expected ':'")
        index = _skip(text, index + 1)
        if text[index] == "[":
            arrays[key], index = _array(decoder, text, index)
        else:
            members[key], index = decoder.raw_decode(text, index)
        index = _skip(text, index)
        if text[index] == ",":
            index = _skip(text, index + 1)
        elif text[index] != "}":
            raise ValueError("expected ',' or '}'")
    _expect_end(text, index + 1)
    start = _skip(text, 0)
    if "items" in arrays:
        return [(o, "", v) for o, v in arrays["items"] if isinstance(v, dict)]
    if members.get("kind") and not arrays.keys() & SIMULATOR_KEYS.keys():
        whole = {**members, **{k: [v for _, v in a] for k, a in arrays.items()}}
        return [(start, "", whole)]
    if arrays.keys() & SIMULATOR_KEYS.keys() or members.keys() & SIMULATOR_KEYS.keys():
        found = [
            (o, SIMULATOR_KEYS[k], v)
            for k, a in arrays.items()
            if k in SIMULATOR_KEYS
            for o, v in a
            if isinstance(v, dict)
        ]
        for key, value in members.items():  # {"pods": {"items": [...]}}: a List per key
            if key in SIMULATOR_KEYS and isinstance(value, dict):
                found += [
                    (start, SIMULATOR_KEYS[key], v)
                    for v in value.get("items") or []
                    if isinstance(v, dict)
                ]
        if isinstance(members.get(SIMULATOR_CONFIG), dict):
            found.append(
                (
                    start,
                    "KubeSchedulerConfiguration",
                    {"metadata": {"name": SIMULATOR_CONFIG}, **members[SIMULATOR_CONFIG]},
                )
            )
        return found
    return None


def _array(decoder: json.JSONDecoder, text: str, index: int) -> tuple[list[tuple[int, Any]], int]:
    elements = []
    index = _skip(text, index + 1)
    while text[index] != "]":
        value, end = decoder.raw_decode(text, index)
        elements.append((index, value))
        index = _skip(text, end)
        if text[index] == ",":
            index = _skip(text, index + 1)
        elif text[index] != "]":
            raise ValueError("expected ',' or ']'")
    return elements, index + 1


def _expect_end(text: str, index: int) -> None:
    if _skip(text, index) < len(text):
        raise ValueError("extra data")


# ============================================================================ YAML
def _yaml_items(text: str, name: str, log: ErrorLog) -> Iterator[Item]:
    """Each document (and each List item) with the line the parser marks it at."""
    loader = _LOADER(text)
    try:
        while loader.check_node():
            node = loader.get_node()
            data = loader.construct_document(node)
            if data is None:
                continue
            origin = Origin(name, node.start_mark.line + 1, node.start_mark.column + 1)
            if not _checked(data, origin, log):  # aliases without bound, nesting, NUL
                continue
            yield from _yaml_document(data, node, name, log)
    except yaml.YAMLError as exc:
        mark = getattr(exc, "problem_mark", None) or getattr(exc, "context_mark", None)
        problem = getattr(exc, "problem", None) or str(exc)
        line, column = (mark.line + 1, mark.column + 1) if mark else (0, 0)
        log.add(name, line, column, f"malformed YAML: {problem}")
    finally:
        loader.dispose()


def _yaml_document(data: Any, node: Any, name: str, log: ErrorLog) -> Iterator[Item]:
    origin = Origin(name, node.start_mark.line + 1, node.start_mark.column + 1)
    if isinstance(data, list):
        for child, obj in zip(node.value, data, strict=True):
            yield from _yaml_document(obj, child, name, log)
        return
    if not isinstance(data, dict):
        log.add(
            name,
            origin.line,
            origin.column,
            "expected a Kubernetes object (a mapping with apiVersion and kind)",
        )
        return
    children = {k.value: v for k, v in node.value if isinstance(k.value, str)}
    lists = [
        (key, children[key])
        for key in ("items", *SIMULATOR_KEYS)
        if isinstance(data.get(key), list) and key in children
    ]
    if lists and (data.get("kind") in (None, "List") or str(data.get("kind")).endswith("List")):
        for key, seq in lists:
            kind = SIMULATOR_KEYS.get(key, "")
            for child, obj in zip(seq.value, data[key], strict=True):
                if isinstance(obj, dict):
                    if kind and "kind" not in obj:
                        obj = {"kind": kind, **obj}
                    yield Item(
                        obj, Origin(name, child.start_mark.line + 1, child.start_mark.column + 1)
                    )
        return
    yield Item(data, origin)  # without a kind: listed in the notes as not Kubernetes


# ============================================================================ positions
class _Lines:
    """Line and column of offsets asked in increasing order, counting the newlines
    between one offset and the next with ``str.count`` (C speed): ``kubectl get -o json``
    indents, so a 140,000-pod dump has millions of lines, and a Python loop over them
    would cost seconds."""

    def __init__(self, text: str) -> None:
        self.text = text
        self.offset = 0
        self.line = 1
        self.line_start = 0

    def position(self, offset: int) -> tuple[int, int]:
        """(line, column), both 1-based; each character is looked at once overall."""
        if offset < self.offset:  # out of order (rare): count again from the start
            self.offset, self.line, self.line_start = 0, 1, 0
        newlines = self.text.count("\n", self.offset, offset)
        if newlines:
            self.line += newlines
            self.line_start = self.text.rfind("\n", self.offset, offset) + 1
        self.offset = offset
        return self.line, offset - self.line_start + 1


def _skip(text: str, index: int) -> int:
    while index < len(text) and text[index] in " \t\r\n\ufeff":
        index += 1
    return index
