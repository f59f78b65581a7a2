"""Workload-aware preemption (`workload-aware`, KEP-5710, §6) and our `checkpoint-aware`.

The preemptor is a whole group; victims are *units* chosen across the whole cluster: a
pod, or every scheduled pod of a group whose disruptionMode is All (evicted whole or not
at all, also when the preemptor is a single pod, as the KEP says).

The cluster is never copied. "Remove all potential victims" is a map of freed resources
per node (:class:`Headroom`); the group is placed on that headroom once (KMASTER: the
placement is fixed), then units are added back in reprieve order while every node still
holds what was placed on it.

`checkpoint-aware` is **not a Kubernetes behaviour**: same eligibility, but units are
reprieved most-expensive-first by the expected cost of evicting them (work since the last
checkpoint, capacity stranded in broken groups, startup thrown away, time to recover), so
the victims are the cheapest set that makes room.
"""

from __future__ import annotations

import math
from collections.abc import Callable, Iterable, Iterator
from contextlib import contextmanager
from dataclasses import dataclass, field

from scheduler_core import fast_checkpoint, fast_group, fast_preemption
from scheduler_core.cluster import Cluster
from scheduler_core.decisions import CHEAPEST, CompactCandidates
from scheduler_core.model import Node, Pod, PodState, Workload
from scheduler_core.plugins import PreemptionHost
from scheduler_core.plugins.default_preemption import (
    NEVER,
    REPRIEVED,
    Candidate,
    DefaultPreemption,
    not_helpful,
)
from scheduler_core.plugins.topology import place_with_topology
from scheduler_core.spec import Policy
from scheduler_core.status import SUCCESS, Code, Status

PLUGIN = "WorkloadAwarePreemption"
NO_VICTIMS = Status(
    Code.UNSCHEDULABLE_AND_UNRESOLVABLE,
    "No preemption victims found for incoming preemptor",
    PLUGIN,
)
CANNOT_FIT = Status(
    Code.UNSCHEDULABLE,
    "preemption of all lower-priority units would not make the group fit",
    PLUGIN,
)
NOTHING_TO_EVICT = Status(
    Code.UNSCHEDULABLE,
    "the group fits only with pods nominated elsewhere; nothing to evict",
    PLUGIN,
)
ONGOING = Status(Code.SUCCESS, "ongoing preemption on nominated nodes", PLUGIN)

REPRIEVED_GROUP = "its whole All-mode group is kept: the preemptor fits with it back"
GROUP_LOSS = ("lostWork", "strandedCapacity")
"""The cost terms a group loses once however many of its members are evicted."""
DEFAULT_WEIGHTS = {
    "lostWork": 1.0,
    "strandedCapacity": 1.0,
    "startup": 1.0,
    "recovery": 1.0,
    "session": 3600.0,
}


@dataclass(slots=True)
class Unit:
    """A victim unit (§6.1): one pod, or all scheduled pods of an All-mode group."""

    pods: list[Pod]
    workload: Workload
    priority: int
    is_group: bool
    earliest_start: float
    cost: float = 0.0
    usage: dict[Node, list[float]] = field(default_factory=dict)


def importance(unit: Unit) -> tuple[int, int, int, float]:
    """moreImportantVictim (§6.2) as a sort key, most important first: higher priority; a
    group before a pod; pods: earlier start; groups: more pods, then earlier start."""
    size = -len(unit.pods) if unit.is_group else 0
    return (-unit.priority, 0 if unit.is_group else 1, size, unit.earliest_start)


def victim_units(
    cluster: Cluster,
    below: int,
    nodes: Iterable[Node] | None = None,
    wholes: dict[Workload, Unit] | None = None,
) -> list[Unit]:
    """Every unit of priority strictly below ``below`` on ``nodes`` (default: all nodes).

    ``wholes`` keeps the All-mode units already built in this decision: a group spread
    over many candidate nodes is gathered once, not once per node it runs on."""
    k = cluster.threshold(below)
    units: list[Unit] = []
    whole: set[Workload] = set()
    for node in cluster.nodes if nodes is None else nodes:
        if node.reachable[k] == node.free_gpus and not _has_gpu_free_pods(node, below):
            continue
        for pod in node.pods:
            if pod.priority >= below:
                continue
            workload = pod.workload
            if workload.evict_whole:
                if workload not in whole:
                    whole.add(workload)
                    units.append(_whole_unit(workload, wholes))
            else:
                units.append(_unit([pod], workload, workload.in_group))
    return units


def unguarded(host: PreemptionHost, units: list[Unit]) -> list[Unit]:
    """The units min runtime does not protect (a whole unit is kept if any pod is)."""
    guards = host.guards
    if not guards.min_runtime:
        return units
    return [u for u in units if not any(guards.protected(p, host.now) for p in u.pods)]


def _whole_unit(workload: Workload, wholes: dict[Workload, Unit] | None) -> Unit:
    if wholes is None:
        return _unit(workload.holding(), workload, True)
    unit = wholes.get(workload)
    if unit is None:
        unit = wholes[workload] = _unit(workload.holding(), workload, True)
    return unit


def _has_gpu_free_pods(node: Node, below: int) -> bool:
    """Pods without GPUs do not show in the reach index; look for them only when present."""
    return any(p.gpus == 0 and p.priority < below for p in node.pods)


def _unit(pods: list[Pod], workload: Workload, is_group: bool) -> Unit:
    """The unit of ``pods`` with its usage per node: each node's requests summed from
    zero in the pods' order (the same floats as adding each to ``[0, 0.0, 0.0, 0]``)."""
    usage: dict[Node, list[float]] = {}
    earliest = math.inf
    for pod in pods:
        node = pod.node
        assert node is not None, pod
        row = usage.get(node)
        if row is None:
            usage[node] = [0 + pod.gpus, 0.0 + pod.cpu, 0.0 + pod.mem, 1]
        else:
            row[0] += pod.gpus
            row[1] += pod.cpu
            row[2] += pod.mem
            row[3] += 1
        if pod.bound_at < earliest:
            earliest = pod.bound_at
    return Unit(pods, workload, workload.priority, is_group, earliest, usage=usage)


class Headroom:
    """Free resources per node as if some pods were gone, kept as deltas over the live
    cluster. ``remaining`` is what is left after the group was placed."""

    def __init__(self, cluster: Cluster, preemptor: Workload) -> None:
        self.cluster = cluster
        self.preemptor = preemptor
        self.extra: dict[Node, list[float]] = {}

    def remove(self, unit: Unit) -> None:
        for node, row in unit.usage.items():
            extra = self.extra.setdefault(node, [0, 0.0, 0.0, 0])
            for i in range(4):
                extra[i] += row[i]

    def remove_on(self, unit: Unit, node: Node) -> None:
        """:meth:`remove`, counting only ``node``: what a single pod's decision on that
        node reads (the same sums there; a group's other nodes are not looked at)."""
        row = unit.usage[node]
        extra = self.extra.setdefault(node, [0, 0.0, 0.0, 0])
        for i in range(4):
            extra[i] += row[i]

    def free(self, node: Node) -> list[float]:
        """[gpus, cpu, mem, pod slots] free here with the removed units gone, less what pods
        nominated here at >= the preemptor's priority will take (Filter pass 1, §3)."""
        extra = self.extra.get(node, (0, 0.0, 0.0, 0))
        free = self.cluster.free_besides_claims(node, self.preemptor.priority, self.preemptor)
        return [have + more for have, more in zip(free, extra, strict=True)]


def place_group(
    pods: list[Pod], nodes: list[Node], free: Callable[[Node], list[float]], spread: bool
) -> tuple[list[tuple[Pod, Node]], dict[Node, list[float]]]:
    """The group's scheduling function on a what-if view: members in order, each on the
    fullest (bin-packing) or emptiest (spreading) node with room. Returns the assignment
    and what every touched node has left."""
    remaining = {n: free(n) for n in nodes}
    buckets: dict[int, list[Node]] = {}  # only the free counts that occur: none per GPU
    for node, row in remaining.items():
        if row[0] >= 0:
            buckets.setdefault(int(row[0]), []).append(node)
    assignment: list[tuple[Pod, Node]] = []
    for pod in pods:
        taken = _take(pod, buckets, remaining, spread)
        if taken is not None:
            assignment.append((pod, taken))
    return assignment, remaining


def _take(
    pod: Pod, buckets: dict[int, list[Node]], remaining: dict[Node, list[float]], spread: bool
) -> Node | None:
    order = sorted((level for level in buckets if level >= pod.gpus), reverse=spread)
    for level in order:
        for node in buckets[level]:
            row = remaining[node]
            if int(row[0]) != level:
                continue  # stale: the node moved to another bucket
            if row[1] + 1e-9 >= pod.cpu and row[2] + 1e-9 >= pod.mem and row[3] >= 1:
                row[0] -= pod.gpus
                row[1] -= pod.cpu
                row[2] -= pod.mem
                row[3] -= 1
                buckets.setdefault(int(row[0]), []).append(node)
                return node
    return None


def _left_after(
    assignment: list[tuple[Pod, Node]], nodes: list[Node], free: Callable[[Node], list[float]]
) -> dict[Node, list[float]]:
    """What each node has left once the assigned members are on it."""
    remaining = {n: free(n) for n in nodes}
    for pod, node in assignment:
        row = remaining[node]
        for i, amount in enumerate((pod.gpus, pod.cpu, pod.mem, 1)):
            row[i] -= amount
    return remaining


def try_restore(unit: Unit, remaining: dict[Node, list[float]]) -> bool:
    """Add a unit back if every node it uses still holds what was placed there."""
    for node, row in unit.usage.items():
        left = remaining.get(node)
        if left is not None and not all(left[i] - row[i] >= -1e-9 for i in range(4)):
            return False
    for node, row in unit.usage.items():
        left = remaining.get(node)
        if left is not None:
            for i in range(4):
                left[i] -= row[i]
    return True


def try_restore_on(unit: Unit, node: Node, left: list[float]) -> bool:
    """:func:`try_restore` when ``left`` is all that is tracked, for ``node``."""
    row = unit.usage[node]
    if not all(left[i] - row[i] >= -1e-9 for i in range(4)):
        return False
    for i in range(4):
        left[i] -= row[i]
    return True


def split_by_pdb(host: PreemptionHost, units: list[Unit]) -> tuple[list[Unit], list[Unit]]:
    """filterVictimsWithPDBViolation: budgets consumed pod by pod in the given order; a
    unit is violating if any of its pods is."""
    allowed = host.pdb_allowed([p for u in units for p in u.pods])
    violating: list[Unit] = []
    clean: list[Unit] = []
    for unit in units:
        broke = False
        for pod in unit.pods:
            if pod.workload in allowed:
                allowed[pod.workload] -= 1
                broke = broke or allowed[pod.workload] < 0
        (violating if broke else clean).append(unit)
    return violating, clean


@dataclass(slots=True)
class DecisionMemo:
    """What one decision computes once (issue #14). Valid while the decision runs: the
    cluster and the clock do not move before it actuates."""

    wholes: dict[Workload, Unit] = field(default_factory=dict)
    """All-mode units by group, gathered once however many candidate nodes they span."""
    costs: dict[Pod, tuple[float, float]] = field(default_factory=dict)
    """checkpoint-aware: per pod, the weighted cost with and without the group's loss."""
    stats: dict[int, tuple[int, int, int, float]] = field(default_factory=dict)
    """The array path: per unit (by id, units live as long as the memo), its part of the
    §4.4 node-choice scores."""


class WorkloadAwarePreemption(DefaultPreemption):
    """`workload-aware`: a group preempts as one (§6.3); a single pod preempts per node as
    DefaultPreemption does, but an All-mode group is a unit there too (KEP-5710)."""

    group_aware = True
    group_rule = "one placement, units reprieved in moreImportantVictim order (KEP-5710)"

    def __init__(self, policy: Policy) -> None:
        super().__init__(policy)
        self.spread = policy.placement == "LeastAllocated"
        self.memo: DecisionMemo | None = None

    @contextmanager
    def deciding(self) -> Iterator[DecisionMemo]:
        """One decision's memo, opened by its outermost entry point and dropped at its end
        (nothing memoised outlives the decision that computed it)."""
        if self.memo is not None:
            yield self.memo
            return
        self.memo = DecisionMemo()
        try:
            yield self.memo
        finally:
            self.memo = None

    def post_filter(self, host: PreemptionHost, pod: Pod) -> Status:
        with self.deciding():
            return super().post_filter(host, pod)

    def find_candidates(self, host: PreemptionHost, pod: Pod) -> list[Candidate]:
        with self.deciding():
            return super().find_candidates(host, pod)

    def cost_weights(self) -> dict[str, float] | None:
        """Weights of the expected-cost terms a decision record shows (none upstream)."""
        return None

    def arrays_decide(self, host: PreemptionHost) -> bool:
        """A single pod's decision is made on the arrays (scheduler_core/fast_group.py)
        where that gives the reference's choice: no PDB, no anti-thrashing guard (the
        arrays know nothing of min runtime), and not for checkpoint-aware (its reprieve
        order is the cost model's). A decision recorder gets every candidate from the
        arrays too."""
        return (
            self.use_arrays
            and type(self) is WorkloadAwarePreemption
            and not getattr(host, "_any_pdb", True)
            and not host.guards.active
        )

    def array_choice(self, host: PreemptionHost, pod: Pod) -> Candidate | None:
        return fast_group.choose(host, self, pod)

    def array_decision(
        self, host: PreemptionHost, pod: Pod, *, listing: bool
    ) -> fast_preemption.Decided | None:
        return fast_group.decide(host, self, pod, listing=listing)

    # ---------------------------------------------------------------- §6.3 groups
    def post_filter_group(
        self, host: PreemptionHost, workload: Workload, pending: list[Pod], need: int
    ) -> Status:
        """1. eligibility, 2. units below the group's priority, 3. remove them all and place
        the group once, 4. reprieve units (PDB-violating first), 5. actuate and nominate."""
        with self.deciding():
            return self._post_filter_group(host, workload, pending, need)

    def _post_filter_group(
        self, host: PreemptionHost, workload: Workload, pending: list[Pod], need: int
    ) -> Status:
        if workload.never_preempts:
            return NEVER
        if not host.guards.allows(host.now):
            host.wait_for_token()
            return host.guards.rate_limited_status()
        if self._victims_still_terminating(pending, workload.priority):
            return ONGOING
        units = unguarded(host, victim_units(host.cluster, workload.priority))
        if not units:
            return not_helpful(host, workload.priority) if host.guards.min_runtime else NO_VICTIMS
        chosen = self.choose(host, workload, pending, need, units)
        if chosen is None:
            return CANNOT_FIT
        assignment, victims = chosen
        if not victims:
            return NOTHING_TO_EVICT
        recorder = getattr(host, "recorder", None)
        if recorder is not None:
            recorder.group_preemption(
                host.now, workload, assignment, units, victims, self.cost_weights(), self.group_rule
            )
        host.actuate_group(assignment, victims)
        return SUCCESS

    def choose(
        self,
        host: PreemptionHost,
        workload: Workload,
        pending: list[Pod],
        need: int,
        units: list[Unit],
    ) -> tuple[list[tuple[Pod, Node]], list[Pod]] | None:
        """Upstream order: one placement, reprieve by moreImportantVictim."""
        return self._reprieve(
            host, workload, pending, need, units, self.spread, order=sorted(units, key=importance)
        )

    def _reprieve(
        self,
        host: PreemptionHost,
        workload: Workload,
        pending: list[Pod],
        need: int,
        units: list[Unit],
        spread: bool,
        order: list[Unit],
    ) -> tuple[list[tuple[Pod, Node]], list[Pod]] | None:
        headroom = Headroom(host.cluster, workload)
        for unit in units:
            headroom.remove(unit)
        nodes, _ = host.cluster.eligible_nodes(workload)
        topology = workload.spec.pod_group.topology if workload.spec.pod_group else None
        if topology is not None:
            placed = place_with_topology(pending, nodes, headroom.free, topology)
            if placed is None:
                return None
            assignment, remaining = placed, _left_after(placed, nodes, headroom.free)
        else:
            assignment, remaining = place_group(pending, nodes, headroom.free, spread)
        if len(assignment) < need:
            return None
        violating, clean = split_by_pdb(host, order)
        victims = [p for u in violating + clean if not try_restore(u, remaining) for p in u.pods]
        victims.sort(key=lambda p: (-p.priority, p.bound_at))
        return assignment, victims

    def _victims_still_terminating(self, pending: list[Pod], priority: int) -> bool:
        """KMASTER: do not start new preemptions while earlier victims on the members'
        nominated nodes are still terminating."""
        for pod in pending:
            node = pod.nominated
            if node is not None and any(
                p.priority < priority and p.state is PodState.TERMINATING and p.preempted
                for p in node.pods
            ):
                return True
        return False

    # ---------------------------------------------------------------- single pods
    def select_victims(self, host: PreemptionHost, pod: Pod, node: Node) -> Candidate | None:
        return self._select_in_order(host, pod, node, self.order)

    def _select_in_order(
        self, host: PreemptionHost, pod: Pod, node: Node, order: Callable[[list[Unit]], list[Unit]]
    ) -> Candidate | None:
        """SelectVictimsOnNode with units: a pod of an All-mode group is reprieved or
        evicted with its whole group, wherever the other members run."""
        room = self._room(host, pod, node)
        if room is None:
            return None
        units, row = room
        return self._reprieve_on(host, node, row, order(units))

    def _room(
        self, host: PreemptionHost, pod: Pod, node: Node
    ) -> tuple[list[Unit], list[float]] | None:
        """1. the units below the pod on ``node``; 2. what the node has left with all of
        them gone and the pod placed, or None if even that does not fit."""
        wholes = self.memo.wholes if self.memo is not None else None
        units = unguarded(host, victim_units(host.cluster, pod.priority, [node], wholes))
        if not units:
            return None
        headroom = Headroom(host.cluster, pod.workload)
        for unit in units:
            headroom.remove_on(unit, node)
        row = headroom.free(node)
        if not (
            row[0] >= pod.gpus
            and row[1] + 1e-9 >= pod.cpu
            and row[2] + 1e-9 >= pod.mem
            and row[3] >= 1
        ):
            return None
        for i, amount in enumerate((pod.gpus, pod.cpu, pod.mem, 1)):
            row[i] -= amount
        return units, row

    def _reprieve_on(
        self, host: PreemptionHost, node: Node, row: list[float], ordered: list[Unit]
    ) -> Candidate | None:
        """3-4. PDB-violating units first, then the rest, each added back if the pod
        still fits; 5. the victims by MoreImportantPod."""
        violating, clean = split_by_pdb(host, ordered)
        victims, broken = [], 0
        reprieved: list[tuple[Pod, str]] = []
        for unit in violating + clean:
            if not try_restore_on(unit, node, row):
                victims += unit.pods
                broken += unit in violating
            else:
                why = REPRIEVED_GROUP if unit.workload.evict_whole else REPRIEVED
                reprieved += [(p, why) for p in unit.pods]
        if not victims:
            return None
        victims.sort(key=lambda p: (-p.priority, p.bound_at))
        return Candidate(node, victims, broken, reprieved)

    def order(self, units: list[Unit]) -> list[Unit]:
        return sorted(units, key=importance)


class CheckpointAwarePreemption(WorkloadAwarePreemption):
    """`checkpoint-aware` (ours, not a Kubernetes behaviour): the cheapest victims.

    Units are reprieved most-expensive-first by expected cost; for a group, both a packed
    and a spread placement are tried and the cheaper victim set wins; for a single pod,
    the candidate node with the cheapest victims wins instead of §4.4's rules.
    """

    group_rule = "cheapest victim set of packed/spread placements x cost/density orders"

    def __init__(self, policy: Policy) -> None:
        super().__init__(policy)
        self.weights = {**DEFAULT_WEIGHTS, **policy.checkpoint_aware_weights}
        self.now = 0.0
        self._considered: list[Candidate] = []

    def cost_weights(self) -> dict[str, float] | None:
        return self.weights

    def explain(
        self,
        host: PreemptionHost,
        pod: Pod,
        candidates: list[Candidate] | CompactCandidates,
        best: Candidate,
        rule: str,
    ) -> None:
        """Every candidate node with its victims' expected cost, cheapest first; the
        cheapest decided (from the arrays, the costs come with the candidates)."""
        recorder = getattr(host, "recorder", None)
        if recorder is not None:
            if isinstance(candidates, CompactCandidates):
                recorder.preemption(host.now, pod, candidates, best, CHEAPEST)
                return
            considered = self._considered or candidates
            costs = {id(c): self.cost_of(host, c.victims) for c in considered}
            recorder.preemption(host.now, pod, considered, best, CHEAPEST, costs)

    def arrays_decide(self, host: PreemptionHost) -> bool:
        """A single pod's decision is made on the arrays (scheduler_core/
        fast_checkpoint.py) under the same conditions as workload-aware's: no PDB, no
        anti-thrashing guard."""
        return (
            self.use_arrays
            and type(self) is CheckpointAwarePreemption
            and not getattr(host, "_any_pdb", True)
            and not host.guards.active
        )

    def array_choice(self, host: PreemptionHost, pod: Pod) -> Candidate | None:
        decided = fast_checkpoint.decide(host, self, pod, listing=False)
        return None if decided is None else decided[0]

    def array_decision(
        self, host: PreemptionHost, pod: Pod, *, listing: bool
    ) -> fast_preemption.Decided | None:
        return fast_checkpoint.decide(host, self, pod, listing=listing)

    def choose(
        self,
        host: PreemptionHost,
        workload: Workload,
        pending: list[Pod],
        need: int,
        units: list[Unit],
    ) -> tuple[list[tuple[Pod, Node]], list[Pod]] | None:
        self.now = host.now
        options = [
            self._reprieve(host, workload, pending, need, units, spread, order(units))
            for spread in (False, True)
            for order in (self.order, self.order_by_density)
        ]
        found = [o for o in options if o is not None]
        if not found:
            return None
        return min(found, key=lambda o: self.cost_of(host, o[1]))

    def find_candidates(self, host: PreemptionHost, pod: Pod) -> list[Candidate]:
        with self.deciding():
            candidates = super().find_candidates(host, pod)
            candidates.sort(key=lambda c: (c.pdb_violations, self.cost_of(host, c.victims)))
        self._considered = candidates
        return candidates[:1]

    def select_victims(self, host: PreemptionHost, pod: Pod, node: Node) -> Candidate | None:
        """The cheaper of two reprieve orders (most expensive first; most expensive per
        GPU first): neither greedy order alone always finds the cheapest set."""
        self.now = host.now
        room = self._room(host, pod, node)
        if room is None:
            return None
        units, row = room
        found = [
            c
            for order in (self.order, self.order_by_density)
            if (c := self._reprieve_on(host, node, list(row), order(units))) is not None
        ]
        if not found:
            return None
        return min(found, key=lambda c: self.cost_of(host, c.victims))

    def order(self, units: list[Unit]) -> list[Unit]:
        """Most expensive unit first (reprieved first, so kept)."""
        for unit in units:
            unit.cost = self._unit_cost(unit)
        return sorted(units, key=lambda u: (-u.cost, *importance(u)))

    def order_by_density(self, units: list[Unit]) -> list[Unit]:
        """Most expensive per GPU it holds first: evicts what frees GPUs most cheaply."""
        for unit in units:
            unit.cost = self._unit_cost(unit)
        return sorted(
            units, key=lambda u: (-u.cost / max(1, sum(p.gpus for p in u.pods)), *importance(u))
        )

    memoise = True
    """Evaluate the cost model once per pod per decision (issue #14); off, every cost is
    evaluated afresh where it is needed (the reference of the differential tests)."""

    def _unit_cost(self, unit: Unit) -> float:
        return sum(self._pod_cost(p) for p in unit.pods)

    def _pod_cost(self, pod: Pod) -> float:
        return self._costs(pod)[0]

    def _costs(self, pod: Pod) -> tuple[float, float]:
        """(the pod's weighted cost, the same without its group's lost work and stranded
        capacity): the cost model's parts summed in its order, as ``cost_of`` always did."""
        memo = self.memo.costs if self.memoise and self.memo is not None else None
        if memo is not None and (known := memo.get(pod)) is not None:
            return known
        parts = pod.workload.app.eviction_cost(pod, self.now)
        weights = self.weights
        # the sums ``sum(w * v for ...)`` and ``sum`` over ``{**parts, "lostWork": 0.0,
        # "strandedCapacity": 0.0}`` were, spelled out: the same terms, the same order
        full: float = 0
        rest: float = 0
        for name, value in parts.items():
            weight = weights[name]
            full += weight * value
            rest += weight * (0.0 if name in GROUP_LOSS else value)
        for name in GROUP_LOSS:
            if name not in parts:
                rest += weights[name] * 0.0
        costs = (full, rest)
        if memo is not None:
            memo[pod] = costs
        return costs

    def cost_of(self, host: PreemptionHost, victims: list[Pod]) -> float:
        """Expected cost of a victim set; a group's loss is counted once however many of
        its members are in the set."""
        self.now = host.now
        seen: set[Workload] = set()
        total = 0.0
        for pod in victims:
            full, rest = self._costs(pod)
            total += rest if pod.workload in seen else full
            seen.add(pod.workload)
        return total
