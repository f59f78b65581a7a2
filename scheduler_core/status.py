"""Outcomes of scheduling steps: a Status, not a bool (kube-scheduler's framework.Status)."""

from __future__ import annotations

from dataclasses import dataclass
from enum import IntEnum


class Code(IntEnum):
    SUCCESS = 0
    UNSCHEDULABLE = 1
    """Preemption might help."""
    UNSCHEDULABLE_AND_UNRESOLVABLE = 2
    """Preemption cannot help (selector, taint, cordon, request above capacity)."""
    WAIT = 3


@dataclass(frozen=True, slots=True)
class Status:
    code: Code
    reason: str = ""
    plugin: str = ""

    @property
    def ok(self) -> bool:
        return self.code is Code.SUCCESS


SUCCESS = Status(Code.SUCCESS)
