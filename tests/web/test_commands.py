"""The management commands ``make run`` uses, and the operators' ones."""

from __future__ import annotations

import json

import pytest
from django.contrib.auth import authenticate, get_user_model
from django.core.management import CommandError, call_command

import scheduler_core as sc
from experiments.models import Experiment, Run, Status
from tests.factories import ReplicationFactory, RunFactory


def test_the_local_superuser_is_created_once_and_printed(tmp_path, capsys):
    credentials = tmp_path / "login.json"

    call_command("ensure_local_superuser", "--credentials-file", str(credentials))
    first = capsys.readouterr().out
    call_command("ensure_local_superuser", "--credentials-file", str(credentials))
    second = capsys.readouterr().out

    password = json.loads(credentials.read_text())["password"]
    assert first == second == f"Local superuser: username admin  password {password}\n"
    user = authenticate(username="admin", password=password)
    assert user is not None
    assert (user.is_superuser, user.is_staff) == (True, True)
    assert get_user_model().objects.filter(username="admin").count() == 1
    assert oct(credentials.stat().st_mode & 0o777) == "0o600"


def test_every_preset_is_loaded_once(alice, capsys):
    call_command("load_presets", "--owner", "alice")
    call_command("load_presets", "--owner", "alice")

    presets = sc.list_presets(studies=True)
    assert capsys.readouterr().out == (
        f"Loaded {len(presets)} preset experiment(s) for alice.\n"
        "Loaded 0 preset experiment(s) for alice.\n"
    )
    loaded = Experiment.objects.filter(owner=alice).order_by("source_preset")
    assert sorted(e.source_preset for e in loaded) == sorted(p.id for p in presets)
    assert all(e.tag_names == ["preset"] for e in loaded)


def test_loading_presets_for_nobody_is_an_error():
    with pytest.raises(CommandError, match="no user named ghost"):
        call_command("load_presets", "--owner", "ghost")


def test_start_run_enqueues_like_the_run_button(
    experiment, capsys, django_capture_on_commit_callbacks
):
    with django_capture_on_commit_callbacks(execute=True):
        call_command("start_run", str(experiment.pk))

    run = Run.objects.get(experiment=experiment)
    assert capsys.readouterr().out == f"{run.pk}\n"
    assert run.status == Status.SUCCEEDED


def test_sweep_runs_reports_what_it_changed(capsys):
    run = RunFactory(status=Status.RUNNING)
    ReplicationFactory(run=run, status=Status.SUCCEEDED, summary={})

    call_command("sweep_runs")

    assert capsys.readouterr().out == f"Swept 1 run(s): {run.pk}\n"
