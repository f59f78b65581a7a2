"""Which parameters differ between variants, possibly of different runs (MLflow-style).

Two runs of one experiment with different checkpoint intervals differ only in their
numbers unless something shows the inputs side by side. Each variant's *resolved* spec
(overrides applied, policy chosen) is flattened to dotted paths, named list items by
name (the paths a variant's ``set`` uses: ``workloads.train.checkpoint.intervalSeconds``),
and only the paths whose values are not all equal are kept.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from typing import Any

from scheduler_core.spec import ExperimentSpec, resolve_variant

IGNORED = frozenset({"variants", "grid", "name", "description"})
"""Not parameters of a simulation: the variant list itself and the labels."""
MISSING = object()


def variant_parameters(spec: ExperimentSpec, variant: str) -> dict[str, Any]:
    """The flattened resolved spec of one variant, its policy included."""
    resolved = resolve_variant(spec, variant)
    data = resolved.spec.model_dump(mode="json", by_alias=True, exclude_none=True)
    flat = flatten({k: v for k, v in data.items() if k not in IGNORED})
    flat["policy.preemption"] = resolved.preemption
    flat["policy.placement"] = resolved.placement
    return flat


def flatten(value: Any, prefix: str = "") -> dict[str, Any]:
    """Nested mappings and lists to ``{"a.b.c": leaf}``; list items by ``name`` when every
    item has a distinct one, else by position. An empty container is a leaf."""
    if isinstance(value, Mapping) and value:
        out: dict[str, Any] = {}
        for key, item in value.items():
            out |= flatten(item, f"{prefix}{key}.")
        return out
    if isinstance(value, list) and value:
        names = [item.get("name") for item in value if isinstance(item, Mapping)]
        keyed = (
            len(names) == len(value)
            and all(isinstance(n, str) for n in names)
            and len(set(names)) == len(names)
        )
        out = {}
        for i, item in enumerate(value):
            out |= flatten(item, f"{prefix}{names[i] if keyed else i}.")
        return out
    return {prefix.rstrip("."): value}


@dataclass(frozen=True, slots=True)
class ParameterDiff:
    path: str
    values: tuple[Any, ...]  # one per variant; MISSING where a variant lacks the path

    def texts(self) -> list[str]:
        return ["(absent)" if v is MISSING else _text(v) for v in self.values]


def parameter_diff(
    parameters: Sequence[Mapping[str, Any]],
    *,
    limit: int = 200,
) -> tuple[list[ParameterDiff], int]:
    """The paths whose values are not all the same, in first-seen order (at most
    ``limit``), and how many more differ beyond it."""
    paths = list(dict.fromkeys(path for p in parameters for path in p))
    differing = []
    for path in paths:
        values = tuple(p.get(path, MISSING) for p in parameters)
        if any(v is MISSING or v != values[0] for v in values[1:]) or (
            values and values[0] is MISSING
        ):
            differing.append(ParameterDiff(path, values))
    return differing[:limit], max(0, len(differing) - limit)


def _text(value: Any) -> str:
    if isinstance(value, bool):
        return "true" if value else "false"
    if value is None:
        return "null"
    if isinstance(value, float) and value.is_integer():
        return f"{value:.0f}"
    return str(value) if not isinstance(value, list | dict) else repr(value)
