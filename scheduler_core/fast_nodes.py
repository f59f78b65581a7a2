"""Bound pods as numpy arrays per node, kept in step with the cluster (issue #14).

One row per node, one column per bound pod, in the order the pods joined the node (the
order ``node.pods`` iterates in, which the Python path follows): priority, and GPUs, CPU,
memory and start time packed together so one gather serves all four. A pod that leaves
leaves a hole (priority ``EMPTY``); new pods are appended, and a full row is compacted,
keeping the order, before it grows by doubling. Updates are O(1) amortized per bind and
release; nothing is rebuilt per decision.
"""

from __future__ import annotations

import numpy as np

from scheduler_core.model import Node, Pod

EMPTY = np.iinfo(np.int64).max
"""Priority of a hole: never lower than a preemptor's."""
IN_GROUP = 1
"""Flag bit: the pod's workload is a pod group (moreImportantVictim ranks it first)."""
EVICT_WHOLE = 2
"""Flag bit: the pod's group has disruptionMode All (a victim unit spanning nodes)."""


class NodeArrays:
    __slots__ = (
        "flags",
        "free_cpu",
        "free_gpus",
        "free_mem",
        "gsig",
        "max_pods",
        "npods",
        "outcomes",
        "pack",
        "pods",
        "prio",
        "reprieves",
        "seq",
        "sig",
        "signatures",
        "slot_of",
        "stale",
        "used",
        "width",
    )

    def __init__(self, nodes: list[Node], width: int = 8) -> None:
        self.width = width
        self.free_gpus = np.array([n.free_gpus for n in nodes], dtype=np.int64)
        self.free_cpu = np.array([n.free_cpu for n in nodes], dtype=np.float64)
        self.free_mem = np.array([n.free_mem for n in nodes], dtype=np.float64)
        self.npods = np.array([n.npods for n in nodes], dtype=np.int64)
        self.max_pods = np.array([n.max_pods for n in nodes], dtype=np.int64)
        """Copies of the node's own counters, written after each change (same floats)."""
        count = len(nodes)
        self.prio = np.full((count, width), EMPTY, dtype=np.int64)
        self.pack = np.zeros((count, width, 4))
        """Per column: GPUs, CPU, memory, start time."""
        self.seq = np.zeros((count, width), dtype=np.int64)
        self.pods = np.full((count, width), None, dtype=object)
        """Per column: the pod itself, so a decision record can list a candidate's victims
        with one gather instead of a walk over the node's pods (a hole holds None)."""
        self.flags = np.zeros((count, width), dtype=np.int8)
        """Per column: :data:`IN_GROUP` | :data:`EVICT_WHOLE` of the pod's workload."""
        self.used = np.zeros(count, dtype=np.int64)
        """Columns in use per row, holes included."""
        self.slot_of: dict[int, int] = {}
        self.sig = np.zeros(count, dtype=np.int64)
        """Per row: the id of its pod-set signature (see :meth:`signature_ids`)."""
        self.gsig = np.zeros(count, dtype=np.int64)
        """Per row: the id of its signature with the pods' group flags (see
        :meth:`group_signature_ids`); the same id as ``sig`` where no pod has a flag."""
        self.stale = np.ones(count, dtype=bool)
        """Rows changed since their signature was last computed (computed on demand)."""
        self.signatures: dict[tuple[object, ...], int] = {}
        self.reprieves: dict[tuple[object, ...], tuple[object, ...]] = {}
        """SelectVictimsOnNode's outcome per (signature id, need, preemptor priority), as
        :func:`scheduler_core.fast_preemption._select_row` gives it: ids are never reused,
        so an outcome stays true of its signature."""
        self.outcomes: dict[tuple[object, ...], object] = {}
        """SelectVictimsOnNode's outcomes per signature id, one table per (preemptor
        priority, request, width): see :class:`scheduler_core.fast_preemption.Outcomes`."""

    def add(self, pod: Pod, node: Node) -> None:
        row = node.idx
        col = int(self.used[row])
        if col == self.width:
            col = self._compact(row)
        self.used[row] = col + 1
        self.slot_of[pod.seq] = col
        self.prio[row, col] = pod.priority
        self.pack[row, col] = (pod.gpus, pod.cpu, pod.mem, pod.bound_at)
        self.seq[row, col] = pod.seq
        self.pods[row, col] = pod
        workload = pod.workload
        self.flags[row, col] = IN_GROUP * workload.in_group + EVICT_WHOLE * workload.evict_whole
        self.counters(node)

    def stamp(self, pod: Pod, node: Node) -> None:
        """The pod's start time was set after it joined the node (bind after assign)."""
        self.pack[node.idx, self.slot_of[pod.seq], 3] = pod.bound_at
        self.stale[node.idx] = True

    def release(self) -> None:
        """Let go of the bound pods (:meth:`Engine.release`): a numpy object array is
        invisible to the cyclic collector, so the pods it holds (a pod reaches its
        workload, its application, the engine, the cluster and these arrays) would keep
        the whole run alive in a process that goes on to the next one."""
        self.pods = np.full((0, self.width), None, dtype=object)

    def discard(self, pod: Pod, node: Node) -> None:
        col = self.slot_of.pop(pod.seq)
        self.prio[node.idx, col] = EMPTY
        self.pods[node.idx, col] = None
        self.counters(node)

    def counters(self, node: Node) -> None:
        row = node.idx
        self.stale[row] = True
        self.free_gpus[row] = node.free_gpus
        self.free_cpu[row] = node.free_cpu
        self.free_mem[row] = node.free_mem
        self.npods[row] = node.npods

    def signature_ids(self, rows: np.ndarray) -> np.ndarray:
        """The signature id of each of ``rows``. Two rows with the same id hold pods of the
        same priorities and requests in the same columns, in the same MoreImportantPod
        order (priority, start, column), with the same free counters: SelectVictimsOnNode
        does the same float arithmetic on both and picks the same columns, so a decision
        evaluates one row per signature (a storm's full nodes are all alike). Computed
        lazily for rows changed since, so a change costs O(1) and each row is recomputed
        at most once per change."""
        self._refresh(rows)
        ids: np.ndarray = self.sig[rows]
        return ids

    def group_signature_ids(self, rows: np.ndarray) -> np.ndarray:
        """:meth:`signature_ids` that also tell the pods' group flags apart, for
        WorkloadAwarePreemption. Its moreImportantVictim order (priority, a group's pod
        before a lone pod, start, column) restricted to one priority and one flag is the
        MoreImportantPod order restricted to them, so rows alike here are reprieved
        alike by it too."""
        self._refresh(rows)
        ids: np.ndarray = self.gsig[rows]
        return ids

    def _refresh(self, rows: np.ndarray) -> None:
        stale = rows[self.stale[rows]]
        for row in stale.tolist():
            self.sig[row], self.gsig[row] = self._signature(row)
        self.stale[stale] = False

    def _signature(self, row: int) -> tuple[int, int]:
        used = int(self.used[row])
        prio = self.prio[row, :used].tolist()
        pack = self.pack[row, :used].tolist()
        live = sorted((-p, pack[col][3], col) for col, p in enumerate(prio) if p != EMPTY)
        key = (
            int(self.free_gpus[row]),
            float(self.free_cpu[row]),
            float(self.free_mem[row]),
            int(self.max_pods[row] - self.npods[row]),
            tuple((col, prio[col], *pack[col][:3]) for _, _, col in live),
        )
        signatures = self.signatures
        sig = signatures.setdefault(key, len(signatures))
        flags = self.flags[row, :used].tolist()
        marks = tuple(flags[col] for _, _, col in live)
        if not any(marks):
            return sig, sig
        return sig, signatures.setdefault(("flags", sig, marks), len(signatures))

    def _compact(self, row: int) -> int:
        """Close the holes of a full row, order kept; grow if none. Returns the next free
        column."""
        live = np.flatnonzero(self.prio[row] != EMPTY)
        if len(live) == self.width:
            self._grow()
            return len(live)
        keep = len(live)
        self.prio[row, :keep] = self.prio[row, live]
        self.prio[row, keep:] = EMPTY
        self.pack[row, :keep] = self.pack[row, live]
        self.seq[row, :keep] = self.seq[row, live]
        self.pods[row, :keep] = self.pods[row, live]
        self.pods[row, keep:] = None
        self.flags[row, :keep] = self.flags[row, live]
        for col, seq in enumerate(self.seq[row, :keep].tolist()):
            self.slot_of[seq] = col
        self.used[row] = keep
        self.stale[row] = True
        return keep

    def _grow(self) -> None:
        old = self.width
        self.width = old * 2
        for name in ("prio", "pack", "seq", "flags", "pods"):
            array = getattr(self, name)
            fill = EMPTY if name == "prio" else None if name == "pods" else 0
            wider = np.full((array.shape[0], self.width, *array.shape[2:]), fill, dtype=array.dtype)
            wider[:, :old] = array
            setattr(self, name, wider)
