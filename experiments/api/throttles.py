"""Throttles: run starts per user (counted in the database), token requests per address.

A cache-based throttle counts per process (Django's default cache is local memory), so
four gunicorn workers would allow four times the rate. The Run table already records
who started what and when, on every machine: counting it is exact and needs no cache.
"""

from __future__ import annotations

from datetime import timedelta

from django.utils import timezone
from rest_framework.request import Request
from rest_framework.settings import api_settings
from rest_framework.throttling import BaseThrottle, ScopedRateThrottle
from rest_framework.views import APIView

from experiments.models import Run

SCOPE = "run_start"
_PERIODS = {"s": 1, "m": 60, "h": 3600, "d": 86400}


def parse_rate(rate: str) -> tuple[int, int]:
    """``60/hour`` → (60, 3600): DRF's rate syntax (only the period's first letter counts)."""
    count, _, period = rate.partition("/")
    return int(count), _PERIODS[period.strip()[0].lower()]


class RunStartThrottle(BaseThrottle):
    """At most N runs started by one user per period (``DEFAULT_THROTTLE_RATES['run_start']``)."""

    def __init__(self) -> None:
        self.retry_after: float | None = None

    def allow_request(self, request: Request, view: APIView) -> bool:
        rate = api_settings.DEFAULT_THROTTLE_RATES.get(SCOPE)
        if not rate or not request.user.is_authenticated:
            return True
        limit, seconds = parse_rate(rate)
        since = timezone.now() - timedelta(seconds=seconds)
        recent = list(Run.objects.filter(created_by=request.user, created_at__gte=since)
                      .order_by("-created_at").values_list("created_at", flat=True)[:limit])
        if len(recent) < limit:
            return True
        self.retry_after = max(1.0, (recent[-1] - since).total_seconds())
        return False

    def wait(self) -> float | None:
        return self.retry_after


class TokenThrottle(ScopedRateThrottle):
    """Password guesses at the token endpoint, per client address. DRF's class reads its
    rates once at import; this one reads the settings at each request (tests, reloads)."""

    scope_attr = "throttle_scope"

    def get_rate(self) -> str | None:
        return api_settings.DEFAULT_THROTTLE_RATES.get(self.scope)
