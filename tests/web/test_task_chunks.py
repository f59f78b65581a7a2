"""A run's replications sent as chunks (issue #17: the planner's 2,400 small replications
must not each pay a task round trip), with every replication still claimed, reported and
stored on its own. Tasks run inline (CELERY_TASK_ALWAYS_EAGER)."""

from __future__ import annotations

import scheduler_core as sc
from experiments import services, tasks
from experiments.models import Status
from experiments.services import Outcome


def test_a_run_of_few_replications_keeps_one_task_each_and_many_are_cut_evenly():
    assert tasks.replication_chunks([5, 3, 4], tasks=64) == [[3], [4], [5]]
    many = list(range(2400, 0, -1))
    cut = tasks.replication_chunks(many, tasks=64)
    assert len(cut) == 64
    assert {len(c) for c in cut} <= {38, 6}  # 63 x 38 + 6
    assert [rid for chunk in cut for rid in chunk] == sorted(many)  # each once, in order


def test_enqueue_sends_one_chord_member_per_chunk_and_revoke_names_the_same_ids(
    experiment, alice, monkeypatch, settings, django_capture_on_commit_callbacks
):
    settings.LAB_TASKS_PER_RUN = 2
    spec = sc.parse_spec({**experiment.spec, "replications": 3})
    experiment.spec = spec.model_dump(mode="json", by_alias=True)
    experiment.save()
    sent: list[tuple[str, list[int]]] = []

    def chord(header):
        sent.extend((sig.options["task_id"], sig.args[0]) for sig in header)
        return lambda body: None

    monkeypatch.setattr(tasks, "chord", chord)
    with django_capture_on_commit_callbacks(execute=True):
        run = services.run_enqueue(experiment=experiment, user=alice)
    ids = sorted(run.replications.values_list("pk", flat=True))
    assert len(ids) == 3 * len(sc.variant_names(spec))
    assert [chunk for _, chunk in sent] == tasks.replication_chunks(ids, tasks=2)
    assert len(sent) == 2
    revoke = tasks.run_task_ids(run=run, replication_ids=list(reversed(ids)))
    assert revoke == [task_id for task_id, _ in sent] + [tasks.aggregate_task_id(run)]


def test_a_chunk_past_its_time_budget_hands_the_rest_back_and_all_are_stored(
    experiment, alice, monkeypatch, settings, django_capture_on_commit_callbacks
):
    settings.LAB_TASK_CHUNK_SECONDS = 0.0  # hand back after every replication
    with django_capture_on_commit_callbacks(execute=False):
        run = services.run_enqueue(experiment=experiment, user=alice)
    ids = sorted(run.replications.values_list("pk", flat=True))
    assert len(ids) >= 2
    executed: list[int] = []
    real = services.replication_execute

    def execute(*, replication_id: int) -> Outcome:
        executed.append(replication_id)
        return real(replication_id=replication_id)

    monkeypatch.setattr(services, "replication_execute", execute)
    handed_back: list[list[int]] = []
    real_retry = tasks.simulate_replications.retry

    def retry(*args, **kwargs):
        handed_back.append(kwargs["args"][0])
        return real_retry(*args, **kwargs)

    monkeypatch.setattr(tasks.simulate_replications, "retry", retry)

    tasks.simulate_replications.apply(args=[ids], throw=False)  # retries run inline

    assert executed == ids  # each once, in order
    assert handed_back == [ids[i:] for i in range(1, len(ids))]
    statuses = set(run.replications.values_list("status", "progress"))
    assert statuses == {(Status.SUCCEEDED, 1.0)}
    run.refresh_from_db()
    assert run.progress == 1.0


def test_a_chunk_looks_again_later_at_a_replication_another_delivery_runs(
    experiment, alice, monkeypatch, django_capture_on_commit_callbacks
):
    with django_capture_on_commit_callbacks(execute=False):
        run = services.run_enqueue(experiment=experiment, user=alice)
    ids = sorted(run.replications.values_list("pk", flat=True))
    outcomes = {ids[0]: [Outcome.BUSY]}
    real = services.replication_execute

    def execute(*, replication_id: int) -> Outcome:
        queued = outcomes.get(replication_id)
        if queued:
            return queued.pop()
        return real(replication_id=replication_id)

    monkeypatch.setattr(services, "replication_execute", execute)
    retried: list[tuple[list[int], float]] = []
    real_retry = tasks.simulate_replications.retry

    def retry(*args, **kwargs):
        retried.append((kwargs["args"][0], kwargs["countdown"]))
        return real_retry(*args, **{**kwargs, "countdown": 0})

    monkeypatch.setattr(tasks.simulate_replications, "retry", retry)

    tasks.simulate_replications.apply(args=[ids], throw=False)  # the retry runs inline

    assert retried == [([ids[0]], 60.0)]  # the others ran first; the busy one after
    assert set(run.replications.values_list("status", flat=True)) == {Status.SUCCEEDED}
