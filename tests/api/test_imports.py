"""Importing recorded clusters (issue 7): multipart upload → an ordinary experiment, or
``{path, file, line, column, message}`` errors and nothing stored."""

from __future__ import annotations

from pathlib import Path

import pytest
from django.core.files.uploadedfile import SimpleUploadedFile

from experiments.models import Experiment, ExperimentTag
from experiments.specs import spec_document
from scheduler_core.traces import FORMATS, import_trace
from scheduler_core.traces.defaults import DEFAULT_TABLE
from tests.api.conftest import errors

URL = "/api/v1/experiments/import/"
TRACES = Path(__file__).resolve().parents[1] / "core" / "fixtures" / "traces"


def upload(name: str) -> SimpleUploadedFile:
    return SimpleUploadedFile(name, (TRACES / name).read_bytes(), content_type="text/csv")


def test_an_openb_trace_becomes_an_experiment(alice_api, alice, bob):
    response = alice_api.post(
        URL,
        {
            "format": "openb",
            "files": [upload("openb_nodes.csv"), upload("openb_pods.csv")],
            "tags": "openb, replay",
            "shared_with": "bob",
        },
        format="multipart",
    )

    assert response.status_code == 201
    experiment = Experiment.objects.get()
    expected = import_trace("openb", [TRACES / "openb_nodes.csv", TRACES / "openb_pods.csv"])
    assert experiment.spec == spec_document(expected.spec)
    assert (experiment.owner, experiment.name) == (alice, expected.spec.name)
    assert experiment.tag_names == ["openb", "replay"]
    assert list(experiment.shared_with.all()) == [bob]
    assert response.json()["id"] == experiment.pk


def test_bad_rows_answer_with_file_line_and_column_and_store_nothing(alice_api):
    response = alice_api.post(
        URL,
        {
            "format": "openb",
            "files": [upload("openb_nodes.csv"), upload("openb_pods_bad.csv")],
            "tags": "x",
        },
        format="multipart",
    )

    assert response.status_code == 400
    assert errors(response) == [
        {
            "path": "files[1]",
            "file": "openb_pods_bad.csv",
            "line": 3,
            "column": 4,
            "message": "num_gpu: '1.5' is not a whole number",
        },
        {
            "path": "files[1]",
            "file": "openb_pods_bad.csv",
            "line": 4,
            "column": 7,
            "message": "qos: 'XX' is not in the QoS mapping (mapped: LS, Guaranteed, Burstable, "
            "BE); add it with --qos-map",
        },
        {
            "path": "files[1]",
            "file": "openb_pods_bad.csv",
            "line": 5,
            "column": 10,
            "message": "deletion_time: 900 is before creation_time 1100",
        },
    ]
    assert not Experiment.objects.exists()
    assert not ExperimentTag.objects.exists()


def test_a_qos_mapping_override_decides_the_priority_classes(alice_api):
    response = alice_api.post(
        URL,
        {
            "format": "openb",
            "files": [upload("openb_nodes.csv"), upload("openb_pods.csv")],
            "qos_map": "BE=spare:0,Burstable=spare:0",
        },
        format="multipart",
    )

    assert response.status_code == 201
    spec = Experiment.objects.get().spec
    classes = {c["name"]: c["value"] for c in spec["priorityClasses"]}
    assert classes["spare"] == 0
    assert "best-effort" not in classes


def test_kind_default_overrides_fill_what_the_trace_does_not_record(alice_api):
    response = alice_api.post(
        URL,
        {
            "format": "csv",
            "files": [upload("nodes.csv"), upload("jobs.csv"), upload("classes.csv")],
            "defaults": "inference.startupSeconds=999",
            "name": "mine",
        },
        format="multipart",
    )

    assert response.status_code == 201
    spec = Experiment.objects.get().spec
    assert spec["name"] == "mine"
    startups = {w["name"]: w["startupSeconds"] for w in spec["workloads"]}
    assert startups["chat"] == 999
    assert DEFAULT_TABLE["inference"].startup_seconds != 999


@pytest.mark.parametrize(
    ("data", "path", "message"),
    [
        ({"qos_map": "LS=,BE"}, "qos_map", "'LS=' is not QOS=CLASS[:VALUE[:POLICY]]"),
        ({"qos_map": "qos: [unclosed"}, "qos_map", "malformed YAML"),
        (
            {"defaults": "training.colour=red"},
            "defaults",
            "training.colour: unknown field 'colour'",
        ),
        ({"format": "xls"}, "format", '"xls" is not a valid choice.'),
    ],
    ids=["qos-map", "qos-map-yaml", "defaults", "format"],
)
def test_bad_options_are_errors_at_their_field(alice_api, data, path, message):
    form = {
        "format": "openb",
        "files": [upload("openb_nodes.csv"), upload("openb_pods.csv")],
        **data,
    }

    response = alice_api.post(URL, form, format="multipart")

    assert response.status_code == 400
    [error] = errors(response)
    assert error["path"] == path
    assert error["message"].startswith(message)
    assert not Experiment.objects.exists()


def test_an_import_needs_files(alice_api):
    response = alice_api.post(URL, {"format": "csv"}, format="multipart")

    assert response.status_code == 400
    assert errors(response) == [
        {"path": "files", "message": "Ensure this field has at least 1 elements."}
    ]


def test_a_spec_above_the_limits_is_refused(alice_api, settings):
    settings.LAB_LIMITS = {**settings.LAB_LIMITS, "LAB_MAX_WORKLOADS": 1}

    response = alice_api.post(
        URL,
        {"format": "openb", "files": [upload("openb_nodes.csv"), upload("openb_pods.csv")]},
        format="multipart",
    )

    assert response.status_code == 400
    assert errors(response) == [
        {
            "path": "sample",
            "file": "",
            "line": 0,
            "column": 0,
            "message": "4 workloads is above the limit of 1 "
            "(LAB_MAX_WORKLOADS): set 'sample' (at most N "
            "workloads) lower, or import a shorter window "
            "('start', 'horizon_seconds')",
        }
    ]
    assert not Experiment.objects.exists()


def test_the_formats_are_listed_with_their_defaults(alice_api):
    body = alice_api.get("/api/v1/trace-formats/").json()

    assert [f["name"] for f in body["formats"]] == list(FORMATS)
    openb = body["formats"][0]
    assert openb["qos_map"] == FORMATS["openb"].qos_map.to_document()
    assert body["kind_defaults"]["training"]["checkpointIntervalSeconds"] == 1800


def test_a_binary_file_is_an_error_at_that_file(alice_api):
    picture = SimpleUploadedFile("pods.png", b"\x89PNG\r\n\x1a\n\x00\x00", content_type="image/png")

    response = alice_api.post(
        URL, {"format": "openb", "files": [upload("openb_nodes.csv"), picture]}, format="multipart"
    )

    assert response.status_code == 400
    assert errors(response) == [
        {
            "path": "files[1]",
            "file": "pods.png",
            "line": 0,
            "column": 0,
            "message": "not UTF-8 text (invalid start byte)",
        }
    ]
    assert not Experiment.objects.exists()


# ============================================================================ Kubernetes
K8S = Path(__file__).resolve().parents[1] / "core" / "fixtures" / "k8s"
UNUSED = (
    "---\napiVersion: v1\nkind: ConfigMap\nmetadata: {name: settings, namespace: ml}\n"
    "---\napiVersion: networking.k8s.io/v1\nkind: Ingress\nmetadata: {name: web}\n"
)


def test_a_kubernetes_import_answers_with_its_counts_and_notes(alice_api):
    """issue 11 §1: nothing is silently dropped, and the API shows the notes."""
    text = (K8S / "seed-004-three-class-setup.yaml").read_text() + UNUSED
    response = alice_api.post(
        URL,
        {"format": "k8s", "files": [SimpleUploadedFile("three.yaml", text.encode())]},
        format="multipart",
    )

    assert response.status_code == 201
    report = response.json()["import_report"]
    assert report["counts"] == {"nodes": 1, "pods": 0, "workloads": 3, "initial_pods": 0}
    assert report["kinds"] == {
        "ConfigMap": 1,
        "Deployment": 1,
        "Ingress": 1,
        "Job": 2,
        "Node": 1,
        "PriorityClass": 3,
        "ResourceQuota": 1,
    }
    assert (
        "left out, a kind this model does not read: ConfigMap ml/settings, Ingress web"
        in report["notes"]
    )
    assert (
        "ResourceQuota serving/interactive-gpus: applies cluster-wide here (the model has "
        "no namespaces)" in report["notes"]
    )
    assert response.json()["id"] == Experiment.objects.get().pk


def test_a_kubernetes_import_error_is_located_and_stores_nothing(alice_api):
    text = "apiVersion: v1\nkind: Pod\nmetadata: {name: p}\nspec:\n  priorityClassName: gold\n"
    response = alice_api.post(
        URL,
        {"format": "k8s", "files": [SimpleUploadedFile("pod.yaml", text.encode())]},
        format="multipart",
    )

    assert response.status_code == 400
    assert errors(response) == [
        {
            "path": "files[0]",
            "file": "pod.yaml",
            "line": 1,
            "column": 1,
            "message": "Pod p: spec.priorityClassName: no PriorityClass with name 'gold' was found",
        }
    ]
    assert not Experiment.objects.exists()


def test_the_schema_documents_the_import_report(alice_api):
    schema = alice_api.get("/api/schema/").json()

    created = schema["paths"]["/api/v1/experiments/import/"]["post"]["responses"]["201"]
    ref = created["content"]["application/json"]["schema"]["$ref"].rsplit("/", 1)[1]
    output = schema["components"]["schemas"][ref]
    report_ref = (
        output["properties"]["import_report"]["allOf"][0]["$ref"]
        if "allOf" in output["properties"]["import_report"]
        else output["properties"]["import_report"]["$ref"]
    )
    report = schema["components"]["schemas"][report_ref.rsplit("/", 1)[1]]
    assert report["properties"]["notes"] == {
        "type": "array",
        "items": {"type": "string"},
        "description": report["properties"]["notes"]["description"],
    }
    assert (
        "every input object is used or named here" in report["properties"]["notes"]["description"]
    )
    assert set(report["required"]) == {"counts", "kinds", "notes"}


def test_the_window_and_the_load_options_are_in_the_api_too(alice_api, alice):
    response = alice_api.post(
        URL,
        {
            "format": "openb",
            "files": [upload("openb_nodes.csv"), upload("openb_pods.csv")],
            "compress": "2",
            "sample": "3",
            "sample_seed": "5",
        },
        format="multipart",
    )

    assert response.status_code == 201, response.json()
    spec = Experiment.objects.get(owner=alice).spec
    assert len(spec["workloads"]) == 3
    assert any(
        "sampled 3 of 4 workloads (seed 5)" in n for n in response.json()["import_report"]["notes"]
    )
