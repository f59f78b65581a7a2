"""DefaultPreemption's decision with numpy arrays (issue #14).

The same steps as ``plugins/default_preemption.py`` (the reference, kept as it is):
candidate nodes from the seeded offset (§4.2), SelectVictimsOnNode with reprieve
(§4.3) and pickOneNodeForPreemption's rules (§4.4), done for many nodes at once on the
per-node arrays of :mod:`scheduler_core.fast_nodes`:

- the rotation from the offset is index arithmetic, the reach test one mask;
- nodes are evaluated in chunks of the rotation, so the numCandidates stop rule still
  stops early (a chunk beyond it is never looked at);
- per node, "remove every lower-priority pod" adds them back in the order the node holds
  them, and the reprieve walks them in MoreImportantPod order, one column per step
  across all nodes, so each float is the one the Python path computes;
- the node-choice rules are applied to whole key columns, one rule after the other, so
  the rule that decided is known (the decision record names it).

With a decision recorder (``explain``, the default) every candidate's victims are kept
too, as one gather of the pods in the node arrays: an object array per decision, turned
into names only when the records are built (:class:`~scheduler_core.decisions.
CompactCandidates`). The winning node's victims and reprieved pods are listed by the
reference function itself. Used only where the reference has nothing more to say: no
PodDisruptionBudget in the experiment (so no candidate violates one).
"""

from __future__ import annotations

from collections.abc import Callable, Iterator, Sequence
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any, TypeVar

import numpy as np

from scheduler_core.decisions import ONLY_CANDIDATE, RULES, CompactCandidates
from scheduler_core.model import Node, Pod

if TYPE_CHECKING:
    from scheduler_core.cluster import Cluster
    from scheduler_core.plugins import PreemptionHost
    from scheduler_core.plugins.default_preemption import Candidate, DefaultPreemption

INT32_OFFSET = 2**31
BIG = np.iinfo(np.int64).max
FIRST_CHUNK = 256
FEW = 48
"""Up to this many nodes that could help, the Python steps are faster than the arrays."""
FEW_KINDS = 4
"""Up to this many signatures in a chunk, the reprieve runs in plain Python per signature
(numpy's per-call cost dominates arrays of a few rows)."""
ALIKE_MIN = 128
"""Fewest rows for which a chunk's alike rows are looked for (:func:`_evaluate`): below
it every row is evaluated (a small cluster's rows are seldom alike, and each row changed
since it was last looked at costs a signature in Python)."""
MAX_REPRIEVES = 4096
"""At most this many (signature, need, priority) reprieve outcomes are kept (then the
memo starts afresh)."""
MARGIN = 1e-6
"""Rounding slack of the CPU and memory reach sums (far below any request's size)."""

Listing = tuple[np.ndarray, np.ndarray, np.ndarray, dict[int, list[Pod]]]
"""A chunk's victims for the decision record: the node arrays' pods (flat), where each
row's pods lie in it in the order the victims are listed (rows x depth), which of them
are victims, and the full victim lists of rows the reference decided (by position in the
chunk). Only the victims themselves are gathered, at once (before anything moves)."""
Evaluate = Callable[
    [np.ndarray, int, bool], tuple[np.ndarray, tuple[np.ndarray, ...], Listing | None]
]
"""``(chunk, wanted, listing) -> (fits, (top, total, victims, latest), listed)``: which
of the chunk's nodes can take the preemptor with victims, the §4.4 keys of each
(``wanted`` is how many more candidates the stop rule asks for) and, when ``listing``,
their victims."""
Decided = tuple["Candidate", "list[Candidate] | CompactCandidates | None", str]
"""The chosen candidate, every candidate (for the record; None when not listed) and the
§4.4 rule that chose."""


def choose(host: PreemptionHost, policy: DefaultPreemption, pod: Pod) -> Candidate | None:
    """The candidate ``find_candidates`` + ``pick_one_node`` would choose, or None when
    there is none; makes the same random draw."""
    decided = decide(host, policy, pod, listing=False)
    return None if decided is None else decided[0]


def decide(
    host: PreemptionHost, policy: DefaultPreemption, pod: Pod, *, listing: bool
) -> Decided | None:
    """What the reference's ``find_candidates`` + ``pick_one_node_by_rule`` give: the
    chosen candidate, the rule, and (``listing``) every candidate with its victims, in
    the reference's order; None when no node is a candidate."""
    from scheduler_core.plugins.default_preemption import select_victims_on_node

    cluster = host.cluster
    visit = _reaching_order(host, policy, pod)
    if visit is None:
        return None
    rotated, need, limit = visit
    if len(rotated) <= FEW:
        return _few(host, pod, [cluster.nodes[i] for i in rotated.tolist()], limit)
    found = pick_in_chunks(
        rotated,
        limit,
        lambda chunk, _, listed: _evaluate(cluster.arrays, pod, chunk, need, listed),
        listing,
    )
    if found is None:
        return None
    best = select_victims_on_node(host, pod, cluster.nodes[found.best])
    assert best is not None  # the arrays found victims there
    return best, found.candidates(cluster.nodes), found.rule


def _visit_start(host: PreemptionHost, pod: Pod) -> tuple[np.ndarray, int, int, int] | None:
    """What both visit orders start from: the eligible rows in node order, the seeded
    offset (§4.2, the reference's random draw made at the same point), the pod's priority
    threshold and the eligible count; None when no node is eligible or nothing runs
    below the pod's priority."""
    cluster = host.cluster
    potential, _ = cluster.eligible_nodes(pod.workload)
    n = len(potential)
    if n == 0:
        return None
    offset = host.random_offset(n)
    k = cluster.threshold(pod.priority)
    if not cluster.below[k]:
        return None
    return cluster.eligible_rows(pod.workload), offset, k, n


def visit_order(
    host: PreemptionHost, policy: DefaultPreemption, pod: Pod
) -> tuple[np.ndarray, int, int] | None:
    """The eligible rows rotated from the seeded offset, the pod's priority threshold and
    the numCandidates limit (:func:`_visit_start`)."""
    start = _visit_start(host, pod)
    if start is None:
        return None
    rows, offset, k, n = start
    return np.concatenate((rows[offset:], rows[:offset])), k, policy.num_candidates(n)


def _reaching_order(
    host: PreemptionHost, policy: DefaultPreemption, pod: Pod
) -> tuple[np.ndarray, tuple[np.ndarray, ...] | None, int] | None:
    """:func:`visit_order` (the same random draw, at the same point) with the rows that
    cannot reach the pod's need left out (:func:`_may_reach`), what the pod needs per row
    (:func:`_needs`) and the numCandidates limit. The reach test runs on the eligible rows
    in node order, where a cluster whose every node is eligible reads the arrays as they
    are (no gather), and the rotation from the offset is applied to the rows kept: the
    rows kept at or after the offset, then those before it, as the reference visits
    them."""
    start = _visit_start(host, pod)
    if start is None:
        return None
    rows, offset, k, n = start
    cluster = host.cluster
    need = _needs(host, pod)
    kept = np.flatnonzero(_may_reach(cluster, k, pod, rows, need))
    cut = int(np.searchsorted(kept, offset))
    order = np.concatenate((kept[cut:], kept[:cut]))
    return (order if n == len(cluster.nodes) else rows[order]), need, policy.num_candidates(n)


@dataclass(slots=True)
class Found:
    """The candidates an array path found (at most numCandidates, in visit order), the
    row chosen and the §4.4 rule that chose it."""

    rows: np.ndarray
    counts: np.ndarray
    """Victims per candidate."""
    victims: np.ndarray | None
    """Every candidate's victims, concatenated in candidate order (when listing)."""
    best: int
    rule: str

    def candidates(self, nodes: list[Node]) -> CompactCandidates | None:
        """The candidates for the decision record, still as arrays (None unless listed).
        The record outlives the decision, so it keeps copies: ``rows`` is a slice of the
        whole visit order (5,000 rows for a storm's 500 candidates), which a view would
        keep alive, 98 MB over a 5,000-preemptor storm."""
        if self.victims is None:
            return None
        return CompactCandidates(nodes, self.rows.copy(), _own(self.victims), self.counts)


def _own(array: np.ndarray) -> np.ndarray:
    """``array`` itself, or a copy where it is a view of a larger one."""
    base = array.base
    return array.copy() if isinstance(base, np.ndarray) and base.size > array.size else array


Evaluated = TypeVar("Evaluated", bound=tuple[Any, ...])


def in_chunks(
    rotated: np.ndarray,
    limit: int,
    evaluate: Callable[[np.ndarray, int, bool], Evaluated],
    listing: bool,
) -> Iterator[tuple[np.ndarray, Evaluated]]:
    """The rows of ``rotated`` in growing chunks, each with ``evaluate(chunk, wanted,
    listing)`` (whose first item is the chunk's candidate mask), until ``limit``
    candidates are found: the numCandidates stop (§4.2) of every array path, so rows past
    it are never looked at. A chunk after the first is twice what is still wanted."""
    count, start, size = 0, 0, max(FIRST_CHUNK, limit)
    while start < len(rotated) and count < limit:
        chunk = rotated[start : start + size]
        evaluated = evaluate(chunk, limit - count, listing)
        yield chunk, evaluated
        count += int(evaluated[0].sum())
        start += size
        size = max(FIRST_CHUNK, 2 * (limit - count))


def pick_in_chunks(
    rotated: np.ndarray, limit: int, evaluate: Evaluate, listing: bool = False
) -> Found | None:
    """The candidates among the first ``limit`` rows of ``rotated`` that can help and the
    row pickOneNodeForPreemption chooses, or None. The rotation is evaluated in growing
    chunks, so rows past the numCandidates stop (§4.2) are never looked at. Shared by
    every array path, which differ only in how a chunk is evaluated."""
    found: list[np.ndarray] = []
    features: list[tuple[np.ndarray, ...]] = []
    victims: list[np.ndarray] = []
    for chunk, (ok, scores, listed) in in_chunks(rotated, limit, evaluate, listing):
        every = bool(ok.all())  # a storm's chunk: no gather
        found.append(chunk if every else chunk[ok])
        features.append(scores if every else tuple(s[ok] for s in scores))
        if listing and listed is not None:
            victims.append(_victims_of(ok, listed))
    if not any(len(rows) for rows in found):
        return None
    chosen = _joined(found)[:limit]
    top, total, nvictims, latest = (_joined(parts)[:limit] for parts in zip(*features, strict=True))
    counts = nvictims.astype(np.int64)
    listed_victims = None
    if listing:
        listed_victims = _joined(victims)[: int(counts.sum())]
    best, rule = pick_by_rule(top, total, counts, latest)
    return Found(chosen, counts, listed_victims, int(chosen[best]), rule)


def _joined(parts: list[np.ndarray] | tuple[np.ndarray, ...]) -> np.ndarray:
    """The parts end to end (the one part itself when there is one: a storm's decision
    is decided in its first chunk)."""
    return parts[0] if len(parts) == 1 else np.concatenate(parts)


def pick_by_rule(
    top: np.ndarray, total: np.ndarray, victims: np.ndarray, latest: np.ndarray
) -> tuple[int, str]:
    """pickOneNodeForPreemption (``pick_one_node_by_rule``) on key columns: each rule keeps
    the best-scoring candidates, the next only breaks ties, the first remaining wins.
    Rule 1 (fewest PDB violations) is 0 for every candidate here. Returns the winner's
    position and the rule that left it alone."""
    if len(top) == 1:
        return 0, ONLY_CANDIDATE
    keep: np.ndarray | None = None  # None: every candidate (no gather while all tie)
    for number, values in ((1, top), (2, total), (3, victims), (4, latest)):
        part = values if keep is None else values[keep]
        best = part == (part.max() if number == 4 else part.min())  # rule 4: latest
        if keep is None:
            if best.all():
                continue
            keep = np.flatnonzero(best)
        else:
            keep = keep[best]
        if len(keep) == 1:
            return int(keep[0]), RULES[number]
    return (0 if keep is None else int(keep[0])), RULES[5]


def _victims_of(ok: np.ndarray, listed: Listing) -> np.ndarray:
    """The victims of a chunk's candidates, concatenated in row order."""
    pods, where, victim, by_reference = listed
    if not by_reference:
        flat: np.ndarray = pods[where[victim] if ok.all() else where[ok][victim[ok]]]
        return flat
    parts = []
    for position in np.flatnonzero(ok).tolist():
        own = by_reference.get(position)
        if own is None:
            parts.append(pods[where[position][victim[position]]])
        else:
            part = np.empty(len(own), dtype=object)
            part[:] = own
            parts.append(part)
    return np.concatenate(parts) if parts else np.empty(0, dtype=object)


def first_candidates(
    nodes: list[Node], limit: int, select: Callable[[Node], Candidate | None]
) -> Decided | None:
    """The reference steps on a short visit order: candidates in order until ``limit``
    (the same stop rule, no PDBs), then pickOneNodeForPreemption with its rule."""
    from scheduler_core.plugins.default_preemption import pick_one_node_by_rule

    candidates = []
    for node in nodes:
        found = select(node)
        if found is not None:
            candidates.append(found)
            if len(candidates) >= limit:
                break
    if not candidates:
        return None
    best, rule = (
        (candidates[0], ONLY_CANDIDATE)
        if len(candidates) == 1
        else pick_one_node_by_rule(candidates)
    )
    return best, candidates, rule


def _few(host: PreemptionHost, pod: Pod, nodes: list[Node], limit: int) -> Decided | None:
    """The reference steps on a short visit order (the same stop rule, no PDBs)."""
    from scheduler_core.plugins.default_preemption import select_victims_on_node

    return first_candidates(nodes, limit, lambda node: select_victims_on_node(host, pod, node))


def _may_reach(
    cluster: Cluster, k: int, pod: Pod, rows: np.ndarray, need: tuple[np.ndarray, ...] | None
) -> np.ndarray:
    """Rows where evicting every pod below threshold ``k`` could make room: the GPU reach
    exactly, CPU, memory and pod slots with a margin for rounding (a superset of the
    candidates, which :func:`_evaluate` then decides exactly). Non-candidates dropped
    here keep their place out of the rotation, so the stop rule finds the same nodes."""
    every = len(rows) == len(cluster.nodes)  # then ``rows`` is every row, in order
    need_g: Any
    need_c: Any
    need_m: Any
    need_n: Any
    if need is None:
        need_g, need_c, need_m, need_n = pod.gpus, pod.cpu, pod.mem, 1
    elif every:
        need_g, need_c, need_m, need_n = need
    else:
        need_g, need_c, need_m, need_n = (x[rows] for x in need)
    if every:
        reach_g, reach_c = cluster.reach_array[k], cluster.reach_cpu[k]
        reach_m, reach_n = cluster.reach_mem[k], cluster.reach_pods[k]
    else:
        reach_g, reach_c = cluster.reach_array[k, rows], cluster.reach_cpu[k, rows]
        reach_m, reach_n = cluster.reach_mem[k, rows], cluster.reach_pods[k, rows]
    mask: np.ndarray = (
        (reach_g >= need_g)
        & (reach_c + MARGIN >= need_c)
        & (reach_m + MARGIN >= need_m)
        & (reach_n >= need_n)
    )
    return mask


def _needs(host: PreemptionHost, pod: Pod) -> tuple[np.ndarray, ...] | None:
    """What the pod needs on each node where nominations claim room (§3); None if no node
    has any (then the pod's own request is the need everywhere)."""
    cluster = host.cluster
    claims = cluster.claim_arrays(pod.priority)
    if claims is None:
        return None
    need_g = pod.gpus + claims[0]
    need_c = pod.cpu + claims[1]  # the same sum, in the same order, as Cluster.need
    need_m = pod.mem + claims[2]
    need_n = 1 + claims[3]
    own = pod.nominated
    if own is not None:  # the arrays count the pod's own claim: not on its node
        need_g[own.idx], need_c[own.idx], need_m[own.idx], need_n[own.idx] = cluster.need(pod, own)
    return need_g, need_c, need_m, need_n


def _evaluate(
    arrays: object,
    pod: Pod,
    rows: np.ndarray,
    need: tuple[np.ndarray, ...] | None,
    listing: bool = False,
) -> tuple[np.ndarray, tuple[np.ndarray, ...], Listing | None]:
    """SelectVictimsOnNode for each of ``rows``: whether it is a candidate, per row (top
    victim priority, sum of victim priorities + 2^31, victim count, latest start of the
    top-priority victims) and, when ``listing``, the victims (in MoreImportantPod order,
    as the reference lists them).

    Rows of one pod-set signature (:meth:`NodeArrays.signature_ids`) that need the same
    room get the same victim columns, so one row per signature is evaluated and its
    outcome kept for the decisions after (:func:`_remembered`); only the start times
    (rule 5) and the pods themselves are read per row. A row whose nominations claim
    room is a class of its own."""
    a = arrays
    if len(rows) < ALIKE_MIN:
        ok, top, total, nvictims, order, victim, s_prio = _select(a, pod, rows, need)
        return (
            ok,
            (top, total, nvictims, latest_of(a, rows, order, victim, s_prio, top)),
            (_listing(a, rows, order, victim) if listing else None),
        )
    keys = a.signature_ids(rows)  # type: ignore[attr-defined]
    if need is not None:
        claimed = need[3][rows] != 1
        if claimed.any():
            keys = np.where(claimed, -1 - np.arange(len(rows)), keys)
    if FEW_KINDS and len(keys) and (keys == keys[0]).all():  # a storm: every row alike
        return _evaluate_alike(
            a, pod, rows, int(keys[0]), _need_at(pod, need, int(rows[0])), listing
        )
    ok, top, total, nvictims, order, victim, tops = _remembered(a, pod, rows, keys, need)
    latest = row_min(np.where(tops, a.pack[rows, :, 3], np.inf))  # type: ignore[attr-defined]
    return ok, (top, total, nvictims, latest), _listing(a, rows, order, victim) if listing else None


MAX_TABLES = 32
"""At most this many (priority, request) outcome tables are kept (:func:`_remembered`;
then they start afresh): a run's preemptors come in a few priorities and shapes."""
TABLE_SIGNATURES = 1 << 14
"""Signature ids a table covers (about 100 bytes each at 8 columns, so the tables stay
under 60 MB); rows of a later id are reprieved at every decision, as rows of their own
are."""


class Outcomes:
    """:func:`_select`'s outcome per signature id, for one preemptor priority and request
    (the need of a row no nomination claims room on): whether it is a candidate, the §4.4
    keys, the columns in MoreImportantPod order (padded to the arrays' width), which of
    them are victims, and which columns (in node order) hold a top-priority victim,
    whose start times rule 5 reads per row. Ids are never reused, so an outcome stays
    true of its signature: a decision gathers the rows' outcomes by id and reprieves
    only the signatures not met before."""

    __slots__ = ("known", "nvictims", "ok", "order", "top", "tops", "total", "victim")
    FIELDS = ("ok", "top", "total", "nvictims", "order", "victim", "tops")
    """The outcome's arrays in :meth:`gather`'s order (``known`` aside)."""

    def __init__(self, width: int) -> None:
        self.known = np.zeros(0, dtype=bool)
        self.ok = np.zeros(0, dtype=bool)
        self.top = np.zeros(0, dtype=np.int64)
        self.total = np.zeros(0, dtype=np.int64)
        self.nvictims = np.zeros(0, dtype=np.int64)
        self.order = np.zeros((0, width), dtype=np.int64)
        self.victim = np.zeros((0, width), dtype=bool)
        self.tops = np.zeros((0, width), dtype=bool)

    def cover(self, ids: int) -> None:
        """Room for signature ids below ``ids`` (doubling, so a run's growing ids cost
        amortised O(1) each)."""
        size = len(self.known)
        if ids <= size:
            return
        grown = min(TABLE_SIGNATURES, max(ids, 2 * size, 256))
        for name in self.__slots__:
            old = getattr(self, name)
            new = np.zeros((grown, *old.shape[1:]), dtype=old.dtype)
            new[:size] = old
            setattr(self, name, new)

    def gather(self, keys: np.ndarray) -> tuple[np.ndarray, ...]:
        return tuple(getattr(self, name)[keys] for name in self.FIELDS)


def _table(a: Any, pod: Pod) -> Outcomes:
    tables: dict[tuple[object, ...], Outcomes] = a.outcomes
    context = (pod.priority, pod.gpus, pod.cpu, pod.mem, a.width)
    table = tables.get(context)
    if table is None:
        if len(tables) >= MAX_TABLES:
            tables.clear()
        table = tables[context] = Outcomes(a.width)
    table.cover(min(TABLE_SIGNATURES, len(a.signatures)))
    return table


def _remembered(
    a: Any, pod: Pod, rows: np.ndarray, keys: np.ndarray, need: tuple[np.ndarray, ...] | None
) -> tuple[np.ndarray, ...]:
    """:func:`_select`'s outcome for each of ``rows`` (``keys``: their signature ids, a
    negative id for a row of its own) as :class:`Outcomes` arrays: taken from the table
    of the pod's priority and request where its signature was met before, else
    reprieved once per signature (rows of their own each) and kept. Rows of one
    signature that need the pod's request do the same float arithmetic and pick the same
    columns; a row whose nominations claim room is a row of its own."""
    table = _table(a, pod)
    own = (keys < 0) | (keys >= len(table.known))
    safe = np.where(own, 0, keys)
    missing = own | ~table.known[safe]
    own_rows: tuple[np.ndarray, tuple[np.ndarray, ...]] | None = None
    if missing.any():
        at = np.flatnonzero(missing)
        missing_keys = np.where(own[at], -1 - at, keys[at])  # each row of its own apart
        _, first = np.unique(missing_keys, return_index=True)
        todo = at[first]
        picked = rows[todo]
        select = _select_few if len(todo) <= FEW_KINDS else _select
        computed = _widened(a, *select(a, pod, picked, need))
        kept = ~own[todo]
        if kept.any():
            ids = keys[todo[kept]]
            table.known[ids] = True
            for name, column in zip(Outcomes.FIELDS, computed, strict=True):
                getattr(table, name)[ids] = column[kept]
        mine = ~kept
        if mine.any():  # rows of their own: their outcome goes in after the gather
            own_rows = (todo[mine], tuple(column[mine] for column in computed))
    outcome = table.gather(safe)
    if own_rows is not None:
        positions, parts = own_rows
        for into, part in zip(outcome, parts, strict=True):
            into[positions] = part
    return outcome


def _widened(
    a: Any,
    ok: np.ndarray,
    top: np.ndarray,
    total: np.ndarray,
    nvictims: np.ndarray,
    order: np.ndarray,
    victim: np.ndarray,
    s_prio: np.ndarray,
) -> tuple[np.ndarray, ...]:
    """:func:`_select`'s outcome as :class:`Outcomes` rows: the columns padded to the
    arrays' width (past the victims nothing is read) and the top-priority victims'
    columns as a mask in node order."""
    n_rows, depth = order.shape
    width = a.width
    wide_order = np.zeros((n_rows, width), dtype=np.int64)
    wide_order[:, :depth] = order
    wide_victim = np.zeros((n_rows, width), dtype=bool)
    wide_victim[:, :depth] = victim
    tops = np.zeros((n_rows, width), dtype=bool)
    marked = victim & (s_prio == top[:, None])
    tops[np.nonzero(marked)[0], order[marked]] = True
    return ok, top, total, nvictims, wide_order, wide_victim, tops


def latest_of(
    a: object,
    rows: np.ndarray,
    order: np.ndarray,
    victim: np.ndarray,
    s_prio: np.ndarray,
    top: np.ndarray,
) -> np.ndarray:
    """Per row, the latest start among its top-priority victims (rule 5)."""
    if order.shape[1] == 0:
        return np.zeros(len(rows))
    s_start = a.pack[rows[:, None], order, 3]  # type: ignore[attr-defined]
    return row_min(np.where(victim & (s_prio == top[:, None]), s_start, np.inf))


def row_min(values: np.ndarray) -> np.ndarray:
    """Each row's minimum, one column at a time: numpy's ``min(axis=1)`` over a few
    columns costs four times more (a reduction per row)."""
    if values.shape[1] == 0:
        return np.full(len(values), np.inf)
    least: np.ndarray = values[:, 0].copy()
    for j in range(1, values.shape[1]):
        np.minimum(least, values[:, j], out=least)
    return least


def _listing(a: object, rows: np.ndarray, order: np.ndarray, victim: np.ndarray) -> Listing | None:
    """The rows' victims for a decision record (already in MoreImportantPod order)."""
    if not order.shape[1]:
        return None
    where = order + (rows * a.width)[:, None]  # type: ignore[attr-defined]
    return a.pods.reshape(-1), where, victim, {}  # type: ignore[attr-defined]


def _evaluate_alike(
    a: object,
    pod: Pod,
    rows: np.ndarray,
    key: int,
    need: tuple[float, float, float, int],
    listing: bool,
) -> tuple[np.ndarray, tuple[np.ndarray, ...], Listing | None]:
    """:func:`_evaluate` when every row has one signature and needs the same room (a
    storm's full nodes): the reprieve runs once, on the first row, and its verdict, keys
    and victim columns hold for every row, so they are filled in, not gathered; per row
    only the start times of the top-priority victims' columns are read (rule 5), and,
    when ``listing``, the victims' own columns (the same pods as the broadcast
    columns would give, in the same order).

    The reprieve's outcome is a function of the signature (``key``, when not a row of
    its own), the need and the pod's priority, so it is kept per such triple
    (:attr:`NodeArrays.reprieves`): a storm's preemptors, alike, reprieve once."""
    reprieves = a.reprieves  # type: ignore[attr-defined]
    memo = (key, need, pod.priority) if key >= 0 else None
    result = reprieves.get(memo) if memo is not None else None
    if result is None:
        result = _select_row(a, pod, int(rows[0]), need)
        if memo is not None:
            if len(reprieves) >= MAX_REPRIEVES:
                reprieves.clear()
            reprieves[memo] = result
    ok1, top1, total1, count1, order1, victim1, _ = result
    size = len(rows)
    ok = np.full(size, ok1, dtype=bool)
    top, total = np.full(size, top1, dtype=np.int64), np.full(size, total1, dtype=np.int64)
    nvictims = np.full(size, count1, dtype=np.int64)
    if not order1:
        return ok, (top, total, nvictims, np.zeros(size)), None
    latest = latest_in_columns(a, rows, result)
    listed: Listing | None = None
    if listing:
        columns = np.array([c for c, v in zip(order1, victim1, strict=True) if v], dtype=np.int64)
        where = columns + (rows * a.width)[:, None]  # type: ignore[attr-defined]
        victim = np.ones(where.shape, dtype=bool)
        listed = (a.pods.reshape(-1), where, victim, {})  # type: ignore[attr-defined]
    return ok, (top, total, nvictims, latest), listed


def _select(
    a: object, pod: Pod, rows: np.ndarray, need: tuple[np.ndarray, ...] | None
) -> tuple[np.ndarray, ...]:
    """The reprieve on ``rows``: (ok, top, total, victim count, the columns in
    MoreImportantPod order (rows x depth), which of them are victims, their
    priorities)."""
    used = a.used[rows]  # type: ignore[attr-defined]
    width = int(used.max()) if len(rows) else 0
    prio = a.prio[rows, :width]  # type: ignore[attr-defined]
    lower = prio < pod.priority
    counts = np.count_nonzero(lower, axis=1)
    if width == 0 or not counts.any():
        none = np.zeros(len(rows), dtype=bool)
        zeros = np.zeros(len(rows))
        empty = np.zeros((len(rows), 0), dtype=np.int64)
        return none, zeros, zeros, zeros, empty, empty.astype(bool), empty
    if need is None:
        need_g, need_c, need_m, need_n = pod.gpus, pod.cpu, pod.mem, 1
    else:
        need_g, need_c, need_m, need_n = (x[rows] for x in need)
    pack = a.pack[rows, :width]  # type: ignore[attr-defined]  # [row, column, (g, c, m, start)]
    # 2. every lower-priority pod removed, added back in node order (the same floats)
    g = a.free_gpus[rows].astype(np.float64)  # type: ignore[attr-defined]
    c = a.free_cpu[rows] + 1e-9  # type: ignore[attr-defined]
    m = a.free_mem[rows] + 1e-9  # type: ignore[attr-defined]
    n = a.max_pods[rows] - a.npods[rows] + counts  # type: ignore[attr-defined]
    added = np.where(lower[..., None], pack[..., :3], 0.0)
    for j in range(width):  # x + 0.0 is x: a hole or a higher-priority pod changes nothing
        g = g + added[:, j, 0]
        c = c + added[:, j, 1]
        m = m + added[:, j, 2]
    ok = (counts > 0) & (need_g <= g) & (need_c <= c) & (need_m <= m) & (need_n <= n)
    # 3-4. MoreImportantPod order: higher priority, earlier start, then node order (the
    # sort is stable and columns are in node order)
    depth = int(counts.max())
    order = np.lexsort((pack[:, :, 3], np.where(lower, -prio, BIG)), axis=1)[:, :depth]
    flat = order + (np.arange(len(rows)) * width)[:, None]
    s_prio = prio.ravel()[flat]
    ordered = pack.reshape(-1, 4)[flat]
    s_g, s_c, s_m = (ordered[:, :, i] for i in range(3))
    victim = np.zeros((len(rows), depth), dtype=bool)
    for j in range(depth):
        active = ok & (j < counts)
        g_back, c_back, m_back = g - s_g[:, j], c - s_c[:, j], m - s_m[:, j]
        keep = active & (need_g <= g_back) & (need_c <= c_back) & (need_m <= m_back) & (need_n < n)
        g = np.where(keep, g_back, g)
        c = np.where(keep, c_back, c)
        m = np.where(keep, m_back, m)
        n = n - keep
        victim[:, j] = active > keep
    nvictims = np.count_nonzero(victim, axis=1)
    ok &= nvictims > 0
    # victims are in MoreImportantPod order: the first one has the top priority
    top = s_prio[np.arange(len(rows)), np.argmax(victim, axis=1)]
    total = np.where(victim, s_prio + INT32_OFFSET, 0).sum(axis=1)
    return ok, top, total, nvictims, order, victim, s_prio


def _select_few(
    a: object, pod: Pod, rows: np.ndarray, need: tuple[np.ndarray, ...] | None
) -> tuple[np.ndarray, ...]:
    """:func:`_select` for a few rows, one at a time in Python, with the same floats:
    every lower pod added back in column order, then the reprieve in MoreImportantPod
    order (priority, start, column)."""
    return gathered([_select_row(a, pod, row, _need_at(pod, need, row)) for row in rows.tolist()])


Reprieved = tuple[bool, int, int, int, list[int], list[bool], list[int]]
"""One row's reprieve worked out in Python (:func:`_select_row`): candidate, top victim
priority, sum of victim priorities + 2^31, victim count, the lower-priority columns in
reprieve order, which of them are victims, their priorities."""


def latest_in_columns(a: object, rows: np.ndarray, outcome: tuple[Any, ...]) -> np.ndarray:
    """Per row of ``rows`` (all alike, of one :data:`Reprieved` ``outcome``, or one that
    begins as it does), the latest start among the top-priority victims' columns (rule
    5): the outcome fixes the columns, not their times. One column at a time: a 2-D
    gather from the 3-D pack costs five times more."""
    _, top, _, _, columns, victims, priorities = outcome[:7]
    tops = [c for c, v, p in zip(columns, victims, priorities, strict=True) if v and p == top]
    if not tops:
        return np.full(len(rows), np.inf)
    pack = a.pack  # type: ignore[attr-defined]
    latest: np.ndarray = pack[rows, tops[0], 3]
    for column in tops[1:]:
        latest = np.minimum(latest, pack[rows, column, 3])
    return latest


def gathered(results: Sequence[tuple[Any, ...]]) -> tuple[np.ndarray, ...]:
    """Rows' :data:`Reprieved` outcomes (or ones that begin as they do) as the arrays
    :func:`_select` returns: (ok, top, total, victim count, columns padded to the
    longest, victims, their priorities)."""
    depth = max(len(r[4]) for r in results)
    order = np.zeros((len(results), depth), dtype=np.int64)
    victim = np.zeros((len(results), depth), dtype=bool)
    s_prio = np.zeros((len(results), depth), dtype=np.int64)
    for i, r in enumerate(results):
        k = len(r[4])
        order[i, :k], victim[i, :k], s_prio[i, :k] = r[4], r[5], r[6]
    ok = np.array([r[0] for r in results], dtype=bool)
    top, total, nvictims = (np.array([r[j] for r in results]) for j in (1, 2, 3))
    return ok, top, total, nvictims, order, victim, s_prio


def _need_at(
    pod: Pod, need: tuple[np.ndarray, ...] | None, row: int
) -> tuple[float, float, float, int]:
    """What the pod needs free on ``row`` (its request when no node has claims)."""
    if need is None:
        return pod.gpus, pod.cpu, pod.mem, 1
    return float(need[0][row]), float(need[1][row]), float(need[2][row]), int(need[3][row])


def _select_row(a: object, pod: Pod, row: int, need: tuple[float, float, float, int]) -> Reprieved:
    used = int(a.used[row])  # type: ignore[attr-defined]
    prio = a.prio[row, :used].tolist()  # type: ignore[attr-defined]
    pack = a.pack[row, :used].tolist()  # type: ignore[attr-defined]
    lower = [col for col in range(used) if prio[col] < pod.priority]
    g = float(a.free_gpus[row])  # type: ignore[attr-defined]
    c = float(a.free_cpu[row]) + 1e-9  # type: ignore[attr-defined]
    m = float(a.free_mem[row]) + 1e-9  # type: ignore[attr-defined]
    n = int(a.max_pods[row] - a.npods[row]) + len(lower)  # type: ignore[attr-defined]
    for col in lower:
        g, c, m = g + pack[col][0], c + pack[col][1], m + pack[col][2]
    need_g, need_c, need_m, need_n = need
    ok = bool(lower) and need_g <= g and need_c <= c and need_m <= m and need_n <= n
    order = sorted(lower, key=lambda col: (-prio[col], pack[col][3], col))
    victim = [False] * len(order)
    if ok:
        for j, col in enumerate(order):
            g_back, c_back, m_back = g - pack[col][0], c - pack[col][1], m - pack[col][2]
            if need_g <= g_back and need_c <= c_back and need_m <= m_back and need_n < n:
                g, c, m, n = g_back, c_back, m_back, n - 1
            else:
                victim[j] = True
    chosen = [prio[col] for col, v in zip(order, victim, strict=True) if v]
    ok = ok and bool(chosen)
    top = chosen[0] if chosen else (prio[order[0]] if order else 0)
    total = sum(p + INT32_OFFSET for p in chosen)
    return ok, top, total, len(chosen), order, victim, [prio[col] for col in order]
