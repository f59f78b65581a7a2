"""Durations as people write them: ``90``, ``"90s"``, ``"30m"``, ``"1h30m"``, ``"1d"``.

One parser and one formatter for the spec, the editor, the import page and the pages
that show times, so a duration typed anywhere reads the same everywhere, and what the
form shows (``format_duration``) parses back to the same number.
"""

from __future__ import annotations

import math
import re

UNIT_SECONDS = {"ms": 0.001, "s": 1.0, "m": 60.0, "h": 3600.0, "d": 86400.0}
_NUMBER = r"\d+(?:\.\d+)?"
_PART = re.compile(rf"({_NUMBER})\s*(ms|s|m|h|d)")
_WHOLE = re.compile(rf"^\s*(-)?\s*(?:({_NUMBER})|((?:{_NUMBER}\s*(?:ms|s|m|h|d)\s*)+))\s*$")
_STEPS = (("d", 86400), ("h", 3600), ("m", 60))


def parse_duration(text: str) -> float:
    """Seconds in ``text``: a plain number of seconds or one or more ``<number><unit>``
    parts (``ms``, ``s``, ``m``, ``h``, ``d``), optionally negative (``-1h``, an arrival
    before the start). Raises ValueError naming the accepted forms."""
    match = _WHOLE.match(text)
    if not match:
        raise ValueError(
            f"'{text}' is not a duration (use seconds or e.g. '30s', '5m', '2h', '1h30m', '1d')"
        )
    sign = -1.0 if match.group(1) else 1.0
    if match.group(2) is not None:
        return sign * float(match.group(2))
    return sign * sum(
        float(number) * UNIT_SECONDS[unit] for number, unit in _PART.findall(match.group(3))
    )


def format_duration(seconds: float) -> str:
    """``5400`` → ``"1h 30m"``, ``90`` → ``"1m 30s"``, ``0.25`` → ``"0.25s"``: the
    largest whole units, and the rest in seconds; ``parse_duration`` reads it back."""
    if not math.isfinite(seconds):
        return str(seconds)
    if seconds < 0:
        return "-" + format_duration(-seconds)
    parts = []
    rest = seconds
    for unit, size in _STEPS:
        whole = int(rest // size)
        if whole:
            parts.append(f"{whole}{unit}")
            rest -= whole * size
    if rest or not parts:
        rest = round(rest, 6)
        parts.append(f"{int(rest) if float(rest).is_integer() else rest}s")
    return " ".join(parts)
