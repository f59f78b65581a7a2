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
from scheduler_core.fast_group import reprieve, room_fit
from scheduler_core.fast_nodes import EVICT_WHOLE, IN_GROUP
from scheduler_core.fast_preemption import BIG, FEW, Decided, in_chunks, visit_order
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

    def evaluate(chunk: np.ndarray, wanted: int, listing: bool) -> tuple[Any, ...]:
        return _evaluate(host, policy, pod, chunk, wanted, listing)

    for chunk, (ok, cost, victims) in in_chunks(rotated, limit, evaluate, listing):
        rows_found.append(chunk[ok])
        costs_found.append(cost[ok])
        if listing:
            flat, counts = victims if isinstance(victims, tuple) else _flatten(victims, ok)
            victims_found.append(flat)
            counts_found.append(counts[ok])
    if not any(len(rows) for rows in rows_found):
        return None
    rows = np.concatenate(rows_found)[:limit]
    costs = np.concatenate(costs_found)[:limit]
    order = np.argsort(costs, kind="stable")  # the reference's stable sort by cost
    best = policy.select_victims(host, pod, cluster.nodes[int(rows[order[0]])])
    assert best is not None  # the arrays found victims there
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
) -> tuple[np.ndarray, np.ndarray, Any]:
    """The reference's ``select_victims`` for each of ``rows``: whether it is a
    candidate, the cost of its victims and (``listing``) the victims in the reference's
    order: one object array of every candidate row's victims, row by row, with each
    row's count, or (rows holding All-mode units, decided by the reference) a list per
    row. Rows past the ``wanted``-th candidate may be left out."""
    a = host.cluster.arrays
    n_rows = len(rows)
    width = int(a.used[rows].max()) if n_rows else 0
    prio = a.prio[rows, :width]
    lower = prio < pod.priority
    counts = np.count_nonzero(lower, axis=1)
    if width == 0 or not counts.any():
        none = np.zeros(n_rows, dtype=bool)
        return none, np.zeros(n_rows), (np.empty(0, dtype=object), np.zeros(n_rows, np.int64))
    flags = a.flags[rows, :width]
    spanning = (((flags & EVICT_WHOLE) != 0) & lower).any(axis=1)
    pack = a.pack[rows, :width]
    fit, left = room_fit(host, pod, rows, pack, lower, counts)  # as remove_on
    ok = fit & ~spanning  # rows holding an All-mode unit: the reference decides them
    # the cost model, once per lower-priority pod of the rows that can be candidates
    full = np.zeros((n_rows, width))
    rest = np.zeros((n_rows, width))
    group = np.zeros((n_rows, width), dtype=np.int64)
    cells = np.flatnonzero((lower & ok[:, None]).ravel())
    table = getattr(host, "cost_table", None)

    def pods() -> np.ndarray:
        return a.pods[rows, :width].ravel()[cells]

    if table is not None:  # the cost model on arrays, every pod at once
        seqs = a.seq[rows, :width].ravel()[cells]
        bound_at = pack[..., 3].ravel()[cells]
        weights = policy.weights
        pod_full, pod_rest, workloads = table.costs(
            pods, seqs, bound_at, policy.now, weights, policy._costs
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
    gpus = np.maximum(1.0, pack[..., 0])
    lone = (flags & IN_GROUP) == 0
    start = pack[..., 3]
    unit_cost = 0 + full  # sum(...) from 0, as _unit_cost
    best_cost = np.full(n_rows, np.inf)
    best_found = np.zeros(n_rows, dtype=bool)
    best_where: np.ndarray | None = None
    best_victim: np.ndarray | None = None
    depth = int(counts.max())
    base = (np.arange(n_rows) * width)[:, None]
    for key in (-unit_cost, -unit_cost / gpus):  # order, order_by_density
        order = np.lexsort((start, lone, np.where(lower, -prio, BIG), key, ~lower), axis=1)
        order = order[:, :depth]
        flat = order + base
        s_prio = prio.ravel()[flat]
        ordered = pack.reshape(-1, 4)[flat]
        victim = reprieve(ok, counts, ordered, left)
        found = ok & victim.any(axis=1)
        # victims by MoreImportantPod, stably (the reprieve order breaks ties)
        s_start = ordered[:, :, 3]
        resort = np.lexsort(
            (np.where(victim, s_start, np.inf), np.where(victim, -s_prio, BIG)), axis=1
        )
        where = np.take_along_axis(flat, resort, axis=1)
        victim = np.take_along_axis(victim, resort, axis=1)
        v_full = full.ravel()[where]
        v_rest = rest.ravel()[where]
        v_group = group.ravel()[where]
        total = np.zeros(n_rows)
        for j in range(depth):  # cost_of: a group's loss once, in the victims' order
            seen = ((v_group[:, :j] == v_group[:, j : j + 1]) & victim[:, :j]).any(axis=1)
            part = np.where(seen, v_rest[:, j], v_full[:, j])
            total = np.where(victim[:, j], total + part, total)
        better = found & (~best_found | (total < best_cost))
        best_cost = np.where(better, total, best_cost)
        best_found |= found
        if best_where is None or best_victim is None:
            best_where, best_victim = where, victim
        else:
            best_where = np.where(better[:, None], where, best_where)
            best_victim = np.where(better[:, None], victim, best_victim)
    ok = best_found
    assert best_where is not None
    assert best_victim is not None
    if not spanning.any():
        if not listing:
            return ok, best_cost, None
        chosen = best_victim & ok[:, None]  # row by row, in the victims' order
        flat = a.pods[rows, :width].ravel()[best_where[chosen]]
        return ok, best_cost, (flat, np.count_nonzero(chosen, axis=1))
    listed: list[list[Pod]] = []
    if listing:
        all_pods = a.pods[rows, :width].ravel()
        listed = [
            all_pods[best_where[i][best_victim[i]]].tolist() if ok[i] else [] for i in range(n_rows)
        ]
    _by_reference(host, policy, pod, rows, spanning, ok, best_cost, wanted, listed, listing)
    return ok, best_cost, listed


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
