"""The checkpoint planner over the API (issue #17 §2): start a sweep, read its curve and
the expected wall-clock time to finish a given amount of work."""

from __future__ import annotations

import pytest

from experiments.models import Experiment, Run, Status
from experiments.services.planner import PLAN_TAG
from scheduler_core.checkpoint_optima import daly_interval, young_interval
from tests.factories import ExperimentFactory, preset_document

S14 = "s14-checkpoint-planner"
BODY = {
    "workload": "train",
    "mtbf_seconds": "32h",
    "repair_seconds": 14_400,
    "min_interval_seconds": "5m",
    "max_interval_seconds": "3h",
    "points": 4,
    "replications": 3,
    "work_seconds": "1d",
}


@pytest.fixture
def planner_experiment(alice, bob):
    return ExperimentFactory(owner=alice, shared_with=[bob], spec=preset_document(S14))


@pytest.fixture
def planned(alice_api, planner_experiment, django_capture_on_commit_callbacks) -> Run:
    with django_capture_on_commit_callbacks(execute=True):
        response = alice_api.post(
            f"/api/v1/experiments/{planner_experiment.pk}/plan/", BODY, format="json"
        )
    assert response.status_code == 201, response.json()
    run = Run.objects.get(pk=response.json()["id"])
    assert run.status == Status.SUCCEEDED
    return run


def test_a_plan_starts_a_sweep_of_the_callers_own(planned, alice):
    assert planned.experiment.owner == alice
    assert PLAN_TAG in planned.experiment.tag_names
    assert planned.replications.count() == 4 * 3


def test_the_plan_reads_the_curve_optimum_and_closed_forms(alice_api, planned):
    body = alice_api.get(f"/api/v1/runs/{planned.pk}/plan/").json()
    plan = body["plan"]
    assert (body["status"], body["workload"], body["work"]) == ("succeeded", "train", None)
    assert [p["interval_seconds"] for p in plan["points"]] == [300, 991, 3271, 10800]
    for point in plan["points"]:
        assert point["wall_clock"]["n"] == 3
        assert point["wall_clock"]["half_width"] > 0
        assert 0 < point["ettr"]["mean"] < 1
    best = min(plan["points"], key=lambda p: p["wall_clock"]["mean"])
    assert plan["optimum_interval"] == best["interval_seconds"]
    assert plan["young_interval"] == pytest.approx(young_interval(120, 4 * 3600))
    assert plan["daly_interval"] == pytest.approx(daly_interval(120, 4 * 3600))
    assert plan["inputs"]["mtbf_seconds"] == 4 * 3600
    assert plan["work_seconds"] == 86_400


def test_the_wall_clock_time_for_a_given_work(alice_api, planned):
    body = alice_api.get(f"/api/v1/runs/{planned.pk}/plan/", {"work": "2d"}).json()
    plan = body["plan"]
    rows = body["work"]
    assert len(rows) == 4
    for row, point in zip(rows, plan["points"], strict=True):
        assert row["work_seconds"] == 2 * 86_400
        assert row["simulated_mean"] == pytest.approx(2 * point["wall_clock"]["mean"])
        assert row["daly"] > row["work_seconds"]


def test_unreadable_work_is_an_error_naming_it(alice_api, planned):
    response = alice_api.get(f"/api/v1/runs/{planned.pk}/plan/", {"work": "-1d"})
    assert response.status_code == 400
    assert response.json()["errors"][0]["path"] == "work"


@pytest.mark.parametrize(
    ("changes", "path", "words"),
    [
        ({"mtbf_seconds": -3600}, "mtbf_seconds", "must be positive"),
        ({"mtbf_seconds": "soon"}, "mtbf_seconds", ""),
        ({"distribution": "gamma"}, "distribution", "not a valid choice"),
        ({"workload": "nope"}, "workload", "no workload 'nope'"),
        ({"max_interval_seconds": 60}, "max_interval_seconds", "above the smallest"),
        ({"points": 99}, "points", "less than or equal to 40"),
    ],
    ids=[
        "negative-mtbf",
        "unreadable-mtbf",
        "unknown-distribution",
        "unknown-job",
        "empty-range",
        "too-many-points",
    ],
)
def test_a_bad_request_names_its_field_and_saves_nothing(
    alice_api, planner_experiment, changes, path, words
):
    response = alice_api.post(
        f"/api/v1/experiments/{planner_experiment.pk}/plan/", {**BODY, **changes}, format="json"
    )
    errors = response.json()["errors"]
    assert response.status_code == 400
    assert any(e["path"] == path and words in e["message"] for e in errors), errors
    assert not Experiment.objects.filter(tags__name=PLAN_TAG).exists()
    assert not Run.objects.exists()


def test_charlie_can_neither_plan_nor_read_a_plan(charlie_api, planner_experiment, planned):
    post = charlie_api.post(
        f"/api/v1/experiments/{planner_experiment.pk}/plan/", BODY, format="json"
    )
    assert post.status_code == 404
    assert charlie_api.get(f"/api/v1/runs/{planned.pk}/plan/").status_code == 404


def test_a_run_that_sweeps_nothing_has_no_plan(alice_api, finished_run):
    response = alice_api.get(f"/api/v1/runs/{finished_run.pk}/plan/")
    assert response.status_code == 404
    assert response.json()["errors"][0]["path"] == ""


def test_a_plan_still_running_says_so(
    alice_api, planner_experiment, django_capture_on_commit_callbacks
):
    with django_capture_on_commit_callbacks(execute=False):
        response = alice_api.post(
            f"/api/v1/experiments/{planner_experiment.pk}/plan/", BODY, format="json"
        )
    body = alice_api.get(f"/api/v1/runs/{response.json()['id']}/plan/").json()
    assert body["plan"] is None
    assert body["status"] == "queued"
    assert "ready when it succeeds" in body["message"]


def test_the_schema_lists_the_planner_endpoints(alice_api):
    paths = alice_api.get("/api/schema/").json()["paths"]
    assert "/api/v1/experiments/{id}/plan/" in paths
    assert "/api/v1/runs/{id}/plan/" in paths
