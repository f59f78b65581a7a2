"""Reads under load (issue #10 §4): exports written once to files and served from them,
a per-user cap on exports being built, hot reads from the shared cache, invalidated
when the run changes state and never served past the visibility rule, and a run's
files removed with it. The load itself: ``tests/api/test_load.py`` and
``bench/bench_api_load.py``."""

from __future__ import annotations

import csv
import io
import os
import time
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path

import pytest
from django.core.cache import cache
from django.db import connection, transaction
from django.db.models import Sum
from django.test.utils import CaptureQueriesContext

from experiments import selectors_api, selectors_cache, services
from experiments.api import exports
from experiments.models import Replication, Run, Status
from experiments.services import exports as export_services
from tests.api.conftest import errors
from tests.factories import ReplicationFactory, RunFactory


def url(run: Run, tail: str) -> str:
    return f"/api/v1/runs/{run.pk}/{tail}"


def body(response) -> bytes:
    return b"".join(response.streaming_content)


def event_queries(captured: CaptureQueriesContext) -> list[str]:
    return [q["sql"] for q in captured.captured_queries if "experiments_runevent" in q["sql"]]


@pytest.fixture
def counted_event_reads(monkeypatch) -> list[int]:
    """How many times an export read the event log (each call is one full read)."""
    calls: list[int] = []
    original = selectors_api.run_event_rows

    def counting(**kwargs):
        calls.append(1)
        return original(**kwargs)

    monkeypatch.setattr(selectors_api, "run_event_rows", counting)
    return calls


@pytest.fixture
def queued_builds(monkeypatch) -> list[tuple]:
    """Export builds sent to the worker, held here instead of run: the build is "in
    progress" until the test runs it with ``build``."""
    sent: list[tuple] = []

    class Held:
        @staticmethod
        def delay(*args):
            sent.append(args)

    monkeypatch.setattr("experiments.tasks.build_export", Held)
    return sent


def build(args: tuple) -> str | None:
    run_id, token, table, fmt, filters, slot = args
    return export_services.export_build(
        run_id=run_id, task_token=token, table=table, fmt=fmt, filters=filters, slot=slot
    )


# ----------------------------------------------------------------- stored exports
def test_an_export_is_written_once_and_then_served_from_its_file(
    alice_api, finished_run, counted_event_reads, django_assert_max_num_queries
):
    first = alice_api.get(url(finished_run, "export/events.csv?reason=Preempted"))
    assert first.status_code == 200
    content = body(first)
    assert counted_event_reads == [1]

    with CaptureQueriesContext(connection) as captured, django_assert_max_num_queries(3):
        second = alice_api.get(url(finished_run, "export/events.csv?reason=Preempted"))
        again = body(second)

    assert second.status_code == 200
    assert again == content
    assert counted_event_reads == [1]  # not read again
    assert event_queries(captured) == []
    assert (
        second["Content-Disposition"] == f'attachment; filename="run-{finished_run.pk}-events.csv"'
    )
    assert "private" in second["Cache-Control"]
    rows = list(csv.DictReader(io.StringIO(again.decode())))
    assert rows
    assert {row["reason"] for row in rows} == {"Preempted"}


def test_each_filter_set_and_format_is_a_file_of_its_own(alice_api, finished_run):
    every = body(alice_api.get(url(finished_run, "export/events.csv")))
    preempted = body(alice_api.get(url(finished_run, "export/events.csv?reason=Preempted")))
    blank = body(alice_api.get(url(finished_run, "export/events.csv?reason=")))

    assert len(preempted) < len(every)
    assert blank == every  # an empty filter is no filter: the same file
    folder = exports.run_directory(run_id=finished_run.pk, task_token=finished_run.task_token)
    assert sorted(p.name for p in folder.iterdir()) == sorted(
        [
            exports.export_name(table="events", fmt="csv", filters={}),
            exports.export_name(table="events", fmt="csv", filters={"reason": "Preempted"}),
        ]
    )


def test_a_large_export_is_built_by_a_worker_once_while_clients_get_202(
    alice_api, finished_run, settings, queued_builds, counted_event_reads
):
    settings.LAB_EXPORT_INLINE_ROWS = 0  # every export counts as large

    first = alice_api.get(url(finished_run, "export/events.csv"))
    second = alice_api.get(url(finished_run, "export/events.csv"))

    for response in (first, second):
        assert response.status_code == 202
        assert int(response["Retry-After"]) >= 1
        assert response["Location"] == url(finished_run, "export/events.csv")
    assert len(queued_builds) == 1  # one build, however many ask
    assert counted_event_reads == []  # the request threads read no event

    build(queued_builds[0])
    ready = alice_api.get(url(finished_run, "export/events.csv"))
    assert ready.status_code == 200
    assert body(ready).startswith(b"variant,replication,seq,time,reason")
    assert counted_event_reads == [1]


def test_a_user_may_have_only_so_many_exports_being_built(
    alice_api, bob_api, finished_run, settings, queued_builds
):
    settings.LAB_EXPORT_INLINE_ROWS = 0
    settings.LAB_EXPORT_BUILDS_PER_USER = 1

    assert alice_api.get(url(finished_run, "export/events.csv")).status_code == 202
    refused = alice_api.get(url(finished_run, "export/events.parquet"))
    assert refused.status_code == 429
    assert int(refused["Retry-After"]) >= 1
    assert "being prepared" in errors(refused)[0]["message"]
    # the cap is per user: Bob (shared with) may start one of his own
    assert bob_api.get(url(finished_run, "export/events.json")).status_code == 202
    assert len(queued_builds) == 2

    build(queued_builds[0])  # Alice's build is done: her slot is free again
    assert alice_api.get(url(finished_run, "export/events.parquet")).status_code == 202
    assert alice_api.get(url(finished_run, "export/events.csv")).status_code == 200


def test_a_vanished_build_lets_go_of_its_lock_and_slot_when_they_expire(
    alice_api, finished_run, settings, queued_builds
):
    settings.LAB_EXPORT_INLINE_ROWS = 0
    settings.LAB_EXPORT_BUILDS_PER_USER = 1
    assert alice_api.get(url(finished_run, "export/events.csv")).status_code == 202
    assert alice_api.get(url(finished_run, "export/events.json")).status_code == 429
    export = export_services.export_of(run=finished_run, table="events", fmt="csv", filters={})
    slot = queued_builds[0][5]
    assert cache.get(slot) == export.lock_key
    cache.delete_many([export.lock_key, slot])  # what LAB_EXPORT_BUILD_SECONDS does to both

    assert alice_api.get(url(finished_run, "export/events.json")).status_code == 202
    assert alice_api.get(url(finished_run, "export/events.csv")).status_code == 429  # cap 1
    assert len(queued_builds) == 2


def test_a_build_keeps_its_lock_and_slot_fresh_and_lets_go_at_the_end(
    alice_api, finished_run, settings, queued_builds, monkeypatch
):
    settings.LAB_EXPORT_INLINE_ROWS = 0
    assert alice_api.get(url(finished_run, "export/events.csv")).status_code == 202
    export = export_services.export_of(run=finished_run, table="events", fmt="csv", filters={})
    slot = queued_builds[0][5]
    touched: list[str] = []
    original_touch = cache.touch
    monkeypatch.setattr(export_services, "HEARTBEAT_ROWS", 10)
    monkeypatch.setattr(
        cache,
        "touch",
        lambda key, timeout=None: touched.append(key) or original_touch(key, timeout),
    )

    build(queued_builds[0])

    rows = finished_run.replications.aggregate(n=Sum("event_count"))["n"]
    assert touched.count(export.lock_key) == 1 + rows // 10
    assert touched.count(slot) == touched.count(export.lock_key)
    assert cache.get(export.lock_key) is None
    assert cache.get(slot) is None


def test_deleting_the_experiment_removes_its_runs_files(
    alice, alice_api, finished_run, django_capture_on_commit_callbacks
):
    assert alice_api.get(url(finished_run, "export/events.csv")).status_code == 200
    assert alice_api.get(url(finished_run, "export/summary.parquet")).status_code == 200
    folder = exports.run_directory(run_id=finished_run.pk, task_token=finished_run.task_token)
    assert len(list(folder.iterdir())) == 2

    with django_capture_on_commit_callbacks(execute=True):
        services.experiment_delete(experiment=finished_run.experiment)

    assert not folder.exists()


def test_deleting_over_the_api_removes_the_files_too(
    alice_api, finished_run, django_capture_on_commit_callbacks
):
    assert alice_api.get(url(finished_run, "export/workloads.json")).status_code == 200
    folder = exports.run_directory(run_id=finished_run.pk, task_token=finished_run.task_token)
    assert folder.exists()

    with django_capture_on_commit_callbacks(execute=True):
        response = alice_api.delete(f"/api/v1/experiments/{finished_run.experiment_id}/")

    assert response.status_code == 204
    assert not folder.exists()


def test_a_rolled_back_delete_keeps_the_files(alice_api, finished_run):
    assert alice_api.get(url(finished_run, "export/summary.csv")).status_code == 200
    folder = exports.run_directory(run_id=finished_run.pk, task_token=finished_run.task_token)
    pk = finished_run.pk

    def delete_then_fail() -> None:
        with transaction.atomic():
            finished_run.delete()
            raise RuntimeError("the delete fails later in the same transaction")

    with pytest.raises(RuntimeError):
        delete_then_fail()

    assert Run.objects.filter(pk=pk).exists()
    assert folder.exists()


def test_the_sweep_removes_folders_no_run_owns_and_dead_partial_files(
    alice_api, finished_run, settings
):
    """A crash between a delete's commit and its file removal, or a recreated database,
    leaves folders nothing would serve or delete: the watchdog's sweep takes them."""
    assert alice_api.get(url(finished_run, "export/summary.csv")).status_code == 200
    kept = exports.run_directory(run_id=finished_run.pk, task_token=finished_run.task_token)
    orphan = exports.run_directory(run_id=finished_run.pk + 1000, task_token="gone")
    old_token = exports.run_directory(run_id=finished_run.pk, task_token="an-older-database")
    for folder in (orphan, old_token):
        folder.mkdir(parents=True)
        (folder / "events-v1.csv").write_text("time,reason\n")
    dead = kept / ".events-v1.csv.abc.tmp"
    fresh = kept / ".events-v1.csv.def.tmp"
    dead.write_text("half")
    fresh.write_text("half")
    now = time.time()
    long_ago = now - settings.LAB_EXPORT_BUILD_SECONDS - 5
    os.utime(dead, (long_ago, long_ago))
    stranger = Path(settings.LAB_EXPORT_DIR) / "notes.txt"  # not ours to judge
    stranger.write_text("kept")

    removed = export_services.exports_sweep(now=now)

    assert sorted(removed) == sorted([orphan.name, old_token.name, f"{kept.name}/{dead.name}"])
    assert not orphan.exists()
    assert not old_token.exists()
    assert not dead.exists()
    assert fresh.exists()
    assert stranger.exists()
    assert (kept / "summary-v1.csv").exists()
    assert alice_api.get(url(finished_run, "export/summary.csv")).status_code == 200


def test_the_watchdog_sweeps_export_files_at_most_once_per_period(monkeypatch, settings, tmp_path):
    from experiments import tasks

    cache.delete("export-sweep")
    sweeps: list[int] = []
    monkeypatch.setattr(tasks, "exports_sweep", lambda: sweeps.append(1) or [])
    settings.LAB_EXPORT_SWEEP_SECONDS = 3600

    tasks.sweep_stale_runs()
    tasks.sweep_stale_runs()

    assert sweeps == [1]
    cache.delete("export-sweep")
    tasks.sweep_stale_runs()
    assert sweeps == [1, 1]


def test_the_sweep_of_a_missing_export_folder_does_nothing(settings, tmp_path):
    settings.LAB_EXPORT_DIR = tmp_path / "never-made"

    assert export_services.exports_sweep() == []


def test_a_deleted_runs_build_writes_nothing(alice, finished_run, settings):
    token, pk = finished_run.task_token, finished_run.pk
    finished_run.delete()

    assert (
        export_services.export_build(
            run_id=pk,
            task_token=token,
            table="events",
            fmt="csv",
            filters={},
            slot=f"export-slot:{alice.pk}:0",
        )
        is None
    )
    assert not exports.run_directory(run_id=pk, task_token=token).exists()


# ------------------------------------------------------------------- cached reads
CACHED_READS = ["", "summary/", "events/?page_size=10", "events/?reason=Preempted", "workloads/"]


@pytest.mark.parametrize("tail", CACHED_READS)
def test_a_hot_read_is_answered_from_the_cache_the_second_time(
    alice_api, bob_api, finished_run, tail, django_assert_max_num_queries
):
    first = alice_api.get(url(finished_run, tail))
    assert first.status_code == 200

    with CaptureQueriesContext(connection) as captured, django_assert_max_num_queries(2):
        second = bob_api.get(url(finished_run, tail))  # another user who may see it

    assert second.status_code == 200
    assert second.json() == first.json()
    assert event_queries(captured) == []
    assert not [
        q
        for q in captured.captured_queries
        if "experiments_replication" in q["sql"].split("FROM")[1].split()[0]
    ]
    assert "private" in second["Cache-Control"]


@pytest.mark.parametrize("tail", [*CACHED_READS, "export/events.csv"])
def test_a_warm_cache_answers_nobody_who_may_not_see_the_run(
    alice_api, charlie_api, bob, bob_api, finished_run, tail
):
    assert alice_api.get(url(finished_run, tail)).status_code == 200  # warm

    assert charlie_api.get(url(finished_run, tail)).status_code == 404
    finished_run.experiment.shared_with.remove(bob)
    assert bob_api.get(url(finished_run, tail)).status_code == 404


def test_chart_data_is_cached_and_checked_against_the_viewer(
    client, alice, charlie, finished_run, django_assert_max_num_queries
):
    replication = finished_run.replications.first()
    path = f"/runs/{finished_run.pk}/charts/events.json?replication={replication.pk}"
    client.force_login(alice)
    first = client.get(path)
    assert first.status_code == 200

    with CaptureQueriesContext(connection) as captured:
        second = client.get(path)
    assert second.json() == first.json()
    assert event_queries(captured) == []

    client.force_login(charlie)
    assert client.get(path).status_code == 404


def test_a_change_of_state_is_seen_at_once_even_with_a_long_cache(alice_api, experiment, settings):
    settings.LAB_READ_CACHE_ACTIVE_SECONDS = 3600  # only the state may invalidate
    run = RunFactory(experiment=experiment, status=Status.RUNNING)
    rep = ReplicationFactory(run=run, status=Status.RUNNING, progress=0.25)

    assert alice_api.get(url(run, "")).json()["progress"] == 0.25
    Replication.objects.filter(pk=rep.pk).update(progress=0.75)  # same state: cached
    assert alice_api.get(url(run, "")).json()["progress"] == 0.25

    assert services.run_cancel(run=run)
    after = alice_api.get(url(run, "")).json()
    assert after["status"] == "cancelled"
    assert after["variants"][0]["status"] == "cancelled"


def test_an_active_runs_progress_is_cached_only_briefly(alice_api, experiment, settings):
    settings.LAB_READ_CACHE_ACTIVE_SECONDS = 0  # off: every poll sees the database
    run = RunFactory(experiment=experiment, status=Status.RUNNING)
    rep = ReplicationFactory(run=run, status=Status.RUNNING, progress=0.25)

    assert alice_api.get(url(run, "")).json()["progress"] == 0.25
    Replication.objects.filter(pk=rep.pk).update(progress=0.75)
    assert alice_api.get(url(run, "")).json()["progress"] == 0.75


def test_requests_that_miss_together_build_the_entry_once(finished_run):
    builds: list[int] = []

    def slow_build() -> dict[str, int]:
        builds.append(1)
        time.sleep(0.3)
        return {"answer": 42}

    with ThreadPoolExecutor(max_workers=6) as pool:
        answers = list(
            pool.map(
                lambda _: selectors_cache.run_cached(
                    run=finished_run, kind="test-slow", build=slow_build
                ),
                range(6),
            )
        )

    assert answers == [{"answer": 42}] * 6
    assert builds == [1]
