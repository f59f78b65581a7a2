"""What runs inside the pods: progress, checkpoints, and how each application recovers.

The scheduler cannot see any of this; it is our model (domain.md §3), and it is where
the costs that a count of killed pods hides come from.

Progress is measured in seconds of work at full strength. A running segment alternates
``interval`` seconds of work with ``write`` seconds of checkpoint writing, so progress,
the last durable checkpoint and the completion time follow in closed form: no event per
checkpoint is needed while the run goes on. When the segment closes, its periodic writes
are logged as one ``CheckpointWritten`` row (:class:`Written`): the last write's time and
durable progress, and in ``related`` how many writes the row stands for; the others came
every ``interval + write`` seconds before it, so the timeline derives them. A write the
pattern does not predict (on SIGTERM) is a row of its own. Per-member units name their
pod; a group's unit is the workload's, so its rows name no pod (docs/events.md).
"""

from __future__ import annotations

import math
from abc import ABC, abstractmethod
from collections.abc import Callable
from typing import TYPE_CHECKING, Any, NamedTuple, Protocol

from scheduler_core import events as ev
from scheduler_core.fast_costs import CostTable
from scheduler_core.model import Pod, PodState, Workload
from scheduler_core.spec import RecoveryModel

if TYPE_CHECKING:
    from scheduler_core.spec import Workload as WorkloadSpec

EPS = 1e-9


class Host(Protocol):
    """What an application may ask of the engine."""

    now: float
    checkpoint_victims: bool

    def emit(
        self,
        reason: ev.Reason,
        workload: Workload,
        pod: Pod | None = None,
        *,
        time: float | None = None,
        value: float = 0.0,
        related: str = "",
        message: str = "",
    ) -> None: ...

    def at(self, time: float, callback: Callable[..., None], *args: Any) -> None: ...

    def pod_completed(self, pod: Pod) -> None: ...

    def restart_group(self, workload: Workload, cause: str) -> None: ...


class Written(NamedTuple):
    """The periodic checkpoints one running segment wrote: ``writes`` of them, the last
    completed at ``last`` and holding ``progress``; one every ``cycle`` seconds before it."""

    writes: int
    last: float
    progress: float
    cycle: float


class Progress:
    """Progress of one unit of work: an independent shard, or a whole group."""

    __slots__ = (
        "computed",
        "durable",
        "index",
        "interval",
        "p0",
        "pending",
        "rate",
        "required",
        "running",
        "seg_start",
        "table",
        "token",
        "write",
    )

    def __init__(self, required: float | None, interval: float | None, write: float) -> None:
        self.required = required
        self.interval = interval
        self.write = write
        self.p0 = 0.0
        self.durable = 0.0
        self.seg_start = 0.0
        self.rate = 0.0
        self.running = False
        self.computed = 0.0
        self.token = 0
        self.pending: list[list[float]] = []
        """Disruptions not yet recovered from: [time, progress at it, resumed?]."""
        self.table: CostTable | None = None
        """The run's cost arrays (scheduler_core/fast_costs.py) this unit writes its
        segment state to, at its ``index``, whenever that changes (None: no arrays)."""
        self.index = 0

    # --------------------------------------------------------------- closed form
    def at(self, t: float) -> float:
        if not self.running:
            return self.p0
        return self.p0 + self.rate * self._work_in(t - self.seg_start)

    def _work_in(self, x: float) -> float:
        if self.interval is None:
            return x
        cycle = self.interval + self.write
        k = math.floor(x / cycle + EPS)
        return k * self.interval + min(x - k * cycle, self.interval)

    def durable_at(self, t: float) -> float:
        """The progress the last checkpoint completed by ``t`` holds."""
        if not self.running:
            return self.durable
        k = self._checkpoints_in(t - self.seg_start)
        return self.p0 + self.rate * k * self.interval if k else self.durable  # type: ignore[operator]

    def _wall_for(self, work: float) -> float:
        """Wall seconds of running needed for ``work`` more progress (writes included)."""
        run = work / self.rate
        if self.interval is None:
            return run
        writes = max(0, math.ceil(run / self.interval - EPS) - 1)
        return run + writes * self.write

    def _checkpoints_in(self, x: float) -> int:
        if self.interval is None:
            return 0
        return math.floor(x / (self.interval + self.write) + EPS)

    # --------------------------------------------------------------- segments
    def start(self, t: float, rate: float) -> float | None:
        """Begin running at ``rate``; returns when the work completes (None: never)."""
        self.running, self.seg_start, self.rate = True, t, rate
        self.token += 1
        if self.table is not None:
            self.table.sync(self)
        if self.required is None or rate <= 0:
            return None
        return t + self._wall_for(max(0.0, self.required - self.p0))

    def stop(self, t: float) -> Written | None:
        """End the segment at ``t``; returns the checkpoints written in it (None: none),
        in closed form: nothing is computed per checkpoint."""
        if not self.running:
            return None
        start, p0, rate, interval = self.seg_start, self.p0, self.rate, self.interval
        count = self._written_in(t - start)
        if count:
            self.durable = p0 + rate * count * interval  # type: ignore[operator]
        progress = self.at(t)
        self.computed += progress - p0
        self.p0 = progress
        self.running = False
        self.token += 1
        if self.table is not None:
            self.table.sync(self)
        if not count:
            return None
        cycle = (interval or 0.0) + self.write
        return Written(count, start + count * cycle, self.durable, cycle)

    def _written(self, j: int) -> bool:
        """Whether checkpoint ``j`` of the running segment comes before the work is done
        (the last stretch of work completes the pod; no checkpoint is written then)."""
        if self.required is None:
            return True
        assert self.interval is not None, "a segment that writes checkpoints has an interval"
        return self.p0 + self.rate * j * self.interval < self.required - EPS

    def _written_in(self, x: float) -> int:
        """How many checkpoints the segment wrote in its first ``x`` seconds: the
        checkpoints that fit, less those at or past completion, found in closed form."""
        count = self._checkpoints_in(x)
        if count == 0 or self._written(count):
            return count
        if not self._written(1):
            return 0
        low, high = 1, count  # _written(low) holds, _written(high) does not: bisect
        while high - low > 1:
            middle = (low + high) // 2
            if self._written(middle):
                low = middle
            else:
                high = middle
        return low

    def time_to_reach(self, target: float) -> float | None:
        """When the running segment reaches ``target`` progress (None if it does not run)."""
        if not self.running or self.rate <= 0:
            return None
        if target <= self.p0:
            return self.seg_start
        return self.seg_start + self._wall_for(target - self.p0)

    def rollback(self) -> float:
        """Restart from the last durable checkpoint; returns the progress lost."""
        lost = self.p0 - self.durable
        self.p0 = self.durable
        if self.table is not None:
            self.table.sync(self)
        return lost

    def checkpointed(self) -> None:
        """A checkpoint on SIGTERM made the progress reached durable."""
        self.durable = self.p0
        if self.table is not None:
            self.table.sync(self)


class App(ABC):
    """Base application: bookkeeping shared by every recovery model."""

    def __init__(self, host: Host, workload: Workload) -> None:
        self.host = host
        self.workload = workload
        spec: WorkloadSpec = workload.spec
        self.spec = spec
        self.ckpt = spec.checkpoint
        self.member_gpus = spec.gpu_amount

    # ---------------------------------------------------------------- helpers
    def _new_progress(self) -> Progress:
        progress = Progress(
            self.spec.duration_seconds, self.ckpt.interval_seconds, self.ckpt.write_seconds
        )
        table = getattr(self.host, "cost_table", None)
        if table is not None:
            table.register(progress)
        return progress

    def _sigterm_checkpoint_fits(self, grace: float) -> bool:
        """A checkpoint on SIGTERM counts only if its write and the stop fit in the grace."""
        wanted = self.ckpt.on_sigterm or self.host.checkpoint_victims
        return (
            wanted
            and self.ckpt.interval_seconds is not None
            and self.ckpt.write_seconds + self.spec.stop_seconds <= grace + EPS
        )

    # ---------------------------------------------------------------- costs
    def eviction_cost(self, pod: Pod, now: float) -> dict[str, float]:
        """What evicting ``pod`` now is expected to cost (our model, for checkpoint-aware):
        GPU-seconds of lost work, stranded capacity and startup thrown away, GPU-seconds
        to get back to speed, and sessions a user would lose."""
        recovery = self.spec.startup_seconds * pod.gpu_amount
        if pod.state is PodState.STARTING:
            return {"startup": (now - pod.bound_at) * pod.gpu_amount, "recovery": recovery}
        cost = {"lostWork": self.lost_if_evicted(pod, now), "recovery": recovery}
        if self.spec.recovery.model is RecoveryModel.INTERACTIVE:
            cost["session"] = 1.0
        return cost

    def lost_if_evicted(self, pod: Pod, now: float) -> float:
        """GPU-seconds of progress that an eviction now would throw away."""
        return 0.0

    def _unsaved(self, progress: Progress, now: float, gpus: float) -> float:
        grace = self.spec.termination_grace_period_seconds
        if self._sigterm_checkpoint_fits(grace):
            return 0.0
        return max(0.0, progress.at(now) - progress.durable_at(now)) * gpus

    def stop_seconds(self, grace: float, checkpointing: bool) -> float:
        """How long the pod takes to stop after SIGTERM: its real stop time, plus a
        checkpoint write when one is attempted, never more than the grace period."""
        needed = self.spec.stop_seconds + (self.ckpt.write_seconds if checkpointing else 0.0)
        return min(needed, grace)

    def _log_checkpoints(self, written: Written | None, pod: Pod | None) -> None:
        """One row for a segment's periodic writes: ``related`` counts them when there
        is more than one (the series of ``kubectl``'s aggregated events)."""
        if written is not None:
            self.host.emit(
                ev.CHECKPOINT,
                self.workload,
                pod,
                time=written.last,
                value=written.progress,
                related=str(written.writes) if written.writes > 1 else "",
            )

    def _loading_loss(self, pod: Pod, cause: str) -> None:
        spent = self.host.now - pod.bound_at
        self.host.emit(
            ev.LOADING_LOST, self.workload, pod, value=spent * pod.gpu_amount, related=cause
        )
        self.host.emit(
            ev.DISRUPTED,
            self.workload,
            pod,
            value=spent * pod.gpu_amount,
            related=cause,
            message=f"evicted after {spent:.0f}s of {self.spec.startup_seconds:.0f}s startup",
        )

    def _close_pending(self, progress: Progress, t: float) -> None:
        """Log recoveries that the segment ending at ``t`` achieved."""
        still = []
        for item in progress.pending:
            reached = progress.time_to_reach(item[1])
            if reached is not None and reached <= t + EPS:
                self.host.emit(ev.RECOVERED, self.workload, time=reached, value=item[0])
            else:
                still.append(item)
        progress.pending = still

    def _resume(self, progress: Progress, t: float) -> None:
        for item in progress.pending:
            if not item[2]:
                item[2] = 1.0
                self.host.emit(ev.RESUMED, self.workload, time=t, value=item[0])

    def _disrupted_progress(
        self, progress: Progress, pod: Pod, grace: float, gpus: float, cause: str
    ) -> bool:
        """Stop ``progress`` at a disruption, checkpoint on SIGTERM when it fits, roll back
        to the last durable checkpoint and log the lost work. Returns True if a SIGTERM
        checkpoint is being written. Checkpoint rows name ``pod`` only when the unit is
        its own (:meth:`_unit_pod`)."""
        now = self.host.now
        owner = self._unit_pod(pod)
        at_disruption = progress.at(now)
        self._close_pending(progress, now)
        self._log_checkpoints(progress.stop(now), owner)
        checkpointing = self._sigterm_checkpoint_fits(grace)
        if checkpointing:
            progress.checkpointed()
            self.host.emit(
                ev.CHECKPOINT,
                self.workload,
                owner,
                time=now + self.ckpt.write_seconds,
                value=progress.p0,
                message="checkpoint on SIGTERM",
            )
        lost = progress.rollback()
        self.host.emit(
            ev.DISRUPTED,
            self.workload,
            pod,
            value=lost * gpus,
            related=cause,
            message=f"{lost:.0f}s of progress since the last checkpoint lost",
        )
        if progress.required is None or at_disruption < progress.required - EPS:
            progress.pending.append([now, at_disruption, 0.0])
        return checkpointing

    def _unit_pod(self, pod: Pod) -> Pod | None:
        """The pod a checkpoint of ``pod``'s unit of work is logged on: its own."""
        return pod

    # ---------------------------------------------------------------- interface
    @abstractmethod
    def ready(self, pod: Pod) -> None:
        """A member became Ready: progress may start."""

    @abstractmethod
    def interrupt(self, pod: Pod, grace: float, cause: str) -> float:
        """SIGTERM (grace > 0) or kill (grace == 0). Returns seconds until the pod stops."""

    @abstractmethod
    def kept(self, t: float) -> float:
        """GPU-seconds of progress held at ``t`` (what a disruption now could still cost)."""

    @abstractmethod
    def finish(self) -> tuple[float, float, float]:
        """At the horizon: (useful GPU-s kept, GPU-s remaining, GPU-s computed)."""


class PerMemberApp(App):
    """Independent shards and interactive sessions: each member its own unit of work."""

    def __init__(self, host: Host, workload: Workload) -> None:
        super().__init__(host, workload)
        self.units = [self._new_progress() for _ in range(self.spec.members)]

    def ready(self, pod: Pod) -> None:
        unit = self.units[pod.member]
        self._resume(unit, self.host.now)
        done = unit.start(self.host.now, 1.0)
        if done is not None:
            self.host.at(done, self._done, pod, unit.token)

    def _done(self, pod: Pod, token: int) -> None:
        unit = self.units[pod.member]
        if token == unit.token and pod.state is PodState.READY:
            self._close_pending(unit, self.host.now)
            self._log_checkpoints(unit.stop(self.host.now), pod)
            self.host.pod_completed(pod)

    def lost_if_evicted(self, pod: Pod, now: float) -> float:
        return self._unsaved(self.units[pod.member], now, pod.gpu_amount)

    def interrupt(self, pod: Pod, grace: float, cause: str) -> float:
        if pod.state is PodState.STARTING:
            self._loading_loss(pod, cause)
            return self.stop_seconds(grace, False)
        checkpointing = self._disrupted_progress(
            self.units[pod.member], pod, grace, pod.gpu_amount, cause
        )
        if self.spec.recovery.model is RecoveryModel.INTERACTIVE:
            self.host.emit(ev.SESSION_LOST, self.workload, pod, value=1, related=cause)
        return self.stop_seconds(grace, checkpointing)

    def kept(self, t: float) -> float:
        return sum(unit.at(t) for unit in self.units) * self.member_gpus

    def finish(self) -> tuple[float, float, float]:
        now = self.host.now
        useful = remaining = computed = 0.0
        for unit, pod in zip(self.units, self.workload.slots, strict=True):
            self._close_pending(unit, now)
            self._log_checkpoints(unit.stop(now), pod)  # a running unit's pod is its slot's
            useful += unit.p0
            computed += unit.computed
            if unit.required is not None:
                remaining += max(0.0, unit.required - unit.p0)
        g = self.member_gpus
        return useful * g, remaining * g, computed * g


class ServingApp(App):
    """Inference replicas: capacity is the number of Ready replicas; nothing to complete."""

    def __init__(self, host: Host, workload: Workload) -> None:
        super().__init__(host, workload)
        self.ready_since: list[float | None] = [None] * self.spec.members
        self.served = 0.0
        self.pending: list[list[float]] = [[] for _ in range(self.spec.members)]

    def ready(self, pod: Pod) -> None:
        now = self.host.now
        self.ready_since[pod.member] = now
        for disrupted_at in self.pending[pod.member]:
            self.host.emit(ev.RESUMED, self.workload, pod, value=disrupted_at)
            self.host.emit(ev.RECOVERED, self.workload, pod, value=disrupted_at)
        self.pending[pod.member] = []

    def interrupt(self, pod: Pod, grace: float, cause: str) -> float:
        now = self.host.now
        if pod.state is PodState.STARTING:
            self._loading_loss(pod, cause)
        else:
            since = self.ready_since[pod.member]
            if since is not None:
                self.served += (now - since) * pod.gpu_amount
            self.ready_since[pod.member] = None
            self.host.emit(
                ev.DISRUPTED,
                self.workload,
                pod,
                value=0.0,
                related=cause,
                message="replica lost; serving capacity reduced",
            )
        self.pending[pod.member].append(now)
        return self.stop_seconds(grace, False)

    def kept(self, t: float) -> float:
        return self.served + sum(
            (t - s) * self.member_gpus for s in self.ready_since if s is not None
        )

    def finish(self) -> tuple[float, float, float]:
        now = self.host.now
        for since in self.ready_since:
            if since is not None:
                self.served += (now - since) * self.member_gpus
        return self.served, 0.0, self.served


class GroupApp(App):
    """Synchronous and elastic training: one unit of work shared by the members.

    Synchronous: progress only while every member is Ready; a lost member stalls the
    survivors, who hold their GPUs uselessly (stranded) until the group restarts from
    its checkpoint. Elastic: progress at ``live / members`` of full speed while at least
    ``minMembers`` are live; a member lost restarts the survivors from the checkpoint
    (as torchelastic does); a member joining costs nothing.
    """

    def __init__(self, host: Host, workload: Workload) -> None:
        super().__init__(host, workload)
        self.unit = self._new_progress()
        self.live: dict[int, Pod] = {}
        self.elastic = self.spec.recovery.model is RecoveryModel.ELASTIC
        self.needed = (self.spec.recovery.min_members or 1) if self.elastic else self.spec.members
        self.stranded_since = 0.0
        self.stranded_gpus: float = 0
        self.finished = False

    def _unit_pod(self, pod: Pod) -> Pod | None:
        """The group's progress is one unit written by every member: its checkpoints
        name no pod, and the timeline draws each on the members holding GPUs then."""
        return None

    def _rate(self) -> float:
        if len(self.live) < self.needed:
            return 0.0
        return len(self.live) / self.spec.members if self.elastic else 1.0

    def _account_stranded(self) -> None:
        """Close the interval in which ``stranded_gpus`` were held without progress."""
        now = self.host.now
        if self.stranded_gpus and now > self.stranded_since:
            self.host.emit(
                ev.STRANDED,
                self.workload,
                time=now,
                value=self.stranded_gpus * (now - self.stranded_since),
                message=f"{self.stranded_gpus:g} GPU(s) held while the group waits",
            )
        self.stranded_since = now
        idle = not self.unit.running and not self.finished
        self.stranded_gpus = sum(p.gpu_amount for p in self.live.values()) if idle else 0

    def _restart_segment(self) -> None:
        now = self.host.now
        if self.unit.running:
            self._close_pending(self.unit, now)
            self._log_checkpoints(self.unit.stop(now), None)
        rate = self._rate()
        if rate > 0 and not self.finished:
            self._resume(self.unit, now)
            done = self.unit.start(now, rate)
            if done is not None:
                self.host.at(done, self._done, self.unit.token)
        self._account_stranded()

    def ready(self, pod: Pod) -> None:
        self.live[pod.member] = pod
        if self.elastic or not self.unit.running:
            self._restart_segment()

    def eviction_cost(self, pod: Pod, now: float) -> dict[str, float]:
        """A synchronous group losing a member loses the whole group's unsaved work and
        strands the survivors until a replacement is Ready."""
        cost = super().eviction_cost(pod, now)
        if pod.state is not PodState.STARTING and not self.elastic and self.unit.running:
            survivors = self.workload.gpu_amount_total - pod.gpu_amount
            cost["strandedCapacity"] = survivors * self.spec.startup_seconds
        return cost

    def lost_if_evicted(self, pod: Pod, now: float) -> float:
        if not self.unit.running:
            return 0.0
        return self._unsaved(self.unit, now, self.workload.gpu_amount_total)

    def _done(self, token: int) -> None:
        if token != self.unit.token:
            return
        now = self.host.now
        self._close_pending(self.unit, now)
        self._log_checkpoints(self.unit.stop(now), None)
        self.finished = True
        self._account_stranded()
        for pod in list(self.live.values()):
            self.host.pod_completed(pod)
        self.live.clear()

    def interrupt(self, pod: Pod, grace: float, cause: str) -> float:
        if self.live.pop(pod.member, None) is None:
            if pod.state is PodState.STARTING and cause != "group-restart":
                self._loading_loss(pod, cause)
            self._account_stranded()
            return self.stop_seconds(grace, False)
        checkpointing = False
        if self.unit.running:
            checkpointing = self._disrupted_progress(
                self.unit, pod, grace, self.workload.gpu_amount_total, cause
            )
        elif cause != "group-restart":
            self.host.emit(
                ev.DISRUPTED,
                self.workload,
                pod,
                value=0.0,
                related=cause,
                message="a member of a stalled group: nothing more to lose",
            )
        self._restart_segment()
        if (
            not self.elastic
            and self.spec.controller.kind.value == "jobset"
            and self.spec.controller.restart == "group"
            and cause != "group-restart"
        ):
            self.host.restart_group(self.workload, cause)
        return self.stop_seconds(grace, checkpointing)

    def kept(self, t: float) -> float:
        return self.unit.at(t) * self.workload.gpu_amount_total

    def finish(self) -> tuple[float, float, float]:
        now = self.host.now
        self._close_pending(self.unit, now)
        self._log_checkpoints(self.unit.stop(now), None)
        self._account_stranded()
        g = self.workload.gpu_amount_total
        required = self.unit.required
        remaining = 0.0 if required is None else max(0.0, required - self.unit.p0)
        return self.unit.p0 * g, remaining * g, self.unit.computed * g


def make_app(host: Host, workload: Workload) -> App:
    """The application model for a workload's recovery model."""
    model = workload.spec.recovery.model
    if model in (RecoveryModel.SYNCHRONOUS, RecoveryModel.ELASTIC):
        return GroupApp(host, workload)
    if model is RecoveryModel.SERVING and workload.spec.duration_seconds is None:
        return ServingApp(host, workload)
    return PerMemberApp(host, workload)
