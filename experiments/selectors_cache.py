"""Hot reads of a run kept in the shared cache (issue #10 §4): its detail, summary,
event and workload pages, the run page's chart data.

Why it is safe:
- **Authorization first.** A caller looks the run up with the visibility rule (one
  small query: ``selectors.run_get``) and only then asks here; what is cached is the
  same for everyone allowed to see the run (no user-specific field), so one user's
  entry never answers a request another user could not make.
- **Invalidated by its key.** The key holds the run's state as the database has it
  now (status, finish time, task token); a run that changes state (starts, succeeds,
  fails, is cancelled, or is a new row with a reused id) names new entries, and the old
  ones are never read again (they expire). A finished run never changes, so its entries
  live ``LAB_READ_CACHE_SECONDS``; an active run's progress moves, so its entries live
  ``LAB_READ_CACHE_ACTIVE_SECONDS`` (a poller sees progress at most that old).
"""

from __future__ import annotations

import hashlib
import logging
import time
from collections.abc import Callable
from typing import Any, TypeVar

from django.conf import settings
from django.core.cache import cache

from experiments.models import Run

T = TypeVar("T")
logger = logging.getLogger(__name__)
CACHE_VERSION = 1
"""Bump when the shape of a cached read changes, so a rolling deploy never serves an
older process's shape."""


def run_state(*, run: Run) -> str:
    """The part of every key that changes whenever the run does."""
    finished = run.finished_at.timestamp() if run.finished_at else 0.0
    return f"{run.pk}:{run.task_token}:{run.status}:{finished:.6f}"


def read_key(*, run: Run, kind: str, params: str = "") -> str:
    digest = hashlib.sha256(params.encode()).hexdigest()[:24] if params else "-"
    return f"run-read:{CACHE_VERSION}:{kind}:{run_state(run=run)}:{digest}"


def run_cached(
    *,
    run: Run,
    kind: str,
    build: Callable[[], T],
    params: str = "",
    timeout: float | None = None,
) -> T:
    """``build()``'s value for this run in its current state, from the shared cache when
    another request (of any process) already built it. ``params`` names the variant of
    the read (a query string); an exception in ``build`` is raised and nothing is kept.
    ``timeout`` overrides how long a finished run's entry lives (seconds).

    One request builds a missing entry while the others that want it at the same moment
    wait for it (while its builder holds the lock, up to ``WAIT_SECONDS``): fifty
    clients opening a run page at once must not draw its charts fifty times. With the
    cache down, every read is built."""
    if not run.is_terminal:
        timeout = settings.LAB_READ_CACHE_ACTIVE_SECONDS
    elif timeout is None:
        timeout = settings.LAB_READ_CACHE_SECONDS
    if timeout <= 0:
        return build()
    key = read_key(run=run, kind=kind, params=params)
    try:
        found = cache.get(key)
        if found is None and not cache.add(f"{key}:building", 1, BUILD_LOCK_SECONDS):
            found = _wait_for(key)
    except Exception:  # the cache is down: answer from the database, slower but right
        logger.warning("read cache unavailable", exc_info=True)
        return build()
    if found is not None:
        return found
    try:
        found = build()
        cache.set(key, found, timeout)
    finally:
        _forget(f"{key}:building")
    return found


BUILD_LOCK_SECONDS = 30
WAIT_SECONDS = 25.0
"""As long as a builder may hold its lock, nearly: building a second copy on a busy
machine only makes the first one slower."""
POLL_SECONDS = 0.05


def _wait_for(key: str) -> Any:
    """The entry another request is building, or None if it did not come in time
    (that request failed or is slow: then this one builds it too)."""
    deadline = time.monotonic() + WAIT_SECONDS
    while time.monotonic() < deadline:
        time.sleep(POLL_SECONDS)
        found = cache.get(key)
        if found is not None:
            return found
        if cache.get(f"{key}:building") is None:  # the builder gave up
            return None
    return None


def _forget(key: str) -> None:
    try:
        cache.delete(key)
    except Exception:
        logger.warning("read cache unavailable", exc_info=True)
