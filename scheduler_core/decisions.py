"""Why each scheduling decision went as it did: compact, deterministic records.

The event log says *what* happened; a :class:`Decision` says *why*: the per-node filter
reasons in kube-scheduler's FitError wording, the candidate nodes of a PostFilter with
their victims and PDB violations, which node-selection rule decided, the pods that were
reprieved, the victim units of workload-aware preemption (with checkpoint-aware cost
terms), and Kueue's targets with their reasons. A run-level :func:`diagnose` turns the
records of the urgent workloads into one sentence when they never preempt or never run.

Records are built only at the moments the engine already writes an event (the first
attempt of a failure streak, an actuation, a queue eviction), so their cost is bounded by
the event log's. Every record is part of the result and a pure function of (spec, seed).
"""

from __future__ import annotations

from collections.abc import Iterator, Sequence
from dataclasses import asdict, dataclass, replace
from typing import TYPE_CHECKING, Any, overload

from scheduler_core.events import Reason as R  # noqa: N817 (short: used in tables below)
from scheduler_core.gc_pause import gc_paused

if TYPE_CHECKING:
    from scheduler_core.cluster import Cluster
    from scheduler_core.model import Node, Pod, Workload
    from scheduler_core.status import Status

NAMESPACE = "default"
"""Our pods have no namespace; messages name them as kube-scheduler would in `default`."""
NOT_HELPFUL = "Preemption is not helpful for scheduling"
NO_VICTIMS = "No preemption victims found for incoming pod"
UNSCHEDULABLE = "node(s) were unschedulable"
AFFINITY = "node(s) didn't match Pod's node affinity/selector"
TOO_MANY_PODS = "Too many pods"
GPU_SHORT = ("Insufficient nvidia.com/gpu",)

# Kinds of decision.
FAILED = R.FAILED_SCHEDULING.value
PREEMPTION = "Preemption"
GROUP_PREEMPTION = "WorkloadPreemption"
QUEUE_PREEMPTION = "QueuePreemption"

RULES = (
    "fewest PDB violations",
    "lowest highest-victim priority",
    "smallest sum of victim priorities",
    "fewest victims",
    "latest start time of the highest-priority victims",
    "first remaining candidate",
)
"""pickOneNodeForPreemption's six rules, in order (kubernetes-preemption.md §4.4)."""
ONLY_CANDIDATE = "only candidate"
CHEAPEST = "cheapest expected eviction cost (checkpoint-aware)"

# Run-level diagnoses (docs/decisions.md lists them).
FITS = "fits without preemption"
NEVER = "its class has preemptionPolicy: Never"
NO_LOWER = "no lower-priority pods on any node that could fit it"
SPREAD = "the GPUs it needs are spread one per node (preemption cannot help)"
WAITING = "still waiting for victims at the horizon"
DISABLED = "preemption is disabled in this variant (policy none)"
NO_NODE = "no node could ever hold it, even empty"
QUEUED = (
    "it waited in its admission queue, where it has no pods yet, so its priority "
    "could not preempt anyone"
)
GUARD_PLUGINS = frozenset({"MinRuntime", "PreemptionRateLimit"})
"""Plugins of the anti-thrashing guards; their reason is the decision's cause."""
GROUP_TOO_BIG = "the group can never fit (preemption cannot help)"
VICTIMS_NOT_ENOUGH = "evicting every lower-priority pod would still not make room for it"
SHARES_SPLIT = "the GPU shares evictions would free are on different devices"
"""A node's preemption reason (ours): its free milli-GPU with every lower-priority pod
gone add up to the request, but no device, or too few whole devices, would be free."""
DEVICES_SPLIT = (
    "the GPU shares evictions would free lie on different devices (preemption cannot help)"
)


@dataclass(frozen=True, slots=True)
class CandidateNode:
    """One node DryRunPreemption found: its victims and how many violate a PDB."""

    node: str
    victims: tuple[str, ...]
    pdb_violations: int
    cost: float | None = None


class CompactCandidates:
    """The candidates of a decision made on the arrays (scheduler_core/fast_preemption.py),
    kept as they came: node rows, and every candidate's victims as one object array of
    pods. A decision at 10,000 nodes has up to 1,000 candidates; naming them is done once,
    when the records are built (:meth:`Recorder.records`), not while the engine decides.
    The pods and nodes named are those of the decision's moment (a pod's name never
    changes)."""

    __slots__ = ("costs", "counts", "nodes", "rows", "victims")

    def __init__(
        self, nodes: list[Node], rows: Any, victims: Any, counts: Any, costs: Any = None
    ) -> None:
        self.nodes = nodes
        self.rows = rows
        self.victims = victims
        self.counts = counts
        self.costs = costs
        """checkpoint-aware: each candidate's expected victim cost (None otherwise)."""

    def __len__(self) -> int:
        return len(self.rows)

    def entries(self) -> list[tuple[Any, ...]]:
        """(node, victims, PDB violations[, cost]) per candidate, as
        :class:`CandidateNode` takes them (no PDB exists where the arrays decide)."""
        nodes = self.nodes
        names = [p.name for p in self.victims.tolist()]
        out: list[tuple[Any, ...]] = []
        start = 0
        for row, count in zip(self.rows.tolist(), self.counts.tolist(), strict=True):
            out.append((nodes[row].name, tuple(names[start : start + count]), 0))
            start += count
        if self.costs is not None:
            out = [(*e, cost) for e, cost in zip(out, self.costs.tolist(), strict=True)]
        return out


class CandidateNodes(Sequence[CandidateNode]):
    """A record's candidates from the arrays, named when first read: a tuple of
    :class:`CandidateNode` in every way that is looked at (length, items, iteration,
    equality with the tuple the Python path stores, hash, repr, pickling, as_dict), built
    from the :class:`CompactCandidates` only then. A storm at 5,000 nodes has about 500
    candidates per decision, 2.4 million for the run, while a reader looks at a few
    records; building them all made up half of the run with records on."""

    __slots__ = ("_built", "_compact")

    def __init__(self, compact: CompactCandidates) -> None:
        self._compact: CompactCandidates | None = compact
        self._built: tuple[CandidateNode, ...] | None = None

    def built(self) -> tuple[CandidateNode, ...]:
        """The candidates as the tuple the record stands for (built once)."""
        if self._built is None:
            assert self._compact is not None
            self._built = tuple([CandidateNode(*c) for c in self._compact.entries()])
            self._compact = None  # the pods and nodes are no longer held
        return self._built

    def __len__(self) -> int:
        if self._built is not None:
            return len(self._built)
        assert self._compact is not None
        return len(self._compact)

    @overload
    def __getitem__(self, index: int) -> CandidateNode: ...
    @overload
    def __getitem__(self, index: slice) -> tuple[CandidateNode, ...]: ...
    def __getitem__(self, index: int | slice) -> CandidateNode | tuple[CandidateNode, ...]:
        return self.built()[index]

    def __iter__(self) -> Iterator[CandidateNode]:
        return iter(self.built())

    def __eq__(self, other: object) -> bool:
        if isinstance(other, CandidateNodes):
            other = other.built()
        return isinstance(other, tuple) and self.built() == other

    def __hash__(self) -> int:
        return hash(self.built())

    def __repr__(self) -> str:
        return repr(self.built())

    def __reduce__(self) -> tuple[Any, ...]:
        return (tuple, (self.built(),))

    def as_dicts(self) -> tuple[dict[str, Any], ...]:
        """What :func:`dataclasses.asdict` makes of the built tuple (same keys, order and
        values), without building the records first."""
        if self._built is not None:
            return tuple(asdict(c) for c in self._built)
        assert self._compact is not None
        return tuple(
            [
                {
                    "node": e[0],
                    "victims": e[1],
                    "pdb_violations": e[2],
                    "cost": e[3] if len(e) > 3 else None,
                }
                for e in self._compact.entries()
            ]
        )


@dataclass(frozen=True, slots=True)
class Reprieve:
    """A lower-priority pod that was put back: the preemptor still fits with it there."""

    pod: str
    why: str


@dataclass(frozen=True, slots=True)
class VictimUnit:
    """A unit workload-aware preemption considered: one pod or a whole All-mode group."""

    workload: str
    pods: tuple[str, ...]
    priority: int
    whole_group: bool
    evicted: bool
    cost_terms: tuple[tuple[str, float], ...] = ()


@dataclass(frozen=True, slots=True)
class QueueTarget:
    """A Kueue preemption candidate: taken (with its Preempted reason) or why not."""

    workload: str
    queue: str
    reason: str
    taken: bool
    why: str = ""


@dataclass(frozen=True, slots=True)
class Decision:
    """One decision and why. ``events`` are the (time, reason, pod or workload) keys of the
    log events it explains, so an event row can link to its decision."""

    id: int
    time: float
    kind: str
    workload: str
    pod: str = ""
    node: str = ""
    message: str = ""
    cause: str = ""
    rule: str = ""
    victims: tuple[str, ...] = ()
    candidates: Sequence[CandidateNode] = ()
    """A tuple, or for a decision made on the arrays a :class:`CandidateNodes` equal to
    that tuple (named when first read)."""
    reprieved: tuple[Reprieve, ...] = ()
    units: tuple[VictimUnit, ...] = ()
    targets: tuple[QueueTarget, ...] = ()
    events: tuple[tuple[float, str, str], ...] = ()

    def as_dict(self) -> dict[str, Any]:
        if isinstance(self.candidates, CandidateNodes):
            out = asdict(replace(self, candidates=()))
            out["candidates"] = self.candidates.as_dicts()
            return out
        return asdict(self)

    def pods(self) -> set[str]:
        """Every pod this decision concerns: the preemptor, victims, reprieved pods."""
        names = {self.pod, *self.victims, *(r.pod for r in self.reprieved)}
        for unit in self.units:
            names.update(unit.pods)
        names.discard("")
        return names

    def nodes(self) -> set[str]:
        names = {self.node, *(c.node for c in self.candidates)}
        names.discard("")
        return names

    def workloads(self) -> set[str]:
        names = {
            self.workload,
            *(t.workload for t in self.targets),
            *(u.workload for u in self.units),
        }
        names.discard("")
        return names

    def concerns(self, name: str) -> bool:
        """Does it concern pod or workload ``name`` (what `run --explain` asks)?"""
        return (
            name in self.pods()
            or name in self.workloads()
            or any(p.rsplit("-", 1)[0] == name for p in self.pods())
        )


def qualified(pod: Pod) -> str:
    return f"{NAMESPACE}/{pod.name}"


# --------------------------------------------------------------------- FitError
def fit_error(total: int, reasons: dict[str, int]) -> str:
    """FitError.Error(): ``0/N nodes are available: <count reason>, ….`` with the
    histogram entries sorted as strings (sort.Strings on "count reason"), as upstream."""
    entries = sorted(f"{count} {reason}" for reason, count in reasons.items())
    body = f" {', '.join(entries)}." if entries else ""
    return f"0/{total} nodes are available:{body}"


def static_reason(pod: Pod, node: Node) -> str:
    """The first failing Filter that no eviction can change, in the default plugin order
    (NodeUnschedulable, TaintToleration, NodeAffinity); "" if none fails."""
    spec = pod.workload.spec
    if node.cordoned:
        return UNSCHEDULABLE
    for taint in node.taints:
        if not any(t.tolerates(taint) for t in spec.tolerations):
            return f"node(s) had untolerated taint {{{taint.key}: {taint.value}}}"
    if any(node.labels.get(k) != v for k, v in spec.node_selector.items()):
        return AFFINITY
    return ""


def _insufficient(
    gpus: float,
    cpu: float,
    mem: float,
    count: int,
    free_g: float,
    free_c: float,
    free_m: float,
    slots: int,
) -> tuple[str, ...]:
    """NodeResourcesFit's reasons: pod count first, then cpu, memory, extended resources;
    every resource that is short gives one (a node may give several)."""
    reasons = []
    if count > slots:
        reasons.append(TOO_MANY_PODS)
    if cpu > free_c + 1e-9:
        reasons.append("Insufficient cpu")
    if mem > free_m + 1e-9:
        reasons.append("Insufficient memory")
    if gpus > free_g:
        reasons.append("Insufficient nvidia.com/gpu")
    return tuple(reasons)


Verdict = tuple[tuple[str, ...], tuple[str, ...], float, bool, bool]
"""One node's part in a failure message, as a plain tuple (it holds only strings and
numbers, so the garbage collector stops tracking it): (Filter reasons, reasons in the
preemption FitError (§4.1 step 3), GPUs free with every lower-priority pod gone, has
lower-priority pods, depends on the particular pod (nominations claim room))."""


def _verdict(
    filter_: tuple[str, ...], preemption: tuple[str, ...], reach: float, lower: bool, volatile: bool
) -> Verdict:
    return (filter_, preemption, reach, lower, volatile)


VerdictMemo = dict[tuple[object, ...], Verdict]
"""Verdicts by node state, for one kind of pod (:class:`Tally`)."""
MEMO_MAX = 4096
"""Node states a tally remembers; past it the memo starts afresh."""


def node_verdict(
    cluster: Cluster, pod: Pod, node: Node, memo: VerdictMemo | None = None
) -> Verdict | None:
    """Why ``pod`` does not fit ``node`` and whether evictions could change that; None for
    a node that has left. A tried node without lower-priority pods gives "No preemption
    victims found"; one that still lacks room with all of them gone gives its Filter
    reasons; nodes Filter rejected as unresolvable were never tried ("not helpful").

    ``memo``: for one kind of pod, the verdicts already worked out from a node's
    resources alone (capacity, free resources, the GPU reach below the pod's priority and
    how many pods are below it, both from the cluster's reach index),
    which most changed nodes of a busy cluster repeat exactly (99 % at 1,000 nodes); a
    verdict that had to look at the node's pods, or at nominations, is not kept."""
    if not node.alive:
        return None
    if node.cordoned or node.taints or pod.workload.spec.node_selector:
        static = static_reason(pod, node)
        if static:
            return _verdict((static,), (NOT_HELPFUL,), 0.0, False, False)
    volatile = bool(node.nominated)
    if node.dev_free is not None or pod.mig:
        return _device_verdict(cluster, pod, node, volatile)
    if memo is None or volatile:
        return _resource_verdict(cluster, pod, node, volatile)[0]
    k = cluster.threshold(pod.priority)
    key = (
        node.gpus,
        node.cpu,
        node.mem,
        node.free_gpus,
        node.free_cpu,
        node.free_mem,
        node.max_pods - node.npods,
        node.reachable[k],
        int(cluster.reach_pods[k, node.idx]),
    )
    known = memo.get(key)
    if known is not None:
        return known
    verdict, read_pods = _resource_verdict(cluster, pod, node, volatile)
    if not read_pods:
        if len(memo) >= MEMO_MAX:
            memo.clear()
        memo[key] = verdict
    return verdict


def _resource_verdict(
    cluster: Cluster, pod: Pod, node: Node, volatile: bool
) -> tuple[Verdict, bool]:
    """:func:`node_verdict` past the static filters on a node counted in whole GPUs; also
    whether it read the node's pods (then it is not a function of the memo's key)."""
    gpus, cpu, mem, count = cluster.need(pod, node) if volatile else (pod.gpus, pod.cpu, pod.mem, 1)
    reasons = _insufficient(
        gpus,
        cpu,
        mem,
        count,
        node.free_gpus,
        node.free_cpu,
        node.free_mem,
        node.max_pods - node.npods,
    )
    if pod.gpus > node.gpus or pod.cpu > node.cpu or pod.mem > node.mem:
        return _verdict(reasons, (NOT_HELPFUL,), 0.0, False, volatile), False
    if not reasons:
        return _verdict((), (), 0.0, False, volatile), False
    # What evicting every lower-priority pod frees: GPUs from the cluster's reach index
    # (free GPUs plus those of pods below the pod's priority); the pods themselves are
    # looked at only when some are GPU-less or the pod is short of more than GPUs.
    prio = pod.priority
    k = cluster.threshold(prio)
    free_g = node.reachable[k]
    if reasons == GPU_SHORT and free_g > node.free_gpus:
        verdict = _verdict(
            reasons, GPU_SHORT if gpus > free_g else (NO_VICTIMS,), free_g, True, volatile
        )
        return verdict, False
    if cluster.reach_pods[k, node.idx] == node.max_pods - node.npods:
        # no pod below the preemptor's priority (the slots they would free are none): a
        # function of the memo's key, which holds that count
        return _verdict(reasons, (NO_VICTIMS,), node.free_gpus, False, volatile), False
    lower = [p for p in node.pods if p.priority < prio]
    again = _insufficient(
        gpus,
        cpu,
        mem,
        count,
        free_g,
        node.free_cpu + sum(p.cpu for p in lower),
        node.free_mem + sum(p.mem for p in lower),
        node.max_pods - node.npods + len(lower),
    )
    return _verdict(reasons, again or (NO_VICTIMS,), free_g, True, volatile), True


def _device_verdict(cluster: Cluster, pod: Pod, node: Node, volatile: bool) -> Verdict:
    """:func:`node_verdict` on a node whose devices are tracked one by one (shares, MIG):
    the fit is checked per device, before and after every lower-priority pod is gone; when
    the freed milli-GPU add up to the request but lie on different devices, the node says
    so (:data:`SHARES_SPLIT`) instead of "Insufficient nvidia.com/gpu"."""
    from scheduler_core.devices import DryRun

    others = cluster.claimants(node, pod)
    reasons = _device_insufficient(DryRun(node, ()), pod, others)
    if not reasons:
        return _verdict((), (), 0.0, False, volatile)
    lower = [p for p in node.pods if p.priority < pod.priority]
    if not lower:
        return _verdict(reasons, (NO_VICTIMS,), float(node.free_gpus), False, volatile)
    freed = DryRun(node, lower)
    again = _device_insufficient(freed, pod, others)
    if again == GPU_SHORT and freed.split(pod):
        again = (SHARES_SPLIT,)
    return _verdict(reasons, again or (NO_VICTIMS,), sum(freed.free) / 1000, True, volatile)


def _device_insufficient(view: Any, pod: Pod, others: list[Pod]) -> tuple[str, ...]:
    """NodeResourcesFit's reasons on a dry-run view (devices.DryRun), in upstream order:
    pod count, cpu, memory, then the GPU and MIG resources that are short."""
    reasons = []
    if 1 + len(others) > view.slots:
        reasons.append(TOO_MANY_PODS)
    if pod.cpu + sum(o.cpu for o in others) > view.cpu:
        reasons.append("Insufficient cpu")
    if pod.mem + sum(o.mem for o in others) > view.mem:
        reasons.append("Insufficient memory")
    if (pod.gpus or pod.milli) and not view.devices_fit(pod, [o for o in others if not o.mig]):
        reasons.append("Insufficient nvidia.com/gpu")
    for profile, count in pod.mig:
        wanted = count + sum(c for o in others for p, c in o.mig if p == profile)
        if wanted > view.mig.get(profile, 0):
            reasons.append(f"Insufficient nvidia.com/mig-{profile}")
    return tuple(reasons)


class Tally:
    """The verdicts of every node for one kind of pod (constraints, request, priority),
    kept up to date from the recorder's change log: only nodes that changed since the
    last failure of such a pod are looked at again, so a message costs O(changes), not
    O(nodes). Nodes whose verdict depends on the pod (nominations) are redone each time."""

    def __init__(self, cluster: Cluster, pod: Pod, seen: int) -> None:
        self.verdicts: dict[Node, Verdict | None] = {}
        self.filter: dict[str, int] = {}
        self.preemption: dict[str, int] = {}
        self.reach = 0.0
        self.lower = 0
        self.total = 0
        self.memo: VerdictMemo = {}
        """Verdicts by node state for this kind of pod (:func:`node_verdict`)."""
        for node in cluster.nodes:
            self._put(node, node_verdict(cluster, pod, node, self.memo))
        own = pod.nominated
        self.personal: set[Node] = {own} if own is not None else set()
        """Where the verdict left the asking pod's own nomination out."""
        self.seen = seen
        """The change number up to which the verdicts are current."""

    def _count(self, verdict: Verdict, sign: int) -> None:
        filter_, preemption, reach, lower, _ = verdict
        for reason in filter_:
            self.filter[reason] = self.filter.get(reason, 0) + sign
        for reason in preemption:
            self.preemption[reason] = self.preemption.get(reason, 0) + sign
        self.reach += sign * reach
        self.lower += sign * lower
        self.total += sign

    def _put(self, node: Node, verdict: Verdict | None) -> None:
        old = self.verdicts.get(node)
        if old is not None:
            if old == verdict:  # half of the changed nodes keep their verdict
                return
            self._count(old, -1)
        self.verdicts[node] = verdict
        if verdict is not None:
            self._count(verdict, +1)

    def update(self, cluster: Cluster, pod: Pod, changes: Changes) -> None:
        """Redo the verdicts of the nodes that changed since the last update, and of the
        nodes where the pod asking or the one asked for last is nominated. A verdict that
        counts nominations (``need``) depends on the particular pod only there, where its
        own claim is left out; everywhere else it is the same for every pod of the kind,
        and a nomination that comes or goes is a change of its node. So a storm of
        nominated preemptors costs O(changes) per failure, not O(nominated nodes)."""
        stale = changes.since(self.seen)
        stale.update(self.personal)
        own = pod.nominated
        if own is not None:
            stale.add(own)
        for node in sorted(stale, key=_index):
            self._put(node, node_verdict(cluster, pod, node, self.memo))
        self.seen = changes.count
        self.personal = {own} if own is not None else set()

    def cause(self, pod: Pod) -> str:
        """Why no eviction can help, in the run-level diagnosis's words."""
        if not self.lower:
            return NO_LOWER if self.preemption.get(NO_VICTIMS) else NO_NODE
        if self.preemption.get(SHARES_SPLIT):
            return DEVICES_SPLIT
        return SPREAD if self.reach >= pod.gpus else VICTIMS_NOT_ENOUGH


class Changes:
    """Which nodes changed since change number n, read from the cluster's own log of
    node changes (:meth:`Cluster.changed_since`, which every bind, release, cordon and
    nomination writes): the recorder keeps no log of its own, so a change costs it
    nothing. When that part of the log was dropped, every node counts as changed."""

    __slots__ = ("cluster",)

    def __init__(self, cluster: Cluster) -> None:
        self.cluster = cluster

    @property
    def count(self) -> int:
        """The change number of the next change."""
        return self.cluster.touched_count

    def since(self, seen: int) -> set[Node]:
        changed = self.cluster.changed_since(seen)
        return set(self.cluster.nodes) if changed is None else set(changed)


def _index(node: Node) -> int:
    return node.idx


def _nonzero(counts: dict[str, int]) -> dict[str, int]:
    return {reason: count for reason, count in counts.items() if count}


def group_capacity(cluster: Cluster, pod: Pod) -> str:
    """For a gang member: the cause when the whole cluster, emptied, could not hold
    minCount members (no eviction can help); "" otherwise."""
    workload = pod.workload
    if not workload.all_or_nothing:
        return ""
    nodes, _ = cluster.eligible_nodes(workload)
    room = 0
    for node in nodes:
        room += min(
            int(node.gpus // pod.gpus) if pod.gpus else node.max_pods,
            int(node.cpu // pod.cpu) if pod.cpu else node.max_pods,
            int(node.mem // pod.mem) if pod.mem else node.max_pods,
            node.max_pods,
        )
    if room >= workload.min_count:
        return ""
    return (
        f"{GROUP_TOO_BIG}: minCount {workload.min_count} members of {pod.gpus} GPU(s), "
        f"but the whole cluster, empty, holds {room}"
    )


# --------------------------------------------------------------------- the recorder
class Recorder:
    """Collects the decisions of one engine run. The engine calls it at the moments it
    writes the events they explain; nothing here changes what the engine does."""

    MAX_TALLIES = 64

    def __init__(self, cluster: Cluster) -> None:
        self.cluster = cluster
        self._raw: list[dict[str, Any]] = []
        """Decisions as plain fields (nested parts as tuples of strings and numbers, which
        the garbage collector soon stops tracking); :meth:`records` builds the objects."""
        self.changed = Changes(cluster)
        """Nodes as they change (bind, release, cordon, nomination)."""
        self._tallies: dict[tuple[Any, ...], Tally] = {}
        self._capacity: dict[tuple[Any, ...], str] = {}

    def _add(self, **fields: Any) -> None:
        fields["id"] = len(self._raw)
        self._raw.append(fields)

    def records(self) -> list[Decision]:
        """Every decision, in order, as frozen records (with the cyclic collector paused,
        as while the engine runs: they all live on, and its passes over a run's records
        cost as much as building them)."""
        out = []
        with gc_paused():
            for fields in self._raw:
                fields = dict(fields)
                candidates = fields.get("candidates", ())
                if isinstance(candidates, CompactCandidates):
                    fields["candidates"] = CandidateNodes(candidates)
                else:
                    fields["candidates"] = tuple([CandidateNode(*c) for c in candidates])
                fields["reprieved"] = tuple([Reprieve(*r) for r in fields.get("reprieved", ())])
                out.append(Decision(**fields))
        return out

    def release(self) -> None:
        """Forget the raw decisions once the records are built (:meth:`Engine.release`):
        those of the arrays hold their victims in numpy object arrays, which the cyclic
        collector cannot see into, so the engine reaching them through this recorder
        would never be freed. The records built keep what they need."""
        self._raw = []
        self._tallies.clear()
        self._capacity.clear()

    def _tally(self, pod: Pod) -> Tally:
        """The node verdicts for this kind of pod, brought up to date (at most
        MAX_TALLIES kinds are kept: beyond that they are rebuilt on demand)."""
        if len(self._tallies) > self.MAX_TALLIES:
            self._tallies.clear()
        key = (pod.workload.constraints, pod.gpus, pod.cpu, pod.mem, pod.priority)
        tally = self._tallies.get(key)
        if tally is None:
            tally = self._tallies[key] = Tally(self.cluster, pod, self.changed.count)
        else:
            tally.update(self.cluster, pod, self.changed)
        return tally

    # ----------------------------------------------------------------- failures
    def failure(self, now: float, pod: Pod, status: Status, explicit: str | None) -> str:
        """A failure streak starts: record why, return kube-scheduler's message
        (``explicit``: the engine already has it, for a pod no node can ever hold)."""
        message, cause = (explicit, NO_NODE) if explicit else self._failure_message(pod, status)
        self._add(
            time=now,
            kind=FAILED,
            workload=pod.workload.name,
            pod=pod.name,
            node=pod.nominated.name if pod.nominated else "",
            message=message,
            cause=cause,
            events=((now, FAILED, pod.name),),
        )
        return message

    def _failure_message(self, pod: Pod, status: Status) -> tuple[str, str]:
        message, cause = self._failure_text(pod, status, self._tally(pod))
        return message, self._group_capacity(pod) or cause

    def _group_capacity(self, pod: Pod) -> str:
        key = (
            pod.workload.constraints,
            pod.gpus,
            pod.cpu,
            pod.mem,
            pod.workload.min_count,
            pod.workload.all_or_nothing,
            self.cluster.version,
        )
        found = self._capacity.get(key)
        if found is None:
            found = self._capacity[key] = group_capacity(self.cluster, pod)
        return found

    def _failure_text(self, pod: Pod, status: Status, tally: Tally) -> tuple[str, str]:
        message = fit_error(tally.total, _nonzero(tally.filter))
        if status.plugin == "GangScheduling":
            return f"{message} {status.reason}", "the group has fewer than minCount pods"
        if status.plugin == "none":
            return message, DISABLED
        if status.plugin in GUARD_PLUGINS:
            # the anti-thrashing guards (scheduler_core/guards.py) say why in their reason
            return f"{message} preemption: {status.reason}", status.reason
        if status.reason.startswith("not eligible due to preemptionPolicy=Never"):
            return f"{message} preemption: {status.reason}", NEVER
        if status.reason.startswith("not eligible due to a terminating pod"):
            return f"{message} preemption: {status.reason}", WAITING
        cause = tally.cause(pod)
        if status.reason.startswith("Preemption is not helpful"):
            histogram = fit_error(tally.total, _nonzero(tally.preemption))
            return f"{message} preemption: {histogram}", cause
        if cause not in (NO_LOWER, SPREAD) or status.reason.startswith("not eligible"):
            cause = status.reason
        return f"{message} preemption: {status.reason}", cause

    # ----------------------------------------------------------------- PostFilter
    def preemption(
        self,
        now: float,
        pod: Pod,
        candidates: list[Any] | CompactCandidates,
        chosen: Any,
        rule: str,
        costs: dict[int, float] | None = None,
    ) -> None:
        """A single pod's PostFilter succeeded: every candidate, the rule, the reprieved.
        Candidates from the arrays (:class:`CompactCandidates`) are stored as they are."""
        victims = tuple([v.name for v in chosen.victims])
        nodes: list[tuple[Any, ...]] | CompactCandidates
        if isinstance(candidates, CompactCandidates):
            nodes = candidates
        elif costs is None:
            nodes = [
                (c.node.name, tuple([v.name for v in c.victims]), c.pdb_violations)
                for c in candidates
            ]
        else:
            nodes = [
                (
                    c.node.name,
                    tuple([v.name for v in c.victims]),
                    c.pdb_violations,
                    costs.get(id(c)),
                )
                for c in candidates
            ]
        self._add(
            time=now,
            kind=PREEMPTION,
            workload=pod.workload.name,
            pod=pod.name,
            node=chosen.node.name,
            cause=f"{len(victims)} victim(s) on {chosen.node.name}",
            message=f"preempting {len(victims)} pod(s) on node {chosen.node.name} "
            f"for {qualified(pod)} ({rule})",
            rule=rule,
            victims=victims,
            candidates=nodes if isinstance(nodes, CompactCandidates) else tuple(nodes),
            reprieved=tuple([(p.name, why) for p, why in chosen.reprieved]),
            events=(
                (now, R.VICTIMS_SELECTED.value, pod.name),
                *((now, R.PREEMPTED.value, v) for v in victims),
            ),
        )

    def group_preemption(
        self,
        now: float,
        workload: Workload,
        assignment: list[tuple[Pod, Node]],
        units: list[Any],
        victims: list[Pod],
        weights: dict[str, float] | None,
        rule: str,
    ) -> None:
        """Workload-aware PodGroup preemption: the units considered and their fate."""
        evicted = {id(p) for p in victims}
        records = []
        for unit in units:
            terms: tuple[tuple[str, float], ...] = ()
            if weights is not None:
                total: dict[str, float] = {}
                for p in unit.pods:
                    for name, value in p.workload.app.eviction_cost(p, now).items():
                        total[name] = total.get(name, 0.0) + weights.get(name, 1.0) * value
                terms = tuple(sorted(total.items()))
            records.append(
                VictimUnit(
                    unit.workload.name,
                    tuple(p.name for p in unit.pods),
                    unit.priority,
                    unit.workload.evict_whole,
                    any(id(p) in evicted for p in unit.pods),
                    terms,
                )
            )
        lead, lead_node = assignment[0]
        names = tuple(v.name for v in victims)
        nodes = sorted({n.name for _, n in assignment})
        self._add(
            time=now,
            kind=GROUP_PREEMPTION,
            workload=workload.name,
            pod=lead.name,
            node=lead_node.name,
            rule=rule,
            victims=names,
            cause=f"{len(names)} victim(s) for the group",
            message=f"preempting {len(names)} pod(s) for group {workload.name} on "
            f"{', '.join(nodes)} ({rule})",
            candidates=tuple(
                (n, tuple(v.name for v in victims if v.node is not None and v.node.name == n), 0)
                for n in nodes
            ),
            reprieved=tuple(
                (p, "the group still fits with its unit back")
                for r in records
                if not r.evicted
                for p in r.pods
            ),
            units=tuple(records),
            events=(
                (now, R.VICTIMS_SELECTED.value, lead.name),
                *((now, R.PREEMPTED.value, v) for v in names),
            ),
        )

    # ----------------------------------------------------------------- Kueue
    def queue_preemption(
        self,
        now: float,
        head: Workload,
        queue: str,
        targets: list[QueueTarget],
        rule: str = "Kueue classic preemption (§7.3)",
    ) -> None:
        taken = [t for t in targets if t.taken]
        self._add(
            time=now,
            kind=QUEUE_PREEMPTION,
            workload=head.name,
            node="",
            cause=f"{len(taken)} workload(s) evicted from their queues",
            message=f"queue {queue} admits {head.name} by evicting "
            f"{', '.join(f'{t.workload} ({t.reason})' for t in taken)}",
            rule=rule,
            victims=(),
            targets=tuple(targets),
            events=tuple((now, R.SUSPENDED.value, t.workload) for t in taken),
        )


# --------------------------------------------------------------------- run level
def diagnose(
    urgent: list[str],
    decisions: list[Decision],
    useful: set[str],
    horizon: float,
    queued: frozenset[str] = frozenset(),
) -> str:
    """One sentence when the urgent workloads never preempt or never become useful
    (``useful``: workloads with a pod that became Ready); "" when all went as intended.

    The first urgent workload that never ran is explained by its last failure's cause;
    if all ran but none preempted, they fitted without preemption."""
    preempted = {d.workload for d in decisions if d.kind != FAILED}
    last_failure: dict[str, Decision] = {}
    for d in decisions:
        if d.kind == FAILED:
            last_failure[d.workload] = d
    for name in urgent:
        if name in useful:
            continue
        failed = last_failure.get(name)
        if failed is not None and failed.cause.startswith(GROUP_TOO_BIG):
            return f"{name}: {failed.cause}."
        if name in preempted:
            return f"{name}: {WAITING} (t={horizon:g}s)."
        cause = failed.cause if failed is not None and failed.cause else "it never became ready"
        return f"{name}: {cause}."
    if urgent and not preempted.intersection(urgent):
        for name in urgent:
            failed = last_failure.get(name)
            if failed is not None and failed.cause:
                return f"{name}: {failed.cause}; it waited instead of preempting."
        for name in urgent:
            if name in queued:
                return f"{name}: {QUEUED}."
        return f"{urgent[0]}: {FITS}." if len(urgent) == 1 else f"{', '.join(urgent)}: {FITS}."
    return ""


# --------------------------------------------------------------------- a pod, described
@dataclass(frozen=True, slots=True)
class Condition:
    type: str
    status: str
    since: float | None
    reason: str = ""


@dataclass(frozen=True, slots=True)
class PodDescription:
    """What `kubectl describe pod` would show at the horizon, from the pod's own events:
    the core knows what each reason means, so the web page does not."""

    name: str
    workload: str
    status: str
    node: str
    nominated_node: str
    conditions: tuple[Condition, ...]


_PHASE = {
    R.CREATED: "Pending",
    R.FAILED_SCHEDULING: "Pending",
    R.NOMINATED: "Pending",
    R.SCHEDULED: "Pending",
    R.READY: "Running",
    R.KILLING: "Terminating",
    R.RELEASED: "Terminated",
    R.COMPLETED: "Succeeded",
}


def describe_pod(events: list[Any], pod: str) -> PodDescription:
    """Status, node, nominatedNodeName and conditions (PodScheduled, Ready,
    DisruptionTarget) of ``pod`` after its events (any objects with time, reason, pod,
    node, workload and related attributes, in log order)."""
    status, node, nominated, workload = "Pending", "", "", ""
    scheduled: float | None = None
    ready: float | None = None
    disrupted: tuple[float, str] | None = None
    for e in events:
        if e.pod != pod:
            continue
        workload = workload or e.workload
        status = _PHASE.get(e.reason, status)
        if e.reason == R.NOMINATED:
            nominated = e.node
        elif e.reason == R.SCHEDULED:
            node, nominated, scheduled = e.node, "", e.time
        elif e.reason == R.READY:
            ready = e.time
        elif e.reason == R.PREEMPTED:
            disrupted = (e.time, "PreemptionByScheduler")
        elif e.reason == R.KILLING and disrupted is None and e.related == "drain":
            disrupted = (e.time, "EvictionByEvictionAPI")
        elif e.reason in (R.RELEASED, R.COMPLETED):
            ready = None
    conditions = (
        Condition(
            "PodScheduled",
            "True" if scheduled is not None else "False",
            scheduled,
            "" if scheduled is not None else "Unschedulable",
        ),
        Condition("Ready", "True" if ready is not None else "False", ready),
        *(
            (Condition("DisruptionTarget", "True", disrupted[0], disrupted[1]),)
            if disrupted
            else ()
        ),
    )
    return PodDescription(pod, workload, status, node, nominated, conditions)
