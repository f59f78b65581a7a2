"""Decision records over the API (docs/decisions.md): stored with each replication,
filterable by pod, node and reason, reachable from the events they explain, exported."""

from __future__ import annotations

import csv
import io
import json

import pyarrow.parquet as pq
import pytest

from experiments.models import Replication
from experiments.selectors_api import DECISION_COLUMNS
from tests.factories import stored_events


def url(run, tail: str) -> str:
    return f"/api/v1/runs/{run.pk}/{tail}"


def body(response) -> bytes:
    return b"".join(response.streaming_content)


def test_decisions_are_stored_with_the_replication(finished_run):
    replication = finished_run.replications.order_by("variant_index").first()
    assert replication.decisions
    kinds = {d["kind"] for d in replication.decisions}
    assert "Preemption" in kinds
    assert [d["id"] for d in replication.decisions] == list(range(len(replication.decisions)))


def test_the_decisions_endpoint_lists_them_with_their_variant(alice_api, finished_run):
    response = alice_api.get(url(finished_run, "decisions/"))
    assert response.status_code == 200
    results = response.json()["results"]
    preemption = next(d for d in results if d["kind"] == "Preemption")
    assert preemption["variant"]
    assert preemption["victims"] == ["batch-job-0"]
    assert preemption["rule"] == "only candidate"
    assert preemption["candidates"][0]["victims"] == ["batch-job-0"]


@pytest.mark.parametrize(
    ("query", "check"),
    [
        ("pod=batch-job-0", lambda d: "batch-job-0" in d["victims"] or d["pod"] == "batch-job-0"),
        ("reason=Preemption", lambda d: d["kind"] == "Preemption"),
        (
            "node=node-a",
            lambda d: d["node"] == "node-a" or "node-a" in [c["node"] for c in d["candidates"]],
        ),
    ],
)
def test_decisions_filter_by_pod_node_and_reason(alice_api, finished_run, query, check):
    everything = alice_api.get(url(finished_run, "decisions/")).json()["count"]
    response = alice_api.get(url(finished_run, f"decisions/?{query}"))
    results = response.json()["results"]
    assert response.status_code == 200
    assert results
    assert all(check(d) for d in results)
    assert len(results) <= everything
    nothing = alice_api.get(url(finished_run, f"decisions/?{query}-nope")).json()
    assert nothing["count"] == 0


def test_each_victim_event_links_to_its_decision(alice_api, finished_run):
    preempted = alice_api.get(url(finished_run, "events/?reason=Preempted")).json()["results"]
    assert preempted
    for event in preempted:
        assert event["decision"] is not None
        found = alice_api.get(
            url(
                finished_run,
                f"decisions/?variant={event['variant']}&replication="
                f"{event['replication']}&id={event['decision']}",
            )
        ).json()["results"]
        assert len(found) == 1
        assert event["pod"] in found[0]["victims"]
    ready = [
        e
        for replication in Replication.objects.all()
        for e in stored_events(replication)
        if e.reason == "Ready"
    ]
    assert ready
    assert all(e.decision is None for e in ready)


def test_a_failed_scheduling_event_links_to_kube_scheduler_wording(alice_api, finished_run):
    failed = alice_api.get(url(finished_run, "events/?reason=FailedScheduling")).json()["results"]
    assert failed
    for event in failed:
        assert event["message"].startswith("0/")
        decision = alice_api.get(
            url(
                finished_run,
                f"decisions/?variant={event['variant']}&replication="
                f"{event['replication']}&id={event['decision']}",
            )
        ).json()["results"][0]
        assert decision["message"] == event["message"]


@pytest.mark.parametrize("fmt", ["csv", "json", "parquet"])
def test_decisions_are_exported(alice_api, finished_run, fmt):
    response = alice_api.get(url(finished_run, f"export/decisions.{fmt}?reason=Preemption"))
    assert response.status_code == 200
    data = body(response)
    if fmt == "csv":
        rows = list(csv.DictReader(io.StringIO(data.decode())))
    elif fmt == "json":
        rows = json.loads(data)
    else:
        rows = pq.read_table(io.BytesIO(data)).to_pylist()
    assert rows
    assert list(rows[0]) == list(DECISION_COLUMNS)
    assert all(r["kind"] == "Preemption" for r in rows)
    assert rows[0]["victims"] == "batch-job-0"
    assert json.loads(rows[0]["candidates"])[0]["victims"] == ["batch-job-0"]
