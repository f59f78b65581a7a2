"""Questions asked of a recorded cluster, written into its spec as ordinary spec content.

* an urgent group injected into the recorded load (a workload with ``urgent: true``, a
  PriorityClass above every other, all-or-nothing) -- it is the subject of every
  variant, so it goes into the base spec;
* spot reclaims on a chosen share of the GPU nodes -- a variant that adds a timeline
  event naming the nodes (picked with a seeded RNG, so the variant is reproducible and
  the user sees exactly which nodes);
* an alternative QoS -> PriorityClass mapping -- a variant that changes the classes'
  values and preemption policies.

Each function takes and returns a spec mapping (a new one; the input is not changed).
"""

from __future__ import annotations

import copy
import random
import re
from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any

from scheduler_core.spec import HIGHEST_USER_DEFINABLE_PRIORITY, SpecError
from scheduler_core.traces.defaults import KindDefaults
from scheduler_core.traces.qos import MappingError, QosMapping, load_mapping

_URGENT = re.compile(r"^\s*(\d+)\s*x\s*(\d+)\s*@\s*(\d+(?:\.\d+)?)\s*$")
_RECLAIM = re.compile(r"^\s*(\d*\.?\d+)(%?)\s*@\s*(\d+(?:\.\d+)?)\s*$")
URGENT_CLASS = "urgent"
BASELINE = "recorded"


class ScenarioError(ValueError):
    """A scenario that cannot be added; the message says what to change."""


def parse_urgent(text: str) -> tuple[int, int, float]:
    """``4x8@3600``: 4 members of 8 GPUs each, arriving at t = 3600 s."""
    match = _URGENT.match(text)
    if not match or int(match.group(1)) < 1:
        raise ScenarioError(f"'{text}' is not MEMBERSxGPUS@ARRIVAL (e.g. 4x8@3600)")
    return int(match.group(1)), int(match.group(2)), float(match.group(3))


def parse_reclaim(text: str) -> tuple[float, float]:
    """``0.1@7200`` or ``10%@7200``: a tenth of the GPU nodes reclaimed at t = 7200 s."""
    match = _RECLAIM.match(text)
    share = float(match.group(1)) / (100 if match.group(2) else 1) if match else 0.0
    if not match or not 0 < share <= 1:
        raise ScenarioError(
            f"'{text}' is not SHARE@TIME with 0 < SHARE <= 1 (e.g. 0.1@7200 or 10%@7200)"
        )
    return share, float(match.group(3))


def inject_urgent(
    mapping: Mapping[str, Any],
    *,
    members: int,
    gpus: int,
    arrival: float,
    duration: float | None = 3600.0,
    kind: str = "training",
    name: str = "urgent",
    defaults: KindDefaults | None = None,
) -> dict[str, Any]:
    """Add an urgent all-or-nothing group with a PriorityClass above every other."""
    spec = copy.deepcopy(dict(mapping))
    if any(w.get("name") == name for w in spec.get("workloads", [])):
        raise ScenarioError(f"a workload named '{name}' already exists; choose another name")
    classes = spec.setdefault("priorityClasses", [])
    if not any(c["name"] == URGENT_CLASS for c in classes):
        top = max((c["value"] for c in classes), default=0)
        if top >= HIGHEST_USER_DEFINABLE_PRIORITY:
            raise ScenarioError("no priority is left above the highest existing class")
        classes.append(
            {
                "name": URGENT_CLASS,
                "value": min(top + 1000, HIGHEST_USER_DEFINABLE_PRIORITY),
                "description": "the injected urgent group",
            }
        )
    table = (defaults or KindDefaults.builtin()).for_kind(kind)
    spec.setdefault("workloads", []).append(
        {
            "name": name,
            "kind": kind,
            "members": members,
            "gpus": gpus,
            "priorityClassName": URGENT_CLASS,
            "arrival": arrival,
            "durationSeconds": duration,
            **table.workload_fields(),
            "podGroup": {"minCount": members},
            "urgent": True,
        }
    )
    return spec


def add_spot_reclaim(
    mapping: Mapping[str, Any],
    *,
    share: float,
    at: float,
    notice_seconds: float = 120.0,
    recover_after_seconds: float | None = None,
    seed: int = 0,
) -> dict[str, Any]:
    """A variant in which ``share`` of the GPU nodes get a spot interruption at ``at``."""
    spec = copy.deepcopy(dict(mapping))
    nodes = gpu_node_names(spec.get("cluster", {}))
    if not nodes:
        raise ScenarioError("the cluster has no GPU nodes to reclaim")
    count = max(1, round(share * len(nodes)))
    chosen = sorted(random.Random(seed).sample(nodes, count), key=nodes.index)
    event: dict[str, Any] = {
        "at": at,
        "type": "spot-reclaim",
        "nodes": chosen,
        "noticeSeconds": notice_seconds,
    }
    if recover_after_seconds is not None:
        event["recoverAfterSeconds"] = recover_after_seconds
    events = [*spec.get("events", []), event]
    percent = f"{share * 100:g}".replace(".", "-")
    return _with_variant(
        spec, {"name": f"spot-reclaim-{percent}pct-at-{at:g}s", "set": {"events": events}}
    )


def gpu_node_names(cluster: Mapping[str, Any]) -> list[str]:
    """Every GPU node's name, in the spec's node order (pools first)."""
    names = [
        f"{p['name']}-{i}"
        for p in cluster.get("nodePools", [])
        if p.get("gpus", 8)
        for i in range(p.get("count", 1))
    ]
    return names + [n["name"] for n in cluster.get("nodes", []) if n.get("gpus", 8)]


def add_qos_variant(
    mapping: Mapping[str, Any],
    base: QosMapping,
    alternative: QosMapping,
    *,
    name: str | None = None,
) -> dict[str, Any]:
    """A variant giving each class the value/policy the alternative mapping gives its
    labels. Labels sharing a class in ``base`` must share value and policy in the
    alternative (import with separate classes to split them)."""
    spec = copy.deepcopy(dict(mapping))
    overrides: dict[str, Any] = {}
    for cls in base.classes:
        target = _alternative_class(base, alternative, cls.name)
        if target is None:
            continue
        if target.value != cls.value:
            overrides[f"priorityClasses.{cls.name}.value"] = target.value
        if target.preemption_policy != cls.preemption_policy:
            overrides[f"priorityClasses.{cls.name}.preemptionPolicy"] = (
                target.preemption_policy.value
            )
    if not overrides:
        raise ScenarioError(
            "the alternative mapping gives every class the same value and "
            "policy as the imported one: nothing to compare"
        )
    return _with_variant(spec, {"name": name or "qos-alternative", "set": overrides})


def _alternative_class(base: QosMapping, alternative: QosMapping, class_name: str) -> Any:
    labels = base.labels_of(class_name)
    targets = {}
    for label in labels:
        entry = alternative.entry(label)
        if entry is None:
            raise MappingError(f"the alternative mapping has no entry for '{label}'")
        found = alternative.class_named(entry.priority_class)
        targets[(found.value, found.preemption_policy)] = found
    if len(targets) > 1:
        raise MappingError(
            f"class '{class_name}' holds {', '.join(labels)} in the imported "
            "mapping, but the alternative gives them different priorities; "
            "import with a mapping that gives each its own class"
        )
    return next(iter(targets.values()), None)


def add_policy_variants(mapping: Mapping[str, Any], policies: list[str]) -> dict[str, Any]:
    """One variant per preemption policy (``pod``, ``none``, ...), nothing else changed."""
    spec = copy.deepcopy(dict(mapping))
    for policy in policies:
        spec = _with_variant(spec, {"name": f"preemption-{policy}", "preemption": policy})
    return spec


def _with_variant(spec: dict[str, Any], variant: dict[str, Any]) -> dict[str, Any]:
    """Append a variant; the first one added also adds the unchanged recording, so every
    comparison has its baseline."""
    variants = spec.setdefault("variants", [])
    if not variants and "set" in variant:
        variants.append({"name": BASELINE})
    if any(v["name"] == variant["name"] for v in variants):
        raise ScenarioError(f"a variant named '{variant['name']}' already exists")
    variants.append(variant)
    return spec


# ============================================================================ all of them
@dataclass(frozen=True)
class ReplayScenarios:
    """What the user asks of the recorded cluster beyond replaying it, as the CLI's
    options and the import page's fields give it (the field names are the page's, so an
    error comes back to the field it is about).

    ``inject_urgent`` is ``MxG@T``; ``spot_reclaims`` are ``SHARE@T`` items;
    ``compare_qos_map`` is an alternative mapping's text (same syntax as the import's)."""

    inject_urgent: str = ""
    urgent_duration: float = 3600.0
    spot_reclaims: tuple[str, ...] = ()
    spot_notice: float = 120.0
    seed: int = 0
    compare_qos_map: str = ""
    compare_policies: tuple[str, ...] = ()

    def __bool__(self) -> bool:
        return bool(
            self.inject_urgent
            or self.spot_reclaims
            or self.compare_qos_map
            or self.compare_policies
        )


class ScenarioFieldError(ScenarioError):
    """A scenario that cannot be added, with the :class:`ReplayScenarios` field it is
    about (``field``), so the page can show it there and the CLI can name the option."""

    def __init__(self, field: str, message: str) -> None:
        self.field = field
        super().__init__(message)


def apply_scenarios(
    mapping: Mapping[str, Any],
    scenarios: ReplayScenarios,
    *,
    qos_map: QosMapping | None,
    defaults: KindDefaults,
    fmt: str = "",
) -> dict[str, Any]:
    """The spec mapping with every scenario added, in one order for the CLI and the web
    app (urgent group, spot reclaims, QoS alternative, policies). ``qos_map`` is the
    mapping the import used (the alternative is read against it). Raises
    :class:`ScenarioFieldError` naming the field of the first scenario that fails."""
    spec = dict(mapping)
    field = ""
    try:
        if scenarios.inject_urgent:
            field = "inject_urgent"
            members, gpus, arrival = parse_urgent(scenarios.inject_urgent)
            spec = inject_urgent(
                spec,
                members=members,
                gpus=gpus,
                arrival=arrival,
                duration=scenarios.urgent_duration,
                defaults=defaults,
            )
        for text in scenarios.spot_reclaims:
            field = "spot_reclaims"
            share, at = parse_reclaim(text)
            spec = add_spot_reclaim(
                spec, share=share, at=at, seed=scenarios.seed, notice_seconds=scenarios.spot_notice
            )
        if scenarios.compare_qos_map:
            field = "compare_qos_map"
            if qos_map is None:
                raise MappingError(f"{fmt or 'this format'} has no QoS labels to compare")
            spec = add_qos_variant(spec, qos_map, load_mapping(scenarios.compare_qos_map, qos_map))
        if scenarios.compare_policies:
            field = "compare_policies"
            spec = add_policy_variants(spec, list(scenarios.compare_policies))
    except (ScenarioError, MappingError, SpecError) as exc:
        raise ScenarioFieldError(field, _message(exc)) from None
    return spec


def _message(exc: Exception) -> str:
    errors = getattr(exc, "errors", None)
    if errors:
        return "; ".join(
            f"{e['path']}: {e['message']}" if e.get("path") else e["message"] for e in errors
        )
    return str(exc)
