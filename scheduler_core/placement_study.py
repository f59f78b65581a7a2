"""Placement studies: the time-less packing experiment of the FGD paper.

Weng et al., "Beware of Fragmentation" (USENIX ATC '23), and its simulator
(hkust-adsl/kubernetes-scheduler-simulator) measure a placement policy without time:
pods sampled from a trace arrive one after the other, none ever leaves, and after every
arrival the GPU allocation ratio is read against the arrived load (GPU requests so far
over the cluster's GPU capacity). This module is that experiment, kept apart from the
time-based engine because nothing here waits, runs or is preempted.

Why per device: a pod asks for whole GPUs or for a share of one GPU (``gpuMilli``
1-999), and two shares fit a device only if they add up to at most 1,000. Counting GPUs
per node, as the engine does, would let a node's free shares on different devices add up
to a GPU that no pod can use (the fragmentation the paper is about).

The steps of one run (``run_study``):
1. sample the workload with the seed: the trace's pods, shuffled; then pods drawn again
   at random (or dropped at random) until their GPU request is the asked share of the
   cluster's capacity (the simulator's ``TunePodsByNodeTotalResource``). By default the
   numbers are the simulator's own for that seed (Go's ``math/rand``, in its order:
   ``simulator_stream``), so a seed's run is the simulator's run;
2. for each pod in order: Filter (CPU, memory, GPU model, a device set that fits), Score
   with the policy, bind to the best node (ties broken at random, as ``selectHost``),
   pick its devices with the policy's device rule;
3. record (arrived milli-GPU, allocated milli-GPU) after every arrival; ``curve`` turns
   those into the allocation ratio at every 1 % of arrived load.
"""

from __future__ import annotations

import csv
import io
import math
from collections.abc import Iterable, Sequence
from dataclasses import dataclass, field
from functools import partial
from pathlib import Path
from typing import TYPE_CHECKING

import numpy as np
from numpy.typing import NDArray

from scheduler_core.gorand import GoRand

MILLI = 1000
MAX_DEVICES = 8
"""openb's largest node has 8 GPUs; the device matrix is that wide."""
MAX_LOAD_PERCENT = 400
MAX_STUDY_PODS = 50_000
"""Bounded cost: a study run is O(pods x nodes); 50k pods on 1.2k nodes is ~10 s."""
MAX_STUDY_NODES = 20_000

if TYPE_CHECKING:
    from scheduler_core.plugins.gpu_scoring.base import GpuScorer

IntArray = NDArray[np.int64]


class StudyInputError(ValueError):
    """Bad study input; the message names the file, the row and the field."""


@dataclass(frozen=True, slots=True)
class StudyPod:
    """One pod's request, as openb records it (``num_gpu`` x ``gpu_milli``).

    ``gpus`` is the number of devices, ``milli`` the share of each (1,000 = whole);
    a share below 1,000 is only ever asked for one device. ``models`` lists the GPU
    models it may run on (empty: any), the node selector of openb's ``gpu_spec``.
    """

    cpu: int
    memory: int
    gpus: int
    milli: int
    models: tuple[str, ...] = ()

    @property
    def total_milli(self) -> int:
        return self.gpus * self.milli

    @property
    def shared(self) -> bool:
        return self.gpus == 1 and self.milli < MILLI

    @property
    def model_key(self) -> str:
        """The simulator's ``gpu-card-model`` annotation, duplicates kept (its typical
        pods are keyed on that text)."""
        return "|".join(self.models)


@dataclass(frozen=True, slots=True)
class StudyNode:
    name: str
    cpu: int
    memory: int
    gpus: int
    model: str


class DeviceCluster:
    """Per-device node state for a study: numpy columns, one row per node.

    ``dev[n, d]`` is the free milli-GPU of device ``d`` on node ``n`` (0 for devices the
    node does not have, so a padded device never fits and never counts as free).
    ``version[n]`` grows at every bind on ``n``: score caches key on it.
    """

    def __init__(self, nodes: Sequence[StudyNode]) -> None:
        self.names = [n.name for n in nodes]
        self.models = sorted({n.model for n in nodes})
        model_index = {m: i for i, m in enumerate(self.models)}
        self.model_idx: IntArray = np.array([model_index[n.model] for n in nodes], np.int64)
        self.cpu_cap: IntArray = np.array([n.cpu for n in nodes], np.int64)
        self.mem_cap: IntArray = np.array([n.memory for n in nodes], np.int64)
        self.gpus: IntArray = np.array([n.gpus for n in nodes], np.int64)
        self.cpu_left = self.cpu_cap.copy()
        self.mem_left = self.mem_cap.copy()
        slots = np.arange(MAX_DEVICES)[None, :]
        self.dev: IntArray = np.where(slots < self.gpus[:, None], MILLI, 0).astype(np.int64)
        self.free: IntArray = self.dev.sum(axis=1)
        """Free milli-GPU per node, and below: the largest free device, the fully free
        devices. Kept up to date at every bind so that Filter is a few vector compares."""
        self.largest: IntArray = self.dev.max(axis=1)
        self.idle: IntArray = (self.dev == MILLI).sum(axis=1)
        self.affinity: IntArray = np.zeros((len(nodes), MAX_DEVICES + 1), np.int64)
        """Bound GPU pods per kind: column 0 shares, column k pods of k whole GPUs."""
        self.version: IntArray = np.zeros(len(nodes), np.int64)
        self.bound: list[int] = []
        """Every bind's node, in order: a cache that remembers how far it has read knows
        exactly which nodes changed since (nothing else changes a node's state)."""
        self.rank: IntArray = np.arange(len(nodes), dtype=np.int64)
        """Tie-break order among equal scores (lowest first); a run draws it."""
        self.total_milli = int(self.gpus.sum()) * MILLI
        self.used_milli = 0
        self._model_masks: dict[tuple[str, ...], NDArray[np.bool_]] = {}

    def __len__(self) -> int:
        return len(self.names)

    def model_mask(self, models: tuple[str, ...]) -> NDArray[np.bool_]:
        """Nodes whose GPU model the pod accepts (all nodes when it names none)."""
        mask = self._model_masks.get(models)
        if mask is None:
            if models:
                allowed = np.array([m in models for m in self.models], np.bool_)
                mask = allowed[self.model_idx]
            else:
                mask = np.ones(len(self), np.bool_)
            self._model_masks[models] = mask
        return mask

    def feasible(self, pod: StudyPod) -> IntArray:
        """Filter: the nodes where ``pod`` fits now (simulator: NodeResourcesFit plus
        Open-Gpu-Share's Filter), as indexes."""
        ok = (self.cpu_left >= pod.cpu) & (self.mem_left >= pod.memory)
        if pod.shared:
            ok &= self.largest >= pod.milli
        elif pod.gpus:
            ok &= self.idle >= pod.gpus
        if pod.models:
            ok &= self.model_mask(pod.models)
        return np.flatnonzero(ok)

    def fits(self, node: int, pod: StudyPod) -> bool:
        """``feasible`` for one node, in plain Python (cheaper than a vector op when
        only the few nodes bound since the last look need checking again)."""
        if self.cpu_left[node] < pod.cpu or self.mem_left[node] < pod.memory:
            return False
        if pod.shared:
            if self.largest[node] < pod.milli:
                return False
        elif pod.gpus and self.idle[node] < pod.gpus:
            return False
        return not pod.models or bool(self.model_mask(pod.models)[node])

    def bind(self, node: int, pod: StudyPod, devices: Sequence[int]) -> None:
        """Place ``pod`` on ``node`` using ``devices``; a device never drops below 0.

        The device row is updated as a Python list: eight scalars are cheaper there than
        through numpy's per-call overhead, and a run binds ~10k times."""
        self.cpu_left[node] -= pod.cpu
        self.mem_left[node] -= pod.memory
        if pod.gpus:
            row = self.dev[node].tolist()
            for d in devices:
                if row[d] < pod.milli:
                    raise AssertionError(f"device {d} of node {node} cannot take {pod.milli}m")
                row[d] -= pod.milli
            self.dev[node] = row
            self.free[node] -= pod.total_milli
            self.largest[node] = max(row)
            self.idle[node] = row.count(MILLI)
            self.affinity[node, 0 if pod.shared else pod.gpus] += 1
        self.used_milli += pod.total_milli
        self.version[node] += 1
        self.bound.append(node)


# ----------------------------------------------------------------------------- devices


def first_free_devices(row: IntArray, count: int) -> tuple[int, ...]:
    """Whole-GPU pods take the first fully free devices by index
    (simulator: ``AllocateExclusiveGpuId``)."""
    return tuple([d for d, left in enumerate(row.tolist()) if left == MILLI][:count])


def best_fit_device(row: IntArray, milli: int) -> int:
    """The tightest device that fits a share, first by index on ties
    (simulator: ``allocateGpuIdBasedOnBestFit``); device 0 when none fits."""
    left = [(v, d) for d, v in enumerate(row.tolist()) if v >= milli]
    return min(left)[1] if left else 0


def worst_fit_device(row: IntArray, milli: int) -> int:
    """The emptiest device that fits a share, first by index on ties; 0 when none fits."""
    left = [(-v, d) for d, v in enumerate(row.tolist()) if v >= milli]
    return min(left)[1] if left else 0


# ----------------------------------------------------------------------------- sampling


def sample_workload(
    pods: Sequence[StudyPod], capacity_milli: int, load_percent: float, rng: np.random.Generator
) -> list[StudyPod]:
    """The arriving pods: the trace shuffled, then topped up or thinned at random until
    their GPU request is ``load_percent`` % of the capacity (never above it).

    This is the simulator's order (``SortClusterPods`` with ``shufflePod``, then
    ``tuneUpPods`` / ``tuneDownPods``): the extra draws come after the shuffled trace.
    """
    order = list(pods)
    rng.shuffle(order)
    target = capacity_milli * load_percent / 100.0
    total = sum(p.total_milli for p in order)
    if total > target:
        return _thin(order, total, target, rng)
    while len(order) < MAX_STUDY_PODS:
        extra = pods[int(rng.integers(len(pods)))]
        if total + extra.total_milli > target:
            break
        order.append(extra)
        total += extra.total_milli
    return order


def _thin(
    order: list[StudyPod], total: int, target: float, rng: np.random.Generator
) -> list[StudyPod]:
    while total > target and order:
        total -= order.pop(int(rng.integers(len(order)))).total_milli
    return order


# ----------------------------------------------------------------------------- runs


@dataclass(frozen=True, slots=True)
class StudyRun:
    """One (workload, policy, seed) run: its record after every arrival."""

    policy: str
    seed: int
    load_percent: float
    capacity_milli: int
    arrived_milli: tuple[int, ...]
    allocated_milli: tuple[int, ...]
    pods: int
    failed: int

    def curve(self) -> dict[int, float]:
        """The allocation curve over the records *after each arrival*: the simulator
        logs one record per pod (``SchedulePods``), none before the first, so the
        starting (0, 0) is left out (it would pull the value at 0 % down)."""
        return allocation_curve(
            self.arrived_milli[1:] or self.arrived_milli,
            self.allocated_milli[1:] or self.allocated_milli,
            self.capacity_milli,
            self.load_percent,
        )

    @property
    def final_allocation(self) -> float:
        """Allocated GPU share of the capacity (%) once every pod has arrived."""
        return 100.0 * self.allocated_milli[-1] / self.capacity_milli


def allocation_curve(
    arrived: Sequence[int], allocated: Sequence[int], capacity: int, load_percent: float
) -> dict[int, float]:
    """Allocation ratio (%) at every whole percent of arrived load.

    The simulator's ``merge_alloc_discrete.py``: each record's arrived share is rounded
    to a whole percent and its allocation to 0.01 %; the value at k % is the mean of the
    records at k (or, when none, of those at k-1..k+1), rounded to 0.01.
    """
    arr = np.round(np.asarray(arrived, np.float64) / capacity * 100.0, 0)
    alloc = np.round(np.asarray(allocated, np.float64) / capacity * 100.0, 2)
    out: dict[int, float] = {}
    for k in range(math.floor(load_percent) + 1):
        hit = arr == k
        if not hit.any():
            hit = (arr >= k - 1) & (arr <= k + 1)
        if hit.any():
            out[k] = round(float(alloc[hit].mean()), 2)
    return out


@dataclass
class Study:
    """A cluster, a trace and what to measure: the input of ``run_study``."""

    nodes: list[StudyNode]
    pods: list[StudyPod]
    load_percent: float = 130.0
    name: str = "study"
    notes: list[str] = field(default_factory=list)

    def __post_init__(self) -> None:
        check_study(self)

    @property
    def capacity_milli(self) -> int:
        return MILLI * sum(n.gpus for n in self.nodes)


def check_study(study: Study) -> None:
    """Bounded cost and a meaningful run, or a StudyInputError naming the field."""
    if not study.nodes:
        raise StudyInputError("nodes: the node list is empty")
    if len(study.nodes) > MAX_STUDY_NODES:
        raise StudyInputError(f"nodes: {len(study.nodes)} nodes, at most {MAX_STUDY_NODES}")
    if not study.pods:
        raise StudyInputError("pods: the pod list is empty")
    if study.capacity_milli == 0:
        raise StudyInputError("nodes: no node has a GPU, so there is no GPU capacity")
    if not sum(p.total_milli for p in study.pods):
        raise StudyInputError("pods: no pod requests a GPU, so the load never grows")
    if not 0 < study.load_percent <= MAX_LOAD_PERCENT:
        raise StudyInputError(f"load_percent: must be in (0, {MAX_LOAD_PERCENT}]")


STREAMS = ("go", "numpy")
"""Where a run's random numbers come from: ``go``, the FGD simulator's own stream (Go's
``math/rand`` seeded with the seed, drawn in the simulator's order, ``simulator_stream``);
``numpy``, a numpy generator seeded with the seed (the same steps, other numbers)."""
DEFAULT_STREAM = "go"
"""The simulator's stream: with it a seed's run is the simulator's run for that seed
(per-seed curves equal to the published ones for every policy but Random)."""
INFORMER_DRAWS = 10
"""Draws the simulator's informers take from the global source between the tuning and
the node permutation (see ``simulator_stream``)."""


def run_study(study: Study, policy: str, seed: int, stream: str = DEFAULT_STREAM) -> StudyRun:
    """One run of ``policy`` with ``seed`` (see the module docstring for the steps).

    Deterministic. With ``stream="numpy"`` one numpy generator seeded with ``seed`` draws
    the sample, the node order that breaks ties, and the random policy's choices, in that
    order. With ``stream="go"`` the sample and the node order are the simulator's own
    draws for that seed (``simulator_stream``) and only the random policy's choices come
    from a numpy generator.
    """
    return _run(study, policy, seed, incremental=True, stream=stream)


def simulator_stream(
    study: Study, seed: int, informer_draws: int = INFORMER_DRAWS
) -> tuple[list[StudyPod], IntArray]:
    """The arriving pods and the tie-break ranks exactly as the FGD simulator draws them.

    The simulator (hkust-adsl/kubernetes-scheduler-simulator) uses Go's *global*
    ``math/rand`` source, so every draw in this order comes from one stream:

    1. ``pkg/simulator/core.go`` ``Simulate``: ``rand.Seed(seed)``, then one ``rand.Int()``
       evaluated as an argument of a ``log.Debugf`` (Go evaluates it even when debug
       logging is off);
    2. ``SortClusterPods`` (``simulator.go``): the pods sorted by name, then
       ``rand.Shuffle`` (openb's names sort in file order, so the order is the file's);
    3. ``TunePodsByNodeTotalResource``: above the target, ``tuneDownPods`` removes
       ``pods[rand.Intn(len(pods))]`` until the total is at most the target; below it,
       ``tuneUpPods`` appends ``workloadPods[rand.Intn(n)]`` (the pods sorted by name)
       until one would overshoot, and that test adds the pod's *per-device* milli-GPU
       (``podRes.MilliGpu``), not its total, so a multi-GPU pod can pass it and end above
       the target;
    4. ``informer_draws`` draws of the informers started by ``runScheduler`` (client-go's
       reflector draws ``rand.Float64()`` for its watch timeout);
    5. ``syncClusterResourceList``: the nodes sorted by name, ``rand.Perm(len(nodes))``,
       and node i renamed ``%04d-`` + its name with ``perm[i]``; the patched
       ``selectHost`` takes the smallest name among equal scores, so ``perm[i]`` is node
       i's tie-break rank.

    After that, the scheduler's own draws (``rand.Intn(100)`` per cycle in
    ``scheduler.go``) and the Random policy's, which draw in goroutine order, decide
    nothing the other policies use.
    """
    rng = GoRand(seed)
    rng.int_()
    order = list(study.pods)
    rng.shuffle(order)
    target = study.load_percent / 100.0 * float(study.capacity_milli)
    total = sum(p.total_milli for p in order)
    if total > target:
        while total > target and order:
            total -= order.pop(rng.intn(len(order))).total_milli
    elif total < target:
        while len(order) < MAX_STUDY_PODS:
            extra = study.pods[rng.intn(len(study.pods))]
            if total + extra.milli > target:
                break
            total += extra.total_milli
            order.append(extra)
    for _ in range(informer_draws):
        rng.float64()
    return order, np.array(rng.perm(len(study.nodes)), np.int64)


def _run(
    study: Study, policy: str, seed: int, incremental: bool, stream: str = DEFAULT_STREAM
) -> StudyRun:
    """``run_study``; ``incremental=False`` takes the reference path (Filter and Score
    over every node for every pod), which the tests hold the fast path to."""
    from scheduler_core.plugins.gpu_scoring import make_policy

    if stream not in STREAMS:
        raise StudyInputError(f"stream: '{stream}' is not one of {', '.join(STREAMS)}")
    rng = np.random.default_rng(seed)
    scorer = make_policy(policy)
    cluster = DeviceCluster(study.nodes)
    if stream == "go":
        arriving, cluster.rank = simulator_stream(study, seed)
    else:
        arriving = sample_workload(study.pods, study.capacity_milli, study.load_percent, rng)
        cluster.rank = rng.permutation(len(cluster)).astype(np.int64)
    scorer.prepare(cluster, study.pods, rng)
    select = (
        IncrementalSelect(cluster, scorer).select
        if incremental and scorer.per_node
        else partial(_schedule, cluster, scorer)
    )
    arrived, allocated = [0], [0]
    failed = 0
    for pod in arriving:
        node = select(pod)
        if node is None:
            failed += 1
        else:
            cluster.bind(node, pod, scorer.devices(cluster, pod, node))
        arrived.append(arrived[-1] + pod.total_milli)
        allocated.append(cluster.used_milli)
    return StudyRun(
        policy=policy,
        seed=seed,
        load_percent=study.load_percent,
        capacity_milli=cluster.total_milli,
        arrived_milli=tuple(arrived),
        allocated_milli=tuple(allocated),
        pods=len(arriving),
        failed=failed,
    )


def _schedule(cluster: DeviceCluster, scorer: GpuScorer, pod: StudyPod) -> int | None:
    """Filter, Score, then ``selectHost``: the best score, ties to the lowest rank.

    The paper's simulator patches ``selectHost`` "for reproducibility" to take the
    smallest node name among equal scores, and names nodes with a seeded random prefix
    (``syncClusterResourceList``): ties go to a fixed, seed-drawn node order. That is
    not upstream's uniform draw, and it packs: equal nodes fill one after the other.
    """
    nodes = cluster.feasible(pod)
    if len(nodes) <= 1:
        return int(nodes[0]) if len(nodes) else None
    scores = scorer.score(cluster, pod, nodes)
    best = nodes[scores == scores.max()]
    return int(best[np.argmin(cluster.rank[best])])


NO_NODE = -(2**62)
"""The key of a node that does not fit: below every score x nodes - rank."""
RESCAN_AFTER = 48
"""Binds since a request's last look beyond which one vector Filter is cheaper than
checking the bound nodes one by one."""


class IncrementalSelect:
    """``_schedule`` for a policy whose score of a node depends on that node alone
    (``GpuScorer.per_node``), without scoring every node for every pod.

    Per distinct request it keeps, for every node, the key ``score x nodes - rank``
    (``NO_NODE`` where the pod does not fit), so that the best key is the best score
    with ties to the lowest rank, as ``_schedule`` picks. Two facts keep the keys exact:
    only a bind changes a node, and nothing ever leaves, so a node that did not fit
    never fits again and a node not bound since keeps its score. At each look only the
    nodes bound since (``DeviceCluster.bound``) are checked and scored again.
    """

    def __init__(self, cluster: DeviceCluster, scorer: GpuScorer) -> None:
        self.cluster = cluster
        self.scorer = scorer
        self.keys: dict[StudyPod, IntArray] = {}
        self.seen: dict[StudyPod, int] = {}

    def select(self, pod: StudyPod) -> int | None:
        cluster = self.cluster
        keys = self.keys.get(pod)
        binds = len(cluster.bound)
        if keys is None or binds - self.seen[pod] > RESCAN_AFTER:
            keys = self.keys[pod] = np.full(len(cluster), NO_NODE, np.int64)
            self._rescore(pod, keys, cluster.feasible(pod))
        elif binds > self.seen[pod]:
            fit: list[int] = []
            for node in sorted(set(cluster.bound[self.seen[pod] :])):
                if keys[node] != NO_NODE:
                    if cluster.fits(node, pod):
                        fit.append(node)
                    else:
                        keys[node] = NO_NODE
            if fit:
                self._rescore(pod, keys, np.array(fit, np.int64))
        self.seen[pod] = binds
        best = int(keys.argmax())
        return None if keys[best] == NO_NODE else best

    def _rescore(self, pod: StudyPod, keys: IntArray, nodes: IntArray) -> None:
        if len(nodes):
            scores = self.scorer.score(self.cluster, pod, nodes)
            keys[nodes] = scores * len(self.cluster) - self.cluster.rank[nodes]


# ----------------------------------------------------------------------------- openb files

NODE_FIELDS = ("sn", "cpu_milli", "memory_mib", "gpu", "model")
POD_FIELDS = ("cpu_milli", "memory_mib", "num_gpu", "gpu_milli")


def read_openb_nodes(text: str, source: str = "nodes") -> list[StudyNode]:
    """openb's node list (``sn,cpu_milli,memory_mib,gpu,model``)."""
    rows = _rows(text, source, NODE_FIELDS)
    nodes = []
    for line, row in rows:
        gpus = _int(row, "gpu", source, line, 0, MAX_DEVICES)
        nodes.append(
            StudyNode(
                name=row["sn"] or f"node-{line}",
                cpu=_int(row, "cpu_milli", source, line, 1, 10**8),
                memory=_int(row, "memory_mib", source, line, 0, 10**9),
                gpus=gpus,
                model=(row.get("model") or "").strip() if gpus else "",
            )
        )
    return nodes


def read_openb_pods(text: str, source: str = "pods") -> list[StudyPod]:
    """An openb pod list. The fractional requests are kept: ``gpu_milli`` < 1000 is a
    share of one device (``gpuMilli``), not rounded up to a whole GPU."""
    return [_pod(row, source, line) for line, row in _rows(text, source, POD_FIELDS)]


def _pod(row: dict[str, str], source: str, line: int) -> StudyPod:
    gpus = _int(row, "num_gpu", source, line, 0, MAX_DEVICES)
    milli = _int(row, "gpu_milli", source, line, 0, 10**6) if gpus else 0
    if gpus and milli == 0:
        raise StudyInputError(f"{source}: row {line}: gpu_milli: 0 with num_gpu {gpus}")
    milli = min(milli, MILLI)
    if gpus > 1 and milli < MILLI:
        raise StudyInputError(
            f"{source}: row {line}: gpu_milli: a share ({milli}) of more than one GPU "
            f"(num_gpu {gpus}); shares are of one device only"
        )
    spec = (row.get("gpu_spec") or "") if gpus else ""
    return StudyPod(
        cpu=_int(row, "cpu_milli", source, line, 0, 10**8),
        memory=_int(row, "memory_mib", source, line, 0, 10**9),
        gpus=gpus,
        milli=milli,
        models=tuple(m for m in spec.split("|") if m),
    )


def _rows(text: str, source: str, required: Iterable[str]) -> Iterable[tuple[int, dict[str, str]]]:
    reader = csv.DictReader(io.StringIO(text))
    missing = [c for c in required if c not in (reader.fieldnames or ())]
    if missing:
        raise StudyInputError(f"{source}: missing column(s) {', '.join(missing)}")
    rows = [(i + 2, row) for i, row in enumerate(reader)]
    if len(rows) > MAX_STUDY_PODS:
        raise StudyInputError(f"{source}: {len(rows)} rows, at most {MAX_STUDY_PODS}")
    return rows


def _int(row: dict[str, str], name: str, source: str, line: int, low: int, high: int) -> int:
    raw = (row.get(name) or "").strip()
    try:
        value = float(raw)
    except ValueError:
        raise StudyInputError(f"{source}: row {line}: {name}: '{raw}' is not a number") from None
    if not math.isfinite(value) or value != int(value) or not low <= value <= high:
        raise StudyInputError(
            f"{source}: row {line}: {name}: {raw} is not a whole number in [{low}, {high}]"
        )
    return int(value)


def load_openb_study(
    nodes_path: str | Path, pods_path: str | Path, load_percent: float = 130.0
) -> Study:
    """A study from an openb node list and pod list on disk."""
    nodes_path, pods_path = Path(nodes_path), Path(pods_path)
    return Study(
        nodes=read_openb_nodes(nodes_path.read_text(encoding="utf-8"), nodes_path.name),
        pods=read_openb_pods(pods_path.read_text(encoding="utf-8"), pods_path.name),
        load_percent=load_percent,
        name=pods_path.stem,
    )
