"""CheckpointAwarePreemption's single-pod decision with numpy arrays (issue #14).

The reference is ``CheckpointAwarePreemption.find_candidates`` + ``select_victims`` in
``plugins/workload_preemption.py``, kept as it is. Per candidate node it removes every
lower-priority unit (as :mod:`scheduler_core.fast_group` does, the same floats), then
reprieves in two orders, most expensive first and most expensive per GPU first (each an
array sort, moreImportantVictim breaking ties, node order the last), keeps the order whose
victims cost less (the cost order on a tie), and the cheapest candidate wins (the first in
visit order on a tie), instead of §4.4's rules.

The per-pod cost is the cost model's, computed for every lower-priority pod of the nodes
looked at at once (:mod:`scheduler_core.fast_costs`, the same floats as ``_costs``); a
host without the cost arrays makes one Python call per pod. A victim
set's cost is summed in the reference's order (victims by MoreImportantPod, a group's
loss counted once), so each float is the one ``cost_of`` computes. Rows holding a unit of
an All-mode group are decided by the reference itself. Listing, the candidates' victims
stay one object array (no Python list per candidate).
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

import numpy as np

from scheduler_core.decisions import CHEAPEST, CompactCandidates
from scheduler_core.fast_group import reprieve, room_fit, row_kinds
from scheduler_core.fast_nodes import EVICT_WHOLE, IN_GROUP
from scheduler_core.fast_preemption import ALIKE_MIN, BIG, FEW, Decided, in_chunks, visit_order
from scheduler_core.model import Node, Pod

if TYPE_CHECKING:
    from scheduler_core.plugins import PreemptionHost
    from scheduler_core.plugins.default_preemption import Candidate
    from scheduler_core.plugins.workload_preemption import CheckpointAwarePreemption


def decide(
    host: PreemptionHost, policy: CheckpointAwarePreemption, pod: Pod, *, listing: bool
) -> Decided | None:
    """The candidate the reference chooses, every candidate (``listing``: in the order
    the reference records them, cheapest first, with their costs) and the rule; None when
    no node is a candidate. Makes the reference's random draw."""
    with policy.deciding():
        return _decide(host, policy, pod, listing)


def _decide(
    host: PreemptionHost, policy: CheckpointAwarePreemption, pod: Pod, listing: bool
) -> Decided | None:
    cluster = host.cluster
    policy.now = host.now
    visit = visit_order(host, policy, pod)
    if visit is None:
        return None
    rotated, k, limit = visit
    rotated = rotated[cluster.reach_array[k, rotated] >= pod.gpus]
    if len(rotated) <= FEW:
        return _few(host, policy, pod, [cluster.nodes[i] for i in rotated.tolist()], limit)
    rows_found: list[np.ndarray] = []
    costs_found: list[np.ndarray] = []
    victims_found: list[np.ndarray] = []
    counts_found: list[np.ndarray] = []
    picks: list[tuple[np.ndarray, Picked | None]] = []

    def evaluate(chunk: np.ndarray, wanted: int, listing: bool) -> tuple[Any, ...]:
        return _evaluate(host, policy, pod, chunk, wanted, listing)

    for chunk, (ok, cost, victims, picked) in in_chunks(rotated, limit, evaluate, listing):
        rows_found.append(chunk[ok])
        costs_found.append(cost[ok])
        picks.append((np.flatnonzero(ok), picked))
        if listing:
            flat, counts = victims if isinstance(victims, tuple) else _flatten(victims, ok)
            victims_found.append(flat)
            counts_found.append(counts[ok])
    if not any(len(rows) for rows in rows_found):
        return None
    rows = np.concatenate(rows_found)[:limit]
    costs = np.concatenate(costs_found)[:limit]
    order = np.argsort(costs, kind="stable")  # the reference's stable sort by cost
    best = _winner(host, policy, pod, int(rows[order[0]]), int(order[0]), picks)
    listed = None
    if listing:
        counts = np.concatenate(counts_found)[:limit]
        flat = np.concatenate(victims_found)
        # each candidate's victims, the candidates cheapest first
        starts = np.cumsum(counts) - counts
        chosen = counts[order]
        moved = np.repeat(starts[order] - (np.cumsum(chosen) - chosen), chosen)
        flat = flat[moved + np.arange(len(moved))]
        listed = CompactCandidates(cluster.nodes, rows[order], flat, chosen, costs[order])
    return best, listed, CHEAPEST


Picked = tuple[np.ndarray, np.ndarray, np.ndarray]
"""A chunk's chosen reprieve per row (:func:`_cheaper`): the columns in the victims'
order, the mask of the victims among them, and the row's count of lower-priority pods."""


def _winner(
    host: PreemptionHost,
    policy: CheckpointAwarePreemption,
    pod: Pod,
    row: int,
    position: int,
    picks: list[tuple[np.ndarray, Picked | None]],
) -> Candidate:
    """The chosen candidate as ``select_victims`` builds it on node ``row`` (the
    ``position``-th candidate found): its victims in MoreImportantPod order and the
    pods put back, in the order they were tried, from the arrays' reprieve (no PDB on
    the array path, so none is violated or protected). A row whose chunk held an
    All-mode unit was decided by the reference, which decides it again here."""
    from scheduler_core.plugins.default_preemption import REPRIEVED, Candidate

    node = host.cluster.nodes[row]
    for candidates, picked in picks:
        if position >= len(candidates):
            position -= len(candidates)
            continue
        if picked is None:
            break
        cols, victim, counts = picked
        i = int(candidates[position])
        pods = host.cluster.arrays.pods[row]
        n_victims = int(np.count_nonzero(victim[i]))
        victims: list[Pod] = pods[cols[i, :n_victims]].tolist()
        kept: list[Pod] = pods[cols[i, n_victims : int(counts[i])]].tolist()
        return Candidate(node, victims, 0, [(p, REPRIEVED) for p in kept])
    best = policy.select_victims(host, pod, node)
    assert best is not None  # the arrays found victims there
    return best


def _flatten(victims: list[list[Pod]], ok: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """Per-row victim lists as one object array of the candidate rows' victims, in row
    order, and each row's count (0 where ``ok`` is False)."""
    chosen = [v if good else [] for v, good in zip(victims, ok.tolist(), strict=True)]
    flat = np.empty(sum(len(v) for v in chosen), dtype=object)
    flat[:] = [p for v in chosen for p in v]
    return flat, np.array([len(v) for v in chosen], dtype=np.int64)


def _few(
    host: PreemptionHost,
    policy: CheckpointAwarePreemption,
    pod: Pod,
    nodes: list[Node],
    limit: int,
) -> Decided | None:
    """The reference steps on a short visit order: candidates in order up to ``limit``
    (no PDBs), then the cheapest (stable: the first in visit order on a tie)."""
    candidates: list[Candidate] = []
    for node in nodes:
        found = policy.select_victims(host, pod, node)
        if found is not None:
            candidates.append(found)
            if len(candidates) >= limit:
                break
    if not candidates:
        return None
    candidates.sort(key=lambda c: policy.cost_of(host, c.victims))
    policy._considered = candidates
    return candidates[0], candidates, CHEAPEST


def _evaluate(
    host: PreemptionHost,
    policy: CheckpointAwarePreemption,
    pod: Pod,
    rows: np.ndarray,
    wanted: int,
    listing: bool,
) -> tuple[np.ndarray, np.ndarray, Any, Picked | None]:
    """The reference's ``select_victims`` for each of ``rows``: whether it is a
    candidate, the cost of its victims and (``listing``) the victims in the reference's
    order: one object array of every candidate row's victims, row by row, with each
    row's count, or (rows holding All-mode units, decided by the reference) a list per
    row; last, each row's chosen reprieve (:data:`Picked`, None where the reference
    decided rows), from which the winner's candidate is built without deciding its node
    again. Rows past the ``wanted``-th candidate may be left out.

    Rows of one kind (:func:`_kinds`: the same shapes in the same columns, whose pods
    compare alike in cost, cost per GPU, start and workload) are reprieved once and
    their victims broadcast, each row summing its own costs: a chunk of ``ALIKE_MIN``
    rows or more with at most half as many kinds (the nodes of one job, their pods
    started in one order, even each at a moment of its own) reprieves one row of each."""
    a = host.cluster.arrays
    n_rows = len(rows)
    width = int(a.used[rows].max()) if n_rows else 0
    prio = a.prio[rows, :width]
    lower = prio < pod.priority
    counts = np.count_nonzero(lower, axis=1)
    if width == 0 or not counts.any():
        none = np.zeros(n_rows, dtype=bool)
        empty = (np.empty(0, dtype=object), np.zeros(n_rows, np.int64))
        return none, np.zeros(n_rows), empty, None
    flags = a.flags[rows, :width]
    spanning = (((flags & EVICT_WHOLE) != 0) & lower).any(axis=1)
    pack = a.pack[rows, :width]
    # the cost model, once per lower-priority pod of the rows the arrays decide
    cells = np.flatnonzero((lower & ~spanning[:, None]).ravel())
    full, rest, group = _cell_costs(host, policy, rows, width, pack, cells)
    kinds = _kinds(host, rows, lower, pack, full, group) if n_rows >= ALIKE_MIN else None
    pick = slice(None) if kinds is None else kinds[0]
    found, cols, victim, seen = _orders(
        host,
        pod,
        rows[pick],
        prio[pick],
        lower[pick],
        counts[pick],
        flags[pick],
        pack[pick],
        full[pick],
        group[pick],
        spanning[pick],
    )
    if kinds is not None:  # each row takes its kind's victims, both orders
        both = np.concatenate((kinds[1], kinds[1] + len(kinds[0])))
        found, cols, victim, seen = found[both], cols[both], victim[both], seen[both]
    ok, best_cost, best_cols, best_victim = _cheaper(found, cols, victim, seen, full, rest)
    if not spanning.any():
        picked = (best_cols, best_victim, counts)
        if not listing:
            return ok, best_cost, None, picked
        chosen = best_victim & ok[:, None]  # row by row, in the victims' order
        where = (rows * a.width)[:, None] + best_cols  # into a.pods, flat
        flat = a.pods.ravel()[where[chosen]]
        return ok, best_cost, (flat, np.count_nonzero(chosen, axis=1)), picked
    listed: list[list[Pod]] = []
    if listing:
        all_pods = a.pods[rows, :width]
        listed = [
            all_pods[i][best_cols[i][best_victim[i]]].tolist() if ok[i] else []
            for i in range(n_rows)
        ]
    _by_reference(host, policy, pod, rows, spanning, ok, best_cost, wanted, listed, listing)
    return ok, best_cost, listed, None


def _cell_costs(
    host: PreemptionHost,
    policy: CheckpointAwarePreemption,
    rows: np.ndarray,
    width: int,
    pack: np.ndarray,
    cells: np.ndarray,
) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """Per cell of ``rows`` (0 outside ``cells``, flat indices): the pod's weighted cost
    with and without its group's loss, and its workload's index."""
    a = host.cluster.arrays
    n_rows = len(rows)
    full = np.zeros((n_rows, width))
    rest = np.zeros((n_rows, width))
    group = np.zeros((n_rows, width), dtype=np.int64)
    table = getattr(host, "cost_table", None)

    def pods() -> np.ndarray:
        picked: np.ndarray = a.pods[rows, :width].ravel()[cells]
        return picked

    if table is not None:  # the cost model on arrays, every pod at once
        seqs = a.seq[rows, :width].ravel()[cells]
        bound_at = pack[..., 3].ravel()[cells]
        pod_full, pod_rest, workloads = table.costs(
            pods, seqs, bound_at, policy.now, policy.weights, policy._costs
        )
        full.ravel()[cells] = pod_full
        rest.ravel()[cells] = pod_rest
        group.ravel()[cells] = workloads
    else:  # a host without the arrays: one Python call per pod
        costs = policy._costs
        weighed: list[Pod] = pods().tolist()
        values = [costs(p) for p in weighed]
        full.ravel()[cells] = [v[0] for v in values]
        rest.ravel()[cells] = [v[1] for v in values]
        group.ravel()[cells] = [p.workload.idx for p in weighed]
    return full, rest, group


_HASH = np.random.default_rng(14).integers(1, 2**63, 4096, dtype=np.int64).astype(np.uint64) | 1
"""Odd multipliers for :func:`_kinds`' row hashes (fixed: a run stays a pure function
of its inputs; a collision only costs the check that follows)."""


def _kinds(
    host: PreemptionHost,
    rows: np.ndarray,
    lower: np.ndarray,
    pack: np.ndarray,
    full: np.ndarray,
    group: np.ndarray,
) -> tuple[np.ndarray, np.ndarray] | None:
    """The first row of each kind of row and every row's kind, or None where more than
    half the rows are of a kind of their own (then sharing pays nothing back).

    Two rows are of one kind when their group signatures are (:meth:`NodeArrays.
    group_signature_ids`: free counters, the pods' priorities, requests and group flags
    in the same columns; the lower-priority columns and the room follow) and their
    lower-priority pods compare alike, column against column: in cost, in cost per GPU
    and in start time (less, equal or greater: each row's dense ranks), and in which of
    them share a workload. Those comparisons are all that both reprieve orders, the
    victims' MoreImportantPod order (its ties keep the reprieve order) and cost_of's "a
    group's loss once" read, so rows of one kind evict the same columns, listed in the
    same order, with the same members counted at their group's loss: only the floats
    summed differ, and each row sums its own (:func:`_cheaper`). Pods each started at a
    moment of their own are still of one kind where their order is the same. A row
    whose nominations claim room is a kind of its own. A row hash proposes the kinds;
    rows are compared whole before they are merged."""
    n_rows, width = full.shape
    left, right = _PAIRS[width] if width < len(_PAIRS) else (None, None)
    if left is None or right is None:
        return None
    sig = row_kinds(host.cluster, rows)
    if len(np.unique(sig)) * 2 > n_rows:
        return None
    # per pair of columns: each key compared (0 equal, 1 greater, 2 less), the workloads
    # shared or not
    keys = np.stack(
        (full, full / np.maximum(1.0, pack[..., 0]), np.where(lower, pack[..., 3], 0.0))
    )
    a, b = keys[:, :, left], keys[:, :, right]
    code = (a > b).view(np.uint8) + 2 * (a < b).view(np.uint8)
    marks = np.where(lower, group, -1 - np.arange(width))
    shared = (marks[:, left] == marks[:, right]).view(np.uint8)
    key = np.empty((n_rows, 1 + len(left)), dtype=np.int64)
    key[:, 0] = sig
    key[:, 1:] = code[0] + 3 * code[1] + 9 * code[2] + 27 * shared
    hashed = (key.view(np.uint64) * _HASH[: key.shape[1]]).sum(axis=1)  # wraps: checked below
    _, first, inverse = np.unique(hashed, return_index=True, return_inverse=True)
    if len(first) * 2 > n_rows or not (key[first][inverse] == key).all():
        return None
    return first, inverse


_PAIRS = [np.triu_indices(width, 1) if width > 1 else (None, None) for width in range(17)]
"""Per row width up to 16 pods, every pair of columns (:func:`_kinds`; wider rows are
each reprieved, the pairs growing as the width squared)."""


def _orders(
    host: PreemptionHost,
    pod: Pod,
    rows: np.ndarray,
    prio: np.ndarray,
    lower: np.ndarray,
    counts: np.ndarray,
    flags: np.ndarray,
    pack: np.ndarray,
    full: np.ndarray,
    group: np.ndarray,
    spanning: np.ndarray,
) -> tuple[np.ndarray, np.ndarray, np.ndarray, np.ndarray]:
    """Both reprieve orders on each of ``rows`` (the cells of :func:`_evaluate`), the
    cost order's rows first, then the density order's: whether the order finds victims,
    its victims' columns in the reference's victims' order with the mask of the victims
    among them, and which victims an earlier victim of the same workload precedes
    (counted at ``rest``)."""
    n_rows, width = prio.shape
    fit, left = room_fit(host, pod, rows, pack, lower, counts)  # as remove_on
    ok = fit & ~spanning  # rows holding an All-mode unit: the reference decides them
    unit_cost = 0 + full  # sum(...) from 0, as _unit_cost
    density = unit_cost / np.maximum(1.0, pack[..., 0])
    # both orders at once, the cost order's rows first (numpy's per-call cost dominates
    # the few rows of alike nodes)
    key = np.concatenate((-unit_cost, -density))  # order, order_by_density
    start = np.concatenate((pack[..., 3], pack[..., 3]))
    lone = np.tile((flags & IN_GROUP) == 0, (2, 1))
    s_lower = np.tile(lower, (2, 1))
    by_prio = np.tile(np.where(lower, -prio, BIG), (2, 1))
    depth = int(counts.max())
    order = np.lexsort((start, lone, by_prio, key, ~s_lower), axis=1)[:, :depth]
    base = (np.tile(np.arange(n_rows), 2) * width)[:, None]
    flat = order + base
    s_prio = prio.ravel()[flat]
    ordered = pack.reshape(-1, 4)[flat]
    twice_ok = np.concatenate((ok, ok))
    victim = reprieve(
        twice_ok, np.concatenate((counts, counts)), ordered, tuple(np.tile(x, 2) for x in left)
    )
    found = twice_ok & victim.any(axis=1)
    # victims by MoreImportantPod, stably (the reprieve order breaks ties)
    resort = np.lexsort(
        (np.where(victim, ordered[:, :, 3], np.inf), np.where(victim, -s_prio, BIG)), axis=1
    )
    cols = np.take_along_axis(order, resort, axis=1)
    victim = np.take_along_axis(victim, resort, axis=1)
    seen = _seen_before(group.ravel()[cols + base], victim)
    return found, cols, victim, seen


def _cheaper(
    found: np.ndarray,
    cols: np.ndarray,
    victim: np.ndarray,
    seen: np.ndarray,
    full: np.ndarray,
    rest: np.ndarray,
) -> tuple[np.ndarray, np.ndarray, np.ndarray, np.ndarray]:
    """Per row, from both orders' victims (:func:`_orders`, a row of each per row):
    whether the arrays make it a candidate, the cost of the cheaper victim set (the cost
    order's on a tie), and that set as columns with the mask of the victims. Each cost
    is summed from the row's own costs in the victims' order, as cost_of sums them."""
    n_rows, width = full.shape
    where = cols + (np.tile(np.arange(n_rows), 2) * width)[:, None]
    part = np.where(victim, np.where(seen, rest.ravel()[where], full.ravel()[where]), 0.0)
    total = np.zeros(2 * n_rows)
    for j in range(cols.shape[1]):  # summed in order; + 0.0 past the victims changes nothing
        total = total + part[:, j]
    by_cost, by_density = found[:n_rows], found[n_rows:]
    # the cheaper order, the cost order's on a tie (min keeps the first)
    denser = by_density & (~by_cost | (total[n_rows:] < total[:n_rows]))
    best_found = by_cost | by_density
    best_cost = np.where(denser, total[n_rows:], np.where(by_cost, total[:n_rows], np.inf))
    best_cols = np.where(denser[:, None], cols[n_rows:], cols[:n_rows])
    best_victim = np.where(denser[:, None], victim[n_rows:], victim[:n_rows])
    return best_found, best_cost, best_cols, best_victim


def _seen_before(v_group: np.ndarray, victim: np.ndarray) -> np.ndarray:
    """cost_of's "a group's loss once": per position, whether an earlier victim of the
    row belongs to the same workload. Each row's non-victims get a mark of their own
    (below every workload index), a stable sort per row puts equal marks in position
    order, and a mark equal to the one before it in that order has an earlier
    occurrence. One sort of the rows instead of every pair of positions compared (the
    pairs were a quarter of a decision over 1,000 distinct nodes)."""
    depth = v_group.shape[1]
    marked = np.where(victim, v_group, -1 - np.arange(depth))
    by = np.argsort(marked, axis=1, kind="stable")
    ranked = np.take_along_axis(marked, by, axis=1)
    again = np.zeros(marked.shape, dtype=bool)
    again[:, 1:] = ranked[:, 1:] == ranked[:, :-1]
    seen = np.empty_like(again)
    np.put_along_axis(seen, by, again, axis=1)
    return seen


def _by_reference(
    host: PreemptionHost,
    policy: CheckpointAwarePreemption,
    pod: Pod,
    rows: np.ndarray,
    spanning: np.ndarray,
    ok: np.ndarray,
    cost: np.ndarray,
    wanted: int,
    listed: list[list[Pod]],
    listing: bool,
) -> None:
    """Rows holding a unit of an All-mode group, decided by the reference in visit order
    until ``wanted`` candidates are found (later rows would not be looked at)."""
    before = np.cumsum(ok) - ok
    extra = 0
    for position in np.flatnonzero(spanning).tolist():
        if int(before[position]) + extra >= wanted:
            break
        found = policy.select_victims(host, pod, host.cluster.nodes[int(rows[position])])
        if found is None:
            continue
        ok[position] = True
        extra += 1
        cost[position] = policy.cost_of(host, found.victims)
        if listing:
            listed[position] = found.victims
