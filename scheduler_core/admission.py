"""Layers above the scheduler (domain.md §6, kubernetes-preemption.md §7).

An admission queue (Polyaxon queue / Kueue ClusterQueue) holds workloads *before their
pods exist*: while a workload waits here, no PriorityClass can help it, because there is
no pod to prioritise. The queue is ordered by its own ``queuePriority`` (Polyaxon) or by
the workload's priority (Kueue), then arrival; StrictFIFO (the head blocks those behind
it) or BestEffortFIFO. It admits while the queue's concurrency and quota allow; queues in
a cohort lend each other unused quota.

Quota is kept per (flavor, resource), as Kueue does: ``nominalGpus`` is one flavor with
one resource; ``resourceGroups`` give several resources (GPUs, CPU, memory) and several
flavors, chosen by the flavor assigner with ``flavorFungibility``
(docs/kubernetes-rules.md "Flavor fungibility"). Resources no group covers are not
limited.

With ``preemption`` set, a workload that does not fit evicts admitted workloads: Kueue's
classic preemption (§7.2 ordering; §7.3 candidates classified per borrowWithinCohort, the
``borrowing=false/true`` attempts in upstream order, greedy targets checked lazily, then
fill-back from ``len - 2``), or, with the top-level ``fairSharing``, the fair-sharing
preemption of §7.4 (dominant resource shares and their strategies). An evicted workload is
suspended: its pods are deleted. Its quota stays reserved until its job is no longer
active (docs/kubernetes-rules.md "Quota of an evicted workload"); then it waits in its
queue again by its creation time. One cohort level is modelled.
"""

from __future__ import annotations

import math
from collections.abc import Callable, Iterable, Mapping
from dataclasses import dataclass, field, replace
from typing import Protocol

from scheduler_core.decisions import QueueTarget
from scheduler_core.model import Workload
from scheduler_core.spec import (
    AdmissionQueue,
    ControllerKind,
    ExperimentSpec,
    FairSharingConfig,
)

FR = tuple[str, str]
"""(flavor, resource): the unit Kueue keeps quota in."""
EPS = 1e-9
DEFAULT_FLAVOR = "default"
LTE_FINAL = "LessThanOrEqualToFinalShare"
LT_INITIAL = "LessThanInitialShare"

NO_FIT, NO_CANDIDATES, PREEMPT, RECLAIM, FIT = range(5)
"""The flavor assigner's modes, worst first (granularMode.preemptionMode upstream)."""


class AdmissionHost(Protocol):
    now: float

    def admit(self, workload: Workload, queue: str, message: str = "") -> None: ...

    def suspend(self, workload: Workload, by: Workload, reason: str) -> None:
        """Evict ``workload`` for ``by``; ``reason`` is Kueue's Preempted reason (§7.5)."""

    def queued(self, workload: Workload, queue: str, reason: str) -> None: ...

    def at(self, time: float, callback: Callable[..., None], *args: object) -> None: ...


@dataclass(frozen=True, slots=True)
class Quota:
    nominal: float
    borrowing_limit: float | None
    lending_limit: float | None

    @property
    def guaranteed(self) -> float:
        """localQuota upstream: what the queue keeps for itself and never lends."""
        return 0.0 if self.lending_limit is None else self.nominal - self.lending_limit

    @property
    def lendable(self) -> float:
        return self.nominal - self.guaranteed


@dataclass
class QueueState:
    spec: AdmissionQueue
    groups: list[tuple[tuple[str, ...], tuple[str, ...]]]
    """Per resource group: (covered resources, flavors in order)."""
    quota: dict[FR, Quota]
    waiting: list[tuple[tuple[int, float, int], Workload]] = field(default_factory=list)
    admitted: dict[Workload, float] = field(default_factory=dict)
    assigned: dict[Workload, dict[FR, float]] = field(default_factory=dict)
    usage: dict[FR, float] = field(default_factory=dict)
    evicting: set[Workload] = field(default_factory=set)
    """Evicted, quota still reserved until the job is no longer active."""
    preemptor: Workload | None = None
    """A BestEffortFIFO queue's waiting workload whose preemptions are pending: it stays
    at the head until it is admitted or no longer preempts (:meth:`Admission._try_head`)."""

    @property
    def limited(self) -> bool:
        return bool(self.quota)

    @property
    def name(self) -> str:
        return self.spec.name

    def nominal(self, fr: FR) -> float:
        q = self.quota.get(fr)
        return q.nominal if q is not None else 0.0

    def used(self, fr: FR, removed: Iterable[Workload] = ()) -> float:
        value = self.usage.get(fr, 0.0)
        for w in removed:
            assignment = self.assigned.get(w)
            if assignment is not None:
                value -= assignment.get(fr, 0.0)
        return value

    def borrowing(self, frs: Iterable[FR], removed: Iterable[Workload] = ()) -> bool:
        return any(self.used(fr, removed) > self.nominal(fr) + EPS for fr in frs)


def queue_state(spec: AdmissionQueue) -> QueueState:
    """Normalise a queue's quota into per-(flavor, resource) entries."""
    if spec.resource_groups:
        groups: list[tuple[tuple[str, ...], tuple[str, ...]]] = []
        quota: dict[FR, Quota] = {}
        for group in spec.resource_groups:
            flavors = tuple(f.name for f in group.flavors)
            groups.append((tuple(str(r) for r in group.covered_resources), flavors))
            for flavor in group.flavors:
                for r in flavor.resources:
                    quota[(flavor.name, r.name)] = Quota(
                        r.nominal_quota, r.borrowing_limit, r.lending_limit
                    )
        return QueueState(spec, groups, quota)
    if spec.nominal_gpus is None:
        return QueueState(spec, [], {})
    return QueueState(
        spec,
        [(("gpus",), (DEFAULT_FLAVOR,))],
        {
            (DEFAULT_FLAVOR, "gpus"): Quota(
                float(spec.nominal_gpus), spec.borrowing_limit_gpus, None
            )
        },
    )


def requests(workload: Workload) -> dict[str, float]:
    """What the workload asks of its queue: every member's requests, summed."""
    s, n = workload.spec, workload.spec.members
    return {"gpus": float(s.gpus * n), "cpu": s.cpu * n, "memory": s.memory * n}


def holds_quota_until_gone(workload: Workload) -> bool:
    """Kueue clears an evicted workload's quota reservation once its job is no longer
    active. For plain pods and Deployments (the Pod integration) a Running pod counts
    until it is gone (or its grace period is over); a batch Job's ``status.active`` leaves
    out pods being deleted, so a Job's (and a JobSet's) quota returns at once."""
    return workload.spec.controller.kind in (ControllerKind.NONE, ControllerKind.DEPLOYMENT)


class Admission:
    def __init__(self, host: AdmissionHost, spec: ExperimentSpec) -> None:
        self.host = host
        self.queues = {q.name: queue_state(q) for q in spec.queues}
        self.of: dict[Workload, QueueState] = {}
        self.fair: FairSharingConfig | None = spec.fair_sharing
        self._backoff: dict[Workload, tuple[float | None, float]] = {}
        """waitForPodsReady: (when an evicted workload may queue again, None: never; the
        eviction's time, its place in the queue)."""
        self._simulated: tuple[tuple[object, ...], list[Candidate]] | None = None
        """The last oracle search (key, targets), reused when preemption asks the same."""
        self._preempted_at: dict[Workload, float] = {}
        """A victim -> the instant it was last preempted: it is not admitted again at
        that instant (:meth:`_held_back`)."""

    # ------------------------------------------------------------------ lifecycle
    def arrive(self, workload: Workload) -> None:
        """A workload is submitted to its queue; it gets pods only once admitted."""
        queue = self.queues[workload.spec.queue]  # type: ignore[index]
        self.of[workload] = queue
        self._enqueue(queue, workload, workload.arrival)
        self.host.queued(workload, queue.spec.name, "waiting for admission")
        self.admit_ready()

    def _enqueue(self, queue: QueueState, workload: Workload, since: float) -> None:
        rank = (
            workload.priority if queue.spec.order_by == "priority" else workload.spec.queue_priority
        )
        key = (-rank, since, workload.idx)
        queue.waiting.append((key, workload))
        queue.waiting.sort(key=lambda item: item[0])

    def finished(self, workload: Workload) -> None:
        """Done: its concurrency slot and quota return to the queue."""
        queue = self.of.get(workload)
        if queue is not None and workload in queue.admitted:
            self._release(queue, workload)
            self.admit_ready()

    def pods_gone(self, workload: Workload) -> None:
        """An evicted workload's last pod is gone: its quota reservation is cleared and it
        waits in its queue again."""
        queue = self.of.get(workload)
        if queue is None or workload not in queue.evicting or workload.holding():
            return
        self._requeue(queue, workload, held=True)
        self.admit_ready()

    def timed_out(self, workload: Workload, requeue_at: float | None) -> None:
        """Kueue's PodsReady timeout: the admission is cancelled like an eviction, and the
        workload queues again only at ``requeue_at`` (its backoff), ordered by that
        eviction's time (requeuingStrategy.timestamp Eviction); None: deactivated."""
        queue = self.of[workload]
        self._backoff[workload] = (requeue_at, self.host.now)
        self._evicted(queue, workload)
        self.admit_ready()

    def _after_backoff(self, queue: QueueState, workload: Workload, evicted_at: float) -> None:
        self._enqueue(queue, workload, evicted_at)
        self.host.queued(workload, queue.spec.name, "requeued after its PodsReady backoff")
        self.admit_ready()

    def _requeue(self, queue: QueueState, workload: Workload, *, held: bool = False) -> None:
        queue.evicting.discard(workload)
        self._release(queue, workload)
        if workload in self._backoff:
            until, evicted_at = self._backoff.pop(workload)
            if until is not None:
                self.host.at(until, self._after_backoff, queue, workload, evicted_at)
            return
        self._enqueue(queue, workload, workload.arrival)
        if held:
            self.host.queued(
                workload, queue.spec.name, "pods gone: quota released, waiting for admission"
            )

    def _release(self, queue: QueueState, workload: Workload) -> None:
        del queue.admitted[workload]
        for fr, value in queue.assigned.pop(workload).items():
            queue.usage[fr] = queue.usage.get(fr, 0.0) - value

    def _reserve(self, queue: QueueState, workload: Workload, assignment: dict[FR, float]) -> None:
        queue.admitted[workload] = self.host.now
        queue.assigned[workload] = assignment
        for fr, value in assignment.items():
            queue.usage[fr] = queue.usage.get(fr, 0.0) + value

    # ------------------------------------------------------------------ admitting
    def admit_ready(self) -> None:
        """Admit queue heads while they fit; a head that does not fit blocks its queue."""
        progress = True
        while progress:
            progress = False
            for queue in self._queue_order():
                if queue.waiting and self._try_head(queue):
                    progress = True

    def _queue_order(self) -> list[QueueState]:
        """Spec order; with fair sharing, the queue whose head would leave it with the
        lowest share goes first (Kueue's fair-sharing entry ordering)."""
        queues = list(self.queues.values())
        if self.fair is None:
            return queues
        return sorted(queues, key=lambda q: self._head_share(q))

    def _head_share(self, queue: QueueState) -> float:
        if not queue.waiting or not queue.limited:
            return 0.0
        head = queue.waiting[0][1]
        extra = self._any_assignment(queue, head)
        return self._drs(queue, set(), extra)

    def _try_head(self, queue: QueueState) -> bool:
        """StrictFIFO tries the head only; BestEffortFIFO tries each waiting workload in
        order, so one that does not fit no longer blocks those behind it. A workload
        whose preemptions are pending (its victims still hold their quota) blocks its
        queue under both: Kueue requeues it at once and, under BestEffortFIFO, keeps it
        sticky at the head until it is admitted or no longer preempts (the preemptor
        workload of Kueue's ClusterQueue). Without that, a workload behind it took the
        room its first victims freed, was preempted for it again at the same instant,
        and so on without end."""
        best_effort = queue.spec.queueing_strategy == "BestEffortFIFO"
        sticky = queue.preemptor
        entries = [e for e in queue.waiting if e[1] is sticky] if sticky is not None else []
        if sticky is not None and not entries:
            queue.preemptor = sticky = None  # admitted or gone meanwhile
        heads = entries or (queue.waiting if best_effort else queue.waiting[:1])
        for entry in list(heads):
            workload = entry[1]
            if self._held_back(workload):
                if best_effort:
                    continue
                return False
            assignment, pending = self._admissible(queue, workload)
            if assignment is not None:
                # by identity: a victim re-enqueued by the preemption may now sort first
                queue.waiting.remove(entry)
                if queue.preemptor is workload:
                    queue.preemptor = None
                self._reserve(queue, workload, assignment)
                self.host.admit(workload, queue.spec.name, _flavors_text(queue, assignment))
                return True
            if pending:
                if best_effort:
                    queue.preemptor = workload
                return False
            if sticky is workload:  # it no longer preempts: the others may go again
                queue.preemptor = None
                return self._try_head(queue)
        return False

    def _held_back(self, workload: Workload) -> bool:
        """A workload preempted at this instant is not admitted again at this instant.
        In Kueue a victim is requeued once its eviction is observed and admitted in a
        later scheduling cycle, and a pending preemptor's quota is reserved within its
        cycle, so a victim can take back the room freed for its preemptor (or preempt it
        in turn) at most once a cycle. The simulator runs every cycle of an instant at
        that instant: without this rule a victim re-admitted into the room of its
        preemptor's first victims was preempted again at the same instant, and two
        workloads that each may preempt the other (fair sharing one way, reclamation the
        other) took turns, without end. At a later instant (the next event that admits)
        it competes as before (docs/kubernetes-rules.md, "Kueue: a pending preemptor and
        its victims")."""
        when = self._preempted_at.get(workload)
        if when is None:
            return False
        if when == self.host.now:
            return True
        del self._preempted_at[workload]
        return False

    def _admissible(
        self, queue: QueueState, workload: Workload
    ) -> tuple[dict[FR, float] | None, bool]:
        """The flavor assignment to admit ``workload`` with now (after issuing any
        preemptions it needs), or None if it must wait; and whether it waits for
        preemptions it issued (or found already issued)."""
        self._simulated = None
        assignment, mode, needed = self._assign_flavors(queue, workload)
        if mode == FIT and self._concurrency_ok(queue, frozenset()):
            return assignment, False
        if mode == NO_FIT or not self._preempt_for(queue, workload, assignment, needed):
            return None, False
        if self._room(queue, assignment, frozenset()):
            return assignment, False
        return None, True  # victims hold their quota until their pods are gone: wait for them

    def _concurrency_ok(self, queue: QueueState, removed: frozenset[Workload]) -> bool:
        limit = queue.spec.concurrency
        return limit is None or sum(w not in removed for w in queue.admitted) < limit

    def _room(
        self,
        queue: QueueState,
        assignment: Mapping[FR, float],
        removed: frozenset[Workload] | set[Workload],
    ) -> bool:
        """Concurrency and quota allow the assignment, with ``removed`` already gone."""
        return self._concurrency_ok(queue, frozenset(removed)) and all(
            v <= self._available(queue, fr, removed) + EPS for fr, v in assignment.items()
        )

    # ------------------------------------------------------------------ quota
    def _cohort(self, queue: QueueState) -> list[QueueState]:
        cohort = queue.spec.cohort
        if cohort is None:
            return []
        return [q for q in self.queues.values() if q is not queue and q.spec.cohort == cohort]

    def _members(self, queue: QueueState) -> list[QueueState]:
        return [queue, *self._cohort(queue)]

    def _available(
        self, queue: QueueState, fr: FR, removed: Iterable[Workload] = (), extra: float = 0.0
    ) -> float:
        """Available(cq, fr) (§7.3, upstream ``available``): what the queue keeps for
        itself, plus what the cohort has unused, capped by the borrowing limit."""
        if not queue.limited:
            return math.inf
        q = queue.quota.get(fr)
        if q is None:
            return 0.0
        removed = list(removed)
        used = queue.used(fr, removed) + extra
        if queue.spec.cohort is None:
            return q.nominal - used
        cohort_quota = cohort_used = 0.0
        for member in self._members(queue):
            mq = member.quota.get(fr)
            guaranteed = mq.guaranteed if mq is not None else 0.0
            cohort_quota += mq.lendable if mq is not None else 0.0
            member_used = member.used(fr, removed) + (extra if member is queue else 0.0)
            cohort_used += max(0.0, member_used - guaranteed)
        parent = cohort_quota - cohort_used
        if q.borrowing_limit is not None:
            in_parent = max(0.0, used - q.guaranteed)
            parent = min(parent, q.lendable - in_parent + q.borrowing_limit)
        return max(0.0, q.guaranteed - used) + parent

    def _potential(self, queue: QueueState, fr: FR) -> float:
        """PotentialAvailable(cq, fr): the most the queue could ever get (no usage)."""
        q = queue.quota.get(fr)
        if q is None:
            return 0.0
        if queue.spec.cohort is None:
            return q.nominal
        parent = sum(m.quota[fr].lendable for m in self._members(queue) if fr in m.quota)
        total = q.guaranteed + parent
        if q.borrowing_limit is not None:
            total = min(total, q.nominal + q.borrowing_limit)
        return total

    # ------------------------------------------------------------------ flavors
    def _any_assignment(self, queue: QueueState, workload: Workload) -> dict[FR, float]:
        """The first flavor of each group: enough to measure a share before assigning."""
        wanted = requests(workload)
        return {
            (flavors[0], r): wanted[r]
            for covered, flavors in queue.groups
            for r in covered
            if wanted[r] > 0
        }

    def _assign_flavors(
        self, queue: QueueState, workload: Workload
    ) -> tuple[dict[FR, float], int, set[FR]]:
        """The flavor assigner (docs/kubernetes-rules.md "Flavor fungibility"): per resource
        group, flavors in order; the representative mode of a flavor is its worst resource;
        the search stops at a flavor unless fungibility says to try the next one; else the
        best flavor seen wins. Returns the assignment, its worst mode and the
        (flavor, resource) pairs that need preemption."""
        if not queue.limited:
            return {}, FIT, set()
        wanted = requests(workload)
        assignment: dict[FR, float] = {}
        worst, needed = FIT, set()
        for covered, flavors in queue.groups:
            asked = {r: wanted[r] for r in covered if wanted[r] > 0}
            if not asked:
                continue
            best: tuple[int, int, str, set[str]] | None = None
            for flavor in flavors:
                mode, borrow, short = self._flavor_mode(
                    queue, workload, flavor, asked, simulate=len(flavors) > 1
                )
                if not self._try_next(queue, mode, borrow):
                    best = (mode, borrow, flavor, short)
                    break
                if best is None or _preferred((mode, borrow), best[:2]):
                    best = (mode, borrow, flavor, short)
            assert best is not None
            mode, _, flavor, short = best
            worst = min(worst, mode)
            for r, v in asked.items():
                assignment[(flavor, r)] = v
            needed |= {(flavor, r) for r in short}
        if worst == NO_CANDIDATES:
            worst = PREEMPT  # the preemption search itself will find none
        return assignment, worst, needed

    def _flavor_mode(
        self,
        queue: QueueState,
        workload: Workload,
        flavor: str,
        asked: dict[str, float],
        *,
        simulate: bool = True,
    ) -> tuple[int, int, set[str]]:
        """fitsResourceQuota per resource, the worst one representing the flavor; also
        the resources that need preemption in it (mode Preempt, frsNeedPreemption).
        Without ``simulate`` (a group of one flavor: nothing to choose between) the
        preemption search is left to the preemption itself."""
        modes: list[tuple[int, int]] = []
        short: set[str] = set()
        for r, v in asked.items():
            fr = (flavor, r)
            borrow = int(queue.used(fr) + v > queue.nominal(fr) + EPS)
            if v > self._potential(queue, fr) + EPS:
                return NO_FIT, 0, set()
            if v <= self._available(queue, fr) + EPS:
                modes.append((FIT, borrow))
                continue
            if queue.nominal(fr) + EPS >= v or self._may_preempt_while_borrowing(queue):
                mode = self._oracle(queue, workload, {fr: v}) if simulate else PREEMPT
                modes.append((mode, borrow))
                short.add(r)
            else:
                return NO_FIT, borrow, set()
        return min(m for m, _ in modes), max(b for _, b in modes), short

    def _may_preempt_while_borrowing(self, queue: QueueState) -> bool:
        policy = queue.spec.preemption
        bwc = policy.borrow_within_cohort
        return (bwc is not None and bwc.policy != "Never") or (
            self.fair is not None and policy.reclaim_within_cohort != "Never"
        )

    def _oracle(self, queue: QueueState, workload: Workload, part: dict[FR, float]) -> int:
        """SimulatePreemption for one (flavor, resource): targets found (from other
        queues only: reclaim), or none."""
        targets = self._targets(queue, workload, part, set(part))
        self._simulated = ((queue.name, workload.idx, tuple(part.items()), tuple(part)), targets)
        if not targets:
            return NO_CANDIDATES
        return RECLAIM if all(not t.own for t in targets) else PREEMPT

    def _try_next(self, queue: QueueState, mode: int, borrow: int) -> bool:
        """shouldTryNextFlavor: always past a flavor that cannot fit; past one that needs
        preemption or borrowing when fungibility says TryNextFlavor."""
        fungibility = queue.spec.flavor_fungibility
        if mode in (NO_FIT, NO_CANDIDATES):
            return True
        if mode in (PREEMPT, RECLAIM) and fungibility.when_can_preempt == "TryNextFlavor":
            return True
        return bool(borrow) and fungibility.when_can_borrow == "TryNextFlavor"

    # ------------------------------------------------------------------ preemption
    def _preempt_for(
        self, queue: QueueState, head: Workload, assignment: dict[FR, float], needed: set[FR]
    ) -> bool:
        """Find targets (§7.3 classic or §7.4 fair sharing) and issue them (§7.5); targets
        already evicted count as preempted. True when targets were found."""
        key = (queue.name, head.idx, tuple(assignment.items()), tuple(sorted(needed)))
        cached = self._simulated
        self._simulated = None
        # one flavor and one resource short: the oracle already searched exactly this
        targets = (
            cached[1]
            if cached is not None and cached[0] == key
            else self._targets(queue, head, assignment, needed)
        )
        if not targets:
            return False
        self._explain(queue, head, assignment, needed, targets)
        for target in targets:
            self._preempted_at[target.workload] = self.host.now
            if target.workload in target.owner.evicting:
                continue
            self.host.suspend(target.workload, head, target.reason)
            self._evicted(target.owner, target.workload)
        return True

    def _explain(
        self,
        queue: QueueState,
        head: Workload,
        assignment: dict[FR, float],
        needed: set[FR],
        targets: list[Candidate],
    ) -> None:
        """The decision record: every candidate, taken (with its Preempted reason) or why
        not. Read before the targets are evicted, so validity is judged as it was."""
        recorder = getattr(self.host, "recorder", None)
        if recorder is None:
            return
        taken = {t.workload for t in targets}
        rows = [
            QueueTarget(
                t.workload.name, t.owner.spec.name, t.reason, True, "evicted so the head fits"
            )
            for t in targets
        ]
        for c in self._candidates(queue, head, assignment, needed):
            if c.workload in taken:
                continue
            why = (
                "not needed: the head fits without it (fill-back or never reached)"
                if self._still_valid(c, False, taken, needed)
                else "not valid: its queue no longer borrows once the targets are gone"
            )
            rows.append(QueueTarget(c.workload.name, c.owner.spec.name, c.reason, False, why))
        rule = (
            "Kueue fair sharing (§7.4)"
            if self.fair is not None
            else "Kueue classic preemption (§7.3)"
        )
        recorder.queue_preemption(self.host.now, head, queue.spec.name, rows, rule)

    def _evicted(self, queue: QueueState, workload: Workload) -> None:
        queue.evicting.add(workload)
        held = holds_quota_until_gone(workload)
        if not held or not workload.holding():
            self._requeue(queue, workload, held=held)

    def _targets(
        self, queue: QueueState, head: Workload, assignment: dict[FR, float], needed: set[FR]
    ) -> list[Candidate]:
        limit = queue.spec.concurrency
        concurrency_full = limit is not None and len(queue.admitted) >= limit
        if not self._room(queue, assignment, frozenset()) and not any(
            v > self._available(queue, fr) + EPS for fr, v in assignment.items()
        ):
            needed = set()  # only the concurrency limit (ours, not Kueue's) is in the way
        candidates = self._candidates(queue, head, assignment, needed)
        if not candidates or (concurrency_full and not any(c.own for c in candidates)):
            return []
        if self.fair is not None:
            return self._fair_targets(queue, head, assignment, candidates, needed)
        for borrowing in self._attempts(queue, candidates, needed):
            targets = self._attempt(queue, assignment, candidates, borrowing, needed)
            if targets:
                return targets
        return []

    def _attempts(
        self, queue: QueueState, candidates: list[Candidate], needed: set[FR]
    ) -> list[bool]:
        """The ``allowBorrowing`` values to try, in upstream's order (§7.3 Attempts)."""
        forbidden = _borrow_forbidden(queue.spec)
        under_nominal = (
            all(queue.used(fr) < queue.nominal(fr) - EPS for fr in needed)
            if queue.limited
            else True
        )
        if all(c.own for c in candidates) or (forbidden and not under_nominal):
            return [True]
        if forbidden and not any(c.variant == HIERARCHICAL for c in candidates):
            return [False, True]
        return [True, False]

    def _attempt(
        self,
        queue: QueueState,
        assignment: dict[FR, float],
        candidates: list[Candidate],
        borrowing: bool,
        needed: set[FR],
    ) -> list[Candidate]:
        """Remove valid candidates in order until the head fits, then fill back; nothing
        if it never fits (the snapshot is restored)."""
        removed: set[Workload] = set()
        targets: list[Candidate] = []
        for candidate in candidates:
            if not self._still_valid(candidate, borrowing, removed, needed):
                continue
            removed.add(candidate.workload)
            targets.append(candidate)
            if self._fits(queue, assignment, removed, borrowing):
                return self._fill_back(queue, assignment, targets, removed, borrowing)
        return []

    def _fits(
        self,
        queue: QueueState,
        assignment: Mapping[FR, float],
        removed: set[Workload],
        borrowing: bool,
    ) -> bool:
        """workloadFits(allowBorrowing) (§7.3): without borrowing the queue must stay
        within its nominal quota; then the quota (and concurrency) must allow the head."""
        if not borrowing and any(
            queue.used(fr, removed) + v > queue.nominal(fr) + EPS for fr, v in assignment.items()
        ):
            return False
        return self._room(queue, assignment, removed)

    def _candidates(
        self, queue: QueueState, head: Workload, assignment: dict[FR, float], needed: set[FR]
    ) -> list[Candidate]:
        """NewCandidateIterator (§7.3) / findCandidates (§7.4): own-queue candidates, and
        cohort candidates from queues that borrow a needed resource; each list in §7.2
        order; evicted ones first."""
        policy = queue.spec.preemption
        own = [
            Candidate(queue, w, at, WITHIN_CQ)
            for w, at in queue.admitted.items()
            if _uses_needed(queue, w, needed) and _satisfies(policy.within_cluster_queue, head, w)
        ]
        cohort: list[Candidate] = []
        if policy.reclaim_within_cohort != "Never" and queue.spec.cohort is not None:
            frs = needed or set(assignment)
            advantage = queue.limited and all(
                queue.used(fr) + v <= queue.nominal(fr) + EPS for fr, v in assignment.items()
            )
            for other in self._cohort(queue):
                if not other.borrowing(frs):
                    continue  # within nominal: the walk skips it
                for w, at in other.admitted.items():
                    if _uses_needed(other, w, needed) and _satisfies(
                        policy.reclaim_within_cohort, head, w
                    ):
                        variant = (
                            FAIR
                            if self.fair is not None
                            else _classify(queue.spec, head, w, advantage)
                        )
                        cohort.append(Candidate(other, w, at, variant))
        if self.fair is not None:
            return sorted([*cohort, *own], key=Candidate.fair_order)
        hierarchy = sorted((c for c in cohort if c.variant == HIERARCHICAL), key=Candidate.order)
        priority = sorted((c for c in cohort if c.variant != HIERARCHICAL), key=Candidate.order)
        own.sort(key=Candidate.order)
        ordered = [*hierarchy, *priority, *own]
        return [c for c in ordered if c.evicted] + [c for c in ordered if not c.evicted]

    @staticmethod
    def _still_valid(
        candidate: Candidate, borrowing: bool, removed: set[Workload], needed: set[FR]
    ) -> bool:
        """candidateIsValid (§7.3), checked lazily against the simulated removals: own-queue
        candidates always; ReclaimWithoutBorrowing ones not while borrowing; a cohort
        candidate only while its queue still borrows a needed resource."""
        if candidate.own:
            return True
        if borrowing and candidate.variant == RECLAIM_WITHOUT_BORROWING:
            return False
        owner = candidate.owner
        frs = needed or set(owner.assigned.get(candidate.workload, {}))
        return owner.borrowing(frs, removed)

    def _fill_back(
        self,
        queue: QueueState,
        assignment: Mapping[FR, float],
        targets: list[Candidate],
        removed: set[Workload],
        borrowing: bool,
    ) -> list[Candidate]:
        """From the second-to-last target down: put each back if the head still fits
        without it (the last target added is never reconsidered)."""
        for i in range(len(targets) - 2, -1, -1):
            workload = targets[i].workload
            removed.discard(workload)
            if self._fits(queue, assignment, removed, borrowing):
                targets[i] = targets[-1]
                targets.pop()
            else:
                removed.add(workload)
        return targets

    # ------------------------------------------------------------------ §7.4 fair sharing
    def _drs(
        self, queue: QueueState, removed: set[Workload], extra: Mapping[FR, float] | None = None
    ) -> float:
        """The queue's dominant resource share (§7.4): per resource, what it borrows over
        its quota (with ``extra`` added) per 1000 of what the cohort can lend, the largest
        of them, divided by the fair-sharing weight. 0 means not borrowing; a weight of 0
        while borrowing is infinite."""
        if queue.spec.cohort is None:
            return 0.0
        borrowed: dict[str, float] = {}
        for fr, q in queue.quota.items():
            amount = queue.used(fr, removed) + (extra or {}).get(fr, 0.0) - q.nominal
            if amount > EPS:
                borrowed[fr[1]] = borrowed.get(fr[1], 0.0) + amount
        if not borrowed:
            return 0.0
        lendable: dict[str, float] = {}
        for member in self._members(queue):
            for fr, q in member.quota.items():
                lendable[fr[1]] = lendable.get(fr[1], 0.0) + q.lendable
        ratio = max(
            (b * 1000 / lendable[r] for r, b in borrowed.items() if lendable.get(r, 0) > 0),
            default=0.0,
        )
        weight = queue.spec.fair_sharing.weight
        if weight == 0:
            return math.inf
        return ratio / weight

    def _fair_targets(
        self,
        queue: QueueState,
        head: Workload,
        assignment: dict[FR, float],
        candidates: list[Candidate],
        needed: set[FR],
    ) -> list[Candidate]:
        """fairPreemptions (§7.4) for one cohort level: repeatedly pick the queue with the
        highest share (the preemptor's own queue always in the running) and preempt its
        next workload: at once while the preemptor stays within its nominal quota for the
        contested resources (FairSharingPreemptWithinNominal, on by default), else if the
        first strategy allows; then the second strategy (rule S2-b) over the workloads
        kept for retry; fill back if the head fits."""
        assert self.fair is not None
        strategies = self.fair.preemption_strategies
        removed: set[Workload] = set()
        targets: list[Candidate] = []
        pending = _by_queue(candidates)
        retry: dict[str, list[Candidate]] = {}
        frs = needed or set(assignment)
        within_nominal = all(
            queue.used(fr) + assignment.get(fr, 0.0) <= queue.nominal(fr) + EPS for fr in frs
        )

        def take(c: Candidate) -> bool:
            removed.add(c.workload)
            targets.append(c)
            return self._fits(queue, assignment, removed, True)

        while (target := self._next_target(queue, pending, removed)) is not None:
            items = pending[target.name]
            if target is queue or within_nominal:
                c = items.pop(0)
                if not items:
                    del pending[target.name]
                if take(c if c.own else replace(c, variant=HIERARCHICAL)):
                    return self._fill_back(queue, assignment, targets, removed, True)
                continue
            mine = self._drs(queue, removed, assignment)
            old = self._drs(target, removed)
            picked = False
            while items and not picked:
                c = items.pop(0)
                new = self._drs(target, removed | {c.workload})
                if _strategy_allows(strategies[0], mine, old, new):
                    picked = True
                    if take(c):
                        return self._fill_back(queue, assignment, targets, removed, True)
                else:
                    retry.setdefault(target.name, []).append(c)
            if not items:
                pending.pop(target.name, None)
        if len(strategies) > 1:
            while (target := self._next_target(queue, retry, removed)) is not None:
                c = retry.pop(target.name)[0]
                mine = self._drs(queue, removed, assignment)
                if mine < self._drs(target, removed) - EPS and take(c):
                    return self._fill_back(queue, assignment, targets, removed, True)
        return []

    def _next_target(
        self, queue: QueueState, pending: dict[str, list[Candidate]], removed: set[Workload]
    ) -> QueueState | None:
        """TargetClusterQueueOrdering (§7.4): the queue with the highest share among those
        that borrow (and the preemptor's own); equal shares go to the queue whose first
        candidate comes first in §7.2."""
        best: tuple[float, tuple[float, ...]] | None = None
        chosen = None
        for name, items in pending.items():
            owner = self.queues[name]
            share = self._drs(owner, removed)
            if owner is not queue and share <= 0:
                continue
            rank = (share, tuple(-x for x in items[0].fair_order()))
            if best is None or rank > best:
                best, chosen = rank, owner
        return chosen


def _by_queue(candidates: list[Candidate]) -> dict[str, list[Candidate]]:
    grouped: dict[str, list[Candidate]] = {}
    for c in candidates:
        grouped.setdefault(c.owner.name, []).append(c)
    return grouped


def _flavors_text(queue: QueueState, assignment: Mapping[FR, float]) -> str:
    """``flavors: gpus=spot, cpu=spot`` for a queue given by resourceGroups (Kueue's
    status.admission.podSetAssignments[].flavors); nothing for ``nominalGpus``."""
    if not queue.spec.resource_groups or not assignment:
        return ""
    return "flavors: " + ", ".join(f"{r}={f}" for f, r in assignment)


def _strategy_allows(
    strategy: str, preemptor_new: float, target_old: float, target_new: float
) -> bool:
    """§7.4: LessThanOrEqualToFinalShare: preemptorNewShare <= targetNewShare;
    LessThanInitialShare: preemptorNewShare < targetOldShare."""
    if strategy == LTE_FINAL:
        return preemptor_new <= target_new + EPS
    return preemptor_new < target_old - EPS


def _preferred(a: tuple[int, int], b: tuple[int, int]) -> bool:
    """isPreferred with the default BorrowingOverPreemption: a better preemption mode,
    then less borrowing."""
    if a[0] == NO_FIT:
        return False
    if b[0] == NO_FIT:
        return True
    if (a[0] == NO_CANDIDATES) != (b[0] == NO_CANDIDATES):
        return a[0] != NO_CANDIDATES
    if a[0] != b[0]:
        return a[0] > b[0]
    return a[1] < b[1]


WITHIN_CQ = "WithinCQ"
HIERARCHICAL = "HierarchicalReclaim"
RECLAIM_WITHOUT_BORROWING = "ReclaimWithoutBorrowing"
RECLAIM_WHILE_BORROWING = "ReclaimWhileBorrowing"
FAIR = "FairSharing"
_REASONS = {
    WITHIN_CQ: "InClusterQueue",
    HIERARCHICAL: "InCohortReclamation",
    RECLAIM_WITHOUT_BORROWING: "InCohortReclamation",
    RECLAIM_WHILE_BORROWING: "InCohortReclaimWhileBorrowing",
    FAIR: "InCohortFairSharing",
}


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
        return self.workload in self.owner.evicting

    @property
    def reason(self) -> str:
        """The Preempted condition's reason (§7.5)."""
        return _REASONS[self.variant]

    def order(self) -> tuple[int, float, int]:
        """CandidatesOrdering (§7.2) within one list: lower priority, more recently
        admitted, then a stable id."""
        return (self.workload.priority, -self.admitted_at, self.workload.idx)

    def fair_order(self) -> tuple[int, int, int, float, int]:
        """The whole §7.2 ordering: evicted first, other queues before the preemptor's."""
        return (0 if self.evicted else 1, 1 if self.own else 0, *self.order())


def _borrow_forbidden(queue: AdmissionQueue) -> bool:
    bwc = queue.preemption.borrow_within_cohort
    return bwc is None or bwc.policy == "Never"


def _classify(queue: AdmissionQueue, head: Workload, candidate: Workload, advantage: bool) -> str:
    """classifyPreemptionVariant (§7.3) for a cohort candidate that satisfies the policy."""
    if advantage:
        return HIERARCHICAL
    if _borrow_forbidden(queue):
        return RECLAIM_WITHOUT_BORROWING
    threshold = queue.preemption.borrow_within_cohort.max_priority_threshold  # type: ignore[union-attr]
    if candidate.priority >= head.priority or (
        threshold is not None and candidate.priority > threshold
    ):
        return RECLAIM_WITHOUT_BORROWING
    return RECLAIM_WHILE_BORROWING


def _uses_needed(queue: QueueState, workload: Workload, needed: set[FR]) -> bool:
    """WorkloadUsesResources (§7.1): a candidate must use a (flavor, resource) that needs
    preemption (any workload, when only the concurrency limit is in the way)."""
    if not needed:
        return True
    assignment = queue.assigned.get(workload)
    return assignment is not None and not needed.isdisjoint(assignment)  # only asks > 0


def _satisfies(policy: str, preemptor: Workload, candidate: Workload) -> bool:
    """SatisfiesPreemptionPolicy (§7.1)."""
    if policy == "LowerPriority":
        return preemptor.priority > candidate.priority
    if policy == "LowerOrNewerEqualPriority":
        return preemptor.priority > candidate.priority or (
            preemptor.priority == candidate.priority and preemptor.arrival < candidate.arrival
        )
    return policy == "Any"
