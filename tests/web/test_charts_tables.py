"""The tables beside the charts: the compare table, the per-workload table, the event
log as kubectl shows it, and the assumptions panel."""

from __future__ import annotations

import pytest

import scheduler_core as sc
from experiments.charts import kubectl
from experiments.charts.assumptions import OURS, PLACEMENT, PREEMPTION, UPSTREAM, assumptions
from experiments.charts.compare import compare_table
from experiments.charts.tables import PER_PAGE
from experiments.models import WorkloadRecord
from experiments.views.chart_data import workload_table
from tests.factories import ReplicationFactory
from tests.web.charts_support import simulated, variant

METRICS = ("lost_work", "goodput", "restarts")


def _three():
    return [
        variant("base", lost_work=100.0, goodput=0.5, restarts=2.0),
        variant("better", lost_work=50.0, goodput=0.75, restarts=2.0),
        variant("worse", lost_work=400.0, goodput=None, restarts=2.0),
    ]


def test_compare_marks_the_best_and_the_deltas_against_the_baseline():
    table = compare_table(_three(), METRICS, baseline=0)

    lost, goodput, restarts = table.rows
    assert table.labels == ("base", "better", "worse")
    assert [c.text for c in lost.cells] == ["100", "50", "400"]
    assert [c.best for c in lost.cells] == [False, True, False]
    assert [(c.delta, c.verdict) for c in lost.cells] == [
        ("baseline", ""),
        ("-50 (-50.0%)", "better"),
        ("+300 (+300.0%)", "worse"),
    ]
    assert [c.text for c in goodput.cells] == ["50.0%", "75.0%", sc.metric_info("goodput").null]
    assert [(c.delta, c.verdict) for c in goodput.cells] == [
        ("baseline", ""),
        ("+25.0% (+50.0%)", "better"),
        ("", ""),
    ]
    assert [c.best for c in restarts.cells] == [False, False, False]
    assert [c.delta for c in restarts.cells] == ["baseline", "±0", "±0"]
    assert [c.baseline for c in lost.cells] == [True, False, False]


def test_differences_only_hides_metrics_equal_everywhere():
    table = compare_table(_three(), METRICS, baseline=1, differences_only=True)

    assert [r.metric for r in table.rows] == ["lost_work", "goodput"]
    assert table.hidden_same == 1
    assert table.rows[0].cells[1].delta == "baseline"


def test_the_transposed_table_has_a_row_per_variant():
    table = compare_table(_three(), METRICS)

    rows = table.by_variant()

    assert [label for label, _ in rows] == ["base", "better", "worse"]
    assert [title for title, _ in rows[1][1]] == ["Lost work (GPU·s)", "Goodput (%)", "Restarts"]
    assert [cell.text for _, cell in rows[1][1]] == ["50", "75.0%", "2"]
    assert table.baseline is None
    assert rows[0][1][0][1].delta == ""


def test_an_out_of_range_baseline_means_none():
    assert compare_table(_three(), METRICS, baseline=7).baseline is None


RECORDS = [
    {
        "workload": "train",
        "kind": "training",
        "priority_class": "low",
        "recovery": "synchronous",
        "urgent": False,
        "lost_work": 12240.0,
        "time_to_recover": 3515.0,
    },
    {
        "workload": "eval",
        "kind": "evaluation",
        "priority_class": "low",
        "recovery": "independent",
        "urgent": False,
        "lost_work": 0.0,
        "time_to_recover": None,
    },
    {
        "workload": "urgent",
        "kind": "training",
        "priority_class": "urgent",
        "recovery": "synchronous",
        "urgent": True,
        "lost_work": 0.0,
        "time_to_recover": None,
    },
]


@pytest.mark.parametrize(
    ("sort", "order"),
    [
        ("-lost_work", ["train", "eval", "urgent"]),
        ("lost_work", ["eval", "urgent", "train"]),
        ("time_to_recover", ["train", "eval", "urgent"]),
        ("-workload", ["urgent", "train", "eval"]),
        ("nonsense", ["train", "eval", "urgent"]),
    ],
    ids=["descending", "ascending-stable", "blanks-last", "text", "unknown-column"],
)
def test_workload_table_sorts(sort, order):
    replication = _stored(RECORDS)

    page = workload_table(replication_id=replication.pk, sort=sort)

    assert [r["workload"] for r in page["rows"]] == order
    assert page["sort"] == (sort if sort != "nonsense" else "-lost_work")


@pytest.mark.parametrize(
    ("query", "found"),
    [
        ("training", ["train", "urgent"]),
        ("urgent", ["urgent"]),
        ("SYNC low", ["train"]),
        ("nothing", []),
    ],
    ids=["kind", "urgent-flag", "every-word-any-case", "no-match"],
)
def test_workload_table_filters(query, found):
    page = workload_table(replication_id=_stored(RECORDS).pk, query=query)

    assert [r["workload"] for r in page["rows"]] == found
    assert (page["total"], page["all"]) == (len(found), 3)


def test_workload_table_pages():
    replication = _stored([{"workload": f"w{i:03d}", "lost_work": float(i)} for i in range(120)])

    last = workload_table(replication_id=replication.pk, sort="workload", page=99)

    assert (last["page"], last["pages"], last["total"], last["all"]) == (3, 3, 120, 120)
    assert [r["workload"] for r in last["rows"]] == [f"w{i:03d}" for i in range(2 * PER_PAGE, 120)]
    assert workload_table(replication_id=replication.pk, page=0)["page"] == 1


def _stored(records):
    """A replication whose stored records are ``records``, in that order."""
    replication = ReplicationFactory()
    WorkloadRecord.objects.bulk_create(
        WorkloadRecord(replication=replication, position=i, **record)
        for i, record in enumerate(records)
    )
    return replication


def _event(reason, **fields):
    return {
        "time": 10.0,
        "reason": reason,
        "workload": "train",
        "pod": "train-3",
        "node": "node-b",
        "value": 0.0,
        "related": "",
        "message": "",
        **fields,
    }


@pytest.mark.parametrize(
    ("event", "expected"),
    [
        (
            _event("Scheduled", value=2.0),
            ("Normal", "default-scheduler", "Successfully assigned train-3 to node-b (2 GPU)", 1),
        ),
        (
            _event(
                "Preempted", related="urgent-0", message="Preempted by pod urgent-0 on node node-b"
            ),
            ("Warning", "default-scheduler", "Preempted by pod urgent-0 on node node-b", 1),
        ),
        (
            _event("FailedScheduling", value=7.0, message="0/2 nodes are available"),
            ("Warning", "default-scheduler", "0/2 nodes are available", 7),
        ),
        (
            _event("Killing", value=5.0, related="preemption"),
            ("Normal", "kubelet", "Stopping container (preemption): stops after 5s", 1),
        ),
        (
            _event(
                "Disrupted",
                value=12240.0,
                related="preemption",
                message="1530s of progress since the last checkpoint lost",
            ),
            (
                "Warning",
                "application model",
                "12,240 GPU·s of work lost (preemption): 1530s of "
                "progress since the last checkpoint lost",
                1,
            ),
        ),
        (
            _event("SomethingNew", message="as the simulator says"),
            ("Normal", "disruption-lab", "as the simulator says", 1),
        ),
    ],
    ids=[
        "scheduled",
        "preempted",
        "failed-scheduling-xN",
        "killing",
        "disrupted-is-ours",
        "unknown-reason",
    ],
)
def test_events_read_like_kubectl_describe(event, expected):
    row = kubectl.describe(event)

    assert (row["type"], row["from"], row["message"], row["count"]) == expected
    assert (row["reason"], row["at"], row["object"]) == (event["reason"], "0:00:10", "pod/train-3")


@pytest.mark.parametrize(
    ("seconds", "text"),
    [
        (0, "0:00:00"),
        (90, "0:01:30"),
        (3725.5, "1:02:05.5"),
        (-4000, "-1:06:40"),
        (59.96, "0:01:00"),
    ],
)
def test_clock(seconds, text):
    assert kubectl.clock(seconds) == text


def test_every_reason_the_simulator_logs_has_a_kubectl_reading():
    reasons = {
        e.reason
        for sim in (
            "s1-training-vs-shards",
            "s5-loading-treadmill",
            "s9-spot-reclaim",
            "s10-queue-priority",
        )
        for r in simulated(sim).results.values()
        for e in r.events
    }

    assert reasons - set(kubectl.MESSAGES) == set()


def test_every_reason_in_the_registry_has_a_message_a_type_and_a_source():
    """kubectl's two event types; a source named for every reason (core registry)."""
    from scheduler_core.events import REASONS, Reason

    assert set(kubectl.MESSAGES) == set(Reason) == set(REASONS)
    assert {info.type for info in REASONS.values()} == {"Normal", "Warning"}
    assert all(info.source and info.doc for info in REASONS.values())
    assert all(bool(info.unit) == bool(info.value) for info in REASONS.values())


def test_every_registered_policy_says_where_it_comes_from():
    names = sc.policy_names()
    assert set(names["preemption"]) == set(PREEMPTION)
    assert set(names["placement"]) == set(PLACEMENT)
    assert PREEMPTION["checkpoint-aware"][0] == OURS
    assert {PREEMPTION[name][0] for name in ("none", "pod", "workload-aware")} == {UPSTREAM}


def test_assumptions_list_policies_overrides_and_workload_profiles():
    s1 = simulated("s1-training-vs-shards")
    aggregate = [
        {"variant": name, "preemption": r.preemption, "placement": r.placement}
        for name, r in s1.results.items()
    ]

    found = assumptions(s1.document, aggregate)

    assert [(p.variant, p.preemption, p.ours) for p in found.policies] == [
        ("pod", "pod", False),
        ("workload-aware-single", "workload-aware", False),
        ("workload-aware-all", "workload-aware", False),
        ("checkpoint-aware", "checkpoint-aware", True),
    ]
    assert found.policies[2].overrides == ("workloads.train.podGroup.disruptionMode = All",)
    assert [
        (w.examples, w.checkpoint, w.startup_seconds, w.grace_seconds) for w in found.profiles
    ] == [
        ("train", "every 1800s, 60s to write", 120.0, 30.0),
        ("eval", "every 60s, 2s to write", 30.0, 30.0),
        ("urgent", "never", 60.0, 30.0),
    ]


def test_thousands_of_workloads_collapse_into_profiles():
    workloads = [
        {
            "name": f"w{i}",
            "kind": "batch",
            "startupSeconds": float(i % 3),
            "checkpoint": {"intervalSeconds": 600.0, "writeSeconds": 10.0},
        }
        for i in range(3000)
    ]

    found = assumptions({"workloads": workloads}, [])

    assert [(p.count, p.startup_seconds, p.examples) for p in found.profiles] == [
        (1000, 0.0, "w0, w3, w6 …"),
        (1000, 1.0, "w1, w4, w7 …"),
        (1000, 2.0, "w2, w5, w8 …"),
    ]
    assert found.profiles_left_out == 0


def test_every_summary_metric_appears_in_the_compare_table():
    table = compare_table(simulated("s1-training-vs-shards").variants(), sc.SUMMARY_NAMES)

    assert [r.metric for r in table.rows] == list(sc.SUMMARY_NAMES)
