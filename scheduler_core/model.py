"""Runtime objects of one simulation: nodes, pods, workloads.

Plain classes with ``__slots__``: the engine touches them millions of times, and the
only state lives in the engine that owns them.
"""

from __future__ import annotations

from enum import IntEnum
from typing import TYPE_CHECKING

if TYPE_CHECKING:
    from scheduler_core.app import App
    from scheduler_core.engine import FailureStreak
    from scheduler_core.spec import Taint
    from scheduler_core.spec import Workload as WorkloadSpec


class PodState(IntEnum):
    PENDING = 0
    STARTING = 1
    """Bound to a node, pulling images / loading weights: not Ready yet."""
    READY = 2
    TERMINATING = 3
    SUCCEEDED = 4
    GONE = 5
    """Deleted after termination (evicted, killed, node lost)."""


HOLDING_STATES = frozenset((PodState.STARTING, PodState.READY, PodState.TERMINATING))
"""The states of a pod that holds its node's resources. A set made once: a tuple of enum
members written in a test is built anew each time (0.22 µs against 0.03 µs for the set),
and these tests run for every pod a decision, a gang or a node walk looks at."""
RUNNING_STATES = frozenset((PodState.STARTING, PodState.READY))
"""Bound and not terminating."""


class Node:
    __slots__ = (
        "alive",
        "capacity",
        "cordoned",
        "cpu",
        "dev_free",
        "free_cpu",
        "free_gpus",
        "free_mem",
        "gpu_model",
        "gpus",
        "idx",
        "labels",
        "max_pods",
        "mem",
        "mig",
        "mig_free",
        "name",
        "nominated",
        "npods",
        "pods",
        "reachable",
        "shape",
        "spot",
        "taints",
    )

    def __init__(
        self,
        idx: int,
        name: str,
        gpus: int,
        cpu: float,
        mem: float,
        max_pods: int,
        labels: dict[str, str],
        taints: tuple[Taint, ...],
        spot: bool,
    ) -> None:
        self.idx = idx
        self.name = name
        self.gpus, self.cpu, self.mem, self.max_pods = gpus, cpu, mem, max_pods
        self.free_gpus, self.free_cpu, self.free_mem, self.npods = gpus, cpu, mem, 0
        self.labels = labels
        self.taints = taints
        self.spot = spot
        self.alive = True
        self.cordoned = False
        self.shape = 0
        self.pods: dict[Pod, None] = {}
        self.nominated: dict[Pod, None] = {}
        self.reachable: list[int] = []
        """Per priority threshold k: free GPUs plus GPUs of pods below threshold k — the most
        a preemptor of that priority could ever get here (see Cluster.thresholds)."""
        self.gpu_model = ""
        self.dev_free: list[int] | None = None
        """Free milli-GPU per device, when the experiment shares devices (devices.py);
        then ``free_gpus`` counts the fully free devices. None: whole GPUs only."""
        self.mig: dict[str, int] = {}
        """MIG instances per profile (nvidia.com/mig-<profile>), and those free."""
        self.mig_free: dict[str, int] = {}
        self.capacity: float = gpus
        """GPUs the node offers, its MIG instances counted as their fractions
        (spec.mig_gpu_fraction): what it takes away when lost and gives back when
        repaired, in the same unit as Cluster.gpu_capacity_at_start."""

    @property
    def schedulable(self) -> bool:
        return self.alive and not self.cordoned

    def __repr__(self) -> str:
        return f"Node({self.name}, free={self.free_gpus}/{self.gpus})"


class Pod:
    __slots__ = (
        "attempts",
        "backoff_until",
        "bound_at",
        "cpu",
        "created",
        "devices",
        "failures",
        "gpus",
        "mem",
        "member",
        "mig",
        "milli",
        "name",
        "node",
        "nominated",
        "parked_at",
        "preempted",
        "priority",
        "queue_ts",
        "ready_at",
        "replacement",
        "seq",
        "state",
        "stop_at",
        "submitted",
        "workload",
    )

    def __init__(
        self, seq: int, name: str, workload: Workload, member: int, created: float
    ) -> None:
        spec = workload.spec
        self.seq = seq
        self.name = name
        self.workload = workload
        self.member = member
        self.gpus, self.cpu, self.mem = spec.gpus, spec.cpu, spec.memory
        self.milli = spec.gpu_milli or 0
        """A share of one device in milli-GPU (then ``gpus`` is 0)."""
        self.mig: tuple[tuple[str, int], ...] = tuple(sorted(spec.mig.items()))
        self.devices: tuple[int, ...] = ()
        """The devices it holds while bound, on a node that tracks devices."""
        self.priority = workload.priority
        self.created = created
        self.queue_ts = created
        self.state = PodState.PENDING
        self.node: Node | None = None
        self.nominated: Node | None = None
        self.bound_at = 0.0
        self.ready_at = 0.0
        self.stop_at = 0.0
        self.attempts = 0
        self.backoff_until = created
        """No backoff before its first attempt: a pod created before t=0 is tried at once."""
        self.parked_at = 0.0
        self.failures: FailureStreak | None = None
        self.submitted = False
        """Exists for the API server (not refused by a ResourceQuota)."""
        self.replacement = False
        """Created by a controller to replace an evicted pod (counts as a restart)."""
        self.preempted = False
        """DisruptionTarget=True, reason PreemptionByScheduler: terminating as a victim."""

    def __lt__(self, other: Pod) -> bool:
        return self.seq < other.seq

    def __hash__(self) -> int:
        return self.seq

    def __repr__(self) -> str:
        return f"Pod({self.name}, {self.state.name})"

    @property
    def gpu_amount(self) -> float:
        """GPUs it holds, a share or a MIG instance counted as its fraction of a GPU
        (``spec.Workload.gpu_amount``): what events and metrics add."""
        if self.milli:
            return self.milli / 1000
        return self.workload.spec.gpu_amount if self.mig else self.gpus

    @property
    def never_preempts(self) -> bool:
        return self.workload.never_preempts


class Workload:
    """A submitted workload and its member slots; ``app`` models the application inside."""

    __slots__ = (
        "all_or_nothing",
        "app",
        "arrival",
        "constraints",
        "evict_whole",
        "failed",
        "fits_nowhere",
        "idx",
        "min_count",
        "name",
        "never_preempts",
        "pod_count",
        "priority",
        "priority_class",
        "signature",
        "slots",
        "spec",
        "suspended",
    )

    def __init__(
        self, idx: int, spec: WorkloadSpec, priority: int, priority_class: str, never_preempts: bool
    ) -> None:
        self.idx = idx
        self.spec = spec
        self.name = spec.name
        self.priority = priority
        self.priority_class = priority_class
        self.never_preempts = never_preempts
        self.arrival = spec.arrival
        self.slots: list[Pod | None] = [None] * spec.members
        """The current pod of each member slot (a replacement takes the slot over)."""
        self.pod_count = 0
        self.constraints = (
            tuple(sorted(spec.node_selector.items())),
            tuple(spec.tolerations),
            spec.gpus,
            spec.cpu,
            spec.memory,
            spec.gpu_milli,
            tuple(sorted(spec.mig.items())),
            tuple(spec.gpu_models),
        )
        """What decides which nodes a member may use at all."""
        self.signature = (self.constraints, priority, never_preempts)
        """Members of workloads with equal signatures get equal scheduling verdicts."""
        self.suspended = False
        """Evicted by its admission queue: its pods are deleted and not replaced."""
        self.failed = False
        """Out of retries (a Job's backoffLimit, Kueue's backoffLimitCount): no pod again."""
        self.fits_nowhere = False
        """A member is larger than every node (only a snapshot may hold one): Pending."""
        group = spec.pod_group
        self.all_or_nothing = group is not None and group.scheduling == "gang"
        """Gang: no member binds unless minCount can run together (PodGroup, §5)."""
        self.min_count = group.min_count if group is not None else spec.members
        self.evict_whole = group is not None and group.disruption_mode == "All"
        """disruptionMode All: one victim unit, evicted whole or not at all (§6.1)."""
        self.app: App

    @property
    def gpus_total(self) -> int:
        return self.spec.gpus * self.spec.members

    @property
    def gpu_amount_total(self) -> float:
        """GPUs all members hold, shares as fractions: the factor of GPU-seconds."""
        return self.spec.gpu_amount * self.spec.members

    @property
    def in_group(self) -> bool:
        return self.spec.pod_group is not None

    def holding(self) -> list[Pod]:
        """Members bound to a node (starting, ready or terminating)."""
        return [
            p
            for p in self.slots
            if p is not None and p.node is not None and p.state in HOLDING_STATES
        ]

    def running_members(self) -> int:
        """Members bound and not terminating: what counts towards minCount."""
        return sum(1 for p in self.slots if p is not None and p.state in RUNNING_STATES)

    def __repr__(self) -> str:
        return f"Workload({self.name})"
