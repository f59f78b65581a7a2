"""The pages' Kubernetes downloads: the experiment page's "Kubernetes manifests" and the
run page's "apply this variant", with the spec's permissions."""

from __future__ import annotations

import pytest
import yaml
from django.urls import reverse

import scheduler_core as sc
from scheduler_core.k8s import read_manifest_texts
from scheduler_core.k8s.roundtrip import normalised
from tests.factories import ExperimentFactory, RunFactory, preset_document


def test_the_experiment_page_offers_the_whole_experiment_and_each_variant(bob_client, experiment):
    page = bob_client.get(reverse("experiments:detail", args=[experiment.pk])).content.decode()
    base = reverse("experiments:manifests", args=[experiment.pk])

    assert "<h2>Kubernetes manifests</h2>" in page
    assert f'href="{base}" download' in page
    assert f'href="{base}?format=kwok" download' in page
    for name in ("grace-300s", "grace-30s"):
        assert f'href="{base}?variant={name}" download' in page


def test_the_run_page_offers_apply_this_variant_per_variant(alice_client, experiment):
    run = RunFactory(experiment=experiment)

    page = alice_client.get(reverse("experiments:run", args=[run.pk])).content.decode()
    base = reverse("experiments:run-manifests", args=[run.pk])

    assert "<h2>Apply this variant</h2>" in page
    assert page.count(">apply this variant</a>") == 2
    assert f'href="{base}?variant=grace-30s&amp;policy_only=1" download' in page


def test_a_grid_variant_name_is_escaped_in_its_link(alice, alice_client):
    experiment = ExperimentFactory(owner=alice, spec=preset_document("s6-checkpoint-frequency"))
    name = sc.variant_names(sc.parse_spec(experiment.spec))[-1]

    page = alice_client.get(reverse("experiments:detail", args=[experiment.pk])).content.decode()
    link = f"?variant={name.replace('=', '%3D').replace(', ', '%2C%20')}"
    response = alice_client.get(reverse("experiments:manifests", args=[experiment.pk]) + link)

    assert link in page
    assert response.status_code == 200


@pytest.mark.parametrize(
    ("persona", "status"), [("alice_client", 200), ("bob_client", 200), ("charlie_client", 404)]
)
def test_the_run_download_has_the_spec_permissions(request, experiment, persona, status):
    run = RunFactory(experiment=experiment)
    client = request.getfixturevalue(persona)

    response = client.get(
        reverse("experiments:run-manifests", args=[run.pk]), {"variant": "grace-30s"}
    )

    assert response.status_code == status
    if status == 200:
        assert (
            response["Content-Disposition"]
            == f'attachment; filename="run-{run.pk}-grace-30s-manifests.yaml"'
        )
        back = read_manifest_texts([(response.content.decode(), "run.yaml")]).spec
        expected = sc.resolve_variant(sc.parse_spec(run.spec), "grace-30s").spec
        assert normalised(back) == normalised(expected.model_copy(update={"variants": []}))


def test_the_experiment_download_is_refused_to_a_stranger(charlie_client, experiment):
    response = charlie_client.get(reverse("experiments:manifests", args=[experiment.pk]))

    assert response.status_code == 404


def test_an_unknown_variant_is_a_404_not_a_500(alice_client, experiment):
    response = alice_client.get(
        reverse("experiments:manifests", args=[experiment.pk]), {"variant": "nope"}
    )

    assert response.status_code == 404


def test_the_policy_only_download_has_no_nodes(alice_client, experiment):
    response = alice_client.get(
        reverse("experiments:manifests", args=[experiment.pk]), {"policy_only": "1"}
    )

    kinds = {d["kind"] for d in yaml.safe_load_all(response.content) if d}
    assert response.status_code == 200
    assert "Node" not in kinds
    assert "PriorityClass" in kinds
