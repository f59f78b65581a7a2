"""Results over the API: the per-variant summary with replication statistics,
per-workload records, the event log with its filters, streamed exports, comparisons."""

from __future__ import annotations

import csv
import io
import json

import pyarrow.parquet as pq
import pytest

import scheduler_core as sc
from experiments.models import Status
from experiments.selectors_api import EVENT_COLUMNS, RECORD_COLUMNS, SUMMARY_COLUMNS
from tests.api.conftest import errors
from tests.factories import ExperimentFactory, RunFactory, stored_events, stored_records


def url(run, tail: str) -> str:
    return f"/api/v1/runs/{run.pk}/{tail}"


def body(response) -> bytes:
    return b"".join(response.streaming_content)


@pytest.mark.parametrize("tail", ["summary/", "workloads/", "events/", "export/events.csv"])
@pytest.mark.parametrize(("persona", "status"), [("alice", 200), ("bob", 200), ("charlie", 404)])
def test_results_are_for_whoever_sees_the_run(clients, finished_run, tail, persona, status):
    response = clients[persona].get(url(finished_run, tail))

    assert response.status_code == status


@pytest.mark.parametrize("tail", ["summary/", "workloads/", "events/", "export/summary.json"])
@pytest.mark.parametrize("state", [Status.QUEUED, Status.RUNNING, Status.FAILED, Status.CANCELLED])
def test_a_run_without_final_results_answers_409(alice_api, experiment, tail, state):
    run = RunFactory(experiment=experiment, status=state)

    response = alice_api.get(url(run, tail))

    assert response.status_code == 409
    assert errors(response) == [{"path": "", "message": f"the run has no results: it is {state}"}]


def test_the_summary_has_replication_statistics_per_variant(alice_api, finished_run):
    response = alice_api.get(url(finished_run, "summary/"))

    assert response.status_code == 200
    replications = list(finished_run.replications.order_by("variant_index", "replication"))
    assert response.json() == {
        "run": finished_run.pk,
        "metrics": list(sc.SUMMARY_NAMES),
        "metric_info": [sc.metric_info(name).as_dict() for name in sc.SUMMARY_NAMES],
        "variants": [
            {
                **entry,
                "unserved": False,
                "replications": [
                    {"replication": r.replication, "seed": r.seed, "summary": r.summary}
                    for r in replications
                    if r.variant == entry["variant"]
                ],
            }
            for entry in finished_run.aggregate
        ],
    }


def test_workload_records_are_paginated_across_replications(alice_api, finished_run):
    replications = list(finished_run.replications.order_by("variant_index", "replication"))
    expected = [
        {"variant": r.variant, "replication": r.replication, "seed": r.seed, **record}
        for r in replications
        for record in stored_records(r)
    ]

    first = alice_api.get(url(finished_run, "workloads/?page_size=3")).json()
    pages = [
        alice_api.get(url(finished_run, f"workloads/?page_size=3&page={n}")).json()
        for n in range(1, (len(expected) + 2) // 3 + 1)
    ]

    assert first["count"] == len(expected) > 3
    assert [row for page in pages for row in page["results"]] == expected


def test_workload_records_filter_by_variant_and_replication(alice_api, finished_run):
    second = finished_run.replications.get(variant_index=1)

    rows = alice_api.get(
        url(finished_run, f"workloads/?variant={second.variant}&replication=0")
    ).json()["results"]
    none = alice_api.get(url(finished_run, "workloads/?replication=5")).json()

    assert [row["workload"] for row in rows] == [w["workload"] for w in stored_records(second)]
    assert {row["variant"] for row in rows} == {second.variant}
    assert none["count"] == 0


def _event_json(replication, event) -> dict:
    return {
        "variant": replication.variant,
        "replication": replication.replication,
        "seq": event.seq,
        "time": event.time,
        "reason": event.reason,
        "workload": event.workload,
        "pod": event.pod,
        "node": event.node,
        "value": event.value,
        "related": event.related,
        "message": event.message,
        "decision": event.decision,
    }


def _events(run, keep=lambda row: True) -> list[dict]:
    """The stored logs, replication by replication in run order, as the API shows rows."""
    rows = [
        _event_json(replication, event)
        for replication in run.replications.order_by("variant_index", "replication")
        for event in stored_events(replication)
    ]
    return [row for row in rows if keep(row)]


def test_the_event_log_is_paginated_in_simulator_order(alice_api, finished_run):
    everything = _events(finished_run)

    page = alice_api.get(url(finished_run, "events/?page_size=10&page=2")).json()

    assert page["count"] == len(everything) > 20
    assert page["results"] == everything[10:20]


@pytest.mark.parametrize(
    ("query", "keep"),
    [
        ("reason=Preempted", lambda row: row["reason"] == "Preempted"),
        ("workload=notebook", lambda row: row["workload"] == "notebook"),
        ("node=node-a", lambda row: row["node"] == "node-a"),
        ("time_min=100&time_max=400", lambda row: 100 <= row["time"] <= 400),
        ("replication=0&variant=grace-30s", lambda row: row["variant"] == "grace-30s"),
        (
            "reason=Scheduled&node=node-a&time_max=0",
            lambda row: (
                (row["reason"], row["node"]) == ("Scheduled", "node-a") and row["time"] <= 0
            ),
        ),
    ],
    ids=["reason", "workload", "node", "time-range", "variant", "combined"],
)
def test_the_event_log_filters(alice_api, finished_run, query, keep):
    expected = _events(finished_run, keep)

    response = alice_api.get(url(finished_run, f"events/?page_size=1000&{query}"))

    assert response.status_code == 200
    assert response.json()["results"] == expected
    assert 0 < len(expected) < len(_events(finished_run))


def test_the_event_log_filters_by_pod(alice_api, finished_run):
    pod = next(row["pod"] for row in _events(finished_run) if row["pod"])

    rows = alice_api.get(url(finished_run, f"events/?page_size=1000&pod={pod}")).json()

    assert rows["results"] == _events(finished_run, lambda row: row["pod"] == pod)
    assert rows["count"] == len(rows["results"]) > 0


def test_a_bad_filter_is_an_error_at_its_parameter(alice_api, finished_run):
    response = alice_api.get(url(finished_run, "events/?time_min=soon&replication=-1"))

    assert response.status_code == 400
    assert errors(response) == [
        {"path": "replication", "message": "Ensure this value is greater than or equal to 0."},
        {"path": "time_min", "message": "A valid number is required."},
    ]


# ----------------------------------------------------------------------------- exports
def test_the_summary_csv_has_one_row_per_variant_and_metric(alice_api, finished_run):
    response = alice_api.get(url(finished_run, "export/summary.csv"))

    assert response.status_code == 200
    assert response["Content-Type"] == "text/csv; charset=utf-8"
    assert (
        response["Content-Disposition"]
        == f'attachment; filename="run-{finished_run.pk}-summary.csv"'
    )
    rows = list(csv.DictReader(io.StringIO(body(response).decode())))
    assert list(rows[0]) == list(SUMMARY_COLUMNS)
    assert len(rows) == len(finished_run.aggregate) * len(sc.SUMMARY_NAMES)
    for row in rows:
        entry = next(e for e in finished_run.aggregate if e["variant"] == row["variant"])
        stats = entry["metrics"][row["metric"]]
        parsed = {k: float(row[k]) if row[k] else None for k in ("mean", "ci95", "min", "max")}
        assert parsed == {k: stats[k] for k in ("mean", "ci95", "min", "max")}
        assert int(row["n"]) == stats["n"]


def test_the_events_export_matches_the_event_log_in_every_format(alice_api, finished_run):
    # The export keeps the event log's columns; the decision link is the API's own field.
    expected = [
        {k: v for k, v in e.items() if k != "decision"}
        for e in _events(finished_run, lambda row: row["reason"] == "Preempted")
    ]
    query = "?reason=Preempted"

    as_json = json.loads(body(alice_api.get(url(finished_run, f"export/events.json{query}"))))
    as_csv = list(
        csv.DictReader(
            io.StringIO(
                body(alice_api.get(url(finished_run, f"export/events.csv{query}"))).decode()
            )
        )
    )
    parquet = alice_api.get(url(finished_run, f"export/events.parquet{query}"))
    table = pq.read_table(io.BytesIO(body(parquet)))

    assert as_json == expected
    assert [row["pod"] for row in as_csv] == [row["pod"] for row in expected]
    assert [float(row["time"]) for row in as_csv] == [row["time"] for row in expected]
    assert parquet["Content-Type"] == "application/vnd.apache.parquet"
    assert table.column_names == list(EVENT_COLUMNS)
    assert table.to_pylist() == expected


def test_the_workloads_export_types_its_parquet_columns(alice_api, finished_run):
    replications = list(finished_run.replications.order_by("variant_index", "replication"))
    expected = [
        {"variant": r.variant, "replication": r.replication, "seed": r.seed, **record}
        for r in replications
        for record in stored_records(r)
    ]

    table = pq.read_table(
        io.BytesIO(body(alice_api.get(url(finished_run, "export/workloads.parquet"))))
    )
    rows = json.loads(body(alice_api.get(url(finished_run, "export/workloads.json"))))

    assert table.column_names == list(RECORD_COLUMNS)
    assert str(table.schema.field("priority").type) == "int64"
    assert str(table.schema.field("urgent").type) == "bool"
    assert str(table.schema.field("time_to_resume").type) == "double"
    assert table.to_pylist() == rows == expected


def test_an_empty_export_is_still_a_valid_file(alice_api, finished_run):
    query = "?reason=NoSuchReason"

    as_json = body(alice_api.get(url(finished_run, f"export/events.json{query}")))
    as_csv = body(alice_api.get(url(finished_run, f"export/events.csv{query}")))
    table = pq.read_table(
        io.BytesIO(body(alice_api.get(url(finished_run, f"export/events.parquet{query}"))))
    )

    assert json.loads(as_json) == []
    assert as_csv.decode().strip() == ",".join(EVENT_COLUMNS)
    assert table.num_rows == 0


def test_an_unknown_export_is_404(alice_api, finished_run):
    response = alice_api.get(url(finished_run, "export/secrets.xlsx"))

    assert response.status_code == 404
    assert errors(response)[0]["message"].startswith("no export secrets.xlsx")


# ----------------------------------------------------------------------------- compare
def test_compare_any_run_variant_pairs_against_the_first(alice_api, finished_run):
    first, second = (e["variant"] for e in finished_run.aggregate)

    response = alice_api.get(
        f"/api/v1/compare/?pair={finished_run.pk}:{first}&pair={finished_run.pk}:{second}"
    )

    assert response.status_code == 200
    data = response.json()
    assert [(p["run"], p["variant"]) for p in data["pairs"]] == [
        (finished_run.pk, first),
        (finished_run.pk, second),
    ]
    assert [row["metric"] for row in data["metrics"]] == list(sc.SUMMARY_NAMES)
    lost = next(row for row in data["metrics"] if row["metric"] == "lost_work")
    a, b = (entry["metrics"]["lost_work"] for entry in finished_run.aggregate)
    n = a["n"]
    best = lost["values"][0]["best"]
    assert lost["values"][0] == {
        **a,
        "difference": 0.0,
        "difference_ci95": 0.0 if n > 1 else None,
        "interval": "paired" if n > 1 else "none",
        "pairs": n if n > 1 else 0,
        "best": best,
        "relative_difference": 0.0 if a["mean"] else None,
    }
    assert lost["values"][1]["difference"] == b["mean"] - a["mean"]
    # One run: both variants ran the same seeds, so the interval is the paired one.
    assert lost["values"][1]["interval"] == ("paired" if n > 1 else "none")


def test_compare_reports_each_bad_pair_at_its_index(alice_api, finished_run, charlie):
    hidden = RunFactory(experiment=ExperimentFactory(owner=charlie), status=Status.SUCCEEDED)

    malformed = alice_api.get("/api/v1/compare/?pair=12&pair=x:y")
    invisible = alice_api.get(f"/api/v1/compare/?pair={hidden.pk}:base")
    no_variant = alice_api.get(f"/api/v1/compare/?pair={finished_run.pk}:nope")
    none = alice_api.get("/api/v1/compare/")

    assert errors(malformed) == [
        {"path": "pair[0]", "message": "'12' is not RUN:VARIANT (e.g. 12:baseline)"},
        {"path": "pair[1]", "message": "'x:y' is not RUN:VARIANT (e.g. 12:baseline)"},
    ]
    assert errors(invisible) == [{"path": "pair[0]", "message": f"no run {hidden.pk}"}]
    names = ", ".join(e["variant"] for e in finished_run.aggregate)
    assert errors(no_variant) == [
        {
            "path": "pair[0]",
            "message": (f"run {finished_run.pk} has no variant 'nope' (it has: {names})"),
        }
    ]
    assert errors(none) == [{"path": "pair", "message": "give 1 to 20 pairs as RUN:VARIANT"}]
    assert {r.status_code for r in (malformed, invisible, no_variant, none)} == {400}
