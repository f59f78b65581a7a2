"""WorkloadAwarePreemption's single-pod decision with numpy arrays (issue #14).

The reference is ``_select_in_order`` in ``plugins/workload_preemption.py``, kept as it
is. It differs from DefaultPreemption's SelectVictimsOnNode in three ways, and so does
this path from :mod:`scheduler_core.fast_preemption`:

- the reprieve order is moreImportantVictim (KEP-5710 §6.2): higher priority, then a pod
  of a group before a lone pod, then the earlier start;
- the freed resources are summed as the reference's ``Headroom`` does (what the node has
  besides nominations, plus the removed pods' requests counted from zero), and the
  reprieve test is ``try_restore``'s (each resource left, less the pod, at least
  ``-1e-9``), so each float is the one the Python path computes;
- a pod whose group has disruptionMode All is a unit spanning nodes: a node holding one
  below the preemptor's priority is decided unit by unit (:func:`_spanning_rows`, on
  arrays, where each such unit has one pod on the node, as in kube-scheduler's
  workload-aware benchmark; else :func:`_spanning_row`, one node at a time), in visit
  order and only as far as the stop rule asks.

The candidate nodes, the numCandidates stop rule and the node-choice rules are those of
the ``pod`` path; the winner's victims are listed by the reference. With a decision
recorder every candidate's victims are listed as the reference lists them: the victims
sorted by MoreImportantPod (a stable sort of the moreImportantVictim order), one array
sort per chunk; a row the reference decides lists its own.
"""

from __future__ import annotations

from typing import TYPE_CHECKING, cast

import numpy as np

from scheduler_core.fast_nodes import EVICT_WHOLE, IN_GROUP, NodeArrays
from scheduler_core.fast_preemption import (
    ALIKE_MIN,
    BIG,
    FEW,
    FEW_KINDS,
    INT32_OFFSET,
    MAX_REPRIEVES,
    Decided,
    Listing,
    first_candidates,
    gathered,
    latest_in_columns,
    latest_of,
    pick_in_chunks,
    row_min,
    visit_order,
)
from scheduler_core.model import Node, Pod, Workload

if TYPE_CHECKING:
    from scheduler_core.cluster import Cluster
    from scheduler_core.plugins import PreemptionHost
    from scheduler_core.plugins.default_preemption import Candidate
    from scheduler_core.plugins.workload_preemption import (
        DecisionMemo,
        Unit,
        WorkloadAwarePreemption,
    )

TOLERANCE = 1e-9
"""The slack of the reference's comparisons (``row + 1e-9 >= need``, ``left - used >= -1e-9``)."""


def choose(host: PreemptionHost, policy: WorkloadAwarePreemption, pod: Pod) -> Candidate | None:
    """The candidate ``find_candidates`` + ``pick_one_node`` would choose under
    `workload-aware` when no PDB exists, or None; makes the same random draw."""
    decided = decide(host, policy, pod, listing=False)
    return None if decided is None else decided[0]


def decide(
    host: PreemptionHost, policy: WorkloadAwarePreemption, pod: Pod, *, listing: bool
) -> Decided | None:
    """The chosen candidate, every candidate (``listing``: with victims) and the rule, as
    the reference's ``find_candidates`` + ``pick_one_node_by_rule`` give them."""
    cluster = host.cluster
    visit = visit_order(host, policy, pod)
    if visit is None:
        return None
    rotated, k, limit = visit
    rotated = rotated[cluster.reach_array[k, rotated] >= pod.gpus]
    if len(rotated) <= FEW:
        return _few(host, policy, pod, [cluster.nodes[i] for i in rotated.tolist()], limit)
    found = pick_in_chunks(
        rotated,
        limit,
        lambda chunk, wanted, listed: _evaluate(host, policy, pod, chunk, wanted, listed),
        listing,
    )
    if found is None:
        return None
    best = policy.select_victims(host, pod, cluster.nodes[found.best])
    assert best is not None  # the arrays found victims there
    return best, found.candidates(cluster.nodes), found.rule


def _few(
    host: PreemptionHost, policy: WorkloadAwarePreemption, pod: Pod, nodes: list[Node], limit: int
) -> Decided | None:
    """The reference steps on a short visit order (the same stop rule, no PDBs)."""
    return first_candidates(nodes, limit, lambda node: policy.select_victims(host, pod, node))


def _free(host: PreemptionHost, pod: Pod, rows: np.ndarray) -> tuple[np.ndarray, ...]:
    """What the preemptor may use on each row besides nominations at its priority or above
    (``Cluster.free_besides_claims``: the same subtraction, skipped where nothing is
    claimed since ``x - 0.0`` is ``x``)."""
    cluster = host.cluster
    a = cluster.arrays
    free = [
        a.free_gpus[rows].astype(np.float64),
        a.free_cpu[rows],
        a.free_mem[rows],
        (a.max_pods[rows] - a.npods[rows]).astype(np.float64),
    ]
    if cluster.claimed_nodes:
        where = {node.idx: i for i, node in enumerate(cluster.claimed_nodes)}
        for position in np.flatnonzero(np.isin(rows, list(where))).tolist():
            node = cluster.nodes[int(rows[position])]
            row = cluster.free_besides_claims(node, pod.priority, pod.workload)
            for column, value in zip(free, row, strict=True):
                column[position] = value
    return tuple(free)


Evaluated = tuple[np.ndarray, tuple[np.ndarray, ...], "Listing | None"]
"""Per row: candidate or not; (top victim priority, sum of victim priorities + 2^31,
victim count, latest start of the top-priority victims); the victims when listing."""


def _evaluate(
    host: PreemptionHost,
    policy: WorkloadAwarePreemption,
    pod: Pod,
    rows: np.ndarray,
    wanted: int,
    listing: bool = False,
) -> Evaluated:
    """``_select_in_order`` for each of ``rows``: whether it is a candidate, per row (top
    victim priority, sum of victim priorities + 2^31, victim count, latest start of the
    top-priority victims) and, when ``listing``, the victims in the reference's order.
    Rows past the ``wanted``-th candidate may be left out.

    Rows of one group signature (:meth:`NodeArrays.group_signature_ids`) are reprieved
    alike, so one row per signature is evaluated and its outcome broadcast, as the
    ``pod`` path does: in Python for at most ``FEW_KINDS`` signatures
    (:func:`_evaluate_few`), on arrays where at most half the rows are distinct
    (:func:`_evaluate_alike`). A row whose nominations claim room is a class of its own;
    fewer than ``ALIKE_MIN`` rows are all evaluated."""
    if len(rows) < ALIKE_MIN or _spans(host.cluster.arrays, pod, rows):
        return _evaluate_rows(host, policy, pod, rows, wanted, listing)
    keys = row_kinds(host.cluster, rows)
    if len(keys) and (keys == keys[0]).all():  # a storm's full nodes: one signature
        first, inverse = np.zeros(1, dtype=np.int64), None
    else:
        _, first, inverse = np.unique(keys, return_index=True, return_inverse=True)
    if len(first) <= FEW_KINDS:
        few = _evaluate_few(host, pod, rows, keys[first].tolist(), first, inverse, listing)
        if few is not None:
            return few
    elif inverse is not None and len(first) * 2 <= len(rows):
        alike = _evaluate_alike(host, pod, rows, first, inverse, listing)
        if alike is not None:
            return alike
    return _evaluate_rows(host, policy, pod, rows, wanted, listing)


def _spans(a: NodeArrays, pod: Pod, rows: np.ndarray) -> bool:
    """Whether a row holds a unit of an All-mode group below the preemptor. Such rows are
    decided unit by unit (:func:`_evaluate_rows`), so neither alike path takes a chunk
    holding one, and the chunk's signatures would be worked out for nothing (about 17
    µs per changed row: a whole-gang eviction changes hundreds)."""
    width = int(a.used[rows].max()) if len(rows) else 0
    whole = (a.flags[rows, :width] & EVICT_WHOLE) != 0
    return bool((whole & (a.prio[rows, :width] < pod.priority)).any())


def row_kinds(cluster: Cluster, rows: np.ndarray) -> np.ndarray:
    """Each row's group signature (:meth:`NodeArrays.group_signature_ids`), a row whose
    nominations claim room being a kind of its own (a negative id)."""
    keys: np.ndarray = cluster.arrays.group_signature_ids(rows)
    if cluster.claimed_nodes:
        claimed = np.isin(rows, [node.idx for node in cluster.claimed_nodes])
        keys = np.where(claimed, -1 - np.arange(len(rows)), keys)
    return keys


Reprieved = tuple[bool, int, int, int, list[int], list[bool], list[int], bool]
"""One row's reprieve (:func:`_reprieve_row`): the ``pod`` path's outcome
(:data:`fast_preemption.Reprieved`, the columns in moreImportantVictim order), then
whether the row holds a unit of an All-mode group below the preemptor (then nothing
else is worked out)."""


def _evaluate_few(
    host: PreemptionHost,
    pod: Pod,
    rows: np.ndarray,
    keys: list[int],
    first: np.ndarray,
    inverse: np.ndarray | None,
    listing: bool,
) -> Evaluated | None:
    """:func:`_evaluate_alike` for a few signatures: each is reprieved in plain Python
    (:func:`_reprieve_row`; numpy's per-call cost dominates arrays of a few rows), its
    outcome kept per (signature, request, priority) in :attr:`NodeArrays.reprieves`, so
    a storm's preemptors, alike, reprieve once. ``inverse`` None: every row is the first
    one's. None where a row holds a unit of an All-mode group below the preemptor."""
    a: NodeArrays = host.cluster.arrays
    reprieves = a.reprieves
    outcomes: list[Reprieved] = []
    for key, position in zip(keys, first.tolist(), strict=True):
        memo = ("workload-aware", key, pod.gpus, pod.cpu, pod.mem, pod.priority)
        outcome = cast("Reprieved | None", reprieves.get(memo) if key >= 0 else None)
        if outcome is None:
            outcome = _reprieve_row(host, pod, int(rows[position]))
            if key >= 0:
                if len(reprieves) >= MAX_REPRIEVES:
                    reprieves.clear()
                reprieves[memo] = outcome
        if outcome[7]:
            return None
        outcomes.append(outcome)
    if inverse is not None:
        ok, top, total, nvictims, order, victim, s_prio = (x[inverse] for x in gathered(outcomes))
        features = (top, total, nvictims, latest_of(a, rows, order, victim, s_prio, top))
        if not listing:
            return ok, features, None
        s_start = a.pack[rows[:, None], order, 3]
        return ok, features, _listed(a, rows, order, victim, s_prio, s_start, {})
    ok1, top1, total1, count1 = outcomes[0][:4]
    size = len(rows)
    features = (
        np.full(size, top1, dtype=np.int64),
        np.full(size, total1, dtype=np.int64),
        np.full(size, count1, dtype=np.int64),
        latest_in_columns(a, rows, outcomes[0]),
    )
    listed = _listed_alike(a, rows, outcomes[0]) if listing else None
    return np.full(size, ok1, dtype=bool), features, listed


def _listed_alike(a: NodeArrays, rows: np.ndarray, outcome: Reprieved) -> Listing:
    """The victims of rows of one signature as the reference lists them: the outcome's
    victim columns (in moreImportantVictim order, so by priority) and, only where two
    victims share a priority, sorted per row by start (stably: the moreImportantVictim
    order breaks ties), as :func:`_listed` sorts them."""
    columns, victims, priorities = outcome[4:7]
    chosen = [(c, p) for c, v, p in zip(columns, victims, priorities, strict=True) if v]
    cols = np.array([c for c, _ in chosen], dtype=np.int64)
    where = cols + (rows * a.width)[:, None]
    ranks = [p for _, p in chosen]
    if len(set(ranks)) < len(ranks):
        starts = a.pack[rows[:, None], cols, 3]
        keys = np.broadcast_to(-np.array(ranks, dtype=np.int64), starts.shape)
        where = np.take_along_axis(where, np.lexsort((starts, keys), axis=1), axis=1)
    return a.pods.reshape(-1), where, np.ones(where.shape, dtype=bool), {}


def _reprieve_row(host: PreemptionHost, pod: Pod, row: int) -> Reprieved:
    """:func:`room_fit` and :func:`reprieve` on one row in plain Python, with the same
    floats: the free room (:func:`_free`), plus every lower-priority pod's request summed
    from zero in column order, less the preemptor; then each unit in moreImportantVictim
    order (priority, a group's pod first, start, column) kept while the room left covers
    it."""
    a: NodeArrays = host.cluster.arrays
    used = int(a.used[row])
    prio = a.prio[row, :used].tolist()
    pack = a.pack[row, :used].tolist()
    flags = a.flags[row, :used].tolist()
    lower = [col for col in range(used) if prio[col] < pod.priority]
    if any(flags[col] & EVICT_WHOLE for col in lower):
        return False, 0, 0, 0, [], [], [], True
    g, c, m, n = (float(x[0]) for x in _free(host, pod, np.array([row])))
    extra_g = extra_c = extra_m = 0.0
    for col in lower:
        extra_g += pack[col][0]
        extra_c += pack[col][1]
        extra_m += pack[col][2]
    g, c, m, n = g + extra_g, c + extra_c, m + extra_m, n + len(lower)
    ok = (
        bool(lower)
        and g >= pod.gpus
        and c + TOLERANCE >= pod.cpu
        and m + TOLERANCE >= pod.mem
        and n >= 1
    )
    g, c, m, n = g - pod.gpus, c - pod.cpu, m - pod.mem, n - 1
    order = sorted(
        lower, key=lambda col: (-prio[col], not flags[col] & IN_GROUP, pack[col][3], col)
    )
    victims = [False] * len(order)
    if ok:
        for j, col in enumerate(order):
            g_back, c_back, m_back = g - pack[col][0], c - pack[col][1], m - pack[col][2]
            if (
                g_back >= -TOLERANCE
                and c_back >= -TOLERANCE
                and m_back >= -TOLERANCE
                and n - 1 >= -TOLERANCE
            ):
                g, c, m, n = g_back, c_back, m_back, n - 1
            else:
                victims[j] = True
    chosen = [prio[col] for col, v in zip(order, victims, strict=True) if v]
    ok = ok and bool(chosen)
    top = max(chosen) if chosen else int(np.iinfo(np.int64).min)
    total = sum(p + INT32_OFFSET for p in chosen)
    return ok, top, total, len(chosen), order, victims, [prio[col] for col in order], False


def _evaluate_alike(
    host: PreemptionHost,
    pod: Pod,
    rows: np.ndarray,
    first: np.ndarray,
    inverse: np.ndarray,
    listing: bool,
) -> Evaluated | None:
    """:func:`_evaluate_rows` on the first row of each signature (``first``), broadcast
    to every row by ``inverse``: the room, the moreImportantVictim order and the
    reprieve are functions of the signature; the start times (the latest top-priority
    victim, and the reference's listing order, whose ties in start fall back on the
    moreImportantVictim order) are read per row. None where a row holds a unit of an
    All-mode group below the preemptor (decided unit by unit) or nothing is lower."""
    a: NodeArrays = host.cluster.arrays
    picked = rows[first]
    width = int(a.used[picked].max()) if len(picked) else 0
    prio = a.prio[picked, :width]
    lower = prio < pod.priority
    counts = np.count_nonzero(lower, axis=1)
    if width == 0 or not counts.any():
        return None
    flags = a.flags[picked, :width]
    if (((flags & EVICT_WHOLE) != 0) & lower).any():
        return None
    pack = a.pack[picked, :width]
    ok, left = room_fit(host, pod, picked, pack, lower, counts)
    depth = int(counts.max())
    lone = (flags & IN_GROUP) == 0
    order = np.lexsort((pack[:, :, 3], lone, np.where(lower, -prio, BIG)), axis=1)[:, :depth]
    flat = order + (np.arange(len(picked)) * width)[:, None]
    s_prio = prio.ravel()[flat]
    victim = reprieve(ok, counts, pack.reshape(-1, 4)[flat], left)
    nvictims = np.count_nonzero(victim, axis=1)
    ok &= nvictims > 0
    top = np.where(victim, s_prio, np.iinfo(np.int64).min).max(axis=1)
    total = np.where(victim, s_prio + INT32_OFFSET, 0).sum(axis=1)
    ok, top, total, nvictims = ok[inverse], top[inverse], total[inverse], nvictims[inverse]
    order, victim, s_prio = order[inverse], victim[inverse], s_prio[inverse]
    s_start = a.pack[rows[:, None], order, 3]
    latest = row_min(np.where(victim & (s_prio == top[:, None]), s_start, np.inf))
    features = (top, total, nvictims, latest)
    if not listing:
        return ok, features, None
    return ok, features, _listed(a, rows, order, victim, s_prio, s_start, {})


def _listed(
    a: NodeArrays,
    rows: np.ndarray,
    order: np.ndarray,
    victim: np.ndarray,
    s_prio: np.ndarray,
    s_start: np.ndarray,
    by_reference: dict[int, list[Pod]],
) -> Listing:
    """The victims as the reference lists them: sorted by MoreImportantPod, stably (by
    higher priority then earlier start, the moreImportantVictim order breaking ties)."""
    where = order + (rows * a.width)[:, None]  # into a.pods, flat
    resort = np.lexsort((np.where(victim, s_start, np.inf), np.where(victim, -s_prio, BIG)), axis=1)
    where = np.take_along_axis(where, resort, axis=1)
    victim = np.take_along_axis(victim, resort, axis=1)
    return a.pods.reshape(-1), where, victim, by_reference


def _evaluate_rows(
    host: PreemptionHost,
    policy: WorkloadAwarePreemption,
    pod: Pod,
    rows: np.ndarray,
    wanted: int,
    listing: bool = False,
) -> Evaluated:
    """:func:`_evaluate` row by row (on arrays), All-mode units included."""
    a: NodeArrays = host.cluster.arrays
    width = int(a.used[rows].max()) if len(rows) else 0
    prio = a.prio[rows, :width]
    lower = prio < pod.priority
    counts = np.count_nonzero(lower, axis=1)
    zeros = np.zeros(len(rows))
    if width == 0 or not counts.any():
        return np.zeros(len(rows), dtype=bool), (zeros, zeros, zeros, zeros), None
    flags = a.flags[rows, :width]
    whole = ((flags & EVICT_WHOLE) != 0) & lower
    spanning = whole.any(axis=1)
    pack = a.pack[rows, :width]  # [row, column, (g, c, m, start)]
    # 1-2. remove every lower-priority unit: Headroom.free, then the preemptor placed
    fit, left = room_fit(host, pod, rows, pack, lower, counts)
    ok = fit & ~spanning
    # 3-4. moreImportantVictim order (stable, so node order breaks the last ties), then
    # try_restore each unit in turn
    depth = int(counts.max())
    lone = (flags & IN_GROUP) == 0
    order = np.lexsort((pack[:, :, 3], lone, np.where(lower, -prio, BIG)), axis=1)[:, :depth]
    flat = order + (np.arange(len(rows)) * width)[:, None]
    s_prio = prio.ravel()[flat]
    ordered = pack.reshape(-1, 4)[flat]
    s_start = ordered[:, :, 3]
    victim = reprieve(ok, counts, ordered, left)
    nvictims = np.count_nonzero(victim, axis=1)
    ok &= nvictims > 0
    top = np.where(victim, s_prio, np.iinfo(np.int64).min).max(axis=1)
    total = np.where(victim, s_prio + INT32_OFFSET, 0).sum(axis=1)
    latest = row_min(np.where(victim & (s_prio == top[:, None]), s_start, np.inf))
    features = (top, total, nvictims, latest)
    by_reference: dict[int, list[Pod]] = {}
    if spanning.any():
        room = (lower, flags, pack, prio, fit, left)
        _by_reference(
            host, policy, pod, rows, spanning, ok, features, wanted, by_reference, listing, room
        )
    if not listing:
        return ok, features, None
    return ok, features, _listed(a, rows, order, victim, s_prio, s_start, by_reference)


def room_fit(
    host: PreemptionHost,
    pod: Pod,
    rows: np.ndarray,
    pack: np.ndarray,
    lower: np.ndarray,
    counts: np.ndarray,
) -> tuple[np.ndarray, tuple[np.ndarray, ...]]:
    """Steps 1-2 of the reference's room on each of ``rows``: what the node has besides
    nominations (``Headroom.free``), plus every lower-priority pod's request summed from
    zero in node order (``Headroom.remove``; x + 0.0 is x, so each float is the
    reference's), less the preemptor. Returns whether the preemptor fits with every
    lower-priority unit gone, and the (GPU, CPU, memory, pods) left then."""
    zeros = np.zeros(len(rows))
    g, c, m, n = _free(host, pod, rows)
    added = np.where(lower[..., None], pack[..., :3], 0.0)
    extra_g, extra_c, extra_m = zeros, zeros, zeros
    for j in range(pack.shape[1]):
        extra_g = extra_g + added[:, j, 0]
        extra_c = extra_c + added[:, j, 1]
        extra_m = extra_m + added[:, j, 2]
    g, c, m, n = g + extra_g, c + extra_c, m + extra_m, n + counts
    ok = (
        (counts > 0)
        & (g >= pod.gpus)
        & (c + TOLERANCE >= pod.cpu)
        & (m + TOLERANCE >= pod.mem)
        & (n >= 1)
    )
    return ok, (g - pod.gpus, c - pod.cpu, m - pod.mem, n - 1)


def reprieve(
    ok: np.ndarray, counts: np.ndarray, ordered: np.ndarray, left: tuple[np.ndarray, ...]
) -> np.ndarray:
    """``try_restore`` each unit in turn, in the order of ``ordered`` ([row, unit, (g, c,
    m, start)], the first ``counts`` of a row being its lower-priority pods): a unit is
    kept when what is ``left`` still covers it, so every row needs only what no order
    can keep. Returns the victim mask, one column per position of ``ordered``.

    A resource that restoring every lower-priority pod of a row would still leave
    covered (the pod slots, and CPU or memory where the preemptor needs little) never
    refuses a unit, so it is not tracked: the same units are kept."""
    g, c, m, n = left
    s_g = ordered[:, :, 0]
    depth = ordered.shape[1]
    within = np.arange(depth) < counts[:, None]
    tracked = [(g, s_g)]
    for have, column in ((c, 1), (m, 2)):
        need = ordered[:, :, column]
        total = np.where(within, need, 0.0).sum(axis=1)
        # a margin far above the rounding of the running differences the steps compute
        if not (~ok | (have - total >= 1e-6 * (np.abs(have) + total))).all():
            tracked.append((have, need))
    if not (~ok | (n - counts >= 0)).all():
        tracked.append((n, np.ones((len(ok), depth))))
    victim = np.zeros((len(ok), depth), dtype=bool)
    for j in range(depth):
        active = ok & within[:, j]
        keep = active
        backs = []
        for have, need in tracked:
            back = have - need[:, j]
            keep = keep & (back >= -TOLERANCE)
            backs.append(back)
        tracked = [
            (np.where(keep, back, have), need)
            for (have, need), back in zip(tracked, backs, strict=True)
        ]
        victim[:, j] = active > keep
    return victim


def _by_reference(
    host: PreemptionHost,
    policy: WorkloadAwarePreemption,
    pod: Pod,
    rows: np.ndarray,
    spanning: np.ndarray,
    ok: np.ndarray,
    features: tuple[np.ndarray, ...],
    wanted: int,
    listed: dict[int, list[Pod]],
    listing: bool,
    room: Room,
) -> None:
    """Rows holding a unit of an All-mode group, decided one by one (:func:`_spanning_row`,
    or all at once by :func:`_spanning_rows` where that is exact)
    in visit order until ``wanted`` candidates are found (the stop rule: later rows would
    not be looked at). When ``listing``, by the reference itself, whose victims go to
    ``listed`` by position."""
    top, total, nvictims, latest = features
    before = np.cumsum(ok) - ok  # array-decided candidates ahead of each row
    extra = 0  # candidates decided here so far
    positions = np.flatnonzero(spanning)
    decided: dict[int, tuple[int, int, int, float] | None] = {}
    batched = 0  # positions[:batched] went through _spanning_rows
    with policy.deciding() as memo:
        for index, position in enumerate(positions.tolist()):
            owed = wanted - int(before[position]) - extra
            if owed <= 0:
                break
            node = host.cluster.nodes[int(rows[position])]
            if listing:
                found = _listed_row(host, policy, pod, node, listed, position)
            else:
                if index >= batched:  # the next rows, as many as candidates are still owed
                    batched = index + max(SPANNING_BATCH, owed)
                    part = positions[index:batched]
                    decided.update(_spanning_rows(host, pod, rows, part, room, memo))
                found = (
                    decided[position]
                    if position in decided
                    else _spanning_row(host, pod, node, memo.wholes, memo.stats)
                )
            if found is None:
                continue
            ok[position] = True
            extra += 1
            top[position], total[position], nvictims[position], latest[position] = found


SPANNING_BATCH = 16
"""Fewest rows :func:`_spanning_rows` takes at once (below it the arrays cost more than
they save)."""

UnitKeys = tuple[int, float, int, int, int, float]
"""A unit's sort keys and §4.4 scores, per column it holds (:func:`_spanning_rows`): minus
its size, earliest start, top priority, priority sum + 2^31, pods, earliest start of
its top-priority pods."""

Room = tuple[np.ndarray, np.ndarray, np.ndarray, np.ndarray, np.ndarray, tuple[np.ndarray, ...]]
"""What :func:`_evaluate` computed for every row of its chunk, for :func:`_spanning_rows`:
(lower-priority mask, flags, pack, priorities, whether the preemptor fits with every
lower-priority pod gone, what is left then), each [row, column] but the last two [row]."""


def _spanning_rows(
    host: PreemptionHost,
    pod: Pod,
    rows: np.ndarray,
    positions: np.ndarray,
    room: Room,
    memo: DecisionMemo,
) -> dict[int, tuple[int, int, int, float] | None]:
    """:func:`_spanning_row` on many rows at once, for the rows where each All-mode unit
    below the preemptor has exactly one pod (kube-scheduler's workload-aware benchmark:
    a node holds one pod of each of ten gangs). There a unit frees on the node just what
    its pod frees, so the room, the ``try_restore`` sums and their floats are those of
    the pods, taken in moreImportantVictim order of the units (``importance``: priority,
    group before pod, larger group, earlier start) with the units' own §4.4 scores
    (``_unit_scores``, every member counted, on this node or not). A row where some unit
    has two pods on the node, or none that its usage lists, is left out (the caller
    decides it by :func:`_spanning_row`). Returns position -> keys, or None when the
    row is no candidate."""
    from scheduler_core.plugins.workload_preemption import _whole_unit

    lower_all, flags_all, pack_all, prio_all, fit_all, left_all = room
    lower, flags, pack, prio = (x[positions] for x in (lower_all, flags_all, pack_all, prio_all))
    whole = ((flags & EVICT_WHOLE) != 0) & lower
    in_group = (flags & IN_GROUP) != 0
    start = pack[:, :, 3]
    est = start.copy()
    size = np.where(in_group, -1, 0)  # a pod of a Single-mode group is a group of one
    group_last = np.where(in_group, 0, 1)
    s_top, s_total = prio.copy(), prio + INT32_OFFSET
    s_count, s_latest = np.ones(prio.shape, dtype=np.int64), start.copy()
    usable = [True] * len(positions)
    nodes = host.cluster.nodes
    row_nodes = [nodes[r] for r in rows[positions].tolist()]
    wi, wj = np.nonzero(whole)
    cells = host.cluster.arrays.pods[rows[positions][wi], wj].tolist()
    seen: set[Workload] = set()
    last = -1
    values: list[UnitKeys] = []
    units: dict[Workload, tuple[dict[Node, list[float]], UnitKeys]] = {}  # once per gang
    for i, cell in zip(wi.tolist(), cells, strict=True):
        if i != last:
            seen, last = set(), i
        workload = cell.workload
        known = units.get(workload)
        if known is None:
            unit = _whole_unit(workload, memo.wholes)
            keys = (-len(unit.pods), unit.earliest_start, *_unit_scores(unit, memo.stats))
            known = units[workload] = (unit.usage, keys)
        used = known[0].get(row_nodes[i])
        if workload in seen or used is None or used[3] != 1:
            usable[i] = False
        seen.add(workload)
        values.append(known[1])
    if values:  # one scatter per column kind, not six numpy item writes per unit
        for target, column in zip(
            (size, est, s_top, s_total, s_count, s_latest), zip(*values, strict=True), strict=True
        ):
            target[wi, wj] = column
    counts = np.count_nonzero(lower, axis=1)
    depth = int(counts.max())
    order = np.lexsort((est, size, group_last, np.where(lower, -prio, BIG)), axis=1)[:, :depth]
    ordered = np.take_along_axis(pack, order[:, :, None], axis=1)
    usable_rows = np.array(usable, dtype=bool)
    fit = fit_all[positions] & usable_rows
    victim = reprieve(fit, counts, ordered, tuple(x[positions] for x in left_all))
    s_top, s_total, s_count, s_latest = (
        np.take_along_axis(x, order, axis=1) for x in (s_top, s_total, s_count, s_latest)
    )
    top = np.where(victim, s_top, np.iinfo(np.int64).min).max(axis=1)
    total = np.where(victim, s_total, 0).sum(axis=1)
    count = np.where(victim, s_count, 0).sum(axis=1)
    latest = row_min(np.where(victim & (s_top == top[:, None]), s_latest, np.inf))
    candidate = fit & victim.any(axis=1)
    decided: dict[int, tuple[int, int, int, float] | None] = {}
    for i, position in enumerate(positions.tolist()):
        if usable[i]:
            decided[position] = (
                (int(top[i]), int(total[i]), int(count[i]), float(latest[i]))
                if candidate[i]
                else None
            )
    return decided


def _listed_row(
    host: PreemptionHost,
    policy: WorkloadAwarePreemption,
    pod: Pod,
    node: Node,
    listed: dict[int, list[Pod]],
    position: int,
) -> tuple[int, int, int, float] | None:
    """The reference's ``select_victims`` on one node: its §4.4 keys (those
    :func:`_spanning_row` sums unit by unit), and its victims kept in ``listed``."""
    found = policy.select_victims(host, pod, node)
    if found is None:
        return None
    victims = found.victims  # sorted by MoreImportantPod: the first has the top priority
    listed[position] = victims
    top = victims[0].priority
    return (
        top,
        sum(v.priority + INT32_OFFSET for v in victims),
        len(victims),
        min(v.bound_at for v in victims if v.priority == top),
    )


def _spanning_row(
    host: PreemptionHost,
    pod: Pod,
    node: Node,
    wholes: dict[Workload, Unit],
    stats: dict[int, tuple[int, int, int, float]],
) -> tuple[int, int, int, float] | None:
    """``_select_in_order`` on one node with units, without listing victims: the same
    units in the same order, the same sums (Headroom on this node, ``try_restore``), and
    each unit's part of the §4.4 scores summed once per decision, not per pod."""
    from scheduler_core.plugins.workload_preemption import importance, victim_units

    units = victim_units(host.cluster, pod.priority, [node], wholes)
    if not units:
        return None
    extra = [0, 0.0, 0.0, 0]
    for unit in units:
        row = unit.usage[node]
        for i in range(4):
            extra[i] += row[i]
    free = host.cluster.free_besides_claims(node, pod.priority, pod.workload)
    left = [have + more for have, more in zip(free, extra, strict=True)]
    if not (
        left[0] >= pod.gpus
        and left[1] + TOLERANCE >= pod.cpu
        and left[2] + TOLERANCE >= pod.mem
        and left[3] >= 1
    ):
        return None
    for i, amount in enumerate((pod.gpus, pod.cpu, pod.mem, 1)):
        left[i] -= amount
    evicted = []
    for unit in sorted(units, key=importance):
        row = unit.usage[node]
        if all(left[i] - row[i] >= -TOLERANCE for i in range(4)):
            for i in range(4):
                left[i] -= row[i]
        else:
            evicted.append(_unit_scores(unit, stats))
    if not evicted:
        return None
    top = max(s[0] for s in evicted)
    return (
        top,
        sum(s[1] for s in evicted),
        sum(s[2] for s in evicted),
        min(s[3] for s in evicted if s[0] == top),
    )


def _unit_scores(
    unit: Unit, stats: dict[int, tuple[int, int, int, float]]
) -> tuple[int, int, int, float]:
    """A unit's (top priority, sum of priorities + 2^31, pods, earliest start among its
    top-priority pods), once per unit per decision."""
    if len(unit.pods) == 1:
        only = unit.pods[0]
        return (only.priority, only.priority + INT32_OFFSET, 1, only.bound_at)
    known = stats.get(id(unit))  # a group's unit: kept in the memo as long as this entry
    if known is None:
        pods = unit.pods
        top = pods[0].priority
        earliest = pods[0].bound_at
        total = 0
        for p in pods:  # one pass: the same max, sum (in order) and first minimum
            priority = p.priority
            total += priority + INT32_OFFSET
            if priority > top:
                top, earliest = priority, p.bound_at
            elif priority == top and p.bound_at < earliest:
                earliest = p.bound_at
        known = stats[id(unit)] = (top, total, len(pods), earliest)
    return known
