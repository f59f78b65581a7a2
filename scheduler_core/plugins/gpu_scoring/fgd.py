"""FGD: fragmentation gradient descent, the FGD paper's policy.

Source: Weng et al., "Beware of Fragmentation", USENIX ATC '23, §4 (fragmentation
measure, Eq. 1-3; FGD, Algorithm 1); simulator ``pkg/simulator/plugin/fgd_score.go``
(``calculateGpuShareFragExtendScore``) and ``pkg/utils/frag.go``
(``NodeGpuShareFragAmount``, ``GetTypicalPods``).

1. The *typical pods* are the trace's most frequent request shapes (CPU, GPU milli,
   GPU count, GPU models), taken by decreasing count until they cover 95 % of the pods,
   each weighted by its frequency.
2. A node's *fragmentation* for a typical pod is the free GPU milli it cannot use: all
   of it when the pod does not fit (no CPU, too few devices, wrong model, or a CPU-only
   pod), else the free milli of the devices too small for it. The node's fragmentation
   is the frequency-weighted sum.
3. Score: ``int(100 * sigmoid((frag before - frag after) / 1000))``; a share is tried on
   every device that fits and goes to the first best one.

How it stays cheap (a run scores ~10k pods on ~1.2k nodes):

- A score depends on the node only through its *state*: free CPU, GPU model and the
  multiset of free milli per device. States are numbered once (``_register``), with
  their per-typical-pod device counts, unusable milli and fragmentation before, so a
  bind costs one new state and every node in an equal state shares one computation.
- Scores are cached per (request shape, state); a node's state is refreshed only when
  ``DeviceCluster.version`` says it was bound since.
- A share's after-state differs from the before-state in one device, so its counts come
  from two lookups in per-value tables (``_fit``, ``_small``) instead of a new pass over
  the devices.
- Fragmentation is kept as an exact integer, the sum of (pod count x unusable milli),
  divided by the covered pod count only for the sigmoid, so a state scores the same
  however it is batched. One case is decided by the simulator's float arithmetic
  instead: a gain of exactly 0, where ``int(100 * sigmoid(gain / 1000))`` sits on the
  50 boundary and the simulator's float64 sums (``freq * milli`` per typical pod into
  seven bins in the typical pods' order, then the bins in order: ``_go_frag``) leave a
  rounding residue that makes it 49 or 50. Any other gain is at least 1/covered milli
  away from 0, far from a truncation boundary. With 50 for every zero gain, 23 of the
  170 openb FGD runs (mostly cpu250 and gpuspec10) differed from the simulator's run of
  the same seed (docs/placement-study.md).
- Which nodes to score at all is ``placement_study.IncrementalSelect``'s job.
"""

from __future__ import annotations

from collections import Counter
from collections.abc import Sequence
from dataclasses import dataclass

import numpy as np
from numpy.typing import NDArray

from scheduler_core.placement_study import (
    MAX_DEVICES,
    MILLI,
    DeviceCluster,
    IntArray,
    StudyPod,
    first_free_devices,
)
from scheduler_core.plugins.gpu_scoring.base import MAX_NODE_SCORE, GpuScorer

POPULARITY = 0.95
"""``podPopularityThreshold: 95`` in the paper's runs (``generate_config_and_run.py``)."""

FloatArray = NDArray[np.float64]
UNKNOWN = -2
"""A (shape, state) score not computed yet (real scores are 0..100, -1 a device that
cannot take the share)."""


@dataclass(frozen=True, slots=True)
class TypicalPod:
    cpu: int
    milli: int
    gpus: int
    models: str
    """The ``|``-joined model list, as the simulator keys it (empty: any model)."""
    frequency: float
    count: int = 1
    """Pods of this shape in the workload; ``frequency`` is count / covered pods."""


def go_frequencies(workload: Sequence[StudyPod], typical: Sequence[TypicalPod]) -> FloatArray:
    """Each typical pod's ``Percentage`` as ``GetTypicalPods`` computes it in float64:
    count / total, then, when the list was cut, divided by (covered / total)."""
    total = float(len(workload))
    shapes = len({(p.cpu, p.milli, p.gpus, p.model_key) for p in workload})
    covered = float(sum(t.count for t in typical))
    freq = [t.count / total for t in typical]
    if len(typical) < shapes:
        freq = [f / (covered / total) for f in freq]
    return np.array(freq, np.float64)


def typical_pods(workload: Sequence[StudyPod], popularity: float = POPULARITY) -> list[TypicalPod]:
    """``GetTypicalPods``: shapes by decreasing count (ties: the larger shape first),
    cut once they cover ``popularity`` of the pods, frequencies renormalised to 1."""
    counts = Counter((p.cpu, p.milli, p.gpus, p.model_key) for p in workload)
    ranked = sorted(counts.items(), key=lambda kv: (kv[1], kv[0]), reverse=True)
    expected, covered, chosen = popularity * len(workload), 0, []
    for shape, count in ranked:
        if covered >= expected:
            break
        chosen.append((shape, count))
        covered += count
    return [TypicalPod(*shape, frequency=count / covered, count=count) for shape, count in chosen]


class FGDScore(GpuScorer):
    name = "FGD"

    def prepare(
        self, cluster: DeviceCluster, workload: Sequence[StudyPod], rng: np.random.Generator
    ) -> None:
        super().prepare(cluster, workload, rng)
        typical = typical_pods(workload)
        self.typical = len(typical)
        self.t_cpu = np.array([t.cpu for t in typical], np.int64)
        t_milli = np.array([t.milli for t in typical], np.int64)
        t_gpus = np.array([t.gpus for t in typical], np.int64)
        self.t_count = np.array([t.count for t in typical], np.int64)
        self.covered = int(self.t_count.sum())
        access = np.array(
            [[_accessible(model, t) for t in typical] for model in cluster.models], np.bool_
        ).reshape(len(cluster.models), len(typical))
        self._need = np.hstack(
            [np.where(access, t_gpus, MAX_DEVICES + 1), np.zeros_like(access, np.int64)]
        )
        """Per model, subtracted from a state's per-value sums: the devices each typical
        pod needs (more than any node has where it may not run: CPU-only pods, other
        models), and 0 against the unusable milli."""
        self._taken = (t_milli > 0).astype(np.int64)
        """Per typical pod: a fully free device taken away is one fitting device less."""
        value = np.arange(MILLI + 1, dtype=np.int64)[:, None]
        self._per_value = np.hstack(
            [(value >= t_milli).astype(np.int64), np.where(value >= t_milli, 0, value)]
        )
        """_per_value[v]: for a device with v milli free, per typical pod, whether it fits
        (first half) and the milli the pod cannot use (second half)."""
        self._access = access
        self._t_is_cpu = t_milli == 0
        self._freq = go_frequencies(workload, typical)
        self._before = np.full(256, np.nan)
        """Per state, its fragmentation as the simulator's float sum (``_go_frag``), NaN
        until a zero integer gain needs it."""
        self._sigmoid: dict[int, int] = {}
        self._states = _StateTable(len(typical))
        self._ids: dict[tuple[int, ...], int] = {}
        self._shapes: dict[tuple[int, int, int], _ShapeCache] = {}
        self._read = len(cluster.bound)
        self._node_state = np.array(
            [self._register(cluster, n) for n in range(len(cluster))], np.int64
        )

    def score(self, cluster: DeviceCluster, pod: StudyPod, nodes: IntArray) -> IntArray:
        self._refresh(cluster)
        states = self._node_state[nodes]
        cache = self._shape_cache(pod)
        scores = cache.scores[states]
        if scores.min() == UNKNOWN:
            missing = sorted(set(states[scores == UNKNOWN].tolist()))
            self._compute(cache, pod, np.array(missing, np.int64))
            scores = cache.scores[states]
        return scores

    def devices(self, cluster: DeviceCluster, pod: StudyPod, node: int) -> tuple[int, ...]:
        """A share goes to the first device with the best score (computed with it)."""
        if not pod.shared:
            return first_free_devices(cluster.dev[node], pod.gpus)
        per_device = self.node_scores(cluster, pod, np.array([node]))[0].tolist()
        return (per_device.index(max(per_device)),)

    def node_scores(self, cluster: DeviceCluster, pod: StudyPod, nodes: IntArray) -> IntArray:
        """Scores per (node, placement choice): one column per device, in the node's
        device order, for a share (-1 where it does not fit), a single column otherwise.
        A device scores as its state's slot with as much free milli."""
        scores = self.score(cluster, pod, nodes)
        if not pod.shared:
            return scores[:, None]
        slots = self._shape_cache(pod).slots
        rows = []
        for node, state in zip(nodes.tolist(), self._node_state[nodes].tolist(), strict=True):
            ordered = self._states.dev[state].tolist()
            by_value = slots[state].tolist()
            rows.append([by_value[ordered.index(v)] for v in cluster.dev[node].tolist()])
        return np.array(rows, np.int64)

    # ------------------------------------------------------------------ states

    def _refresh(self, cluster: DeviceCluster) -> None:
        """Renumber the states of the nodes bound since the last look."""
        if self._read < len(cluster.bound):
            for node in set(cluster.bound[self._read :]):
                self._node_state[node] = self._register(cluster, node)
            self._read = len(cluster.bound)

    def _register(self, cluster: DeviceCluster, node: int) -> int:
        """The node's state number, adding the state if never seen, with what
        ``_compute`` needs of it: per typical pod the slack in fitting devices and the
        unusable milli (one row), and the fragmentation numerator."""
        cpu, model = int(cluster.cpu_left[node]), int(cluster.model_idx[node])
        devices = sorted(cluster.dev[node].tolist())
        key = (cpu, model, *devices)
        state = self._ids.get(key)
        if state is None:
            state = self._ids[key] = len(self._states)
            row = self._per_value[devices].sum(axis=0) - self._need[model]
            free = sum(devices)
            t = self.typical
            ok = (row[:t] >= 0) & (cpu >= self.t_cpu)
            before = int(np.where(ok, row[t:], free) @ self.t_count)
            self._states.add(row, [cpu, model, free, before, *devices])
        return state

    def _go_frag(
        self,
        model: IntArray,
        cpu_ok: NDArray[np.bool_],
        host_ok: NDArray[np.bool_],
        unusable: IntArray,
        free: IntArray,
    ) -> FloatArray:
        """``NodeGpuShareFragAmountScore`` in the simulator's float arithmetic, so that a
        score the simulator truncates (``int64(sigmoid(...) * 100)``) truncates alike.

        ``NodeGpuShareFragAmount`` (pkg/utils/frag.go) adds ``freq * milli`` for each
        typical pod, in the typical pods' order, to one of seven bins by
        ``GetNodePodFrag``: a CPU-only pod to XL or XR, a pod the node's model does not
        accept to NoAccess, a pod that fits the devices to Q3 (its unusable milli to Q2),
        or else to Q4, Q2 or Q1 by CPU; then ``FragAmountSumExceptQ3`` adds the bins in
        bin order. Float addition is not associative, so the order is kept: per bin a
        sequential ``cumsum`` (adding 0.0 for the other pods changes nothing), then the
        bins one by one. Leading dimensions are states (and device choices)."""
        access = self._access[model]
        is_cpu = self._t_is_cpu
        gpu = ~is_cpu & access
        q3 = gpu & host_ok & cpu_ok
        contrib = self._freq * np.where(q3, unusable, free[..., None])
        bins = np.stack(
            [
                gpu & ~host_ok & ~cpu_ok,  # Q1: lacks both
                gpu & cpu_ok,  # Q2: lacks GPU, and Q3's unusable milli
                gpu & host_ok & ~cpu_ok,  # Q4: lacks CPU
                is_cpu & cpu_ok,  # XL
                is_cpu & ~cpu_ok,  # XR
                ~is_cpu & ~access,  # NoAccess
            ]
        )
        sums = np.cumsum(np.where(bins, contrib, 0.0), axis=-1)[..., -1]
        out = sums[0]
        for b in range(1, len(sums)):
            out = out + sums[b]
        return np.asarray(out, np.float64)

    def _shape_cache(self, pod: StudyPod) -> _ShapeCache:
        key = (pod.cpu, pod.milli, pod.gpus)
        cache = self._shapes.get(key)
        if cache is None:
            cache = self._shapes[key] = _ShapeCache(
                pod.shared, pod.gpus * self._taken, self.t_cpu + pod.cpu
            )
        cache.cover(len(self._states))
        return cache

    # ------------------------------------------------------------------ scores

    def _compute(self, cache: _ShapeCache, pod: StudyPod, states: IntArray) -> None:
        """Fill the shape's scores for ``states`` (distinct): the typical pods that fit
        after placement (enough fitting devices left and enough CPU) leave their
        unusable milli, the others all free milli."""
        s, t = self._states, self.typical
        rows = s.rows[states]
        scalars = s.scalars[states]
        cpu_ok = scalars[:, :1] >= cache.cpu_need
        before = scalars[:, 3]
        models = scalars[:, 1]
        if not pod.shared:
            host = rows[:, :t] >= cache.taken
            ok = host & cpu_ok
            free = scalars[:, 2] - pod.total_milli
            after = np.where(ok, rows[:, t:], free[:, None]) @ self.t_count
            gains = before - after
            scores = np.array(self._scores(gains.tolist()), np.int64)
            tie = np.flatnonzero(gains == 0)
            if len(tie):
                exact = self._go_frag(models[tie], cpu_ok[tie], host[tie], rows[tie, t:], free[tie])
                scores[tie] = _sigmoid_score(self._go_before(states[tie]) - exact)
            cache.scores[states] = scores
            return
        dev = scalars[:, 4:]
        rest = np.maximum(dev - pod.milli, 0)
        placed = rows[:, None, :] + self._per_value[rest] - self._per_value[dev]
        host3 = placed[..., :t] >= 0
        left = scalars[:, 2] - pod.milli
        ok = host3 & cpu_ok[:, None, :]
        after = np.where(ok, placed[..., t:], left[:, None, None]) @ self.t_count
        gains = before[:, None] - after
        fit = dev >= pod.milli
        scores = np.array(self._scores(gains.ravel().tolist()), np.int64).reshape(gains.shape)
        tie_s, tie_d = np.nonzero((gains == 0) & fit)
        if len(tie_s):
            exact = self._go_frag(
                models[tie_s],
                cpu_ok[tie_s],
                host3[tie_s, tie_d],
                placed[tie_s, tie_d, t:],
                left[tie_s],
            )
            scores[tie_s, tie_d] = _sigmoid_score(self._go_before(states[tie_s]) - exact)
        slots = np.where(fit, scores, -1)
        cache.slots[states] = slots
        cache.scores[states] = slots.max(axis=1)

    def _go_before(self, states: IntArray) -> FloatArray:
        """The simulator's float fragmentation of ``states`` (computed once per state)."""
        if len(self._before) < len(self._states):
            grown = np.full(max(2 * len(self._before), len(self._states)), np.nan)
            grown[: len(self._before)] = self._before
            self._before = grown
        todo = np.unique(states[np.isnan(self._before[states])])
        if len(todo):
            rows, scalars, t = self._states.rows[todo], self._states.scalars[todo], self.typical
            self._before[todo] = self._go_frag(
                scalars[:, 1],
                scalars[:, :1] >= self.t_cpu,
                rows[:, :t] >= 0,
                rows[:, t:],
                scalars[:, 2],
            )
        return self._before[states]

    def _scores(self, gains: list[int]) -> list[int]:
        """``int(100 sigmoid(gain / covered / 1000))`` per integer gain numerator,
        memoised (gains repeat). A zero gain is 50 here; the caller replaces it with the
        simulator's float result, whose rounding noise can make it 49."""
        memo = self._sigmoid
        missing = [g for g in gains if g not in memo]
        if missing:
            fresh = np.array(missing, np.int64) / self.covered
            memo.update(zip(missing, _sigmoid_score(fresh).tolist(), strict=True))
        return [memo[g] for g in gains]


class _StateTable:
    """Distinct node states and what FGD needs of each, in two growing numpy tables:
    ``rows`` per typical pod the slack in fitting devices, then the unusable milli;
    ``scalars`` free CPU, model, free milli, fragmentation numerator, then the free milli
    per device, ascending."""

    def __init__(self, typical: int) -> None:
        self.size = 0
        self.rows: IntArray = np.zeros((0, 2 * typical), np.int64)
        self.scalars: IntArray = np.zeros((0, 4 + MAX_DEVICES), np.int64)

    def __len__(self) -> int:
        return self.size

    @property
    def dev(self) -> IntArray:
        return self.scalars[:, 4:]

    def add(self, row: IntArray, scalars: list[int]) -> None:
        if self.size == len(self.rows):
            capacity = max(2 * self.size, 256)
            for name in ("rows", "scalars"):
                old = getattr(self, name)
                grown = np.zeros((capacity, old.shape[1]), np.int64)
                grown[: self.size] = old[: self.size]
                setattr(self, name, grown)
        self.rows[self.size] = row
        self.scalars[self.size] = scalars
        self.size += 1


class _ShapeCache:
    """One request shape's score per state (``UNKNOWN`` until computed) and, for a
    share, per state and device slot (ascending free milli, as ``_StateTable.dev``).
    ``taken``: per typical pod, the fitting devices a whole-GPU pod of this shape uses;
    ``cpu_need``: the free CPU a typical pod needs beside it."""

    def __init__(self, shared: bool, taken: IntArray, cpu_need: IntArray) -> None:
        self.shared = shared
        self.taken = taken
        self.cpu_need = cpu_need
        self.scores: IntArray = np.zeros(0, np.int64)
        self.slots: IntArray = np.zeros((0, MAX_DEVICES), np.int64)

    def cover(self, states: int) -> None:
        """Room for ``states`` states (doubling, so growing is amortised)."""
        if states <= len(self.scores):
            return
        capacity = max(2 * len(self.scores), states, 256)
        scores = np.full(capacity, UNKNOWN, np.int64)
        scores[: len(self.scores)] = self.scores
        self.scores = scores
        if self.shared:
            slots = np.full((capacity, MAX_DEVICES), UNKNOWN, np.int64)
            slots[: len(self.slots)] = self.slots
            self.slots = slots


def _accessible(node_model: str, typical: TypicalPod) -> bool:
    """A typical pod counts as fitting only if it asks for a GPU (CPU-only pods see all
    free GPU milli as fragment) and the node's model is allowed."""
    if typical.milli <= 0:
        return False
    models = [m for m in typical.models.split("|") if m]
    return not models or (bool(node_model) and node_model in models)


def _sigmoid_score(gain: FloatArray) -> IntArray:
    sig = 1.0 / (1.0 + np.exp(-(gain / 1000)))
    return np.asarray(sig * float(MAX_NODE_SCORE)).astype(np.int64)
