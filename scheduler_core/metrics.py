"""Every metric of metrics.md, computed from the event log alone.

Because the log is the only input (plus static facts about each workload), any number a
user sees can be recomputed, and traced back to the events that made it.
"""

from __future__ import annotations

import math
from collections import defaultdict
from collections.abc import Callable, Iterable, Sequence
from dataclasses import dataclass, field, fields

from scheduler_core import events as ev
from scheduler_core.events import Event
from scheduler_core.stats import mean_interval

PREEMPTOR_METRICS = (
    "time_to_victims_selected",
    "time_to_victims_released",
    "release_latency",
    "time_to_group_scheduled",
    "time_to_group_useful",
)
SUMMED = (
    "lost_work",
    "stranded_capacity",
    "pods_terminated",
    "restarts",
    "preempted_while_loading",
    "sessions_lost",
    "wasted_gpu_seconds",
)
MEANED = ("time_to_resume", "time_to_recover", "completion_time", "queue_wait")
RATIOS = ("gpu_utilization", "gpu_fragmentation", "goodput", "ettr")
METRIC_NAMES = (
    *PREEMPTOR_METRICS,
    "preemption_not_helpful",
    "lost_work",
    "stranded_capacity",
    "time_to_resume",
    "time_to_recover",
    "pods_terminated",
    "restarts",
    "preempted_while_loading",
    "sessions_lost",
    "gpu_utilization",
    "gpu_fragmentation",
    "goodput",
    "ettr",
    "wasted_gpu_seconds",
    "completion_time",
    "queue_wait",
)
"""One summary entry per metric of metrics.md, in its order."""
ACCOUNTING_NAMES = (
    "over_evicted_pods",
    "groups_broken",
    "thrashing_workloads",
    "urgent_never_useful",
    "standby_activations",
    "workloads_failed",
)
"""Over-eviction and thrashing (issue #3 §4), and urgent workloads that never became
useful before the horizon (the flag that keeps such a variant from "winning"), reported
alongside metrics.md."""
SUMMARY_NAMES = (*METRIC_NAMES, *ACCOUNTING_NAMES)


@dataclass(frozen=True, slots=True)
class WorkloadInfo:
    """Static facts about a workload the log does not repeat."""

    name: str
    kind: str
    priority_class: str
    priority: int
    members: int
    gpus: int
    min_count: int
    urgent: bool
    recovery: str
    gpu_amount: float | None = None
    """GPUs per member with a share as its fraction (None: ``gpus``), the divisor of
    ETTR: a workload of 200 milli-GPU shares makes progress on GPUs too."""


@dataclass(frozen=True, slots=True)
class WorkloadRecord:
    """One flat row per workload: every per-workload metric, null where it does not apply."""

    workload: str
    kind: str
    priority_class: str
    priority: int
    members: int
    gpus_per_member: float
    """GPUs one member holds, a share or MIG instance as its fraction of a GPU
    (``WorkloadInfo.gpu_amount``): 0.3 for ``gpuMilli: 300``, 3/7 for ``3g.40gb``."""
    urgent: bool
    recovery: str
    arrival: float | None
    time_to_victims_selected: float | None
    time_to_victims_released: float | None
    release_latency: float | None
    time_to_group_scheduled: float | None
    time_to_group_useful: float | None
    preemption_not_helpful: int
    victims: int
    lost_work: float
    stranded_capacity: float
    disruptions: int
    time_to_resume: float | None
    time_to_recover: float | None
    pods_terminated: int
    restarts: int
    preempted_while_loading: int
    sessions_lost: int
    wasted_gpu_seconds: float
    over_evicted_pods: int
    groups_broken: int
    premature_disruptions: int
    completion_time: float | None
    queue_wait: float | None
    useful_work: float
    remaining_work: float
    computed_work: float
    ettr: float | None = None
    """Effective training time ratio: seconds of useful progress (at full strength) per
    second of wall-clock since submission (to completion, or to the horizon)."""


RECORD_FIELDS = tuple(f.name for f in fields(WorkloadRecord))


@dataclass
class _Acc:
    """Mutable per-workload accumulator while reading the log."""

    arrival: float | None = None
    first_bound: float | None = None
    done: float | None = None
    bound: int = 0
    ready: int = 0
    scheduled_at: float | None = None
    useful_at: float | None = None
    first_selected: float | None = None
    victims: set[str] = field(default_factory=set)
    not_helpful: int = 0
    lost: float = 0.0
    stranded: float = 0.0
    disruptions: int = 0
    resume: list[float] = field(default_factory=list)
    recover: list[float] = field(default_factory=list)
    terminated: int = 0
    restarts: int = 0
    loading: int = 0
    sessions: int = 0
    wasted_startup: float = 0.0
    over_evicted: int = 0
    broken: int = 0
    premature: int = 0
    resumed_since_disruption: bool = True
    last_disruption: float | None = None
    useful: float = 0.0
    useful_at_start: float = 0.0
    remaining: float = 0.0
    computed: float = 0.0


@dataclass(frozen=True, slots=True)
class Metrics:
    summary: dict[str, float | None]
    distributions: dict[str, dict[str, float]]
    by_priority_class: dict[str, dict[str, float | None]]
    workloads: tuple[WorkloadRecord, ...]


def compute(
    log: Sequence[Event],
    infos: Sequence[WorkloadInfo],
    *,
    horizon: float,
    total_gpus: float,
    fragmentation: float | None = None,
) -> Metrics:
    """Read the log once; fold it into per-workload records and the variant's summary.
    ``fragmentation`` is the one figure the log cannot give (it does not say which device
    a share sits on): the cluster measures it during the run (fragmentation.py)."""
    reader = _Reader({i.name: i for i in infos}, horizon)
    for event in log:
        reader.read(event)
    records = tuple(reader.record(info) for info in infos)
    allocated = reader.allocated_gpu_seconds()
    available = _available_gpu_seconds(log, horizon, total_gpus)
    summary = _summary(records, allocated, available)
    summary["standby_activations"] = float(reader.standby_activations)
    summary["workloads_failed"] = float(len(reader.failed))
    summary["gpu_fragmentation"] = fragmentation
    return Metrics(summary, _distributions(records), _by_class(records), records)


class _Reader:
    def __init__(self, infos: dict[str, WorkloadInfo], horizon: float) -> None:
        self.infos = infos
        self.horizon = horizon
        self.acc: dict[str, _Acc] = defaultdict(_Acc)
        self.pod_workload: dict[str, str] = {}
        self.bound_at: dict[str, tuple[float, float]] = {}
        self.ready_pods: set[str] = set()
        self.ready_at: dict[str, float] = {}
        self.released: dict[str, float] = {}
        self.loading_event: tuple[str, float] | None = None
        self.allocated = 0.0
        self.standby_activations = 0
        self.failed: set[str] = set()

    def read(self, event: Event) -> None:
        handler = _READER_HANDLERS.get(event.reason)
        if handler is None:
            return
        if event.workload:
            handler(self, event, self.acc[event.workload])
        elif event.reason is ev.STANDBY_IN_SERVICE:
            self.standby_activations += 1

    def _failed(self, e: Event, a: _Acc) -> None:
        self.failed.add(e.workload)

    def _standby(self, e: Event, a: _Acc) -> None:
        """Node events carry no workload: counted in :meth:`read`."""

    # -- lifecycle
    def _arrived(self, e: Event, a: _Acc) -> None:
        a.arrival = e.time

    def _created(self, e: Event, a: _Acc) -> None:
        self.pod_workload[e.pod] = e.workload
        if e.value:
            a.restarts += 1

    def _scheduled(self, e: Event, a: _Acc) -> None:
        self.bound_at[e.pod] = (e.time, e.value)
        a.bound += 1
        if a.first_bound is None:
            a.first_bound = e.time
        if a.scheduled_at is None and a.bound >= self.infos[e.workload].min_count:
            a.scheduled_at = e.time

    def _ready(self, e: Event, a: _Acc) -> None:
        self.ready_pods.add(e.pod)
        self.ready_at[e.pod] = e.time
        a.ready += 1
        if a.useful_at is None and a.ready >= self.infos[e.workload].min_count:
            a.useful_at = e.time

    def _unready(self, pod: str, a: _Acc) -> bool:
        if pod in self.ready_pods:
            self.ready_pods.discard(pod)
            a.ready -= 1
            return True
        return False

    def _killing(self, e: Event, a: _Acc) -> None:
        a.terminated += 1
        if self._unready(e.pod, a) and e.pod in self.bound_at:
            startup = self.ready_at[e.pod] - self.bound_at[e.pod][0]
            a.wasted_startup += startup * self.bound_at[e.pod][1]

    def _unbind(self, e: Event, a: _Acc) -> None:
        self._unready(e.pod, a)
        start, gpus = self.bound_at.pop(e.pod, (None, 0.0))
        if start is not None:
            a.bound -= 1
            self.allocated += gpus * _overlap(start, e.time, self.horizon)

    def _freed(self, e: Event, a: _Acc) -> None:
        self.released[e.pod] = e.time
        self._unbind(e, a)

    def _completed(self, e: Event, a: _Acc) -> None:
        self._unbind(e, a)

    # -- preemption
    def _selected(self, e: Event, a: _Acc) -> None:
        if a.first_selected is None:
            a.first_selected = e.time

    def _preempted(self, e: Event, a: _Acc) -> None:
        preemptor = self.pod_workload.get(e.related)
        if preemptor is not None:
            self.acc[preemptor].victims.add(e.pod)

    def _not_helpful(self, e: Event, a: _Acc) -> None:
        a.not_helpful += int(e.value)

    # -- costs
    def _disrupted(self, e: Event, a: _Acc) -> None:
        """A group disrupted again before it got back to useful progress was disrupted
        prematurely (thrashing); members hit at the same instant are one disruption."""
        a.lost += e.value
        a.disruptions += 1
        grouped = self.infos[e.workload].recovery in ("synchronous", "elastic")
        loading = self.loading_event == (e.pod, e.time)
        if loading or (grouped and not a.resumed_since_disruption and e.time != a.last_disruption):
            a.premature += 1
        a.resumed_since_disruption = False
        a.last_disruption = e.time

    def _loading(self, e: Event, a: _Acc) -> None:
        """Evicted before Ready: no useful progress was reached (the loading treadmill).
        The Disrupted event that follows is the same disruption; it counts it once."""
        a.loading += 1
        self.loading_event = (e.pod, e.time)

    def _over_evicted(self, e: Event, a: _Acc) -> None:
        a.over_evicted += int(e.value)

    def _broken(self, e: Event, a: _Acc) -> None:
        a.broken += 1

    def _session(self, e: Event, a: _Acc) -> None:
        a.sessions += 1

    def _stranded(self, e: Event, a: _Acc) -> None:
        a.stranded += e.value

    def _resumed(self, e: Event, a: _Acc) -> None:
        a.resume.append(e.time - e.value)
        a.resumed_since_disruption = True

    def _recovered(self, e: Event, a: _Acc) -> None:
        a.recover.append(e.time - e.value)

    def _done(self, e: Event, a: _Acc) -> None:
        a.done = e.time

    def _useful(self, e: Event, a: _Acc) -> None:
        a.useful = e.value

    def _useful_at_start(self, e: Event, a: _Acc) -> None:
        a.useful_at_start = e.value

    def _remaining(self, e: Event, a: _Acc) -> None:
        a.remaining = e.value

    def _computed(self, e: Event, a: _Acc) -> None:
        a.computed = e.value

    # -- results
    def allocated_gpu_seconds(self) -> float:
        still = sum(
            gpus * _overlap(start, self.horizon, self.horizon)
            for start, gpus in self.bound_at.values()
        )
        return self.allocated + still

    def record(self, info: WorkloadInfo) -> WorkloadRecord:
        a = self.acc[info.name]
        arrival = a.arrival
        released = [self.released[v] for v in a.victims if v in self.released]
        all_released = max(released) if a.victims and len(released) == len(a.victims) else None
        return WorkloadRecord(
            workload=info.name,
            kind=info.kind,
            priority_class=info.priority_class,
            priority=info.priority,
            members=info.members,
            gpus_per_member=info.gpus if info.gpu_amount is None else info.gpu_amount,
            urgent=info.urgent,
            recovery=info.recovery,
            arrival=arrival,
            time_to_victims_selected=_since(arrival, a.first_selected),
            time_to_victims_released=_since(arrival, all_released),
            release_latency=_since(a.first_selected, all_released),
            time_to_group_scheduled=_since(arrival, a.scheduled_at),
            time_to_group_useful=_since(arrival, a.useful_at),
            preemption_not_helpful=a.not_helpful,
            victims=len(a.victims),
            lost_work=a.lost,
            stranded_capacity=a.stranded,
            disruptions=a.disruptions,
            time_to_resume=_mean(a.resume),
            time_to_recover=_mean(a.recover),
            pods_terminated=a.terminated,
            restarts=a.restarts,
            preempted_while_loading=a.loading,
            sessions_lost=a.sessions,
            wasted_gpu_seconds=a.lost + a.stranded + a.wasted_startup,
            over_evicted_pods=a.over_evicted,
            groups_broken=a.broken,
            premature_disruptions=a.premature,
            completion_time=_since(arrival, a.done),
            queue_wait=_since(arrival, a.first_bound),
            useful_work=a.useful - a.useful_at_start,
            remaining_work=a.remaining,
            computed_work=a.computed - a.useful_at_start,
            ettr=self._ettr(info, a),
        )

    def _ettr(self, info: WorkloadInfo, a: _Acc) -> float | None:
        """Useful progress over wall-clock in the window since submission; None before
        submission or for a workload without GPUs."""
        wall = self._wall(a)
        gpus = info.members * (info.gpus if info.gpu_amount is None else info.gpu_amount)
        if wall is None or gpus == 0:
            return None
        return max(0.0, a.useful - a.useful_at_start) / gpus / wall

    def _wall(self, a: _Acc) -> float | None:
        """Wall-clock seconds from submission (or t=0) to completion (or the horizon)."""
        if a.arrival is None:
            return None
        wall = min(a.done if a.done is not None else self.horizon, self.horizon) - max(
            a.arrival, 0.0
        )
        return wall if wall > 0 else None


_READER_HANDLERS: dict[str, Callable[[_Reader, Event, _Acc], None]] = {
    ev.ARRIVED: _Reader._arrived,
    ev.CREATED: _Reader._created,
    ev.SCHEDULED: _Reader._scheduled,
    ev.READY: _Reader._ready,
    ev.KILLING: _Reader._killing,
    ev.RELEASED: _Reader._freed,
    ev.COMPLETED: _Reader._completed,
    ev.VICTIMS_SELECTED: _Reader._selected,
    ev.PREEMPTED: _Reader._preempted,
    ev.NOT_HELPFUL: _Reader._not_helpful,
    ev.DISRUPTED: _Reader._disrupted,
    ev.LOADING_LOST: _Reader._loading,
    ev.SESSION_LOST: _Reader._session,
    ev.STRANDED: _Reader._stranded,
    ev.RESUMED: _Reader._resumed,
    ev.RECOVERED: _Reader._recovered,
    ev.WORKLOAD_DONE: _Reader._done,
    ev.USEFUL: _Reader._useful,
    ev.USEFUL_AT_START: _Reader._useful_at_start,
    ev.REMAINING: _Reader._remaining,
    ev.COMPUTED: _Reader._computed,
    ev.OVER_EVICTED: _Reader._over_evicted,
    ev.GROUP_BROKEN: _Reader._broken,
    ev.WORKLOAD_FAILED: _Reader._failed,
    ev.STANDBY_IN_SERVICE: _Reader._standby,
}
"""What each reason does to its workload's record. Plain functions, kept here and not
as bound methods on the reader: a reader that pointed at itself would be cyclic
garbage once the metrics are computed, its 7,254 records and sets on openb left to the
cyclic collector (a worker pays that pass after every task) instead of freed at once."""


def _overlap(start: float, end: float, horizon: float) -> float:
    """Length of [start, end] inside the measured window [0, horizon]."""
    return max(0.0, min(end, horizon) - max(start, 0.0))


def _since(start: float | None, end: float | None) -> float | None:
    return None if start is None or end is None else end - start


def _mean(values: Iterable[float]) -> float | None:
    values = list(values)
    return sum(values) / len(values) if values else None


def _available_gpu_seconds(log: Sequence[Event], horizon: float, total_gpus: float) -> float:
    """GPU-seconds the cluster offered in [0, horizon]: lost nodes offer nothing while gone."""
    available = total_gpus * horizon
    lost_since: dict[str, tuple[float, float]] = {}
    for e in log:
        if e.reason == ev.NODE_LOST:
            lost_since[e.node] = (e.time, e.value)
        elif e.reason == ev.NODE_BACK and e.node in lost_since:
            start, gpus = lost_since.pop(e.node)
            available -= gpus * _overlap(start, e.time, horizon)
    for start, gpus in lost_since.values():
        available -= gpus * _overlap(start, horizon, horizon)
    return available


def _focus(records: Sequence[WorkloadRecord]) -> Sequence[WorkloadRecord]:
    """The preemptor metrics are about the urgent workloads when the spec marks any."""
    urgent = [r for r in records if r.urgent]
    return urgent or records


def _summary(
    records: Sequence[WorkloadRecord], allocated: float, available: float
) -> dict[str, float | None]:
    focus = _focus(records)
    summary: dict[str, float | None] = {}
    for name in METRIC_NAMES:
        if name in PREEMPTOR_METRICS:
            summary[name] = _mean(v for r in focus if (v := getattr(r, name)) is not None)
        elif name == "preemption_not_helpful":
            summary[name] = float(sum(r.preemption_not_helpful for r in focus))
        elif name in SUMMED:
            summary[name] = float(sum(getattr(r, name) for r in records))
        elif name in MEANED:
            summary[name] = _mean(v for r in records if (v := getattr(r, name)) is not None)
    # Useful progress made in the window; a workload whose recorded past was wiped out by
    # a disruption made none (its loss is in lost_work), rather than a negative amount.
    useful = sum(max(0.0, r.useful_work) for r in records)
    summary["gpu_utilization"] = allocated / available if available > 0 else None
    summary["gpu_fragmentation"] = None
    summary["goodput"] = useful / allocated if allocated > 0 else None
    summary["ettr"] = _ettr(records)
    summary["over_evicted_pods"] = float(sum(r.over_evicted_pods for r in records))
    summary["groups_broken"] = float(sum(r.groups_broken for r in records))
    summary["thrashing_workloads"] = float(sum(1 for r in records if r.premature_disruptions >= 2))
    summary["urgent_never_useful"] = float(
        sum(1 for r in records if r.urgent and r.time_to_group_useful is None)
    )
    summary["standby_activations"] = summary["workloads_failed"] = 0.0  # set from the log
    return {name: summary[name] for name in SUMMARY_NAMES}


def _ettr(records: Sequence[WorkloadRecord]) -> float | None:
    """ETTR of the variant: the workloads' ETTRs weighted by their GPUs (the workload's
    own ETTR when there is one), over workloads submitted in the window."""
    weighted = [(r.ettr, r.members * r.gpus_per_member) for r in records if r.ettr is not None]
    gpus = sum(g for _, g in weighted)
    return sum(e * g for e, g in weighted) / gpus if gpus else None


def _distributions(records: Sequence[WorkloadRecord]) -> dict[str, dict[str, float]]:
    """mean, p50, p95 and max of each per-workload metric, over workloads where it applies."""
    out = {}
    for name in (*PREEMPTOR_METRICS, *MEANED, "lost_work", "stranded_capacity"):
        values = sorted(v for r in records if (v := getattr(r, name)) is not None)
        if values:
            out[name] = {
                "mean": sum(values) / len(values),
                "p50": percentile(values, 50),
                "p95": percentile(values, 95),
                "max": values[-1],
            }
    return out


def _by_class(records: Sequence[WorkloadRecord]) -> dict[str, dict[str, float | None]]:
    """completion_time and queue_wait p50/p95 per priority class."""
    classes: dict[str, list[WorkloadRecord]] = defaultdict(list)
    for r in records:
        classes[r.priority_class or "(none)"].append(r)
    out = {}
    for name, rows in sorted(classes.items()):
        entry: dict[str, float | None] = {}
        for metric in ("completion_time", "queue_wait"):
            values = sorted(v for r in rows if (v := getattr(r, metric)) is not None)
            entry[f"{metric}_p50"] = percentile(values, 50) if values else None
            entry[f"{metric}_p95"] = percentile(values, 95) if values else None
        entry["lost_work"] = sum(r.lost_work for r in rows)
        out[name] = entry
    return out


def percentile(sorted_values: Sequence[float], pct: float) -> float:
    """Linear interpolation between closest ranks (numpy's default)."""
    if len(sorted_values) == 1:
        return sorted_values[0]
    rank = (len(sorted_values) - 1) * pct / 100
    low = math.floor(rank)
    high = min(low + 1, len(sorted_values) - 1)
    return sorted_values[low] + (sorted_values[high] - sorted_values[low]) * (rank - low)


def confidence_interval(values: Sequence[float]) -> tuple[float, float]:
    """Mean and the half-width of its 95% confidence interval (Student's t, exact for
    every df: see ``scheduler_core.stats``)."""
    return mean_interval(values)
