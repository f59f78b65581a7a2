"""Where users see decisions (docs/decisions.md): the diagnosis at the top of the run
page, the decision panel's JSON, event rows that carry their decision, a pod's page."""

from __future__ import annotations

import pytest
from django.core.cache import cache
from django.urls import reverse

from experiments import services
from experiments.models import Status
from tests.factories import ExperimentFactory, preset_document


@pytest.fixture(autouse=True)
def _fresh_cache():
    cache.clear()


def _finished(alice, bob, capture, preset: str):
    experiment = ExperimentFactory(owner=alice, shared_with=[bob], spec=preset_document(preset))
    with capture(execute=True):
        run = services.run_enqueue(experiment=experiment, user=alice)
    run.refresh_from_db()
    assert run.status == Status.SUCCEEDED
    return run


@pytest.fixture
def s4_run(alice, bob, django_capture_on_commit_callbacks):
    return _finished(alice, bob, django_capture_on_commit_callbacks, "s4-preemption-not-helpful")


def test_the_diagnosis_sits_above_the_charts(alice_client, s4_run):
    html = alice_client.get(reverse("experiments:run", args=[s4_run.pk])).content.decode()
    assert 'id="diagnosis"' in html
    diagnosis = html.index('id="diagnosis"')
    assert diagnosis < html.index('id="run-charts"')
    assert (
        "interactive: the GPUs it needs are spread one per node (preemption cannot help)." in html
    )
    assert "decisions.js" in html
    assert 'id="decision-panel"' in html


def test_the_decision_json_filters_a_replication(alice_client, charlie_client, s4_run):
    bin_pack = s4_run.replications.get(variant="bin-pack")
    url = reverse("experiments:replication-decisions", args=[s4_run.pk, bin_pack.pk])
    answer = alice_client.get(url, {"pod": "batch-2-0"}).json()
    assert answer["count"] == 1
    decision = answer["decisions"][0]
    assert decision["victims"] == ["batch-2-0", "batch-3-0"]
    assert decision["rule"] == "only candidate"
    assert answer["pod_url"].endswith("/pods/__pod__/")
    assert alice_client.get(url, {"pod": "nobody"}).json()["count"] == 0
    assert alice_client.get(url, {"id": "x"}).status_code == 404
    assert charlie_client.get(url).status_code == 404


def test_event_rows_of_the_run_page_carry_their_decision(alice_client, s4_run):
    bin_pack = s4_run.replications.get(variant="bin-pack")
    rows = alice_client.get(
        reverse("experiments:run-chart-events", args=[s4_run.pk]),
        {"replication": bin_pack.pk, "reason": "Preempted"},
    ).json()["rows"]
    assert rows
    assert all(r["decision"] == 0 for r in rows)


def test_a_pod_page_reads_like_kubectl_describe(alice_client, s4_run):
    bin_pack = s4_run.replications.get(variant="bin-pack")
    html = alice_client.get(
        reverse("experiments:pod", args=[s4_run.pk, bin_pack.pk, "interactive-0"])
    ).content.decode()
    assert "PodScheduled" in html
    assert "Ready" in html
    assert 'id="decision-0"' in html
    assert "only candidate" in html
    victim = alice_client.get(
        reverse("experiments:pod", args=[s4_run.pk, bin_pack.pk, "batch-2-0"])
    ).content.decode()
    assert "DisruptionTarget" in victim
    assert "PreemptionByScheduler" in victim
    assert "Preempted by default/interactive-0 on node gpu-0" in victim
    assert (
        alice_client.get(
            reverse("experiments:pod", args=[s4_run.pk, bin_pack.pk, "nobody"])
        ).status_code
        == 404
    )


def test_a_pending_pod_shows_its_failure_and_nomination(alice_client, s4_run):
    spread = s4_run.replications.get(variant="spread")
    html = alice_client.get(
        reverse("experiments:pod", args=[s4_run.pk, spread.pk, "interactive-0"])
    ).content.decode()
    assert "0/4 nodes are available: 4 Insufficient nvidia.com/gpu." in html
    assert "the GPUs it needs are spread one per node" in html
    assert 'id="pod-status">Pending' in html
