"""What the charts draw, derived once from the event log and the typed spec.

The simulator owns every fact about a run, so the reading of its log into pod lives,
preemption links, costs and recoveries lives here too, next to the code that writes the
log: the web app stores a :class:`Timeline` with each replication and only draws it.

1. ``pod_spans`` cuts each pod's life on its node into spans by state: loading (bound,
   not Ready), running, terminating (SIGTERM sent, GPUs still held), plus overlays on top
   of them for checkpoint writes and stranded capacity. Each pod gets GPU slots on its
   node (the lowest free contiguous block, like a device plugin handing out device
   indexes), so concurrent pods of one node never overlap.
2. ``stranded_intervals`` reads each ``Stranded`` event back into the interval and the
   pods it covers: the members that were Ready over it (see :func:`stranded_intervals`).
3. ``preemptions`` links each victim to its preemptor and the node it was nominated to.
4. ``cost_increments`` are lost work, stranded capacity and thrown-away startup as
   ``metrics`` counts them, so running totals end at the summary's figures.
5. ``recoveries`` and ``recovery_curve``: how each disrupted workload climbed back.
6. ``states`` (:mod:`scheduler_core.state_area`): the whole cluster's GPUs by pod state
   on a fixed grid of time slices, from every span, so it is whole past the span budget.
"""

from __future__ import annotations

import math
from bisect import bisect_left
from collections import defaultdict
from collections.abc import Callable, Iterable, Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any, NamedTuple, Protocol, TypeGuard

from scheduler_core.events import Reason
from scheduler_core.gc_pause import gc_paused
from scheduler_core.spec import MILLI_PER_GPU, ExperimentSpec, mig_gpus, resolve_variant
from scheduler_core.state_area import AreaAccumulator, NoArea, StateArea

TIMELINE_VERSION = 3
"""Bumped when what a stored timeline holds changes: older ones are derived again."""
COSTS_SINCE = 2
"""The oldest version whose cost increments and recoveries read as this one's: version
3 added the GPUs by state and left them alone, so the cost charts of many replications
need not derive every older row again."""

TIMELINE_REASONS = (
    Reason.SCHEDULED,
    Reason.READY,
    Reason.KILLING,
    Reason.RELEASED,
    Reason.COMPLETED,
    Reason.CHECKPOINT,
    Reason.STRANDED,
    Reason.PREEMPTED,
    Reason.NOMINATED,
    Reason.VICTIMS_SELECTED,
    Reason.DISRUPTED,
    Reason.RESUMED,
    Reason.RECOVERED,
)
"""Every reason :func:`build` reads: a reader of stored rows may fetch only these."""


class EventLike(Protocol):
    """An event log row: :class:`~scheduler_core.events.Event` or a stored row."""

    @property
    def time(self) -> float: ...
    @property
    def reason(self) -> str: ...
    @property
    def workload(self) -> str: ...
    @property
    def pod(self) -> str: ...
    @property
    def node(self) -> str: ...
    @property
    def value(self) -> float: ...
    @property
    def related(self) -> str: ...


class Span(NamedTuple):
    """A pod on a node in one state from ``start`` to ``end`` (simulated seconds).
    Overlays (checkpointing, stranded) name the base state they cover in ``under``.
    A tuple: a large run has 100,000 of them, cached between requests, and tuples
    pickle several times faster than dataclasses."""

    node: str
    pod: str
    workload: str
    state: str
    start: float
    end: float
    gpus: float
    under: str = ""
    slots: tuple[int, ...] = ()
    parts: tuple[int, ...] = ()
    """A share of one device (``gpuMilli`` or a MIG instance): ``slots`` is that one
    device and ``parts`` the milli-GPU ranges of it the share is drawn on, flat as
    (offset, milli, offset, milli, ...); usually one range, more when the free room left
    by shares that went is not contiguous. Empty for whole GPUs."""


class Preemption(NamedTuple):
    """A victim evicted for a preemptor at ``time``; nodes as the log names them."""

    time: float
    victim: str
    victim_node: str
    preemptor: str
    preemptor_node: str


class Cost(NamedTuple):
    """An increment of cost at ``time``: lost work, stranded capacity or the startup of
    a Ready pod thrown away by its eviction (the three parts of wasted GPU-seconds)."""

    time: float
    lost: float
    wasted: float


class Recovery(NamedTuple):
    """One disruption of one workload: the work it lost and when it resumed useful
    progress and got back to where it was (None: not by the end of the run)."""

    workload: str
    time: float
    lost: float
    resumed: float | None
    recovered: float | None


class Stranded(NamedTuple):
    """GPUs held without progress by ``pods`` of ``workload`` from ``start`` to ``end``."""

    workload: str
    start: float
    end: float
    gpus: float
    pods: tuple[str, ...]


@dataclass(frozen=True, slots=True)
class Timeline:
    """Everything the time charts of one replication draw."""

    spans: list[Span] = field(default_factory=list)
    preemptions: list[Preemption] = field(default_factory=list)
    costs: list[Cost] = field(default_factory=list)
    recoveries: list[Recovery] = field(default_factory=list)
    stranded: list[Stranded] = field(default_factory=list)
    states: StateArea | None = None
    """The whole cluster's GPUs by pod state on a grid of time slices, gathered from
    every span (those left out too); None on a timeline read back from an older row."""
    omitted_spans: int = 0
    """Pod spans left out (more than the store's budget): the costs, recoveries,
    preemptions and stranded intervals are kept, the per-pod drawing is not. At least
    this many: :func:`build` with a budget stops reading spans at the first one past it
    (it counts budget + 1), :meth:`to_json` of a whole timeline counts them all."""

    @gc_paused()
    def to_json(self, *, max_spans: int | None = None) -> dict[str, Any]:
        """Plain lists (one row per item, fields in tuple order): a compact JSON column.
        Above ``max_spans`` pod spans (a 2,000-member gang failing 460 times has a
        million), the spans are left out and counted, so one replication's row stays
        bounded; everything else is kept."""
        over = max_spans is not None and len(self.spans) > max_spans
        kept = [] if over else self.spans
        return {
            "version": TIMELINE_VERSION,
            "omitted_spans": len(self.spans) if over else self.omitted_spans,
            "spans": [[*s[:8], list(s.slots), list(s.parts)] for s in kept],
            "preemptions": [list(p) for p in self.preemptions],
            "costs": [list(c) for c in self.costs],
            "recoveries": [list(r) for r in self.recoveries],
            "stranded": [[*s[:4], list(s.pods)] for s in self.stranded],
            **({"states": self.states.to_json()} if self.states is not None else {}),
        }

    @classmethod
    @gc_paused()
    def from_json(cls, data: Mapping[str, Any]) -> Timeline:
        return cls(
            spans=[
                Span._make([*row[:8], tuple(row[8]), tuple(row[9] if len(row) > 9 else ())])
                for row in data.get("spans", ())
            ],
            preemptions=[Preemption(*row) for row in data.get("preemptions", ())],
            costs=costs_from_json(data.get("costs", ())),
            recoveries=recoveries_from_json(data.get("recoveries", ())),
            stranded=[
                Stranded._make([*row[:4], tuple(row[4])]) for row in data.get("stranded", ())
            ],
            states=StateArea.from_json(data["states"]) if "states" in data else None,
            omitted_spans=int(data.get("omitted_spans", 0)),
        )


def is_current(data: Any) -> TypeGuard[Mapping[str, Any]]:
    """Whether a stored timeline was written by this version's reading of the log."""
    return isinstance(data, Mapping) and data.get("version") == TIMELINE_VERSION


def costs_are_current(data: Any) -> TypeGuard[Mapping[str, Any]]:
    """Whether a stored timeline's costs and recoveries (``Replication.timeline_costs``)
    are this version's reading of the log (:data:`COSTS_SINCE`)."""
    version = data.get("version") if isinstance(data, Mapping) else None
    return isinstance(version, int) and COSTS_SINCE <= version <= TIMELINE_VERSION


def costs_from_json(rows: Iterable[Sequence[float]]) -> list[Cost]:
    return [Cost(*row) for row in rows]


def recoveries_from_json(rows: Iterable[Sequence[Any]]) -> list[Recovery]:
    return [Recovery(*row) for row in rows]


# ----------------------------------------------------------------------- the whole
@gc_paused()
def build(
    events: Sequence[EventLike],
    spec: ExperimentSpec,
    *,
    max_spans: int | None = None,
    node_rows: Mapping[str, int] | None = None,
) -> Timeline:
    """The timeline of one replication of ``spec`` (the variant's resolved spec).

    ``max_spans``: the most pod spans worth building. A log past it gets no spans and
    ``omitted_spans`` = max_spans + 1, but everything else whole, the GPUs by state
    (``states``) gathered from every span, left out or not. The store keeps no
    spans past its budget anyway, and building them all first is what cost: the fleet
    preset's 5-minute checkpoints are 24 million write overlays (about 60 s and 6.6 GB,
    past a worker's address-space cap) for a row that would keep none of them.

    ``node_rows``: each node's row of a heatmap of node groups (the page's grouping).
    Past the budget the GPUs each row held per slice are kept with ``states``, so the
    heatmap draws without the spans it is otherwise drawn from."""
    reader = _read(
        events,
        spec.horizon_seconds,
        write_seconds(spec),
        node_capacity(spec),
        checkpoint_cycles(spec),
        mig_devices(spec),
        frozenset(w.name for w in spec.workloads if w.mig),
        max_spans,
        node_rows,
        area=True,
    )
    return Timeline(
        spans=reader.spans + reader.overlays,
        preemptions=preemptions(events),
        costs=cost_increments(events),
        recoveries=recoveries(events),
        stranded=reader.stranded,
        states=reader.area.area(groups=reader.over and bool(node_rows)),
        omitted_spans=reader.counted if reader.over else 0,
    )


def for_variant(
    spec: ExperimentSpec,
    variant: str,
    events: Sequence[EventLike],
    *,
    max_spans: int | None = None,
    node_rows: Mapping[str, int] | None = None,
) -> Timeline:
    """The timeline of a replication of ``variant`` of ``spec``: what the worker stores
    with its results (and what a reader derives for a row stored without one)."""
    resolved = resolve_variant(spec, variant).spec
    return build(events, resolved, max_spans=max_spans, node_rows=node_rows)


def node_capacity(spec: ExperimentSpec) -> dict[str, int]:
    """GPUs per node, by the names the log uses."""
    cluster = spec.cluster
    capacity = {f"{p.name}-{i}": p.gpus for p in cluster.node_pools for i in range(p.count)}
    return capacity | {n.name: n.gpus for n in cluster.nodes}


def mig_device_count(mig: Mapping[str, int]) -> int:
    """Devices a node's MIG instances are carved from, as drawn after its whole ones:
    the instances' GPUs (spec.mig_gpus) rounded up. Which instance is on which physical
    device is not modelled (a pod asks for a profile, not a device)."""
    return math.ceil(mig_gpus(mig) - 1e-9) if mig else 0


def mig_devices(spec: ExperimentSpec) -> dict[str, int]:
    """MIG devices per node that has any (:func:`mig_device_count`)."""
    cluster = spec.cluster
    out = {
        f"{p.name}-{i}": mig_device_count(p.mig)
        for p in cluster.node_pools
        if p.mig
        for i in range(p.count)
    }
    return out | {n.name: mig_device_count(n.mig) for n in cluster.nodes if n.mig}


def write_seconds(spec: ExperimentSpec) -> dict[str, float]:
    """How long each workload's checkpoint write takes (what a write overlay covers)."""
    return {w.name: float(w.checkpoint.write_seconds) for w in spec.workloads}


def checkpoint_cycles(spec: ExperimentSpec) -> dict[str, float]:
    """Seconds from one periodic write's end to the next (interval + write), by workload:
    how the writes a ``CheckpointWritten`` row stands for are spaced before it."""
    return {
        w.name: float(w.checkpoint.interval_seconds) + float(w.checkpoint.write_seconds)
        for w in spec.workloads
        if w.checkpoint.interval_seconds is not None
    }


# ----------------------------------------------------------------------- pod spans
@dataclass
class _Open:
    node: str
    workload: str
    gpus: float
    state: str
    since: float
    slots: tuple[int, ...]
    parts: tuple[int, ...] = ()
    ready_at: float | None = None
    killed_at: float | None = None


class _Slots:
    """Which GPU indexes of each node are taken, and how much of each device its shares
    hold. Whole devices come first (``capacity``), then the devices MIG instances are
    carved from (``mig``); whole GPUs and ``gpuMilli`` shares use the first, MIG
    instances the second."""

    def __init__(self, capacity: Mapping[str, int], mig: Mapping[str, int] | None = None) -> None:
        self.capacity = capacity
        self.mig = mig or {}
        self.taken: dict[str, list[bool]] = {}
        """A device in use, whole or by shares."""
        self.ranges: dict[str, dict[int, list[tuple[int, int]]]] = {}
        """The (offset, milli) ranges the shares on each shared device are drawn on."""

    def _taken(self, node: str) -> list[bool]:
        size = self.capacity.get(node, 0) + self.mig.get(node, 0)
        return self.taken.setdefault(node, [False] * size)

    def take(self, node: str, count: int) -> tuple[int, ...]:
        """The lowest free contiguous block of ``count``, else the lowest free indexes
        (a log that overcommits a node gets extra indexes rather than an error)."""
        if count <= 0:
            return ()
        taken = self._taken(node)
        whole = self.capacity.get(node, 0)
        mig = range(whole, whole + self.mig.get(node, 0))
        free = [i for i, used in enumerate(taken) if not used and i not in mig]
        run = next(
            (
                free[i : i + count]
                for i in range(len(free) - count + 1)
                if free[i + count - 1] - free[i] == count - 1
            ),
            None,
        )
        extra = range(len(taken), len(taken) + count)
        chosen = run or (free + list(extra))[:count]
        taken.extend([False] * (max(chosen, default=-1) + 1 - len(taken)))
        for i in chosen:
            taken[i] = True
        return tuple(chosen)

    def take_share(
        self, node: str, milli: int, mig: bool
    ) -> tuple[tuple[int, ...], tuple[int, ...]]:
        """A share's device and its ranges on it: the fullest device of its kind with
        room (best fit, lowest index among equals, the rule devices.py places shares
        by), drawn on the lowest free ranges of that device."""
        taken = self._taken(node)
        ranges = self.ranges.setdefault(node, {})
        whole = self.capacity.get(node, 0)
        kind = range(whole, whole + self.mig.get(node, 0)) if mig else range(whole)
        best, best_free = -1, MILLI_PER_GPU + 1
        for i in kind:
            held = ranges.get(i)
            if taken[i] and held is None:
                continue  # a whole-GPU pod holds it
            left = MILLI_PER_GPU - sum(n for _, n in held or ())
            if milli <= left < best_free:
                best, best_free = i, left
        if best < 0:  # an overcommitted log: a device of its own past the node's
            best = len(taken)
            taken.append(False)
        taken[best] = True
        held = ranges.setdefault(best, [])
        parts = _free_ranges(held, milli)
        held.extend(zip(parts[::2], parts[1::2], strict=True))
        held.sort()
        return (best,), parts

    def give_back(self, node: str, slots: tuple[int, ...], parts: tuple[int, ...] = ()) -> None:
        if not parts:
            for i in slots:
                self.taken[node][i] = False
            return
        (device,) = slots
        held = self.ranges[node][device]
        for part in zip(parts[::2], parts[1::2], strict=True):
            held.remove(part)
        if not held:
            del self.ranges[node][device]
            self.taken[node][device] = False


def _free_ranges(held: Sequence[tuple[int, int]], milli: int) -> tuple[int, ...]:
    """Flat (offset, milli, ...) for ``milli`` on a device whose shares hold ``held``
    (sorted): the first gap that fits it whole, else the gaps in order until it is
    covered (past the end if the log overcommits the device)."""
    gaps, at = [], 0
    for offset, length in held:
        if offset > at:
            gaps.append((at, offset - at))
        at = max(at, offset + length)
    gaps.append((at, max(0, MILLI_PER_GPU - at)))
    fits = next(((o, n) for o, n in gaps if n >= milli), None)
    if fits is not None:
        return (fits[0], milli)
    out: list[int] = []
    left = milli
    for offset, length in gaps:
        if left and length:
            out += [offset, min(length, left)]
            left -= min(length, left)
    if left:
        out += [max(MILLI_PER_GPU, at), left]
    return tuple(out)


class _SpanReader:
    """One pass over the log; the state machine of every pod that held GPUs."""

    def __init__(
        self,
        write_seconds: Mapping[str, float],
        capacity: Mapping[str, int],
        cycles: Mapping[str, float] | None = None,
        mig: Mapping[str, int] | None = None,
        mig_workloads: frozenset[str] = frozenset(),
        max_spans: int | None = None,
        end: float | None = None,
        node_rows: Mapping[str, int] | None = None,
    ) -> None:
        self.area = NoArea() if end is None else AreaAccumulator(end, rows=node_rows)
        """The GPUs by state, from every span, kept or not, on ``end``'s slices (None:
        not gathered)."""
        self.write_seconds = write_seconds
        self.cycles = cycles or {}
        self.slots = _Slots(capacity, mig)
        self.mig_workloads = mig_workloads
        self.open: dict[str, _Open] = {}
        self.by_workload: dict[str, set[str]] = defaultdict(set)
        self.spans: list[Span] = []
        self.overlays: list[Span] = []
        self.stranded: list[Stranded] = []
        self.marked: set[tuple[str, str, float]] = set()
        self.written: set[tuple[str, float]] = set()
        self.max_spans = max_spans
        self.counted = 0
        self.over = False
        """Past ``max_spans``: the spans are dropped and no more are made; the pods'
        states are still followed, for the stranded intervals."""

    def read(self, event: EventLike) -> None:
        handler = _SPAN_HANDLERS.get(event.reason)  # type: ignore[call-overload]
        if handler is not None:
            handler(self, event)

    def _scheduled(self, e: EventLike) -> None:
        self._close(e.pod, e.time)
        gpus = float(e.value)
        mig = e.workload in self.mig_workloads
        parts: tuple[int, ...] = ()
        if mig or not gpus.is_integer():
            # A share's value is its fraction (engine: Pod.gpu_amount); a MIG instance's
            # is floored to a milli so the instances of one device never overflow it.
            milli = math.floor(gpus * MILLI_PER_GPU + 1e-6) if mig else round(gpus * 1000)
            slots, parts = self.slots.take_share(e.node, max(1, milli), mig)
        else:
            slots = self.slots.take(e.node, int(gpus))
        self.open[e.pod] = _Open(e.node, e.workload, gpus, "loading", e.time, slots, parts)
        self.by_workload[e.workload].add(e.pod)

    def _ready(self, e: EventLike) -> None:
        if e.pod in self.open:
            self.open[e.pod].ready_at = e.time
        self._switch(e.pod, e.time, "running")

    def _killing(self, e: EventLike) -> None:
        if e.pod in self.open:
            self.open[e.pod].killed_at = e.time
        self._switch(e.pod, e.time, "terminating")

    def _gone(self, e: EventLike) -> None:
        self._close(e.pod, e.time)

    def _switch(self, pod: str, time: float, state: str) -> None:
        current = self.open.get(pod)
        if current is None:
            return
        self._emit(pod, current, time)
        current.state, current.since = state, time

    def _close(self, pod: str, time: float) -> None:
        current = self.open.pop(pod, None)
        if current is not None:
            self._emit(pod, current, time)
            self.by_workload[current.workload].discard(pod)
            self.slots.give_back(current.node, current.slots, current.parts)

    def _room(self) -> bool:
        """Whether one more span is kept (counting it); at the first past the budget,
        drop those made and stop."""
        if self.over:
            return False
        self.counted += 1
        if self.max_spans is not None and self.counted > self.max_spans:
            self.over = True
            self.spans, self.overlays = [], []
            return False
        return True

    def _emit(self, pod: str, current: _Open, end: float) -> None:
        if end <= current.since:
            return
        self.area.add(current.state, "", current.since, end, current.gpus)
        self.area.hold(current.node, current.since, end, current.gpus)
        if self._room():
            self.spans.append(
                Span(
                    current.node,
                    pod,
                    current.workload,
                    current.state,
                    current.since,
                    end,
                    current.gpus,
                    slots=current.slots,
                    parts=current.parts,
                )
            )

    def _checkpoint(self, e: EventLike) -> None:
        """Writes end at the event's time and, when ``related`` counts several, every
        cycle (interval + write) before it (app.py logs a segment's periodic writes as
        one row). They cover the pod named, or, for a group's checkpoint (no pod), every
        member running then, and one whose SIGTERM started the write. Each is drawn
        within the pod's current span: a segment's writes never outlive it."""
        write = self.write_seconds.get(e.workload, 0.0)
        if write <= 0 or (not e.pod and (e.workload, e.time) in self.written):
            return
        if not e.pod:  # an older log named no pod per member: one pass covers them all
            self.written.add((e.workload, e.time))
        count = int(e.related) if e.related else 1
        cycle = self.cycles.get(e.workload, 0.0)
        ends = [e.time - k * cycle for k in range(count - 1, -1, -1)] if cycle > 0 else [e.time]
        pods = [e.pod] if e.pod else sorted(self.by_workload[e.workload])
        combs: dict[tuple[float, int, str], float] = defaultdict(float)
        cuts: dict[float, int] = {}
        for pod in pods:
            current = self.open.get(pod)
            if current is None:
                continue
            writing = e.pod or current.state == "running"
            if not writing and current.state == "terminating" and count == 1:
                writing = abs(current.since - (e.time - write)) < 1e-6  # SIGTERM's write
            if not writing:
                continue
            # the writes since the pod's span began (ends ascend: a cut, not a scan of
            # the row's thousands of writes for each of its 2,000 members, who mostly
            # began together)
            cut = cuts.get(current.since)
            if cut is None:
                since = current.since - 1e-9
                cut = 0 if count == 1 else bisect_left(ends, True, key=lambda t: t - write >= since)
                cuts[current.since] = cut
            if cut == len(ends):
                continue
            if self.over:  # past the budget: only the area, the members alike at once
                combs[(ends[cut] - write, len(ends) - cut, current.state)] += current.gpus
                continue
            for end in ends[cut:]:
                self._overlay(pod, current, "checkpointing", end - write, end, current.state)
        # A group's row covers every member (2,000 of them on the fleet preset): those
        # whose writes fall alike (the same first write, count and state) are one comb
        # of their GPUs together, in closed form (no span is kept past the budget).
        for (first, n, under), gpus in combs.items():
            self.area.add_comb("checkpointing", under, first, cycle, write, n, gpus)

    def _stranded(self, e: EventLike) -> None:
        """The application model closes a stranded interval whenever the set of live
        (Ready, not yet killed) members changes, and values it at the GPUs of the
        members live *over* it. So the pods it covers are those Ready before ``e.time``
        and not killed before it: not a replacement whose Ready at this very instant
        is what ended the wait, nor a member killed earlier. The interval's length is
        the value over their GPUs."""
        live = [
            (pod, current)
            for pod in sorted(self.by_workload[e.workload])
            if (current := self.open[pod]).ready_at is not None
            and current.ready_at < e.time
            and (current.killed_at is None or current.killed_at >= e.time)
        ]
        held = sum(current.gpus for _, current in live)
        if held <= 0 or e.value <= 0:
            return
        start = e.time - e.value / held
        self.stranded.append(
            Stranded(e.workload, start, e.time, held, tuple(pod for pod, _ in live))
        )
        if self.over:  # past the budget: only the area, the members Ready alike at once
            starts: dict[float, float] = defaultdict(float)
            for _, current in live:
                starts[max(start, current.ready_at or start)] += current.gpus
            for begin, gpus in starts.items():
                if e.time > begin:
                    self.area.add("stranded", "running", begin, e.time, gpus)
            return
        for pod, current in live:
            self._overlay(
                pod, current, "stranded", max(start, current.ready_at or start), e.time, "running"
            )

    def _overlay(
        self, pod: str, current: _Open, state: str, start: float, end: float, under: str
    ) -> None:
        """Independent shards log one checkpoint each without naming the pod: the same
        write reaches every member several times, so each is drawn once."""
        key = (pod, state, start)
        if end <= start or key in self.marked:
            return
        self.area.add(state, under, start, end, current.gpus)
        if not self.over:
            self.marked.add(key)
        if self._room():
            self.overlays.append(
                Span(
                    current.node,
                    pod,
                    current.workload,
                    state,
                    start,
                    end,
                    current.gpus,
                    under=under,
                    slots=current.slots,
                    parts=current.parts,
                )
            )

    def finish(self, end: float) -> list[Span]:
        for pod in list(self.open):
            self._close(pod, max(end, self.open[pod].since))
        return self.spans + self.overlays


_SPAN_HANDLERS: dict[Reason, Callable[[_SpanReader, EventLike], None]] = {
    Reason.SCHEDULED: _SpanReader._scheduled,
    Reason.READY: _SpanReader._ready,
    Reason.KILLING: _SpanReader._killing,
    Reason.RELEASED: _SpanReader._gone,
    Reason.COMPLETED: _SpanReader._gone,
    Reason.CHECKPOINT: _SpanReader._checkpoint,
    Reason.STRANDED: _SpanReader._stranded,
}
"""What each reason does to the spans. Plain functions, not bound methods on the reader:
a reader pointing at itself would leave its spans (17,896 on openb) to the cyclic
collector once the timeline is built, instead of freeing them at once."""


def _read(
    events: Iterable[EventLike],
    end: float,
    write_seconds: Mapping[str, float] | None,
    capacity: Mapping[str, int] | None,
    cycles: Mapping[str, float] | None = None,
    mig: Mapping[str, int] | None = None,
    mig_workloads: frozenset[str] = frozenset(),
    max_spans: int | None = None,
    node_rows: Mapping[str, int] | None = None,
    *,
    area: bool = False,
) -> _SpanReader:
    """One pass of a reader over ``events``; ``area``: gather the GPUs by state too."""
    reader = _SpanReader(
        write_seconds or {},
        capacity or {},
        cycles,
        mig,
        mig_workloads,
        max_spans,
        end if area else None,
        node_rows,
    )
    for event in events:
        reader.read(event)
    reader.finish(end)
    return reader


def pod_spans(
    events: Iterable[EventLike],
    *,
    end: float,
    write_seconds: Mapping[str, float] | None = None,
    capacity: Mapping[str, int] | None = None,
    cycles: Mapping[str, float] | None = None,
) -> list[Span]:
    """Every pod's spans by state, in time order of the log; pods still holding GPUs at
    the end of the log are closed at ``end`` (the horizon). ``capacity``: GPUs per node,
    ``write_seconds``: checkpoint write time per workload, ``cycles``: seconds between
    periodic writes per workload (:func:`checkpoint_cycles`)."""
    reader = _read(events, end, write_seconds, capacity, cycles)
    return reader.spans + reader.overlays


def stranded_intervals(events: Iterable[EventLike]) -> list[Stranded]:
    """Each ``Stranded`` event as the interval and pods it covers (see ``_stranded``)."""
    return _read(events, float("inf"), None, None).stranded


# ------------------------------------------------------------------ preemption links
def preemptions(events: Iterable[EventLike]) -> list[Preemption]:
    """Victims and their preemptors, with the node each preemptor was nominated to (or
    the node of its "victims selected" event)."""
    victims: list[EventLike] = []
    nominated: dict[tuple[str, float], str] = {}
    for e in events:
        if e.reason == Reason.PREEMPTED:
            victims.append(e)
        elif e.reason in (Reason.NOMINATED, Reason.VICTIMS_SELECTED) and e.node:
            nominated.setdefault((e.pod, e.time), e.node)
    return [
        Preemption(v.time, v.pod, v.node, v.related, nominated.get((v.related, v.time), v.node))
        for v in victims
    ]


# ------------------------------------------------------------------------- costs
def cost_increments(events: Iterable[EventLike]) -> list[Cost]:
    """The increments in log order, counted as ``scheduler_core.metrics`` counts them,
    so the last cumulative value equals the summary's total."""
    bound: dict[str, tuple[float, float]] = {}
    ready_at: dict[str, float] = {}
    out: list[Cost] = []
    for e in events:
        if e.reason == Reason.DISRUPTED:
            out.append(Cost(e.time, e.value, e.value))
        elif e.reason == Reason.STRANDED:
            out.append(Cost(e.time, 0.0, e.value))
        elif e.reason == Reason.SCHEDULED:
            bound[e.pod] = (e.time, float(e.value))
        elif e.reason == Reason.READY:
            ready_at[e.pod] = e.time
        elif e.reason == Reason.KILLING and e.pod in ready_at and e.pod in bound:
            start, gpus = bound[e.pod]
            out.append(Cost(e.time, 0.0, (ready_at.pop(e.pod) - start) * gpus))
        elif e.reason in (Reason.RELEASED, Reason.COMPLETED):
            ready_at.pop(e.pod, None)
            bound.pop(e.pod, None)
    return out


# -------------------------------------------------------------------- recoveries
def recoveries(events: Iterable[EventLike]) -> list[Recovery]:
    """Members of a workload disrupted at the same instant are one disruption."""
    lost: dict[tuple[str, float], float] = {}
    resumed: dict[tuple[str, float], float] = {}
    recovered: dict[tuple[str, float], float] = {}
    for e in events:
        if e.reason == Reason.DISRUPTED:
            key = (e.workload, e.time)
            lost[key] = lost.get(key, 0.0) + e.value
        elif e.reason == Reason.RESUMED:
            resumed.setdefault((e.workload, e.value), e.time)
        elif e.reason == Reason.RECOVERED:
            recovered.setdefault((e.workload, e.value), e.time)
    return [
        Recovery(w, t, amount, resumed.get((w, t)), recovered.get((w, t)))
        for (w, t), amount in lost.items()
    ]


def recovery_curve(r: Recovery, *, end: float) -> tuple[list[float], list[float]]:
    """Progress relative to the disruption point, against seconds since it: down by the
    lost work at once, flat until the workload resumes, back to zero when it recovers."""
    stop = end - r.time
    if r.resumed is None:
        return [0.0, stop], [-r.lost, -r.lost]
    if r.recovered is None:
        return [0.0, r.resumed - r.time, stop], [-r.lost, -r.lost, -r.lost]
    return [0.0, r.resumed - r.time, r.recovered - r.time], [-r.lost, -r.lost, 0.0]
