"""Runs over the API: start (owner only, throttled), list, read with progress per
variant, cancel; the frozen spec as YAML."""

from __future__ import annotations

import pytest
import yaml

import scheduler_core as sc
from experiments.models import Run, Status
from tests.api.conftest import errors
from tests.factories import ExperimentFactory, ReplicationFactory, RunFactory


def start(client, experiment, capture):
    with capture(execute=False):  # enqueue nothing: the run stays queued
        return client.post(f"/api/v1/experiments/{experiment.pk}/runs/")


@pytest.mark.parametrize(("persona", "status"), [("alice", 201), ("bob", 403), ("charlie", 404)])
def test_only_the_owner_starts_a_run(
    clients, experiment, alice, persona, status, django_capture_on_commit_callbacks
):
    response = start(clients[persona], experiment, django_capture_on_commit_callbacks)

    assert response.status_code == status
    if status != 201:
        assert not Run.objects.exists()
        return
    run = Run.objects.get()
    assert (run.experiment, run.created_by, run.status) == (experiment, alice, Status.QUEUED)
    assert run.spec == experiment.spec
    names = sc.variant_names(sc.parse_spec(experiment.spec))
    assert list(run.replications.values_list("variant", flat=True)) == names
    body = response.json()
    assert body == {
        "id": run.pk,
        "experiment": experiment.pk,
        "status": "queued",
        "is_terminal": False,
        "progress": 0.0,
        "error": "",
        "created_by": "alice",
        "product_version": run.product_version,
        "created_at": run.created_at.isoformat().replace("+00:00", "Z"),
        "started_at": None,
        "finished_at": None,
        "variants": [
            {"name": name, "status": "queued", "progress": 0.0, "succeeded": 0, "total": 1}
            for name in names
        ],
    }


def test_run_starts_are_throttled_per_user(
    alice_api, experiment, settings, django_capture_on_commit_callbacks
):
    settings.REST_FRAMEWORK = {
        **settings.REST_FRAMEWORK,
        "DEFAULT_THROTTLE_RATES": {"run_start": "2/hour"},
    }
    codes = [
        start(alice_api, experiment, django_capture_on_commit_callbacks).status_code
        for _ in range(2)
    ]
    third = start(alice_api, experiment, django_capture_on_commit_callbacks)

    assert codes == [201, 201]
    assert third.status_code == 429
    assert 3590 <= int(third["Retry-After"]) <= 3600
    [error] = errors(third)
    assert error["path"] == ""
    assert error["message"].startswith("Request was throttled.")
    assert Run.objects.count() == 2


def test_the_throttle_counts_only_recent_runs_of_the_same_user(
    alice_api, experiment, bob, settings, django_capture_on_commit_callbacks
):
    settings.REST_FRAMEWORK = {
        **settings.REST_FRAMEWORK,
        "DEFAULT_THROTTLE_RATES": {"run_start": "1/minute"},
    }
    RunFactory(experiment=ExperimentFactory(owner=bob), created_by=bob)  # Bob's: not counted
    old = RunFactory(experiment=experiment)
    Run.objects.filter(pk=old.pk).update(created_at=old.created_at.replace(year=2000))

    assert start(alice_api, experiment, django_capture_on_commit_callbacks).status_code == 201


def test_a_spec_that_no_longer_passes_the_limits_cannot_start(
    alice_api, experiment, settings, django_capture_on_commit_callbacks
):
    settings.LAB_LIMITS = {**settings.LAB_LIMITS, "LAB_MAX_TASKS": 1}

    response = start(alice_api, experiment, django_capture_on_commit_callbacks)

    assert response.status_code == 400
    assert errors(response) == [
        {
            "path": "replications",
            "message": (
                "2 simulations (variants x replications) is above the limit of 1 (LAB_MAX_TASKS)"
            ),
        }
    ]
    assert not Run.objects.exists()


def test_a_started_run_executes_on_the_worker(
    alice_api, experiment, django_capture_on_commit_callbacks
):
    with django_capture_on_commit_callbacks(execute=True):  # tasks run inline in tests
        response = alice_api.post(f"/api/v1/experiments/{experiment.pk}/runs/")

    run = Run.objects.get(pk=response.json()["id"])
    assert run.status == Status.SUCCEEDED
    body = alice_api.get(f"/api/v1/runs/{run.pk}/").json()
    assert body["status"] == "succeeded"
    assert body["is_terminal"] is True
    assert body["progress"] == 1.0
    assert [v["status"] for v in body["variants"]] == ["succeeded", "succeeded"]


@pytest.mark.parametrize(("persona", "status"), [("alice", 200), ("bob", 200), ("charlie", 404)])
def test_reading_a_run_follows_its_experiment(clients, experiment, persona, status):
    run = RunFactory(experiment=experiment, status=Status.RUNNING)
    ReplicationFactory(run=run, status=Status.RUNNING, progress=0.5)

    response = clients[persona].get(f"/api/v1/runs/{run.pk}/")

    assert response.status_code == status
    if status == 200:
        assert response.json()["progress"] == 0.5
        variant = sc.variant_names(sc.parse_spec(experiment.spec))[0]
        assert response.json()["variants"] == [
            {"name": variant, "status": "running", "progress": 0.5, "succeeded": 0, "total": 1}
        ]
    else:
        assert errors(response) == [{"path": "", "message": "No such run"}]


@pytest.mark.parametrize(
    ("persona", "listed"), [("alice", True), ("bob", True), ("charlie", False)]
)
def test_the_run_list_shows_only_visible_runs(clients, experiment, persona, listed, charlie):
    run = RunFactory(experiment=experiment)
    own = RunFactory(experiment=ExperimentFactory(owner=charlie))

    body = clients[persona].get("/api/v1/runs/").json()

    assert [item["id"] for item in body["results"]] == ([run.pk] if listed else [own.pk])
    assert body["count"] == 1


def test_the_run_list_filters_by_experiment_and_status(alice_api, alice, experiment):
    other = ExperimentFactory(owner=alice)
    queued = RunFactory(experiment=experiment)
    failed = RunFactory(experiment=other, status=Status.FAILED)

    def ids(query: str) -> list[int]:
        return [item["id"] for item in alice_api.get(f"/api/v1/runs/?{query}").json()["results"]]

    assert ids(f"experiment={experiment.pk}") == [queued.pk]
    assert ids("status=failed") == [failed.pk]
    assert ids("") == [failed.pk, queued.pk]
    bad = alice_api.get("/api/v1/runs/?status=sleeping")
    assert bad.status_code == 400
    assert [e["path"] for e in errors(bad)] == ["status"]


@pytest.mark.parametrize(("persona", "status"), [("alice", 200), ("bob", 200), ("charlie", 404)])
def test_an_experiments_runs_are_listed_newest_first(clients, experiment, persona, status):
    first, second = RunFactory(experiment=experiment), RunFactory(experiment=experiment)

    response = clients[persona].get(f"/api/v1/experiments/{experiment.pk}/runs/")

    assert response.status_code == status
    if status == 200:
        assert [item["id"] for item in response.json()["results"]] == [second.pk, first.pk]


@pytest.mark.parametrize(("persona", "status"), [("alice", 200), ("bob", 403), ("charlie", 404)])
def test_only_the_owner_cancels(clients, experiment, persona, status):
    run = RunFactory(experiment=experiment, status=Status.RUNNING)
    replication = ReplicationFactory(run=run, status=Status.RUNNING)

    response = clients[persona].post(f"/api/v1/runs/{run.pk}/cancel/")

    assert response.status_code == status
    run.refresh_from_db()
    replication.refresh_from_db()
    expected = Status.CANCELLED if status == 200 else Status.RUNNING
    assert (run.status, replication.status) == (expected, expected)
    if status == 200:
        assert response.json()["status"] == "cancelled"
        assert response.json()["is_terminal"] is True


def test_cancelling_a_finished_run_is_a_conflict(alice_api, experiment):
    run = RunFactory(experiment=experiment, status=Status.SUCCEEDED)

    response = alice_api.post(f"/api/v1/runs/{run.pk}/cancel/")

    assert response.status_code == 409
    assert errors(response) == [{"path": "", "message": "the run had already succeeded"}]
    run.refresh_from_db()
    assert run.status == Status.SUCCEEDED


def test_a_runs_frozen_spec_downloads_as_yaml(alice_api, experiment):
    run = RunFactory(experiment=experiment)
    experiment.spec = {**experiment.spec, "name": "changed since"}
    experiment.save()

    response = alice_api.get(f"/api/v1/runs/{run.pk}/spec.yaml")

    assert response.status_code == 200
    assert response["Content-Disposition"] == f'attachment; filename="run-{run.pk}-spec.yaml"'
    assert yaml.safe_load(response.content)["name"] == run.spec["name"] != "changed since"


@pytest.mark.parametrize("value", ["-2.4573186395069783e+293", "1.5", "0", "x"])
def test_an_experiment_filter_must_be_an_id(alice_api, value):
    response = alice_api.get(f"/api/v1/runs/?experiment={value}")

    assert response.status_code == 400
    assert [e["path"] for e in errors(response)] == ["experiment"]
