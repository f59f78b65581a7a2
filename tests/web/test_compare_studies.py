"""The compare page over placement studies (#18 §3): variants of study runs are charted
as GPU allocation against arrived load, one line per chosen variant across the runs,
and tabled at the asked load, instead of the replay's time-based charts and metrics."""

from __future__ import annotations

import json
import re

import plotly.graph_objects as go
import pytest
from django.core.cache import cache
from django.urls import reverse

from experiments import services
from experiments.models import Status
from tests.factories import ExperimentFactory, preset_document

S17 = "s17-placement-study"


@pytest.fixture(autouse=True)
def _fresh_cache():
    cache.clear()


def _study_run(owner, capture, *, seed: int, name: str):
    spec = {**preset_document(S17), "replications": 2, "seed": seed}
    experiment = ExperimentFactory(owner=owner, name=name, spec=spec, source_preset=S17)
    with capture(execute=True):
        run = services.run_enqueue(experiment=experiment, user=owner)
    run.refresh_from_db()
    assert run.status == Status.SUCCEEDED, run.error
    return run


@pytest.fixture
def two_studies(alice, django_capture_on_commit_callbacks):
    first = _study_run(alice, django_capture_on_commit_callbacks, seed=42, name="seeds 42")
    second = _study_run(alice, django_capture_on_commit_callbacks, seed=7, name="seeds 7")
    return first, second


def _figures(html: str) -> dict:
    found = re.search(r'id="compare-charts-data"[^>]*>(.*?)</script>', html, re.S)
    return json.loads(found.group(1))["figures"]


def test_study_variants_from_two_runs_are_drawn_against_arrived_load(alice_client, two_studies):
    first, second = two_studies
    refs = [f"{first.pk}:FGD", f"{first.pk}:Random", f"{second.pk}:FGD"]
    response = alice_client.get(reverse("experiments:compare"), {"v": refs})
    html = response.content.decode()
    assert response.status_code == 200
    figures = _figures(html)
    assert set(figures) == {"study-curve", "study-at-load"}
    curve = figures["study-curve"]
    go.Figure(curve)
    go.Figure(figures["study-at-load"])
    means = [t for t in curve["data"] if t.get("legendgroup") and t.get("fill") is None]
    labels = [f"#{first.pk} FGD", f"#{first.pk} Random", f"#{second.pk} FGD"]
    assert [t["name"] for t in means] == labels
    rows = {row["variant"]: row for row in first.aggregate}
    assert means[0]["y"] == rows["FGD"]["study"]["mean"]
    assert means[0]["x"] == rows["FGD"]["study"]["load"]
    other = next(row for row in second.aggregate if row["variant"] == "FGD")
    assert means[2]["y"] == other["study"]["mean"]
    assert means[0]["y"] != means[2]["y"]  # other seeds, another curve
    # No time-based chart, no replay metric table: a study has no timeline.
    assert 'id="chart-costs"' not in html
    assert 'id="compare-table"' not in html
    table = re.search(
        r'<table class="table small" id="compare-study-table">(.*?)</table>', html, re.S
    )
    assert table.group(1).count("<tr data-variant=") == 3
    at = rows["FGD"]["study"]["atLoad"]
    assert f"{at['mean']:.2f}" in table.group(1)


def test_a_replay_beside_studies_keeps_its_own_charts(
    alice_client, alice, two_studies, django_capture_on_commit_callbacks
):
    first, _ = two_studies
    experiment = ExperimentFactory(owner=alice, spec=preset_document("s2-jump-the-queue"))
    with django_capture_on_commit_callbacks(execute=True):
        replay = services.run_enqueue(experiment=experiment, user=alice)
    replay.refresh_from_db()
    variant = replay.aggregate[0]["variant"]
    refs = [f"{first.pk}:FGD", f"{replay.pk}:{variant}"]
    html = alice_client.get(reverse("experiments:compare"), {"v": refs}).content.decode()
    figures = _figures(html)
    assert {"study-curve", "study-at-load", "costs"} <= set(figures)
    means = [
        t for t in figures["study-curve"]["data"] if t.get("legendgroup") and t.get("fill") is None
    ]
    assert [t["name"] for t in means] == [f"#{first.pk} FGD"]
    assert 'id="compare-table"' in html
    assert f"#{first.pk} FGD" not in re.search(
        r'id="compare-table">(.*?)</table>', html, re.S
    ).group(1)
