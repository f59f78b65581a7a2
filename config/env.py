"""Strict readers for settings that come from the environment.

A typo in a deployment's environment (``DEBUG=flase``, ``CELERY_TASK_TIME_LIMIT=10m``)
must stop the process at start-up with the variable named, not run with a silent
default: that is how a production box ends up with ``DEBUG`` on.
"""

from __future__ import annotations

import os
from collections.abc import Callable

from django.core.exceptions import ImproperlyConfigured

_TRUE = frozenset({"1", "true", "yes", "on"})
_FALSE = frozenset({"0", "false", "no", "off"})
_MISSING = object()


def env_str(name: str, default: str | object = _MISSING) -> str:
    """The variable's text; without a default, a missing variable is an error."""
    value = os.environ.get(name)
    if value is not None:
        return value
    if default is _MISSING:
        raise ImproperlyConfigured(f"the environment variable {name} must be set")
    return str(default)


def env_bool(name: str, default: bool) -> bool:
    """``1/true/yes/on`` or ``0/false/no/off`` (any case); anything else is refused."""
    value = os.environ.get(name)
    if value is None or value.strip() == "":
        return default
    word = value.strip().lower()
    if word in _TRUE:
        return True
    if word in _FALSE:
        return False
    raise ImproperlyConfigured(f"{name}={value!r} is not a boolean (use true or false)")


def env_int(name: str, default: int, *, minimum: int | None = None) -> int:
    """A whole number, at least ``minimum`` when given."""
    return int(_env_number(name, default, int, "a whole number", minimum))


def env_float(name: str, default: float, *, minimum: float | None = None) -> float:
    """A number (seconds, usually), at least ``minimum`` when given."""
    return float(_env_number(name, default, float, "a number", minimum))


def _env_number(
    name: str, default: float, parse: Callable[[str], float], what: str, minimum: float | None
) -> float:
    value = os.environ.get(name)
    if value is None or value.strip() == "":
        return default
    try:
        number = parse(value.strip())
    except ValueError:
        raise ImproperlyConfigured(f"{name}={value!r} is not {what}") from None
    if minimum is not None and number < minimum:
        raise ImproperlyConfigured(f"{name}={number:g} is below its minimum of {minimum:g}")
    return number


def env_list(name: str, default: list[str]) -> list[str]:
    """Comma-separated items, blanks dropped: ``ALLOWED_HOSTS=a.example, b.example``."""
    value = os.environ.get(name)
    if value is None:
        return list(default)
    return [item.strip() for item in value.split(",") if item.strip()]
