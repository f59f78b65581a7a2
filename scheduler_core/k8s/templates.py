"""A pod spec (a Pod's, or a controller's pod template) as workload fields.

Requests are what the scheduler counts (containers summed, the largest init container
if larger, a limit standing in for a missing request). Placement keeps what the spec
models (nodeSelector, tolerations, a required node-affinity term that is a plain
``key In [value]``); everything else is returned as a note, never dropped silently.
The ``disruption-lab.io/`` annotations fill in what Kubernetes does not know.
"""

from __future__ import annotations

import re
from collections.abc import Callable, Mapping
from typing import Any

from scheduler_core.spec import ControllerKind, RecoveryModel, WorkloadKind
from scheduler_core.traces.quantity import GIB, QuantityError, parse_quantity

GPU = "nvidia.com/gpu"
PREFIX = "disruption-lab.io/"
KIND_LABEL = PREFIX + "kind"
_DURATION = re.compile(r"^\s*(\d+(?:\.\d+)?)\s*(ms|s|m|h|d)?\s*$")
_UNIT = {"ms": 0.001, "s": 1.0, "m": 60.0, "h": 3600.0, "d": 86400.0, None: 1.0}
_NONE = ("none", "null", "never", "")
DEFAULT_TOLERATIONS = ("node.kubernetes.io/not-ready", "node.kubernetes.io/unreachable")


class FieldError(ValueError):
    """A bad value; the message starts with the field's path in the object."""


# ============================================================================ requests
def requests(pod_spec: Mapping[str, Any]) -> tuple[int, float, float]:
    """(GPUs, CPU cores, memory GiB) the scheduler would count for this pod: the
    containers summed, or the largest init container if that is larger. One pass over
    each container (a snapshot has a hundred thousand pods)."""
    gpus = cpu = memory = 0.0
    for container in _list(pod_spec.get("containers")):
        g, c, m = _container_requests(container)
        gpus, cpu, memory = gpus + g, cpu + c, memory + m
    for container in _list(pod_spec.get("initContainers")):
        g, c, m = _container_requests(container)
        gpus, cpu, memory = max(gpus, g), max(cpu, c), max(memory, m)
    if not float(gpus).is_integer():
        raise FieldError(
            f"spec.containers resources: {GPU} '{gpus:g}' is not a whole "
            "number (a pod holds whole GPUs)"
        )
    return int(gpus), cpu, memory / GIB


def _container_requests(container: Any) -> tuple[float, float, float]:
    """A container's request of each resource; a limit stands in for a missing one."""
    resources = (
        _dict(container.get("resources"), "resources") if isinstance(container, dict) else {}
    )
    asked = _dict(resources.get("requests"), "resources.requests")
    limits = _dict(resources.get("limits"), "resources.limits")
    try:
        return tuple(
            parse_quantity(  # type: ignore[return-value]
                value if (value := asked.get(name)) is not None else limits.get(name, 0)
            )
            for name in _RESOURCES
        )
    except QuantityError as exc:
        raise FieldError(f"spec.containers resources: {exc}") from None


_RESOURCES = (GPU, "cpu", "memory")
MIG = "nvidia.com/mig-"


def mig_requests(pod_spec: Mapping[str, Any]) -> dict[str, int]:
    """MIG instances per profile the pod's containers ask for (``nvidia.com/mig-<p>``,
    the NVIDIA device plugin's mixed strategy), summed over containers; a limit stands in
    for a missing request, as for every extended resource."""
    found: dict[str, int] = {}
    for container in _list(pod_spec.get("containers")):
        resources = container.get("resources") if isinstance(container, dict) else None
        asked = _dict((resources or {}).get("requests"), "resources.requests")
        limits = _dict((resources or {}).get("limits"), "resources.limits")
        for name in {*asked, *limits}:
            if str(name).startswith(MIG):
                value = asked.get(name, limits.get(name))
                try:
                    count = parse_quantity(value)
                except QuantityError as exc:
                    raise FieldError(f"spec.containers resources: {exc}") from None
                profile = str(name)[len(MIG) :]
                found[profile] = found.get(profile, 0) + int(count)
    return dict(sorted(found.items()))


def _dict(value: Any, where: str) -> dict[str, Any]:
    if isinstance(value, dict):
        return value
    if value is None:
        return {}
    raise FieldError(f"spec.containers {where}: must be an object, not {value!r}")


def _list(value: Any) -> list[Any]:
    return value if isinstance(value, list) else []


# ============================================================================ placement
def placement(pod_spec: Mapping[str, Any]) -> tuple[dict[str, Any], list[str]]:
    """The spec's ``nodeSelector`` and ``tolerations``, and notes on what is not modelled."""
    fields: dict[str, Any] = {}
    notes: list[str] = []
    selector = {str(k): str(v) for k, v in (pod_spec.get("nodeSelector") or {}).items()}
    tolerations = []
    for toleration in _list(pod_spec.get("tolerations")):
        if not isinstance(toleration, dict):
            continue
        if toleration.get("key") in DEFAULT_TOLERATIONS:
            continue  # added to every pod by admission; only node failures use them
        if toleration.get("tolerationSeconds") is not None:
            notes.append("tolerationSeconds is not modelled")
        operator = toleration.get("operator") or (
            "Exists" if not toleration.get("key") else "Equal"
        )
        entry = {k: str(toleration[k]) for k in ("key", "value", "effect") if toleration.get(k)}
        tolerations.append({**entry, "operator": operator})
    affinity = pod_spec.get("affinity") or {}
    selector.update(_node_affinity(affinity.get("nodeAffinity") or {}, notes))
    for term in ("podAffinity", "podAntiAffinity"):
        if affinity.get(term):
            notes.append(f"{term} is not modelled")
    if pod_spec.get("topologySpreadConstraints"):
        notes.append("topologySpreadConstraints are not modelled")
    if selector:
        fields["nodeSelector"] = selector
    if tolerations:
        fields["tolerations"] = tolerations
    return fields, notes


def _node_affinity(affinity: Mapping[str, Any], notes: list[str]) -> dict[str, str]:
    """A single required term of ``key In [one value]`` expressions is a node selector;
    anything wider (several terms are ORed, NotIn, Exists, Gt) is noted instead."""
    if affinity.get("preferredDuringSchedulingIgnoredDuringExecution"):
        notes.append("preferred node affinity is not modelled")
    required = affinity.get("requiredDuringSchedulingIgnoredDuringExecution") or {}
    terms = _list(required.get("nodeSelectorTerms"))
    if not terms:
        return {}
    if len(terms) > 1:
        notes.append("required node affinity with several terms (any of) is not modelled")
        return {}
    selector: dict[str, str] = {}
    term = terms[0] if isinstance(terms[0], dict) else {}
    for expression in _list(term.get("matchExpressions")):
        values = _list(expression.get("values"))
        if expression.get("operator") == "In" and len(values) == 1:
            selector[str(expression.get("key"))] = str(values[0])
        else:
            notes.append(
                f"required node affinity '{expression.get('key')} "
                f"{expression.get('operator')} {values}' is not modelled"
            )
    if term.get("matchFields"):
        notes.append("node affinity matchFields are not modelled")
    return selector


# ============================================================================ annotations
def _duration(text: str) -> float:
    match = _DURATION.match(text)
    if not match:
        raise ValueError(f"'{text}' is not a duration (use seconds or e.g. '90s', '30m', '2h')")
    return float(match.group(1)) * _UNIT[match.group(2)]


def _optional_duration(text: str) -> float | None:
    return None if text.strip().lower() in _NONE else _duration(text)


def _flag(text: str) -> bool:
    if text.strip().lower() in ("true", "yes", "1"):
        return True
    if text.strip().lower() in ("false", "no", "0"):
        return False
    raise ValueError(f"'{text}' is not true or false")


def _integer(text: str) -> int:
    try:
        return int(text.strip())
    except ValueError:
        raise ValueError(f"'{text}' is not a whole number") from None


def _one_of(choices: list[str]) -> Callable[[str], str]:
    def parse(text: str) -> str:
        if text.strip() not in choices:
            raise ValueError(f"'{text}' is not one of {', '.join(choices)}")
        return text.strip()

    return parse


def _topology(text: str) -> dict[str, Any]:
    """``rack,host;preferred=rack;algorithm=BestFit``."""
    levels, *options = [part.strip() for part in text.split(";")]
    topology: dict[str, Any] = {"levels": [v.strip() for v in levels.split(",") if v.strip()]}
    for option in options:
        key, sep, value = option.partition("=")
        if not sep or key.strip() not in ("required", "preferred", "algorithm"):
            raise ValueError(
                f"'{option}' is not required=LEVEL, preferred=LEVEL or "
                "algorithm=BestFit|LeastFreeCapacity"
            )
        topology[key.strip()] = value.strip()
    if not topology["levels"]:
        raise ValueError("name at least one level (a node label key)")
    return topology


ANNOTATIONS: dict[str, tuple[str, Callable[[str], Any]]] = {
    "kind": ("kind", _one_of([k.value for k in WorkloadKind])),
    "checkpoint-interval": ("checkpoint.intervalSeconds", _optional_duration),
    "checkpoint-write-seconds": ("checkpoint.writeSeconds", _duration),
    "checkpoint-on-sigterm": ("checkpoint.onSigterm", _flag),
    "startup-seconds": ("startupSeconds", _duration),
    "duration-seconds": ("durationSeconds", _optional_duration),
    "stop-seconds": ("stopSeconds", _duration),
    "recovery-model": ("recovery.model", _one_of([m.value for m in RecoveryModel])),
    "recovery-min-members": ("recovery.minMembers", _integer),
    "urgent": ("urgent", _flag),
    "queue-priority": ("queuePriority", _integer),
    "arrival": ("arrival", _duration),
    "controller-restart": ("controller.restart", _one_of(["member", "group"])),
    "topology": ("podGroup.topology", _topology),
    "gpu-milli": ("gpuMilli", _integer),
    "gpu-models": ("gpuModels", lambda text: [m for m in text.split("|") if m]),
}
"""``disruption-lab.io/<name>`` -> (the spec field it sets, its parser). docs/kubernetes.md
lists the same table; the export writes these names back."""

CONTROLLERS = tuple(c.value for c in ControllerKind)


def annotated_fields(
    *annotation_sets: Mapping[str, Any] | None, where: str = "metadata.annotations"
) -> dict[str, Any]:
    """The spec fields the ``disruption-lab.io/`` annotations set, as dotted paths; the
    first set that has an annotation wins (the object's own before its pod template's)."""
    fields: dict[str, Any] = {}
    for found in reversed(annotation_sets):
        for key, raw in (found or {}).items():
            if not str(key).startswith(PREFIX):
                continue
            name = str(key)[len(PREFIX) :]
            if name not in ANNOTATIONS:
                raise FieldError(
                    f"{where}.{key}: unknown annotation (known: "
                    f"{', '.join(PREFIX + n for n in ANNOTATIONS)})"
                )
            path, parse = ANNOTATIONS[name]
            try:
                fields[path] = parse(str(raw))
            except ValueError as exc:
                raise FieldError(f"{where}.{key}: {exc}") from None
    return fields


def set_path(fields: dict[str, Any], path: str, value: Any) -> None:
    """``checkpoint.intervalSeconds`` into a nested mapping."""
    head, _, rest = path.partition(".")
    if not rest:
        fields[head] = value
        return
    node = fields.get(head)
    node = dict(node) if isinstance(node, dict) else {}
    set_path(node, rest, value)
    fields[head] = node


def kind_from(default: str, *label_sets: Mapping[str, Any] | None) -> str:
    """The ``disruption-lab.io/kind`` label (the trace importer's convention), else
    ``default``; the annotation, applied later, wins over both."""
    for labels in label_sets:
        value = (labels or {}).get(KIND_LABEL)
        if value in {k.value for k in WorkloadKind}:
            return str(value)
    return default
