"""Retry caps and backoff for preempted or failed work (docs/kubernetes-rules.md, "Job
backoffLimit" and "Kueue requeuing strategy").

Two upstream mechanisms, each off unless the spec asks for it (so existing specs
simulate exactly as before):

- **A Job's ``backoffLimit``** (``workloads[i].controller.backoffLimit``). The Job
  controller counts every pod that ends without succeeding, a preempted or evicted one
  included (``isPodFailed`` counts a pod with a deletion timestamp as failed). While the
  failures since the last success stay within the limit, each replacement waits
  ``10 s * 2^(n-1)`` after the n-th failure, at most 10 minutes
  (``DefaultJobPodFailureBackOff``, ``MaxJobPodFailureBackOff`` and
  ``getRemainingTimeForFailuresCount`` in ``pkg/controller/job``). One failure beyond the
  limit fails the Job (condition Failed, reason ``BackoffLimitExceeded``): its remaining
  pods are deleted and nothing replaces them.
- **Kueue's ``waitForPodsReady``** (top-level ``waitForPodsReady``). An admitted workload
  whose pods are not all Ready ``timeoutSeconds`` after its admission is evicted
  (``PodsReadyTimeout``). Its n-th requeue waits ``backoffBaseSeconds * 2^(n-1)``, at
  most ``backoffMaxSeconds``, and then it queues again ordered by its eviction time
  (``requeuingStrategy.timestamp: Eviction``, the default). The eviction that would be
  requeue ``backoffLimitCount + 1`` deactivates it instead (``spec.active=false``, reason
  ``RequeuingLimitExceeded``), for good (``triggerDeactivationOrBackoffRequeue`` in
  Kueue's workload controller). Kueue adds a jitter of a ten-thousandth; we add none, so
  a run stays a pure function of its seed.
"""

from __future__ import annotations

from typing import TYPE_CHECKING

from scheduler_core import events as ev
from scheduler_core.model import Pod, PodState, Workload
from scheduler_core.spec import ControllerKind, ExperimentSpec

if TYPE_CHECKING:
    from scheduler_core.engine import Engine

JOB_POD_FAILURE_BACKOFF = 10.0
"""DefaultJobPodFailureBackOff: the wait after a Job's first pod failure."""
MAX_JOB_POD_FAILURE_BACKOFF = 600.0
"""MaxJobPodFailureBackOff in the controller's source (10 minutes; the Job page of the
Kubernetes documentation still says six)."""
BACKOFF_LIMIT_EXCEEDED = "Job has reached the specified backoff limit"
PODS_READY_TIMEOUT = "PodsReadyTimeout"
REQUEUING_LIMIT_EXCEEDED = "exceeding the maximum number of re-queuing retries"


def job_backoff(failures: int) -> float:
    """The wait before a replacement after ``failures`` failures since the last success."""
    if failures <= 0:
        return 0.0
    return min(MAX_JOB_POD_FAILURE_BACKOFF, JOB_POD_FAILURE_BACKOFF * 2.0 ** (failures - 1))


def requeue_backoff(count: int, base: float, cap: float) -> float:
    """Kueue's wait before the ``count``-th requeue (1 for the first)."""
    return min(cap, base * 2.0 ** (count - 1))


class Retries:
    """The Job controller's failure accounting and Kueue's requeuing, for one engine."""

    def __init__(self, engine: Engine, spec: ExperimentSpec) -> None:
        self.engine = engine
        self.ready_wait = spec.wait_for_pods_ready
        self.failures: dict[Workload, int] = {}
        """Pod failures per Job since its last succeeded pod (the backoff's count)."""
        self.failed_total: dict[Workload, int] = {}
        """Pod failures per Job in all (what backoffLimit is compared with)."""
        self._replaced: set[Pod] = set()
        """Pods whose replacement is under way (the controller sees a pod fail once)."""
        self.requeues: dict[Workload, int] = {}
        self.admission_no: dict[Workload, int] = {}

    # ----------------------------------------------------------------- Job backoffLimit
    def replace(self, pod: Pod) -> None:
        """The controller replaces ``pod``: at once for controllers without a limit, else
        after the Job's failure backoff, or never once the limit is exceeded."""
        engine = self.engine
        workload = pod.workload
        limit = workload.spec.controller.backoff_limit
        if limit is None or workload.spec.controller.kind is not ControllerKind.JOB:
            engine.submit_replacement(workload, pod.member)
            return
        if pod in self._replaced:
            return  # seen terminating, now gone: one failure, one replacement
        self._replaced.add(pod)
        self.failed_total[workload] = self.failed_total.get(workload, 0) + 1
        self.failures[workload] = self.failures.get(workload, 0) + 1
        if self.failed_total[workload] > limit:
            self._fail_job(workload)
            return
        delay = job_backoff(self.failures[workload])
        engine.at(engine.now + delay, self._replace_after_backoff, pod)

    def _replace_after_backoff(self, pod: Pod) -> None:
        workload = pod.workload
        if workload.failed or workload.suspended or workload.slots[pod.member] is not pod:
            return
        self.engine.submit_replacement(workload, pod.member)

    def succeeded(self, workload: Workload) -> None:
        """A pod succeeded: the backoff counts failures after the last success only."""
        self.failures.pop(workload, None)

    def _fail_job(self, workload: Workload) -> None:
        """BackoffLimitExceeded: the Job fails, its active pods are deleted."""
        engine = self.engine
        workload.failed = True
        engine.emit(
            ev.WORKLOAD_FAILED,
            workload,
            value=self.failed_total[workload],
            related="BackoffLimitExceeded",
            message=BACKOFF_LIMIT_EXCEEDED,
        )
        engine.delete_pods(workload, "backoff-limit")
        engine.admission.finished(workload)

    # ----------------------------------------------------------------- waitForPodsReady
    def admitted(self, workload: Workload) -> None:
        """Kueue starts the PodsReady clock at admission."""
        if self.ready_wait is None:
            return
        number = self.admission_no.get(workload, 0) + 1
        self.admission_no[workload] = number
        engine = self.engine
        engine.at(engine.now + self.ready_wait.timeout_seconds, self._check_ready, workload, number)

    def _check_ready(self, workload: Workload, number: int) -> None:
        if (
            self.admission_no.get(workload) != number
            or workload.suspended
            or workload.failed
            or _pods_ready(workload)
        ):
            return
        assert self.ready_wait is not None
        strategy = self.ready_wait.requeuing_strategy
        count = self.requeues.get(workload, 0) + 1
        limit = strategy.backoff_limit_count
        engine = self.engine
        if limit is not None and count > limit:
            workload.failed = True
            engine.emit(
                ev.WORKLOAD_FAILED,
                workload,
                value=count - 1,
                related="RequeuingLimitExceeded",
                message=f"Deactivated: {REQUEUING_LIMIT_EXCEEDED} ({limit})",
            )
            engine.timed_out(workload, None)
            return
        self.requeues[workload] = count
        wait = requeue_backoff(count, strategy.backoff_base_seconds, strategy.backoff_max_seconds)
        engine.emit(
            ev.PODS_READY_TIMEOUT,
            workload,
            value=count,
            related=PODS_READY_TIMEOUT,
            message=f"Exceeded the PodsReady timeout {self.ready_wait.timeout_seconds:g}s; "
            f"requeue {count} after {wait:g}s",
        )
        engine.timed_out(workload, engine.now + wait)


def _pods_ready(workload: Workload) -> bool:
    """Kueue's PodsReady condition: every pod of the workload Ready (or succeeded)."""
    return all(
        p is not None and p.state in (PodState.READY, PodState.SUCCEEDED) for p in workload.slots
    )
