"""``GET /api/v1/experiments/{id}/manifests/`` and ``/runs/{id}/manifests/``: the spec as
Kubernetes manifests or a KWOK snapshot, for whoever may see the spec."""

from __future__ import annotations

import pytest
import yaml

import scheduler_core as sc
from experiments.models import Experiment
from scheduler_core.k8s import read_manifest_texts
from scheduler_core.k8s.roundtrip import normalised
from tests.api.conftest import errors
from tests.factories import RunFactory, preset_document


def url(experiment: Experiment) -> str:
    return f"/api/v1/experiments/{experiment.pk}/manifests/"


def read_back(response) -> sc.ExperimentSpec:
    return read_manifest_texts([(response.content.decode(), "download.yaml")]).spec


@pytest.mark.parametrize(("persona", "status"), [("alice", 200), ("bob", 200), ("charlie", 404)])
def test_the_manifests_download_for_those_who_may_see_the_spec(
    clients, experiment, persona, status
):
    response = clients[persona].get(url(experiment))

    assert response.status_code == status
    if status == 200:
        assert response["Content-Type"] == "application/yaml; charset=utf-8"
        assert (
            response["Content-Disposition"]
            == f'attachment; filename="experiment-{experiment.pk}-manifests.yaml"'
        )
        assert normalised(read_back(response)) == normalised(sc.parse_spec(experiment.spec))
    else:
        assert errors(response)[0]["message"]


def test_one_variant_downloads_with_its_overrides_applied(bob_api, experiment):
    response = bob_api.get(url(experiment), {"variant": "grace-30s"})

    assert response.status_code == 200
    assert (
        response["Content-Disposition"]
        == f'attachment; filename="experiment-{experiment.pk}-grace-30s-manifests.yaml"'
    )
    back = read_back(response)
    expected = sc.resolve_variant(sc.parse_spec(experiment.spec), "grace-30s").spec
    assert normalised(back) == normalised(expected.model_copy(update={"variants": []}))


def test_the_kwok_snapshot_and_policy_only(alice_api, experiment):
    kwok = alice_api.get(url(experiment), {"format": "kwok"})
    policy = alice_api.get(url(experiment), {"policy_only": "true"})

    assert kwok.status_code == 200
    assert (
        kwok["Content-Disposition"]
        == f'attachment; filename="experiment-{experiment.pk}-kwok.yaml"'
    )
    nodes = [d for d in yaml.safe_load_all(kwok.content) if d and d["kind"] == "Node"]
    assert nodes
    assert all(n["metadata"]["annotations"]["kwok.x-k8s.io/node"] == "fake" for n in nodes)
    assert policy.status_code == 200
    kinds = {d["kind"] for d in yaml.safe_load_all(policy.content) if d}
    assert "Node" not in kinds
    assert "PriorityClass" in kinds


@pytest.mark.parametrize(
    ("query", "path", "message"),
    [
        ({"variant": "nope"}, "variant", "no variant named 'nope'"),
        ({"format": "helm"}, "format", '"helm" is not a valid choice.'),
        ({"policy_only": "maybe"}, "policy_only", "Must be a valid boolean."),
    ],
    ids=["unknown-variant", "unknown-format", "bad-boolean"],
)
def test_a_bad_query_is_a_400_naming_the_parameter(alice_api, experiment, query, path, message):
    response = alice_api.get(url(experiment), query)

    assert response.status_code == 400
    assert errors(response) == [{"path": path, "message": message}]


def test_a_run_downloads_the_spec_it_ran_not_the_edited_one(alice_api, experiment):
    run = RunFactory(experiment=experiment)
    experiment.spec = preset_document("s7-three-class-setup")
    experiment.save()

    response = alice_api.get(f"/api/v1/runs/{run.pk}/manifests/", {"variant": "grace-300s"})

    assert response.status_code == 200
    assert (
        response["Content-Disposition"]
        == f'attachment; filename="run-{run.pk}-grace-300s-manifests.yaml"'
    )
    assert read_back(response).name == run.spec["name"] != experiment.spec["name"]


def test_a_strangers_run_is_not_found(charlie_api, experiment):
    run = RunFactory(experiment=experiment)

    response = charlie_api.get(f"/api/v1/runs/{run.pk}/manifests/")

    assert response.status_code == 404


def test_the_endpoints_are_in_the_schema_as_yaml(alice_api):
    schema = alice_api.get("/api/schema/").json()

    for path in ("/api/v1/experiments/{id}/manifests/", "/api/v1/runs/{id}/manifests/"):
        operation = schema["paths"][path]["get"]
        assert "application/yaml" in operation["responses"]["200"]["content"]
        assert {p["name"] for p in operation["parameters"]} >= {"variant", "format", "policy_only"}
