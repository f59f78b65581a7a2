"""Issue #12 §2-§3 on the pages: paired intervals on the compare page, the unserved flag,
the parameter diff, provenance and the replication selector on the run page, colours
fixed by name, the glossary, and docs/metrics.md covering the registry."""

from __future__ import annotations

import json
import re
from pathlib import Path

import pytest
from django.conf import settings
from django.core.cache import cache
from django.urls import reverse

import scheduler_core as sc
from experiments import services
from experiments.charts.style import VARIANT_COLORS, variant_color, variant_colors
from experiments.display import format_value
from experiments.models import Status
from experiments.specs import product_version, spec_document
from scheduler_core.stats import IntervalMethod, difference
from tests.factories import ExperimentFactory, preset_document
from tests.web.pages import element_text

RECLAIM = {
    "name": "random reclaim",
    "horizonSeconds": 3000,
    "replications": 5,
    "seed": 3,
    "cluster": {"nodePools": [{"name": "spot", "count": 4, "gpus": 8, "spot": True}]},
    "priorityClasses": [{"name": "batch", "value": 100, "globalDefault": True}],
    "workloads": [
        {
            "name": f"train-{i}",
            "kind": "batch",
            "gpus": 8,
            "durationSeconds": 36000,
            "checkpoint": {"intervalSeconds": interval, "writeSeconds": 0},
            "terminationGracePeriodSeconds": 30,
        }
        for i, interval in enumerate((200, 500, 900, 1400))
    ],
    "events": [
        {
            "at": 1300,
            "type": "spot-reclaim",
            "pool": "spot",
            "count": 1,
            "noticeSeconds": 30,
            "recoverAfterSeconds": 300,
        }
    ],
    "variants": [
        {"name": "no-notice-checkpoint"},
        {
            "name": "checkpoint-on-notice",
            "set": {
                "workloads.train-0.checkpoint.onSigterm": True,
                "workloads.train-1.checkpoint.onSigterm": True,
            },
        },
    ],
}
"""A reclaim of one random spot node: the lost work differs from seed to seed, so the
replications spread and pairing them matters."""


@pytest.fixture(autouse=True)
def _fresh_cache():
    cache.clear()


def _finished(owner, capture, document, **fields):
    experiment = ExperimentFactory(owner=owner, spec=document, **fields)
    with capture(execute=True):
        run = services.run_enqueue(experiment=experiment, user=owner)
    run.refresh_from_db()
    assert run.status == Status.SUCCEEDED
    return run


@pytest.fixture
def reclaim_run(alice, django_capture_on_commit_callbacks):
    return _finished(
        alice,
        django_capture_on_commit_callbacks,
        spec_document(sc.parse_spec(RECLAIM)),
        name="reclaim",
    )


@pytest.fixture
def s8_run(alice, django_capture_on_commit_callbacks):
    return _finished(
        alice, django_capture_on_commit_callbacks, preset_document("s8-gang-at-scale"), name="S8"
    )


def _compare(client, *refs: str, **options: str) -> str:
    response = client.get(reverse("experiments:compare"), {"v": list(refs), **options})
    assert response.status_code == 200
    return response.content.decode()


def _delta_cells(html: str, metric: str) -> list[tuple[str, str]]:
    """(data-interval, text) of each delta but the baseline's in a metric's row."""
    row = re.search(rf'<tr data-metric="{metric}">(.*?)</tr>', html, re.S).group(1)
    found = [
        (kind, re.sub(r"<[^>]+>", "", text))
        for kind, text in re.findall(
            r'<span class="delta[^"]*" data-interval="([a-z]*)"[^>]*>(.*?)</span>'
            r"</td>",
            row,
            re.S,
        )
    ]
    return [(kind, text) for kind, text in found if text != "baseline"]


def _seeded(run, variant: str, metric: str) -> dict[int, float | None]:
    return {
        seed: summary.get(metric)
        for seed, summary in run.replications.filter(variant=variant).values_list("seed", "summary")
    }


# ------------------------------------------------------------- paired intervals
def test_compare_page_shows_paired_deltas_for_variants_of_one_run(alice_client, reclaim_run):
    html = _compare(
        alice_client,
        f"{reclaim_run.pk}:no-notice-checkpoint",
        f"{reclaim_run.pk}:checkpoint-on-notice",
    )

    expected = difference(
        _seeded(reclaim_run, "no-notice-checkpoint", "lost_work"),
        _seeded(reclaim_run, "checkpoint-on-notice", "lost_work"),
    )
    assert expected.method is IntervalMethod.PAIRED
    assert expected.n == 5
    ((kind, text),) = _delta_cells(html, "lost_work")
    assert kind == "paired"
    assert text.startswith(
        f"-{format_value(-expected.mean, 'GPU·s')} ± {format_value(expected.half_width, 'GPU·s')} ("
    )
    assert text.endswith("paired")
    note = element_text(html, "id", "compare-interval-kind")[0]
    assert note.startswith("Intervals shown: paired (the two ran the same seeds")
    # Paired is far narrower than pretending the replications were independent.
    welch = difference(
        {("a", k): v for k, v in _seeded(reclaim_run, "no-notice-checkpoint", "lost_work").items()},
        _seeded(reclaim_run, "checkpoint-on-notice", "lost_work"),
    )
    assert welch.half_width > 3 * expected.half_width


def test_compare_page_uses_welch_across_runs_with_different_seeds(
    alice, alice_client, reclaim_run, django_capture_on_commit_callbacks
):
    other = _finished(
        alice,
        django_capture_on_commit_callbacks,
        spec_document(sc.parse_spec({**RECLAIM, "seed": 11})),
        name="seed 11",
    )
    html = _compare(
        alice_client, f"{reclaim_run.pk}:no-notice-checkpoint", f"{other.pk}:no-notice-checkpoint"
    )

    ((kind, text),) = _delta_cells(html, "lost_work")
    assert kind == "welch"
    assert text.endswith("welch")
    assert "Welch" in element_text(html, "id", "compare-interval-kind")[0]


def test_compare_api_pairs_variants_of_one_run(alice, reclaim_run):
    from rest_framework.test import APIClient

    api = APIClient()
    api.force_authenticate(alice)
    data = api.get(
        f"/api/v1/compare/?pair={reclaim_run.pk}:no-notice-checkpoint"
        f"&pair={reclaim_run.pk}:checkpoint-on-notice"
    ).json()
    lost = next(row for row in data["metrics"] if row["metric"] == "lost_work")
    expected = difference(
        _seeded(reclaim_run, "no-notice-checkpoint", "lost_work"),
        _seeded(reclaim_run, "checkpoint-on-notice", "lost_work"),
    )
    assert lost["values"][1]["interval"] == "paired"
    assert lost["values"][1]["pairs"] == 5
    assert lost["values"][1]["difference_ci95"] == pytest.approx(expected.half_width)
    assert lost["values"][1]["difference"] == pytest.approx(expected.mean)


# ----------------------------------------------------------------- parameter diff
def test_compare_page_lists_the_parameters_that_differ(alice_client, reclaim_run):
    html = _compare(
        alice_client,
        f"{reclaim_run.pk}:no-notice-checkpoint",
        f"{reclaim_run.pk}:checkpoint-on-notice",
    )

    rows = re.findall(r'<tr data-path="([^"]+)">', html)
    assert rows == [
        "workloads.train-0.checkpoint.onSigterm",
        "workloads.train-1.checkpoint.onSigterm",
    ]
    assert element_text(html, "data-path", rows[0]) == [
        "workloads.train-0.checkpoint.onSigterm false true"
    ]


def test_two_runs_that_differ_only_in_a_parameter_show_it(
    alice, alice_client, django_capture_on_commit_callbacks
):
    """The issue's case: two runs of one experiment with different checkpoint intervals."""
    base = preset_document("s3-grace-period")
    changed = json.loads(json.dumps(base))
    changed["workloads"][0]["checkpoint"]["intervalSeconds"] = 123
    a = _finished(alice, django_capture_on_commit_callbacks, base, name="a")
    b = _finished(alice, django_capture_on_commit_callbacks, changed, name="b")
    html = _compare(alice_client, f"{a.pk}:grace-30s", f"{b.pk}:grace-30s")

    path = f"workloads.{base['workloads'][0]['name']}.checkpoint.intervalSeconds"
    assert re.findall(r'<tr data-path="([^"]+)">', html) == [path]
    assert 'class="changed">123</td>' in html


# ----------------------------------------------------------- the unserved variant
def test_s8_none_is_flagged_never_best_and_reads_never(alice_client, s8_run):
    html = _compare(alice_client, *(f"{s8_run.pk}:{v}" for v in ("none", "pod", "workload-aware")))

    assert element_text(html, "id", "compare-unserved")[0].startswith(
        f"⚠ #{s8_run.pk} none: an urgent workload never became useful"
    )
    useful = element_text(html, "data-metric", "time_to_group_useful")[0]
    assert useful.startswith("Time to group useful (s) never (> horizon) baseline 203 ")
    for metric in ("lost_work", "queue_wait", "pods_terminated", "time_to_group_useful"):
        row = re.search(rf'<tr data-metric="{metric}">(.*?)</tr>', html, re.S).group(1)
        cells = re.findall(r"<td class=\"num([^\"]*)\"", row)
        assert "best" not in cells[0], metric  # `none` is the first column
    lost = element_text(html, "data-metric", "lost_work")[0]
    assert lost.split()[3:5] == ["0", "baseline"]
    assert "6,000 ★" in lost


def test_s8_run_page_flags_none_and_reads_never(alice_client, s8_run):
    html = alice_client.get(reverse("experiments:run", args=[s8_run.pk])).content.decode()

    assert element_text(html, "id", "run-unserved")[0].startswith("⚠ none: an urgent")
    useful = element_text(html, "data-metric", "time_to_group_useful")[-1]
    assert useful == "Time to group useful (s) never (> horizon) 203 125"
    data = json.loads(
        re.search(
            r'<script id="run-charts-data" type="application/json">'
            r"(.*?)</script>",
            html,
            re.S,
        ).group(1)
    )
    figure = data["figures"]["headline-lost_work"]
    assert [a["text"] for a in figure["layout"]["annotations"]].count("★ best") == 1
    best = next(a for a in figure["layout"]["annotations"] if a["text"] == "★ best")
    assert best["x"] == "workload-aware"
    assert any(
        a["text"].startswith("⚠") and a["x"] == "none" for a in figure["layout"]["annotations"]
    )


# ------------------------------------------------------------------- provenance
def test_run_page_shows_and_downloads_the_frozen_spec_and_version(alice_client, reclaim_run):
    reclaim_run.experiment.spec = {**reclaim_run.experiment.spec, "horizonSeconds": 9}
    reclaim_run.experiment.save()
    html = alice_client.get(reverse("experiments:run", args=[reclaim_run.pk])).content.decode()

    assert element_text(html, "id", "run-product-version") == [reclaim_run.product_version]
    assert reclaim_run.product_version == product_version()
    shown = element_text(html, "id", "run-spec-yaml")[0]
    assert "horizonSeconds: 3000" in shown  # the run's, not the edited experiment's
    link = re.search(r'<a href="([^"]+)" id="run-spec-download"', html).group(1)
    download = alice_client.get(link)
    assert download.status_code == 200
    assert sc.parse_spec(sc.load_document(download.content.decode())).horizon_seconds == 3000


def test_a_frozen_spec_too_long_to_show_is_left_off_the_page_but_downloads_whole(
    alice_client, reclaim_run, monkeypatch
):
    """Past SPEC_SHOWN_CHARS the page leaves the YAML out (it stops writing it there:
    a recorded cluster's spec is megabytes) and the download still gives all of it."""
    from django.core.cache import cache

    from experiments import selectors_run_page

    full = sc.spec_to_yaml(sc.parse_spec(reclaim_run.spec))
    monkeypatch.setattr(selectors_run_page, "SPEC_SHOWN_CHARS", len(full) - 1)
    cache.clear()  # the run's page was precomputed when it finished
    html = alice_client.get(reverse("experiments:run", args=[reclaim_run.pk])).content.decode()

    assert element_text(html, "id", "run-spec-yaml") == []
    link = re.search(r'<a href="([^"]+)" id="run-spec-download"', html).group(1)
    assert alice_client.get(link).content.decode() == full


def test_product_version_names_the_source_commit(monkeypatch):
    from experiments import specs

    specs.source_commit.cache_clear()
    monkeypatch.setenv("LAB_GIT_COMMIT", "abc123def456")
    try:
        assert product_version().endswith(" / git abc123def456")
    finally:
        specs.source_commit.cache_clear()


# ------------------------------------------------------------ replication selector
def _charts_data(html: str) -> dict:
    return json.loads(
        re.search(
            r'<script id="run-charts-data" type="application/json">'
            r"(.*?)</script>",
            html,
            re.S,
        ).group(1)
    )


def test_the_timeline_opens_on_the_replication_in_the_url(alice_client, reclaim_run):
    third = reclaim_run.replications.get(variant="checkpoint-on-notice", replication=2)
    url = reverse("experiments:run", args=[reclaim_run.pk])
    html = alice_client.get(url, {"replication": third.pk}).content.decode()

    data = _charts_data(html)
    assert data["timeline"]["replication"] == third.pk
    assert data["workloads"]["replication"] == third.pk
    assert data["events"]["replication"] == third.pk
    assert f'<option value="{third.pk}" selected>checkpoint-on-notice · replication 2' in html
    assert (
        len(
            re.findall(
                r"<option value=\"\d+\"",
                html.split('id="timeline-variant"')[1].split("</select>")[0],
            )
        )
        == 10
    )  # 2 variants x 5 replications
    # A default view, and an id from nowhere, open on the first replication.
    first = reclaim_run.replications.get(variant_index=0, replication=0)
    for query in ({}, {"replication": "999999"}, {"replication": "x"}):
        assert (
            _charts_data(alice_client.get(url, query).content.decode())["timeline"]["replication"]
            == first.pk
        )


# ------------------------------------------------------------------------ colours
def test_a_variants_colour_is_fixed_by_its_name_on_every_page(alice_client, s8_run, reclaim_run):
    s8 = _charts_data(
        alice_client.get(reverse("experiments:run", args=[s8_run.pk])).content.decode()
    )
    bars = s8["figures"]["headline-lost_work"]["data"][0]
    assert bars["marker"]["color"] == [variant_color(v) for v in ("none", "pod", "workload-aware")]
    html = _compare(alice_client, f"{reclaim_run.pk}:checkpoint-on-notice", f"{s8_run.pk}:pod")
    compare = json.loads(
        re.search(
            r'<script id="compare-charts-data" type="application/json">'
            r"(.*?)</script>",
            html,
            re.S,
        ).group(1)
    )
    colors = compare["figures"]["headline-lost_work"]["data"][0]["marker"]["color"]
    assert colors[1] == variant_color("pod") == bars["marker"]["color"][1]
    assert f'data-color="{variant_color("pod")}"' in html


def test_colliding_names_in_one_figure_get_distinct_colours():
    assert variant_colors(["pod", "pod"])[0] == variant_color("pod")
    assert len(set(variant_colors(["pod", "pod", "none", "default"]))) == 4
    assert len(set(variant_colors([f"v{i}" for i in range(len(VARIANT_COLORS))]))) == len(
        VARIANT_COLORS
    )


# ------------------------------------------------------------- glossary and docs
def test_the_glossary_page_lists_every_metric_of_the_registry(alice_client):
    html = alice_client.get(reverse("experiments:metrics")).content.decode()
    assert re.findall(r'<tr id="metric-([a-z_]+)"', html) == list(sc.SUMMARY_NAMES)
    assert element_text(html, "id", "metric-time_to_group_useful")[0].endswith("never (> horizon)")
    assert "paired" in element_text(html, "id", "metrics-intervals")[0]


def test_the_metrics_api_serves_the_registry(alice):
    from rest_framework.test import APIClient

    api = APIClient()
    api.force_authenticate(alice)
    data = api.get("/api/v1/metrics/").json()
    assert data == json.loads(json.dumps(sc.registry_document(), ensure_ascii=False))


def test_docs_metrics_md_describes_every_metric_as_the_registry_does():
    text = (Path(settings.BASE_DIR) / "docs" / "metrics.md").read_text(encoding="utf-8")
    for name, info in sc.REGISTRY.items():
        row = next((line for line in text.splitlines() if line.startswith(f"| `{name}` |")), None)
        assert row is not None, name
        cells = [c.strip() for c in row.strip("|").split("|")]
        assert cells[2:] == [info.unit, info.better.value, info.workloads, info.null], name
    for method in IntervalMethod:
        assert f"**{method.value}**" in text


def test_an_experiment_spec_too_long_to_show_links_to_its_download(
    alice, alice_client, monkeypatch
):
    """The experiment's page shows its spec up to the run page's budget; past it (a
    recorded cluster's spec is megabytes: an 891 KB page) it links to the download."""
    from experiments.views import experiments as experiment_views

    experiment = ExperimentFactory(owner=alice)
    full = sc.spec_to_yaml(sc.parse_spec(experiment.spec))
    url = reverse("experiments:detail", args=[experiment.pk])

    html = alice_client.get(url).content.decode()
    assert element_text(html, "id", "spec-yaml")[0].split() == full.split()

    monkeypatch.setattr(experiment_views, "SPEC_SHOWN_CHARS", len(full) - 1)
    html = alice_client.get(url).content.decode()
    assert element_text(html, "id", "spec-yaml") == []
    link = re.search(r'<p class="muted small" id="spec-large">[^<]*<a href="([^"]+)"', html)
    assert link is not None
    assert alice_client.get(link.group(1)).content.decode() == full
