"""Who may do what: Alice owns the experiment, Bob has it shared with him, Charlie is a
stranger. A stranger gets 404 (the experiment's existence is not disclosed); a viewer
gets 403 for anything that changes it."""

from __future__ import annotations

import pytest
from django.test import Client
from django.urls import reverse

from experiments.models import Experiment, Run, Status
from tests.factories import ExperimentFactory, ReplicationFactory, RunFactory, UserFactory
from tests.web.conftest import client_for


@pytest.fixture
def run(experiment):
    run = RunFactory(experiment=experiment, status=Status.RUNNING)
    ReplicationFactory(run=run)
    return run


def _url(name: str, experiment, run) -> str:
    if name == "replication-events":
        return reverse(f"experiments:{name}", args=[run.pk, run.replications.first().pk])
    target = run if name.startswith("run") and name != "run-start" else experiment
    return reverse(f"experiments:{name}", args=[target.pk])


# (method, url name, status for Alice, for Bob, for Charlie)
MATRIX = [
    ("get", "detail", 200, 200, 404),
    ("get", "edit", 200, 403, 404),
    ("get", "delete", 200, 403, 404),
    ("post", "clone", 302, 302, 404),
    ("post", "run-start", 302, 403, 404),
    ("get", "run", 200, 200, 404),
    ("get", "run-status", 200, 200, 404),
    ("get", "replication-events", 200, 200, 404),
    ("post", "run-cancel", 302, 403, 404),
    ("post", "delete", 302, 403, 404),
]


@pytest.mark.parametrize(
    ("method", "name", "alice_status", "bob_status", "charlie_status"),
    MATRIX,
    ids=[f"{m}-{n}" for m, n, *_ in MATRIX],
)
@pytest.mark.parametrize("persona", ["alice", "bob", "charlie"])
def test_access_matrix(
    request,
    experiment,
    run,
    persona,
    method,
    name,
    alice_status,
    bob_status,
    charlie_status,
    django_capture_on_commit_callbacks,
):
    client = client_for(request.getfixturevalue(persona))
    expected = {"alice": alice_status, "bob": bob_status, "charlie": charlie_status}[persona]

    with django_capture_on_commit_callbacks(execute=False):
        response = getattr(client, method)(_url(name, experiment, run))

    assert response.status_code == expected


@pytest.mark.parametrize(("persona", "runs"), [("alice", 0), ("bob", 1), ("charlie", 1)])
def test_only_the_owner_can_delete(request, experiment, run, persona, runs):
    client = client_for(request.getfixturevalue(persona))

    client.post(reverse("experiments:delete", args=[experiment.pk]))

    assert Experiment.objects.filter(pk=experiment.pk).count() == runs
    assert Run.objects.filter(pk=run.pk).count() == runs


@pytest.mark.parametrize(
    ("persona", "status"),
    [("alice", Status.CANCELLED), ("bob", Status.RUNNING), ("charlie", Status.RUNNING)],
)
def test_only_the_owner_can_cancel(request, run, persona, status):
    client_for(request.getfixturevalue(persona)).post(
        reverse("experiments:run-cancel", args=[run.pk])
    )

    run.refresh_from_db()
    assert run.status == status


def test_a_viewer_cannot_save_changes(bob_client, experiment):
    url = reverse("experiments:edit", args=[experiment.pk])
    response = bob_client.post(
        url, {"mode": "yaml", "yaml-text": "name: hijacked", "action": "save"}
    )

    assert response.status_code == 403
    experiment.refresh_from_db()
    assert experiment.name == "S3 The grace period is the preemptor's delay"


def test_a_viewer_clones_into_an_experiment_of_their_own(bob_client, bob, experiment):
    response = bob_client.post(reverse("experiments:clone", args=[experiment.pk]))

    copy = Experiment.objects.get(owner=bob)
    assert response.status_code == 302
    assert response["Location"] == reverse("experiments:edit", args=[copy.pk])
    assert copy.name == f"{experiment.name} (copy)"
    assert copy.spec == {**experiment.spec, "name": copy.name}
    assert list(copy.shared_with.all()) == []
    assert copy.runs.count() == 0


@pytest.mark.parametrize(
    ("persona", "listed"), [("alice", True), ("bob", True), ("charlie", False)]
)
def test_the_list_shows_only_visible_experiments(request, experiment, persona, listed):
    response = client_for(request.getfixturevalue(persona)).get(reverse("experiments:list"))

    detail = reverse("experiments:detail", args=[experiment.pk])
    assert response.status_code == 200
    assert (f'href="{detail}"' in response.content.decode()) is listed


def test_a_deployment_can_share_everything(charlie_client, experiment, settings):
    settings.LAB_SHARE_ALL = True

    assert (
        charlie_client.get(reverse("experiments:detail", args=[experiment.pk])).status_code == 200
    )
    assert charlie_client.get(reverse("experiments:edit", args=[experiment.pk])).status_code == 403


def test_operators_see_everything(experiment):
    operator = client_for(UserFactory(username="operator", is_superuser=True, is_staff=True))

    assert operator.get(reverse("experiments:detail", args=[experiment.pk])).status_code == 200
    assert operator.get(reverse("experiments:edit", args=[experiment.pk])).status_code == 403


@pytest.mark.parametrize(
    "url", ["/", "/experiments/new/", "/experiments/1/", "/runs/1/", "/runs/1/status.json"]
)
def test_every_page_needs_a_login(url):
    response = Client().get(url)

    assert response.status_code == 302
    assert response["Location"] == f"/accounts/login/?next={url}"


def test_the_login_page_is_open_and_logs_in(alice):
    client = Client()
    assert client.get("/accounts/login/").status_code == 200

    response = client.post(
        "/accounts/login/", {"username": "alice", "password": "correct horse battery staple"}
    )

    assert response.status_code == 302
    assert response["Location"] == "/"
    assert client.get("/").status_code == 200


def test_forms_refuse_posts_without_a_csrf_token(alice, experiment):
    client = Client(enforce_csrf_checks=True)
    client.force_login(alice)

    response = client.post(reverse("experiments:run-start", args=[experiment.pk]))

    assert response.status_code == 403
    assert experiment.runs.count() == 0


@pytest.mark.parametrize("model", ["experiment", "run", "replication", "user"])
def test_the_admin_site_is_for_operators(experiment, run, alice_client, model):
    operator = client_for(UserFactory(username="operator", is_superuser=True, is_staff=True))
    app = "auth" if model == "user" else "experiments"
    changelist = reverse(f"admin:{app}_{model}_changelist")
    obj = {
        "experiment": experiment,
        "run": run,
        "replication": run.replications.first(),
        "user": experiment.owner,
    }[model]
    change = reverse(f"admin:{app}_{model}_change", args=[obj.pk])

    assert operator.get(changelist).status_code == 200
    assert operator.get(change).status_code == 200
    assert alice_client.get(changelist).status_code == 302


def test_the_list_shows_the_most_recently_changed_first(alice_client, alice):
    older, newer = ExperimentFactory(owner=alice), ExperimentFactory(owner=alice)
    Experiment.objects.filter(pk=older.pk).update(updated_at=newer.updated_at.replace(year=2020))

    html = alice_client.get(reverse("experiments:list")).content.decode()

    assert html.index(reverse("experiments:detail", args=[newer.pk])) < html.index(
        reverse("experiments:detail", args=[older.pk])
    )
