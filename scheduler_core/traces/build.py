"""Shared pieces of every importer: names, node pools, compact workloads, validation.

An importer produces a spec *mapping* and the provenance of each item (which file and
line it came from), then :func:`finish` validates it through ``parse_spec``, so an error
the spec finds (a pod larger than every node) still points at the row that caused it.
"""

from __future__ import annotations

import re
from collections.abc import Mapping
from dataclasses import dataclass, field
from functools import cache
from typing import Any

from scheduler_core.spec import ExperimentSpec, SpecError, Workload, parse_spec
from scheduler_core.traces.errors import ImportErrorItem, TraceError

GPU_MODEL_LABEL = "nvidia.com/gpu.product"
_NOT_DNS = re.compile(r"[^a-z0-9-]+")
_PATH_ITEM = re.compile(r"^((?:workloads|cluster\.nodes|cluster\.nodePools|initialState)\[\d+\])")


def dns_name(text: str, fallback: str = "w") -> str:
    """A workload/pool name the spec accepts: lowercase letters, digits and dashes.

    Dots are replaced too: variant overrides address workloads as ``workloads.<name>``."""
    name = _NOT_DNS.sub("-", text.lower()).strip("-")
    name = re.sub(r"-{2,}", "-", name)[:63].strip("-")
    return name or fallback


@dataclass(frozen=True, slots=True)
class Origin:
    """Where an item of the spec came from."""

    file: str
    line: int
    column: int = 0


@dataclass
class Provenance:
    """Spec path prefix (``workloads[12]``) -> the file and line it came from."""

    items: dict[str, Origin] = field(default_factory=dict)
    default_file: str = ""

    def record(self, path: str, origin: Origin) -> None:
        self.items[path] = origin

    def locate(self, path: str) -> Origin:
        match = _PATH_ITEM.match(path)
        if match and match.group(1) in self.items:
            return self.items[match.group(1)]
        return Origin(self.default_file, 0)


@dataclass
class NodeGrouper:
    """Identical nodes become one pool (``count: 549``); a one-off shape stays a named
    node under its own name. Pools keep the order their shape first appeared in."""

    shapes: dict[tuple[Any, ...], list[tuple[str, Origin]]] = field(default_factory=dict)
    fields: dict[tuple[Any, ...], dict[str, Any]] = field(default_factory=dict)
    labels: dict[tuple[Any, ...], dict[str, str]] = field(default_factory=dict)
    bases: dict[tuple[Any, ...], str] = field(default_factory=dict)

    def add(self, name: str, base: str, shape: Mapping[str, Any], origin: Origin) -> None:
        """``base`` names the pool (``g2-8gpu``); ``shape`` holds the NodeShape fields."""
        key = _freeze(shape)
        if key not in self.shapes:
            self.shapes[key] = []
            self.fields[key] = {k: v for k, v in shape.items() if k != "labels"}
            self.labels[key] = dict(shape.get("labels", {}))
            self.bases[key] = dns_name(base, "node")
        self.shapes[key].append((name, origin))

    def add_label(self, predicate: Any, key: str, value: str) -> None:
        """Label every node whose labels satisfy ``predicate(labels)``."""
        for shape_key, labels in self.labels.items():
            if predicate(labels):
                self.labels[shape_key] = {**labels, key: value}

    def cluster(self, provenance: Provenance) -> dict[str, Any]:
        """``{nodePools: [...], nodes: [...]}``, with unique pool names."""
        pools: list[dict[str, Any]] = []
        nodes: list[dict[str, Any]] = []
        pooled = {k: b for k, b in self.bases.items() if len(self.shapes[k]) > 1}
        names = _pool_names(pooled, self.fields)
        for key, members in self.shapes.items():
            shape = {**self.fields[key], "labels": self.labels[key]}
            if not shape["labels"]:
                del shape["labels"]
            if len(members) == 1:
                provenance.record(f"cluster.nodes[{len(nodes)}]", members[0][1])
                nodes.append({"name": members[0][0], **shape})
            else:
                provenance.record(f"cluster.nodePools[{len(pools)}]", members[0][1])
                pools.append({"name": names[key], "count": len(members), **shape})
        cluster = {"nodePools": pools, "nodes": nodes}
        return {key: items for key, items in cluster.items() if items}

    @property
    def node_count(self) -> int:
        return sum(len(m) for m in self.shapes.values())


def _freeze(shape: Mapping[str, Any]) -> tuple[Any, ...]:
    items = []
    for key, value in sorted(shape.items()):
        items.append((key, _freeze_value(value)))
    return tuple(items)


def _freeze_value(value: Any) -> Any:
    if isinstance(value, dict):
        return tuple(sorted((k, _freeze_value(v)) for k, v in value.items()))
    if isinstance(value, list):
        return tuple(_freeze_value(v) for v in value)
    return value


def _pool_names(
    bases: dict[tuple[Any, ...], str], shapes: dict[tuple[Any, ...], dict[str, Any]]
) -> dict[tuple[Any, ...], str]:
    """The base name when no other pool has it, else the base plus the CPU and memory;
    numbered as a last resort."""
    names: dict[tuple[Any, ...], str] = {}
    taken: set[str] = set()
    for key, base in bases.items():
        clash = sum(1 for b in bases.values() if b == base) > 1
        shape = shapes[key]
        name = (
            dns_name(f"{base}-c{shape.get('cpu', 0):g}-m{shape.get('memory', 0):g}")
            if clash
            else base
        )
        unique, suffix = name, 2
        while unique in taken:
            unique = f"{name}-{suffix}"
            suffix += 1
        taken.add(unique)
        names[key] = unique
    return names


@cache
def _workload_defaults() -> dict[str, Any]:
    return Workload(name="x").model_dump(mode="json", by_alias=True)


def compact_workload(fields: Mapping[str, Any]) -> dict[str, Any]:
    """Drop every field equal to the spec's default: 8,152 workloads stay readable."""
    defaults = _workload_defaults()
    out: dict[str, Any] = {}
    for key, value in fields.items():
        default = defaults.get(key, object())
        if isinstance(value, dict) and isinstance(default, dict):
            value = {k: v for k, v in value.items() if default.get(k, object()) != v}
            if not value:
                continue
        elif value == default and key != "name":
            continue
        out[key] = value
    return out


@dataclass(frozen=True)
class ImportResult:
    """A validated import: the spec mapping (what is stored / written as YAML), the parsed
    spec, counts of what was read, and notes on what was approximated or left out."""

    mapping: dict[str, Any]
    spec: ExperimentSpec
    counts: dict[str, int]
    notes: list[str]
    kinds: dict[str, int] = field(default_factory=dict)
    """Input objects per kind (Kubernetes imports; empty for the trace formats)."""


def finish(
    mapping: dict[str, Any],
    provenance: Provenance,
    counts: dict[str, int],
    notes: list[str],
    kinds: dict[str, int] | None = None,
    *,
    checked: bool = False,
) -> ImportResult:
    """Validate through ``parse_spec``; its errors are mapped back to file and line.
    ``checked``: every value came from input the loader's checks passed."""
    try:
        spec = parse_spec(mapping, checked=checked)
    except SpecError as exc:
        raise TraceError([_located(provenance, e) for e in exc.errors]) from None
    return ImportResult(mapping, spec, counts, notes, dict(kinds or {}))


def _located(provenance: Provenance, error: Mapping[str, str]) -> ImportErrorItem:
    origin = provenance.locate(error["path"])
    where = f"{error['path']}: " if error["path"] else ""
    return {
        "file": origin.file,
        "line": origin.line,
        "column": origin.column,
        "message": where + error["message"],
    }
