"""The scheduling queue of kube-scheduler (kubernetes-preemption.md §2).

activeQ is ordered by priority, then by the time the pod was (re)queued; a pod that
failed waits in the unschedulable pool until a cluster event may have made room, or in
backoffQ until its backoff (1 s doubling to 10 s, truncated to a whole second) expires.
A retry is not a reservation: whatever frees first goes to whoever is popped first.

Twins move together (issue #14). Every release wakes the whole unschedulable pool (the
NodeResourcesFit queueing hint), so a backlog of N pending pods costs N moves per
release if pods move one by one. Pending pods of one signature class (equal verdicts, see
``Workload.signature``) that failed at the same instant with the same attempt count have
equal queue fields: the same timestamp, backoff expiry and parking time. They are kept
as one :class:`Cohort`, which the heaps and the pool hold as one entry; its members keep
their own order by ``seq``, the last key of activeQ, so popping a cohort pod by pod gives
the order a per-pod queue gives. A member's own fields (attempts, timestamps, its failure
streak's count) are written back when it leaves the cohort (:meth:`settle`). Pods that
are not in a class (a nominated pod, a gang member, a queue test's stand-in) are cohorts
of one that never merge.
"""

from __future__ import annotations

import heapq
import itertools
import math
from bisect import bisect_left, insort
from operator import attrgetter

from scheduler_core.model import Pod

UNSCHEDULABLE_FLUSH_SECONDS = 30.0
MAX_IN_UNSCHEDULABLE_SECONDS = 300.0
ACTIVE, BACKOFF, PARKED = "active", "backoff", "parked"
_seq = attrgetter("seq")
INSORT_MAX = 64
"""Members joining a sorted cohort out of order that are put in place one by one; more
than that and the cohort is sorted again when next looked at."""
Key = tuple[object, ...]
"""A signature class (``Workload.signature``)."""
_Active = tuple[int, float, int, int, "Cohort"]
"""activeQ heap entry: (-priority, queue timestamp, first member's seq, tiebreak, cohort)."""
_Backoff = tuple[float, int, "Cohort"]
"""backoffQ heap entry: (backoff expiry, tiebreak, cohort)."""


class Cohort:
    """Queued pods with equal queue fields, ordered by ``seq``.

    A member's true failure-streak count is its streak's ``count`` plus ``bumps`` minus
    ``base[seq]``: a replay of the whole cohort adds one to ``bumps`` instead of one to
    every member's count. Members are keyed by ``seq`` (an int hashes in C; a Pod's hash
    is a Python method). ``pods`` may hold members that left (their seq is not in
    ``base``); they are skipped, and ``clean`` says none are past ``head``, so no pod can
    be listed twice. ``message`` is the streak message every member's open streak has
    (None if unknown or mixed): only then can a replay bump them all at once."""

    __slots__ = (
        "attempts",
        "backoff_until",
        "base",
        "bumps",
        "clean",
        "entry",
        "gpus",
        "head",
        "key",
        "last_bump",
        "message",
        "parked_at",
        "pods",
        "priority",
        "queue_ts",
        "sorted",
        "where",
    )

    def __init__(
        self,
        key: Key | None,
        pod: Pod,
        attempts: int,
        queue_ts: float,
        backoff_until: float,
        parked_at: float,
    ) -> None:
        self.key = key
        self.priority = pod.priority
        self.gpus = pod.gpus
        self.attempts = attempts
        self.queue_ts = queue_ts
        self.backoff_until = backoff_until
        self.parked_at = parked_at
        self.pods: list[Pod] = [pod]
        self.base: dict[int, int] = {pod.seq: 0}
        self.clean = True
        self.bumps = 0
        self.last_bump = queue_ts
        self.message: str | None = None
        self.head = 0
        self.sorted = True
        self.entry: _Active | _Backoff | None = None
        self.where: str | None = None

    def __len__(self) -> int:
        return len(self.base)

    def first(self) -> Pod:
        """The live member with the lowest ``seq``."""
        base = self.base
        if not self.sorted:
            if self.clean:
                self.pods = sorted(self.pods[self.head :], key=_seq)
            else:
                live = {p.seq: p for p in self.pods[self.head :] if p.seq in base}
                self.pods = sorted(live.values(), key=_seq)
                self.clean = True
            self.head = 0
            self.sorted = True
        pods = self.pods
        while pods[self.head].seq not in base:
            self.head += 1
        return pods[self.head]

    def members(self) -> list[Pod]:
        """Live members in ``seq`` order."""
        self.first()
        if self.clean and len(self.pods) - self.head == len(self.base):
            return self.pods[self.head :]
        base = self.base
        return [p for p in self.pods[self.head :] if p.seq in base]

    def extend(self, pods: list[Pod]) -> None:
        """Append members (their ``base`` entries are the caller's)."""
        if self.clean and len(self.pods) - self.head != len(self.base) - len(pods):
            self.clean = False  # a member that left may come back: dedupe when sorting
        if self.sorted and pods and self.pods and pods[0].seq < self.pods[-1].seq:
            if self.clean and len(pods) <= INSORT_MAX:
                # a few members into a long sorted cohort: put each in its place (a move
                # of pointers) instead of re-sorting every member at the next look
                for pod in pods:
                    insort(self.pods, pod, lo=self.head, key=_seq)
                return
            self.sorted = False
        self.pods.extend(pods)


class SchedulingQueue:
    def __init__(self, initial_backoff: float, max_backoff: float) -> None:
        self.initial_backoff = initial_backoff
        self.max_backoff = max_backoff
        self._active: list[_Active] = []
        self._backoff: list[_Backoff] = []
        self._parked: dict[int, dict[Cohort, None]] = {}
        """Unschedulable pool, bucketed by GPU request so a restored node wakes only pods
        that could fit it."""
        self.move_cycle = 0
        """Counts cluster events that moved pods (moveRequestCycle upstream)."""
        self._where: dict[int, Cohort] = {}
        """The cohort of each queued pod, by seq."""
        self._tie = itertools.count()
        self._fresh: dict[tuple[Key | None, int], Cohort] = {}
        self._fresh_at: float | None = None
        """Cohorts parked at ``_fresh_at`` by class and attempts: a pod failing at the same
        instant joins one instead of starting another."""
        self.saturated = self._saturation()
        """Attempts after which the backoff no longer grows: counts above it are equal."""
        self._durations = [self._duration(a) for a in range(self.saturated + 1)]
        """The backoff per attempt count up to :attr:`saturated` (every failure asks)."""

    def __len__(self) -> int:
        return len(self._where)

    def __contains__(self, pod: Pod) -> bool:
        return pod.seq in self._where

    def _saturation(self) -> int:
        attempts = 1
        while attempts < 64 and self._duration(attempts) < self._duration(attempts + 1):
            attempts += 1
        return attempts

    def _duration(self, attempts: int) -> float:
        doublings = min(attempts - 1, 62)  # the cap is reached long before; keeps floats finite
        return min(self.initial_backoff * float(2**doublings), self.max_backoff)

    # ------------------------------------------------------------------ adding
    def add(self, pod: Pod, now: float) -> None:
        """A new pod, or one moved by an event: activeQ unless its backoff is running."""
        cohort = Cohort(None, pod, pod.attempts, pod.queue_ts, pod.backoff_until, pod.parked_at)
        self._where[pod.seq] = cohort
        self._enqueue(cohort, now)

    def _enqueue(self, cohort: Cohort, now: float) -> None:
        if cohort.backoff_until > now:
            waiting: _Backoff = (cohort.backoff_until, next(self._tie), cohort)
            heapq.heappush(self._backoff, waiting)
            cohort.where, cohort.entry = BACKOFF, waiting
        else:
            active: _Active = (
                -cohort.priority,
                cohort.queue_ts,
                cohort.first().seq,
                next(self._tie),
                cohort,
            )
            heapq.heappush(self._active, active)
            cohort.where, cohort.entry = ACTIVE, active

    def park(
        self, pod: Pod, now: float, *, moved_meanwhile: bool = False, key: Key | None = None
    ) -> None:
        """A failed attempt: count it, start the backoff, wait for a cluster event.

        If a cluster event moved pods during this pod's own cycle (its victims already
        stopped, say), the pod goes to backoffQ instead: that event will not come again
        (AddUnschedulableIfNotPresent with moveRequestCycle >= the pod's cycle). ``key``
        is the pod's signature class when it may share a cohort with its twins."""
        pod.attempts += 1
        pod.queue_ts = now
        pod.backoff_until = self.backoff_expiry(pod.attempts, now)
        pod.parked_at = now
        if moved_meanwhile:
            self.add(pod, now)
            return
        if key is None:
            cohort = Cohort(None, pod, pod.attempts, now, pod.backoff_until, now)
            self._where[pod.seq] = cohort
            self._to_pool(cohort)
            return
        attempts = min(pod.attempts, self.saturated)
        message = pod.failures.message if pod.failures is not None else None
        joined = self._fresh_cohort(key, attempts, now)
        if joined is None:
            joined = Cohort(key, pod, attempts, now, pod.backoff_until, now)
            joined.message = message
            self._remember(joined, now)
            self._to_pool(joined)
        else:
            if message != joined.message:
                joined.message = None
            joined.base[pod.seq] = joined.bumps
            joined.extend([pod])
        self._where[pod.seq] = joined

    def _fresh_cohort(self, key: Key | None, attempts: int, now: float) -> Cohort | None:
        if self._fresh_at != now:
            self._fresh.clear()
            self._fresh_at = now
            return None
        cohort = self._fresh.get((key, attempts))
        if cohort is None or cohort.where is not PARKED or cohort.parked_at != now:
            return None
        return cohort

    def _remember(self, cohort: Cohort, now: float) -> None:
        if self._fresh_at != now:
            self._fresh.clear()
            self._fresh_at = now
        self._fresh[(cohort.key, cohort.attempts)] = cohort

    def _to_pool(self, cohort: Cohort) -> None:
        cohort.where = PARKED
        cohort.entry = None
        self._parked.setdefault(cohort.gpus, {})[cohort] = None

    def backoff_expiry(self, attempts: int, now: float) -> float:
        """``min(initial * 2^(count-1), max)`` after ``now``, truncated to a whole second."""
        if self.max_backoff <= 0 or attempts <= 0:
            return now
        durations = self._durations
        duration = durations[attempts] if attempts < len(durations) else durations[-1]
        return float(math.floor(now + duration))

    # ------------------------------------------------------------------ leaving
    def settle(self, pod: Pod) -> None:
        """Write a queued pod's own fields back from its cohort (its streak is about to be
        read or ended); the cohort no longer vouches for its members' streak message."""
        cohort = self._where.get(pod.seq)
        if cohort is not None:
            self._write_back(cohort, pod)
            cohort.message = None

    def _write_back(self, cohort: Cohort, pod: Pod) -> None:
        if cohort.key is None:
            return  # a cohort of one: the pod's own fields are the cohort's
        pod.attempts = cohort.attempts
        pod.queue_ts = cohort.queue_ts
        pod.backoff_until = cohort.backoff_until
        pod.parked_at = cohort.parked_at
        extra = cohort.bumps - cohort.base[pod.seq]
        if extra and pod.failures is not None:
            pod.failures.count += extra
            pod.failures.last = cohort.last_bump
        cohort.base[pod.seq] = cohort.bumps

    def _detach(self, pod: Pod) -> Cohort | None:
        cohort = self._where.pop(pod.seq, None)
        if cohort is None:
            return None
        self._write_back(cohort, pod)
        del cohort.base[pod.seq]
        pods = cohort.pods
        if cohort.sorted and cohort.head < len(pods) and pods[cohort.head] is pod:
            cohort.head += 1
        elif cohort.base:
            cohort.clean = False
        if not cohort.base:
            if cohort.where is PARKED:
                del self._parked[cohort.gpus][cohort]
            cohort.where = cohort.entry = None
        return cohort

    def remove(self, pod: Pod) -> None:
        """Forget a pod (bound, deleted). Heap entries are dropped lazily when popped."""
        self._detach(pod)

    # ------------------------------------------------------------------ moving
    def wake(self, now: float, free_gpus: int | None = None) -> int:
        """Move parked pods that a cluster event may help (all, or those needing at most
        ``free_gpus``) to activeQ/backoffQ. Returns how many moved."""
        self.move_cycle += 1
        moved = 0
        for gpus in sorted(self._parked):
            if free_gpus is not None and gpus > free_gpus:
                break
            bucket = self._parked[gpus]
            for cohort in bucket:
                self._enqueue(cohort, now)
                moved += len(cohort)
            bucket.clear()
        return moved

    def flush_leftovers(self, now: float) -> int:
        """Every 30 s, pods parked for more than 5 min go back (flushUnschedulablePodsLeftover)."""
        moved = 0
        for bucket in self._parked.values():
            for cohort in [c for c in bucket if now - c.parked_at > MAX_IN_UNSCHEDULABLE_SECONDS]:
                del bucket[cohort]
                self._enqueue(cohort, now)
                moved += len(cohort)
        return moved

    def activate(self, pod: Pod, now: float) -> None:
        """Move one pod to activeQ now (its nomination was cleared)."""
        cohort = self._where.get(pod.seq)
        if cohort is not None and cohort.where is PARKED:
            self._detach(pod)
            pod.backoff_until = min(pod.backoff_until, now)
            self.add(pod, now)

    def release_backoff(self, now: float) -> None:
        """Backoff expired: move those pods to activeQ, in activeQ order within the window."""
        backoff = self._backoff
        while backoff and backoff[0][0] <= now:
            entry = heapq.heappop(backoff)
            cohort = entry[-1]
            if cohort.entry is entry:
                self._enqueue(cohort, now)

    def next_backoff_expiry(self) -> float | None:
        backoff = self._backoff
        while backoff and backoff[0][-1].entry is not backoff[0]:
            heapq.heappop(backoff)
        return backoff[0][0] if backoff else None

    def has_parked(self) -> bool:
        return any(self._parked.values())

    # ------------------------------------------------------------------ popping
    def head(self) -> Cohort | None:
        """The cohort whose first member activeQ would pop next (left in place)."""
        active = self._active
        while active:
            entry = active[0]
            cohort = entry[-1]
            if cohort.entry is not entry:
                heapq.heappop(active)
                continue
            seq = cohort.first().seq
            if seq != entry[2]:  # its first member left: re-key it
                heapq.heappop(active)
                fixed: _Active = (entry[0], entry[1], seq, next(self._tie), cohort)
                heapq.heappush(active, fixed)
                cohort.entry = fixed
                continue
            return cohort
        return None

    def head_key(self) -> tuple[int, float, int] | None:
        """activeQ's key (-priority, timestamp, seq) of the pod it would pop next."""
        cohort = self.head()
        if cohort is None:
            return None
        return (-cohort.priority, cohort.queue_ts, cohort.first().seq)

    def pop(self) -> Pod | None:
        """Highest priority, then earliest queue timestamp."""
        cohort = self.head()
        if cohort is None:
            return None
        pod = cohort.first()
        self._detach(pod)
        return pod

    def take(self) -> Cohort | None:
        """Take the head cohort out of activeQ whole (its members stay queued in it)."""
        cohort = self.head()
        if cohort is not None:
            heapq.heappop(self._active)
            cohort.entry = None
            cohort.where = None
        return cohort

    def split_before(self, cohort: Cohort, key: tuple[int, float, int] | None) -> Cohort:
        """Split a taken cohort at activeQ ``key``: members ordered after it go back to
        activeQ; returns the members before it (all of them if ``key`` is later than every
        member, or None). Only the smaller part's pods change cohort."""
        if key is None or key[:2] > (-cohort.priority, cohort.queue_ts):
            return cohort
        cohort.first()
        pods, base, head = cohort.pods, cohort.base, cohort.head
        cut = bisect_left(pods, key[2], lo=head, key=_seq)
        if cohort.clean and len(pods) - head == len(base):
            # every entry past head is a member: cut in place, only the smaller part is
            # copied (a cohort of a long backlog holds thousands of pods)
            if cut == len(pods):
                return cohort
            moved_after = len(pods) - cut <= cut - head
            if moved_after:
                moving = pods[cut:]
                del pods[cut:]
            else:
                moving = pods[head:cut]
                cohort.head = cut
            kept = None
        else:
            before = [p for p in pods[head:cut] if p.seq in base]
            after = [p for p in pods[cut:] if p.seq in base]
            if not after:
                return cohort
            moved_after = len(after) <= len(before)
            moving, kept = (after, before) if moved_after else (before, after)
        part = Cohort(
            cohort.key,
            moving[0],
            cohort.attempts,
            cohort.queue_ts,
            cohort.backoff_until,
            cohort.parked_at,
        )
        part.bumps, part.last_bump, part.message = cohort.bumps, cohort.last_bump, cohort.message
        part.pods = moving
        part.base = {p.seq: base.pop(p.seq) for p in moving}
        where = self._where
        for p in moving:
            where[p.seq] = part
        if kept is not None:
            cohort.pods, cohort.head, cohort.clean = kept, 0, True
        replayed, back = (cohort, part) if moved_after else (part, cohort)
        self._enqueue(back, math.inf)  # it was in activeQ: its backoff is over
        return replayed

    def replay(self, cohort: Cohort, now: float) -> None:
        """Every member of a taken cohort failed again with its streak's message: one more
        attempt for all, the backoff restarted, back to the unschedulable pool."""
        cohort.attempts = min(cohort.attempts + 1, self.saturated)
        cohort.queue_ts = cohort.parked_at = now
        cohort.backoff_until = self.backoff_expiry(cohort.attempts, now)
        cohort.bumps += 1
        cohort.last_bump = now
        other = self._fresh_cohort(cohort.key, cohort.attempts, now)
        if other is None:
            self._remember(cohort, now)
            self._to_pool(cohort)
            return
        small, large = (cohort, other) if len(cohort) <= len(other) else (other, cohort)
        moving = small.members()
        shift = large.bumps - small.bumps  # keeps count + bumps - base for every mover
        large.base.update({seq: b + shift for seq, b in small.base.items()})
        large.extend(moving)
        where = self._where
        for pod in moving:
            where[pod.seq] = large
        if small.message != large.message:
            large.message = None
        if small is other:
            del self._parked[other.gpus][other]
            other.where = other.entry = None
            self._remember(large, now)
            self._to_pool(large)
        small.base = {}
