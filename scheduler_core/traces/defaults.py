"""What a trace does not record, per workload kind: one table the user sees and edits.

No public trace records checkpoint intervals, startup times, how an application
recovers or how long its grace period is; yet every disruption metric depends on them.
The importers fill them in from this table, by workload kind, and the values are shown
(``python -m scheduler_core import --show-defaults``) and overridable
(``--defaults training.checkpointIntervalSeconds=600``) before any run.
These numbers are ours, chosen as typical of GPU clusters, not measured from the traces.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass, fields, replace
from typing import Any

from pydantic.alias_generators import to_camel

from scheduler_core.spec import ControllerKind, RecoveryModel, WorkloadKind

KIND_NAMES = tuple(k.value for k in WorkloadKind)


@dataclass(frozen=True, slots=True)
class KindDefault:
    """The filled-in fields for one workload kind."""

    checkpoint_interval_seconds: float | None
    checkpoint_write_seconds: float
    checkpoint_on_sigterm: bool
    startup_seconds: float
    recovery: str
    termination_grace_period_seconds: float
    stop_seconds: float
    controller: str

    def workload_fields(self) -> dict[str, Any]:
        """The spec fields of a workload of this kind (before the trace's own values)."""
        checkpoint: dict[str, Any] = {"intervalSeconds": self.checkpoint_interval_seconds}
        if self.checkpoint_interval_seconds is not None:
            checkpoint["writeSeconds"] = self.checkpoint_write_seconds
            checkpoint["onSigterm"] = self.checkpoint_on_sigterm
        return {
            "terminationGracePeriodSeconds": self.termination_grace_period_seconds,
            "stopSeconds": min(self.stop_seconds, self.termination_grace_period_seconds),
            "startupSeconds": self.startup_seconds,
            "checkpoint": checkpoint,
            "recovery": {"model": self.recovery},
            "controller": {"kind": self.controller},
        }


FIELDS = {to_camel(f.name): f.name for f in fields(KindDefault)}
"""User-facing (camelCase, as in the spec) name -> attribute."""
FIELD_NAMES = tuple(FIELDS)

DEFAULT_TABLE: dict[str, KindDefault] = {
    "training": KindDefault(1800, 60, False, 300, "synchronous", 30, 20, "jobset"),
    "elastic-training": KindDefault(1800, 60, False, 300, "elastic", 30, 20, "job"),
    "evaluation": KindDefault(600, 10, False, 120, "independent", 30, 5, "job"),
    "inference": KindDefault(None, 0, False, 180, "serving", 30, 10, "deployment"),
    "notebook": KindDefault(None, 0, False, 60, "interactive", 30, 5, "none"),
    "batch": KindDefault(3600, 30, False, 60, "independent", 30, 5, "job"),
}


class DefaultsError(ValueError):
    """A bad override (``--defaults``); the message names the key."""


@dataclass(frozen=True)
class KindDefaults:
    """The table in force for one import: the built-in defaults plus the user's overrides."""

    table: Mapping[str, KindDefault]

    @classmethod
    def builtin(cls) -> KindDefaults:
        return cls(dict(DEFAULT_TABLE))

    def for_kind(self, kind: str) -> KindDefault:
        return self.table[kind]

    def with_overrides(self, overrides: Mapping[str, Any]) -> KindDefaults:
        """``{"training.checkpointIntervalSeconds": 600, "batch.recovery": "elastic"}``;
        a value may be a string as typed on a command line ("null" clears an interval)."""
        table = dict(self.table)
        for key, raw in overrides.items():
            kind, _, name = key.partition(".")
            if kind not in table:
                raise DefaultsError(f"{key}: unknown kind '{kind}' (kinds: {', '.join(table)})")
            if name not in FIELD_NAMES:
                raise DefaultsError(
                    f"{key}: unknown field '{name}' (fields: {', '.join(FIELD_NAMES)})"
                )
            table[kind] = replace(table[kind], **{FIELDS[name]: _coerce(key, name, raw)})
        return KindDefaults(table)

    def as_table(self) -> dict[str, dict[str, Any]]:
        """JSON-ready: what the browser form and ``--show-defaults`` display."""
        return {
            kind: {camel: getattr(row, attr) for camel, attr in FIELDS.items()}
            for kind, row in self.table.items()
        }


def _coerce(key: str, name: str, raw: Any) -> Any:
    text = raw.strip() if isinstance(raw, str) else raw
    if name == "recovery":
        return _one_of(key, text, [m.value for m in RecoveryModel])
    if name == "controller":
        return _one_of(key, text, [c.value for c in ControllerKind])
    if name == "checkpointOnSigterm":
        return _flag(key, text)
    if name == "checkpointIntervalSeconds" and text in (None, "null", "none", ""):
        return None
    return _seconds(key, text, positive=name == "checkpointIntervalSeconds")


def _one_of(key: str, value: Any, allowed: list[str]) -> str:
    if value not in allowed:
        raise DefaultsError(f"{key}: '{value}' is not one of {', '.join(allowed)}")
    return str(value)


def _flag(key: str, value: Any) -> bool:
    if isinstance(value, bool):
        return value
    if str(value).lower() in ("true", "yes", "1"):
        return True
    if str(value).lower() in ("false", "no", "0"):
        return False
    raise DefaultsError(f"{key}: '{value}' is not true or false")


def _seconds(key: str, value: Any, *, positive: bool) -> float:
    try:
        number = float(value)
    except (TypeError, ValueError):
        raise DefaultsError(f"{key}: '{value}' is not a number of seconds") from None
    if number < 0 or (positive and number == 0):
        raise DefaultsError(f"{key}: must be {'positive' if positive else 'at least 0'}")
    return number
