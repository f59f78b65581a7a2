"""Getting around (issue 16 §4): the Runs page, each experiment's last run, presets
listed once, copies of a preset tagged ``from-preset``, the API docs in the nav."""

from __future__ import annotations

import re
from datetime import timedelta
from html import unescape

from django.urls import reverse
from django.utils import timezone

import scheduler_core as sc
from experiments import services
from experiments.models import Experiment, Status
from tests.factories import ExperimentFactory, RunFactory
from tests.web.pages import element_text, form_fields

RUNS = reverse("experiments:runs")
LIST = reverse("experiments:list")


def _run_rows(client, query: str = "") -> str:
    response = client.get(RUNS + query)
    assert response.status_code == 200
    return element_text(response.content.decode(), "id", "run-list")[0]


def _row_of(html: str, name: str) -> str:
    """The text of the table row that names ``name``."""
    rows = [unescape(row) for row in html.split("<tr")[1:] if name in unescape(row)]
    assert len(rows) == 1, f"{len(rows)} rows name {name!r}"
    return " ".join(re.sub(r"<[^>]+>", " ", rows[0]).split())


def test_the_runs_page_lists_every_visible_run_with_status_and_duration(
    alice_client, experiment, charlie
):
    start = timezone.now() - timedelta(minutes=10)
    done = RunFactory(
        experiment=experiment,
        status=Status.SUCCEEDED,
        progress=1.0,
        started_at=start,
        finished_at=start + timedelta(seconds=95),
    )
    queued = RunFactory(experiment=experiment)
    hidden = RunFactory(experiment=ExperimentFactory(owner=charlie, name="Charlie's secret"))

    rows = _run_rows(alice_client)

    assert f"#{done.pk}" in rows
    assert f"#{queued.pk}" in rows
    assert f"#{hidden.pk}" not in rows
    assert "Charlie's secret" not in rows
    assert "succeeded" in rows
    assert "queued" in rows
    assert "1m 35s" in rows  # finished_at - started_at
    assert experiment.name in rows


def test_the_runs_page_filters_by_status_and_ignores_an_unknown_one(alice_client, experiment):
    done = RunFactory(experiment=experiment, status=Status.SUCCEEDED)
    failed = RunFactory(experiment=experiment, status=Status.FAILED, error="boom")

    only_failed = _run_rows(alice_client, "?status=failed")
    assert f"#{failed.pk}" in only_failed
    assert f"#{done.pk}" not in only_failed
    assert "boom" in only_failed
    every = _run_rows(alice_client, "?status=nonsense")
    assert f"#{failed.pk}" in every
    assert f"#{done.pk}" in every


def test_the_runs_page_says_so_when_there_is_nothing(alice_client):
    html = alice_client.get(RUNS).content.decode()
    assert "No runs yet" in html


def test_a_running_run_shows_the_time_so_far(alice_client, experiment):
    RunFactory(
        experiment=experiment, status=Status.RUNNING, started_at=timezone.now() - timedelta(hours=2)
    )
    assert "2h" in _run_rows(alice_client)


def test_the_experiment_list_shows_each_experiments_last_run(alice_client, alice, experiment):
    RunFactory(experiment=experiment, status=Status.FAILED)
    last = RunFactory(experiment=experiment, status=Status.SUCCEEDED)
    never = ExperimentFactory(owner=alice, name="Never run")

    html = alice_client.get(LIST).content.decode()

    assert reverse("experiments:run", args=[last.pk]) in html
    row = _row_of(html, experiment.name)
    assert "succeeded" in row
    assert "failed" not in row
    assert "never run" in _row_of(html, never.name)


def test_each_preset_is_listed_once(alice_client, alice):
    every = alice_client.get(LIST).content.decode()
    assert every.count('data-preset="') == len(sc.list_presets(studies=True))

    installed = services.presets_install(owner=alice)
    after = alice_client.get(LIST).content.decode()

    assert len(installed) == len(sc.list_presets(studies=True))
    assert 'data-preset="' not in after  # no card repeats a row of the table
    assert 'id="presets-installed"' in after
    assert all(experiment.name in unescape(after) for experiment in installed)


def test_a_preset_whose_installed_copy_was_deleted_is_offered_again(alice_client, alice):
    installed = services.presets_install(owner=alice)
    installed[0].delete()
    html = alice_client.get(LIST).content.decode()
    assert html.count('data-preset="') == 1
    assert f'data-preset="{installed[0].source_preset}"' in html


def test_use_this_preset_says_it_makes_a_copy(alice_client):
    html = alice_client.get(LIST).content.decode()
    assert "Use this preset (makes a copy)" in html


def test_an_experiment_saved_from_a_preset_is_tagged_from_preset(alice_client, alice):
    preset = sc.list_presets()[0]
    url = reverse("experiments:new") + f"?preset={preset.id}"
    data = form_fields(alice_client.get(url).content.decode())
    response = alice_client.post(reverse("experiments:new"), {**data, "action": "save"})
    assert response.status_code == 302
    saved = Experiment.objects.get(owner=alice)
    assert saved.source_preset == preset.id
    assert saved.tag_names == ["from-preset"]


def test_the_api_copy_of_a_preset_is_tagged_from_preset(alice, alice_client):
    response = alice_client.post(
        reverse("api:experiment-from-preset"),
        {"preset": "s3-grace-period", "tags": ["demo"]},
        content_type="application/json",
    )
    assert response.status_code == 201, response.content
    assert sorted(response.json()["tags"]) == ["demo", "from-preset"]


def test_a_clone_of_an_installed_preset_is_the_users_copy_not_the_preset(alice):
    preset_copy = services.presets_install(owner=alice)[0]
    assert preset_copy.tag_names == ["preset"]
    clone = services.experiment_clone(experiment=preset_copy, owner=alice)
    assert clone.tag_names == ["from-preset"]
    assert clone.source_preset == preset_copy.source_preset


def test_the_nav_links_runs_and_the_api_docs(alice_client):
    html = alice_client.get(LIST).content.decode()
    assert f'href="{RUNS}"' in html
    assert f'href="{reverse("api:docs")}"' in html
    assert alice_client.get(reverse("api:docs")).status_code == 200
