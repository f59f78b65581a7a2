"""Kubernetes resource quantities ("500m", "1056Gi", "1e3", "129k") as numbers."""

from __future__ import annotations

import re

_QUANTITY = re.compile(r"^([+-]?(?:\d+\.?\d*|\.\d+))(?:[eE]([+-]?\d+))?"
                       r"(Ki|Mi|Gi|Ti|Pi|Ei|n|u|m|k|M|G|T|P|E)?$")
_SUFFIX = {
    None: 1.0, "n": 1e-9, "u": 1e-6, "m": 1e-3, "k": 1e3, "M": 1e6, "G": 1e9, "T": 1e12,
    "P": 1e15, "E": 1e18, "Ki": 2.0**10, "Mi": 2.0**20, "Gi": 2.0**30, "Ti": 2.0**40,
    "Pi": 2.0**50, "Ei": 2.0**60,
}
GIB = 2.0**30


class QuantityError(ValueError):
    """Not a Kubernetes quantity; the message quotes the value."""


def parse_quantity(value: object) -> float:
    """The quantity's value in base units (cores, bytes, devices)."""
    if isinstance(value, bool):
        raise QuantityError(f"'{value}' is not a quantity")
    if isinstance(value, (int, float)):
        return float(value)
    match = _QUANTITY.match(str(value).strip())
    if not match:
        raise QuantityError(f"'{value}' is not a quantity (e.g. '500m', '4', '16Gi')")
    number = float(match.group(1)) * 10.0 ** int(match.group(2) or 0)
    return number * _SUFFIX[match.group(3)]


def parse_count(value: object) -> int:
    """A whole count (GPUs, pods): '8' yes, '500m' no (a pod holds whole devices)."""
    number = parse_quantity(value)
    if not number.is_integer() or number < 0:
        raise QuantityError(f"'{value}' is not a whole number")
    return int(number)
