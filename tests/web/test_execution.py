"""Running experiments without a worker process: the services a task calls, driven
directly (tasks run inline, CELERY_TASK_ALWAYS_EAGER), with exact database state after."""

from __future__ import annotations

import json
from datetime import timedelta

import pytest
from celery.exceptions import SoftTimeLimitExceeded
from django.db import InterfaceError, OperationalError
from django.urls import reverse
from django.utils import timezone

import scheduler_core as sc
from experiments import services
from experiments.models import Replication, Run, Status, WorkloadRecord, spec_digest_of
from experiments.services import Outcome, execution
from experiments.specs import product_version
from scheduler_core.metrics import confidence_interval
from tests.factories import (
    ExperimentFactory,
    ReplicationFactory,
    RunFactory,
    events_stored,
    stored_events,
    stored_records,
)


@pytest.fixture
def spec(experiment):
    return sc.parse_spec(experiment.spec)


def _enqueue(experiment, user, django_capture_on_commit_callbacks, *, execute: bool) -> Run:
    with django_capture_on_commit_callbacks(execute=execute):
        run = services.run_enqueue(experiment=experiment, user=user)
    run.refresh_from_db()
    return run


def test_enqueue_freezes_the_spec_and_makes_one_row_per_variant_and_replication(
    experiment, alice, django_capture_on_commit_callbacks
):
    spec = sc.parse_spec({**experiment.spec, "replications": 3})
    experiment.spec = spec.model_dump(mode="json", by_alias=True)
    experiment.save()

    run = _enqueue(experiment, alice, django_capture_on_commit_callbacks, execute=False)

    assert run.status == Status.QUEUED
    assert run.spec == experiment.spec
    assert run.product_version == product_version()
    assert run.created_by == alice
    rows = list(run.replications.values_list("variant_index", "variant", "replication", "status"))
    assert rows == [
        (v, name, r, Status.QUEUED)
        for v, name in enumerate(sc.variant_names(spec))
        for r in range(3)
    ]


def test_a_run_executes_every_replication_and_aggregates_them(
    experiment, alice, spec, django_capture_on_commit_callbacks
):
    run = _enqueue(experiment, alice, django_capture_on_commit_callbacks, execute=True)

    expected = [sc.simulate(spec, name, 0) for name in sc.variant_names(spec)]
    assert run.status == Status.SUCCEEDED
    assert run.progress == 1.0
    assert run.started_at <= run.finished_at
    assert run.aggregate == [
        {
            "variant": r.variant,
            "preemption": r.preemption,
            "placement": r.placement,
            "metrics": sc.aggregate([r]),
        }
        for r in expected
    ]
    for replication, result in zip(
        run.replications.order_by("variant_index"), expected, strict=True
    ):
        stored = result.to_dict(include_events=False)
        assert replication.summary == stored["summary"]
        assert stored_records(replication) == stored["workloads"]
        assert replication.event_count == len(result.events)
        events = [
            (e.time, e.reason, e.workload, e.pod, e.node, e.value, e.related, e.message)
            for e in stored_events(replication)
        ]
        assert events == [
            (e.time, e.reason, e.workload, e.pod, e.node, float(e.value), e.related, e.message)
            for e in result.events
        ]


def test_a_second_delivery_of_a_finished_task_changes_nothing(
    experiment, alice, django_capture_on_commit_callbacks
):
    run = _enqueue(experiment, alice, django_capture_on_commit_callbacks, execute=True)
    replication = run.replications.first()
    events = events_stored()

    assert services.replication_execute(replication_id=replication.pk) is Outcome.DONE

    replication.refresh_from_db()
    assert replication.attempt == 1
    assert events_stored() == events > 0


def test_a_duplicate_finds_a_live_heartbeat_and_waits():
    replication = ReplicationFactory(status=Status.RUNNING, attempt=1, heartbeat_at=timezone.now())

    assert services.replication_execute(replication_id=replication.pk) is Outcome.BUSY

    replication.refresh_from_db()
    assert (replication.status, replication.attempt) == (Status.RUNNING, 1)


def test_a_stale_heartbeat_is_taken_over_and_completed(settings):
    stale = timezone.now() - timedelta(seconds=settings.LAB_HEARTBEAT_STALE_SECONDS + 1)
    replication = ReplicationFactory(
        run__status=Status.RUNNING, status=Status.RUNNING, attempt=1, heartbeat_at=stale
    )

    assert services.replication_execute(replication_id=replication.pk) is Outcome.DONE

    replication.refresh_from_db()
    assert (replication.status, replication.attempt) == (Status.SUCCEEDED, 2)
    assert len(stored_events(replication)) == replication.event_count > 0


def test_a_replication_that_keeps_killing_its_worker_fails_the_run(settings):
    stale = timezone.now() - timedelta(seconds=settings.LAB_HEARTBEAT_STALE_SECONDS + 1)
    replication = ReplicationFactory(
        run__status=Status.RUNNING,
        status=Status.RUNNING,
        attempt=settings.LAB_MAX_ATTEMPTS,
        heartbeat_at=stale,
    )

    assert services.replication_execute(replication_id=replication.pk) is Outcome.DONE

    run = Run.objects.get(pk=replication.run_id)
    assert run.status == Status.FAILED
    assert run.error == (
        f"variant '{replication.variant}' replication 0: the worker was lost "
        f"{settings.LAB_MAX_ATTEMPTS} times while simulating it"
    )


def test_a_failing_simulation_fails_the_run_and_keeps_nothing(
    experiment, alice, monkeypatch, django_capture_on_commit_callbacks
):
    real = sc.simulate

    def second_variant_fails(spec, variant, *args, **kwargs):
        if variant.name == "grace-30s":  # the task passes the variant resolved
            raise RuntimeError("boom")
        return real(spec, variant, *args, **kwargs)

    monkeypatch.setattr(execution.sc, "simulate", second_variant_fails)

    run = _enqueue(experiment, alice, django_capture_on_commit_callbacks, execute=True)

    assert run.status == Status.FAILED
    assert run.error == "variant 'grace-30s' replication 0 failed: RuntimeError: boom"
    assert run.aggregate == []
    assert events_stored(run=run) == 0
    assert not run.replications.exclude(event_log=None).exists()
    assert list(run.replications.values_list("summary", "event_count")) == [({}, 0), ({}, 0)]
    assert not WorkloadRecord.objects.filter(replication__run=run).exists()
    assert list(run.replications.values_list("status", flat=True)) == [
        Status.SUCCEEDED,
        Status.FAILED,
    ]


def test_a_task_over_its_time_limit_fails_the_run_saying_so(
    experiment, alice, monkeypatch, settings, django_capture_on_commit_callbacks
):
    def too_slow(*args, **kwargs):
        raise SoftTimeLimitExceeded

    monkeypatch.setattr(execution.sc, "simulate", too_slow)

    run = _enqueue(experiment, alice, django_capture_on_commit_callbacks, execute=True)

    assert run.status == Status.FAILED
    assert run.error == (
        "variant 'grace-300s' replication 0 took longer than the task time "
        f"limit of {settings.CELERY_TASK_SOFT_TIME_LIMIT} s "
        "(CELERY_TASK_TIME_LIMIT)"
    )


def test_a_run_cancelled_mid_simulation_stops_writing(
    experiment, alice, monkeypatch, django_capture_on_commit_callbacks
):
    real = sc.simulate

    def cancel_then_report(spec, variant, replication, *, progress, **kwargs):
        services.run_cancel(run=Run.objects.get(experiment=experiment))
        progress(1.0)  # the next report finds the run cancelled and stops the task
        return real(spec, variant, replication, **kwargs)

    monkeypatch.setattr(execution.sc, "simulate", cancel_then_report)

    run = _enqueue(experiment, alice, django_capture_on_commit_callbacks, execute=True)

    assert run.status == Status.CANCELLED
    assert run.error == ""
    assert events_stored() == 0
    assert set(run.replications.values_list("status", flat=True)) == {Status.CANCELLED}


def test_cancelling_a_queued_run_cancels_its_replications(
    experiment, alice, django_capture_on_commit_callbacks
):
    run = _enqueue(experiment, alice, django_capture_on_commit_callbacks, execute=False)

    assert services.run_cancel(run=run) is True

    assert run.status == Status.CANCELLED
    assert run.finished_at is not None
    assert set(run.replications.values_list("status", flat=True)) == {Status.CANCELLED}
    replication = run.replications.first()
    assert services.replication_execute(replication_id=replication.pk) is Outcome.DONE
    assert events_stored() == 0


def test_a_finished_run_cannot_be_cancelled(experiment, alice, django_capture_on_commit_callbacks):
    run = _enqueue(experiment, alice, django_capture_on_commit_callbacks, execute=True)

    assert services.run_cancel(run=run) is False

    assert run.status == Status.SUCCEEDED
    assert events_stored(run=run) > 0


def test_progress_is_written_at_a_throttled_rate(settings):
    settings.LAB_PROGRESS_EVERY_SECONDS = 3600
    replication = ReplicationFactory(status=Status.RUNNING, attempt=1)
    reporter = execution._ProgressReporter(replication.pk, attempt=1)

    reporter(0.25)
    reporter(0.5)

    replication.refresh_from_db()
    assert replication.progress == 0.25
    reporter(1.0)
    replication.refresh_from_db()
    assert replication.progress == 0.99


def test_finalize_waits_for_every_replication():
    run = RunFactory(status=Status.RUNNING)
    ReplicationFactory(run=run, variant_index=0, status=Status.SUCCEEDED)
    ReplicationFactory(run=run, variant_index=1, variant="grace-30s", status=Status.RUNNING)

    assert services.run_finalize(run_id=run.pk) is Outcome.BUSY

    run.refresh_from_db()
    assert run.status == Status.RUNNING


def test_finalize_aggregates_from_the_summaries_without_reading_the_big_columns(
    experiment, alice, monkeypatch, django_capture_on_commit_callbacks
):
    """The chord's last step reads each replication's summary, not its timeline,
    decisions or event log (48 openb timelines took seconds of it to decode), nor the
    run's aggregate twice; what it aggregates is what it did before."""
    from django.db import connection
    from django.test.utils import CaptureQueriesContext

    from experiments.services import runs

    run = _enqueue(experiment, alice, django_capture_on_commit_callbacks, execute=True)
    assert run.status == Status.SUCCEEDED
    aggregate = run.aggregate
    Run.objects.filter(pk=run.pk).update(status=Status.RUNNING, aggregate=[])
    monkeypatch.setattr(runs, "_precompute_run_page", lambda run: None)  # it reads timelines

    with CaptureQueriesContext(connection) as queries:
        assert services.run_finalize(run_id=run.pk) is Outcome.DONE

    run.refresh_from_db()
    assert run.status == Status.SUCCEEDED
    assert run.aggregate == aggregate
    reads = [q["sql"] for q in queries.captured_queries if q["sql"].startswith("SELECT")]
    replication_reads = [sql for sql in reads if "experiments_replication" in sql]
    assert replication_reads
    for column in ("timeline", "decisions", "event_log", "diagnosis", "distributions"):
        assert not any(f'"experiments_replication"."{column}"' in sql for sql in reads), column


class TestTheSweep:
    """The watchdog: no run stays active forever, and a failure says why."""

    def test_a_replication_without_heartbeat_fails_its_run(self, settings):
        silent = timezone.now() - timedelta(seconds=settings.LAB_WORKER_LOST_SECONDS + 1)
        replication = ReplicationFactory(
            run__status=Status.RUNNING, status=Status.RUNNING, attempt=1, heartbeat_at=silent
        )

        assert services.runs_sweep_stale() == [replication.run_id]

        run = Run.objects.get(pk=replication.run_id)
        assert run.status == Status.FAILED
        assert run.error == (
            f"worker lost: variant 'grace-300s' replication 0 sent no heartbeat for over "
            f"{settings.LAB_WORKER_LOST_SECONDS:g} s (attempt 1) and no other worker took it over"
        )

    def test_a_running_run_whose_queued_tasks_vanished_fails(self, settings):
        long_ago = timezone.now() - timedelta(seconds=settings.LAB_WORKER_LOST_SECONDS + 1)
        run = RunFactory(status=Status.RUNNING, started_at=long_ago)
        ReplicationFactory(
            run=run, status=Status.SUCCEEDED, finished_at=long_ago, heartbeat_at=long_ago
        )
        ReplicationFactory(run=run, variant_index=1, variant="grace-30s", status=Status.QUEUED)

        assert services.runs_sweep_stale() == [run.pk]

        run.refresh_from_db()
        assert run.status == Status.FAILED
        assert run.error.startswith("tasks lost: nothing happened for over")

    def test_a_run_no_worker_picked_up_fails(self, settings):
        run = RunFactory(status=Status.QUEUED)
        Run.objects.filter(pk=run.pk).update(
            created_at=timezone.now() - timedelta(seconds=settings.LAB_QUEUED_TIMEOUT_SECONDS + 1)
        )

        assert services.runs_sweep_stale() == [run.pk]

        run.refresh_from_db()
        assert run.status == Status.FAILED
        assert run.error == (
            f"no worker picked the run up within "
            f"{settings.LAB_QUEUED_TIMEOUT_SECONDS:g} s (is a Celery worker "
            "running?)"
        )

    def test_a_run_whose_aggregation_was_lost_is_finalized(self):
        run = RunFactory(status=Status.RUNNING, started_at=timezone.now())
        ReplicationFactory(run=run, status=Status.SUCCEEDED, summary={"lost_work": 5.0})

        assert services.runs_sweep_stale() == [run.pk]

        run.refresh_from_db()
        assert run.status == Status.SUCCEEDED
        assert run.aggregate[0]["metrics"]["lost_work"] == {
            "mean": 5.0,
            "ci95": 0.0,
            "min": 5.0,
            "max": 5.0,
            "n": 1,
        }

    def test_healthy_runs_are_left_alone(self):
        run = RunFactory(status=Status.RUNNING, started_at=timezone.now())
        ReplicationFactory(run=run, status=Status.RUNNING, attempt=1, heartbeat_at=timezone.now())
        queued = RunFactory(status=Status.QUEUED)

        assert services.runs_sweep_stale() == []

        assert Run.objects.get(pk=run.pk).status == Status.RUNNING
        assert Run.objects.get(pk=queued.pk).status == Status.QUEUED


def test_replications_of_several_runs_aggregate_per_variant_with_confidence():
    run = RunFactory(status=Status.RUNNING)
    for replication, lost in enumerate([10.0, 20.0, 30.0]):
        ReplicationFactory(
            run=run,
            replication=replication,
            status=Status.SUCCEEDED,
            preemption="pod",
            placement="MostAllocated",
            summary={"lost_work": lost, "goodput": None},
        )

    assert services.run_finalize(run_id=run.pk) is Outcome.DONE

    run.refresh_from_db()
    mean, half = confidence_interval([10.0, 20.0, 30.0])
    metrics = run.aggregate[0]["metrics"]
    assert metrics["lost_work"] == {"mean": mean, "ci95": half, "min": 10.0, "max": 30.0, "n": 3}
    assert metrics["goodput"] == {"mean": None, "ci95": None, "min": None, "max": None, "n": 0}
    assert Replication.objects.filter(run=run).count() == 3


def _big_spec() -> sc.ExperimentSpec:
    """About 45,000 events (70,000 before a segment's periodic checkpoint writes became one
    row): 3,000 workloads through a 64-node cluster over three days."""
    return sc.parse_spec(
        {
            "name": "big",
            "horizonSeconds": 3 * 86400,
            "cluster": {"nodePools": [{"name": "p", "count": 64, "gpus": 8}]},
            "priorityClasses": [
                {"name": "low", "value": 10, "globalDefault": True},
                {"name": "high", "value": 1000},
            ],
            "workloads": [
                {
                    "name": f"w{i}",
                    "gpus": 1 + i % 4,
                    "members": 1 + i % 3,
                    "arrival": i * 60,
                    "durationSeconds": 1800 + (i * 37) % 3600,
                    "priorityClassName": "high" if i % 7 == 0 else "low",
                    "checkpoint": {"intervalSeconds": 600},
                }
                for i in range(3000)
            ],
        }
    )


@pytest.mark.slow
def test_a_big_run_stores_its_whole_event_log_and_deletes_it_whole(alice, alice_client):
    spec = _big_spec()
    experiment = ExperimentFactory(owner=alice, spec=spec.model_dump(mode="json", by_alias=True))
    replication = ReplicationFactory(run__experiment=experiment, variant="default")

    services.replication_execute(replication_id=replication.pk)

    expected = sc.simulate(spec, "default", 0).events
    replication.refresh_from_db()
    assert len(expected) > 40_000
    log = stored_events(replication)
    assert replication.event_count == len(log) == len(expected)
    last = log[-1]
    assert (last.seq, last.time, last.reason) == (
        len(expected) - 1,
        expected[-1].time,
        expected[-1].reason,
    )
    page = alice_client.get(
        reverse("experiments:replication-events", args=[replication.run_id, replication.pk]),
        {"reason": "Preempted"},
    )
    preempted = sum(e.reason == "Preempted" for e in expected)
    assert f"{preempted:,} event{'s' if preempted != 1 else ''}" in page.content.decode()

    experiment.delete()

    assert Replication.objects.count() == Run.objects.count() == 0


# ------------------------------------------------------------ guard rails and faults
def test_a_simulation_out_of_memory_fails_its_run_at_once_with_the_reason(
    experiment, alice, monkeypatch, settings, django_capture_on_commit_callbacks
):
    settings.LAB_WORKER_MEMORY_LIMIT_MB = 900

    def out_of_memory(*args, **kwargs):
        raise MemoryError

    monkeypatch.setattr(execution.sc, "simulate", out_of_memory)

    run = _enqueue(experiment, alice, django_capture_on_commit_callbacks, execute=True)

    assert run.status == Status.FAILED
    assert run.error == (
        "variant 'grace-300s' replication 0 ran out of memory: the simulation needed more "
        "than the worker's cap of 900 MB (LAB_WORKER_MEMORY_LIMIT_MB); make the spec smaller "
        "(fewer pods, nodes or days)"
    )
    assert list(run.replications.values_list("attempt", flat=True)) == [1, 0]


def _flagging(flags: list[bool], original):
    """``original``, with an entry in ``flags`` while it runs (what a watcher asks to
    tell the task's own calls from the enqueue's and the pages')."""

    def call(*args, **kwargs):
        flags.append(True)
        try:
            return original(*args, **kwargs)
        finally:
            flags.pop()

    return call


def test_a_task_parses_simulates_derives_and_encodes_with_the_collector_paused(
    experiment, alice, monkeypatch, django_capture_on_commit_callbacks
):
    """Every phase of a task's work runs with the cyclic collector paused (on the openb
    trace its passes over the spec and the log took half of the timeline's and the
    encoding's time), from the claim and the one read of the run's frozen spec (the
    task that parses it decodes it), through the heartbeat in the middle to the store;
    it is on again once the task is done, and again after a task whose simulation ran
    out of memory."""
    import gc

    seen: dict[str, list[bool]] = {}
    tasks: list[bool] = []  # an entry while a task claims its row or works (_claim, _run)

    def watched(name, original):
        def call(*args, **kwargs):
            if tasks:  # the enqueue and the aggregation parse the spec too
                seen.setdefault(name, []).append(gc.isenabled())
            return original(*args, **kwargs)

        return call

    monkeypatch.setattr(execution, "_run", _flagging(tasks, execution._run))
    monkeypatch.setattr(execution, "_claim", _flagging(tasks, execution._claim))
    spec_column = Run._meta.get_field("spec")
    monkeypatch.setattr(spec_column, "from_db_value", watched("spec", spec_column.from_db_value))
    monkeypatch.setattr(execution.sc, "parse_spec", watched("parse", sc.parse_spec))
    monkeypatch.setattr(execution.sc, "simulate", watched("simulate", sc.simulate))
    monkeypatch.setattr(
        execution.core_timeline, "build", watched("timeline", execution.core_timeline.build)
    )
    monkeypatch.setattr(
        execution, "encode_event_log", watched("encode", execution.encode_event_log)
    )
    monkeypatch.setattr(execution, "_set_result", watched("store", execution._set_result))
    monkeypatch.setattr(execution, "_parsed", {})  # not parsed by an earlier test
    assert gc.isenabled()

    run = _enqueue(experiment, alice, django_capture_on_commit_callbacks, execute=True)

    assert run.status == Status.SUCCEEDED
    assert set(seen) == {"spec", "parse", "simulate", "timeline", "encode", "store"}
    assert len(seen.pop("parse")) == 1, "the worker parses a run's frozen spec once"
    assert seen.pop("spec") == [False], "the worker decodes a run's frozen spec once, paused"
    assert all(len(calls) >= run.replications.count() for calls in seen.values()), seen
    assert not any(flag for calls in seen.values() for flag in calls), seen
    assert gc.isenabled(), "the collector was not given back after the task"

    def out_of_memory(*args, **kwargs):
        raise MemoryError

    monkeypatch.setattr(execution.sc, "simulate", out_of_memory)
    failed = _enqueue(experiment, alice, django_capture_on_commit_callbacks, execute=True)
    assert failed.status == Status.FAILED
    assert gc.isenabled(), "a task that ran out of memory kept the collector off"


def test_a_worker_parses_a_frozen_spec_once_and_resolves_each_variant_once(
    experiment, alice, monkeypatch, django_capture_on_commit_callbacks
):
    """A worker process keeps the last frozen spec it parsed and the last variant it
    resolved, by the document's content: a run's replications (variant by variant)
    parse it once and resolve each variant once, with the results of fresh parses; an
    edited spec (a new run) is parsed again, never served the old one."""
    parses: list[int] = []
    resolves: list[str] = []
    parse, resolve = sc.parse_spec, sc.resolve_variant
    inside: list[bool] = []  # while a task simulates (the enqueue and the pages parse too)

    def counting_parse(document, **kwargs):
        if inside:
            parses.append(document.get("replications"))
        return parse(document, **kwargs)

    def counting_resolve(spec, variant, **kwargs):
        if inside:
            resolves.append(variant)
        return resolve(spec, variant, **kwargs)

    monkeypatch.setattr(execution, "_simulate", _flagging(inside, execution._simulate))
    monkeypatch.setattr(execution, "_parsed", {})
    monkeypatch.setattr(execution, "_resolved", {})
    experiment.spec = {**experiment.spec, "replications": 2}
    experiment.save()
    with monkeypatch.context() as patched:
        patched.setattr(execution.sc, "parse_spec", counting_parse)
        patched.setattr(execution.sc, "resolve_variant", counting_resolve)
        run = _enqueue(experiment, alice, django_capture_on_commit_callbacks, execute=True)
    assert run.status == Status.SUCCEEDED
    names = sc.variant_names(sc.parse_spec(run.spec))
    assert run.replications.count() == 2 * len(names) >= 4
    assert parses.count(2) == 1
    assert resolves == names  # each variant once, in the run's order
    spec = sc.parse_spec(run.spec)
    for replication in run.replications.order_by("variant_index", "replication"):
        fresh = sc.simulate(spec, replication.variant, replication.replication)
        assert replication.summary == fresh.summary
        assert replication.event_count == len(fresh.events)

    experiment.spec = {**experiment.spec, "replications": 1, "horizonSeconds": 2000}
    experiment.save()
    parses.clear()
    with monkeypatch.context() as patched:
        patched.setattr(execution.sc, "parse_spec", counting_parse)
        edited = _enqueue(experiment, alice, django_capture_on_commit_callbacks, execute=True)
    assert edited.status == Status.SUCCEEDED
    assert parses.count(1) == 1
    first = edited.replications.order_by("variant_index").first()
    fresh = sc.simulate(sc.parse_spec(edited.spec), first.variant, 0)
    assert first.summary == fresh.summary
    assert first.event_count == len(fresh.events)


def test_a_worker_reads_a_frozen_spec_only_to_parse_it(
    experiment, alice, monkeypatch, django_capture_on_commit_callbacks
):
    """The claim reads the run without its frozen spec (megabytes of JSON for a recorded
    cluster, decoded and hashed again on every task: 0.13 s of an openb task): the run's
    ``spec_digest``, written with the spec, tells a worker whether it already parsed it.
    Across a run's tasks the spec is read once, by the first; a row from before the digest
    existed (empty) is read and hashed, and still simulated from its own spec."""
    from django.db import connection
    from django.test.utils import CaptureQueriesContext

    spec_reads: list[str] = []
    execute = services.replication_execute

    def watched(**kwargs):
        with CaptureQueriesContext(connection) as queries:
            outcome = execute(**kwargs)
        spec_reads.extend(
            q["sql"] for q in queries.captured_queries if '"experiments_run"."spec"' in q["sql"]
        )
        return outcome

    monkeypatch.setattr(services, "replication_execute", watched)
    monkeypatch.setattr(execution, "_parsed", {})
    monkeypatch.setattr(execution, "_resolved", {})
    experiment.spec = {**experiment.spec, "replications": 2}
    experiment.save()

    run = _enqueue(experiment, alice, django_capture_on_commit_callbacks, execute=True)

    assert run.status == Status.SUCCEEDED
    assert run.replications.count() >= 4
    assert run.spec_digest == spec_digest_of(run.spec) != ""  # as read back, too
    assert len(spec_reads) == 1, spec_reads

    # a row from before the digest: read, hashed, parsed from its own spec
    experiment.spec = {**experiment.spec, "replications": 1, "horizonSeconds": 2000}
    experiment.save()
    spec_reads.clear()
    with django_capture_on_commit_callbacks(execute=False) as callbacks:
        legacy = services.run_enqueue(experiment=experiment, user=alice)
    Run.objects.filter(pk=legacy.pk).update(spec_digest="")
    for callback in callbacks:
        callback()
    legacy.refresh_from_db()
    assert legacy.status == Status.SUCCEEDED
    assert legacy.spec_digest == ""
    assert len(spec_reads) == legacy.replications.count()  # no digest: read every time
    first = legacy.replications.order_by("variant_index").first()
    fresh = sc.simulate(sc.parse_spec(legacy.spec), first.variant, 0)
    assert first.summary == fresh.summary
    assert first.event_count == len(fresh.events)


def test_a_run_s_spec_digest_is_written_whenever_its_spec_is(experiment, alice):
    """The digest and the spec never disagree: creating a run, saving it whole or saving
    its spec alone writes the digest of the spec saved; saves of other columns leave it."""
    run = Run.objects.create(experiment=experiment, created_by=alice, spec={"b": 1, "a": 1})
    assert run.spec_digest == spec_digest_of({"a": 1, "b": 1})  # whatever the keys' order
    run.spec = {"a": 2}
    run.save(update_fields=["spec"])
    run.refresh_from_db()
    assert run.spec_digest == spec_digest_of({"a": 2})
    run.spec = {"a": 3}
    run.save()
    assert Run.objects.get(pk=run.pk).spec_digest == spec_digest_of({"a": 3})
    progress_only = Run.objects.defer("spec").get(pk=run.pk)
    progress_only.progress = 0.5
    progress_only.save(update_fields=["progress"])
    assert Run.objects.get(pk=run.pk).spec_digest == spec_digest_of({"a": 3})
    assert spec_digest_of({"a": 2}) != spec_digest_of({"a": 3})


def test_the_store_reads_neither_the_frozen_spec_nor_the_records_as_dicts(
    experiment, alice, monkeypatch, django_capture_on_commit_callbacks
):
    """While it holds the run's lock, the store reads only the columns its checks need:
    not the run's frozen spec (megabytes of JSON for a recorded cluster: 0.76 s of an
    openb task's store was decoding it) nor the replication's own stored columns, which
    it replaces. The result columns come from the result itself, not from ``to_dict``,
    which turns every per-workload record into a dict (1.2 s on openb). What is stored
    is still the whole result."""
    from django.db import connection
    from django.test.utils import CaptureQueriesContext

    storing: list[bool] = []
    reads: list[str] = []
    store = execution._store

    def watched_store(*args, **kwargs):
        storing.append(True)
        try:
            with CaptureQueriesContext(connection) as queries:
                store(*args, **kwargs)
            reads.extend(
                q["sql"] for q in queries.captured_queries if q["sql"].startswith("SELECT")
            )
        finally:
            storing.pop()

    to_dict = sc.ReplicationResult.to_dict

    def no_dicts_while_storing(self, **kwargs):
        assert not storing, "the store turned the result into dicts"
        return to_dict(self, **kwargs)

    monkeypatch.setattr(execution, "_store", watched_store)
    monkeypatch.setattr(sc.ReplicationResult, "to_dict", no_dicts_while_storing)

    run = _enqueue(experiment, alice, django_capture_on_commit_callbacks, execute=True)

    assert run.status == Status.SUCCEEDED
    assert reads
    for column in ('"experiments_run"."spec"', '"experiments_run"."aggregate"'):
        assert not any(column in sql for sql in reads), column
    for column in ("timeline", "decisions", "summary", "event_log"):
        assert not any(f'"experiments_replication"."{column}"' in sql for sql in reads), column
    replication = run.replications.order_by("variant_index").first()
    expected = sc.simulate(sc.parse_spec(run.spec), replication.variant, 0)
    assert replication.summary == expected.summary
    assert replication.decisions == json.loads(
        json.dumps([d.as_dict() for d in expected.decisions])
    )
    assert replication.seed == expected.seed
    assert replication.events_processed == expected.events_processed
    assert replication.timeline["spans"]


def test_a_simulation_past_its_deadline_fails_its_run_saying_which_setting(
    experiment, alice, monkeypatch, settings, django_capture_on_commit_callbacks
):
    settings.LAB_SIMULATION_DEADLINE_SECONDS = 2.0
    clock = iter([100.0, 100.5, 103.0])
    monkeypatch.setattr(execution.time, "monotonic", lambda: next(clock, 200.0))

    def reports_progress(spec, variant, replication, *, progress, **kwargs):
        progress(0.1)  # 0.5 s in: fine
        progress(0.2)  # 3 s in: past the deadline
        raise AssertionError("the deadline should have stopped the simulation")

    monkeypatch.setattr(execution.sc, "simulate", reports_progress)

    run = _enqueue(experiment, alice, django_capture_on_commit_callbacks, execute=True)

    assert run.status == Status.FAILED
    assert run.error == (
        "variant 'grace-300s' replication 0 took longer than the simulation "
        "deadline of 2 s (LAB_SIMULATION_DEADLINE_SECONDS)"
    )


@pytest.mark.parametrize("error", [OperationalError, InterfaceError])
def test_a_database_blip_while_storing_is_retried_not_failed(
    experiment, alice, spec, monkeypatch, settings, django_capture_on_commit_callbacks, error
):
    settings.LAB_DB_RETRY_SECONDS = 30.0
    monkeypatch.setattr(execution.time, "sleep", lambda seconds: None)
    real_set_result = execution._set_result
    calls = []

    def blip_twice(replication, result):
        calls.append(replication.pk)
        if len(calls) <= 2:
            raise error("server closed the connection unexpectedly")
        real_set_result(replication, result)

    monkeypatch.setattr(execution, "_set_result", blip_twice)

    run = _enqueue(experiment, alice, django_capture_on_commit_callbacks, execute=True)

    assert run.status == Status.SUCCEEDED, run.error
    assert run.error == ""
    assert len(calls) == 2 + len(sc.variant_names(spec))
    assert list(run.replications.values_list("attempt", flat=True)) == [1, 1]
    expected = sc.simulate(spec, sc.variant_names(spec)[0], 0)
    assert len(stored_events(run.replications.first())) == len(expected.events)


def test_a_database_down_longer_than_the_retries_hands_the_task_back(
    experiment, alice, monkeypatch, settings, django_capture_on_commit_callbacks
):
    """Past LAB_DB_RETRY_SECONDS the task retries later (with back-off); the run is not
    failed, and the replication stays claimed until that retry (or a takeover) stores it."""
    settings.LAB_DB_RETRY_SECONDS = 0.0
    run = _enqueue(experiment, alice, django_capture_on_commit_callbacks, execute=False)
    replication = run.replications.first()

    def down(replication, result):
        raise OperationalError("could not connect to server")

    monkeypatch.setattr(execution, "_set_result", down)

    assert services.replication_execute(replication_id=replication.pk) is Outcome.DATABASE_DOWN
    run.refresh_from_db()
    replication.refresh_from_db()
    assert run.status == Status.RUNNING
    assert run.error == ""
    assert (replication.status, replication.attempt) == (Status.RUNNING, 1)


def test_a_claim_with_the_database_down_is_retried_by_the_task_with_back_off(
    experiment, alice, monkeypatch, django_capture_on_commit_callbacks
):
    from experiments import tasks

    run = _enqueue(experiment, alice, django_capture_on_commit_callbacks, execute=False)
    replication = run.replications.first()
    real_claim = execution._claim
    outcomes = iter([OperationalError("the database system is starting up"), None])

    def claim(replication_id):
        failure = next(outcomes)
        if failure:
            raise failure
        return real_claim(replication_id)

    monkeypatch.setattr(execution, "_claim", claim)
    countdowns = []
    real_retry = tasks.simulate_replication.retry

    def retry(*args, countdown=None, **kwargs):
        countdowns.append(countdown)
        return real_retry(*args, countdown=countdown, **kwargs)

    monkeypatch.setattr(tasks.simulate_replication, "retry", retry)

    tasks.simulate_replication.apply(args=[replication.pk], throw=False)  # Retry: ran inline

    replication.refresh_from_db()
    assert countdowns == [2.0]
    assert (replication.status, replication.attempt) == (Status.SUCCEEDED, 1)
    assert [tasks.database_backoff(n) for n in range(7)] == [2, 4, 8, 16, 32, 60, 60]


def test_a_heartbeat_lost_to_a_database_blip_does_not_stop_the_simulation(
    experiment, alice, monkeypatch, settings, django_capture_on_commit_callbacks
):
    settings.LAB_PROGRESS_EVERY_SECONDS = 0.0
    real = sc.simulate
    real_beat = execution._ProgressReporter.beat
    beats = []

    def flaky_beat(self, fraction=None):
        beats.append(fraction)
        if len(beats) == 1:
            raise OperationalError("terminating connection due to administrator command")
        real_beat(self, fraction)

    def reports(spec, variant, replication, *, progress, **kwargs):
        progress(0.5)
        return real(spec, variant, replication, **kwargs)

    monkeypatch.setattr(execution._ProgressReporter, "beat", flaky_beat)
    monkeypatch.setattr(execution.sc, "simulate", reports)

    run = _enqueue(experiment, alice, django_capture_on_commit_callbacks, execute=True)

    assert run.status == Status.SUCCEEDED, run.error
