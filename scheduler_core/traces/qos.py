"""QoS (or any trace label) -> PriorityClass: a mapping the user sees and edits.

Traces carry no priority integers. openb has a QoS class per pod, DLRM a role per
instance; which PriorityClass each becomes is a choice that decides every result, so it
is an explicit object: shown before the import (``--show-qos-map``), passed in as an
argument (a YAML/JSON file or ``LS=high,BE=low:0``), and written into the spec as
``priorityClasses`` plus each workload's ``priorityClassName``. The defaults are ours,
not the publishers' (see docs/traces.md).
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from pydantic import BaseModel, ConfigDict, Field, ValidationError, model_validator
from pydantic.alias_generators import to_camel

from scheduler_core.spec import (
    HIGHEST_USER_DEFINABLE_PRIORITY,
    PreemptionPolicy,
    WorkloadKind,
    load_document,
)


class _Model(BaseModel):
    model_config = ConfigDict(
        alias_generator=to_camel, populate_by_name=True, extra="forbid", frozen=True
    )


class MappedClass(_Model):
    """A PriorityClass the mapping creates in the spec."""

    name: str = Field(min_length=1, pattern=r"^[a-z0-9]([-a-z0-9]*[a-z0-9])?$")
    value: int = Field(le=HIGHEST_USER_DEFINABLE_PRIORITY, ge=-(2**31))
    preemption_policy: PreemptionPolicy = PreemptionPolicy.PREEMPT_LOWER_PRIORITY
    description: str = ""


class QosEntry(_Model):
    """What one trace label becomes: its PriorityClass and its workload kind."""

    priority_class: str
    kind: WorkloadKind = WorkloadKind.BATCH


class QosMapping(_Model):
    """Trace label -> (PriorityClass, kind); ``fallback`` names the entry for labels the
    mapping does not list (None: such a row is an import error)."""

    classes: list[MappedClass]
    qos: dict[str, QosEntry]
    fallback: str | None = None

    @model_validator(mode="after")
    def _consistent(self) -> QosMapping:
        names = [c.name for c in self.classes]
        if len(set(names)) != len(names):
            raise ValueError("a PriorityClass is listed twice in 'classes'")
        for label, entry in self.qos.items():
            if entry.priority_class not in names:
                raise ValueError(
                    f"qos '{label}' maps to '{entry.priority_class}', which is "
                    f"not in 'classes' ({', '.join(names)})"
                )
        if self.fallback is not None and self.fallback not in self.qos:
            raise ValueError(f"fallback '{self.fallback}' is not one of the qos labels")
        return self

    def entry(self, label: str) -> QosEntry | None:
        """The entry for a trace label, the fallback's for an unknown one, else None."""
        found = self.qos.get(label)
        if found is None and self.fallback is not None:
            return self.qos[self.fallback]
        return found

    def class_named(self, name: str) -> MappedClass:
        return next(c for c in self.classes if c.name == name)

    def labels_of(self, class_name: str) -> list[str]:
        return [label for label, e in self.qos.items() if e.priority_class == class_name]

    def priority_classes(self) -> list[dict[str, Any]]:
        """The spec's ``priorityClasses`` for this mapping."""
        out = []
        for c in self.classes:
            item: dict[str, Any] = {"name": c.name, "value": c.value}
            if c.preemption_policy is not PreemptionPolicy.PREEMPT_LOWER_PRIORITY:
                item["preemptionPolicy"] = c.preemption_policy.value
            if c.description:
                item["description"] = c.description
            out.append(item)
        return out

    def to_document(self) -> dict[str, Any]:
        """The editable form (YAML/JSON), as the user writes it back."""
        return self.model_dump(mode="json", by_alias=True, exclude_none=True)

    def with_assignments(self, text: str) -> QosMapping:
        """Apply ``LS=high,BE=low:0,Burstable=medium:500:Never``: QOS=CLASS[:VALUE[:POLICY]].
        A new class needs a value; a value given for a known class changes it."""
        classes = {c.name: c for c in self.classes}
        qos = dict(self.qos)
        for item in filter(None, (part.strip() for part in text.split(","))):
            label, sep, target = item.partition("=")
            if not sep or not label or not target:
                raise MappingError(f"'{item}' is not QOS=CLASS[:VALUE[:POLICY]]")
            name, *rest = target.split(":")
            classes[name] = _class_from(name, rest, classes.get(name), item)
            old = qos.get(label)
            kind = old.kind if old else WorkloadKind.BATCH
            qos[label] = QosEntry(priority_class=name, kind=kind)
        used = {e.priority_class for e in qos.values()}
        kept = [c for n, c in classes.items() if n in used]
        return _validated(
            {
                "classes": [c.model_dump() for c in kept],
                "qos": {k: v.model_dump() for k, v in qos.items()},
                "fallback": self.fallback,
            }
        )


class MappingError(ValueError):
    """A QoS mapping that cannot be used; the message says what to fix."""


def _class_from(name: str, rest: list[str], known: MappedClass | None, item: str) -> MappedClass:
    if not rest:
        if known is None:
            raise MappingError(f"'{item}': class '{name}' is new, give it a value ({item}:VALUE)")
        return known
    try:
        value = int(rest[0])
    except ValueError:
        raise MappingError(f"'{item}': '{rest[0]}' is not an integer priority") from None
    policy = (
        rest[1]
        if len(rest) > 1
        else (
            known.preemption_policy.value
            if known
            else PreemptionPolicy.PREEMPT_LOWER_PRIORITY.value
        )
    )
    return _validated_class({"name": name, "value": value, "preemption_policy": policy}, item)


def _validated_class(data: dict[str, Any], item: str) -> MappedClass:
    try:
        return MappedClass.model_validate(data)
    except ValidationError as exc:
        raise MappingError(f"'{item}': {_first_message(exc)}") from None


def _validated(data: Mapping[str, Any]) -> QosMapping:
    try:
        return QosMapping.model_validate(data)
    except ValidationError as exc:
        raise MappingError(_first_message(exc)) from None


def _first_message(exc: ValidationError) -> str:
    messages = []
    for err in exc.errors(include_url=False):
        where = ".".join(str(p) for p in err["loc"])
        text = err["msg"].removeprefix("Value error, ")
        messages.append(f"{where}: {text}" if where else text)
    return "; ".join(messages)


def load_mapping(argument: str, base: QosMapping) -> QosMapping:
    """``--qos-map``: a YAML/JSON document (file text) replaces the mapping; anything
    else is a list of assignments applied to ``base``."""
    if "=" in argument and "\n" not in argument:
        return base.with_assignments(argument)
    data = load_document(argument)
    if not isinstance(data, Mapping):
        raise MappingError("a QoS mapping document must be a mapping with 'classes' and 'qos'")
    return _validated(data)


OPENB_QOS = QosMapping(
    classes=[
        MappedClass(
            name="latency-sensitive", value=10000, description="openb QoS LS: online services"
        ),
        MappedClass(name="guaranteed", value=10000, description="openb QoS Guaranteed"),
        MappedClass(name="burstable", value=5000, description="openb QoS Burstable"),
        MappedClass(
            name="best-effort", value=1000, description="openb QoS BE: the preemptible class"
        ),
    ],
    qos={
        "LS": QosEntry(priority_class="latency-sensitive", kind=WorkloadKind.INFERENCE),
        "Guaranteed": QosEntry(priority_class="guaranteed", kind=WorkloadKind.INFERENCE),
        "Burstable": QosEntry(priority_class="burstable", kind=WorkloadKind.BATCH),
        "BE": QosEntry(priority_class="best-effort", kind=WorkloadKind.BATCH),
    },
)
"""openb: Guaranteed/LS high, Burstable medium, BE preemptible (traces/README.md)."""

DLRM_QOS = QosMapping(
    classes=[
        MappedClass(
            name="dlrm-serving",
            value=10000,
            description="DLRM inference: every instance is latency-sensitive",
        )
    ],
    qos={
        "HN": QosEntry(priority_class="dlrm-serving", kind=WorkloadKind.INFERENCE),
        "CN": QosEntry(priority_class="dlrm-serving", kind=WorkloadKind.INFERENCE),
    },
)
"""DLRM v2025: keyed by ``role`` (HN GPU instance, CN CPU instance); all high priority."""
