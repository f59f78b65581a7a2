"""Requeue and retry with a cap and backoff (issue #17 §2; docs/kubernetes-rules.md "Job
backoffLimit" and "Kueue requeuing strategy"): a Job's pod-failure backoff and
backoffLimit, and Kueue's waitForPodsReady requeuing with backoffBaseSeconds,
backoffMaxSeconds and backoffLimitCount."""

from __future__ import annotations

from typing import Any

import pytest
import yaml

import scheduler_core as sc
from scheduler_core import events as ev
from scheduler_core.k8s.export import export_manifests
from scheduler_core.retries import (
    BACKOFF_LIMIT_EXCEEDED,
    job_backoff,
    requeue_backoff,
)


# ------------------------------------------------------------------------- the rules
def test_job_pod_failure_backoff_doubles_from_10s_to_the_controllers_10_minute_cap() -> None:
    """getRemainingTimeForFailuresCount: DefaultJobPodFailureBackOff (10 s) doubled per
    further failure, capped at MaxJobPodFailureBackOff (10 min in the controller)."""
    assert [job_backoff(n) for n in range(9)] == [0, 10, 20, 40, 80, 160, 320, 600, 600]


def test_kueue_requeue_backoff_doubles_from_the_base_to_the_max() -> None:
    """Kueue: 60, 120, 240, ..., 3600, ..., 3600 seconds with the defaults."""
    waits = [requeue_backoff(n, 60.0, 3600.0) for n in range(1, 9)]
    assert waits == [60, 120, 240, 480, 960, 1920, 3600, 3600]


# ------------------------------------------------------------------------- Job backoffLimit
def _failing_job(lab, controller: dict[str, Any], failures: list[float]) -> Any:
    """One 8-GPU Job pod on n1; n1 fails (its pods gone at once) at each time in
    ``failures`` and is back 5 s later."""
    return lab.run(
        nodes=["n1"],
        workloads=[{"name": "job", "gpus": 8, "controller": {"kind": "job", **controller}}],
        events=[
            {"at": t, "type": "node-failure", "nodes": ["n1"], "recoverAfterSeconds": 5}
            for t in failures
        ],
        horizon=2000.0,
    )


def _created(out: Any) -> list[float]:
    return [e.time for e in out.of(ev.CREATED) if e.value == 1.0]


def test_without_a_backoff_limit_a_replacement_is_created_at_once(lab) -> None:
    out = _failing_job(lab, {}, [100, 300, 500])
    assert _created(out) == [100.0, 300.0, 500.0]
    assert not out.of(ev.WORKLOAD_FAILED)


def test_a_job_with_a_backoff_limit_waits_10s_then_20s_then_40s(lab) -> None:
    out = _failing_job(lab, {"backoffLimit": 6}, [100, 300, 500])
    assert _created(out) == [110.0, 320.0, 540.0]
    assert not out.of(ev.WORKLOAD_FAILED)


def test_one_failure_beyond_the_limit_fails_the_job_with_backoff_limit_exceeded(lab) -> None:
    """job_controller: failed > backoffLimit -> condition Failed, BackoffLimitExceeded;
    preempted and evicted pods count (a deleted pod that did not succeed is failed)."""
    out = _failing_job(lab, {"backoffLimit": 1}, [100, 300, 500])
    assert _created(out) == [110.0]
    (failed,) = out.of(ev.WORKLOAD_FAILED)
    assert (failed.time, failed.related, failed.message) == (
        300.0,
        "BackoffLimitExceeded",
        BACKOFF_LIMIT_EXCEEDED,
    )
    assert failed.value == 2
    assert not [e for e in out.of(ev.SCHEDULED) if e.time > 300]


def test_a_failed_job_deletes_its_other_pods(lab) -> None:
    out = lab.run(
        nodes=["n1", "n2"],
        workloads=[
            {
                "name": "job",
                "members": 2,
                "gpus": 8,
                "controller": {"kind": "job", "backoffLimit": 0},
            }
        ],
        events=[{"at": 100, "type": "node-failure", "nodes": ["n1"]}],
        horizon=1000.0,
    )
    killed = {(e.pod, e.related) for e in out.of(ev.KILLING)}
    assert ("job-1", "backoff-limit") in killed
    assert out.of(ev.WORKLOAD_FAILED)[0].related == "BackoffLimitExceeded"


def test_a_summary_counts_the_workloads_out_of_retries() -> None:
    doc = {
        "horizonSeconds": 2000,
        "cluster": {"nodes": [{"name": "n1"}]},
        "workloads": [{"name": "job", "gpus": 8, "controller": {"kind": "job", "backoffLimit": 0}}],
        "events": [{"at": 100, "type": "node-failure", "nodes": ["n1"]}],
    }
    result = sc.simulate(sc.parse_spec(doc), "default", seed=0)
    assert result.summary["workloads_failed"] == 1.0


# ------------------------------------------------------------------------- Kueue
def _stuck_in_queue(strategy: dict[str, Any], timeout: float = 300) -> dict[str, Any]:
    """A queue admits a 2 x 8-GPU Job the single 8-GPU node can never run whole: its
    pods are never all Ready, so waitForPodsReady evicts it after each timeout."""
    return {
        "horizonSeconds": 4000,
        "cluster": {"nodes": [{"name": "n1"}]},
        "queues": [{"name": "q", "nominalGpus": 16}],
        "workloads": [
            {
                "name": "big",
                "members": 2,
                "gpus": 8,
                "queue": "q",
                "controller": {"kind": "job"},
                "terminationGracePeriodSeconds": 0,
            }
        ],
        "waitForPodsReady": {"timeoutSeconds": timeout, "requeuingStrategy": strategy},
    }


def _run(doc: dict[str, Any], lab) -> Any:
    return lab.run_doc(doc)


def test_pods_ready_timeout_requeues_after_base_then_doubled_backoff(lab) -> None:
    out = _run(_stuck_in_queue({"backoffBaseSeconds": 60, "backoffMaxSeconds": 3600}), lab)
    admitted = [e.time for e in out.of(ev.ADMITTED)]
    # admitted 0; timeout 300 -> +60 -> 360; timeout 660 -> +120 -> 780; 1080 -> +240 ...
    assert admitted[:4] == [0.0, 360.0, 780.0, 1320.0]
    timeouts = out.of(ev.PODS_READY_TIMEOUT)
    assert [(e.time, e.value) for e in timeouts[:3]] == [(300.0, 1), (660.0, 2), (1080.0, 3)]
    assert not out.of(ev.WORKLOAD_FAILED), "no backoffLimitCount: requeued forever"


def test_backoff_max_seconds_caps_the_wait(lab) -> None:
    out = _run(_stuck_in_queue({"backoffBaseSeconds": 60, "backoffMaxSeconds": 100}), lab)
    admitted = [e.time for e in out.of(ev.ADMITTED)]
    assert admitted[:4] == [0.0, 360.0, 760.0, 1160.0]


def test_past_backoff_limit_count_kueue_deactivates_the_workload(lab) -> None:
    """triggerDeactivationOrBackoffRequeue: count + 1 > backoffLimitCount deactivates,
    reason RequeuingLimitExceeded, and the workload never returns."""
    out = _run(_stuck_in_queue({"backoffLimitCount": 2}), lab)
    assert [e.time for e in out.of(ev.ADMITTED)] == [0.0, 360.0, 780.0]
    (failed,) = out.of(ev.WORKLOAD_FAILED)
    assert failed.time == 1080.0
    assert failed.related == "RequeuingLimitExceeded"
    assert "exceeding the maximum number of re-queuing retries" in failed.message
    assert not [e for e in out.of(ev.SCHEDULED) if e.time > 1080]


def test_a_workload_whose_pods_get_ready_in_time_is_left_alone(lab) -> None:
    doc = _stuck_in_queue({"backoffLimitCount": 0})
    doc["workloads"][0]["members"] = 1
    out = _run(doc, lab)
    assert not out.of(ev.PODS_READY_TIMEOUT)
    assert not out.of(ev.WORKLOAD_FAILED)


def test_a_requeue_loop_with_no_backoff_is_bounded_by_the_cost_estimate() -> None:
    """A 1 s timeout with no backoff over a month would readmit the workload 2.6 million
    times: the estimate counts the cycles, and the deployment's budget refuses it."""
    doc = _stuck_in_queue({"backoffBaseSeconds": 0}, timeout=1)
    doc["horizonSeconds"] = 30 * 86400
    with pytest.raises(sc.SpecError) as caught:
        sc.parse_spec(doc, limits=sc.Limits())
    assert any("estimated" in e["message"] for e in caught.value.errors)
    capped = _stuck_in_queue({"backoffBaseSeconds": 0, "backoffLimitCount": 3}, timeout=1)
    capped["horizonSeconds"] = 30 * 86400
    sc.parse_spec(capped, limits=sc.Limits())  # four cycles at most: cheap


# ------------------------------------------------------------------------- errors
@pytest.mark.parametrize(
    ("change", "path", "words"),
    [
        (
            lambda d: d["workloads"][0]["controller"].update(kind="deployment", backoffLimit=3),
            "workloads[0].controller.backoffLimit",
            "does not apply to controller kind 'deployment'",
        ),
        (
            lambda d: d["workloads"][0]["controller"].update(backoffLimit=-1),
            "workloads[0].controller.backoffLimit",
            "greater than or equal to 0",
        ),
        (
            lambda d: (d.pop("queues"), d["workloads"][0].pop("queue")),
            "waitForPodsReady",
            "no admission queue",
        ),
        (
            lambda d: d["waitForPodsReady"].update(timeoutSeconds=0),
            "waitForPodsReady.timeoutSeconds",
            "greater than 0",
        ),
        (
            lambda d: d["waitForPodsReady"]["requeuingStrategy"].update(backoffBaseSeconds="-1m"),
            "waitForPodsReady.requeuingStrategy.backoffBaseSeconds",
            "",
        ),
    ],
    ids=["backoff-limit-on-deployment", "negative-limit", "no-queue", "zero-timeout", "negative"],
)
def test_bad_retry_settings_name_their_field(change: Any, path: str, words: str) -> None:
    doc = _stuck_in_queue({})
    change(doc)
    with pytest.raises(sc.SpecError) as caught:
        sc.parse_spec(doc)
    found = {e["path"]: e["message"] for e in caught.value.errors}
    assert path in found, found
    assert words in found[path]


def test_the_manifest_export_writes_the_jobs_backoff_limit() -> None:
    doc = {
        "cluster": {"nodes": [{"name": "n1"}]},
        "workloads": [
            {"name": "capped", "controller": {"kind": "job", "backoffLimit": 2}},
            {"name": "plain", "controller": {"kind": "job"}},
        ],
    }
    jobs = {
        d["metadata"]["name"]: d["spec"]["backoffLimit"]
        for d in yaml.safe_load_all(export_manifests(sc.parse_spec(doc)))
        if d and d.get("kind") == "Job"
    }
    assert jobs == {"capped": 2, "plain": 6}
