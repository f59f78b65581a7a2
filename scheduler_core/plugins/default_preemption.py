"""The `none` policy and DefaultPreemption (`pod`), as kube-scheduler does it.

Follows kubernetes-preemption.md §4 step by step: eligibility (§4.1), candidate nodes
from a seeded offset with the numCandidates stop rule (§4.2), victims per node with
reprieve and the PDB budget (§4.3), the six node-selection rules (§4.4), then actuation
(§4.5, done by the engine). Nothing is copied: a node's "removal" of victims is
arithmetic on its free resources.
"""

from __future__ import annotations

from collections.abc import Iterator
from dataclasses import dataclass, field

from scheduler_core import fast_preemption
from scheduler_core.cluster import Cluster
from scheduler_core.decisions import ONLY_CANDIDATE, RULES, CompactCandidates
from scheduler_core.devices import DryRun
from scheduler_core.model import Node, Pod, PodState, Workload
from scheduler_core.plugins import PreemptionHost, QueueingHint
from scheduler_core.spec import Policy
from scheduler_core.status import SUCCESS, Code, Status

PLUGIN = "DefaultPreemption"
NEVER = Status(Code.UNSCHEDULABLE, "not eligible due to preemptionPolicy=Never.", PLUGIN)
WAITING = Status(
    Code.UNSCHEDULABLE, "not eligible due to a terminating pod on the nominated node.", PLUGIN
)
PLACEMENT_LIMITED = Status(
    Code.UNSCHEDULABLE,
    "not eligible due to placement-based pod group scheduling limitation",
    PLUGIN,
)
NOT_HELPFUL = Status(Code.UNSCHEDULABLE, "Preemption is not helpful for scheduling", PLUGIN)
NO_PREEMPTION = Status(Code.UNSCHEDULABLE, "preemption is disabled in this variant", "none")
INT32_OFFSET = 2**31
REPRIEVED = "the preemptor still fits with it back on the node"
REPRIEVED_PDB = "PDB-protected, tried first: the preemptor still fits with it back"


class NoPreemption:
    """`none`: nobody is evicted; priority only orders the queue."""

    group_aware = False

    def __init__(self, policy: Policy) -> None:
        self.policy = policy

    def post_filter(self, host: PreemptionHost, pod: Pod) -> Status:
        return NO_PREEMPTION

    def post_filter_group(
        self, host: PreemptionHost, workload: Workload, pending: list[Pod], need: int
    ) -> Status:
        return NO_PREEMPTION

    def queueing_hint(self) -> QueueingHint | None:
        """Nobody is evicted: only a node the pod now fits changes its verdict."""
        return fits_now


def fits_now(host: PreemptionHost, pod: Pod, node: Node) -> bool:
    """Filter on one node: the static checks, then resources with nominations (§3)."""
    cluster = host.cluster
    return cluster.static_filter(pod.workload, node).ok and cluster.fits(pod, node)


def fits_or_candidate(host: PreemptionHost, pod: Pod, node: Node) -> bool:
    """The node fits the pod, or SelectVictimsOnNode finds victims there (§4.3). A node
    that does neither cannot change "no node fits, no candidate": DryRunPreemption's
    outcome is whether any node is a candidate, which does not depend on the offset, on
    PDBs (they only order candidates) or on other nodes.

    First the node's GPU reach (free GPUs plus those of every lower-priority pod, kept
    per priority threshold by the cluster): below the pod's GPUs it neither fits nor
    helps, whatever the filters say, so most changed nodes cost one lookup. Nodes that
    track devices one by one (shares, MIG) skip that shortcut."""
    cluster = host.cluster
    if (
        node.dev_free is None
        and not pod.mig
        and node.reachable[cluster.threshold(pod.priority)] < pod.gpus
    ):
        return False
    if not cluster.static_filter(pod.workload, node).ok:
        return False
    if cluster.fits(pod, node):
        return True
    return not pod.never_preempts and select_victims_on_node(host, pod, node) is not None


@dataclass(slots=True)
class Candidate:
    node: Node
    victims: list[Pod]
    pdb_violations: int
    reprieved: list[tuple[Pod, str]] = field(default_factory=list)
    """Lower-priority pods put back, with why (for the decision record)."""


def more_important(pod: Pod) -> tuple[int, float]:
    """Sort key for MoreImportantPod: higher priority first, then the earlier start."""
    return (-pod.priority, pod.bound_at)


class DefaultPreemption:
    """`pod`: the upstream DefaultPreemption PostFilter for a single preemptor pod."""

    group_aware = False

    def __init__(self, policy: Policy) -> None:
        self.percentage = policy.min_candidate_nodes_percentage
        self.absolute = policy.min_candidate_nodes_absolute

    def post_filter(self, host: PreemptionHost, pod: Pod) -> Status:
        """1. eligibility, 2. candidates, 3. none: clear the nomination, 4. pick a node,
        5. actuate and nominate."""
        refusal = self.ineligible(host, pod)
        if refusal is not None:
            return refusal
        if self.arrays_decide(host):
            decided = self.array_decision(host, pod, listing=self.recording(host))
            if decided is None:
                host.clear_nomination(pod)
                return NOT_HELPFUL
            best, found, rule = decided
            if found is not None:
                self.explain(host, pod, found, best, rule)
            host.actuate(pod, best.node, best.victims)
            return SUCCESS
        candidates = self.find_candidates(host, pod)
        if not candidates:
            host.clear_nomination(pod)
            return not_helpful(host, pod.priority)
        best, rule = (
            (candidates[0], ONLY_CANDIDATE)
            if len(candidates) == 1
            else pick_one_node_by_rule(candidates)
        )
        self.explain(host, pod, candidates, best, rule)
        host.actuate(pod, best.node, best.victims)
        return SUCCESS

    def queueing_hint(self) -> QueueingHint | None:
        """A failed pod stays failed until some node fits it or becomes a candidate.
        Subclasses choose victims their own way (units, costs): no hint until they give
        one, so their verdicts are dropped on every change."""
        return fits_or_candidate if type(self) is DefaultPreemption else None

    use_arrays = True
    """Decide with numpy (scheduler_core/fast_preemption.py) where that is exact; off, the
    Python steps below decide every time (the reference of the differential tests)."""

    def arrays_decide(self, host: PreemptionHost) -> bool:
        """The array path gives the reference's choice, its candidates and its rule when no
        PDB exists (no candidate violates one) and no device is shared or split into MIG
        instances (the arrays count whole GPUs per node); subclasses choose otherwise. A
        decision recorder does not matter: the arrays list every candidate for it."""
        return (
            self.use_arrays
            and type(self) is DefaultPreemption
            and not host.cluster.shares
            and not host.cluster.mig
            and not getattr(host, "_any_pdb", True)
            and not host.guards.active
        )

    def array_choice(self, host: PreemptionHost, pod: Pod) -> Candidate | None:
        """The array path's candidate (what find_candidates + the §4.4 rules choose)."""
        return fast_preemption.choose(host, self, pod)

    def array_decision(
        self, host: PreemptionHost, pod: Pod, *, listing: bool
    ) -> fast_preemption.Decided | None:
        """The array path's candidate, every candidate (``listing``: with their victims, as
        the decision record keeps them) and the rule that chose."""
        return fast_preemption.decide(host, self, pod, listing=listing)

    @staticmethod
    def recording(host: PreemptionHost) -> bool:
        """Does a decision recorder want every candidate (``explain``, the default)?"""
        return getattr(host, "recorder", None) is not None

    def explain(
        self,
        host: PreemptionHost,
        pod: Pod,
        candidates: list[Candidate] | CompactCandidates,
        best: Candidate,
        rule: str,
    ) -> None:
        """Record the PostFilter's candidates, deciding rule and reprieved pods."""
        recorder = getattr(host, "recorder", None)
        if recorder is not None:
            recorder.preemption(host.now, pod, candidates, best, rule)

    # ----------------------------------------------------------------- §4.1
    def ineligible(self, host: PreemptionHost, pod: Pod) -> Status | None:
        """PodEligibleToPreemptOthers: `Never` pods never preempt; a pod whose nominated
        node still has lower-priority victims terminating waits for them."""
        if pod.never_preempts:
            return NEVER
        if not host.guards.allows(host.now):
            host.wait_for_token()
            return host.guards.rate_limited_status()
        node = pod.nominated
        if node is None:
            return None
        status = host.cluster.static_filter(pod.workload, node)
        if status.code is Code.UNSCHEDULABLE_AND_UNRESOLVABLE:
            return None
        if any(
            p.priority < pod.priority and p.state is PodState.TERMINATING and p.preempted
            for p in node.pods
        ):
            return WAITING
        return None

    # ----------------------------------------------------------------- §4.2
    def num_candidates(self, n: int) -> int:
        """clamp(n * percentage / 100, minCandidateNodesAbsolute, n)."""
        return min(max(n * self.percentage // 100, self.absolute), n)

    def find_candidates(self, host: PreemptionHost, pod: Pod) -> list[Candidate]:
        """DryRunPreemption with parallelism 1: nodes from a random offset, stop once a
        non-violating candidate exists and numCandidates were found.

        Nodes that cannot reach the pod's GPUs even with every lower-priority pod gone are
        skipped through the cluster's reach index; they would fail SelectVictimsOnNode
        anyway, so the outcome is the same as visiting every node."""
        potential, position = host.cluster.eligible_nodes(pod.workload)
        n = len(potential)
        if n == 0:
            return []
        offset = host.random_offset(n)
        if not host.cluster.below[host.cluster.threshold(pod.priority)]:
            return []  # no pod anywhere has a lower priority: every node would say so
        limit = self.num_candidates(n)
        clean: list[Candidate] = []
        violating: list[Candidate] = []
        for node in _visit_order(host.cluster, pod, potential, position, offset):
            found = self.select_victims(host, pod, node)
            if found is not None:
                bucket = clean if found.pdb_violations == 0 else violating
                if len(bucket) < limit:
                    bucket.append(found)
                if clean and len(clean) + len(violating) >= limit:
                    break
        return clean + violating

    def select_victims(self, host: PreemptionHost, pod: Pod, node: Node) -> Candidate | None:
        return select_victims_on_node(host, pod, node)

    # ----------------------------------------------------------------- groups
    def post_filter_group(
        self, host: PreemptionHost, workload: Workload, pending: list[Pod], need: int
    ) -> Status:
        """Without workload-aware preemption a gang's members preempt one by one, each for
        itself (§4.0 with the WorkloadAwarePreemption gate off): each nominated member
        counts on its node for the next member's Filter. A group with a topology
        constraint is not eligible (§4.0, first guard)."""
        group = workload.spec.pod_group
        if group is not None and group.topology is not None:
            return PLACEMENT_LIMITED
        status = NOT_HELPFUL
        for pod in pending:
            outcome = self.post_filter(host, pod)
            if outcome.ok or not status.ok:
                status = outcome
        return status


def _visit_order(
    cluster: Cluster, pod: Pod, potential: list[Node], position: dict[Node, int], offset: int
) -> Iterator[Node]:
    """Potential nodes in DryRun order (from ``offset``, wrapping), only those that can help.

    Few helpful nodes: sort just those by their rotated position. Many: walk the rotation
    and test each node's reach in O(1); the stop rule ends the walk early then."""
    k = cluster.threshold(pod.priority)
    n = len(potential)
    reaching = list(cluster.nodes_reaching(k, pod.gpus))
    if len(reaching) * 8 < n:
        rotated = sorted((position[node] - offset) % n for node in reaching if node in position)
        for i in rotated:
            yield potential[(offset + i) % n]
        return
    for i in range(n):
        node = potential[(offset + i) % n]
        if node.reachable[k] >= pod.gpus:
            yield node


# --------------------------------------------------------------------- §4.3
def select_victims_on_node(host: PreemptionHost, pod: Pod, node: Node) -> Candidate | None:
    """SelectVictimsOnNode, in numbered steps:

    1. potential victims: pods of strictly lower priority (terminating ones included);
    2. remove them all; if the pod still does not fit, the node cannot help;
    3. sort by MoreImportantPod, split by PDB (budget consumed in that order);
    4. reprieve PDB-violating pods first, then the rest: add each back, keep it if the
       pod still fits;
    5. victims sorted by MoreImportantPod when both groups contributed.
    """
    prio = pod.priority
    need_g, need_c, need_m, need_n = host.cluster.need(pod, node)
    if node.reachable[host.cluster.threshold(prio)] < need_g:
        return None
    if node.dev_free is not None or pod.mig:
        return _select_victims_on_devices(host, pod, node)
    potential = [p for p in node.pods if p.priority < prio]
    guards = host.guards
    shielded = [p for p in potential if guards.protected(p, host.now)] if guards.min_runtime else []
    if shielded:
        potential = [p for p in potential if p not in shielded]
    if not potential:
        return None
    # Free resources with every potential victim gone (the node itself is not touched).
    g, c, m = node.free_gpus, node.free_cpu + 1e-9, node.free_mem + 1e-9
    n = node.max_pods - node.npods + len(potential)
    for p in potential:
        g += p.gpus
        c += p.cpu
        m += p.mem
    if need_g > g or need_c > c or need_m > m or need_n > n:
        return None
    potential.sort(key=more_important)
    violating, clean = _split_by_pdb(host, potential)
    victims: list[Pod] = []
    reprieved: list[tuple[Pod, str]] = []
    protected = len(violating)
    for i, p in enumerate(violating + clean):
        # Reprieve p if the pod still fits with p back on the node.
        if need_g <= g - p.gpus and need_c <= c - p.cpu and need_m <= m - p.mem and need_n < n:
            g -= p.gpus
            c -= p.cpu
            m -= p.mem
            n -= 1
            reprieved.append((p, REPRIEVED_PDB if i < protected else REPRIEVED))
        else:
            victims.append(p)
    pdb_violations = sum(1 for p in victims if p in violating) if violating else 0
    if violating and clean:
        victims.sort(key=more_important)
    reprieved += [(p, guards.protection_text(p, host.now)) for p in shielded]
    return Candidate(node, victims, pdb_violations, reprieved) if victims else None


def not_helpful(host: PreemptionHost, priority: int) -> Status:
    """No candidate: "not helpful", unless lower-priority pods only min runtime protects
    stand in the way (then preemption may help once they have run long enough)."""
    guards = host.guards
    if not guards.min_runtime:
        return NOT_HELPFUL
    count = sum(
        1
        for node in host.cluster.nodes
        for p in node.pods
        if p.priority < priority and guards.protected(p, host.now)
    )
    return guards.protected_status(count) if count else NOT_HELPFUL


def _select_victims_on_devices(host: PreemptionHost, pod: Pod, node: Node) -> Candidate | None:
    """SelectVictimsOnNode where devices are shared or split into MIG instances: the same
    steps, with the fit checked per device (a victim frees exactly its share, on its own
    device; a whole-GPU preemptor needs whole free devices, a share one device with room).

    1. potential victims: pods of strictly lower priority;
    2. remove them all (devices.DryRun); if the pod still does not fit, the node cannot help
       (also when the freed shares add up to enough but lie on different devices);
    3. sort by MoreImportantPod, split by PDB;
    4. reprieve PDB-violating pods first, then the rest: put each back on its devices, keep
       it if the pod still fits;
    5. victims sorted by MoreImportantPod when both groups contributed.
    """
    prio = pod.priority
    guards = host.guards
    potential = [
        p
        for p in node.pods
        if p.priority < prio and not (guards.min_runtime and guards.protected(p, host.now))
    ]
    if not potential:
        return None
    others = host.cluster.claimants(node, pod)
    view = DryRun(node, potential)
    if not view.fits(pod, others):
        return None
    potential.sort(key=more_important)
    violating, clean = _split_by_pdb(host, potential)
    victims: list[Pod] = []
    reprieved: list[tuple[Pod, str]] = []
    protected = len(violating)
    for i, p in enumerate(violating + clean):
        view.put_back(p)
        if view.fits(pod, others):
            reprieved.append((p, REPRIEVED_PDB if i < protected else REPRIEVED))
        else:
            view.remove(p)
            victims.append(p)
    pdb_violations = sum(1 for p in victims if p in violating) if violating else 0
    if violating and clean:
        victims.sort(key=more_important)
    return Candidate(node, victims, pdb_violations, reprieved) if victims else None


def _split_by_pdb(host: PreemptionHost, pods: list[Pod]) -> tuple[list[Pod], list[Pod]]:
    """filterPodsWithPDBViolation: each matching pod consumes one allowed disruption, in
    the given (sorted) order; a pod that drives a budget below zero is violating."""
    allowed = host.pdb_allowed(pods)
    if not allowed:
        return [], pods
    violating: list[Pod] = []
    clean: list[Pod] = []
    for pod in pods:
        key = pod.workload
        if key in allowed:
            allowed[key] -= 1
            if allowed[key] < 0:
                violating.append(pod)
                continue
        clean.append(pod)
    return violating, clean


# --------------------------------------------------------------------- §4.4
def pick_one_node(candidates: list[Candidate]) -> Candidate:
    """pickOneNodeForPreemption (see :func:`pick_one_node_by_rule`)."""
    return pick_one_node_by_rule(candidates)[0]


def pick_one_node_by_rule(candidates: list[Candidate]) -> tuple[Candidate, str]:
    """pickOneNodeForPreemption: each rule keeps the best-scoring nodes; the next rule
    only breaks ties; the first remaining candidate wins. Returns the winner and the rule
    that left it alone (§4.4), for the decision record."""
    rules = (
        lambda c: -c.pdb_violations,  # 1 fewest PDB violations
        lambda c: -c.victims[0].priority,  # 2 lowest top victim
        lambda c: -sum(v.priority + INT32_OFFSET for v in c.victims),  # 3 smallest priority sum
        lambda c: -len(c.victims),  # 4 fewest victims
        _latest_start_of_top_victims,  # 5 latest start time
    )
    remaining = candidates
    for number, rule in enumerate(rules):
        scores = [rule(c) for c in remaining]
        top = max(scores)
        remaining = [c for c, s in zip(remaining, scores, strict=True) if s == top]
        if len(remaining) == 1:
            return remaining[0], RULES[number]
    return remaining[0], RULES[5]  # 6 first remaining


def _latest_start_of_top_victims(candidate: Candidate) -> float:
    top = candidate.victims[0].priority
    return min(v.bound_at for v in candidate.victims if v.priority == top)
