"""The scheduling queue of kube-scheduler (kubernetes-preemption.md §2).

activeQ is ordered by priority, then by the time the pod was (re)queued; a pod that
failed waits in the unschedulable pool until a cluster event may have made room, or in
backoffQ until its backoff (1 s doubling to 10 s, truncated to a whole second) expires.
A retry is not a reservation: whatever frees first goes to whoever is popped first.
"""

from __future__ import annotations

import heapq
import math

from scheduler_core.model import Pod

UNSCHEDULABLE_FLUSH_SECONDS = 30.0
MAX_IN_UNSCHEDULABLE_SECONDS = 300.0
PARKED = object()
_Active = tuple[int, float, int, Pod]
"""activeQ heap entry: (-priority, queue timestamp, seq, pod)."""
_Backoff = tuple[float, int, float, int, Pod]
"""backoffQ heap entry: (backoff expiry, then as activeQ)."""


class SchedulingQueue:
    def __init__(self, initial_backoff: float, max_backoff: float) -> None:
        self.initial_backoff = initial_backoff
        self.max_backoff = max_backoff
        self._active: list[_Active] = []
        self._backoff: list[_Backoff] = []
        self._parked: dict[int, dict[Pod, None]] = {}
        """Unschedulable pool, bucketed by GPU request so a freed node wakes only pods that
        could fit it (the NodeResourcesFit queueing hint)."""
        self.move_cycle = 0
        """Counts cluster events that moved pods (moveRequestCycle upstream)."""
        self._where: dict[Pod, object] = {}
        """Where each queued pod is: its live heap entry, or PARKED. Heap entries that are
        no longer a pod's live entry are stale and skipped when popped."""

    def __len__(self) -> int:
        return len(self._where)

    def __contains__(self, pod: Pod) -> bool:
        return pod in self._where

    # ------------------------------------------------------------------ adding
    def add(self, pod: Pod, now: float) -> None:
        """A new pod, or one moved by an event: activeQ unless its backoff is running."""
        entry: _Active | _Backoff
        if pod.backoff_until > now:
            entry = (pod.backoff_until, -pod.priority, pod.queue_ts, pod.seq, pod)
            heapq.heappush(self._backoff, entry)
        else:
            entry = (-pod.priority, pod.queue_ts, pod.seq, pod)
            heapq.heappush(self._active, entry)
        self._where[pod] = entry

    def park(self, pod: Pod, now: float, *, moved_meanwhile: bool = False) -> None:
        """A failed attempt: count it, start the backoff, wait for a cluster event.

        If a cluster event moved pods during this pod's own cycle (its victims already
        stopped, say), the pod goes to backoffQ instead: that event will not come again
        (AddUnschedulableIfNotPresent with moveRequestCycle >= the pod's cycle)."""
        pod.attempts += 1
        pod.queue_ts = now
        pod.backoff_until = self.backoff_expiry(pod.attempts, now)
        pod.parked_at = now
        if moved_meanwhile:
            self.add(pod, now)
            return
        self._where[pod] = PARKED
        self._parked.setdefault(pod.gpus, {})[pod] = None

    def backoff_expiry(self, attempts: int, now: float) -> float:
        """``min(initial * 2^(count-1), max)`` after ``now``, truncated to a whole second."""
        if self.max_backoff <= 0 or attempts <= 0:
            return now
        doublings = min(attempts - 1, 62)  # the cap is reached long before; keeps floats finite
        duration = min(self.initial_backoff * 2**doublings, self.max_backoff)
        return float(math.floor(now + duration))

    def remove(self, pod: Pod) -> None:
        """Forget a pod (bound, deleted). Heap entries are dropped lazily when popped."""
        where = self._where.pop(pod, None)
        if where is PARKED:
            self._parked[pod.gpus].pop(pod, None)

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
            for pod in list(bucket):
                del bucket[pod]
                self.add(pod, now)
                moved += 1
        return moved

    def flush_leftovers(self, now: float) -> int:
        """Every 30 s, pods parked for more than 5 min go back (flushUnschedulablePodsLeftover)."""
        moved = 0
        for bucket in self._parked.values():
            for pod in [p for p in bucket if now - p.parked_at > MAX_IN_UNSCHEDULABLE_SECONDS]:
                del bucket[pod]
                self.add(pod, now)
                moved += 1
        return moved

    def activate(self, pod: Pod, now: float) -> None:
        """Move one pod to activeQ now (its nomination was cleared)."""
        if self._where.get(pod) is PARKED:
            self._parked[pod.gpus].pop(pod, None)
            pod.backoff_until = min(pod.backoff_until, now)
            self.add(pod, now)

    def release_backoff(self, now: float) -> None:
        """Backoff expired: move those pods to activeQ, in activeQ order within the window."""
        while self._backoff and self._backoff[0][0] <= now:
            entry = heapq.heappop(self._backoff)
            pod = entry[-1]
            if self._where.get(pod) is entry:
                active = (-pod.priority, pod.queue_ts, pod.seq, pod)
                heapq.heappush(self._active, active)
                self._where[pod] = active

    def next_backoff_expiry(self) -> float | None:
        while self._backoff and self._where.get(self._backoff[0][-1]) is not self._backoff[0]:
            heapq.heappop(self._backoff)
        return self._backoff[0][0] if self._backoff else None

    def has_parked(self) -> bool:
        return any(self._parked.values())

    def pop(self) -> Pod | None:
        """Highest priority, then earliest queue timestamp."""
        while self._active:
            entry = heapq.heappop(self._active)
            pod = entry[-1]
            if self._where.get(pod) is entry:
                del self._where[pod]
                return pod
        return None
