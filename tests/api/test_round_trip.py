"""The whole path a script takes, against the real stack: create an experiment from a
preset over HTTP, run it on a real Celery worker, download the CSV exports, and find
exactly the numbers the database holds."""

from __future__ import annotations

import csv
import io

import pytest
import requests

from experiments.models import Run, Status
from experiments.selectors_api import RECORD_COLUMNS
from tests.api.live_api import serve
from tests.factories import stored_records
from tests.web.live import live_stack

pytestmark = [pytest.mark.worker, pytest.mark.slow, pytest.mark.django_db(transaction=True)]


@pytest.fixture
def stack(tmp_path):
    yield from live_stack(tmp_path)


def download_csv(api, path: str) -> list[dict[str, str]]:
    response = requests.get(
        api.base_url + path, headers={"Authorization": f"Token {api.token}"}, timeout=60
    )
    assert response.status_code == 200, response.text
    return list(csv.DictReader(io.StringIO(response.text)))


def number(text: str) -> float | None:
    return None if text == "" else float(text)


def test_create_run_export_csv_gives_the_stored_numbers(stack, alice):
    api = serve(stack, alice)

    experiment_id = api.experiment_from_preset("s3-grace-period")
    run_id = api.finished_run(experiment_id, timeout=120)
    summary = download_csv(api, f"/api/v1/runs/{run_id}/export/summary.csv")
    records = download_csv(api, f"/api/v1/runs/{run_id}/export/workloads.csv")

    run = Run.objects.get(pk=run_id)
    assert (run.status, run.experiment_id, run.created_by) == (
        Status.SUCCEEDED,
        experiment_id,
        alice,
    )
    stored = {
        (v["variant"], name): stats for v in run.aggregate for name, stats in v["metrics"].items()
    }
    assert {(row["variant"], row["metric"]) for row in summary} == set(stored)
    for row in summary:
        stats = stored[(row["variant"], row["metric"])]
        assert [number(row[k]) for k in ("mean", "ci95", "min", "max")] == [
            stats[k] for k in ("mean", "ci95", "min", "max")
        ]
        assert int(row["n"]) == stats["n"]
    expected = [
        {"variant": r.variant, "replication": r.replication, "seed": r.seed, **record}
        for r in run.replications.order_by("variant_index", "replication")
        for record in stored_records(r)
    ]
    assert len(records) == len(expected) > 0
    for row, want in zip(records, expected, strict=True):
        assert row["workload"] == want["workload"]
        assert number(row["lost_work"]) == want["lost_work"]
        assert number(row["time_to_group_useful"]) == want["time_to_group_useful"]
        assert list(row) == list(RECORD_COLUMNS)
