"""The discrete-event engine: one object owns the clock, the cluster, the queue and the log.

The heap holds plain tuples ``(time, seq, callback, args)``; ``seq`` comes from a counter,
so events at the same time run in the order they were scheduled and a run is a pure
function of (spec, variant, seed). The engine has its own ``random.Random(seed)``; there
is no module-level state, so many simulations can share one worker process.

After every instant (all events at one time), a scheduling pass pops pods from activeQ
in priority order and runs Filter/Score, then PostFilter (the variant's preemption
policy) for a pod that fits nowhere.
"""

from __future__ import annotations

import heapq
import itertools
import random
from collections.abc import Callable
from typing import Any, NamedTuple

from scheduler_core import devices
from scheduler_core import events as ev
from scheduler_core.admission import Admission
from scheduler_core.app import make_app
from scheduler_core.cluster import TOO_LARGE, Cluster
from scheduler_core.decisions import NAMESPACE, Decision, Recorder, diagnose
from scheduler_core.events import Event
from scheduler_core.fast import skip_randrange
from scheduler_core.fast_costs import CostTable
from scheduler_core.fragmentation import FragmentationMeter, target_workload
from scheduler_core.gc_pause import gc_paused
from scheduler_core.guards import Guards
from scheduler_core.model import HOLDING_STATES, RUNNING_STATES, Node, Pod, PodState, Workload
from scheduler_core.plugins import registry
from scheduler_core.plugins.topology import place_with_topology
from scheduler_core.queue import UNSCHEDULABLE_FLUSH_SECONDS, Cohort, SchedulingQueue
from scheduler_core.retries import Retries
from scheduler_core.spares import Spares
from scheduler_core.spec import (
    SYSTEM_CLASSES,
    ControllerKind,
    ExperimentSpec,
    PreemptionPolicy,
    ResolvedVariant,
    TimelineEvent,
    TopologyConstraint,
)
from scheduler_core.spec import Workload as WorkloadSpec
from scheduler_core.status import Code, Status

ProgressCallback = Callable[[float], None]


class Doomed(NamedTuple):
    """A class's failed verdict and the cluster it was made on."""

    epoch: int
    """Cluster epoch when it was made (or last confirmed)."""
    seen: int
    """``Cluster.touched_count`` then: the nodes changed since are the ones to look at."""
    version: int
    """Cluster version then (nodes come or go: the candidate count, hence the draw, moves)."""
    status: Status
    drawn: int | None
    """The bound of the random draw the attempt made (None: it made none)."""
    message: str


NOT_HELPFUL_REASON = "Preemption is not helpful for scheduling"
GROUP_INCOMPLETE = Status(
    Code.UNSCHEDULABLE_AND_UNRESOLVABLE,
    "fewer than minCount pods of the group exist",
    "GangScheduling",
)


class FailureStreak:
    """Consecutive identical scheduling failures of one pod."""

    __slots__ = ("count", "first", "last", "message", "plugin", "text")

    def __init__(self, message: str, plugin: str, now: float, text: str = "") -> None:
        self.message = message
        """What makes attempts identical (the streak's key)."""
        self.text = text or message
        """What the event says: kube-scheduler's message for the streak's first attempt."""
        self.plugin = plugin
        self.first = self.last = now
        self.count = 1


PROGRESS_EVERY = 8192
DISRUPTED_PODS_TIMEOUT = 120.0
"""The disruption controller drops a pdb.status.disruptedPods entry whose pod was not
deleted within 2 minutes (DeletionTimeout); the snapshot's entries date from t=0."""


def resolve_priority(spec: ExperimentSpec, workload: WorkloadSpec) -> tuple[int, bool, str]:
    """(value, never preempts, class name) as the Priority admission plugin assigns them (§1):
    the group's class for PodGroup members, system classes first, else the global default
    (the lowest-valued one if several), else 0."""
    name = (
        workload.pod_group.priority_class_name if workload.pod_group else None
    ) or workload.priority_class_name
    if name in SYSTEM_CLASSES:
        return SYSTEM_CLASSES[name], False, name
    classes = {pc.name: pc for pc in spec.priority_classes}
    if name is None:
        defaults = [pc for pc in spec.priority_classes if pc.global_default]
        if not defaults:
            return 0, False, ""
        name = min(defaults, key=lambda pc: pc.value).name
    pc = classes[name]
    return pc.value, pc.preemption_policy is PreemptionPolicy.NEVER, name


def minimum_victims(assignments: list[tuple[Pod, Node]]) -> int:
    """The fewest lower-priority pods whose removal could cover each node's shortfall, in
    every resource the preemptors request (GPUs, CPU, memory, pod slots), summed over the
    nodes. Per resource, taking the largest pods first needs the fewest; no choice of
    victims can do with fewer than the largest of those counts, so that is the minimum
    (a victim needed only for CPU or a pod slot is never counted as over-eviction).

    A MIG instance is a resource of its own per profile (``nvidia.com/mig-<profile>``),
    as the preemptor's fit check sees it: SelectVictimsOnNode reprieves every victim
    without which the preemptor still fits (docs/kubernetes-preemption.md §4.3), so a
    victim is needed only for a resource the preemptor requests and lacks, and a
    ``7g.80gb`` preemptor's shortfall is in ``7g.80gb`` instances, not whole GPUs."""
    demand: dict[Node, list[float]] = {}
    mig_demand: dict[Node, dict[str, int]] = {}
    for pod, node in assignments:
        need = demand.setdefault(node, [0, 0.0, 0.0, 0])
        for i, value in enumerate((pod.gpus, pod.cpu, pod.mem, 1)):
            need[i] += value
        if pod.mig:
            profiles = mig_demand.setdefault(node, {})
            for profile, count in pod.mig:
                profiles[profile] = profiles.get(profile, 0) + count
    priority = assignments[0][0].priority
    ours = {pod for pod, _ in assignments}
    fewest = 0
    for node, need in demand.items():
        count = _fewest_covering(node, need, priority, ours)
        if node.dev_free is not None:
            pods = [pod for pod, at in assignments if at is node]
            count = max(count, _fewest_on_devices(node, pods, priority))
        if node in mig_demand:
            count = max(count, _fewest_mig_covering(node, mig_demand[node], priority, ours))
        fewest += count
    return fewest


def _fewest_mig_covering(node: Node, need: dict[str, int], priority: int, ours: set[Pod]) -> int:
    """The MIG part of :func:`minimum_victims`, per profile as :func:`_fewest_covering`
    counts per resource: the node's free instances of the profile, less those nominated
    pods of the preemptors' priority or above claim, plus those terminating pods give
    back, against the request; the lower-priority holders with the most instances of it
    go first. The largest count over the profiles."""
    fewest = 0
    for profile, wanted in need.items():
        short = wanted - node.mig_free.get(profile, 0)
        for p in node.nominated:
            if p not in ours and p.priority >= priority:
                short += dict(p.mig).get(profile, 0)
        sizes: list[int] = []
        for p in node.pods:
            held = dict(p.mig).get(profile, 0) if p.mig else 0
            if not held:
                continue
            if p.state is PodState.TERMINATING:
                short -= held
            elif p.priority < priority:
                sizes.append(held)
        count = 0
        for size in sorted(sizes, reverse=True):
            if short <= 0:
                break
            short -= size
            count += 1
        fewest = max(fewest, count)
    return fewest


def _fewest_on_devices(node: Node, pods: list[Pod], priority: int) -> int:
    """The GPU part of :func:`minimum_victims` on a node that tracks its devices: a share
    needs room on one device, so the fewest victims for it are those of the device that
    needs the fewest (largest shares first); a whole GPU needs a device with nothing on
    it, so every pod on the cheapest devices goes. Preemptors are covered one after
    another, each device used once (a bound, as the whole-GPU count is)."""
    assert node.dev_free is not None
    on_device: list[list[Pod]] = [[] for _ in node.dev_free]
    for pod in node.pods:
        if pod.state is not PodState.TERMINATING:
            for i in pod.devices:
                on_device[i].append(pod)
    left = list(node.dev_free)
    for pod in node.pods:
        if pod.state is PodState.TERMINATING:
            devices.give_back(left, pod.devices, pod.milli)
    used: set[int] = set()
    total = 0
    for pod in sorted(pods, key=lambda p: -(p.milli or p.gpus * devices.FULL)):
        wanted = [pod.milli] * (pod.milli > 0) + [devices.FULL] * pod.gpus
        for need in wanted:
            costs: list[tuple[int, int]] = []
            for i in range(len(left)):
                cost = _device_cover(on_device[i], left[i], need, priority)
                if i not in used and cost is not None:
                    costs.append((cost, i))
            if not costs:
                return total
            cost, i = min(costs)
            used.add(i)
            total += cost
    return total


def _device_cover(holders: list[Pod], free: int, need: int, priority: int) -> int | None:
    """Fewest lower-priority holders of one device to evict so it has ``need`` free; None
    when a holder of the preemptor's priority or above keeps it short."""
    short = need - free
    count = 0
    for pod in sorted(holders, key=lambda p: -(p.milli or devices.FULL)):
        if short <= 0:
            break
        if pod.priority >= priority:
            continue
        short -= pod.milli or devices.FULL
        count += 1
    return count if short <= 0 else None


def _fewest_covering(node: Node, need: list[float], priority: int, ours: set[Pod]) -> int:
    """Per resource: the fewest lower-priority pods, largest first, that cover the node's
    shortfall (nominations of others at the preemptors' priority or above count as taken,
    terminating pods as leaving); the largest of those counts. One pass over the node's
    pods collects every resource's amounts, summed per resource in pod order as before."""
    free = (node.free_gpus, node.free_cpu, node.free_mem, node.max_pods - node.npods)
    claimed: tuple[list[float], ...] = ([], [], [], [])
    for p in node.nominated:
        if p not in ours and p.priority >= priority:
            for part, value in zip(claimed, _amounts(p), strict=True):
                part.append(value)
    leaving: tuple[list[float], ...] = ([], [], [], [])
    lower: tuple[list[float], ...] = ([], [], [], [])
    for p in node.pods:
        into = (
            leaving if p.state is PodState.TERMINATING else lower if p.priority < priority else None
        )
        if into is not None:
            for part, value in zip(into, _amounts(p), strict=True):
                part.append(value)
    fewest = 0
    for i, (wanted, available) in enumerate(zip(need, free, strict=True)):
        if i == 0 and node.dev_free is not None:
            continue  # GPUs per device: _fewest_on_devices
        short = wanted + sum(claimed[i]) - available - sum(leaving[i])
        count = 0
        for size in sorted(lower[i], reverse=True):
            if short <= 1e-9:
                break
            short -= size
            count += 1
        fewest = max(fewest, count)
    return fewest


def _amounts(pod: Pod) -> tuple[float, float, float, int]:
    return (pod.gpus, pod.cpu, pod.mem, 1)


class SimulationLimitError(RuntimeError):
    """A replication logged more events than its caller allows: it is stopped at once,
    before its log outgrows the memory and the rows it would be stored in."""


class Engine:
    """Simulates one variant of an experiment with one seed."""

    cache_verdicts = True
    """Reuse a class's failed verdict while no changed node could help it. Off, every pod
    gets a full scheduling attempt: the reference of the differential tests."""

    collapse_twins = True
    """Queue twins as cohorts and replay doomed ones as a class. Off, every pod is queued
    and replayed on its own: the reference the differential tests compare against."""

    def __init__(
        self,
        variant: ResolvedVariant,
        seed: int,
        progress: ProgressCallback | None = None,
        *,
        max_events: int | None = None,
        explain: bool = True,
    ) -> None:
        spec = variant.spec
        self.spec: ExperimentSpec = spec
        self.variant = variant
        self.horizon = spec.horizon_seconds
        self.now = 0.0
        self.rng = random.Random(seed)
        self._heap: list[tuple[float, int, Callable[..., None], tuple[Any, ...]]] = []
        self._seq = itertools.count()
        self._pod_seq = itertools.count()
        self.log: list[Event] = []
        self.max_events = max_events
        self.cluster = Cluster(spec, (resolve_priority(spec, w)[0] for w in spec.workloads))
        if self.cluster.shares:
            self.cluster.meter = FragmentationMeter(target_workload(spec), lambda: self.now)
            for node in self.cluster.nodes:
                self.cluster.meter.changed(node)
        policy = spec.policy
        self.queue = SchedulingQueue(
            policy.pod_initial_backoff_seconds, policy.pod_max_backoff_seconds
        )
        policy = policy.model_copy(update={"placement": variant.placement})
        self.checkpoint_victims = policy.checkpoint_victims
        self.guards = Guards(policy)
        self._token_wake = False
        self.placement = registry.placement[variant.placement]()
        self.preemption = registry.preemption[variant.preemption](policy)
        self.cost_table = CostTable()
        """The applications' eviction-cost inputs as arrays (fast_costs.py), before the
        applications are made: each registers its units of work there."""
        self.workloads = self._build_workloads(spec)
        self.by_name = {w.name: w for w in self.workloads}
        self.admission = Admission(self, spec)
        self.retries = Retries(self, spec)
        self.spares = Spares(self, spec)
        self._any_pdb = any(w.pdb is not None for w in spec.workloads)
        self._quota_hard = {q.priority_class_name: q.gpus for q in spec.resource_quotas}
        self._quota_used: dict[str, int] = {}
        self._quota_pods: set[Pod] = set()
        self._quota_blocked: dict[str, list[Pod]] = {}
        self._progress = progress
        self._next_progress = PROGRESS_EVERY
        self._wake_at: float | None = None
        self._flush_scheduled = False
        self._streaks: dict[Pod, None] = {}
        self._doomed: dict[tuple[object, ...], Doomed] = {}
        """signature -> the last failed attempt's verdict (see :meth:`_verdict`)."""
        self._hint = self.preemption.queueing_hint()
        self._drawn: int | None = None
        self.events_processed = 0
        self.recorder: Recorder | None = Recorder(self.cluster) if explain else None
        """Decision records (docs/decisions.md); None runs without them (the benchmark)."""
        self.replayed = 0
        """Pods that took a cached verdict as part of a class (``_replay_run``)."""
        self.replay_runs = 0
        self.popped = 0
        """Pods taken from activeQ one by one (a full attempt or a replay of their own)."""

    # =================================================================== setup
    def _build_workloads(self, spec: ExperimentSpec) -> list[Workload]:
        """The runtime workloads. Priorities and "fits on no node" are worked out once per
        distinct class name and shape, not once per workload: a 10k-workload spec would
        otherwise pay O(workloads x nodes) before the first event (issue #14)."""
        workloads = []
        priorities: dict[tuple[str | None, str | None], tuple[int, bool, str]] = {}
        nowhere: dict[tuple[object, ...], bool] = {}
        for idx, wspec in enumerate(spec.workloads):
            names = (
                wspec.pod_group.priority_class_name if wspec.pod_group else None,
                wspec.priority_class_name,
            )
            resolved = priorities.get(names)
            if resolved is None:
                resolved = priorities[names] = resolve_priority(spec, wspec)
            value, never, label = resolved
            workload = Workload(idx, wspec, value, label, never)
            workload.app = make_app(self, workload)
            shape = (
                wspec.gpus,
                wspec.cpu,
                wspec.memory,
                bool(wspec.gpu_milli),
                tuple(sorted(wspec.mig.items())),
            )
            fits_nowhere = nowhere.get(shape)
            if fits_nowhere is None:
                fits_nowhere = nowhere[shape] = not any(
                    wspec.gpus <= n.gpus
                    and wspec.cpu <= n.cpu
                    and wspec.memory <= n.mem
                    and (n.gpus > 0 if wspec.gpu_milli else True)
                    and all(n.mig.get(p, 0) >= c for p, c in wspec.mig.items())
                    for n in self.cluster.nodes
                )
            workload.fits_nowhere = fits_nowhere
            workloads.append(workload)
        return workloads

    def _seed_events(self) -> None:
        if self.spares.enabled:
            self.at(self.now, self.spares.hold_out)
        initial: dict[str, list[Any]] = {}
        for item in self.spec.initial_state:
            initial.setdefault(item.workload, []).append(item)
        for workload in self.workloads:
            placed = initial.get(workload.name, [])
            if placed:
                workload.arrival = min(workload.arrival, *(p.started_at for p in placed))
            self.at(workload.arrival, self._arrive, workload, placed)
        for event in self.spec.events:
            self.at(event.at, self._timeline, event)
        if self.now < 0:
            self.at(0.0, self._window_opens)

    def _window_opens(self) -> None:
        """Metrics measure [0, horizon]: progress recorded pods made before t=0 is not ours."""
        for workload in self.workloads:
            kept = workload.app.kept(0.0)
            if kept:
                self.emit(ev.USEFUL_AT_START, workload, value=kept)

    # =================================================================== the loop
    def at(self, time: float, callback: Callable[..., None], *args: Any) -> None:
        """Schedule ``callback(*args)`` at ``time`` (never in the past)."""
        heapq.heappush(self._heap, (max(time, self.now), next(self._seq), callback, args))

    def fragmentation(self) -> float | None:
        """Mean GPU fragmentation over the window (fragmentation.py), or None where
        devices are not tracked one by one."""
        meter = self.cluster.meter
        if meter is None:
            return None
        share = meter.share(self.horizon, self.cluster.total_gpus_at_start)
        return None if share is None else float(share)

    def run(self) -> list[Event]:
        """Run to the horizon; returns the event log in time order. The cyclic collector
        is paused meanwhile (:mod:`scheduler_core.gc_pause`): nothing it could free is
        made during a run, and its full passes over the growing log cost more per pod
        the longer the run."""
        with gc_paused():
            return self._run()

    def _run(self) -> list[Event]:
        self.now = min(
            [
                0.0,
                *(w.arrival for w in self.spec.workloads),
                *(p.started_at for p in self.spec.initial_state),
            ]
        )
        self._seed_events()
        heap = self._heap
        while heap and heap[0][0] <= self.horizon:
            now = heap[0][0]
            self.now = now
            while heap and heap[0][0] == now:
                _, _, callback, args = heapq.heappop(heap)
                callback(*args)
                self.events_processed += 1
            self._scheduling_pass()
            if self._progress and self.events_processed >= self._next_progress:
                self._next_progress = self.events_processed + PROGRESS_EVERY
                self._progress(min(1.0, max(0.0, now / self.horizon)))
        self.now = self.horizon
        self._finish()
        if self._progress:
            self._progress(1.0)
        return ev.sort_log(self.log)

    def emit(
        self,
        reason: ev.Reason,
        workload: Workload | None,
        pod: Pod | None = None,
        *,
        time: float | None = None,
        value: float = 0.0,
        related: str = "",
        message: str = "",
        node: Node | None = None,
        nodeless: bool = False,
    ) -> None:
        where = None if nodeless else node or (pod.node if pod is not None else None)
        if self.max_events is not None and len(self.log) >= self.max_events:
            raise SimulationLimitError(
                f"the replication logged more than {self.max_events:,} events by t="
                f"{self.now:,.0f}s (LAB_MAX_EVENTS_PER_REPLICATION)"
            )
        self.log.append(
            Event(
                self.now if time is None else time,
                reason,
                workload.name if workload is not None else "",
                pod.name if pod is not None else "",
                where.name if where is not None else "",
                value,
                related,
                message,
            )
        )

    # =================================================================== arrivals
    def _arrive(self, workload: Workload, placed: list[Any]) -> None:
        self.emit(ev.ARRIVED, workload, value=workload.spec.members)
        if workload.spec.queue is not None:
            self.admission.arrive(workload)
            return
        taken: set[int] = set()
        for item in placed:
            member = item.member if item.member is not None else self._free_slot(workload, taken)
            taken.add(member)
            pod = self._new_pod(workload, member)
            node = self.cluster.by_name[item.node]
            if item.nominated:
                self._submit(pod)
                self._recorded_nomination(pod, node)
                continue
            self._count_quota(pod)
            pod.submitted = True
            self.emit(ev.CREATED, workload, pod)
            self.at(item.started_at, self._bind_initial, pod, node, item.terminating_until)
        pending = [m for m in range(workload.spec.members) if m not in taken]
        if pending and workload.spec.arrival > self.now:
            # members not in the recorded state were Pending at the workload's own arrival
            # (a snapshot's pending pods: at t=0), not since its earliest recorded pod
            self.at(workload.spec.arrival, self._submit_members, workload, pending)
        else:
            self._submit_members(workload, pending)

    def _submit_members(self, workload: Workload, members: list[int]) -> None:
        for member in members:
            self._submit(self._new_pod(workload, member))

    # =================================================================== admission
    def queued(self, workload: Workload, queue: str, reason: str) -> None:
        self.emit(ev.QUEUED, workload, related=queue, message=reason)

    def admit(self, workload: Workload, queue: str, message: str = "") -> None:
        """Admitted by its queue: now its pods exist (again, after an eviction).
        ``message`` names the flavors assigned, where the queue has several."""
        workload.suspended = False
        self.emit(ev.ADMITTED, workload, related=queue, message=message)
        self.retries.admitted(workload)
        for member, pod in enumerate(workload.slots):
            if pod is None:
                self._submit(self._new_pod(workload, member))
            elif pod.state is PodState.GONE:
                self._submit(self._new_pod(workload, member, replacement=True))

    def suspend(self, workload: Workload, by: Workload, reason: str) -> None:
        """Queue preemption: the workload is suspended and its pods deleted; it waits in
        its queue again and is not replaced by its controller meanwhile."""
        workload.suspended = True
        self.emit(
            ev.SUSPENDED, workload, related=by.name, message=f"Preempted by {by.name} ({reason})"
        )
        for pod in list(workload.slots):
            if pod is not None:
                self.evict(pod, workload.spec.termination_grace_period_seconds, "queue-preemption")

    def timed_out(self, workload: Workload, requeue_at: float | None) -> None:
        """Kueue's PodsReady timeout (scheduler_core/retries.py): the admission is
        cancelled, the pods deleted; the queue takes it back at ``requeue_at`` (None:
        deactivated, never)."""
        workload.suspended = True
        self.delete_pods(workload, "pods-ready-timeout")
        self.admission.timed_out(workload, requeue_at)

    def delete_pods(self, workload: Workload, cause: str) -> None:
        """Delete every pod of the workload gracefully (its controller gave up on it or
        its admission was cancelled)."""
        for pod in list(workload.slots):
            if pod is not None:
                self.evict(pod, workload.spec.termination_grace_period_seconds, cause)

    # =================================================================== resource quota
    def _submit(self, pod: Pod) -> None:
        """Create a pod, unless a ResourceQuota on its priority class refuses it; the
        controller then retries when quota frees up."""
        klass = pod.workload.priority_class
        hard = self._quota_hard.get(klass)
        if hard is not None and self._quota_used.get(klass, 0) + pod.gpus > hard:
            self._quota_blocked.setdefault(klass, []).append(pod)
            self.emit(
                ev.QUOTA_EXCEEDED,
                pod.workload,
                pod,
                related=klass,
                message=f"exceeded quota for priority class {klass}: requested "
                f"nvidia.com/gpu={pod.gpus}, used {self._quota_used.get(klass, 0)}, "
                f"limited {hard}",
            )
            return
        self._count_quota(pod)
        pod.submitted = True
        self.emit(ev.CREATED, pod.workload, pod, value=1.0 if pod.replacement else 0.0)
        self.queue.add(pod, self.now)

    def _count_quota(self, pod: Pod) -> None:
        klass = pod.workload.priority_class
        if klass in self._quota_hard:
            self._quota_used[klass] = self._quota_used.get(klass, 0) + pod.gpus
            self._quota_pods.add(pod)

    def _uncount_quota(self, pod: Pod) -> None:
        if pod not in self._quota_pods:
            return
        self._quota_pods.discard(pod)
        klass = pod.workload.priority_class
        self._quota_used[klass] -= pod.gpus
        blocked = self._quota_blocked.get(klass, [])
        while blocked and self._quota_used[klass] + blocked[0].gpus <= self._quota_hard[klass]:
            waiting = blocked.pop(0)
            if waiting.workload.slots[waiting.member] is waiting and not waiting.workload.suspended:
                self._submit(waiting)

    @staticmethod
    def _free_slot(workload: Workload, taken: set[int]) -> int:
        return next(m for m in range(workload.spec.members) if m not in taken)

    def _new_pod(self, workload: Workload, member: int, replacement: bool = False) -> Pod:
        """A pod object for a member slot; it exists for the scheduler once submitted."""
        suffix = f"-r{workload.pod_count - workload.spec.members}" if replacement else ""
        pod = Pod(
            next(self._pod_seq), f"{workload.name}-{member}{suffix}", workload, member, self.now
        )
        pod.replacement = replacement
        workload.pod_count += 1
        workload.slots[member] = pod
        return pod

    def _bind_initial(self, pod: Pod, node: Node, terminating_until: float | None) -> None:
        """A pod of the recorded initial state: bound where it was, when it was. A running
        pod stays on a cordoned node or one tainted NoSchedule (only NoExecute would evict
        it); it must still fit the node's resources (a recorded nomination reserves
        nothing against a pod already bound). A terminating one holds them until
        ``terminating_until``."""
        if not (node.alive and self.cluster.holds(pod, node)):
            if terminating_until is not None:
                return  # being deleted anyway: it never holds the node here
            if self.spec.origin != "snapshot":
                self.emit(
                    ev.FAILED_SCHEDULING,
                    pod.workload,
                    pod,
                    node=node,
                    message="initial state does not fit its node; queued instead",
                )
            self.queue.add(pod, self.now)  # a snapshot's over-committed pod: Pending
            return
        self._bind(pod, node)
        if terminating_until is not None:
            self._terminating_initially(pod, terminating_until)

    def _terminating_initially(self, pod: Pod, until: float) -> None:
        """A recorded pod with a deletionTimestamp (docs/kubernetes-rules.md "Terminating
        pods in a snapshot"): it does no more work, frees its resources at ``until``, and
        counts as a scheduler-preemption victim, so a higher-priority pod nominated to its
        node waits for it instead of preempting again (§4.1)."""
        pod.state = PodState.TERMINATING
        self.cost_table.starting[pod.seq] = False
        pod.preempted = True
        pod.stop_at = max(until, self.now)
        self.emit(
            ev.KILLING, pod.workload, pod, value=pod.stop_at - self.now, related="initial-state"
        )
        self._replace_if_controlled(pod, terminating=True)
        self.at(pod.stop_at, self._stopped, pod)

    # =================================================================== scheduling
    def _scheduling_pass(self) -> None:
        queue = self.queue
        queue.release_backoff(self.now)
        while (cohort := queue.head()) is not None:
            if self._replayable(cohort) is not None:
                self._replay_run()
                continue
            pod = queue.pop()
            assert pod is not None
            self.popped += 1
            if pod.state is not PodState.PENDING:
                continue
            if pod.workload.all_or_nothing:
                self._schedule_group(pod.workload)
            else:
                self._schedule_one(pod)
        self._arm_timers()

    def _feasible_node(self, pod: Pod) -> Node | None:
        """Filter and Score (§3): the nominated node first, if it still passes Filter."""
        node = pod.nominated
        if node is not None and self.cluster.filter(pod, node).ok:
            return node
        return self.placement.select(self.cluster, pod)

    def _schedule_one(self, pod: Pod) -> None:
        """One scheduling cycle (§3): Filter/Score, then PostFilter when no node fits.

        A pod whose twin (same signature, no nomination) failed while the cluster has not
        changed since gets the same verdict without redoing the work; the random draw the
        attempt would have made is still made, so the run is the same either way."""
        if pod.nominated is None and self._replay_failure(pod):
            return
        if pod.workload.fits_nowhere:
            self._failed(pod, TOO_LARGE, self._too_large_message(pod))
            self.queue.park(pod, self.now, key=self._class_key(pod))
            return
        epoch = self.cluster.epoch
        self._drawn = None
        node = self._feasible_node(pod)
        if node is not None:
            self._bind(pod, node)
            return
        cycle = self.queue.move_cycle
        status = self.preemption.post_filter(self, pod)
        if status.code is not Code.SUCCESS:
            self._failed(pod, status)
            cluster = self.cluster
            if pod.nominated is None and cluster.epoch == epoch and self.cache_verdicts:
                self._doomed[pod.workload.signature] = Doomed(
                    epoch,
                    cluster.touched_count,
                    cluster.version,
                    status,
                    self._drawn,
                    self._message(status),
                )
        self.queue.park(
            pod, self.now, moved_meanwhile=self.queue.move_cycle != cycle, key=self._class_key(pod)
        )

    def _class_key(self, pod: Pod) -> tuple[object, ...] | None:
        """The class a parked pod may share a queue cohort with: its signature, unless it is
        nominated or a gang member (those are never replayed as twins)."""
        if not self.collapse_twins or pod.nominated is not None or pod.workload.all_or_nothing:
            return None
        return pod.workload.signature

    def _replay_failure(self, pod: Pod) -> bool:
        doomed = self._verdict(pod.workload.signature, pod)
        if doomed is None:
            return False
        if doomed.drawn is not None:
            self.rng.randrange(doomed.drawn)
        self._failed(pod, doomed.status)
        self.queue.park(pod, self.now, key=self._class_key(pod))
        return True

    def _replayable(self, cohort: Cohort) -> Doomed | None:
        """The cached verdict a whole cohort can take without a look at its members: its
        class's verdict still holds, with the message every member's streak has."""
        if cohort.key is None or cohort.message is None:
            return None
        doomed = self._verdict(cohort.key, cohort.first())
        if doomed is None or doomed.message != cohort.message:
            return None
        return doomed

    def _verdict(self, key: tuple[object, ...], pod: Pod) -> Doomed | None:
        """The class's failed verdict, if a full attempt for ``pod`` would give it again.

        1. Nothing changed since it was made: it holds.
        2. Nodes came or went, or the policy gives no queueing hint: it is dropped.
        3. Otherwise only the nodes changed since can matter (the others are as they were
           when no node helped): if none of them fits the pod or is a preemption
           candidate now, it holds and is confirmed at this epoch; else it is dropped.
        A release on one node thus costs the classes one node test each, not a full
        attempt over every node (issue #14)."""
        doomed = self._doomed.get(key)
        cluster = self.cluster
        if doomed is None or doomed.epoch == cluster.epoch:
            return doomed
        hint = self._hint
        changed = cluster.changed_since(doomed.seen)
        if (
            hint is None
            or doomed.version != cluster.version
            or not changed  # the epoch moved without a node, or the log was cut: be safe
            or any(hint(self, pod, node) for node in changed)
        ):
            del self._doomed[key]
            return None
        doomed = Doomed(  # positionally: NamedTuple._replace costs three times more
            cluster.epoch,
            cluster.touched_count,
            doomed.version,
            doomed.status,
            doomed.drawn,
            doomed.message,
        )
        self._doomed[key] = doomed
        return doomed

    def _replay_run(self) -> None:
        """Doomed twins as classes, not one by one (issue #14). Takes the head cohort and
        every cohort after it that also replays with the same random draw, up to the first
        pod that needs a look of its own; each member before that pod fails again exactly
        as ``_replay_failure`` would fail it (same streak, attempt count, backoff and
        draw), members after it go back to activeQ. Nothing in between can change the
        cluster, so the order among the replayed members does not matter; the draws are
        made in bulk, as many as the members would have made."""
        queue = self.queue
        first = queue.take()
        assert first is not None
        assert first.key is not None
        drawn = self._doomed[first.key].drawn
        run = [first]
        while (cohort := queue.head()) is not None:
            doomed = self._replayable(cohort)
            if doomed is None or doomed.drawn != drawn:
                break
            run.append(queue.take())  # type: ignore[arg-type]
        limit = queue.head_key()
        replayed = 0
        for cohort in run:
            part = queue.split_before(cohort, limit)
            replayed += len(part)
            queue.replay(part, self.now)
        if drawn is not None:
            skip_randrange(self.rng, drawn, replayed)
        self.replayed += replayed
        self.replay_runs += 1

    def _schedule_group(self, workload: Workload) -> None:
        """The Workload Scheduling Cycle (§5, KEP-4671 beta): the pending members are tried
        in one snapshot, each that fits is assumed; if minCount can run, all assumed members
        bind, else all are forgotten and PodGroupPostFilter runs once for the group."""
        pending = [
            p
            for p in workload.slots
            if p is not None and p.state is PodState.PENDING and p.submitted
        ]
        for pod in pending:
            self.queue.remove(pod)
        running = workload.running_members()
        need = workload.min_count - running
        if need > len(pending):
            # PreEnqueue: fewer than minCount pods of the group exist (a ResourceQuota
            # refused some); the group is held without a scheduling attempt.
            for pod in pending:
                self._failed(pod, GROUP_INCOMPLETE)
                self.queue.park(pod, self.now)
            return
        if need <= 0:
            for pod in pending:
                self._schedule_one(pod)
            return
        topology = workload.spec.pod_group.topology if workload.spec.pod_group else None
        assumed = self._assume_topology(pending, topology) if topology else self._assume(pending)
        if len(assumed) >= need:
            for pod, _ in assumed:
                self._bind(pod, pod.node, assumed=True)  # type: ignore[arg-type]
            for pod in pending:
                if pod.state is PodState.PENDING:
                    self.queue.park(pod, self.now)
            return
        cycle = self.queue.move_cycle
        if self.preemption.group_aware:
            self._forget(assumed)
            status = self.preemption.post_filter_group(self, workload, pending, need)
        else:
            # Per-pod preemption: only members that did not fit preempt, each for itself,
            # while the members that fit are still assumed in the cache.
            placed = {pod for pod, _ in assumed}
            unplaced = [pod for pod in pending if pod not in placed]
            status = self.preemption.post_filter_group(self, workload, unplaced, need)
            self._forget(assumed)
        moved = self.queue.move_cycle != cycle
        for pod in pending:
            if status.code is not Code.SUCCESS:
                self._failed(pod, status)
                self.clear_nomination(pod)  # §5: no victims found, all NNNs of the group go
            self.queue.park(pod, self.now, moved_meanwhile=moved)

    def _assume_topology(
        self, pods: list[Pod], topology: TopologyConstraint
    ) -> list[tuple[Pod, Node | None]]:
        """TAS placement of the whole group at once on the live cluster (§8)."""
        nodes, _ = self.cluster.eligible_nodes(pods[0].workload)
        plan = place_with_topology(pods, nodes, self._free_for(pods[0]), topology)
        assumed: list[tuple[Pod, Node | None]] = []
        for pod, node in plan or []:
            nominated = pod.nominated
            self.clear_nomination(pod)
            self.cluster.assign(pod, node)
            assumed.append((pod, nominated))
        return assumed

    def _free_for(self, pod: Pod) -> Callable[[Node], list[float]]:
        """Free resources a member may use on a node (Filter with nominated pods, §3)."""
        return lambda node: self.cluster.free_besides_claims(node, pod.priority, pod.workload)

    def _forget(self, assumed: list[tuple[Pod, Node | None]]) -> None:
        """The group did not fit: assumed members leave the cache, nominations return."""
        for pod, nominated in assumed:
            self.cluster.unassume(pod)
            if nominated is not None and pod.nominated is None:
                pod.nominated = nominated
                nominated.nominated[pod] = None
                self.cluster.nominations_changed(nominated)

    def _assume(self, pods: list[Pod]) -> list[tuple[Pod, Node | None]]:
        """Place members one after another in the cluster cache, as the scheduler assumes
        pods (an assumed pod is no longer a nominated one); nothing is logged or bound
        until the whole group is known to fit. Returns (pod, its former nomination)."""
        assumed = []
        for pod in pods:
            node = self._feasible_node(pod)
            if node is not None:
                nominated = pod.nominated
                self.clear_nomination(pod)
                self.cluster.assign(pod, node)
                assumed.append((pod, nominated))
        return assumed

    def _too_large_message(self, pod: Pod) -> str:
        """kube-scheduler's FailedScheduling text for a pod no node can ever hold (a
        snapshot's, after a node shrank): each node's Insufficient resources, counted and
        sorted, then why preemption cannot help."""
        counts: dict[str, int] = {}
        for node in self.cluster.nodes:
            for name, need, has in (
                ("cpu", pod.cpu, node.cpu),
                ("memory", pod.mem, node.mem),
                ("nvidia.com/gpu", pod.gpus, node.gpus),
            ):
                if need > has:
                    counts[f"Insufficient {name}"] = counts.get(f"Insufficient {name}", 0) + 1
        n = len(self.cluster.nodes)
        reasons = ", ".join(f"{c} {r}" for r, c in sorted(counts.items()))
        return (
            f"0/{n} nodes are available: {reasons}. preemption: 0/{n} nodes are "
            f"available: {n} {NOT_HELPFUL_REASON}."
        )

    def _message(self, status: Status) -> str:
        return f"0/{len(self.cluster.nodes)} nodes are available; {status.reason}"

    def _failed(self, pod: Pod, status: Status, message: str | None = None) -> None:
        """Repeated identical failures become one event with a count, as kubectl shows them
        ("x37 over 5m"); the streak is written when the pod's situation changes."""
        explicit = message
        message = message or self._message(status)
        streak = pod.failures
        if streak is not None and streak.message == message:
            streak.count += 1
            streak.last = self.now
            return
        self._end_streak(pod)
        text = (
            self.recorder.failure(self.now, pod, status, explicit)
            if self.recorder is not None
            else message
        )
        pod.failures = FailureStreak(message, status.plugin, self.now, text)
        self._streaks[pod] = None

    def _end_streak(self, pod: Pod) -> None:
        self.queue.settle(pod)  # a queued pod's count may still sit in its cohort
        streak = pod.failures
        if streak is None:
            return
        pod.failures = None
        self._streaks.pop(pod, None)
        self.emit(
            ev.FAILED_SCHEDULING,
            pod.workload,
            pod,
            time=streak.first,
            value=streak.count,
            related=streak.plugin,
            message=streak.text,
            nodeless=True,
        )
        if streak.message.rstrip(".").endswith(NOT_HELPFUL_REASON):
            self.emit(
                ev.NOT_HELPFUL,
                pod.workload,
                pod,
                time=streak.first,
                value=streak.count,
                message=streak.text,
                nodeless=True,
            )

    def _bind(self, pod: Pod, node: Node, *, assumed: bool = False) -> None:
        self._end_streak(pod)
        self.queue.remove(pod)
        self.clear_nomination(pod)
        if not assumed:
            self.cluster.assign(pod, node)
        pod.state = PodState.STARTING
        self.cost_table.started(pod)
        pod.bound_at = self.now
        if self.guards.min_runtime:
            self.at(self.now + self.guards.min_runtime, self._guard_lifted)
        self.cluster.stamp(pod)
        self.emit(ev.SCHEDULED, pod.workload, pod, value=pod.gpu_amount)
        self.at(self.now + pod.workload.spec.startup_seconds, self._ready, pod)

    def _ready(self, pod: Pod) -> None:
        if pod.state is not PodState.STARTING:
            return
        pod.state = PodState.READY
        self.cost_table.starting[pod.seq] = False
        pod.ready_at = self.now
        self.emit(ev.READY, pod.workload, pod)
        pod.workload.app.ready(pod)

    def _arm_timers(self) -> None:
        expiry = self.queue.next_backoff_expiry()
        if expiry is not None and (
            self._wake_at is None or expiry < self._wake_at or self._wake_at <= self.now
        ):
            self._wake_at = expiry
            self.at(expiry, self._noop)
        if not self._flush_scheduled and self.queue.has_parked():
            self._flush_scheduled = True
            self.at(self.now + UNSCHEDULABLE_FLUSH_SECONDS, self._flush)

    def wait_for_token(self) -> None:
        """The preemption rate limit refused a pod: wake the queue when a token is back."""
        if not self._token_wake:
            self._token_wake = True
            self.at(self.guards.next_token_at(self.now), self._guard_lifted)

    def _guard_lifted(self) -> None:
        """A guard let go (a pod ran its minimum runtime, a token came back): verdicts
        cached for this cluster state no longer hold, and parked pods may try again."""
        self._token_wake = False
        self.cluster.epoch += 1
        self.queue.wake(self.now)

    def _noop(self) -> None:
        """A wake-up: the scheduling pass after it releases expired backoffs."""

    def _flush(self) -> None:
        self._flush_scheduled = False
        self.queue.flush_leftovers(self.now)

    # =================================================================== preemption host
    def random_offset(self, n: int) -> int:
        """The candidate offset of DryRunPreemption (rand.Int31n), from the run's seed."""
        self._drawn = n
        return self.rng.randrange(n)

    def pdb_allowed(self, pods: list[Pod]) -> dict[object, int]:
        """disruptionsAllowed per PDB (one per workload) that covers any of ``pods``."""
        allowed: dict[object, int] = {}
        if not self._any_pdb:
            return allowed
        for pod in pods:
            workload = pod.workload
            if workload.spec.pdb is not None and workload not in allowed:
                allowed[workload] = self._disruptions_allowed(workload)
        return allowed

    def _disruptions_allowed(self, workload: Workload) -> int:
        pdb = workload.spec.pdb
        assert pdb is not None
        healthy = sum(1 for p in workload.slots if p is not None and p.state is PodState.READY)
        if pdb.min_available is not None:
            desired = pdb.min_available
        elif workload.spec.controller.kind is ControllerKind.DEPLOYMENT:
            desired = workload.spec.members - (pdb.max_unavailable or 0)
        else:
            # maxUnavailable needs the expected count from a scalable controller's scale
            # subresource; bare pods and Jobs have none, so the budget fails safe to 0.
            return 0
        if self.now < DISRUPTED_PODS_TIMEOUT:
            # status.disruptedPods: evictions already granted are not healthy any more
            healthy -= pdb.disrupted_pods
        return max(0, healthy - desired)

    def eviction_allowed(self, pod: Pod) -> bool:
        """The Eviction API's PDB check (drain honours budgets; preemption does not)."""
        if pod.workload.spec.pdb is None or pod.state is not PodState.READY:
            return True
        return self._disruptions_allowed(pod.workload) > 0

    def actuate(self, preemptor: Pod, node: Node, victims: list[Pod]) -> None:
        """§4.5: mark and delete each victim gracefully, clear lower-priority nominations
        on the node, nominate the preemptor there."""
        self.actuate_group([(preemptor, node)], victims)

    def actuate_group(self, assignments: list[tuple[Pod, Node]], victims: list[Pod]) -> None:
        """The same executor for a group (§6.3): every victim deleted, every assigned member
        nominated to its node (NominatingMode=Override). Log messages name the first
        member as the preemptor; a group's victims are listed once."""
        lead, lead_node = assignments[0]
        workload = lead.workload
        for pod, _ in assignments:
            self._end_streak(pod)
        self.emit(
            ev.VICTIMS_SELECTED,
            workload,
            lead,
            node=lead_node,
            value=len(victims),
            message=", ".join(v.name for v in victims),
        )
        self._account_eviction(assignments, victims)
        self.guards.spend(self.now, sum(1 for v in victims if v.state is not PodState.TERMINATING))
        for victim in victims:
            if victim.state is PodState.TERMINATING:
                continue
            victim.preempted = True
            self.emit(
                ev.PREEMPTED,
                victim.workload,
                victim,
                related=lead.name,
                message=f"Preempted by {NAMESPACE}/{lead.name} on node "
                f"{victim.node.name if victim.node else ''}",
            )
            self.evict(victim, victim.workload.spec.termination_grace_period_seconds, "preemption")
        for pod, node in assignments:
            self._nominate(pod, node)

    def _account_eviction(self, assignments: list[tuple[Pod, Node]], victims: list[Pod]) -> None:
        """Over-eviction and broken groups, decided before anyone is deleted: victims
        beyond the fewest pods that would cover each node's shortfall, and groups that the
        victims take below minCount."""
        fresh = [v for v in victims if v.state is not PodState.TERMINATING]
        extra = len(fresh) - minimum_victims(assignments)
        lead = assignments[0][0]
        if extra > 0:
            self.emit(
                ev.OVER_EVICTED,
                lead.workload,
                lead,
                value=extra,
                message=f"{extra} victim(s) beyond the minimum needed",
            )
        hit: dict[Workload, int] = {}
        for victim in victims:
            if victim.state is not PodState.TERMINATING:
                hit[victim.workload] = hit.get(victim.workload, 0) + 1
        for workload, lost in hit.items():
            grouped = workload.in_group or workload.spec.recovery.model.value == "synchronous"
            if not grouped:
                continue  # counting members is O(members): only a group can break
            running = workload.running_members()
            if running >= workload.min_count > running - lost:
                self.emit(
                    ev.GROUP_BROKEN,
                    workload,
                    value=running - lost,
                    related=lead.name,
                    message=f"{running - lost} of minCount {workload.min_count} left",
                )

    def _nominate(self, pod: Pod, node: Node) -> None:
        for other in list(node.nominated):
            if other.priority < pod.priority and other.workload is not pod.workload:
                self.clear_nomination(other)
                self.queue.activate(other, self.now)
        self.clear_nomination(pod)
        pod.nominated = node
        node.nominated[pod] = None
        self.cluster.nominations_changed(node)
        self.emit(ev.NOMINATED, pod.workload, pod, node=node)

    def _recorded_nomination(self, pod: Pod, node: Node) -> None:
        """A pending pod recorded with status.nominatedNodeName: the scheduler tries that
        node first and reserves it against lower-priority pods (§3), and the pod waits for
        lower-priority victims terminating there (§4.1). Other pods' nominations stand, as
        they do in the recorded cluster (only a new preemption clears lower ones, §4.5)."""
        if not pod.submitted:
            return  # refused by a ResourceQuota: no pod object, no nomination
        pod.nominated = node
        node.nominated[pod] = None
        self.cluster.nominations_changed(node)
        self.emit(ev.NOMINATED, pod.workload, pod, node=node)

    def clear_nomination(self, pod: Pod) -> None:
        if pod.nominated is not None:
            pod.nominated.nominated.pop(pod, None)
            self.cluster.nominations_changed(pod.nominated)
            pod.nominated = None

    # =================================================================== termination
    def evict(self, pod: Pod, grace: float, cause: str) -> None:
        """Graceful deletion (grace 0 = killed): the app gets SIGTERM, the pod stops after
        its real stop time, at most the grace period; the controller may replace it."""
        if pod.state is PodState.PENDING:
            self._end_streak(pod)
            self.queue.remove(pod)
            self.clear_nomination(pod)
            pod.state = PodState.GONE
            self._uncount_quota(pod)
            self._replace_if_controlled(pod, terminating=False)
            return
        if pod.state not in RUNNING_STATES:
            return
        stop = pod.workload.app.interrupt(pod, grace, cause)
        pod.state = PodState.TERMINATING
        self.cost_table.starting[pod.seq] = False
        pod.stop_at = self.now + stop
        self.emit(ev.KILLING, pod.workload, pod, value=stop, related=cause)
        self._replace_if_controlled(pod, terminating=True)
        if stop <= 0:
            self._stopped(pod)
        else:
            self.at(pod.stop_at, self._stopped, pod)

    def _stopped(self, pod: Pod) -> None:
        if pod.state is not PodState.TERMINATING:
            return
        node = self.cluster.release(pod)
        pod.state = PodState.GONE
        self.emit(ev.RELEASED, pod.workload, pod, node=node, value=pod.gpu_amount)
        self._uncount_quota(pod)
        self._wake_for(node)
        self._replace_if_controlled(pod, terminating=False)
        if pod.workload.suspended:
            self.admission.pods_gone(pod.workload)

    def pod_completed(self, pod: Pod) -> None:
        if pod.state not in HOLDING_STATES:
            return
        pod.state = PodState.SUCCEEDED
        node = self.cluster.release(pod)
        self.emit(ev.COMPLETED, pod.workload, pod, node=node, value=pod.gpu_amount)
        self._uncount_quota(pod)
        self._wake_for(node)
        workload = pod.workload
        self.retries.succeeded(workload)
        if all(p is not None and p.state is PodState.SUCCEEDED for p in workload.slots):
            self.emit(ev.WORKLOAD_DONE, workload)
            self.admission.finished(workload)

    def _wake_for(self, node: Node) -> None:
        """A scheduled pod went away: NodeResourcesFit's queueing hint requeues every pod it
        rejected ("any deletion of a scheduled pod could make it schedulable"), whatever
        the node; even one that will not fit may now be helped by preemption."""
        self.queue.wake(self.now)

    def restart_group(self, workload: Workload, cause: str) -> None:
        """JobSet restarting the whole group: every other member is deleted and recreated.
        The controller reacts after the failure it saw, as an event at the same instant."""
        self.at(self.now, self._restart_group, workload)

    def _restart_group(self, workload: Workload) -> None:
        for pod in list(workload.slots):
            if pod is not None and pod.state in RUNNING_STATES:
                self.evict(pod, workload.spec.termination_grace_period_seconds, "group-restart")

    def _replace_if_controlled(self, pod: Pod, *, terminating: bool) -> None:
        """Controllers: Deployments and `TerminatingOrFailed` Jobs replace a pod as soon as
        it is terminating; `Failed` Jobs wait until it is gone; bare pods stay gone.
        Called at both moments; whichever matches the policy creates the replacement."""
        controller = pod.workload.spec.controller
        if (
            controller.kind is ControllerKind.NONE
            or pod.workload.suspended
            or pod.workload.failed
            or pod.workload.slots[pod.member] is not pod
        ):
            return
        eager = (
            controller.kind is ControllerKind.DEPLOYMENT
            or controller.pod_replacement_policy == "TerminatingOrFailed"
        )
        if terminating == eager or (pod.state is PodState.GONE and not terminating):
            self.retries.replace(pod)

    def submit_replacement(self, workload: Workload, member: int) -> None:
        """The controller creates a replacement pod for a member slot."""
        self._submit(self._new_pod(workload, member, replacement=True))

    # =================================================================== timeline
    def _timeline(self, event: TimelineEvent) -> None:
        nodes = self._targets(event)
        registry.disruptions[event.type](self, event, nodes)

    def _targets(self, event: TimelineEvent) -> list[Node]:
        nodes = [self.cluster.by_name[n] for n in event.nodes]
        if event.pool:
            pool = [
                n for n in self.cluster.nodes if n.alive and n.name.rsplit("-", 1)[0] == event.pool
            ]
            count = event.count or max(1, round(len(pool) * (event.fraction or 1.0)))
            nodes += sorted(self.rng.sample(pool, min(count, len(pool))), key=lambda n: n.idx)
        return [n for n in nodes if n.alive]

    def cordon(self, node: Node, reason: str) -> None:
        self.cluster.set_schedulable(node, alive=node.alive, cordoned=True)
        self.emit(ev.NODE_CORDONED, None, node=node, message=reason)

    def lose_node(self, node: Node, reason: str) -> None:
        """The node leaves: whatever still runs there is killed with it."""
        if not node.alive:
            return
        self.cluster.set_schedulable(node, alive=False, cordoned=node.cordoned)
        self.emit(ev.NODE_LOST, None, node=node, value=node.capacity, message=reason)
        self.spares.node_down(node)
        for pod in list(node.pods):
            if pod.state is PodState.TERMINATING:
                pod.stop_at = self.now
                self._stopped(pod)
            else:
                self.evict(pod, 0.0, "node-failure")

    def fail_node(self, node: Node, reason: str, evict_after: float) -> None:
        """The node goes NotReady: its processes die now (the apps lose their unsaved
        work), but the pod objects stay bound until the taint manager evicts them
        ``evict_after`` seconds later; only then do controllers create replacements."""
        if not node.alive:
            return
        self.cluster.set_schedulable(node, alive=False, cordoned=node.cordoned)
        self.emit(ev.NODE_LOST, None, node=node, value=node.capacity, message=reason)
        self.spares.node_down(node)
        for pod in list(node.pods):
            if pod.state in RUNNING_STATES:
                pod.workload.app.interrupt(pod, 0.0, "node-failure")
                pod.state = PodState.TERMINATING
                self.cost_table.starting[pod.seq] = False
                pod.stop_at = self.now + evict_after
                self.at(pod.stop_at, self._taint_evicted, pod)

    def _taint_evicted(self, pod: Pod) -> None:
        """NoExecute taint manager: the pod on the NotReady node is deleted (Killing); it
        is gone at once, as no kubelet is left to wait for."""
        if pod.state is not PodState.TERMINATING:
            return
        self.emit(ev.KILLING, pod.workload, pod, value=0.0, related="node-failure")
        self._replace_if_controlled(pod, terminating=True)
        self._stopped(pod)

    def restore_node(self, node: Node) -> None:
        if node.alive and not node.cordoned:
            return
        if self.spares.node_back(node):
            return
        back = not node.alive
        self.cluster.set_schedulable(node, alive=True, cordoned=False)
        self.emit(ev.NODE_BACK, None, node=node, value=node.capacity if back else 0.0)
        self.queue.wake(self.now, node.free_gpus)

    # =================================================================== end
    def release(self) -> None:
        """Done with this run: drop what only numpy object arrays point to (the node
        arrays' bound pods, the raw records' victims). Such arrays are invisible to the
        cyclic collector, and an engine is one big cycle (its pods reach their workloads,
        applications and the engine again), so without this every run stayed alive in a
        worker or any process that simulates again: about 215,000 objects on the openb
        trace, the whole run, walked by every later collection (issue #14). Nothing of
        the engine is usable for deciding after this; the log, records and metrics
        already taken are unchanged.

        Then the cycles themselves are cut (a pod and its workload's slots, a pod and its
        node, an application and the engine, the engine and its components, the event
        heap's bound methods), so the run is freed by reference counting when its last
        reference goes instead of waiting for the cyclic collector. On the openb trace the
        collector's first pass after each worker task walked about 140,000 such objects
        (0.08-0.13 s of a 1.5 s task). Only ``events_processed`` stays readable."""
        if "workloads" not in self.__dict__:
            return  # released already
        self.cluster.arrays.release()
        if self.recorder is not None:
            self.recorder.release()
        for workload in self.workloads:
            workload.slots = []
            del workload.app
        for node in self.cluster.nodes:
            node.pods.clear()
            node.nominated.clear()
        self._heap.clear()
        processed = self.events_processed
        self.__dict__.clear()
        self.events_processed = processed

    def decisions(self) -> list[Decision]:
        return [] if self.recorder is None else self.recorder.records()

    def diagnosis(self, log: list[Event], decisions: list[Decision] | None = None) -> str:
        """The run-level diagnosis (decisions.diagnose) for the urgent workloads: those the
        spec marks urgent, else the highest-priority ones when priorities differ."""
        if self.recorder is None:
            return ""
        urgent = [w.name for w in self.workloads if w.spec.urgent]
        if not urgent:
            values = {w.priority for w in self.workloads}
            if len(values) < 2:
                return ""
            urgent = [w.name for w in self.workloads if w.priority == max(values)]
        useful: set[str] = set()
        arrived: dict[str, float] = {}
        queued: set[str] = set()
        wanted = set(urgent)
        for e in log:  # one pass, the urgent workloads' events only
            if e.workload not in wanted:
                continue
            if e.reason == ev.READY:
                useful.add(e.workload)
            elif e.reason == ev.ARRIVED:
                arrived.setdefault(e.workload, e.time)
            elif e.reason == ev.ADMITTED and e.time > arrived.get(e.workload, e.time):
                queued.add(e.workload)
        if decisions is None:
            decisions = self.recorder.records()
        return diagnose(urgent, decisions, useful, self.horizon, frozenset(queued))

    def _finish(self) -> None:
        for pod in list(self._streaks):
            self._end_streak(pod)
        for workload in self.workloads:
            useful, remaining, computed = workload.app.finish()
            self.emit(ev.USEFUL, workload, value=useful)
            self.emit(ev.REMAINING, workload, value=remaining)
            self.emit(ev.COMPUTED, workload, value=computed)
