"""The event log stored as one Parquet blob per replication (issue #14, "The log"): what
goes in comes back, in order, with its decision links; the reads filter like the old
indexed columns did; it is small; and the migration carries the old rows over."""

from __future__ import annotations

import pytest
from django.db import connection
from django.db.migrations.executor import MigrationExecutor

import scheduler_core as sc
from experiments import event_log, services
from experiments.event_log import EventLog
from experiments.models import Replication, WorkloadRecord
from experiments.services.execution import decision_links, encode_event_log
from scheduler_core.events import Reason
from tests.factories import ExperimentFactory, ReplicationFactory, preset_document, stored_events

MAX_BYTES_PER_EVENT = 20
"""Issue #14's target for a stored event (one indexed row each cost about 295)."""


@pytest.fixture(scope="module")
def s1_result() -> sc.ReplicationResult:
    spec = sc.get_preset("s1-training-vs-shards").spec()
    return sc.simulate(spec, "pod", 0)


def _decoded(result: sc.ReplicationResult) -> EventLog:
    return EventLog.decode(encode_event_log(result))


def test_a_log_comes_back_whole_in_simulator_order_with_its_decision_links(s1_result):
    links = decision_links(s1_result)

    log = _decoded(s1_result)

    assert [
        (e.seq, e.time, e.reason, e.workload, e.pod, e.node, e.value, e.related, e.message)
        for e in log
    ] == [
        (i, e.time, str(e.reason), e.workload, e.pod, e.node, float(e.value), e.related, e.message)
        for i, e in enumerate(s1_result.events)
    ]
    assert [e.decision for e in log] == [
        links.get((e.time, str(e.reason), e.pod or e.workload)) for e in s1_result.events
    ]
    assert any(e.decision is not None for e in log)


def test_the_column_wise_encoder_writes_the_blob_the_row_wise_one_does(s1_result):
    """``encode_event_log`` builds the columns itself (issue #14: storing is part of every
    task); the blob must be byte for byte what ``event_log.encode`` makes of one tuple
    per event, with and without decision records (then every link is None)."""
    quiet = sc.simulate(sc.get_preset("s1-training-vs-shards").spec(), "pod", 0, explain=False)
    assert not quiet.decisions
    for result in (s1_result, quiet):
        links = decision_links(result)
        rows = [
            (
                e.time,
                str(e.reason),
                e.workload,
                e.pod,
                e.node,
                float(e.value),
                e.related,
                e.message,
                links.get((e.time, str(e.reason), e.pod or e.workload)),
            )
            for e in result.events
        ]

        assert encode_event_log(result) == event_log.encode(rows)
    assert all(e.decision is None for e in _decoded(quiet))
    assert event_log.encode([]) == event_log.encode_columns([() for _ in event_log.COLUMNS])


def test_filters_match_the_columns_exactly_and_keep_the_seq(s1_result):
    log = _decoded(s1_result)
    events = list(enumerate(s1_result.events))
    preempted = log.filter({"reason": Reason.PREEMPTED})
    window = log.filter(reasons=[Reason.SCHEDULED, Reason.READY], time_min=1, time_max=900)

    assert [e.seq for e in preempted] == [i for i, e in events if e.reason is Reason.PREEMPTED]
    assert [e.seq for e in window] == [
        i for i, e in events if e.reason in (Reason.SCHEDULED, Reason.READY) and 1 <= e.time <= 900
    ]
    assert len(preempted) == 4
    assert len(window) > 0
    assert log.filter({"reason": "", "pod": ""}) is log  # an empty value filters nothing
    assert log.setup_count() == sum(e.time <= 0 for e in s1_result.events) > 0
    assert all(e.time > 0 for e in log.filter(after_setup=True))
    assert log.reasons() == sorted({str(e.reason) for e in s1_result.events})


def test_a_slice_is_a_page_of_the_filtered_rows(s1_result):
    scheduled = _decoded(s1_result).filter({"reason": Reason.SCHEDULED})
    everything = list(scheduled)

    assert scheduled[2:5] == everything[2:5]
    assert scheduled[-1] == everything[-1]
    assert scheduled[::3] == everything[::3]
    with pytest.raises(IndexError):
        scheduled[len(scheduled)]


def test_an_unknown_exact_filter_is_refused_by_name(s1_result):
    with pytest.raises(ValueError, match="no exact filter on message"):
        _decoded(s1_result).filter({"message": "x"})


def test_no_blob_reads_as_an_empty_log():
    log = EventLog.decode(None)

    assert len(log) == 0
    assert list(log) == []
    assert log.reasons() == []
    assert log.setup_count() == 0


def test_a_subset_of_columns_decodes_only_those():
    rows = [(float(t), "Scheduled", "w", f"w-{t}", "n", 2.0, "", "", None) for t in range(5)]

    log = EventLog.decode(event_log.encode(rows), columns=("time", "pod"))

    assert list(log.columns(("time", "pod"))) == [(t, float(t), f"w-{t}") for t in range(5)]


@pytest.mark.parametrize("preset", ["s8-gang-at-scale", "s13-fleet-reliability"], ids=["s8", "s13"])
def test_a_large_log_stores_in_fewer_than_20_bytes_an_event(preset):
    spec = sc.get_preset(preset).spec()
    result = sc.simulate(spec, sc.variant_names(spec)[0], 0)

    blob = encode_event_log(result)

    assert len(result.events) > 2000
    assert len(blob) / len(result.events) <= MAX_BYTES_PER_EVENT


def test_a_stored_replication_keeps_its_log_in_its_own_row_and_deletes_it_with_it(alice):
    experiment = ExperimentFactory(owner=alice, spec=preset_document("s3-grace-period"))
    replication = ReplicationFactory(run__experiment=experiment, variant="grace-30s")

    services.replication_execute(replication_id=replication.pk)

    replication.refresh_from_db()
    assert bytes(replication.event_log)[:4] == b"PAR1"
    assert len(stored_events(replication)) == replication.event_count > 0
    experiment.delete()
    assert not Replication.objects.exists()


@pytest.mark.django_db(transaction=True)
def test_the_migration_carries_every_event_row_into_its_replications_blob():
    """0005 reads the rows of 0004's RunEvent table in seq order into one blob per
    replication, then drops the table, and turns each JSON record into a WorkloadRecord
    row (a field an older simulator did not write takes its column's default); going
    back rebuilds the rows."""
    executor = MigrationExecutor(connection)
    before, after = (
        [("experiments", "0004_decisions")],
        [("experiments", "0005_event_log_and_workload_records")],
    )
    try:
        executor.migrate(before)
        old = executor.loader.project_state(before).apps
        replication = _old_replication(old)
        old.get_model("experiments", "Replication").objects.filter(pk=replication.pk).update(
            workloads=[
                {"workload": "train", "members": 4, "lost_work": 12.5, "time_to_recover": None},
                {"workload": "urgent", "urgent": True, "completion_time": 90.0},
            ]
        )
        run_event = old.get_model("experiments", "RunEvent")
        rows = [
            {
                "seq": 1,
                "time": 5.0,
                "reason": "Preempted",
                "pod": "a-0",
                "related": "u-0",
                "decision": 3,
            },
            {
                "seq": 0,
                "time": 0.0,
                "reason": "Scheduled",
                "pod": "a-0",
                "node": "n-1",
                "value": 2.0,
            },
            {"seq": 2, "time": 9.0, "reason": "Killing", "pod": "a-0", "message": "grace 30 s"},
        ]
        for row in rows:
            run_event.objects.create(replication_id=replication.pk, **row)

        executor = MigrationExecutor(connection)
        executor.migrate(after)

        blob = Replication.objects.values_list("event_log", flat=True).get(pk=replication.pk)
        log = EventLog.decode(blob)
        assert [(e.seq, e.time, e.reason, e.decision) for e in log] == [
            (0, 0.0, "Scheduled", None),
            (1, 5.0, "Preempted", 3),
            (2, 9.0, "Killing", None),
        ]
        assert (log[0].node, log[0].value, log[1].related, log[2].message) == (
            "n-1",
            2.0,
            "u-0",
            "grace 30 s",
        )
        records = WorkloadRecord.objects.filter(replication_id=replication.pk)
        assert list(
            records.order_by("position").values_list(
                "position", "workload", "members", "lost_work", "urgent", "completion_time"
            )
        ) == [(0, "train", 4, 12.5, False, None), (1, "urgent", 0, 0.0, True, 90.0)]
        executor = MigrationExecutor(connection)
        executor.migrate(before)
        back = executor.loader.project_state(before).apps.get_model("experiments", "RunEvent")
        assert list(back.objects.order_by("seq").values_list("seq", "reason", "decision")) == [
            (0, "Scheduled", None),
            (1, "Preempted", 3),
            (2, "Killing", None),
        ]
        arrays = executor.loader.project_state(before).apps.get_model("experiments", "Replication")
        [train, urgent] = arrays.objects.get(pk=replication.pk).workloads
        assert (train["workload"], train["lost_work"], urgent["completion_time"]) == (
            "train",
            12.5,
            90.0,
        )
    finally:
        executor = MigrationExecutor(connection)
        executor.loader.build_graph()
        executor.migrate(executor.loader.graph.leaf_nodes())


def _old_replication(apps):
    user = apps.get_model("auth", "User").objects.create(username="migrated")
    experiment = apps.get_model("experiments", "Experiment").objects.create(
        owner=user, name="old", spec={}
    )
    run = apps.get_model("experiments", "Run").objects.create(
        experiment=experiment, spec={}, product_version="old"
    )
    return apps.get_model("experiments", "Replication").objects.create(
        run=run, variant_index=0, variant="pod", replication=0
    )
