"""Kubernetes resource quantities ("500m", "1056Gi", "1e3", "129k") as numbers."""

from __future__ import annotations

import math
import re

_QUANTITY = re.compile(
    r"^([+-]?(?:\d+\.?\d*|\.\d+))(?:[eE]([+-]?\d+))?"
    r"(Ki|Mi|Gi|Ti|Pi|Ei|n|u|m|k|M|G|T|P|E)?$"
)
_SUFFIX = {
    None: 1.0,
    "n": 1e-9,
    "u": 1e-6,
    "m": 1e-3,
    "k": 1e3,
    "M": 1e6,
    "G": 1e9,
    "T": 1e12,
    "P": 1e15,
    "E": 1e18,
    "Ki": 2.0**10,
    "Mi": 2.0**20,
    "Gi": 2.0**30,
    "Ti": 2.0**40,
    "Pi": 2.0**50,
    "Ei": 2.0**60,
}
GIB = 2.0**30
MAX_QUANTITY = 2.0**63
"""Kubernetes stores a quantity in a signed 64-bit integer of milli-units at most."""


_PARSED: dict[str, float] = {}
_PARSED_MAX = 4096
"""Parsed texts: a snapshot repeats a few quantities ("500m", "2Gi") a hundred thousand
times, and a dictionary look-up costs a tenth of the regular expression."""


class QuantityError(ValueError):
    """Not a Kubernetes quantity; the message quotes the value."""


def parse_quantity(value: object) -> float:
    """The quantity's value in base units (cores, bytes, devices)."""
    if type(value) is str:
        number = _PARSED.get(value)
        if number is None:
            number = _parse(value)
            if len(_PARSED) < _PARSED_MAX:
                _PARSED[value] = number
        return number
    return _parse(value)


def _parse(value: object) -> float:
    if isinstance(value, bool):
        raise QuantityError(f"'{value}' is not a quantity")
    if isinstance(value, (int, float)):
        number = float(value)
    else:
        match = _QUANTITY.match(str(value).strip())
        if not match:
            raise QuantityError(f"'{value}' is not a quantity (e.g. '500m', '4', '16Gi')")
        try:
            number = float(match.group(1)) * 10.0 ** int(match.group(2) or 0)
        except (OverflowError, ValueError):  # '1e999999'
            number = math.inf
        number *= _SUFFIX[match.group(3)]
    if not math.isfinite(number) or abs(number) > MAX_QUANTITY:
        raise QuantityError(f"'{value}' is too large to be a quantity")
    return number


def parse_count(value: object) -> int:
    """A whole count (GPUs, pods): '8' yes, '500m' no (a pod holds whole devices)."""
    number = parse_quantity(value)
    if not number.is_integer() or number < 0:
        raise QuantityError(f"'{value}' is not a whole number")
    return int(number)
