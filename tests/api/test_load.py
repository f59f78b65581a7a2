"""Under load (issues #6 §3 and #10 §4): 50 concurrent clients read a finished run of
thousands of events (the API's detail, summary, event pages with filters, workloads,
the exports; the run page and its chart data with a browser's session) and poll a busy
run, for 30 s against the real stack (gunicorn, a Celery worker, PostgreSQL, Redis):
zero errors. The events export is larger than the server writes inline, so it is
built by the worker while the clients are answered 202 and then served as a file.
``bench/bench_api_load.py`` runs the same mix on a mid-size run and records the figures.

``API_LOAD_SECONDS`` shortens it (CI keeps the default)."""

from __future__ import annotations

import os

import pytest
import requests
from django.contrib.auth.hashers import make_password
from django.db import connection

from bench.bench_api_load import read_paths, run_load
from bench.workloads import cluster_spec
from experiments.models import Replication
from tests.api.live_api import serve
from tests.web.live import live_stack

pytestmark = [
    pytest.mark.worker,
    pytest.mark.slow,
    pytest.mark.postgres,
    pytest.mark.django_db(transaction=True),
]

CLIENTS = 50
SECONDS = float(os.environ.get("API_LOAD_SECONDS", "30"))
PASSWORD = "load-test-password"
INLINE_ROWS = 2000


@pytest.fixture
def stack(tmp_path):
    yield from live_stack(tmp_path)


def test_fifty_clients_reading_a_run_of_thousands_of_events_get_no_errors(stack, alice):
    if connection.vendor != "postgresql":
        pytest.skip("the load test runs against PostgreSQL (make test's first pass)")
    alice.password = make_password(PASSWORD, hasher="pbkdf2_sha256")  # what the server reads
    alice.save()
    stack.extra_env["LAB_EXPORT_INLINE_ROWS"] = str(INLINE_ROWS)
    api = serve(stack, alice)
    experiment_id = api.experiment_from_spec(cluster_spec(nodes=8, pods=400, horizon=86400.0))
    run_id = api.finished_run(experiment_id, timeout=300)
    events = api.call("GET", f"/api/v1/runs/{run_id}/events/?page_size=1")["count"]
    assert events > INLINE_ROWS  # the events export goes through the worker
    busy_run = api.start_run(api.experiment_from_preset("s8-gang-at-scale"))
    cookies = api.session_cookies("alice", PASSWORD)
    replication = Replication.objects.filter(run_id=run_id).order_by("pk").first().pk

    figures = run_load(
        base_url=api.base_url,
        token=api.token,
        clients=CLIENTS,
        seconds=SECONDS,
        cookies=cookies,
        paths=read_paths(run_id, experiment_id, busy_run, replication),
    )

    print(figures)
    assert figures["first_errors"] == []
    assert figures["errors"] == 0
    assert figures["requests"] >= CLIENTS
    assert figures["accepted_202"] >= 1  # the first asks waited for the worker's file
    export = requests.get(
        f"{api.base_url}/api/v1/runs/{run_id}/export/events.csv",
        headers={"Authorization": f"Token {api.token}"},
        timeout=30,
    )
    assert export.status_code == 200
    assert export.text.count("\n") == events + 1  # the header and every event
