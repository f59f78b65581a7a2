"""Cluster state with the indexes that keep each scheduling decision cheap.

Nodes of one shape (same GPU count) are bucketed by free GPUs, so finding the fullest
or emptiest node that fits is a walk over the free counts that occur, not over every
node. Only occupied counts have a bucket (:class:`FreeIndex`): nothing is allocated per
GPU, so a node's size costs nothing. Each node also keeps the GPUs held per pod
priority, so preemption can reject a node without looking at its pods. Nothing here is
ever copied per decision.
"""

from __future__ import annotations

from bisect import bisect_left, bisect_right, insort
from collections.abc import Iterable, Iterator
from typing import Any

import numpy as np

from scheduler_core import devices
from scheduler_core.fast_nodes import NodeArrays
from scheduler_core.model import Node, Pod, Workload
from scheduler_core.spec import ExperimentSpec, NodeShape, Taint, Toleration, mig_gpus
from scheduler_core.status import SUCCESS, Code, Status

TOUCHED_MIN = 4096
TOUCHED_PER_NODE = 8
"""The node-change log keeps at most this many entries per node before it drops its oldest
half: a verdict older than that has been dropped, as the nodes changed since would cost
about as much to look at as the attempt they spare."""

INSUFFICIENT = Status(
    Code.UNSCHEDULABLE, "Insufficient nvidia.com/gpu, cpu or memory", "NodeResourcesFit"
)
TOO_LARGE = Status(
    Code.UNSCHEDULABLE_AND_UNRESOLVABLE,
    "Pod requests more than the node's allocatable",
    "NodeResourcesFit",
)
NOT_ELIGIBLE = Status(
    Code.UNSCHEDULABLE_AND_UNRESOLVABLE,
    "node(s) didn't match node selector or had untolerated taint",
    "NodeAffinity/TaintToleration",
)
GPU_MODEL = Status(
    Code.UNSCHEDULABLE_AND_UNRESOLVABLE,
    "node(s) didn't match Pod's node affinity/selector",
    "NodeAffinity",
)
"""A workload's gpuModels act as a required node affinity on the node's GPU model
(nvidia.com/gpu.product, as GPU Feature Discovery labels it)."""
UNSCHEDULABLE_NODE = Status(
    Code.UNSCHEDULABLE_AND_UNRESOLVABLE, "node(s) were unschedulable", "NodeUnschedulable"
)


class FreeIndex:
    """Nodes by a count (free GPUs, reachable GPUs): one bucket per count that some node
    has, kept in ascending order of count. Each bucket keeps insertion order, as the
    scheduler's node order requires."""

    __slots__ = ("buckets", "counts")

    def __init__(self) -> None:
        self.buckets: dict[int, dict[Node, None]] = {}
        self.counts: list[int] = []

    def add(self, count: int, node: Node) -> None:
        bucket = self.buckets.get(count)
        if bucket is None:
            bucket = self.buckets[count] = {}
            insort(self.counts, count)
        bucket[node] = None

    def discard(self, count: int, node: Node) -> None:
        bucket = self.buckets.get(count)
        if bucket is None:
            return
        bucket.pop(node, None)
        if not bucket:
            del self.buckets[count]
            del self.counts[bisect_left(self.counts, count)]

    def at_least(self, count: int, *, descending: bool = False) -> Iterator[Node]:
        """Nodes with at least ``count``, by ascending (or descending) count. The caller
        must stop iterating before it changes the index."""
        start = bisect_left(self.counts, count)
        chosen = self.counts[start:]
        for key in reversed(chosen) if descending else chosen:
            yield from self.buckets[key]


class Cluster:
    """Every node, indexed by shape and free GPUs; the single owner of resource accounting."""

    def __init__(self, spec: ExperimentSpec, priorities: Iterable[int] = ()) -> None:
        self.nodes: list[Node] = []
        self.by_name: dict[str, Node] = {}
        self.shape_gpus: list[int] = []
        self.buckets: list[FreeIndex] = []
        self.thresholds = sorted(set(priorities))
        """Every pod priority in the experiment. For a preemptor of priority P (threshold k),
        node.reachable[k] bounds what evicting strictly lower-priority pods could free."""
        self.reach_buckets: list[FreeIndex] = [FreeIndex() for _ in self.thresholds]
        self._eligible: dict[tuple[object, ...], tuple[int, list[Node], dict[Node, int]]] = {}
        self._eligible_rows: dict[tuple[object, ...], tuple[list[Node], np.ndarray]] = {}
        self._kinds: tuple[int, list[Node], list[int]] | None = None
        self.below: list[int] = [0] * len(self.thresholds)
        """Per threshold k: how many bound pods have a priority below it, cluster-wide."""
        self.shares = any(w.gpu_milli is not None for w in spec.workloads)
        """Some workload shares a device: every node tracks its devices (devices.py)."""
        self.mig = any(w.mig for w in spec.workloads)
        """Some workload asks for MIG instances (whole-GPU pods never look at them)."""
        for pool in spec.cluster.node_pools:
            for i in range(pool.count):
                self._add_node(f"{pool.name}-{i}", pool)
        for named in spec.cluster.nodes:
            self._add_node(named.name, named)
        self.total_gpus_at_start = sum(n.gpus for n in self.nodes)
        """Whole devices (what fragmentation, measured per device, divides by)."""
        self.gpu_capacity_at_start = sum(n.capacity for n in self.nodes)
        """GPUs including MIG instances as their fractions (spec.mig_gpu_fraction): what
        allocation is measured against, now that a MIG pod's GPU-seconds count."""
        self.arrays = NodeArrays(self.nodes)
        """Bound pods per node as arrays, for the array-speed preemption decision."""
        self.reach_array = np.array(
            [[n.reachable[k] for n in self.nodes] for k in range(len(self.thresholds))],
            dtype=np.int64,
        )
        """node.reachable as an array: [threshold, node]."""
        levels = len(self.thresholds)
        self.reach_cpu = np.array([[n.cpu for n in self.nodes]] * levels, dtype=np.float64)
        self.reach_mem = np.array([[n.mem for n in self.nodes]] * levels, dtype=np.float64)
        self.reach_pods = np.array([[n.max_pods for n in self.nodes]] * levels, dtype=np.int64)
        """The same bound for CPU, memory and pod slots, [threshold, node]: free plus what
        the pods below the threshold hold. Sums kept by adding and subtracting, so the
        floats may drift by rounding: a test on them needs a margin (only ever a
        pre-filter before the exact test)."""
        self.claimed_nodes: dict[Node, None] = {}
        """Nodes with nominated pods (kept by :meth:`nominations_changed`)."""
        self.version = 0
        """Bumped when nodes come or go, so cached eligibility lists know they are stale."""
        self.epoch = 0
        """Bumped by every change a scheduling verdict could depend on (see Engine)."""
        self.touched: list[Node] = []
        """The recent node changes in order (resources, schedulability, nominations), one
        entry per change: a cached verdict made at change number i only needs to look
        again at the nodes changed since (:meth:`changed_since`; the engine's narrow
        invalidation, issue #14). Bounded: the oldest half is dropped when it outgrows
        ``TOUCHED_PER_NODE`` entries per node (``TOUCHED_MIN`` at least), and
        ``touched[0]`` is change number :attr:`touched_base`."""
        self.touched_base = 0
        self._claims: dict[int, list[Any]] = {}
        """priority -> [touched position, gpus, cpu, mem, pods]: per node, what nominated
        pods at that priority or above claim (see :meth:`claim_arrays`)."""
        self._no_fit: dict[tuple[object, ...], tuple[np.ndarray, int]] = {}
        """Pod shape -> (eligible rows, change number) of a "no" from :meth:`any_fits`."""
        self.meter: Any = None
        """When set (fragmentation.FragmentationMeter), told of every node that changes."""

    # ------------------------------------------------------------------ structure
    def _add_node(self, name: str, shape: NodeShape) -> None:
        taints = tuple(t for t in shape.taints if t.effect != "PreferNoSchedule")
        node = Node(
            len(self.nodes),
            name,
            shape.gpus,
            shape.cpu,
            shape.memory,
            shape.max_pods,
            dict(shape.labels),
            taints,
            shape.spot,
        )
        if shape.gpus not in self.shape_gpus:
            self.shape_gpus.append(shape.gpus)
            self.buckets.append(FreeIndex())
        node.shape = self.shape_gpus.index(shape.gpus)
        node.gpu_model = shape.gpu_model
        node.mig = dict(shape.mig)
        node.mig_free = dict(shape.mig)
        node.capacity = shape.gpus + mig_gpus(shape.mig) if shape.mig else shape.gpus
        if self.shares:
            node.dev_free = [devices.FULL] * shape.gpus
        node.reachable = [shape.gpus] * len(self.thresholds)
        for k in range(len(self.thresholds)):
            self.reach_buckets[k].add(shape.gpus, node)
        self.nodes.append(node)
        self.by_name[name] = node
        self._index(node)

    def _index(self, node: Node) -> None:
        if node.schedulable:
            self.buckets[node.shape].add(node.free_gpus, node)

    def _unindex(self, node: Node) -> None:
        self.buckets[node.shape].discard(node.free_gpus, node)

    def set_schedulable(self, node: Node, *, alive: bool, cordoned: bool) -> None:
        """Cordon, uncordon, lose or restore a node; it leaves or rejoins the fit index."""
        self._touch(node)
        self._unindex(node)
        node.alive, node.cordoned = alive, cordoned
        self._index(node)
        if self.meter is not None:
            self.meter.changed(node)
        self.version += 1

    @property
    def touched_count(self) -> int:
        """Node changes so far (the change number of the next one)."""
        return self.touched_base + len(self.touched)

    def changed_since(self, seen: int) -> dict[Node, None] | None:
        """The nodes changed since change number ``seen``, each once in order of first
        change; None when that part of the log was dropped (the caller starts afresh)."""
        start = seen - self.touched_base
        if start < 0:
            return None
        return dict.fromkeys(self.touched[start:])

    def _touch(self, node: Node) -> None:
        """One change on ``node`` that a verdict may depend on: new epoch, logged once."""
        self.epoch += 1
        touched = self.touched
        touched.append(node)
        if len(touched) > TOUCHED_MIN and len(touched) > TOUCHED_PER_NODE * len(self.nodes):
            half = len(touched) // 2
            del touched[:half]
            self.touched_base += half

    # ------------------------------------------------------------------ accounting
    def assign(self, pod: Pod, node: Node) -> None:
        """Pod starts holding resources on ``node`` (bind)."""
        self._touch(node)
        self._unindex(node)
        if node.dev_free is None:
            node.free_gpus -= pod.gpus
        else:
            pod.devices = devices.take(node.dev_free, pod.gpus, pod.milli)
            node.free_gpus = devices.full_devices(node.dev_free)
        for profile, count in pod.mig:
            node.mig_free[profile] -= count
        node.free_cpu -= pod.cpu
        node.free_mem -= pod.mem
        node.npods += 1
        node.pods[pod] = None
        self.arrays.add(pod, node)
        self._reach(node, pod, arrived=True)
        pod.node = node
        self._index(node)
        if self.meter is not None:
            self.meter.changed(node)

    def release(self, pod: Pod) -> Node:
        """Pod stops holding resources (terminated, succeeded, killed)."""
        node = pod.node
        assert node is not None, pod
        self._touch(node)
        self._unindex(node)
        if node.dev_free is None:
            node.free_gpus += pod.gpus
        else:
            devices.give_back(node.dev_free, pod.devices, pod.milli)
            pod.devices = ()
            node.free_gpus = devices.full_devices(node.dev_free)
        for profile, count in pod.mig:
            node.mig_free[profile] += count
        node.free_cpu += pod.cpu
        node.free_mem += pod.mem
        node.npods -= 1
        del node.pods[pod]
        self.arrays.discard(pod, node)
        self._reach(node, pod, arrived=False)
        self._index(node)
        if self.meter is not None:
            self.meter.changed(node)
        return node

    def _reach(self, node: Node, pod: Pod, *, arrived: bool) -> None:
        """A pod of priority p came or went: for thresholds P > p the reach stays (free
        GPUs and evictable GPUs move by the same amount) but the count below P changes;
        for P <= p the reach moves with the free GPUs."""
        reachable = node.reachable
        delta = -pod.gpus if arrived else pod.gpus
        first_above = bisect_right(self.thresholds, pod.priority)
        for k in range(first_above, len(self.thresholds)):
            self.below[k] += 1 if arrived else -1
        if not first_above:
            return
        reach_array, reach_cpu, reach_mem, reach_pods = (
            self.reach_array,
            self.reach_cpu,
            self.reach_mem,
            self.reach_pods,
        )
        sign = -1 if arrived else 1
        cpu, mem, row = sign * pod.cpu, sign * pod.mem, node.idx
        for k in range(first_above):  # element by element: a few levels, no slice views
            index = self.reach_buckets[k]
            index.discard(reachable[k], node)
            reachable[k] += delta
            index.add(reachable[k], node)
            reach_array[k, row] = reachable[k]
            reach_cpu[k, row] += cpu
            reach_mem[k, row] += mem
            reach_pods[k, row] += sign

    def stamp(self, pod: Pod) -> None:
        """A bound pod's start time was set (after :meth:`assign`)."""
        assert pod.node is not None
        self.arrays.stamp(pod, pod.node)

    def nominations_changed(self, node: Node) -> None:
        """Keep :attr:`claimed_nodes` in step with ``node.nominated``, and log the change
        (a nomination claims room, so verdicts on ``node`` are stale)."""
        self._touch(node)
        if node.nominated:
            self.claimed_nodes[node] = None
        else:
            self.claimed_nodes.pop(node, None)

    def threshold(self, priority: int) -> int:
        """Index k of ``priority`` among the thresholds (it is always one of them)."""
        return bisect_right(self.thresholds, priority) - 1

    def nodes_reaching(self, k: int, gpus: int) -> Iterator[Node]:
        """Nodes where a preemptor at threshold k could get at least ``gpus`` GPUs."""
        return self.reach_buckets[k].at_least(gpus)

    def unassume(self, pod: Pod) -> None:
        """Forget an assumed pod (its group did not fit after all)."""
        self.release(pod)
        pod.node = None

    # ------------------------------------------------------------------ filters
    def eligible_nodes(self, workload: Workload) -> tuple[list[Node], dict[Node, int]]:
        """Nodes a member may use at all (selector, taints, capacity, schedulable), in node
        order, with each node's position. Shared by workloads with the same constraints and
        rebuilt only when nodes come or go."""
        key = workload.constraints
        cached = self._eligible.get(key)
        if cached is None or cached[0] != self.version:
            # The filters run once per kind of node, not once per node: a recorded cluster
            # of 1,523 nodes has a few dozen kinds and 112 constraint classes (openb:
            # 170,000 static_filter calls were a quarter of its simulation).
            kinds, kind_of = self._node_kinds()
            passes = [self.static_filter(workload, node).ok for node in kinds]
            nodes = [n for n, kind in zip(self.nodes, kind_of, strict=True) if passes[kind]]
            cached = (self.version, nodes, {n: i for i, n in enumerate(nodes)})
            self._eligible[key] = cached
        return cached[1], cached[2]

    def _node_kinds(self) -> tuple[list[Node], list[int]]:
        """One node of each kind the static filters tell apart (schedulable, labels,
        taints, GPU model, capacity, MIG instances: everything :meth:`static_filter`
        reads of a node) and each node's kind, in node order. None of it changes but
        with :attr:`version` (nodes come or go, or change schedulability)."""
        cached = self._kinds
        if cached is None or cached[0] != self.version:
            index: dict[tuple[object, ...], int] = {}
            kinds: list[Node] = []
            kind_of: list[int] = []
            for node in self.nodes:
                signature = (
                    node.schedulable,
                    tuple(sorted(node.labels.items())),
                    node.taints,
                    node.gpu_model,
                    node.gpus,
                    node.cpu,
                    node.mem,
                    tuple(sorted(node.mig.items())),
                )
                kind = index.get(signature)
                if kind is None:
                    kind = index[signature] = len(kinds)
                    kinds.append(node)
                kind_of.append(kind)
            cached = self._kinds = (self.version, kinds, kind_of)
        return cached[1], cached[2]

    def eligible_rows(self, workload: Workload) -> np.ndarray:
        """:meth:`eligible_nodes` as an array of node indexes (same order, same cache life)."""
        nodes, _ = self.eligible_nodes(workload)
        cached = self._eligible_rows.get(workload.constraints)
        if cached is None or cached[0] is not nodes:
            cached = (nodes, np.array([n.idx for n in nodes], dtype=np.int64))
            self._eligible_rows[workload.constraints] = cached
        return cached[1]

    def static_filter(self, workload: Workload, node: Node) -> Status:
        """The filters that no eviction can change."""
        spec = workload.spec
        if not node.schedulable:
            return UNSCHEDULABLE_NODE
        if any(node.labels.get(k) != v for k, v in spec.node_selector.items()):
            return NOT_ELIGIBLE
        if node.taints and not all(_tolerated(t, spec.tolerations) for t in node.taints):
            return NOT_ELIGIBLE
        if spec.gpu_models and node.gpu_model not in spec.gpu_models:
            return GPU_MODEL
        if spec.gpus > node.gpus or spec.cpu > node.cpu or spec.memory > node.mem:
            return TOO_LARGE
        if (spec.gpu_milli and not node.gpus) or (
            spec.mig and not devices.mig_fits(node.mig, tuple(spec.mig.items()))
        ):
            return TOO_LARGE
        return SUCCESS

    @staticmethod
    def claimed(node: Node, priority: int, besides: Pod | Workload | object) -> list[float]:
        """[gpus, cpu, mem, pods] that pods nominated to ``node`` at ``priority`` or above
        will take, other than ``besides`` (the pod itself, or a group's own members):
        Filter counts them as present (§3); lower-priority nominations may be taken."""
        claim = [0, 0.0, 0.0, 0]
        for other in node.nominated:
            if (
                other is not besides
                and other.workload is not besides
                and other.priority >= priority
            ):
                claim[0] += other.gpus
                claim[1] += other.cpu
                claim[2] += other.mem
                claim[3] += 1
        return claim

    def claim_arrays(self, priority: int) -> tuple[np.ndarray, ...] | None:
        """:meth:`claimed` for every node at once, nobody excepted, as arrays (gpus, cpu,
        mem, pods); None when no node has a nomination. Kept per priority and brought up
        to date from :attr:`touched`, so a decision pays for the nodes changed since the
        last one, not for every nominated node (a storm of preemptors nominates
        thousands)."""
        if not self.claimed_nodes:
            return None
        cached = self._claims.get(priority)
        changed: Iterable[Node] | None = None if cached is None else self.changed_since(cached[0])
        if cached is None or changed is None:
            count = len(self.nodes)
            cached = [0, np.zeros(count, np.int64), np.zeros(count), np.zeros(count)]
            cached.append(np.zeros(count, np.int64))
            self._claims[priority] = cached
            changed = self.claimed_nodes
        _, gpus, cpu, mem, pods = cached
        for node in changed:
            claim = self.claimed(node, priority, _NOBODY)
            row = node.idx
            gpus[row], cpu[row], mem[row], pods[row] = claim
        cached[0] = self.touched_count
        return gpus, cpu, mem, pods

    def any_fits(self, pod: Pod) -> bool:
        """Whether some node passes Filter for ``pod`` (the static checks, resources with
        nominations), tested on the node arrays; for a pod without a nomination of its own
        (its own claim is not subtracted here).

        A "no" is kept per pod shape (priority, request, constraints) with the change
        number it was made at: every input of the test (a node's free resources, its
        nominations, its schedulability) changes only with a :meth:`_touch` of that node,
        so the next ask tests only the nodes changed since, not every node. A storm of
        preemptors on full nodes asks once per preemptor and each decision changes a
        handful of nodes (issue #14: the whole-array tests were 0.08 CPU-s of the 5,000-node
        storm, whose decisions take 1.8 s).
        The test per row is the same expression either way."""
        rows = self.eligible_rows(pod.workload)
        claims = self.claim_arrays(pod.priority)
        key = (pod.priority, pod.gpus, pod.cpu, pod.mem, pod.workload.constraints)
        cached = self._no_fit.get(key)
        if cached is not None and cached[0] is rows:
            changed = self.changed_since(cached[1])
            if changed is not None:
                _, where = self.eligible_nodes(pod.workload)
                fits = any(
                    self._fits_row(pod, claims, node.idx) for node in changed if node in where
                )
                self._remember_fit(key, rows, fits)
                return fits
        if len(rows) == len(self.nodes):  # every row, in order: the arrays as they are
            fits = bool(self._fits_rows(pod, claims, None).any())
        else:
            fits = bool(self._fits_rows(pod, claims, rows).any())
        self._remember_fit(key, rows, fits)
        return fits

    def _remember_fit(self, key: tuple[object, ...], rows: np.ndarray, fits: bool) -> None:
        if fits:
            self._no_fit.pop(key, None)
        else:
            self._no_fit[key] = (rows, self.touched_count)

    def _fits_row(self, pod: Pod, claims: tuple[np.ndarray, ...] | None, row: int) -> bool:
        """:meth:`_fits_rows` for one row, on the same array elements (numpy scalars, so
        the same sums and comparisons), without the cost of an array operation."""
        a = self.arrays
        if claims is None:
            gpus, cpu, mem, count = pod.gpus, pod.cpu, pod.mem, 1
        else:
            gpus, cpu = pod.gpus + claims[0][row], pod.cpu + claims[1][row]
            mem, count = pod.mem + claims[2][row], 1 + claims[3][row]
        return bool(
            gpus <= a.free_gpus[row]
            and cpu <= a.free_cpu[row] + 1e-9
            and mem <= a.free_mem[row] + 1e-9
            and a.npods[row] + count <= a.max_pods[row]
        )

    def _fits_rows(
        self, pod: Pod, claims: tuple[np.ndarray, ...] | None, rows: np.ndarray | None
    ) -> np.ndarray:
        """Filter's resource test for ``pod`` on ``rows`` (None: every row, in order, the
        arrays read as they are without a gather)."""
        a = self.arrays

        def at(column: np.ndarray) -> np.ndarray:
            return column if rows is None else column[rows]

        gpus: Any = pod.gpus  # a number, or one per row
        cpu: Any = pod.cpu
        mem: Any = pod.mem
        count: Any = 1
        if claims is not None:
            gpus, cpu = pod.gpus + at(claims[0]), pod.cpu + at(claims[1])
            mem, count = pod.mem + at(claims[2]), 1 + at(claims[3])
        fit: np.ndarray = (
            (gpus <= at(a.free_gpus))
            & (cpu <= at(a.free_cpu) + 1e-9)
            & (mem <= at(a.free_mem) + 1e-9)
            & (at(a.npods) + count <= at(a.max_pods))
        )
        return fit

    def need(self, pod: Pod, node: Node) -> tuple[int, float, float, int]:
        """What ``pod`` needs free on ``node``: its request plus the nominations it must
        leave room for."""
        claim = self.claimed(node, pod.priority, pod)
        return (pod.gpus + int(claim[0]), pod.cpu + claim[1], pod.mem + claim[2], 1 + int(claim[3]))

    @staticmethod
    def holds(pod: Pod, node: Node) -> bool:
        """Resources alone, nominations aside: can a pod recorded as bound here be here?"""
        if node.dev_free is not None or pod.mig:
            return Cluster.devices_fit(pod, node, ()) and (
                pod.cpu <= node.free_cpu + 1e-9
                and pod.mem <= node.free_mem + 1e-9
                and node.npods + 1 <= node.max_pods
            )
        return (
            pod.gpus <= node.free_gpus
            and pod.cpu <= node.free_cpu + 1e-9
            and pod.mem <= node.free_mem + 1e-9
            and node.npods + 1 <= node.max_pods
        )

    def fits(self, pod: Pod, node: Node) -> bool:
        """NodeResourcesFit with nominated pods (§3)."""
        gpus, cpu, mem, count = self.need(pod, node)
        if node.dev_free is not None or pod.mig:
            return (
                self.devices_fit(pod, node, self.claimants(node, pod))
                and cpu <= node.free_cpu + 1e-9
                and mem <= node.free_mem + 1e-9
                and node.npods + count <= node.max_pods
            )
        return (
            gpus <= node.free_gpus
            and cpu <= node.free_cpu + 1e-9
            and mem <= node.free_mem + 1e-9
            and node.npods + count <= node.max_pods
        )

    @staticmethod
    def claimants(node: Node, pod: Pod) -> list[Pod]:
        """Pods nominated to ``node`` that ``pod``'s Filter counts as present (§3)."""
        return (
            [
                other
                for other in node.nominated
                if other is not pod and other.priority >= pod.priority
            ]
            if node.nominated
            else []
        )

    @staticmethod
    def devices_fit(pod: Pod, node: Node, others: Iterable[Pod]) -> bool:
        """The pod's devices (whole, share, MIG instances) fit beside ``others``' on
        ``node`` as it is (a dry run uses devices.DryRun instead)."""
        whole, shares = pod.gpus, [pod.milli] if pod.milli else []
        mig: dict[str, int] = dict(pod.mig)
        for other in others:
            whole += other.gpus
            if other.milli:
                shares.append(other.milli)
            for profile, count in other.mig:
                mig[profile] = mig.get(profile, 0) + count
        left = node.dev_free
        fits = (
            whole <= node.free_gpus and not shares
            if left is None
            else devices.devices_fit(left, whole, shares)
        )
        return fits and devices.mig_fits(node.mig_free, tuple(mig.items()))

    def free_besides_claims(self, node: Node, priority: int, workload: Workload) -> list[float]:
        """[gpus, cpu, mem, pod slots] a member of ``workload`` may use on ``node``."""
        claim = self.claimed(node, priority, workload)
        return [
            node.free_gpus - claim[0],
            node.free_cpu - claim[1],
            node.free_mem - claim[2],
            node.max_pods - node.npods - claim[3],
        ]

    def filter(self, pod: Pod, node: Node) -> Status:
        """The whole Filter for one node: static checks, then resources."""
        status = self.static_filter(pod.workload, node)
        if not status.ok:
            return status
        return SUCCESS if self.fits(pod, node) else INSUFFICIENT

    def candidates_by_free(self, shape: int, gpus: int, *, descending: bool) -> Iterator[Node]:
        """Schedulable nodes of a shape with at least ``gpus`` free, fullest or emptiest first.

        The caller must stop iterating before it changes the cluster."""
        return self.buckets[shape].at_least(gpus, descending=descending)


_NOBODY = object()
"""Stands for "nobody excepted" where :meth:`Cluster.claimed` takes who to leave out."""


def _tolerated(taint: Taint, tolerations: list[Toleration]) -> bool:
    return any(t.tolerates(taint) for t in tolerations)
