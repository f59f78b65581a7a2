"""The checkpoint planner's pages (issue #17 §2): the one-click form, its errors on their
fields, the sweep run through the workers, and the chart with its optimum, bands and
closed forms."""

from __future__ import annotations

import json
import re

import plotly.graph_objects as go
import pytest
from django.urls import reverse

from experiments.models import Experiment, Run, Status
from experiments.services.planner import PLAN_TAG
from tests.factories import ExperimentFactory, preset_document

S14 = "s14-checkpoint-planner"
FORM = {
    "workload": "train",
    "work": "1d",
    "mtbf": "32h",
    "distribution": "exponential",
    "shape": "1",
    "sigma": "1",
    "repair": "4h",
    "min_interval": "5m",
    "max_interval": "3h",
    "points": "4",
    "replications": "3",
}


@pytest.fixture
def planner_experiment(alice, bob):
    spec = preset_document(S14)
    return ExperimentFactory(owner=alice, shared_with=[bob], spec=spec, source_preset=S14)


@pytest.fixture
def planned_run(alice_client, planner_experiment, django_capture_on_commit_callbacks) -> Run:
    with django_capture_on_commit_callbacks(execute=True):
        response = alice_client.post(
            reverse("experiments:plan-new", args=[planner_experiment.pk]), FORM
        )
    assert response.status_code == 302, response.content.decode()[:2000]
    run = Run.objects.exclude(experiment=planner_experiment).get()
    assert response["Location"] == reverse("experiments:run-plan", args=[run.pk])
    run.refresh_from_db()
    assert run.status == Status.SUCCEEDED
    return run


def test_the_form_starts_from_the_experiments_failure_model(alice_client, planner_experiment):
    response = alice_client.get(reverse("experiments:plan-new", args=[planner_experiment.pk]))
    html = response.content.decode()
    assert response.status_code == 200
    assert re.search(r'name="mtbf" value="1d 8h"', html)
    assert re.search(r'name="repair" value="4h"', html)
    assert '<option value="train" selected>' in html


def test_one_click_saves_the_sweep_as_a_new_experiment_and_runs_it(
    planned_run, planner_experiment, alice
):
    plan = planned_run.experiment
    assert plan.owner == alice
    assert PLAN_TAG in plan.tag_names
    assert plan.spec["grid"] == {
        "workloads.train.checkpoint.intervalSeconds": [300, 991, 3271, 10800]
    }
    assert plan.spec["replications"] == 3
    assert plan.spec["workloads"][0]["durationSeconds"] == 86_400
    assert planned_run.replications.count() == 12
    planner_experiment.refresh_from_db()
    assert planner_experiment.spec == preset_document(S14)  # the original is untouched


def test_the_plan_page_draws_the_curve_optimum_and_closed_forms(alice_client, planned_run):
    response = alice_client.get(reverse("experiments:run-plan", args=[planned_run.pk]))
    html = response.content.decode()
    assert response.status_code == 200
    figure = json.loads(re.search(r'id="planner-data"[^>]*>(.*?)</script>', html, re.S)[1])[
        "planner"
    ]
    go.Figure(figure)  # every property is one plotly knows
    names = [t["name"] for t in figure["data"]]
    assert "simulated, 95 % band" in names
    assert "Daly's closed form" in names
    assert any(name.startswith("empirical optimum") for name in names)
    assert len(figure["layout"]["shapes"]) >= 2  # Young and Daly lines
    assert "Young (1974)" in html
    assert "durable only when it completes" in html
    assert 'id="young-interval">30m 59s' in html  # sqrt(2 x 120 s x 4 h) = 1,859 s
    assert html.count('<tr data-interval="') == 4


def test_the_plan_page_estimates_the_wall_clock_for_other_work(alice_client, planned_run):
    url = reverse("experiments:run-plan", args=[planned_run.pk])
    html = alice_client.get(url, {"work": "2d"}).content.decode()
    assert html.count('<tr><td class="num">') == 4
    bad = alice_client.get(url, {"work": "soon"}).content.decode()
    assert 'id="work-error"' in bad
    assert "work:" in bad


def test_bob_may_plan_from_a_shared_experiment_into_his_own(
    bob_client, bob, planner_experiment, django_capture_on_commit_callbacks
):
    with django_capture_on_commit_callbacks(execute=False):
        response = bob_client.post(
            reverse("experiments:plan-new", args=[planner_experiment.pk]), FORM
        )
    assert response.status_code == 302
    assert Experiment.objects.get(tags__name=PLAN_TAG).owner == bob


def test_charlie_sees_neither_the_form_nor_the_plan(charlie_client, planner_experiment):
    url = reverse("experiments:plan-new", args=[planner_experiment.pk])
    assert charlie_client.get(url).status_code == 404
    assert charlie_client.post(url, FORM).status_code == 404


@pytest.mark.parametrize(
    ("field", "value", "message"),
    [
        ("mtbf", "-1h", "must be positive"),
        ("mtbf", "soon", "duration"),
        ("distribution", "gamma", "Select a valid choice"),
        ("max_interval", "1m", "must be above the smallest interval"),
        ("points", "50", "less than or equal to 40"),
        ("replications", "1", "greater than or equal to 2"),
    ],
    ids=[
        "negative-mtbf",
        "unreadable-mtbf",
        "unknown-distribution",
        "empty-range",
        "too-many-points",
        "one-replication",
    ],
)
def test_a_bad_field_is_refused_on_that_field_and_nothing_is_saved(
    alice_client, planner_experiment, field, value, message
):
    response = alice_client.post(
        reverse("experiments:plan-new", args=[planner_experiment.pk]), {**FORM, field: value}
    )
    html = response.content.decode()
    assert response.status_code == 400
    block = re.search(rf'data-field="{field}">(.*?)</div>', html, re.S)
    assert block is not None
    assert "errorlist" in block[1]
    assert message in block[1]
    assert not Experiment.objects.filter(tags__name=PLAN_TAG).exists()
    assert not Run.objects.exists()


def test_a_sweep_beyond_the_horizon_limit_names_the_longest_interval(
    alice_client, planner_experiment, settings
):
    settings.LAB_LIMITS = {**settings.LAB_LIMITS, "LAB_MAX_HORIZON_SECONDS": 5 * 86_400}
    response = alice_client.post(
        reverse("experiments:plan-new", args=[planner_experiment.pk]), {**FORM, "work": "2d"}
    )
    block = re.search(r'data-field="max_interval">(.*?)</div>', response.content.decode(), re.S)
    assert response.status_code == 400
    assert block is not None
    assert "above the limit of 5d" in block[1]
    assert not Run.objects.exists()


def test_the_index_lists_experiments_with_a_job_and_past_plans(alice_client, planned_run):
    html = alice_client.get(reverse("experiments:plan")).content.decode()
    assert reverse("experiments:plan-new", args=[planned_run.experiment.pk]) in html
    assert reverse("experiments:run-plan", args=[planned_run.pk]) in html


def test_the_run_page_links_a_sweep_to_its_plan(alice_client, planned_run, experiment):
    html = alice_client.get(reverse("experiments:run", args=[planned_run.pk])).content.decode()
    assert reverse("experiments:run-plan", args=[planned_run.pk]) in html


def test_a_run_that_sweeps_nothing_has_no_plan_page(alice_client, experiment, alice):
    from experiments import services

    run = services.run_enqueue(experiment=experiment, user=alice)
    assert alice_client.get(reverse("experiments:run-plan", args=[run.pk])).status_code == 404
