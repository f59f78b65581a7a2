"""The event log viewers (issue 16 §2): the setup rows are folded so the preemption is
visible at once, one time format (h:mm:ss), and units on the VALUE column from the core's
reason registry."""

from __future__ import annotations

import re
from html import unescape

import pytest
from django.core.cache import cache
from django.urls import reverse

from experiments import services
from experiments.models import Status
from scheduler_core.events import Reason
from tests.factories import ExperimentFactory, preset_document, stored_events


@pytest.fixture(autouse=True)
def _fresh_cache():
    cache.clear()


@pytest.fixture
def s3_run(alice, django_capture_on_commit_callbacks):
    """S3: a batch pod already on the node at t = 0, preempted by an interactive pod."""
    experiment = ExperimentFactory(owner=alice, spec=preset_document("s3-grace-period"))
    with django_capture_on_commit_callbacks(execute=True):
        run = services.run_enqueue(experiment=experiment, user=alice)
    run.refresh_from_db()
    assert run.status == Status.SUCCEEDED
    return run


def _log_url(run, **query) -> str:
    replication = run.replications.order_by("variant_index", "replication").first()
    url = reverse("experiments:replication-events", args=[run.pk, replication.pk])
    return url + ("?" + "&".join(f"{k}={v}" for k, v in query.items()) if query else "")


def _rows(html: str) -> list[list[str]]:
    body = html.split('id="events"', 1)[1].split("<tbody>", 1)[1].split("</tbody>", 1)[0]
    return [
        [
            unescape(re.sub(r"<[^>]+>", "", cell)).strip()
            for cell in re.findall(r"<td[^>]*>(.*?)</td>", row, re.S)
        ]
        for row in body.split("<tr>")[1:]
    ]


def test_the_full_log_folds_the_setup_and_shows_the_preemption_first(alice_client, s3_run):
    replication = s3_run.replications.order_by("variant_index").first()
    setup = sum(e.time <= 0 for e in stored_events(replication))
    assert setup > 0

    html = alice_client.get(_log_url(s3_run)).content.decode()

    rows = _rows(html)
    assert f"{setup} setup event" in unescape(html)
    assert all(row[0] != "0:00:00" for row in rows)
    assert rows[0][1] in {
        Reason.ARRIVED,
        Reason.CREATED,
        Reason.FAILED_SCHEDULING,
        Reason.VICTIMS_SELECTED,
    }  # what the run is about comes first
    shown = _rows(alice_client.get(_log_url(s3_run, setup=1)).content.decode())
    assert len(shown) == len(rows) + setup


def test_a_filter_shows_the_setup_rows_too(alice_client, s3_run):
    rows = _rows(alice_client.get(_log_url(s3_run, reason="Scheduled")).content.decode())
    assert rows[0][0] == "0:00:00"  # the victim was bound before the run


def test_one_time_format_and_units_on_the_value_column(alice_client, s3_run):
    rows = _rows(alice_client.get(_log_url(s3_run, setup=1)).content.decode())
    assert all(re.fullmatch(r"-?\d+:\d\d:\d\d(\.\d)?", row[0]) for row in rows)
    killing = next(row for row in rows if row[1] == Reason.KILLING)
    assert killing[5].endswith(" s")
    scheduled = next(row for row in rows if row[1] == Reason.SCHEDULED)
    assert scheduled[5].endswith(" GPUs")


def test_the_run_pages_event_table_folds_the_setup_until_asked(alice_client, s3_run):
    replication = s3_run.replications.order_by("variant_index").first()
    url = (
        reverse("experiments:run-chart-events", args=[s3_run.pk]) + f"?replication={replication.pk}"
    )
    folded = alice_client.get(url).json()
    everything = alice_client.get(url + "&setup=1").json()
    assert folded["setup_hidden"] > 0
    assert everything["setup_hidden"] == 0
    assert folded["total"] + folded["setup_hidden"] == everything["total"]
    assert all(row["time"] > 0 for row in folded["rows"])
