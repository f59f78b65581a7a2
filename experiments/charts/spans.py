"""Server-side aggregation of the event log into what a GPU timeline draws.

1. ``pod_spans`` reads the log once and cuts each pod's life on its node into spans by
   state: loading (bound, not Ready), running, terminating (SIGTERM sent, GPUs still
   held), plus overlays on top of them for checkpoint writes and stranded capacity.
   Each pod gets GPU slots on its node (the lowest free contiguous block, like a device
   plugin handing out device indexes), so concurrent pods of one node never overlap.
2. ``node_groups`` splits the cluster into groups a person can scan: racks (a ``rack``,
   ``block`` or ``zone`` label), else pools, cut into chunks of at most 64 nodes.
3. ``occupancy`` integrates spans into GPU-seconds per group and time slice, so a 10,000
   node cluster becomes a few hundred rows of a heatmap instead of 10,000 Gantt rows.
"""

from __future__ import annotations

from collections import defaultdict
from collections.abc import Iterable, Mapping
from dataclasses import dataclass
from typing import Any, NamedTuple

from experiments.charts.data import EventLike

BASE_STATES = ("loading", "running", "terminating")
OVERLAY_STATES = ("checkpointing", "stranded")
GROUP_LABELS = ("rack", "block", "zone", "topology.kubernetes.io/zone")
MAX_GROUP_NODES = 64


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


class Preemption(NamedTuple):
    """A victim evicted for a preemptor at ``time``; nodes as the log names them."""

    time: float
    victim: str
    victim_node: str
    preemptor: str
    preemptor_node: str


@dataclass(frozen=True, slots=True)
class NodeGroup:
    name: str
    nodes: tuple[str, ...]
    gpus: int


@dataclass
class _Open:
    node: str
    workload: str
    gpus: float
    state: str
    since: float
    slots: tuple[int, ...]


class _Slots:
    """Which GPU indexes of each node are taken."""

    def __init__(self, capacity: Mapping[str, int]) -> None:
        self.capacity = capacity
        self.taken: dict[str, list[bool]] = {}

    def take(self, node: str, count: int) -> tuple[int, ...]:
        """The lowest free contiguous block of ``count``, else the lowest free indexes
        (a log that overcommits a node gets extra indexes rather than an error)."""
        if count <= 0:
            return ()
        taken = self.taken.setdefault(node, [False] * self.capacity.get(node, 0))
        free = [i for i, used in enumerate(taken) if not used]
        run = next((free[i:i + count] for i in range(len(free) - count + 1)
                    if free[i + count - 1] - free[i] == count - 1), None)
        chosen = run or (free + list(range(len(taken), len(taken) + count)))[:count]
        taken.extend([False] * (max(chosen, default=-1) + 1 - len(taken)))
        for i in chosen:
            taken[i] = True
        return tuple(chosen)

    def give_back(self, node: str, slots: tuple[int, ...]) -> None:
        for i in slots:
            self.taken[node][i] = False


class _SpanReader:
    """One pass over the log; the state machine of every pod that held GPUs."""

    def __init__(self, write_seconds: Mapping[str, float], capacity: Mapping[str, int]) -> None:
        self.write_seconds = write_seconds
        self.slots = _Slots(capacity)
        self.open: dict[str, _Open] = {}
        self.by_workload: dict[str, set[str]] = defaultdict(set)
        self.spans: list[Span] = []
        self.overlays: list[Span] = []
        self.marked: set[tuple[str, str, float]] = set()
        self.written: set[tuple[str, float]] = set()
        self.handlers = {"Scheduled": self._scheduled, "Ready": self._ready,
                         "Killing": self._killing, "Released": self._gone,
                         "Completed": self._gone, "CheckpointWritten": self._checkpoint,
                         "Stranded": self._stranded}

    def read(self, event: EventLike) -> None:
        handler = self.handlers.get(event.reason)
        if handler is not None:
            handler(event)

    def _scheduled(self, e: EventLike) -> None:
        self._close(e.pod, e.time)
        slots = self.slots.take(e.node, int(e.value))
        self.open[e.pod] = _Open(e.node, e.workload, float(e.value), "loading", e.time, slots)
        self.by_workload[e.workload].add(e.pod)

    def _ready(self, e: EventLike) -> None:
        self._switch(e.pod, e.time, "running")

    def _killing(self, e: EventLike) -> None:
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
            self.slots.give_back(current.node, current.slots)

    def _emit(self, pod: str, current: _Open, end: float) -> None:
        if end > current.since:
            self.spans.append(Span(current.node, pod, current.workload, current.state,
                                   current.since, end, current.gpus, slots=current.slots))

    def _checkpoint(self, e: EventLike) -> None:
        """A write ends at the event's time; it covers the pod named, or every member
        of the workload that is running."""
        write = self.write_seconds.get(e.workload, 0.0)
        if write <= 0 or (not e.pod and (e.workload, e.time) in self.written):
            return
        if not e.pod:  # members log the same write once each: one pass covers them all
            self.written.add((e.workload, e.time))
        pods = [e.pod] if e.pod else sorted(self.by_workload[e.workload])
        for pod in pods:
            current = self.open.get(pod)
            if current is not None and (e.pod or current.state == "running"):
                self._overlay(pod, current, "checkpointing", e.time - write, e.time)

    def _stranded(self, e: EventLike) -> None:
        """GPU-seconds held without progress over the interval ending now, by the
        workload's live members: the interval's length is value / their GPUs."""
        live = [(pod, self.open[pod]) for pod in sorted(self.by_workload[e.workload])]
        held = sum(current.gpus for _, current in live)
        if held <= 0 or e.value <= 0:
            return
        start = e.time - e.value / held
        for pod, current in live:
            self._overlay(pod, current, "stranded", max(start, current.since), e.time)

    def _overlay(self, pod: str, current: _Open, state: str, start: float, end: float) -> None:
        """Independent shards log one checkpoint each without naming the pod: the same
        write reaches every member several times, so each is drawn once."""
        key = (pod, state, start)
        if end > start and key not in self.marked:
            self.marked.add(key)
            self.overlays.append(Span(current.node, pod, current.workload, state, start, end,
                                      current.gpus, under=current.state, slots=current.slots))

    def finish(self, end: float) -> list[Span]:
        for pod in list(self.open):
            self._close(pod, max(end, self.open[pod].since))
        return self.spans + self.overlays


def pod_spans(events: Iterable[EventLike], *, end: float,
              write_seconds: Mapping[str, float] | None = None,
              capacity: Mapping[str, int] | None = None) -> list[Span]:
    """Every pod's spans by state, in time order of the log; pods still holding GPUs at
    the end of the log are closed at ``end`` (the horizon). ``capacity``: GPUs per node
    (``node_capacity``), ``write_seconds``: checkpoint write time per workload."""
    reader = _SpanReader(write_seconds or {}, capacity or {})
    for event in events:
        reader.read(event)
    return reader.finish(end)


def preemptions(events: Iterable[EventLike]) -> list[Preemption]:
    """Victims and their preemptors, with the node each preemptor was nominated to (or
    the node of its "victims selected" event)."""
    victims: list[EventLike] = []
    nominated: dict[tuple[str, float], str] = {}
    for e in events:
        if e.reason == "Preempted":
            victims.append(e)
        elif e.reason in ("Nominated", "VictimsSelected") and e.node:
            nominated.setdefault((e.pod, e.time), e.node)
    return [Preemption(v.time, v.pod, v.node, v.related,
                       nominated.get((v.related, v.time), v.node)) for v in victims]


def node_groups(cluster: Mapping[str, Any], *, max_nodes: int = MAX_GROUP_NODES,
                ) -> list[NodeGroup]:
    """Groups in the cluster's own order: by topology label when nodes carry one, else
    by pool (named nodes together), every group cut into chunks of ``max_nodes``."""
    keyed: dict[str, list[tuple[str, int]]] = {}
    for name, gpus, group in _nodes(cluster):
        keyed.setdefault(group, []).append((name, gpus))
    return [chunk for group, nodes in keyed.items() for chunk in _chunks(group, nodes, max_nodes)]


def node_capacity(cluster: Mapping[str, Any]) -> dict[str, int]:
    """GPUs per node of a stored spec's ``cluster``."""
    return {name: gpus for name, gpus, _ in _nodes(cluster)}


def _nodes(cluster: Mapping[str, Any]) -> Iterable[tuple[str, int, str]]:
    """(node, gpus, group) in ``Cluster.node_names`` order: pools, then named nodes."""
    for pool in cluster.get("nodePools") or []:
        group = _label_group(pool.get("labels") or {}) or pool["name"]
        for i in range(pool.get("count", 1)):
            yield f"{pool['name']}-{i}", pool.get("gpus", 0), group
    for node in cluster.get("nodes") or []:
        yield node["name"], node.get("gpus", 0), _label_group(node.get("labels") or {}) or "nodes"


def _label_group(labels: Mapping[str, str]) -> str:
    return next((f"{key.rsplit('/', 1)[-1]} {labels[key]}" for key in GROUP_LABELS
                 if labels.get(key)), "")


def _chunks(group: str, nodes: list[tuple[str, int]], size: int) -> list[NodeGroup]:
    if len(nodes) <= size:
        return [NodeGroup(group, tuple(n for n, _ in nodes), sum(g for _, g in nodes))]
    return [NodeGroup(f"{group} {part[0][0]}…{part[-1][0]}", tuple(n for n, _ in part),
                      sum(g for _, g in part))
            for part in (nodes[i:i + size] for i in range(0, len(nodes), size))]


def occupancy(spans: Iterable[Span], rows: Mapping[str, int] | None, n_rows: int, *,
              start: float, end: float, bins: int) -> list[list[float]]:
    """GPU-seconds per row and time slice held by ``spans``; ``rows`` maps a node to its
    row (nodes not in it are skipped; None puts every node in row 0). Linear in the
    number of spans plus rows by bins, whatever the spans' lengths: a difference array
    carries the slices a span covers whole."""
    width = (end - start) / bins
    totals = [[0.0] * bins for _ in range(n_rows)]
    carry = [[0.0] * (bins + 1) for _ in range(n_rows)]
    for span in spans:
        row = 0 if rows is None else rows.get(span.node)
        if row is not None:
            _integrate(totals[row], carry[row], span, start, width, bins)
    for row_totals, row_carry in zip(totals, carry, strict=True):
        running = 0.0
        for i in range(bins):
            running += row_carry[i]
            row_totals[i] += running
    return totals


def _integrate(totals: list[float], carry: list[float], span: Span, start: float,
               width: float, bins: int) -> None:
    a = max(span.start, start)
    b = min(span.end, start + bins * width)
    if b <= a:
        return
    first = min(bins - 1, int((a - start) / width))
    last = min(bins - 1, int((b - start) / width))
    if first == last:
        totals[first] += (b - a) * span.gpus
        return
    totals[first] += (start + (first + 1) * width - a) * span.gpus
    totals[last] += (b - (start + last * width)) * span.gpus
    if last > first + 1:
        carry[first + 1] += width * span.gpus
        carry[last] -= width * span.gpus
