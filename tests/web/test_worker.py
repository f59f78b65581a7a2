"""Real Celery worker processes against the real database and broker.

These prove what mocks cannot: a run's chord completes on a worker in another process,
and a worker SIGKILLed mid-task never leaves its run "running" — another delivery
completes it (Redis: acks_late + visibility timeout) or the sweep fails it with the
reason (a broker that loses unacknowledged messages: the filesystem transport).
"""

from __future__ import annotations

import os
import signal
from datetime import timedelta
from pathlib import Path

import pytest

import scheduler_core as sc
from experiments.models import Replication, Run, Status
from tests.factories import ExperimentFactory, stored_events
from tests.web.live import Stack, live_stack, wait_for

pytestmark = [pytest.mark.worker, pytest.mark.slow, pytest.mark.django_db(transaction=True)]


@pytest.fixture
def stack(tmp_path):
    yield from live_stack(tmp_path)


def _start_run(stack: Stack, experiment_id: int) -> Run:
    run_id = int(stack.manage("start_run", str(experiment_id)).strip())
    return Run.objects.get(pk=run_id)


def _status(run: Run) -> str:
    run.refresh_from_db()
    return run.status


def test_a_worker_process_runs_every_replication_then_aggregates(alice, stack):
    experiment = ExperimentFactory(owner=alice)
    stack.start_worker(name="w1", concurrency=2)

    run = _start_run(stack, experiment.pk)
    wait_for(
        lambda: _status(run) == Status.SUCCEEDED, timeout=90, what="the run to succeed", stack=stack
    )

    spec = sc.parse_spec(experiment.spec)
    expected = [sc.simulate(spec, name, 0) for name in sc.variant_names(spec)]
    assert [v["variant"] for v in run.aggregate] == sc.variant_names(spec)
    assert [v["metrics"] for v in run.aggregate] == [sc.aggregate([r]) for r in expected]
    replications = list(run.replications.order_by("variant_index"))
    assert [r.status for r in replications] == [Status.SUCCEEDED, Status.SUCCEEDED]
    assert [r.attempt for r in replications] == [1, 1]
    assert [len(stored_events(r)) for r in replications] == [len(r.events) for r in expected]
    assert run.error == ""
    assert run.progress == 1.0


def test_a_worker_killed_mid_task_never_leaves_the_run_running(alice, stack):
    experiment = ExperimentFactory(owner=alice)
    first = stack.start_worker(
        name="doomed", SLOW_SIMULATION_SECONDS="30", LAB_PROGRESS_EVERY_SECONDS="0.2"
    )
    run = _start_run(stack, experiment.pk)
    victim = wait_for(
        lambda: Replication.objects.filter(run=run, status=Status.RUNNING, progress__gt=0).first(),
        timeout=60,
        what="a replication to be running",
        stack=stack,
    )

    stack.kill(first)

    victim.refresh_from_db()
    assert victim.status == Status.RUNNING
    assert _status(run) == Status.RUNNING
    if stack.broker_kind == "redis":
        _a_second_worker_completes_the_run(stack, run, victim)
    else:
        _the_sweep_fails_the_run_with_the_reason(stack, run, victim)


def test_a_pool_process_killed_mid_task_hands_the_task_back(alice, stack):
    """Only the child dies (out of memory, say): the worker sees it lost, rejects the
    message back to the queue (reject_on_worker_lost) and a new child completes it."""
    experiment = ExperimentFactory(owner=alice)
    worker = stack.start_worker(
        name="survivor",
        SLOW_SIMULATION_SECONDS="4",
        LAB_PROGRESS_EVERY_SECONDS="0.2",
        LAB_HEARTBEAT_STALE_SECONDS="2",
    )
    run = _start_run(stack, experiment.pk)
    victim = wait_for(
        lambda: Replication.objects.filter(run=run, status=Status.RUNNING, progress__gt=0).first(),
        timeout=60,
        what="a replication to be running",
        stack=stack,
    )

    children = Path(f"/proc/{worker.pid}/task/{worker.pid}/children").read_text().split()
    assert len(children) == 1
    os.kill(int(children[0]), signal.SIGKILL)

    wait_for(
        lambda: _status(run) == Status.SUCCEEDED,
        timeout=120,
        what="the handed-back task to complete the run",
        stack=stack,
    )
    victim.refresh_from_db()
    assert (victim.status, victim.attempt) == (Status.SUCCEEDED, 2)
    assert len(stored_events(victim)) == victim.event_count > 0
    assert worker.poll() is None


def test_a_simulation_past_the_memory_cap_fails_its_run_at_once_with_the_reason(alice, stack):
    """The pool process's RLIMIT_AS turns a runaway allocation into a MemoryError in the
    task: the run fails with the reason on the first attempt, nothing is redelivered into
    the next out-of-memory, and the worker (and its pool process) carry on."""
    experiment = ExperimentFactory(owner=alice)
    worker = stack.start_worker(
        name="capped", LAB_WORKER_MEMORY_LIMIT_MB="1500", HOG_MEMORY_MB="3000"
    )

    run = _start_run(stack, experiment.pk)
    wait_for(lambda: _status(run) == Status.FAILED, timeout=90, what="the run to fail", stack=stack)

    # Every replication hogs; whichever the broker delivered first fails the run (the
    # filesystem transport does not keep the order of the chord's messages).
    failed = {r.variant: r for r in run.replications.filter(status=Status.FAILED)}
    assert run.error in {
        f"variant '{variant}' replication 0 ran out of memory: the simulation needed "
        "more than the worker's cap of 1500 MB (LAB_WORKER_MEMORY_LIMIT_MB); make the spec "
        "smaller (fewer pods, nodes or days)"
        for variant in failed
    }
    first = failed[run.error.split("'")[1]]
    assert first.attempt == 1
    assert worker.poll() is None
    assert "WorkerLostError" not in stack.logs()


def test_a_simulation_past_its_deadline_fails_its_run_in_a_real_worker(alice, stack):
    experiment = ExperimentFactory(owner=alice)
    stack.start_worker(
        name="hurried",
        SLOW_SIMULATION_SECONDS="20",
        LAB_PROGRESS_EVERY_SECONDS="0.2",
        LAB_SIMULATION_DEADLINE_SECONDS="1",
    )

    run = _start_run(stack, experiment.pk)
    wait_for(lambda: _status(run) == Status.FAILED, timeout=60, what="the run to fail", stack=stack)

    assert run.error.endswith(
        "took longer than the simulation deadline of 1 s (LAB_SIMULATION_DEADLINE_SECONDS)"
    )
    assert run.finished_at - run.started_at < timedelta(seconds=10)


def _a_second_worker_completes_the_run(stack: Stack, run: Run, victim: Replication) -> None:
    """Redis keeps the unacknowledged message; after the visibility timeout a new
    worker gets it again, finds the old heartbeat stale, and takes the work over."""
    stack.start_worker(
        name="rescuer",
        SLOW_SIMULATION_SECONDS="1",
        CELERY_VISIBILITY_TIMEOUT="3",
        CELERY_UNACKED_RESTORE_INTERVAL="1",
        LAB_HEARTBEAT_STALE_SECONDS="2",
        LAB_WORKER_LOST_SECONDS="600",
    )
    wait_for(
        lambda: _status(run) == Status.SUCCEEDED,
        timeout=120,
        what="the redelivered task to complete the run",
        stack=stack,
    )
    victim.refresh_from_db()
    assert victim.status == Status.SUCCEEDED
    assert victim.attempt == 2
    assert len(stored_events(victim)) == victim.event_count > 0
    assert run.error == ""
    assert run.replications.filter(status=Status.SUCCEEDED).count() == run.replications.count()


def _the_sweep_fails_the_run_with_the_reason(stack: Stack, run: Run, victim: Replication) -> None:
    """The filesystem transport loses a message a killed worker held: nothing can
    complete that replication, so the watchdog fails the run and says why."""
    stack.start_worker(
        name="sweeper",
        beat=True,
        SLOW_SIMULATION_SECONDS="1",
        LAB_SWEEP_EVERY_SECONDS="1",
        LAB_WORKER_LOST_SECONDS="4",
    )
    wait_for(
        lambda: _status(run) == Status.FAILED,
        timeout=120,
        what="the sweep to fail the run",
        stack=stack,
    )
    assert run.error == (
        f"worker lost: variant '{victim.variant}' replication 0 sent no heartbeat for over "
        "4 s (attempt 1) and no other worker took it over"
    )
    victim.refresh_from_db()
    assert victim.status == Status.FAILED
    assert len(stored_events(victim)) == 0
