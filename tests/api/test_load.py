"""Under load (issue #6 §3): 50 concurrent clients polling runs and reading results for
30 s against the real stack (gunicorn, a Celery worker, PostgreSQL, Redis), zero errors.
``bench/bench_api_load.py`` runs the same load and records throughput and p95.

``API_LOAD_SECONDS`` shortens it (CI keeps the default)."""

from __future__ import annotations

import os

import pytest
from django.db import connection

from bench.bench_api_load import read_paths, run_load
from tests.api.live_api import serve
from tests.web.live import live_stack

pytestmark = [pytest.mark.worker, pytest.mark.slow, pytest.mark.postgres,
              pytest.mark.django_db(transaction=True)]

CLIENTS = 50
SECONDS = float(os.environ.get("API_LOAD_SECONDS", "30"))


@pytest.fixture
def stack(tmp_path):
    yield from live_stack(tmp_path)


def test_fifty_clients_polling_and_reading_results_get_no_errors(stack, alice):
    if connection.vendor != "postgresql":
        pytest.skip("the load test runs against PostgreSQL (make test's first pass)")
    api = serve(stack, alice)
    experiment_id = api.experiment_from_preset("s3-grace-period")
    run_id = api.finished_run(experiment_id, timeout=120)
    busy_run = api.start_run(experiment_id)

    figures = run_load(base_url=api.base_url, token=api.token, clients=CLIENTS, seconds=SECONDS,
                       paths=read_paths(run_id, experiment_id, busy_run))

    print(figures)
    assert figures["first_errors"] == []
    assert figures["errors"] == 0
    assert figures["requests"] >= CLIENTS
