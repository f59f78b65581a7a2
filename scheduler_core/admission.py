"""Layers above the scheduler (domain.md §6, kubernetes-preemption.md §7).

An admission queue (Polyaxon queue / Kueue ClusterQueue) holds workloads *before their
pods exist*: while a workload waits here, no PriorityClass can help it, because there is
no pod to prioritise. The queue is ordered by its own ``queuePriority`` (Polyaxon) or by
the workload's priority (Kueue), then arrival, strictly FIFO (the head blocks those
behind it), and admits while the queue's concurrency and GPU quota allow; queues in a
cohort lend each other unused quota.

With ``preemption`` set, a head that does not fit its quota evicts admitted workloads as
Kueue's classic preemption does (§7.2 ordering, §7.3 greedy targets then fill-back from
``len - 2``, candidates checked lazily). An evicted workload is suspended: its pods are
deleted and it waits in its queue again by its creation time (Kueue's queue order for a
preempted workload; the eviction timestamp only applies to PodsReady timeouts and
admission checks, which are not modelled). Simplified: one flavor, one cohort level, no
borrowWithinCohort, StrictFIFO only, and quota is released at eviction.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Protocol

from scheduler_core.model import Workload
from scheduler_core.spec import AdmissionQueue, ExperimentSpec


class AdmissionHost(Protocol):
    now: float

    def admit(self, workload: Workload, queue: str) -> None: ...

    def suspend(self, workload: Workload, by: Workload, reason: str) -> None: ...

    def queued(self, workload: Workload, queue: str, reason: str) -> None: ...


@dataclass
class QueueState:
    spec: AdmissionQueue
    waiting: list[tuple[tuple[int, float, int], Workload]] = field(default_factory=list)
    admitted: dict[Workload, float] = field(default_factory=dict)
    usage: int = 0



class Admission:
    def __init__(self, host: AdmissionHost, spec: ExperimentSpec) -> None:
        self.host = host
        self.queues = {q.name: QueueState(q) for q in spec.queues}
        self.of: dict[Workload, QueueState] = {}

    # ------------------------------------------------------------------ lifecycle
    def arrive(self, workload: Workload) -> None:
        """A workload is submitted to its queue; it gets pods only once admitted."""
        queue = self.queues[workload.spec.queue]  # type: ignore[index]
        self.of[workload] = queue
        self._enqueue(queue, workload, workload.arrival)
        self.host.queued(workload, queue.spec.name, "waiting for admission")
        self.admit_ready()

    def _enqueue(self, queue: QueueState, workload: Workload, since: float) -> None:
        rank = workload.priority if queue.spec.order_by == "priority" else \
            workload.spec.queue_priority
        key = (-rank, since, workload.idx)
        queue.waiting.append((key, workload))
        queue.waiting.sort(key=lambda item: item[0])

    def finished(self, workload: Workload) -> None:
        """Done: its concurrency slot and quota return to the queue."""
        queue = self.of.get(workload)
        if queue is not None and workload in queue.admitted:
            self._release(queue, workload)
            self.admit_ready()

    def _release(self, queue: QueueState, workload: Workload) -> None:
        del queue.admitted[workload]
        queue.usage -= workload.gpus_total

    # ------------------------------------------------------------------ admitting
    def admit_ready(self) -> None:
        """Admit queue heads while they fit; a head that does not fit blocks its queue."""
        progress = True
        while progress:
            progress = False
            for queue in self.queues.values():
                if queue.waiting and self._try_head(queue):
                    progress = True

    def _try_head(self, queue: QueueState) -> bool:
        workload = queue.waiting[0][1]
        if not self._room(queue, workload) and not self._preempt_for(queue, workload):
            return False
        queue.waiting.pop(0)
        queue.admitted[workload] = self.host.now
        queue.usage += workload.gpus_total
        self.host.admit(workload, queue.spec.name)
        return True

    def _room(self, queue: QueueState, workload: Workload,
              removed: frozenset[Workload] = frozenset()) -> bool:
        """Concurrency and quota allow ``workload``, with ``removed`` already gone."""
        limit = queue.spec.concurrency
        if limit is not None and sum(w not in removed for w in queue.admitted) >= limit:
            return False
        return self._quota_fits(queue, workload.gpus_total, removed)

    def _quota_fits(self, queue: QueueState, gpus: int, removed: frozenset[Workload]) -> bool:
        """workloadFits (§7.3): within the queue's own quota, and, in a cohort, within what
        the whole cohort has left (quota lent to a borrower is not there until reclaimed);
        borrowing at most the borrowing limit."""
        nominal = queue.spec.nominal_gpus
        if nominal is None:
            return True
        usage = _usage(queue, removed)
        cohort = self._cohort(queue)
        if not cohort:
            return usage + gpus <= nominal
        limit = queue.spec.borrowing_limit_gpus
        if limit is not None and usage + gpus - nominal > limit:
            return False
        capacity = nominal + sum(q.spec.nominal_gpus or 0 for q in cohort)
        used = usage + sum(_usage(q, removed) for q in cohort)
        return used + gpus <= capacity

    def _cohort(self, queue: QueueState) -> list[QueueState]:
        cohort = queue.spec.cohort
        if cohort is None:
            return []
        return [q for q in self.queues.values() if q is not queue and q.spec.cohort == cohort]

    # ------------------------------------------------------------------ §7.3 preemption
    def _preempt_for(self, queue: QueueState, head: Workload) -> bool:
        """Classic preemption: candidates in §7.2 order removed greedily until the head
        fits, then fill-back; the targets are evicted and the head admitted."""
        limit = queue.spec.concurrency
        concurrency_full = limit is not None and len(queue.admitted) >= limit
        candidates = self._candidates(queue, head)
        if not candidates or (concurrency_full and not any(q is queue for q, _ in candidates)):
            return False
        targets = self._greedy(queue, head, candidates)
        if not targets:
            return False
        for owner, workload in targets:
            self._release(owner, workload)
            self.host.suspend(workload, head, "Preempted")
            self._enqueue(owner, workload, workload.arrival)
        return True

    def _candidates(self, queue: QueueState,
                    head: Workload) -> list[tuple[QueueState, Workload]]:
        policy = queue.spec.preemption
        found: list[tuple[tuple, QueueState, Workload]] = []
        for workload, admitted_at in queue.admitted.items():
            if _satisfies(policy.within_cluster_queue, head, workload):
                found.append((_order(workload, admitted_at, own=True), queue, workload))
        if policy.reclaim_within_cohort != "Never":
            for other in self._cohort(queue):
                for workload, admitted_at in other.admitted.items():
                    if _satisfies(policy.reclaim_within_cohort, head, workload):
                        found.append((_order(workload, admitted_at, own=False), other, workload))
        found.sort(key=lambda item: item[0])
        return [(q, w) for _, q, w in found]

    def _greedy(self, queue: QueueState, head: Workload,
                candidates: list[tuple[QueueState, Workload]]) -> list[tuple[QueueState, Workload]]:
        """Remove candidates in order until the head fits, then fill back."""
        removed: set[Workload] = set()
        targets: list[tuple[QueueState, Workload]] = []
        for owner, workload in candidates:
            if owner is not queue and not self._still_valid(queue, head, owner, removed):
                continue
            removed.add(workload)
            targets.append((owner, workload))
            if self._room(queue, head, frozenset(removed)):
                return self._fill_back(queue, head, targets, removed)
        return []

    @staticmethod
    def _still_valid(queue: QueueState, head: Workload, owner: QueueState,
                     removed: set[Workload]) -> bool:
        """candidateIsValid, checked as the iterator reaches a cohort candidate: its queue
        must still borrow; and with no borrowWithinCohort it is ReclaimWithoutBorrowing,
        invalid while the head itself would have to borrow."""
        if _usage(owner, removed) <= (owner.spec.nominal_gpus or 0):
            return False
        nominal = queue.spec.nominal_gpus
        return nominal is None or _usage(queue, removed) + head.gpus_total <= nominal

    def _fill_back(self, queue: QueueState, head: Workload,
                   targets: list[tuple[QueueState, Workload]],
                   removed: set[Workload]) -> list[tuple[QueueState, Workload]]:
        """From the second-to-last target down: put each back if the head still fits
        without it (the last target added is never reconsidered)."""
        for i in range(len(targets) - 2, -1, -1):
            workload = targets[i][1]
            removed.discard(workload)
            if self._room(queue, head, frozenset(removed)):
                targets[i] = targets[-1]
                targets.pop()
            else:
                removed.add(workload)
        return targets


def _usage(queue: QueueState, removed: frozenset[Workload] | set[Workload]) -> int:
    return queue.usage - sum(w.gpus_total for w in queue.admitted if w in removed)


def _satisfies(policy: str, preemptor: Workload, candidate: Workload) -> bool:
    """SatisfiesPreemptionPolicy (§7.1)."""
    if policy == "LowerPriority":
        return preemptor.priority > candidate.priority
    if policy == "LowerOrNewerEqualPriority":
        return preemptor.priority > candidate.priority or (
            preemptor.priority == candidate.priority and preemptor.arrival < candidate.arrival)
    return policy == "Any"


def _order(workload: Workload, admitted_at: float, *, own: bool) -> tuple:
    """CandidatesOrdering (§7.2), preempted first: other queues before the preemptor's
    own, lower priority, more recently admitted, then a stable id."""
    return (1 if own else 0, workload.priority, -admitted_at, workload.idx)
