"""Throttles: run starts per user (counted in the database), token requests per address
(counted in the shared cache: Redis or files, never per-process memory).

Run starts are counted where they are recorded, in the Run table, by ``run_start`` in
the same transaction as the insert, under a lock on the user's row: a throttle class
that counts before the view runs would let concurrent starts all see the same count.
"""

from __future__ import annotations

from typing import cast

from rest_framework.settings import api_settings
from rest_framework.throttling import ScopedRateThrottle

SCOPE = "run_start"
_PERIODS = {"s": 1, "m": 60, "h": 3600, "d": 86400}


def parse_rate(rate: str) -> tuple[int, int]:
    """``60/hour`` → (60, 3600): DRF's rate syntax (only the period's first letter counts)."""
    count, _, period = rate.partition("/")
    return int(count), _PERIODS[period.strip()[0].lower()]


def _rates() -> dict[str, str | None]:
    """DRF's rates setting, typed as it is (the stubs say numbers; DRF reads ``N/period``)."""
    return cast("dict[str, str | None]", api_settings.DEFAULT_THROTTLE_RATES)


def run_start_rate() -> tuple[int, int] | None:
    """``DEFAULT_THROTTLE_RATES['run_start']`` as (runs, seconds); None: unlimited."""
    rate = _rates().get(SCOPE)
    return parse_rate(rate) if rate else None


class TokenThrottle(ScopedRateThrottle):
    """Password guesses at the token endpoint, per client address. DRF's class reads its
    rates once at import; this one reads the settings at each request (tests, reloads)."""

    scope_attr = "throttle_scope"

    def get_rate(self) -> str | None:
        return _rates().get(self.scope or "")
