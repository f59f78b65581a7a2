"""The run page: live progress, the Cancel button, the error of a failed run, and the
real numbers of a finished one; the event log beside it."""

from __future__ import annotations

import re

import pytest
from django.urls import reverse

import scheduler_core as sc
from experiments import services
from experiments.models import Run, Status
from scheduler_core.events import Reason
from tests.factories import ReplicationFactory, RunFactory, stored_events
from tests.web.pages import element_text


@pytest.fixture
def finished_run(experiment, alice, django_capture_on_commit_callbacks):
    with django_capture_on_commit_callbacks(execute=True):
        run = services.run_enqueue(experiment=experiment, user=alice)
    run.refresh_from_db()
    assert run.status == Status.SUCCEEDED
    return run


def test_the_run_button_starts_a_run_and_shows_it(
    alice_client, experiment, django_capture_on_commit_callbacks
):
    with django_capture_on_commit_callbacks(execute=True):
        response = alice_client.post(reverse("experiments:run-start", args=[experiment.pk]))

    run = Run.objects.get(experiment=experiment)
    assert response.status_code == 302
    assert response["Location"] == reverse("experiments:run", args=[run.pk])
    assert run.status == Status.SUCCEEDED


def test_a_finished_run_shows_the_summary_per_variant(alice_client, finished_run):
    response = alice_client.get(reverse("experiments:run", args=[finished_run.pk]))

    html = response.content.decode()
    assert response.status_code == 200
    assert element_text(html, "id", "run-status") == ["succeeded"]
    header = element_text(html, "id", "summary-table")[0]
    assert header.startswith("Metric grace-300s grace-30s")
    assert element_text(html, "data-metric", "time_to_victims_released") == [
        "Time to victims released (s) 300 30"
    ]
    assert element_text(html, "data-metric", "pods_terminated") == ["Pods terminated 1 1"]
    rows = element_text(html, "data-metric", "lost_work")
    spec = sc.parse_spec(finished_run.spec)
    lost = [sc.simulate(spec, v, 0).summary["lost_work"] for v in sc.variant_names(spec)]
    assert rows == [f"Lost work (GPU·s) {lost[0]:,.0f} {lost[1]:,.0f}"]
    assert len(element_text(html, "data-metric", "goodput")) == 1
    assert "cancel-button" not in html


def test_an_active_run_shows_progress_and_a_cancel_button(alice_client, bob_client, experiment):
    run = RunFactory(experiment=experiment, status=Status.RUNNING)
    ReplicationFactory(run=run, status=Status.RUNNING, progress=0.5)
    ReplicationFactory(run=run, variant_index=1, variant="grace-30s")
    url = reverse("experiments:run", args=[run.pk])

    html = alice_client.get(url).content.decode()

    assert element_text(html, "id", "cancel-button") == ["Cancel"]
    assert "cancel-button" not in bob_client.get(url).content.decode()
    assert element_text(html, "data-variant", "0") == ["grace-300s 0/1 · running"]
    assert element_text(html, "data-variant", "1") == ["grace-30s 0/1 · queued"]
    assert 'src="/static/js/run.js"' in html
    assert "summary-table" not in html


def test_the_status_endpoint_reports_progress_per_variant(alice_client, experiment):
    run = RunFactory(experiment=experiment, status=Status.RUNNING)
    ReplicationFactory(run=run, status=Status.SUCCEEDED, progress=1.0)
    ReplicationFactory(run=run, replication=1, status=Status.RUNNING, progress=0.5)
    ReplicationFactory(run=run, variant_index=1, variant="grace-30s")

    response = alice_client.get(reverse("experiments:run-status", args=[run.pk]))

    assert response.status_code == 200
    assert response.json() == {
        "id": run.pk,
        "status": "running",
        "is_terminal": False,
        "progress": 0.5,
        "error": "",
        "variants": [
            {
                "name": "grace-300s",
                "status": "running",
                "progress": 0.75,
                "succeeded": 1,
                "total": 2,
            },
            {"name": "grace-30s", "status": "queued", "progress": 0.0, "succeeded": 0, "total": 1},
        ],
    }


def test_a_variant_between_replications_is_running_not_queued(alice_client, experiment):
    """Issue 16 §4: its first replication done, the next not yet claimed by a worker."""
    run = RunFactory(experiment=experiment, status=Status.RUNNING)
    ReplicationFactory(run=run, status=Status.SUCCEEDED, progress=1.0)
    ReplicationFactory(run=run, replication=1)
    ReplicationFactory(run=run, variant_index=1, variant="grace-30s", status=Status.SUCCEEDED)
    ReplicationFactory(
        run=run, variant_index=1, variant="grace-30s", replication=1, status=Status.SUCCEEDED
    )

    variants = alice_client.get(reverse("experiments:run-status", args=[run.pk])).json()

    assert [v["status"] for v in variants["variants"]] == ["running", "succeeded"]


def test_cancel_from_the_run_page(alice_client, experiment):
    run = RunFactory(experiment=experiment, status=Status.RUNNING)
    ReplicationFactory(run=run, status=Status.RUNNING)

    response = alice_client.post(reverse("experiments:run-cancel", args=[run.pk]), follow=True)

    run.refresh_from_db()
    assert run.status == Status.CANCELLED
    html = response.content.decode()
    assert element_text(html, "id", "run-status") == ["cancelled"]
    assert element_text(html, "id", "run-cancelled") == [
        "The run was cancelled; nothing it computed was kept."
    ]
    assert "cancel-button" not in html


def test_a_failed_run_shows_its_error(alice_client, experiment):
    run = RunFactory(experiment=experiment)
    ReplicationFactory(run=run)
    services.run_fail(
        run_id=run.pk, reason="variant 'grace-300s' replication 0 failed: RuntimeError: boom"
    )

    html = alice_client.get(reverse("experiments:run", args=[run.pk])).content.decode()

    assert element_text(html, "id", "run-error") == [
        "The run failed. variant 'grace-300s' replication 0 failed: RuntimeError: boom"
    ]


def test_running_a_spec_above_todays_limits_is_refused(alice_client, experiment, settings):
    settings.LAB_LIMITS = {**settings.LAB_LIMITS, "LAB_MAX_TASKS": 1}

    response = alice_client.post(
        reverse("experiments:run-start", args=[experiment.pk]), follow=True
    )

    assert response.status_code == 200
    assert experiment.runs.count() == 0
    assert (
        "Cannot run: replications: 2 simulations (variants x replications) is above the "
        "limit of 1 (LAB_MAX_TASKS)"
    ) in [str(m) for m in response.context["messages"]]


def test_the_run_button_shares_the_apis_start_allowance(
    alice_client, experiment, settings, django_capture_on_commit_callbacks
):
    settings.REST_FRAMEWORK = {
        **settings.REST_FRAMEWORK,
        "DEFAULT_THROTTLE_RATES": {
            **settings.REST_FRAMEWORK["DEFAULT_THROTTLE_RATES"],
            "run_start": "1/hour",
        },
    }
    url = reverse("experiments:run-start", args=[experiment.pk])
    with django_capture_on_commit_callbacks(execute=False):
        alice_client.post(url)
        response = alice_client.post(url, follow=True)

    assert experiment.runs.count() == 1
    [message] = [str(m) for m in response.context["messages"]]
    assert message.startswith(
        "Cannot run: you started too many runs recently (LAB_API_RUN_START_RATE); try again in 3"
    )


def test_the_event_log_is_paginated_and_filtered(alice_client, finished_run, monkeypatch):
    monkeypatch.setattr("experiments.views.runs.EVENTS_PER_PAGE", 5)
    replication = finished_run.replications.first()
    url = reverse("experiments:replication-events", args=[finished_run.pk, replication.pk])

    everything = alice_client.get(url, {"setup": "1"}).content.decode()
    scheduled = alice_client.get(url, {"reason": "Scheduled"}).content.decode()

    log = stored_events(replication)
    total = len(log)
    pages = -(-total // 5)
    assert f"{total} events, page 1 of {pages}." in everything
    first_page = [e.reason for e in log[:5]]
    assert [row.split(" ")[1] for row in _rows(everything)] == first_page
    expected = [e.pod for e in log if e.reason == Reason.SCHEDULED]
    assert expected
    assert [row.split(" ")[1] for row in _rows(scheduled)] == ["Scheduled"] * len(expected)
    assert "?setup=1&amp;page=2" in everything  # the pager keeps the setup rows shown
    last = alice_client.get(url, {"page": pages, "setup": "1"}).content.decode()
    assert len(_rows(last)) == total - 5 * (pages - 1)


def _rows(html: str) -> list[str]:
    body = html.split('<table class="table small" id="events">', 1)[1].split("</tbody>", 1)[0]
    return [" ".join(re.sub(r"<[^>]+>", " ", row).split()) for row in body.split("<tr>")[2:]]


def test_the_experiment_page_lists_its_runs(alice_client, finished_run):
    html = alice_client.get(
        reverse("experiments:detail", args=[finished_run.experiment_id])
    ).content.decode()

    assert element_text(html, "id", "runs")[0].startswith(
        f"Run Status Started by Created Finished Version #{finished_run.pk} succeeded alice"
    )


def test_the_run_page_offers_every_download_and_each_one_works(alice_client, finished_run):
    """Issue 16 §4: the spec it ran, and the summary, workloads and events as CSV, JSON
    and Parquet, each a link that answers with that file for the signed-in user."""
    html = alice_client.get(reverse("experiments:run", args=[finished_run.pk])).content.decode()
    card = html.split('id="downloads"', 1)[1].split("</section>", 1)[0]
    links = re.findall(r'href="([^"]+)" download', card)
    spec = reverse("api:run-spec", args=[finished_run.pk])
    exports = [
        reverse("api:run-export", args=[finished_run.pk, table, fmt])
        for table in ("summary", "workloads", "events", "decisions")
        for fmt in ("csv", "json", "parquet")
    ]
    assert set(links) == {spec, *exports}
    for url in links:
        response = alice_client.get(url)
        assert response.status_code == 200, url
        body = b"".join(response.streaming_content) if response.streaming else response.content
        assert body, url


def test_an_unfinished_run_offers_only_its_spec(alice_client, experiment):
    run = RunFactory(experiment=experiment, status=Status.RUNNING)
    html = alice_client.get(reverse("experiments:run", args=[run.pk])).content.decode()
    card = html.split('id="downloads"', 1)[1].split("</section>", 1)[0]
    assert re.findall(r'href="([^"]+)" download', card) == [reverse("api:run-spec", args=[run.pk])]
