"""Layers above the scheduler (domain.md §6, kubernetes-preemption.md §7).

An admission queue (Polyaxon queue / Kueue ClusterQueue) holds workloads *before their
pods exist*: while a workload waits here, no PriorityClass can help it, because there is
no pod to prioritise. The queue is ordered by its own ``queuePriority`` (Polyaxon) or by
the workload's priority (Kueue), then arrival, strictly FIFO (the head blocks those
behind it), and admits while the queue's concurrency and GPU quota allow; queues in a
cohort lend each other unused quota.

With ``preemption`` set, a head that does not fit its quota evicts admitted workloads as
Kueue's classic preemption does (§7.2 ordering; §7.3 candidates classified per
borrowWithinCohort, the ``borrowing=false/true`` attempts in upstream order, greedy targets
checked lazily, then fill-back from ``len - 2``). An evicted workload is suspended: its pods
are deleted and it waits in its queue again by its creation time (Kueue's queue order for a
preempted workload; the eviction timestamp only applies to PodsReady timeouts and
admission checks, which are not modelled). Queues follow StrictFIFO or BestEffortFIFO.
Simplified: one flavor, one resource (GPUs), one cohort level, and quota is released at
eviction.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Protocol

from scheduler_core.model import Workload
from scheduler_core.spec import AdmissionQueue, ExperimentSpec


class AdmissionHost(Protocol):
    now: float

    def admit(self, workload: Workload, queue: str) -> None: ...

    def suspend(self, workload: Workload, by: Workload, reason: str) -> None:
        """Evict ``workload`` for ``by``; ``reason`` is Kueue's Preempted reason (§7.5)."""

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
        """StrictFIFO tries the head only; BestEffortFIFO tries each waiting workload in
        order, so one that does not fit no longer blocks those behind it."""
        heads = queue.waiting if queue.spec.queueing_strategy == "BestEffortFIFO" \
            else queue.waiting[:1]
        for entry in list(heads):
            workload = entry[1]
            if self._room(queue, workload) or self._preempt_for(queue, workload):
                # by identity: a victim re-enqueued by the preemption may now sort first
                queue.waiting.remove(entry)
                queue.admitted[workload] = self.host.now
                queue.usage += workload.gpus_total
                self.host.admit(workload, queue.spec.name)
                return True
        return False

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
        """Classic preemption (§7.3): the attempts in upstream order, each a greedy pass over
        the candidates then fill-back; the first attempt that fits gives the targets."""
        limit = queue.spec.concurrency
        concurrency_full = limit is not None and len(queue.admitted) >= limit
        candidates = self._candidates(queue, head)
        if not candidates or (concurrency_full and not any(c.own for c in candidates)):
            return False
        for borrowing in self._attempts(queue, head, candidates):
            targets = self._attempt(queue, head, candidates, borrowing)
            if targets:
                for target in targets:
                    self._release(target.owner, target.workload)
                    self.host.suspend(target.workload, head, target.reason)
                    self._enqueue(target.owner, target.workload, target.workload.arrival)
                return True
        return False

    def _attempts(self, queue: QueueState, head: Workload,
                  candidates: list[Candidate]) -> list[bool]:
        """The ``allowBorrowing`` values to try, in upstream's order (§7.3 Attempts)."""
        forbidden = _borrow_forbidden(queue.spec)
        nominal = queue.spec.nominal_gpus
        under_nominal = nominal is None or queue.usage < nominal
        if all(c.own for c in candidates) or (forbidden and not under_nominal):
            return [True]
        if forbidden and not any(c.variant == HIERARCHICAL for c in candidates):
            return [False, True]
        return [True, False]

    def _attempt(self, queue: QueueState, head: Workload, candidates: list[Candidate],
                 borrowing: bool) -> list[Candidate]:
        """Remove valid candidates in order until the head fits, then fill back; nothing
        if it never fits (the snapshot is restored)."""
        removed: set[Workload] = set()
        targets: list[Candidate] = []
        for candidate in candidates:
            if not self._still_valid(candidate, borrowing, removed):
                continue
            removed.add(candidate.workload)
            targets.append(candidate)
            if self._fits(queue, head, removed, borrowing):
                return self._fill_back(queue, head, targets, removed, borrowing)
        return []

    def _fits(self, queue: QueueState, head: Workload, removed: set[Workload],
              borrowing: bool) -> bool:
        """workloadFits(allowBorrowing) (§7.3): without borrowing the queue must stay
        within its nominal quota; then the quota (and concurrency) must allow the head."""
        nominal = queue.spec.nominal_gpus
        if not borrowing and nominal is not None and \
                _usage(queue, removed) + head.gpus_total > nominal:
            return False
        return self._room(queue, head, frozenset(removed))

    def _candidates(self, queue: QueueState, head: Workload) -> list[Candidate]:
        """NewCandidateIterator (§7.3): own-queue candidates, and cohort candidates from
        queues that borrow, classified; each list in §7.2 order; evicted ones first."""
        policy = queue.spec.preemption
        needs = self._needs_quota(queue, head)
        own = [Candidate(queue, w, at, WITHIN_CQ) for w, at in queue.admitted.items()
               if _uses_needed(w, needs) and _satisfies(policy.within_cluster_queue, head, w)]
        cohort: list[Candidate] = []
        if policy.reclaim_within_cohort != "Never":
            nominal = queue.spec.nominal_gpus
            advantage = nominal is not None and queue.usage + head.gpus_total <= nominal
            for other in self._cohort(queue):
                if other.usage <= (other.spec.nominal_gpus or 0):
                    continue  # within nominal: the walk skips it
                for w, at in other.admitted.items():
                    if _uses_needed(w, needs) and \
                            _satisfies(policy.reclaim_within_cohort, head, w):
                        variant = _classify(queue.spec, head, w, advantage)
                        cohort.append(Candidate(other, w, at, variant))
        hierarchy = sorted((c for c in cohort if c.variant == HIERARCHICAL), key=Candidate.order)
        priority = sorted((c for c in cohort if c.variant != HIERARCHICAL), key=Candidate.order)
        own.sort(key=Candidate.order)
        ordered = [*hierarchy, *priority, *own]
        return [c for c in ordered if c.evicted] + [c for c in ordered if not c.evicted]

    def _needs_quota(self, queue: QueueState, head: Workload) -> bool:
        """Does the head need preemption for its GPU quota (frsNeedPreemption), or only
        for the queue's concurrency limit (ours, not Kueue's)?"""
        return not self._quota_fits(queue, head.gpus_total, frozenset())

    @staticmethod
    def _still_valid(candidate: Candidate, borrowing: bool, removed: set[Workload]) -> bool:
        """candidateIsValid (§7.3), checked lazily against the simulated removals: own-queue
        candidates always; ReclaimWithoutBorrowing ones not while borrowing; a cohort
        candidate only while its queue still borrows."""
        if candidate.own:
            return True
        if borrowing and candidate.variant == RECLAIM_WITHOUT_BORROWING:
            return False
        owner = candidate.owner
        return _usage(owner, removed) > (owner.spec.nominal_gpus or 0)

    def _fill_back(self, queue: QueueState, head: Workload, targets: list[Candidate],
                   removed: set[Workload], borrowing: bool) -> list[Candidate]:
        """From the second-to-last target down: put each back if the head still fits
        without it (the last target added is never reconsidered)."""
        for i in range(len(targets) - 2, -1, -1):
            workload = targets[i].workload
            removed.discard(workload)
            if self._fits(queue, head, removed, borrowing):
                targets[i] = targets[-1]
                targets.pop()
            else:
                removed.add(workload)
        return targets


WITHIN_CQ = "WithinCQ"
HIERARCHICAL = "HierarchicalReclaim"
RECLAIM_WITHOUT_BORROWING = "ReclaimWithoutBorrowing"
RECLAIM_WHILE_BORROWING = "ReclaimWhileBorrowing"
_REASONS = {WITHIN_CQ: "InClusterQueue", HIERARCHICAL: "InCohortReclamation",
            RECLAIM_WITHOUT_BORROWING: "InCohortReclamation",
            RECLAIM_WHILE_BORROWING: "InCohortReclaimWhileBorrowing"}


@dataclass(frozen=True, slots=True)
class Candidate:
    """One workload the head may preempt, with its preemption variant (§7.3
    classifyPreemptionVariant)."""

    owner: QueueState
    workload: Workload
    admitted_at: float
    variant: str

    @property
    def own(self) -> bool:
        return self.variant == WITHIN_CQ

    @property
    def evicted(self) -> bool:
        return bool(self.workload.suspended)

    @property
    def reason(self) -> str:
        """The Preempted condition's reason (§7.5)."""
        return _REASONS[self.variant]

    def order(self) -> tuple[int, float, int]:
        """CandidatesOrdering (§7.2) within one list: lower priority, more recently
        admitted, then a stable id."""
        return (self.workload.priority, -self.admitted_at, self.workload.idx)


def _borrow_forbidden(queue: AdmissionQueue) -> bool:
    bwc = queue.preemption.borrow_within_cohort
    return bwc is None or bwc.policy == "Never"


def _classify(queue: AdmissionQueue, head: Workload, candidate: Workload,
              advantage: bool) -> str:
    """classifyPreemptionVariant (§7.3) for a cohort candidate that satisfies the policy."""
    if advantage:
        return HIERARCHICAL
    if _borrow_forbidden(queue):
        return RECLAIM_WITHOUT_BORROWING
    threshold = queue.preemption.borrow_within_cohort.max_priority_threshold  # type: ignore[union-attr]
    if candidate.priority >= head.priority or (
            threshold is not None and candidate.priority > threshold):
        return RECLAIM_WITHOUT_BORROWING
    return RECLAIM_WHILE_BORROWING


def _uses_needed(workload: Workload, needs_quota: bool) -> bool:
    """WorkloadUsesResources (§7.1): a candidate must use a resource that needs preemption
    (GPUs, when the quota is what the head lacks)."""
    return not needs_quota or workload.gpus_total > 0


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
