"""Experiments over the API: list, create, read, update, delete, clone, validate,
presets, YAML; with Alice (owner), Bob (shared with) and Charlie (stranger)."""

from __future__ import annotations

import pytest
import yaml

import scheduler_core as sc
from experiments.models import Experiment, ExperimentTag
from experiments.specs import spec_document, spec_parse
from tests.api.conftest import errors
from tests.factories import ExperimentFactory, preset_document

URL = "/api/v1/experiments/"


def detail_url(experiment: Experiment) -> str:
    return f"{URL}{experiment.pk}/"


def expected_item(experiment: Experiment, *, can_edit: bool, run_count: int = 0) -> dict:
    return {
        "id": experiment.pk,
        "name": experiment.name,
        "description": experiment.description,
        "owner": experiment.owner.username,
        "tags": experiment.tag_names,
        "source_preset": experiment.source_preset,
        "run_count": run_count,
        "can_edit": can_edit,
        "created_at": experiment.created_at.isoformat().replace("+00:00", "Z"),
        "updated_at": experiment.updated_at.isoformat().replace("+00:00", "Z"),
    }


def broken_spec() -> dict:
    document = preset_document()
    document["workloads"][0]["gpus"] = -1
    return document


# ------------------------------------------------------------------------------ list
@pytest.mark.parametrize(
    ("persona", "listed"), [("alice", True), ("bob", True), ("charlie", False)]
)
def test_the_list_shows_only_visible_experiments(clients, experiment, persona, listed):
    response = clients[persona].get(URL)

    assert response.status_code == 200
    expected = [expected_item(experiment, can_edit=persona == "alice")] if listed else []
    assert response.json() == {
        "count": len(expected),
        "next": None,
        "previous": None,
        "results": expected,
    }


def test_the_list_filters_by_owner_tag_and_name(alice_api, alice, bob, experiment):
    ExperimentTag.objects.create(experiment=experiment, name="q3")
    other = ExperimentFactory(
        owner=bob, shared_with=[alice], spec={**preset_document(), "name": "Bob's sweep"}
    )

    def ids(query: str) -> list[int]:
        return [item["id"] for item in alice_api.get(f"{URL}?{query}").json()["results"]]

    assert ids("owner=bob") == [other.pk]
    assert ids("tag=q3") == [experiment.pk]
    assert ids("name=SWEEP") == [other.pk]
    assert ids("ordering=name") == sorted(
        [experiment.pk, other.pk], key=lambda pk: Experiment.objects.get(pk=pk).name
    )
    assert ids("owner=nobody") == []


def test_the_list_is_paginated(alice_api, alice):
    made = [ExperimentFactory(owner=alice) for _ in range(3)]

    body = alice_api.get(f"{URL}?page_size=2&ordering=id").json()
    second = alice_api.get(f"{URL}?page_size=2&ordering=id&page=2").json()

    assert body["count"] == 3
    assert [item["id"] for item in body["results"]] == [made[0].pk, made[1].pk]
    assert body["next"].endswith("/api/v1/experiments/?ordering=id&page=2&page_size=2")
    assert [item["id"] for item in second["results"]] == [made[2].pk]


def test_a_bad_ordering_is_an_error_at_its_parameter(alice_api):
    response = alice_api.get(f"{URL}?ordering=password")

    assert response.status_code == 400
    assert [e["path"] for e in errors(response)] == ["ordering"]


# ---------------------------------------------------------------------------- create
def test_create_stores_the_validated_spec_with_tags_and_sharing(alice_api, alice, bob):
    document = preset_document("s2-jump-the-queue")

    response = alice_api.post(
        URL, {"spec": document, "tags": ["gpu", "q3"], "shared_with": ["bob"]}, format="json"
    )

    assert response.status_code == 201
    experiment = Experiment.objects.get()
    assert experiment.owner == alice
    assert experiment.spec == spec_document(sc.parse_spec(document))
    assert experiment.tag_names == ["gpu", "q3"]
    assert list(experiment.shared_with.all()) == [bob]
    assert response.json() == {
        **expected_item(experiment, can_edit=True),
        "spec": experiment.spec,
        "shared_with": ["bob"],
        "version": 1,
    }


def test_create_takes_the_spec_as_yaml_text(alice_api):
    text = sc.get_preset("s3-grace-period").text

    response = alice_api.post(URL, {"spec": text}, format="json")

    assert response.status_code == 201
    assert Experiment.objects.get().spec == preset_document("s3-grace-period")


def test_create_reports_spec_and_field_errors_together_and_saves_nothing(alice_api):
    response = alice_api.post(
        URL, {"spec": broken_spec(), "tags": ["x" * 51], "shared_with": ["nobody"]}, format="json"
    )

    assert response.status_code == 400
    with pytest.raises(sc.SpecError) as spec_error:
        spec_parse(document=broken_spec())
    assert errors(response) == [
        {"path": "tags[0]", "message": "Ensure this field has no more than 50 characters."},
        {"path": "shared_with", "message": "no user named nobody"},
        *spec_error.value.errors,
    ]
    assert errors(response)[2]["path"] == "workloads[0].gpus"
    assert not Experiment.objects.exists()


def test_create_without_a_spec_names_the_missing_field(alice_api):
    response = alice_api.post(URL, {"tags": ["a"]}, format="json")

    assert response.status_code == 400
    assert errors(response) == [{"path": "spec", "message": "This field is required."}]


def test_create_refuses_a_spec_above_the_deployment_limits(alice_api, settings):
    settings.LAB_LIMITS = {**settings.LAB_LIMITS, "LAB_MAX_NODES": 0}

    response = alice_api.post(URL, {"spec": preset_document()}, format="json")

    assert response.status_code == 400
    assert errors(response) == [
        {"path": "cluster", "message": "1 nodes is above the limit of 0 (LAB_MAX_NODES)"}
    ]
    assert not Experiment.objects.exists()


# -------------------------------------------------------------------- read / change
@pytest.mark.parametrize(("persona", "status"), [("alice", 200), ("bob", 200), ("charlie", 404)])
def test_read_follows_the_pages_visibility(clients, experiment, persona, status):
    response = clients[persona].get(detail_url(experiment))

    assert response.status_code == status
    if status == 404:
        assert errors(response) == [{"path": "", "message": "No such experiment"}]
        return
    is_owner = persona == "alice"
    assert response.json() == {
        **expected_item(experiment, can_edit=is_owner),
        "spec": experiment.spec,
        "shared_with": ["bob"] if is_owner else None,
        "version": 1,
    }
    assert response["ETag"] == '"1"'


@pytest.mark.parametrize(("persona", "status"), [("alice", 200), ("bob", 403), ("charlie", 404)])
def test_only_the_owner_replaces_an_experiment(clients, experiment, persona, status):
    document = {**experiment.spec, "name": "Renamed", "replications": 3}

    response = clients[persona].put(
        detail_url(experiment), {"spec": document, "tags": ["t"]}, format="json"
    )

    assert response.status_code == status
    experiment.refresh_from_db()
    if status == 200:
        assert (experiment.name, experiment.spec["replications"]) == ("Renamed", 3)
        assert experiment.tag_names == ["t"]
        assert list(experiment.shared_with.all()) == []  # PUT replaces sharing too
        assert response.json()["spec"] == experiment.spec
    else:
        assert experiment.name == preset_document()["name"]
        assert experiment.spec == preset_document()
    if status == 403:
        assert errors(response) == [
            {"path": "", "message": "Only the owner may change this experiment"}
        ]


def test_patch_changes_only_what_it_names(alice_api, experiment, bob):
    ExperimentTag.objects.create(experiment=experiment, name="keep")

    response = alice_api.patch(detail_url(experiment), {"tags": ["new"]}, format="json")

    assert response.status_code == 200
    experiment.refresh_from_db()
    assert experiment.tag_names == ["new"]
    assert experiment.spec == preset_document()
    assert list(experiment.shared_with.all()) == [bob]


def test_a_tags_only_patch_never_writes_back_a_spec_changed_meanwhile(
    alice_api, experiment, monkeypatch
):
    """The PUT lands between the PATCH reading the experiment and writing it: the PATCH
    must write its tags only, not the spec it read before the PUT."""
    from experiments.api.views import experiments as views

    read = views.owned_experiment

    def read_then_concurrent_put(request, pk):
        stale = read(request, pk)
        Experiment.objects.filter(pk=pk).update(
            spec={**stale.spec, "name": "Put meanwhile"}, name="Put meanwhile"
        )
        return stale

    monkeypatch.setattr(views, "owned_experiment", read_then_concurrent_put)

    response = alice_api.patch(detail_url(experiment), {"tags": ["new"]}, format="json")

    assert response.status_code == 200
    experiment.refresh_from_db()
    assert experiment.tag_names == ["new"]
    assert (experiment.name, experiment.spec["name"]) == ("Put meanwhile", "Put meanwhile")
    assert response.json()["spec"]["name"] == "Put meanwhile"


def test_every_change_counts_a_version_given_back_as_the_etag(alice_api, experiment):
    first = alice_api.patch(detail_url(experiment), {"tags": ["a"]}, format="json")
    second = alice_api.put(detail_url(experiment), {"spec": experiment.spec}, format="json")

    assert (first.json()["version"], first["ETag"]) == (2, '"2"')
    assert (second.json()["version"], second["ETag"]) == (3, '"3"')


def test_an_edit_with_a_stale_if_match_is_refused_with_412(alice_api, experiment):
    etag = alice_api.get(detail_url(experiment))["ETag"]
    alice_api.patch(detail_url(experiment), {"tags": ["someone else"]}, format="json")

    stale = alice_api.put(
        detail_url(experiment),
        {"spec": {**experiment.spec, "name": "Mine"}},
        format="json",
        HTTP_IF_MATCH=etag,
    )
    fresh = alice_api.patch(
        detail_url(experiment), {"tags": ["mine"]}, format="json", HTTP_IF_MATCH='W/"2"'
    )

    assert stale.status_code == 412
    assert errors(stale) == [
        {
            "path": "",
            "message": (
                "the experiment was changed since you read it (you edited version 1, it is at "
                "version 2): read it again and reapply your change"
            ),
        }
    ]
    assert fresh.status_code == 200
    experiment.refresh_from_db()
    assert (experiment.name, experiment.tag_names, experiment.version) == (
        preset_document()["name"],
        ["mine"],
        3,
    )


def test_an_edit_naming_an_old_version_in_the_body_is_refused_with_409(alice_api, experiment):
    alice_api.patch(detail_url(experiment), {"tags": ["someone else"]}, format="json")

    response = alice_api.patch(
        detail_url(experiment), {"tags": ["mine"], "version": 1}, format="json"
    )

    assert response.status_code == 409
    assert [e["path"] for e in errors(response)] == ["version"]
    experiment.refresh_from_db()
    assert experiment.tag_names == ["someone else"]


def test_an_if_match_this_api_never_sent_matches_nothing(alice_api, experiment):
    response = alice_api.patch(
        detail_url(experiment), {"tags": ["x"]}, format="json", HTTP_IF_MATCH='"not-a-version"'
    )

    assert response.status_code == 412
    experiment.refresh_from_db()
    assert experiment.tag_names == []


def test_a_bad_update_changes_nothing(alice_api, experiment):
    response = alice_api.patch(detail_url(experiment), {"spec": broken_spec()}, format="json")

    assert response.status_code == 400
    assert errors(response)[0]["path"] == "workloads[0].gpus"
    experiment.refresh_from_db()
    assert experiment.spec == preset_document()


@pytest.mark.parametrize(("persona", "status"), [("alice", 204), ("bob", 403), ("charlie", 404)])
def test_only_the_owner_deletes(clients, experiment, finished_run, persona, status):
    response = clients[persona].delete(detail_url(experiment))

    assert response.status_code == status
    assert Experiment.objects.filter(pk=experiment.pk).exists() == (status != 204)
    assert finished_run.__class__.objects.filter(pk=finished_run.pk).exists() == (status != 204)


@pytest.mark.parametrize(("persona", "status"), [("alice", 201), ("bob", 201), ("charlie", 404)])
def test_anyone_who_sees_an_experiment_clones_it_into_their_own(
    clients, experiment, persona, status, django_user_model
):
    ExperimentTag.objects.create(experiment=experiment, name="t")

    response = clients[persona].post(f"{detail_url(experiment)}clone/")

    assert response.status_code == status
    copies = Experiment.objects.exclude(pk=experiment.pk)
    if status == 404:
        assert not copies.exists()
        return
    copy = copies.get()
    assert copy.owner == django_user_model.objects.get(username=persona)
    assert copy.name == f"{experiment.name} (copy)"
    assert copy.tag_names == ["t"]
    assert list(copy.shared_with.all()) == []
    assert response.json()["id"] == copy.pk
    assert response.json()["can_edit"] is True


# ------------------------------------------------------------------ validate, presets
def test_validate_answers_like_the_form_and_saves_nothing(alice_api):
    document = preset_document()

    good = alice_api.post(f"{URL}validate/", {"spec": document}, format="json")
    bad = alice_api.post(f"{URL}validate/", {"spec": broken_spec()}, format="json")

    assert good.status_code == 200
    assert good.json() == {
        "valid": True,
        "name": document["name"],
        "variants": sc.variant_names(sc.parse_spec(document)),
        "spec": document,
    }
    assert bad.status_code == 400
    with pytest.raises(sc.SpecError) as expected:
        spec_parse(document=broken_spec())
    assert errors(bad) == expected.value.errors
    assert not Experiment.objects.exists()


def test_validate_reports_every_error_at_once(alice_api):
    """Issue 16 §1: a shape error (GPUs 1.5) and the cross-field ones (an unknown class,
    two globalDefault classes) come back from one call, each at its path."""
    document = preset_document("s1-training-vs-shards")
    document["workloads"][0]["gpus"] = 1.5
    document["workloads"][1]["priorityClassName"] = "urgnet"
    for priority_class in document["priorityClasses"][:2]:
        priority_class["globalDefault"] = True

    response = alice_api.post(f"{URL}validate/", {"spec": document}, format="json")

    assert response.status_code == 400
    by_path = {e["path"]: e["message"] for e in errors(response)}
    assert by_path["workloads[0].gpus"] == "must be a whole number, got 1.5"
    assert "urgnet" in by_path["workloads[1].priorityClassName"]
    assert any("only one PriorityClass may be globalDefault" in m for m in by_path.values())


def test_malformed_yaml_is_an_error_of_the_whole_spec(alice_api):
    response = alice_api.post(f"{URL}validate/", {"spec": "name: [unclosed"}, format="json")

    assert response.status_code == 400
    [error] = errors(response)
    assert error["path"] == ""
    assert error["message"].startswith("malformed YAML: line ")


def test_presets_are_listed_in_scenario_order(alice_api):
    response = alice_api.get("/api/v1/presets/")

    assert response.status_code == 200
    assert response.json() == [
        {"id": p.id, "name": p.name, "description": p.description}
        for p in sc.list_presets(studies=True)
    ]


def test_a_preset_shows_its_spec_and_yaml(alice_api):
    preset = sc.get_preset("s3-grace-period")

    body = alice_api.get(f"/api/v1/presets/{preset.id}/").json()

    assert body == {
        "id": preset.id,
        "name": preset.name,
        "description": preset.description,
        "spec": preset_document(preset.id),
        "yaml": preset.text,
    }
    missing = alice_api.get("/api/v1/presets/s99-nothing/")
    assert missing.status_code == 404
    assert errors(missing) == [{"path": "", "message": "no preset 's99-nothing'"}]


def test_create_from_a_preset(alice_api, alice, bob):
    response = alice_api.post(
        f"{URL}from-preset/",
        {"preset": "s2-jump-the-queue", "tags": ["demo"], "shared_with": ["bob"]},
        format="json",
    )

    assert response.status_code == 201
    experiment = Experiment.objects.get()
    assert (experiment.owner, experiment.source_preset) == (alice, "s2-jump-the-queue")
    assert experiment.spec == preset_document("s2-jump-the-queue")
    assert experiment.tag_names == ["demo", "from-preset"]
    assert list(experiment.shared_with.all()) == [bob]
    assert response.json()["source_preset"] == "s2-jump-the-queue"


def test_an_unknown_preset_is_an_error_at_its_field(alice_api):
    response = alice_api.post(f"{URL}from-preset/", {"preset": "nope"}, format="json")

    assert response.status_code == 400
    assert errors(response) == [{"path": "preset", "message": "no preset 'nope'"}]
    assert not Experiment.objects.exists()


@pytest.mark.parametrize(("persona", "status"), [("alice", 200), ("bob", 200), ("charlie", 404)])
def test_the_spec_downloads_as_yaml(clients, experiment, persona, status):
    response = clients[persona].get(f"{detail_url(experiment)}spec.yaml")

    assert response.status_code == status
    if status == 200:
        assert response["Content-Type"] == "application/yaml; charset=utf-8"
        assert (
            response["Content-Disposition"]
            == f'attachment; filename="experiment-{experiment.pk}.yaml"'
        )
        assert spec_document(sc.parse_spec(yaml.safe_load(response.content))) == experiment.spec


def test_a_stored_spec_that_no_longer_passes_must_be_fixed_by_the_patch(alice_api, experiment):
    Experiment.objects.filter(pk=experiment.pk).update(spec={**experiment.spec, "replications": 0})

    tags_only = alice_api.patch(detail_url(experiment), {"tags": ["x"]}, format="json")
    fixed = alice_api.patch(
        detail_url(experiment), {"spec": preset_document(), "tags": ["x"]}, format="json"
    )

    assert tags_only.status_code == 400
    assert [e["path"] for e in errors(tags_only)] == ["replications"]
    assert fixed.status_code == 200
    experiment.refresh_from_db()
    assert (experiment.spec, experiment.tag_names) == (preset_document(), ["x"])
