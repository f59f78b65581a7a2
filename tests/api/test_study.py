"""Placement studies over the API (issue #18 §3): a study spec is stored, validated with
field-named errors and run like any experiment; ``GET runs/{id}/study/`` serves the
core's curves; an openb upload imports as a study with its fractional GPUs kept."""

from __future__ import annotations

from pathlib import Path

import pytest
from django.core.files.uploadedfile import SimpleUploadedFile

from experiments.models import Run, Status
from scheduler_core.study_spec import study_summary
from tests.factories import ExperimentFactory, preset_document

S17 = "s17-placement-study"
TRACES = Path(__file__).resolve().parents[1] / "core" / "fixtures" / "traces"


def upload(name: str) -> SimpleUploadedFile:
    return SimpleUploadedFile(name, (TRACES / name).read_bytes(), content_type="text/csv")


@pytest.fixture
def study_run(alice, alice_api, django_capture_on_commit_callbacks) -> Run:
    spec = {**preset_document(S17), "replications": 2}
    experiment = ExperimentFactory(owner=alice, spec=spec)
    with django_capture_on_commit_callbacks(execute=True):
        response = alice_api.post(f"/api/v1/experiments/{experiment.pk}/runs/")
    assert response.status_code == 201, response.json()
    run = Run.objects.get(pk=response.json()["id"])
    assert run.status == Status.SUCCEEDED, run.error
    return run


def test_the_study_endpoint_serves_every_variants_curves(alice_api, study_run):
    body = alice_api.get(f"/api/v1/runs/{study_run.pk}/study/").json()
    assert body["status"] == "succeeded"
    assert body["placementStudy"]["arrivedLoadPercent"] == 130
    names = [v["variant"] for v in body["variants"]]
    assert names == ["Random", "DotProduct", "GpuClustering", "GpuPacking", "BestFit", "FGD"]
    assert sorted(v["rank"] for v in body["variants"]) == list(range(1, 7))
    for variant in body["variants"]:
        records = variant["replications"]
        assert [r["seed"] for r in records] == [42, 43]
        assert all(r["policy"] == variant["placement"] for r in records)
        assert variant["summary"] == study_summary(records)  # the core's numbers, stored
        assert variant["paper"] is None  # the preset names no paper workload


def test_the_study_endpoint_is_404_for_a_replay_and_hidden_from_others(
    alice, alice_api, clients, study_run
):
    replay = Run.objects.create(
        experiment=study_run.experiment, spec=preset_document(), product_version="t"
    )
    assert alice_api.get(f"/api/v1/runs/{replay.pk}/study/").status_code == 404
    assert clients["charlie"].get(f"/api/v1/runs/{study_run.pk}/study/").status_code == 404


def test_a_bad_study_spec_is_refused_naming_its_fields(alice_api):
    spec = preset_document(S17)
    spec["placementStudy"] = {"arrivedLoadPercent": 1000}
    spec["variants"] = [{"name": "x", "placement": "Nope"}]
    response = alice_api.post("/api/v1/experiments/validate/", {"spec": spec}, format="json")
    assert response.status_code == 400
    paths = {e["path"] for e in response.json()["errors"]}
    assert "spec.placementStudy.arrivedLoadPercent" in paths or (
        "placementStudy.arrivedLoadPercent" in paths
    )


def test_an_openb_upload_imports_as_a_study_keeping_shares(alice_api):
    response = alice_api.post(
        "/api/v1/experiments/import/",
        {
            "format": "openb",
            "files": [upload("openb_nodes.csv"), upload("openb_pods.csv")],
            "placement_study": "130",
        },
        format="multipart",
    )
    assert response.status_code == 201, response.json()
    spec = response.json()["spec"]
    assert spec["placementStudy"]["arrivedLoadPercent"] == 130
    assert [w["gpuMilli"] for w in spec["workloads"] if w.get("gpuMilli")] == [460]


def test_a_study_import_at_a_load_out_of_range_names_the_field(alice_api):
    response = alice_api.post(
        "/api/v1/experiments/import/",
        {
            "format": "openb",
            "files": [upload("openb_nodes.csv"), upload("openb_pods.csv")],
            "placement_study": "0",
        },
        format="multipart",
    )
    assert response.status_code == 400
    assert [e["path"] for e in response.json()["errors"]] == ["placement_study"]
