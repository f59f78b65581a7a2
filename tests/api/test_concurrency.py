"""Concurrent writers on real PostgreSQL (threads, each with its own connection): the
run-start throttle holds, and partial updates do not lose each other's writes."""

from __future__ import annotations

import threading

import pytest
from django.db import connection, connections

from experiments import tasks
from experiments.models import Run
from tests.api.conftest import token_client

pytestmark = [pytest.mark.postgres, pytest.mark.django_db(transaction=True)]
STARTS = 20
ALLOWED = 10


@pytest.fixture(autouse=True)
def _postgresql_only():
    if connection.vendor != "postgresql":
        pytest.skip("row locks need PostgreSQL (DATABASE_URL=postgres://...)")


def _concurrently(count: int, action) -> list:
    """``action()`` in ``count`` threads released at once; their results in order."""
    barrier = threading.Barrier(count)
    results: list = [None] * count

    def worker(index: int) -> None:
        try:
            barrier.wait(timeout=30)
            results[index] = action()
        finally:
            connections.close_all()

    threads = [threading.Thread(target=worker, args=(n,)) for n in range(count)]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join(60)
    return results


def test_simultaneous_run_starts_never_overrun_the_throttle(
    alice, experiment, settings, monkeypatch
):
    """Twenty starts at the same instant with ten allowed: exactly ten runs. (Counted
    before inserting without a lock, several see the same count and all get through.)"""
    settings.REST_FRAMEWORK = {
        **settings.REST_FRAMEWORK,
        "DEFAULT_THROTTLE_RATES": {
            **settings.REST_FRAMEWORK["DEFAULT_THROTTLE_RATES"],
            "run_start": f"{ALLOWED}/hour",
        },
    }
    monkeypatch.setattr(tasks, "enqueue_run", lambda **kwargs: None)  # no simulation
    url = f"/api/v1/experiments/{experiment.pk}/runs/"
    client = token_client(alice)

    codes = _concurrently(STARTS, lambda: client.post(url).status_code)

    assert sorted(codes) == [201] * ALLOWED + [429] * (STARTS - ALLOWED)
    assert Run.objects.filter(created_by=alice).count() == ALLOWED
