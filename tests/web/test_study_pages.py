"""The placement study in the browser's pages (issue #18 §3): started from the form, run
in chunks of seeds, drawn as allocation against arrived load per policy; the editor's
placementStudy fields and their errors."""

from __future__ import annotations

import json
import re

import plotly.graph_objects as go
import pytest
from django.urls import reverse

from experiments.models import Experiment, Run, Status
from experiments.services.study import study_chunks
from tests.factories import ExperimentFactory, preset_document
from tests.web.pages import form_fields

S17 = "s17-placement-study"


@pytest.fixture
def study_experiment(alice) -> Experiment:
    spec = {**preset_document(S17), "replications": 3}
    return ExperimentFactory(owner=alice, spec=spec, source_preset=S17)


@pytest.fixture
def study_run(alice_client, study_experiment, django_capture_on_commit_callbacks) -> Run:
    with django_capture_on_commit_callbacks(execute=True):
        response = alice_client.post(reverse("experiments:run-start", args=[study_experiment.pk]))
    assert response.status_code == 302
    run = Run.objects.get(experiment=study_experiment)
    assert run.status == Status.SUCCEEDED, run.error
    return run


def test_every_seed_is_stored_with_its_curve(study_run):
    reps = list(study_run.replications.order_by("variant_index", "replication"))
    assert len(reps) == 6 * 3
    assert all(r.status == Status.SUCCEEDED and r.study for r in reps)
    assert [r.seed for r in reps[:3]] == [42, 43, 44]
    assert {r.placement for r in reps} == {
        "Random", "DotProduct", "GpuClustering", "GpuPacking", "BestFit", "FGD"
    }  # fmt: skip
    assert reps[0].event_log is None
    assert reps[0].timeline is None
    assert [row["study"]["atLoad"]["n"] for row in study_run.aggregate] == [3] * 6


def test_the_run_page_draws_allocation_against_arrived_load(alice_client, study_run):
    response = alice_client.get(reverse("experiments:run", args=[study_run.pk]))
    html = response.content.decode()
    assert response.status_code == 200
    assert 'id="chart-study-curve"' in html
    assert 'id="chart-timeline"' not in html
    data = json.loads(re.search(r'id="study-data">(.*?)</script>', html, re.S).group(1))
    curve = data["study-curve"]
    go.Figure(curve)  # every property is one plotly knows
    go.Figure(data["study-at-load"])
    means = [t for t in curve["data"] if t.get("legendgroup") and t.get("fill") is None]
    bands = [t for t in curve["data"] if t.get("fill") == "toself"]
    assert [t["name"] for t in means] == [row["variant"] for row in study_run.aggregate]
    assert len(bands) == 6  # the spread across the three seeds
    row = study_run.aggregate[0]
    assert means[0]["y"] == row["study"]["mean"]
    assert means[0]["x"] == row["study"]["load"]
    assert curve["layout"]["xaxis"]["automargin"]
    assert curve["layout"]["yaxis"]["automargin"]
    colors = {t["line"]["color"] for t in means}
    assert len(colors) == 6
    table = re.search(r'<table class="table" id="study-table">(.*?)</table>', html, re.S).group(1)
    assert table.count("<tr data-variant=") == 6


def test_the_page_shows_progress_while_the_study_runs(alice_client, study_experiment):
    run = Run.objects.create(
        experiment=study_experiment, spec=study_experiment.spec, product_version="t"
    )
    html = alice_client.get(reverse("experiments:run", args=[run.pk])).content.decode()
    assert 'id="progress-overall"' in html
    assert "study-data" not in html


def test_work_is_chunked_by_variant(study_run):
    reps = list(study_run.replications.all())
    chunks = study_chunks(reps, 2)
    assert len(chunks) == 6 * 2  # 3 seeds: a chunk of 2 and one of 1 per variant
    by_id = {r.pk: r.variant_index for r in reps}
    assert all(len({by_id[i] for i in chunk}) == 1 for chunk in chunks)
    assert sorted(i for chunk in chunks for i in chunk) == sorted(by_id)
    assert len(study_chunks(reps, 10)) == 6


def test_the_editor_shows_and_keeps_the_study_fields(alice_client, study_experiment):
    url = reverse("experiments:edit", args=[study_experiment.pk])
    fields = form_fields(alice_client.get(url).content.decode())
    assert fields["spec-placement_study__arrived_load_percent"] == "130"
    fields["spec-placement_study__arrived_load_percent"] = "150"
    fields["spec-placement_study__paper_workload"] = "default"
    assert fields["spec-placement_study__random_stream"] == "go"  # the default, shown
    fields["spec-placement_study__random_stream"] = "numpy"
    response = alice_client.post(url, fields)
    assert response.status_code == 302, response.content.decode()[:3000]
    study_experiment.refresh_from_db()
    assert study_experiment.spec["placementStudy"] == {
        "arrivedLoadPercent": 150.0,
        "paperWorkload": "default",
        "podOrder": None,  # the stored spec writes every default out
        "nodeOrder": None,
        "randomStream": "numpy",
    }


def test_blanking_the_load_makes_a_replay_and_names_the_study_only_policies(
    alice_client, study_experiment
):
    url = reverse("experiments:edit", args=[study_experiment.pk])
    fields = form_fields(alice_client.get(url).content.decode())
    fields["spec-placement_study__arrived_load_percent"] = ""
    response = alice_client.post(url, fields)
    html = response.content.decode()
    assert response.status_code == 200
    assert (
        "unknown placement scoring &#x27;FGD&#x27;" in html or "unknown placement scoring" in html
    )
    study_experiment.refresh_from_db()
    assert study_experiment.spec["placementStudy"]["arrivedLoadPercent"] == 130


def test_a_cancelled_study_keeps_none_of_its_curves(study_experiment):
    from experiments import services

    run = services.run_enqueue(experiment=study_experiment, user=None)
    # on_commit never fired here (the test's transaction): the rows are all queued
    first = run.replications.order_by("pk").first()
    first.study = {"load": [0], "allocation": [0.0]}
    first.save(update_fields=["study"])
    assert services.run_cancel(run=run)
    assert not run.replications.filter(study__isnull=False).exists()
    assert run.status == Status.CANCELLED
