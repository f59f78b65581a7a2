"""The compare page: variants from any runs side by side, by URL; what a persona may see
of a URL someone shared."""

from __future__ import annotations

import json
import re

import pytest
from django.core.cache import cache
from django.urls import reverse

import scheduler_core as sc
from experiments import services
from experiments.models import Status
from experiments.selectors_charts import VariantRef
from tests.factories import ExperimentFactory, RunFactory, preset_document
from tests.web.pages import element_text


@pytest.fixture(autouse=True)
def _fresh_cache():
    cache.clear()


def _finished(experiment, user, capture):
    with capture(execute=True):
        run = services.run_enqueue(experiment=experiment, user=user)
    run.refresh_from_db()
    assert run.status == Status.SUCCEEDED
    return run


@pytest.fixture
def s1_run(alice, bob, django_capture_on_commit_callbacks):
    experiment = ExperimentFactory(
        owner=alice,
        shared_with=[bob],
        name="Alice's S1",
        spec=preset_document("s1-training-vs-shards"),
    )
    return _finished(experiment, alice, django_capture_on_commit_callbacks)


@pytest.fixture
def s3_run(alice, django_capture_on_commit_callbacks):
    experiment = ExperimentFactory(owner=alice, name="Alice's private S3")
    return _finished(experiment, alice, django_capture_on_commit_callbacks)


def _compare(client, *refs: str, **options: str):
    return client.get(reverse("experiments:compare"), {"v": list(refs), **options})


def _headers(html: str) -> list[str]:
    return re.findall(
        r'<th class="num"[^>]*>(?:<span class="swatch"[^>]*></span>)?'
        r'<a href="[^"]+">([^<]+)</a>',
        html,
    )


def _row(html: str, metric: str) -> str:
    return element_text(html, "data-metric", metric)[0]


def test_variants_from_two_runs_side_by_side_with_the_best_marked(alice_client, s1_run, s3_run):
    response = _compare(
        alice_client,
        f"{s1_run.pk}:pod",
        f"{s1_run.pk}:workload-aware-all",
        f"{s3_run.pk}:grace-30s",
    )

    html = response.content.decode()
    assert response.status_code == 200
    assert _headers(html) == [
        f"#{s1_run.pk} pod",
        f"#{s1_run.pk} workload-aware-all",
        f"#{s3_run.pk} grace-30s",
    ]
    assert _row(html, "lost_work") == (
        "Lost work (GPU·s) 12,240 baseline 96 ★ -12,144 (-99.2%) 800 -11,440 (-93.5%)"
    )
    assert 'class="num best"' in html
    assert len(re.findall(r"<tr data-metric=", html)) == len(sc.SUMMARY_NAMES)
    data = json.loads(
        re.search(
            r'<script id="compare-charts-data" type="application/json">'
            r"(.*?)</script>",
            html,
            re.S,
        ).group(1)
    )
    assert set(data["figures"]) >= {
        "tradeoff",
        "milestones",
        "costs",
        "recovery",
        "headline-lost_work",
    }
    assert list(data["figures"]["headline-lost_work"]["data"][0]["x"]) == [
        f"#{s1_run.pk} pod",
        f"#{s1_run.pk} workload-aware-all",
        f"#{s3_run.pk} grace-30s",
    ]


def test_pods_terminated_shows_fewest_is_not_least_lost(alice_client, s1_run):
    html = _compare(
        alice_client, f"{s1_run.pk}:pod", f"{s1_run.pk}:workload-aware-all"
    ).content.decode()

    assert _row(html, "pods_terminated") == "Pods terminated 4 ★ baseline 8 +4 (+100.0%)"
    assert _row(html, "lost_work") == "Lost work (GPU·s) 12,240 baseline 96 ★ -12,144 (-99.2%)"


def test_a_chosen_baseline_and_differences_only(alice_client, s1_run):
    html = _compare(
        alice_client,
        f"{s1_run.pk}:pod",
        f"{s1_run.pk}:workload-aware-all",
        baseline=f"{s1_run.pk}:workload-aware-all",
        diff="1",
    ).content.decode()

    assert _row(html, "lost_work") == "Lost work (GPU·s) 12,240 +12,144 (+12650.0%) 96 ★ baseline"
    assert element_text(html, "data-metric", "time_to_victims_released") == []
    shown = re.findall(r'<tr data-metric="([^"]+)"', html)
    assert {"lost_work", "goodput"} <= set(shown)
    assert len(shown) < len(sc.SUMMARY_NAMES)
    assert 'id="compare-diff" data-autosubmit checked' in html


def test_transposed_the_variants_are_rows(alice_client, s1_run):
    html = _compare(
        alice_client, f"{s1_run.pk}:pod", f"{s1_run.pk}:checkpoint-aware", t="1"
    ).content.decode()

    table = element_text(html, "id", "compare-table")[0]
    assert table.startswith("Variant Time to victims selected (s)")
    assert f"#{s1_run.pk} checkpoint-aware 0 ±0 5 ±0" in table


def test_a_stranger_given_the_url_sees_nothing_of_it(charlie_client, s1_run, s3_run):
    response = _compare(charlie_client, f"{s1_run.pk}:pod", f"{s3_run.pk}:grace-30s")

    html = response.content.decode()
    assert response.status_code == 200
    assert element_text(html, "id", "compare-left-out") == [
        "2 selected variants could not be shown: they do not exist, did not finish, or are "
        "not shared with you."
    ]
    for secret in ("Alice", "grace-30s", "workload-aware", "compare-table", f"#{s1_run.pk}"):
        assert secret not in html


def test_a_shared_run_shows_and_a_private_one_is_left_out(bob_client, s1_run, s3_run):
    html = _compare(bob_client, f"{s1_run.pk}:pod", f"{s3_run.pk}:grace-30s").content.decode()

    assert _headers(html) == [f"#{s1_run.pk} pod"]
    assert "1 selected variant could not be shown" in html
    assert "private S3" not in html
    assert "grace-30s" not in html


def test_unknown_variants_unfinished_runs_and_garbage_are_left_out(
    alice_client, s1_run, experiment
):
    running = RunFactory(experiment=experiment, status=Status.RUNNING)

    html = _compare(
        alice_client,
        f"{s1_run.pk}:pod",
        f"{s1_run.pk}:no-such-variant",
        f"{running.pk}:grace-300s",
        "999999:pod",
        "junk",
        "12:",
        f"{s1_run.pk}:pod",
    ).content.decode()

    assert _headers(html) == [f"#{s1_run.pk} pod"]
    assert "3 selected variants could not be shown" in html


def test_the_picker_offers_the_visible_finished_runs(charlie_client, alice_client, s1_run):
    mine = _compare(alice_client).content.decode()
    theirs = _compare(charlie_client).content.decode()

    assert f'value="{s1_run.pk}:checkpoint-aware"' in mine
    assert "compare-table" not in mine
    assert f'value="{s1_run.pk}:' not in theirs
    assert element_text(theirs, "id", "compare-picker") == ["No finished runs yet."]


@pytest.mark.parametrize(
    ("text", "ref"),
    [
        ("12:pod", VariantRef(12, "pod")),
        ("12:a:b", VariantRef(12, "a:b")),
        ("x:pod", None),
        ("12", None),
        ("12:", None),
        ("-1:pod", None),
    ],
)
def test_variant_references(text, ref):
    assert VariantRef.parse(text) == ref


def test_the_empty_compare_page_loads_no_plotly(alice_client, s1_run):
    """Issue 16 §5: nothing chosen, nothing to draw, so no 4.8 MB library either."""
    empty = alice_client.get(reverse("experiments:compare")).content.decode()
    assert reverse("experiments:plotly-js") not in empty
    assert "charts.js" not in empty
    chosen = _compare(alice_client, f"{s1_run.pk}:pod").content.decode()
    assert reverse("experiments:plotly-js") in chosen
