"""The experiment spec: the single source of truth for what a user can ask for.

The browser form, the REST API, the CLI and the trace importers all validate through
:func:`parse_spec`, so an error reads the same everywhere: a dotted path to the field
(``workloads[2].gpus``) and what is wrong with it.

Field names are camelCase, like the Kubernetes YAML our users write every day; the
Python attributes are snake_case. Durations are seconds, or strings such as ``"30m"``.
"""

from __future__ import annotations

import copy
import itertools
import json
import math
from collections.abc import Iterable, Mapping
from dataclasses import dataclass
from enum import StrEnum
from typing import Annotated, Any, Literal

import yaml
from pydantic import (
    BaseModel,
    BeforeValidator,
    ConfigDict,
    Field,
    ValidationError,
    field_validator,
    model_validator,
)
from pydantic.alias_generators import to_camel

from scheduler_core import documents
from scheduler_core.durations import parse_duration
from scheduler_core.gc_pause import gc_paused
from scheduler_core.limits import LIBRARY_LIMITS, Limits, count_errors

HIGHEST_USER_DEFINABLE_PRIORITY = 1_000_000_000
SYSTEM_CLUSTER_CRITICAL = 2_000_000_000
SYSTEM_NODE_CRITICAL = 2_000_001_000
SYSTEM_CLASSES = {
    "system-cluster-critical": SYSTEM_CLUSTER_CRITICAL,
    "system-node-critical": SYSTEM_NODE_CRITICAL,
}

MAX_SECONDS = 100 * 365 * 86400.0
"""No duration, arrival or time in a spec may exceed a century: beyond that, float
arithmetic on seconds loses the millisecond and the run means nothing."""
MIN_CHECKPOINT_INTERVAL_SECONDS = 1.0
"""Checkpoints are computed in closed form, but each one written is an event in the log:
one every millisecond over a month would be 2.6 billion of them. No real job checkpoints
more than once a second."""
MAX_NODE_GPUS = 1024
"""GPUs on one node: the largest real nodes have 8 to 16; a rack-scale system counted
as one node has 72. ``gpus: 1000000000`` is a typo, and is refused as one."""
MAX_NODE_CPU = 100_000.0
MAX_NODE_MEMORY_GIB = 1024 * 1024.0
MAX_PODS_PER_NODE = 100_000
MILLI_PER_GPU = 1000
"""One device's capacity in milli-GPU: shares on one device never add up to more."""
MIG_PROFILE = r"^[1-7]g\.[0-9]+gb(\+me)?$"
"""A MIG profile as the NVIDIA device plugin names it (``1g.10gb``, ``3g.40gb``,
``1g.10gb+me``); the resource is ``nvidia.com/mig-<profile>``."""
MigProfile = Annotated[str, Field(pattern=MIG_PROFILE)]

MIG_COMPUTE_SLICES = 7
"""Compute slices (GPCs) of a MIG-capable device: 7 on A100, H100, H200, B200 and GB200."""
FOUR_SLICE_MIG_PROFILES = frozenset({"1g.6gb", "2g.12gb", "4g.24gb"})
"""The profiles of the A30 (24 GB), the one MIG-capable device with 4 compute slices
(NVIDIA's MIG user guide, "Supported MIG Profiles"). No 7-slice device has a profile of
these names, so the name alone says which device a profile is carved from."""


def mig_gpu_fraction(profile: str) -> float:
    """The fraction of one GPU a MIG instance of ``profile`` is: its compute slices (the
    ``N`` of ``Ng.XXgb``) over its device's, so ``3g.40gb`` is 3/7 of an A100 and
    ``2g.12gb`` half an A30. Compute, not memory: ``4g.40gb`` holds half of an A100's
    memory but 4/7 of its SMs, and GPU-seconds count the SMs a pod keeps from others."""
    name = profile.removesuffix("+me")
    slices = 4 if name in FOUR_SLICE_MIG_PROFILES else MIG_COMPUTE_SLICES
    return int(name.split("g.", 1)[0]) / slices


def mig_gpus(mig: Mapping[str, int]) -> float:
    """GPUs that ``count`` instances per profile add up to (:func:`mig_gpu_fraction`)."""
    return sum(count * mig_gpu_fraction(profile) for profile, count in mig.items())


SEED_STRIDE = 1_000_003
"""Replication r of a run with seed s simulates with seed ``s * SEED_STRIDE + r``."""
MAX_SEED = (2**63 - 1) // SEED_STRIDE - 1_000_000
"""Every replication's seed must fit the signed 64-bit column it is stored in."""
MAX_COUNT = 2**31 - 1
"""Every other count (quotas, budgets, queue sizes): a 32-bit integer, like Kubernetes'."""


class SpecError(ValueError):
    """A spec that cannot be run. ``errors`` lists ``{"path": ..., "message": ...}``."""

    def __init__(self, errors: list[dict[str, str]]) -> None:
        self.errors = errors
        super().__init__(
            "; ".join(f"{e['path']}: {e['message']}" if e["path"] else e["message"] for e in errors)
        )


def _parse_duration(value: Any) -> Any:
    """Accept ``90``, ``"90s"``, ``"30m"``, ``"1h30m"`` so specs read like people talk."""
    return parse_duration(value) if isinstance(value, str) else value


Seconds = Annotated[float, BeforeValidator(_parse_duration), Field(ge=0, le=MAX_SECONDS)]
SignedSeconds = Annotated[
    float, BeforeValidator(_parse_duration), Field(ge=-MAX_SECONDS, le=MAX_SECONDS)
]


def _strict_int(value: Any) -> Any:
    """Reject 1.5 GPUs instead of silently rounding: a pod holds whole devices."""
    if isinstance(value, bool):
        raise ValueError("must be a whole number, not a boolean")
    if isinstance(value, float):
        if not value.is_integer():
            raise ValueError(f"must be a whole number, got {value}")
        return int(value)
    return value


WholeCount = Annotated[int, BeforeValidator(_strict_int), Field(ge=0, le=MAX_COUNT)]
PositiveCount = Annotated[int, BeforeValidator(_strict_int), Field(ge=1, le=MAX_COUNT)]


class PreemptionPolicy(StrEnum):
    PREEMPT_LOWER_PRIORITY = "PreemptLowerPriority"
    NEVER = "Never"


class RecoveryModel(StrEnum):
    SYNCHRONOUS = "synchronous"
    ELASTIC = "elastic"
    INDEPENDENT = "independent"
    SERVING = "serving"
    INTERACTIVE = "interactive"


class WorkloadKind(StrEnum):
    TRAINING = "training"
    ELASTIC_TRAINING = "elastic-training"
    EVALUATION = "evaluation"
    INFERENCE = "inference"
    NOTEBOOK = "notebook"
    BATCH = "batch"


class ControllerKind(StrEnum):
    NONE = "none"
    JOB = "job"
    JOBSET = "jobset"
    DEPLOYMENT = "deployment"


class Model(BaseModel):
    """Base for every spec model: camelCase in documents, unknown fields refused."""

    model_config = ConfigDict(
        alias_generator=to_camel,
        populate_by_name=True,
        extra="forbid",
        frozen=True,
        use_enum_values=False,
        allow_inf_nan=False,
    )


class Taint(Model):
    key: str
    value: str = ""
    effect: Literal["NoSchedule", "NoExecute", "PreferNoSchedule"] = "NoSchedule"


class Toleration(Model):
    key: str = ""
    operator: Literal["Equal", "Exists"] = "Equal"
    value: str = ""
    effect: Literal["NoSchedule", "NoExecute", "PreferNoSchedule", ""] = ""

    def tolerates(self, taint: Taint) -> bool:
        """Kubernetes toleration matching: empty key with Exists tolerates everything."""
        if self.effect and self.effect != taint.effect:
            return False
        if not self.key:
            return self.operator == "Exists"
        if self.key != taint.key:
            return False
        return self.operator == "Exists" or self.value == taint.value


class NodeShape(Model):
    gpus: WholeCount = Field(default=8, le=MAX_NODE_GPUS)
    gpu_model: str = Field(
        default="",
        max_length=63,
        description="the model of the node's GPUs (openb's gpu_spec, e.g. V100M16); "
        "a workload's gpuModels selects on it",
    )
    mig: dict[MigProfile, PositiveCount] = Field(
        default_factory=dict,
        description="MIG instances per profile (nvidia.com/mig-<profile>), besides the "
        "`gpus` whole devices: e.g. {1g.10gb: 7}",
    )
    cpu: float = Field(default=96, ge=0, le=MAX_NODE_CPU)
    memory: float = Field(default=1024, ge=0, le=MAX_NODE_MEMORY_GIB, description="GiB")
    max_pods: PositiveCount = Field(default=110, le=MAX_PODS_PER_NODE)
    labels: dict[str, str] = Field(default_factory=dict)
    taints: list[Taint] = Field(default_factory=list)
    spot: bool = False


STANDBY_ACTIVATION_SECONDS = {"warm": 60.0, "cold": 900.0}
"""How long a spare takes to enter service when none is given: a warm standby is booted
and joined, only cordoned (a minute to health-check and uncordon); a cold spare is off
and must be provisioned, imaged and joined (a quarter of an hour)."""


class Standby(Model):
    """A pool of spare nodes held out of service until a node fails (docs/failures.md,
    "Spare and standby pools"): each failure calls one spare in, which serves after
    ``activationSeconds``; the repaired node then becomes a spare itself."""

    mode: Literal["warm", "cold"] = Field(
        default="warm",
        description="warm: booted and joined, cordoned; cold: powered off, "
        "provisioned on demand (only the default delay differs)",
    )
    activation_seconds: Seconds | None = Field(
        default=None, description="failure until the spare takes pods (default warm 60, cold 900)"
    )
    replaces: str | None = Field(
        default=None, description="only failures of this pool (default: any serving node)"
    )

    @property
    def delay(self) -> float:
        """The activation delay, the mode's default when none is given."""
        if self.activation_seconds is not None:
            return self.activation_seconds
        return STANDBY_ACTIVATION_SECONDS[self.mode]


class NodePool(NodeShape):
    name: str = Field(min_length=1)
    count: PositiveCount = 1
    standby: Standby | None = Field(
        default=None, description="a spare pool: out of service until a failure calls it in"
    )


class NamedNode(NodeShape):
    name: str = Field(min_length=1)


class Cluster(Model):
    node_pools: list[NodePool] = Field(default_factory=list)
    nodes: list[NamedNode] = Field(default_factory=list)

    @model_validator(mode="after")
    def _has_nodes(self) -> Cluster:
        if not self.node_pools and not self.nodes:
            raise ValueError("the cluster needs at least one node pool or node")
        return self

    def node_names(self) -> list[str]:
        """Every node's name in a stable order: pools first (``pool-0``...), then named nodes."""
        names = [f"{p.name}-{i}" for p in self.node_pools for i in range(p.count)]
        return names + [n.name for n in self.nodes]


class PriorityClass(Model):
    name: str = Field(min_length=1)
    value: Annotated[int, BeforeValidator(_strict_int)]
    preemption_policy: PreemptionPolicy = PreemptionPolicy.PREEMPT_LOWER_PRIORITY
    global_default: bool = False
    description: str = ""

    @field_validator("name")
    @classmethod
    def _not_reserved(cls, name: str) -> str:
        if name.startswith("system-"):
            raise ValueError("names starting with 'system-' are reserved for the system classes")
        return name

    @field_validator("value")
    @classmethod
    def _user_range(cls, value: int) -> int:
        if value > HIGHEST_USER_DEFINABLE_PRIORITY:
            raise ValueError(
                f"{value} is above {HIGHEST_USER_DEFINABLE_PRIORITY:,}, the highest value a "
                "user-defined PriorityClass may have"
            )
        if value < -(2**31):
            raise ValueError("must fit in a 32-bit integer")
        return value


class Checkpoint(Model):
    interval_seconds: Seconds | None = Field(
        default=None, description="seconds of running between checkpoints; null: never"
    )
    write_seconds: Seconds = 0.0
    on_sigterm: bool = False

    @field_validator("interval_seconds")
    @classmethod
    def _positive_interval(cls, value: float | None) -> float | None:
        if value is not None and value < MIN_CHECKPOINT_INTERVAL_SECONDS:
            raise ValueError(
                f"must be at least {MIN_CHECKPOINT_INTERVAL_SECONDS:g} s "
                "(or null for no checkpoints)"
            )
        return value


class Recovery(Model):
    model: RecoveryModel = RecoveryModel.INDEPENDENT
    min_members: PositiveCount | None = Field(
        default=None, description="elastic: fewest live members that still make progress"
    )


class Controller(Model):
    kind: ControllerKind = ControllerKind.JOB
    pod_replacement_policy: Literal["TerminatingOrFailed", "Failed"] = "TerminatingOrFailed"
    restart: Literal["member", "group"] = Field(
        default="member",
        description="jobset: recreate only the failed member (in-place) or the whole group",
    )
    backoff_limit: WholeCount | None = Field(
        default=None,
        description="job: pod failures (preemptions and evictions included) before "
        "the Job fails with BackoffLimitExceeded; replacements wait 10 s doubling to 10 min. "
        "null: failures are not counted (Kubernetes' default is 6)",
    )


class PodDisruptionBudget(Model):
    min_available: WholeCount | None = None
    max_unavailable: WholeCount | None = None
    disrupted_pods: WholeCount = Field(
        default=0,
        description="status.disruptedPods at t=0: pods whose eviction was "
        "accepted but which are not deleted yet; they count against the budget until the "
        "disruption controller drops them (2 minutes)",
    )

    @model_validator(mode="after")
    def _exactly_one(self) -> PodDisruptionBudget:
        if (self.min_available is None) == (self.max_unavailable is None):
            raise ValueError("set exactly one of minAvailable or maxUnavailable")
        return self


class TopologyConstraint(Model):
    """Kueue TAS-style placement of a group over node labels (kubernetes-preemption.md §8)."""

    levels: list[str] = Field(
        min_length=1, description="label keys, outermost first: e.g. [block, rack]"
    )
    required: str | None = Field(default=None, description="all in one domain of this level")
    preferred: str | None = Field(
        default=None, description="one domain if possible, else the level above, else spread"
    )
    algorithm: Literal["BestFit", "LeastFreeCapacity"] = "BestFit"

    @model_validator(mode="after")
    def _level(self) -> TopologyConstraint:
        chosen = [v for v in (self.required, self.preferred) if v is not None]
        if len(chosen) > 1:
            raise ValueError("set one of required or preferred, not both")
        for level in chosen:
            if level not in self.levels:
                raise ValueError(f"'{level}' is not one of levels {self.levels}")
        return self


class PodGroup(Model):
    min_count: PositiveCount
    scheduling: Literal["gang", "basic"] = Field(
        default="gang", description="gang: minCount members together or none; basic: one by one"
    )
    disruption_mode: Literal["Single", "All"] = "Single"
    priority_class_name: str | None = None
    topology: TopologyConstraint | None = None

    @model_validator(mode="after")
    def _all_needs_gang(self) -> PodGroup:
        if self.disruption_mode == "All" and self.scheduling == "basic":
            raise ValueError("disruptionMode All is not allowed with the basic scheduling policy")
        return self


class BorrowWithinCohort(Model):
    """Kueue ``preemption.borrowWithinCohort`` (kubernetes-preemption.md §7.1, §7.3): may the
    head reclaim lent quota from a lower-priority borrower while it borrows itself."""

    policy: Literal["Never", "LowerPriority"] = "Never"
    max_priority_threshold: Annotated[int, BeforeValidator(_strict_int)] | None = Field(
        default=None,
        description="only candidates at or below this priority may be "
        "preempted while the head borrows",
    )


class QueuePreemption(Model):
    """Kueue ClusterQueue preemption (kubernetes-preemption.md §7.1)."""

    within_cluster_queue: Literal["Never", "LowerPriority", "LowerOrNewerEqualPriority"] = "Never"
    reclaim_within_cohort: Literal["Never", "LowerPriority", "Any"] = "Never"
    borrow_within_cohort: BorrowWithinCohort | None = None

    @model_validator(mode="after")
    def _borrow_needs_reclaim(self) -> QueuePreemption:
        """Kueue's validation: borrowWithinCohort may not be combined with
        reclaimWithinCohort Never (§7.1)."""
        if (
            self.borrow_within_cohort is not None
            and self.borrow_within_cohort.policy != "Never"
            and self.reclaim_within_cohort == "Never"
        ):
            raise ValueError("borrowWithinCohort needs reclaimWithinCohort other than Never")
        return self


QUEUE_RESOURCES = ("gpus", "cpu", "memory")
"""What a ClusterQueue's quota can cover, in the workload's own units (GPUs, cores, GiB):
Kueue's ``nvidia.com/gpu``, ``cpu`` and ``memory``."""


class FlavorResourceQuota(Model):
    """One resource's quota in one flavor (Kueue ``resourceGroups[].flavors[].resources[]``)."""

    name: Literal["gpus", "cpu", "memory"]
    nominal_quota: float = Field(ge=0, le=MAX_COUNT)
    borrowing_limit: float | None = Field(default=None, ge=0, le=MAX_COUNT)
    lending_limit: float | None = Field(default=None, ge=0, le=MAX_COUNT)

    @model_validator(mode="after")
    def _lending_within_nominal(self) -> FlavorResourceQuota:
        if self.name == "gpus" and any(
            v is not None and not float(v).is_integer()
            for v in (self.nominal_quota, self.borrowing_limit, self.lending_limit)
        ):
            raise ValueError("a GPU quota must be a whole number")
        if self.lending_limit is not None and self.lending_limit > self.nominal_quota:
            raise ValueError(
                f"lendingLimit ({self.lending_limit:g}) is above nominalQuota "
                f"({self.nominal_quota:g})"
            )
        return self


class FlavorQuotas(Model):
    name: str = Field(min_length=1, description="a ResourceFlavor")
    resources: list[FlavorResourceQuota] = Field(min_length=1)


class ResourceGroup(Model):
    """Resources that are assigned a flavor together (Kueue: each flavor of the group
    lists a quota for every covered resource)."""

    covered_resources: list[Literal["gpus", "cpu", "memory"]] = Field(min_length=1)
    flavors: list[FlavorQuotas] = Field(min_length=1, max_length=16)

    @model_validator(mode="after")
    def _every_flavor_covers_the_group(self) -> ResourceGroup:
        covered = set(self.covered_resources)
        if len(covered) != len(self.covered_resources):
            raise ValueError("coveredResources lists a resource twice")
        for i, flavor in enumerate(self.flavors):
            names = [r.name for r in flavor.resources]
            if set(names) != covered or len(names) != len(covered):
                raise ValueError(
                    f"flavors[{i}] ('{flavor.name}') must list exactly the "
                    f"coveredResources {sorted(covered)}, got {names}"
                )
        return self


FungibilityBorrow = Literal["MayStopSearch", "TryNextFlavor"]


def _fungibility_alias(value: Any) -> Any:
    """Kueue v1beta1 spelled MayStopSearch as ``Borrow`` (whenCanBorrow) and ``Preempt``
    (whenCanPreempt); v1beta2 renamed both."""
    return "MayStopSearch" if value in ("Borrow", "Preempt") else value


class FlavorFungibility(Model):
    """Kueue ``flavorFungibility`` (docs/kubernetes-rules.md "Flavor fungibility"): whether
    the flavor search stops at a flavor that needs borrowing or preemption."""

    when_can_borrow: Annotated[FungibilityBorrow, BeforeValidator(_fungibility_alias)] = (
        "MayStopSearch"
    )
    when_can_preempt: Annotated[FungibilityBorrow, BeforeValidator(_fungibility_alias)] = (
        "TryNextFlavor"
    )


class QueueFairSharing(Model):
    weight: float = Field(
        default=1.0,
        ge=0,
        le=MAX_COUNT,
        description="a larger weight lowers the queue's share (DRS / weight)",
    )


FairSharingStrategy = Literal["LessThanOrEqualToFinalShare", "LessThanInitialShare"]
DEFAULT_FAIR_SHARING_STRATEGIES: tuple[FairSharingStrategy, ...] = (
    "LessThanOrEqualToFinalShare",
    "LessThanInitialShare",
)


class FairSharingConfig(Model):
    """Kueue Configuration ``fairSharing`` (docs/kubernetes-rules.md "Fair sharing"): with
    it, cohort preemption follows dominant resource shares instead of classic preemption."""

    preemption_strategies: list[FairSharingStrategy] = Field(
        default_factory=lambda: list(DEFAULT_FAIR_SHARING_STRATEGIES)
    )

    @model_validator(mode="after")
    def _allowed_lists(self) -> FairSharingConfig:
        allowed = (
            ["LessThanOrEqualToFinalShare"],
            ["LessThanInitialShare"],
            ["LessThanOrEqualToFinalShare", "LessThanInitialShare"],
        )
        if self.preemption_strategies not in allowed:
            raise ValueError(
                "preemptionStrategies must be [LessThanOrEqualToFinalShare], "
                "[LessThanInitialShare] or [LessThanOrEqualToFinalShare, "
                "LessThanInitialShare]"
            )
        return self


class AdmissionQueue(Model):
    """A queue above the scheduler (Polyaxon queue / Kueue ClusterQueue): a workload that
    waits here has no pods yet, so no PriorityClass can help it; its queue priority can."""

    name: str = Field(min_length=1)
    concurrency: PositiveCount | None = Field(
        default=None, description="workloads admitted at once"
    )
    nominal_gpus: WholeCount | None = Field(default=None, description="GPUs admitted at once")
    cohort: str | None = Field(default=None, description="queues that lend unused quota")
    borrowing_limit_gpus: WholeCount | None = None
    order_by: Literal["queuePriority", "priority"] = Field(
        default="queuePriority",
        description="queuePriority (Polyaxon-like) or the workload's "
        "PriorityClass (Kueue's StrictFIFO), then arrival",
    )
    preemption: QueuePreemption = Field(default_factory=QueuePreemption)
    queueing_strategy: Literal["StrictFIFO", "BestEffortFIFO"] = Field(
        default="StrictFIFO",
        description="StrictFIFO: a head that does not fit blocks the "
        "queue; BestEffortFIFO: the workloads behind it may be admitted meanwhile",
    )
    resource_groups: list[ResourceGroup] = Field(
        default_factory=list,
        max_length=16,
        description="Kueue quota per flavor and "
        "resource (instead of nominalGpus); resources no group covers are not limited",
    )
    flavor_fungibility: FlavorFungibility = Field(default_factory=FlavorFungibility)
    fair_sharing: QueueFairSharing = Field(default_factory=QueueFairSharing)

    @model_validator(mode="after")
    def _one_way_to_give_quota(self) -> AdmissionQueue:
        if self.resource_groups and (
            self.nominal_gpus is not None or self.borrowing_limit_gpus is not None
        ):
            raise ValueError(
                "give the quota either as nominalGpus/borrowingLimitGpus or as "
                "resourceGroups, not both"
            )
        seen: set[str] = set()
        for i, group in enumerate(self.resource_groups):
            overlap = seen & set(group.covered_resources)
            if overlap:
                raise ValueError(
                    f"resourceGroups[{i}] covers {sorted(overlap)}, already "
                    "covered by an earlier group"
                )
            seen |= set(group.covered_resources)
        return self


class ResourceQuota(Model):
    """A namespace ResourceQuota scoped to a PriorityClass: pods beyond it are not created."""

    priority_class_name: str
    gpus: WholeCount


class Workload(Model):
    name: str = Field(min_length=1, pattern=r"^[a-z0-9]([-a-z0-9.]*[a-z0-9])?$")
    kind: WorkloadKind = WorkloadKind.BATCH
    members: PositiveCount = 1
    gpus: WholeCount = 1
    gpu_milli: int | None = Field(
        default=None,
        ge=1,
        lt=MILLI_PER_GPU,
        description="a share of one GPU per member in milli-GPU (1-999), instead of gpus",
    )
    gpu_models: list[str] = Field(
        default_factory=list,
        max_length=64,
        description="GPU models a member may run on (any of them; empty: any model)",
    )
    mig: dict[MigProfile, PositiveCount] = Field(
        default_factory=dict,
        description="MIG instances per member by profile (nvidia.com/mig-<profile>), "
        "instead of gpus",
    )
    cpu: float = Field(default=4, ge=0)
    memory: float = Field(default=32, ge=0, description="GiB")
    priority_class_name: str | None = None
    arrival: SignedSeconds = 0.0
    duration_seconds: Seconds | None = Field(
        default=None, description="seconds of work at full strength; null: runs to the horizon"
    )
    termination_grace_period_seconds: Seconds = 30.0
    stop_seconds: Seconds = Field(
        default=5.0, description="how long the application really needs to stop after SIGTERM"
    )
    startup_seconds: Seconds = Field(default=0.0, description="image pull + loading until Ready")
    checkpoint: Checkpoint = Field(default_factory=Checkpoint)
    recovery: Recovery = Field(default_factory=Recovery)
    controller: Controller = Field(default_factory=Controller)
    pdb: PodDisruptionBudget | None = None
    pod_group: PodGroup | None = None
    node_selector: dict[str, str] = Field(default_factory=dict)
    tolerations: list[Toleration] = Field(default_factory=list)
    urgent: bool = Field(default=False, description="the preemptor the experiment is about")
    queue: str | None = Field(default=None, description="admission queue it waits in")
    queue_priority: int = Field(default=0, description="order within its admission queue")

    @model_validator(mode="before")
    @classmethod
    def _no_whole_gpus_with_a_share(cls, data: Any) -> Any:
        """``gpuMilli`` or ``mig`` replace ``gpus``: its default of 1 does not apply."""
        shared = isinstance(data, dict) and (
            data.get("gpuMilli", data.get("gpu_milli")) is not None or bool(data.get("mig"))
        )
        return {**data, "gpus": 0} if shared and "gpus" not in data else data

    @property
    def shares_a_gpu(self) -> bool:
        """A member holds a fraction of one device, not whole devices."""
        return self.gpu_milli is not None

    @property
    def gpu_amount(self) -> float:
        """GPUs one member holds, a share counted as its fraction (600 milli: 0.6) and a
        MIG instance as its compute slices' (``3g.40gb``: 3/7), so GPU-seconds of
        useful, lost or stranded work count shared and partitioned devices too."""
        if self.gpu_milli is not None:
            return self.gpu_milli / MILLI_PER_GPU
        return self.gpus + mig_gpus(self.mig) if self.mig else self.gpus

    @model_validator(mode="after")
    def _consistent(self) -> Workload:
        if self.gpu_milli is not None and self.gpus:
            raise ValueError(
                f"gpuMilli ({self.gpu_milli}) replaces gpus ({self.gpus}): set one of them"
            )
        if self.gpu_milli is not None and self.mig:
            raise ValueError("gpuMilli and mig are two ways to share a GPU: set one of them")
        if self.pod_group and self.pod_group.min_count > self.members:
            raise ValueError(
                f"podGroup.minCount ({self.pod_group.min_count}) is above members ({self.members})"
            )
        if self.recovery.min_members and self.recovery.min_members > self.members:
            raise ValueError(
                f"recovery.minMembers ({self.recovery.min_members}) is above members "
                f"({self.members})"
            )
        return self


class InitialPod(Model):
    """A pod of the recorded cluster: bound to ``node`` (started at ``startedAt``), or being
    deleted there (``terminatingUntil``), or pending and nominated to it (``nominated``)."""

    workload: str
    node: str
    started_at: SignedSeconds = Field(default=0.0, le=0, description="<= 0: before the run starts")
    member: WholeCount | None = None
    terminating_until: Seconds | None = Field(
        default=None,
        description="the pod has a deletionTimestamp: it frees its resources "
        "at this time (seconds from t=0)",
    )
    nominated: bool = Field(
        default=False,
        description="the pod is not bound: it is pending, with status.nominatedNodeName = node",
    )

    @model_validator(mode="after")
    def _one_state(self) -> InitialPod:
        if self.nominated and self.terminating_until is not None:
            raise ValueError("a nominated pod is pending: it cannot be terminating too")
        return self


DEFAULT_DRAIN_TIMEOUT_SECONDS = 3600.0
"""A drain blocked by a PodDisruptionBudget retries every 5 s. kubectl waits forever by
default; over a month-long horizon that is half a million retries per node, so a drain
here gives up after an hour unless told otherwise."""


class TimelineEvent(Model):
    at: Seconds
    type: str = Field(description="a disruption source: spot-reclaim, node-failure, drain")
    nodes: list[str] = Field(default_factory=list)
    pool: str | None = None
    count: PositiveCount | None = None
    fraction: float | None = Field(default=None, gt=0, le=1)
    notice_seconds: Seconds = 120.0
    recover_after_seconds: Seconds | None = None
    timeout_seconds: Seconds | None = Field(
        default=DEFAULT_DRAIN_TIMEOUT_SECONDS,
        description="drain: give up evicting after "
        "this long, like kubectl drain --timeout (null: keep retrying to the horizon)",
    )
    toleration_seconds: Seconds | None = Field(
        default=None,
        description="node-failure: the node goes NotReady and its pods are "
        "evicted this long after it is marked so (Kubernetes' default tolerations: 300); "
        "null: the pods vanish with the node at once",
    )

    @model_validator(mode="after")
    def _targets(self) -> TimelineEvent:
        if not self.nodes and not self.pool:
            raise ValueError("name the target: 'nodes' or 'pool' (with 'count' or 'fraction')")
        return self


class Variant(Model):
    name: str = Field(min_length=1)
    preemption: str | None = None
    placement: str | None = None
    set: dict[str, Any] = Field(
        default_factory=dict, description="overrides: 'workloads.<name>.<field>' -> value"
    )


class PreemptionRateLimit(Model):
    """A cluster-wide token bucket on evictions for preemption (docs/kubernetes-rules.md,
    "Anti-thrashing guards"): ``perMinute`` tokens a minute, at most ``burst`` saved up."""

    per_minute: float = Field(gt=0, le=1_000_000, description="evictions a minute, sustained")
    burst: PositiveCount = Field(default=1, le=1_000_000, description="evictions at once")


class Policy(Model):
    preemption: str = "pod"
    placement: str = "MostAllocated"
    min_candidate_nodes_percentage: Annotated[int, Field(ge=0, le=100)] = 10
    min_candidate_nodes_absolute: WholeCount = 100
    pod_initial_backoff_seconds: Seconds = 1.0
    pod_max_backoff_seconds: Seconds = 10.0
    checkpoint_aware_weights: dict[str, float] = Field(
        default_factory=dict,
        description="checkpoint-aware cost weights: lostWork, "
        "strandedCapacity, startup, recovery, session",
    )
    checkpoint_victims: bool = Field(
        default=False,
        description="ask every victim to checkpoint in its grace period when "
        "the write fits (ours, not a Kubernetes behaviour)",
    )
    min_runtime_seconds: Seconds = Field(
        default=0.0,
        description="a pod that has run less than this may not be preempted "
        "(KAI's preempt-min-runtime); 0: no guard",
    )
    preemption_rate_limit: PreemptionRateLimit | None = Field(
        default=None,
        description="cluster-wide cap on preemption evictions (a token bucket); null: none",
    )

    @field_validator("checkpoint_aware_weights")
    @classmethod
    def _known_weights(cls, weights: dict[str, float]) -> dict[str, float]:
        known = {"lostWork", "strandedCapacity", "startup", "recovery", "session"}
        unknown = sorted(set(weights) - known)
        if unknown:
            raise ValueError(
                f"unknown weight(s) {', '.join(unknown)} (known: {', '.join(sorted(known))})"
            )
        if any(v < 0 for v in weights.values()):
            raise ValueError("weights must not be negative")
        return weights

    @model_validator(mode="after")
    def _candidates(self) -> Policy:
        if self.min_candidate_nodes_percentage == 0 and self.min_candidate_nodes_absolute == 0:
            raise ValueError(
                "minCandidateNodesPercentage and minCandidateNodesAbsolute may not both be 0"
            )
        return self


# ----------------------------------------------------------------------- failure models
FailureDistributionName = Literal["exponential", "weibull", "lognormal", "constant", "empirical"]


class FailureDistribution(Model):
    """A random duration for failure models (docs/failures.md): the time between failures
    or a repair time. Each family is given by its mean, so an MTBF reads as one."""

    distribution: FailureDistributionName = "exponential"
    mean_seconds: SignedSeconds | None = Field(
        default=None, description="the mean (for an inter-arrival: the MTBF)"
    )
    shape: float = Field(default=1.0, gt=0, le=100, description="weibull: shape k")
    sigma: float = Field(default=1.0, gt=0, le=10, description="lognormal: sigma of log")
    samples_seconds: list[Seconds] = Field(
        default_factory=list, max_length=100_000, description="empirical: durations to draw from"
    )

    @model_validator(mode="after")
    def _parameters(self) -> FailureDistribution:
        if self.distribution == "empirical":
            if self.mean_seconds is not None:
                raise ValueError("an empirical distribution takes samplesSeconds, not meanSeconds")
            if not self.samples_seconds or sum(self.samples_seconds) <= 0:
                raise ValueError("samplesSeconds needs at least one positive duration")
        elif self.mean_seconds is None:
            raise ValueError(f"a {self.distribution} distribution needs meanSeconds")
        elif self.mean_seconds <= 0:
            raise ValueError(
                f"meanSeconds must be positive, got {self.mean_seconds:g} (a mean "
                "time between failures or to repair cannot be zero or negative)"
            )
        return self


class FailureModel(Model):
    """Random node failures or a replayed failure trace, expanded per replication into
    ``node-failure`` timeline events (scheduler_core.failures)."""

    name: str = ""
    kind: Literal["random", "correlated", "trace"] = "random"
    pool: str | None = Field(default=None, description="only this node pool (default: all)")
    selector: dict[str, str] = Field(
        default_factory=dict, description="only nodes with all these labels"
    )
    per: Literal["node", "scope"] = Field(
        default="node",
        description="node: every node (correlated: every domain) fails on "
        "its own clock; scope: one clock for all of them, a random one failing",
    )
    inter_arrival: FailureDistribution | None = None
    repair: FailureDistribution | None = Field(
        default=None, description="time until the node is back; null: it never returns"
    )
    domain_label: str | None = Field(
        default=None,
        description="correlated: the label whose value is the failure domain (rack, switch)",
    )
    fraction: float = Field(
        default=1.0, gt=0, le=1, description="correlated: share of the domain's hosts that fail"
    )
    csv: str = Field(
        default="",
        max_length=10_000_000,
        description="trace: rows of time,target,duration; target a node name or label=value",
    )
    toleration_seconds: Seconds = Field(
        default=300.0,
        description="pods on the NotReady node are evicted after this "
        "(the default node.kubernetes.io/not-ready and unreachable tolerations)",
    )
    disruption: Literal["node-failure", "spot-reclaim", "drain"] = Field(
        default="node-failure",
        description="spot-reclaim: the provider takes the node "
        "back after noticeSeconds (its pods get SIGTERM); repair is the recapture time. "
        "drain: planned maintenance (kubectl drain, PDBs honoured); repair is its length",
    )
    notice_seconds: Seconds = Field(
        default=120.0,
        description="spot-reclaim: the provider's notice (AWS 120 s, GCP and Azure 30 s)",
    )

    @model_validator(mode="after")
    def _complete(self) -> FailureModel:
        if self.kind == "trace":
            if not self.csv.strip():
                raise ValueError("a trace failure model needs csv rows")
            if self.inter_arrival is not None:
                raise ValueError("a trace replays its rows: interArrival does not apply")
        elif self.inter_arrival is None:
            raise ValueError(f"a {self.kind} failure model needs interArrival")
        if self.kind == "correlated" and not self.domain_label:
            raise ValueError("a correlated failure model needs domainLabel (e.g. rack)")
        return self


class RequeuingStrategy(Model):
    """Kueue's ``waitForPodsReady.requeuingStrategy``: the n-th requeue waits
    ``backoffBaseSeconds * 2^(n-1)``, at most ``backoffMaxSeconds``; after
    ``backoffLimitCount`` requeues the workload is deactivated."""

    backoff_base_seconds: Seconds = Field(default=60.0, description="Kueue: 60")
    backoff_limit_count: WholeCount | None = Field(
        default=None, description="requeues before deactivation; null: requeue forever"
    )
    backoff_max_seconds: Seconds = Field(default=3600.0, description="Kueue: 3600")


class WaitForPodsReady(Model):
    """Kueue's ``waitForPodsReady``: an admitted workload whose pods are not all Ready
    within ``timeoutSeconds`` is evicted (PodsReadyTimeout) and requeued with backoff."""

    timeout_seconds: Seconds = Field(
        default=300.0, gt=0, description="admission until all pods Ready (Kueue: 5m)"
    )
    requeuing_strategy: RequeuingStrategy = Field(default_factory=RequeuingStrategy)


class PlacementStudy(Model):
    """The placement-study mode (docs/placement-study.md): the FGD paper's time-less
    packing run instead of a replay. Pods are sampled from the workloads (each
    ``members`` times) with each replication's seed until their GPU request reaches
    ``arrivedLoadPercent`` % of the cluster's GPU capacity, shuffled, and placed one
    after the other with no time and no deletions; each variant's ``placement`` names
    a GPU scoring policy, and every replication records its allocation curve."""

    arrived_load_percent: float = Field(
        default=130.0,
        gt=0,
        le=400,
        description="sample pods until their GPU request is this % of the GPU capacity",
    )
    paper_workload: str | None = Field(
        default=None,
        description="an openb workload of the FGD paper (default, cpu050, gpushare40, ...): "
        "its published allocation at 130 % arrived load is drawn beside ours",
    )
    pod_order: list[int] | None = Field(
        default=None,
        max_length=50_000,
        description="the population's order: entry k is the index (in workloads) of the "
        "k-th pod; each workload appears `members` times. The openb import writes the "
        "trace's order, so a seed draws the sample `placement-study` draws on the files",
    )
    node_order: list[int] | None = Field(
        default=None,
        max_length=20_000,
        description="the nodes' order: entry k is the index of the k-th node among the "
        "node pools expanded in order and then the named nodes (a permutation). The "
        "openb import writes the node list's order (ties go by it)",
    )
    random_stream: Literal["go", "numpy"] = Field(
        default="go",
        description="where each seed's random numbers come from: go, the FGD simulator's "
        "own stream (Go's math/rand seeded with the seed, drawn in the simulator's order: "
        "a seed's run is the simulator's run); numpy, a numpy generator seeded with the "
        "seed (the same steps, other numbers)",
    )


class ExperimentSpec(Model):
    """A whole experiment: cluster, priority classes, workloads, timeline and variants."""

    name: str = "experiment"
    description: str = ""
    origin: Literal["spec", "snapshot"] = Field(
        default="spec",
        description="snapshot: recorded from a live cluster, which may be "
        "over-committed or hold a pod larger than every node (after a node shrank); those "
        "are warnings (see spec_warnings) and the pod stays Pending, not errors",
    )
    horizon_seconds: Seconds = Field(default=3600.0, gt=0)
    seed: Annotated[int, BeforeValidator(_strict_int), Field(ge=0, le=MAX_SEED)] = 0
    replications: PositiveCount = 1
    cluster: Cluster
    priority_classes: list[PriorityClass] = Field(default_factory=list)
    workloads: list[Workload] = Field(default_factory=list)
    initial_state: list[InitialPod] = Field(default_factory=list)
    queues: list[AdmissionQueue] = Field(default_factory=list)
    fair_sharing: FairSharingConfig | None = Field(
        default=None,
        description="Kueue's fairSharing configuration: cohorts preempt by "
        "dominant resource share (docs/kubernetes-rules.md, Fair sharing)",
    )
    wait_for_pods_ready: WaitForPodsReady | None = Field(
        default=None,
        description="Kueue's waitForPodsReady for workloads in admission queues: "
        "evict and requeue with backoff when the pods are not Ready in time",
    )
    resource_quotas: list[ResourceQuota] = Field(default_factory=list)
    events: list[TimelineEvent] = Field(default_factory=list)
    failures: list[FailureModel] = Field(default_factory=list)
    policy: Policy = Field(default_factory=Policy)
    variants: list[Variant] = Field(default_factory=list)
    grid: dict[str, list[Any]] = Field(default_factory=dict)
    placement_study: PlacementStudy | None = Field(
        default=None,
        description="run the time-less placement study instead of a replay "
        "(variants choose the GPU scoring policy, replications are seeds)",
    )

    @field_validator("grid")
    @classmethod
    def _scalar_grid(cls, grid: dict[str, list[Any]]) -> dict[str, list[Any]]:
        """A grid value is one setting (a number, a string, a boolean): a list or a mapping
        there is almost always a mistake, and one that YAML aliases can make enormous."""
        for key, values in grid.items():
            if not values:
                raise ValueError(f"'{key}' needs at least one value")
            for i, value in enumerate(values):
                if isinstance(value, dict | list):
                    raise ValueError(
                        f"'{key}'[{i}] must be a single value (a number, string "
                        "or boolean), not a list or mapping"
                    )
        return grid


# --------------------------------------------------------------------------- validation
def _location(loc: Iterable[Any]) -> str:
    """pydantic's loc tuple -> 'workloads[2].gpus' (what users see in errors)."""
    path = ""
    for part in loc:
        if isinstance(part, int):
            path += f"[{part}]"
        elif part in ("function-after", "function-before") or str(part).startswith("function-"):
            continue
        else:
            path += f".{part}" if path else str(part)
    return path


def _pydantic_errors(exc: ValidationError) -> list[dict[str, str]]:
    errors = []
    for err in exc.errors(include_url=False):
        loc = [p for p in err["loc"] if not (isinstance(p, str) and "[" in p)]
        message = err["msg"].removeprefix("Value error, ")
        if err["type"] == "extra_forbidden":
            message = "unknown field"
        errors.append({"path": _location(loc), "message": message})
    return errors


def load_document(text: str, *, fmt: str | None = None) -> Any:
    """Parse YAML or JSON text through the one core loader (:mod:`scheduler_core.documents`):
    JSON as JSON, duplicate keys refused with their line, aliases and depth capped."""
    try:
        return documents.load_document(text, fmt=fmt)
    except documents.DocumentError as exc:
        raise SpecError([{"path": exc.path, "message": exc.message}]) from None


def check_document(data: Any) -> None:
    """The loader's checks on already-parsed data (a JSON body, a form): depth, aliases,
    NUL characters and lone surrogates."""
    try:
        documents.check_data(data)
    except documents.DocumentError as exc:
        raise SpecError([{"path": exc.path, "message": exc.message}]) from None


@gc_paused()
def parse_spec(
    document: str | Mapping[str, Any],
    *,
    check_variants: bool = True,
    limits: Limits | None = None,
    checked: bool = False,
) -> ExperimentSpec:
    """Validate a spec (text or an already-parsed mapping) completely, or raise SpecError.

    Two stages: the shape (pydantic), then the rules that span fields (class names,
    node names, a pod larger than every node, policy names), so every error is found
    at once where possible. ``check_variants=False`` skips re-validating each variant's
    overrides: for a spec validated before (a run's frozen copy), where each simulation
    resolves only its own variant, and a big recorded cluster with many variants would
    otherwise spend most of a task validating the others.

    ``limits`` (default :data:`~scheduler_core.limits.LIBRARY_LIMITS`) are checked on the
    counts before anything is built from them, and again on every resolved variant; its
    budgets, when set, on the cost estimate.

    ``checked=True``: the mapping was built from values that already passed the loader's
    checks (an importer that checked its input), so the walk over every value is not
    repeated (for a 140,000-pod snapshot it is a tenth of the import).
    """
    limits = limits or LIBRARY_LIMITS
    if isinstance(document, str):
        data = load_document(document)
    else:
        data = document
        if check_variants and not checked:
            check_document(data)
    if isinstance(data, Mapping) and "synthetic" in data:
        from scheduler_core.synthetic import expand  # late: it builds on this module

        data = expand(data)
    if not isinstance(data, Mapping):
        raise SpecError([{"path": "", "message": "the spec must be a mapping (YAML object)"}])
    try:
        spec = ExperimentSpec.model_validate(data)
    except ValidationError as exc:
        # The rules across fields still run on what can be read of the document, so a
        # user sees a wrong GPU count, a misspelt class and two default classes at once.
        errors = _pydantic_errors(exc)
        raise SpecError(_with_new(errors, _class_rule_errors(_raw_class_view(data)))) from None
    errors = count_errors(spec, limits, tasks=task_count(spec))
    if errors:
        raise SpecError(errors)
    errors = list(_cross_field_errors(spec))
    if errors:
        raise SpecError(errors)
    if check_variants:
        resolved = [
            resolve_variant(spec, variant, _index=index, limits=limits)
            for index, variant in enumerate(expand_variants(spec))
        ]
        if limits.has_budget and spec.placement_study is not None:
            errors = _study_budget_errors(spec, limits)
            if errors:
                raise SpecError(errors)
        elif limits.has_budget:
            from scheduler_core.estimate import budget_errors, estimate_resolved

            errors = budget_errors(estimate_resolved(spec, resolved), limits)
            if errors:
                raise SpecError(errors)
    return spec


def _study_budget_errors(spec: ExperimentSpec, limits: Limits) -> list[dict[str, str]]:
    """A placement study's worker seconds against the run budget (its own cost model:
    the replay's estimate of events and memory means nothing without time)."""
    from scheduler_core.study_spec import study_seconds  # late: it builds on this module

    seconds = study_seconds(spec, task_count(spec))
    budget = limits.max_run_seconds
    if budget is None or seconds <= budget:
        return []
    return [
        {
            "path": "replications",
            "message": f"this study is estimated at {seconds:,.0f} worker seconds, above "
            f"the budget of {budget:,.0f} (LAB_MAX_RUN_SECONDS)",
        }
    ]


def task_count(spec: ExperimentSpec) -> int:
    """Simulations the spec asks for (variants x replications), counted without
    expanding the grid: a 100x100x100 grid is refused before a million variants exist."""
    grid = math.prod(len(values) for values in spec.grid.values()) if spec.grid else 0
    return max(1, len(spec.variants) + grid) * spec.replications


def _cross_field_errors(spec: ExperimentSpec) -> Iterable[dict[str, str]]:
    from scheduler_core.plugins import registry  # late: plugins import the model

    if spec.placement_study is not None:
        from scheduler_core.study_spec import study_errors  # late: it builds on this module

        yield from study_errors(spec)
        return
    yield from _class_rule_errors(_typed_class_view(spec))
    yield from _workload_errors(spec)
    yield from _queue_errors(spec)
    yield from _node_errors(spec)
    yield from _retry_errors(spec)
    if spec.failures:
        from scheduler_core.failures import failure_errors  # late: it builds on this module

        yield from failure_errors(spec)
    yield from _policy_errors(spec.policy, "policy", registry)
    for i, event in enumerate(spec.events):
        if event.type not in registry.disruptions:
            yield {
                "path": f"events[{i}].type",
                "message": f"unknown disruption source '{event.type}' "
                f"(known: {', '.join(sorted(registry.disruptions))})",
            }
    for i, variant in enumerate(spec.variants):
        yield from _policy_errors(variant, f"variants[{i}]", registry)
    yield from _variant_name_errors(spec)


def _policy_errors(policy: Any, path: str, registry: Any) -> Iterable[dict[str, str]]:
    if policy.preemption is not None and policy.preemption not in registry.preemption:
        yield {
            "path": f"{path}.preemption",
            "message": f"unknown preemption policy '{policy.preemption}' "
            f"(known: {', '.join(sorted(registry.preemption))})",
        }
    if policy.placement is not None and policy.placement not in registry.placement:
        yield {
            "path": f"{path}.placement",
            "message": f"unknown placement scoring '{policy.placement}' "
            f"(known: {', '.join(sorted(registry.placement))})",
        }


@dataclass(frozen=True, slots=True)
class _ClassView:
    """What the PriorityClass rules need, read from a typed spec or from a raw document
    that failed its shape check: (index, name, globalDefault) per class, and (path,
    class name) per reference."""

    classes: list[tuple[int, str, bool]]
    references: list[tuple[str, str]]


def _typed_class_view(spec: ExperimentSpec) -> _ClassView:
    refs = []
    for i, wl in enumerate(spec.workloads):
        if wl.priority_class_name is not None:
            refs.append((f"workloads[{i}].priorityClassName", wl.priority_class_name))
        if wl.pod_group and wl.pod_group.priority_class_name is not None:
            refs.append(
                (f"workloads[{i}].podGroup.priorityClassName", wl.pod_group.priority_class_name)
            )
    return _ClassView(
        [(i, pc.name, pc.global_default) for i, pc in enumerate(spec.priority_classes)], refs
    )


def _raw_class_view(data: Mapping[str, Any]) -> _ClassView:
    """The same view of a document whatever else is wrong with it: entries whose name is
    not a string are skipped (their shape error is reported already)."""

    def items(key: str) -> list[tuple[int, Mapping[str, Any]]]:
        value = data.get(key)
        return (
            [(i, item) for i, item in enumerate(value) if isinstance(item, Mapping)]
            if isinstance(value, list)
            else []
        )

    classes = [
        (i, pc["name"], pc.get("globalDefault") is True)
        for i, pc in items("priorityClasses")
        if isinstance(pc.get("name"), str)
    ]
    refs = []
    for i, wl in items("workloads"):
        group = wl.get("podGroup")
        for field, name in (
            ("priorityClassName", wl.get("priorityClassName")),
            (
                "podGroup.priorityClassName",
                group.get("priorityClassName") if isinstance(group, Mapping) else None,
            ),
        ):
            if isinstance(name, str):
                refs.append((f"workloads[{i}].{field}", name))
    return _ClassView(classes, refs)


def _class_rule_errors(view: _ClassView) -> Iterable[dict[str, str]]:
    """Unique class names, at most one globalDefault, every reference to a class that
    exists (the API server refuses a pod naming a missing class)."""
    seen: set[str] = set()
    for i, name, _ in view.classes:
        if name in seen:
            yield {
                "path": f"priorityClasses[{i}].name",
                "message": f"duplicate PriorityClass '{name}'",
            }
        seen.add(name)
    defaults = [(i, name) for i, name, default in view.classes if default]
    if len(defaults) > 1:
        names = ", ".join(name for _, name in defaults)
        yield {
            "path": f"priorityClasses[{defaults[1][0]}].globalDefault",
            "message": f"only one PriorityClass may be globalDefault (found: {names})",
        }
    known = seen | set(SYSTEM_CLASSES)
    for path, name in view.references:
        if name not in known:
            yield {"path": path, "message": f"no PriorityClass with name '{name}' was found"}


def _with_new(errors: list[dict[str, str]], more: Iterable[dict[str, str]]) -> list[dict[str, str]]:
    """``errors`` and then those of ``more`` on a path ``errors`` does not name yet."""
    named = {error["path"] for error in errors}
    return errors + [error for error in more if error["path"] not in named]


def _workload_errors(spec: ExperimentSpec) -> Iterable[dict[str, str]]:
    shapes = _node_shapes(spec)
    seen: set[str] = set()
    for i, wl in enumerate(spec.workloads):
        path = f"workloads[{i}]"
        if wl.name in seen:
            yield {"path": f"{path}.name", "message": f"duplicate workload '{wl.name}'"}
        seen.add(wl.name)
        group_class = wl.pod_group.priority_class_name if wl.pod_group else None
        if group_class and wl.priority_class_name and group_class != wl.priority_class_name:
            yield {
                "path": f"{path}.podGroup.priorityClassName",
                "message": f"the group's class '{group_class}' disagrees with the members' "
                f"class '{wl.priority_class_name}'",
            }
        yield from _shared_gpu_errors(spec, wl, path)
        if not any(_fits_shape(wl, s) for s in shapes) and spec.origin != "snapshot":
            yield {
                "path": f"{path}.gpus",
                "message": f"a member needs {_gpu_request(wl)}, {wl.cpu:g} CPU and "
                f"{wl.memory:g} GiB, more than any node has",
            }


WHOLE_GPU_POLICIES = ("workload-aware", "checkpoint-aware")
"""Preemption policies whose arithmetic counts whole GPUs per node; shared devices need
the per-device dry run of `pod` (docs/shared-gpus.md)."""


def _shared_gpu_errors(spec: ExperimentSpec, wl: Workload, path: str) -> Iterable[dict[str, str]]:
    """What a workload sharing a device (gpuMilli, mig) cannot be combined with: the parts
    that count whole GPUs only (admission quotas, topology placement, group preemption)."""
    if wl.gpu_milli is None and not wl.mig:
        return
    field = f"{path}.gpuMilli" if wl.gpu_milli is not None else f"{path}.mig"
    if wl.queue is not None:
        yield {
            "path": field,
            "message": "an admission queue counts whole GPUs: a "
            "shared-GPU workload cannot wait in one (drop queue or use gpus)",
        }
    if wl.pod_group is not None and wl.pod_group.topology is not None:
        yield {
            "path": field,
            "message": "topology-aware placement counts whole GPUs: "
            "drop podGroup.topology or use gpus",
        }
    policies = [("policy.preemption", spec.policy.preemption)] + [
        (f"variants[{i}].preemption", v.preemption) for i, v in enumerate(spec.variants)
    ]
    for where, name in policies:
        if name in WHOLE_GPU_POLICIES:
            yield {
                "path": field,
                "message": f"{where} '{name}' counts whole GPUs per node: "
                "shared GPUs need preemption 'pod' or 'none'",
            }


def _gpu_request(wl: Workload) -> str:
    """A member's accelerator request, as an error message names it."""
    if wl.gpu_milli is not None:
        text = f"{wl.gpu_milli} milli-GPU of one device"
    elif wl.mig:
        text = ", ".join(f"{n} MIG {p}" for p, n in sorted(wl.mig.items()))
    else:
        text = f"{wl.gpus} GPU(s)"
    return text + (f" ({' or '.join(wl.gpu_models)})" if wl.gpu_models else "")


def spec_warnings(spec: ExperimentSpec) -> list[dict[str, str]]:
    """What a recorded cluster may hold that a hand-written spec may not (docs/
    kubernetes-rules.md "Over-committed snapshots"): a workload larger than every node,
    and bound pods beyond their node's allocatable. Empty unless ``origin: snapshot``."""
    if spec.origin != "snapshot":
        return []
    warnings = []
    shapes = _node_shapes(spec)
    for i, wl in enumerate(spec.workloads):
        if not any(_fits_shape(wl, s) for s in shapes):
            warnings.append(
                {
                    "path": f"workloads[{i}].gpus",
                    "message": f"a member needs {_gpu_request(wl)}, {wl.cpu:g} CPU and "
                    f"{wl.memory:g} GiB, more than any node has: it stays "
                    "Pending (FailedScheduling)",
                }
            )
    warnings.extend(_overcommit_warnings(spec))
    return warnings


def _overcommit_warnings(spec: ExperimentSpec) -> Iterable[dict[str, str]]:
    """Bound pods, in recorded order, that no longer fit what their node has left."""
    free = {n: [s.gpus, s.cpu, s.memory, s.max_pods] for n, s in _shapes_by_node(spec).items()}
    workloads = {w.name: w for w in spec.workloads}
    for i, pod in enumerate(spec.initial_state):
        wl, left = workloads.get(pod.workload), free.get(pod.node)
        if pod.nominated or wl is None or left is None:
            continue
        need = [wl.gpus, wl.cpu, wl.memory, 1]
        if all(n <= f + 1e-9 for n, f in zip(need, left, strict=True)):
            free[pod.node] = [f - n for n, f in zip(need, left, strict=True)]
        else:
            yield {
                "path": f"initialState[{i}].node",
                "message": f"node '{pod.node}' is over-committed: this pod of "
                f"'{pod.workload}' does not fit what is left; it is Pending",
            }


def _shapes_by_node(spec: ExperimentSpec) -> dict[str, NodeShape]:
    shapes: dict[str, NodeShape] = {}
    for pool in spec.cluster.node_pools:
        for i in range(pool.count):
            shapes[f"{pool.name}-{i}"] = pool
    for node in spec.cluster.nodes:
        shapes[node.name] = node
    return shapes


def _queue_errors(spec: ExperimentSpec) -> Iterable[dict[str, str]]:
    names = [q.name for q in spec.queues]
    for name, count in _counts(names).items():
        if count > 1:
            yield {"path": "queues", "message": f"duplicate queue '{name}'"}
    for i, wl in enumerate(spec.workloads):
        if wl.queue is not None and wl.queue not in names:
            yield {"path": f"workloads[{i}].queue", "message": f"no queue named '{wl.queue}'"}
        elif wl.queue is not None and any(p.workload == wl.name for p in spec.initial_state):
            yield {
                "path": f"workloads[{i}].queue",
                "message": "a workload already running in the initial state cannot wait "
                "in an admission queue",
            }
    classes = {pc.name for pc in spec.priority_classes} | set(SYSTEM_CLASSES)
    for i, quota in enumerate(spec.resource_quotas):
        if quota.priority_class_name not in classes:
            yield {
                "path": f"resourceQuotas[{i}].priorityClassName",
                "message": f"no PriorityClass with name '{quota.priority_class_name}' was found",
            }


def _node_shapes(spec: ExperimentSpec) -> list[NodeShape]:
    return [*spec.cluster.node_pools, *spec.cluster.nodes]


def _fits_shape(wl: Workload, shape: NodeShape) -> bool:
    return (
        max(wl.gpus, 1 if wl.gpu_milli else 0) <= shape.gpus
        and all(shape.mig.get(p, 0) >= n for p, n in wl.mig.items())
        and (not wl.gpu_models or shape.gpu_model in wl.gpu_models)
        and wl.cpu <= shape.cpu
        and wl.memory <= shape.memory
    )


def _node_errors(spec: ExperimentSpec) -> Iterable[dict[str, str]]:
    names = spec.cluster.node_names()
    known = set(names)
    if len(known) != len(names):
        dup = next(n for n, c in _counts(names).items() if c > 1)
        yield {"path": "cluster", "message": f"duplicate node name '{dup}'"}
    pools = {p.name for p in spec.cluster.node_pools}
    workloads = {w.name: w for w in spec.workloads}
    yield from _initial_count_errors(spec, workloads)
    for i, pod in enumerate(spec.initial_state):
        if pod.node not in known:
            yield {"path": f"initialState[{i}].node", "message": f"no node named '{pod.node}'"}
        if pod.workload not in workloads:
            yield {
                "path": f"initialState[{i}].workload",
                "message": f"no workload named '{pod.workload}'",
            }
        elif pod.member is not None and pod.member >= workloads[pod.workload].members:
            yield {
                "path": f"initialState[{i}].member",
                "message": f"member {pod.member} is out of range for "
                f"{workloads[pod.workload].members} members",
            }
    for i, event in enumerate(spec.events):
        for name in event.nodes:
            if name not in known:
                yield {"path": f"events[{i}].nodes", "message": f"no node named '{name}'"}
        if event.pool and event.pool not in pools:
            yield {"path": f"events[{i}].pool", "message": f"no node pool named '{event.pool}'"}
    yield from _standby_errors(spec)


def _standby_errors(spec: ExperimentSpec) -> Iterable[dict[str, str]]:
    """A spare pool covers a pool that serves (not another spare pool), holds no recorded
    pod at t=0, and leaves at least one node in service."""
    standby = {p.name for p in spec.cluster.node_pools if p.standby is not None}
    serving = {p.name for p in spec.cluster.node_pools if p.standby is None}
    for i, pool in enumerate(spec.cluster.node_pools):
        if pool.standby is None or pool.standby.replaces is None:
            continue
        if pool.standby.replaces not in serving:
            what = "is a standby pool itself" if pool.standby.replaces in standby else "not found"
            yield {
                "path": f"cluster.nodePools[{i}].standby.replaces",
                "message": f"pool '{pool.standby.replaces}' {what}: name a pool that serves",
            }
    if standby and not serving and not spec.cluster.nodes:
        yield {
            "path": "cluster.nodePools",
            "message": "every pool is a standby pool: no node would ever serve",
        }
    spares = {f"{p.name}-{n}" for p in spec.cluster.node_pools if p.standby for n in range(p.count)}
    for i, pod in enumerate(spec.initial_state):
        if pod.node in spares:
            yield {
                "path": f"initialState[{i}].node",
                "message": f"'{pod.node}' is a standby node: it holds no pod until called in",
            }


def _retry_errors(spec: ExperimentSpec) -> Iterable[dict[str, str]]:
    """backoffLimit is a Job's field; waitForPodsReady needs an admission queue."""
    for i, wl in enumerate(spec.workloads):
        if wl.controller.backoff_limit is not None and wl.controller.kind is not ControllerKind.JOB:
            yield {
                "path": f"workloads[{i}].controller.backoffLimit",
                "message": f"a Job's field: it does not apply to controller kind "
                f"'{wl.controller.kind.value}'",
            }
    if spec.wait_for_pods_ready is not None and not spec.queues:
        yield {
            "path": "waitForPodsReady",
            "message": "Kueue's setting for queued workloads, and the spec has no admission queue",
        }


def _initial_count_errors(
    spec: ExperimentSpec, workloads: dict[str, Workload]
) -> Iterable[dict[str, str]]:
    """A workload cannot have more recorded pods than members, nor one member twice.

    A count and a set per workload, not a list scanned per pod: a recorded state of tens
    of thousands of members is parsed at the start of every task."""
    counted: dict[str, int] = {}
    seen: dict[str, set[int | None]] = {}
    for i, pod in enumerate(spec.initial_state):
        count = counted.get(pod.workload, 0)
        members = seen.setdefault(pod.workload, set())
        workload = workloads.get(pod.workload)
        if workload is not None and count >= workload.members:
            yield {
                "path": f"initialState[{i}].workload",
                "message": f"more recorded pods than the {workload.members} member(s) of "
                f"'{pod.workload}'",
            }
        elif pod.member is not None and pod.member in members:
            yield {
                "path": f"initialState[{i}].member",
                "message": f"member {pod.member} of '{pod.workload}' is recorded twice",
            }
        counted[pod.workload] = count + 1
        members.add(pod.member)


def _counts(names: list[str]) -> dict[str, int]:
    counts: dict[str, int] = {}
    for name in names:
        counts[name] = counts.get(name, 0) + 1
    return counts


def _variant_name_errors(spec: ExperimentSpec) -> Iterable[dict[str, str]]:
    names = [v.name for v in expand_variants(spec)]
    for name, count in _counts(names).items():
        if count > 1:
            yield {"path": "variants", "message": f"duplicate variant name '{name}'"}


# ----------------------------------------------------------------------------- variants
@dataclass(frozen=True, slots=True)
class ResolvedVariant:
    """One variant, ready to simulate: the spec with its overrides applied, and its policy."""

    name: str
    spec: ExperimentSpec
    preemption: str
    placement: str


def expand_variants(spec: ExperimentSpec) -> list[Variant]:
    """Listed variants, then the grid's cartesian product; a lone default when neither is
    given. Refuses (before building any) more than LIBRARY_LIMITS allows: callers with
    tighter limits have checked :func:`task_count` already."""
    count = task_count(spec) // spec.replications
    if count > LIBRARY_LIMITS.max_tasks:
        raise SpecError(
            [
                {
                    "path": "grid",
                    "message": f"{count:,} variants is above the limit "
                    f"of {LIBRARY_LIMITS.max_tasks:,}",
                }
            ]
        )
    variants = list(spec.variants)
    if spec.grid:
        keys = list(spec.grid)
        for values in itertools.product(*(spec.grid[k] for k in keys)):
            variants.append(_grid_variant(dict(zip(keys, values, strict=True))))
    return variants or [Variant(name="default")]


def _grid_variant(point: dict[str, Any]) -> Variant:
    name = ", ".join(f"{k.rsplit('.', 1)[-1]}={_short(v)}" for k, v in point.items())
    policy = {k: v for k, v in point.items() if k in ("preemption", "placement")}
    overrides = {k: v for k, v in point.items() if k not in policy}
    return Variant(name=name, set=overrides, **policy)


def _short(value: Any) -> str:
    return json.dumps(value) if isinstance(value, (dict, list)) else str(value)


def variant_names(spec: ExperimentSpec) -> list[str]:
    """The names of every variant the spec expands to, in run order."""
    return [v.name for v in expand_variants(spec)]


@gc_paused()
def resolve_variant(
    spec: ExperimentSpec,
    variant: Variant | str,
    *,
    _index: int | None = None,
    limits: Limits | None = None,
) -> ResolvedVariant:
    """Apply a variant's overrides and re-validate, so an override can never smuggle in
    a value the spec itself would refuse, nor exceed ``limits`` (the counts are checked
    before the cross-field rules build anything from them)."""
    if isinstance(variant, str):
        variant = _find_variant(spec, variant)
    where = f"variants[{_index}]" if _index is not None else f"variant '{variant.name}'"
    resolved = spec
    if variant.set:
        data = _override_base(spec, {path.split(".", 1)[0] for path in variant.set})
        for path, value in variant.set.items():
            _apply_override(data, path, value, f"{where}.set.{path}")
        try:
            resolved = ExperimentSpec.model_validate(data)
        except ValidationError as exc:
            raise SpecError(
                [
                    {"path": f"{where}.set.{e['path']}", "message": e["message"]}
                    for e in _pydantic_errors(exc)
                ]
            ) from None
        errors = count_errors(resolved, limits or LIBRARY_LIMITS, prefix=f"{where}.set.")
        if errors:
            raise SpecError(errors)
        errors = list(_cross_field_errors(resolved))
        if errors:
            raise SpecError(
                [{"path": f"{where}.set.{e['path']}", "message": e["message"]} for e in errors]
            )
    return ResolvedVariant(
        name=variant.name,
        spec=resolved,
        preemption=variant.preemption or resolved.policy.preemption,
        placement=variant.placement or resolved.policy.placement,
    )


def _override_base(spec: ExperimentSpec, touched: set[str]) -> dict[str, Any]:
    """The spec as a mapping for a variant's overrides, without ``variants`` and ``grid``:
    the top-level fields an override reaches (``touched``, by their names in a document)
    as plain data, every other one as the validated model it already is. Spec models
    are frozen, and pydantic takes an instance of a field's own model as it is, so those
    fields are not dumped and validated again (for a recorded cluster of 7,254
    workloads, 0.14 s per variant, paid by every run's start for each variant and by a
    worker for each variant it simulates); the whole spec's own rules, the counts and
    the cross-field rules still run on the result."""
    data: dict[str, Any] = {}
    for name, field in ExperimentSpec.model_fields.items():
        if name in ("variants", "grid"):
            continue
        alias = field.alias or name
        value = getattr(spec, name)
        data[alias] = (
            spec.model_dump(by_alias=True, include={name})[alias] if alias in touched else value
        )
    return data


def _find_variant(spec: ExperimentSpec, name: str) -> Variant:
    for variant in expand_variants(spec):
        if variant.name == name:
            return variant
    raise SpecError([{"path": "variant", "message": f"no variant named '{name}'"}])


def _apply_override(data: dict[str, Any], path: str, value: Any, where: str) -> None:
    """Set ``workloads.<name>.checkpoint.intervalSeconds`` style paths; lists by item name."""
    parts = path.split(".")
    node: Any = data
    for i, part in enumerate(parts[:-1]):
        node = _step(node, part)
        if node is None:
            raise SpecError([{"path": where, "message": f"'{'.'.join(parts[: i + 1])}' not found"}])
    last = parts[-1]
    if isinstance(node, list):
        raise SpecError([{"path": where, "message": "cannot replace a whole list item"}])
    if not isinstance(node, dict) or (node and last not in node):
        raise SpecError([{"path": where, "message": f"unknown field '{last}'"}])
    node[last] = copy.deepcopy(value)


def _step(node: Any, part: str) -> Any:
    """One step down an override path; a null sub-object (e.g. ``pdb``) becomes ``{}``."""
    if isinstance(node, list):
        for item in node:
            if isinstance(item, dict) and item.get("name") == part:
                return item
        if part.isdigit() and int(part) < len(node):
            return node[int(part)]
        return None
    if isinstance(node, dict):
        if node.get(part) is None and part in node:
            node[part] = {}
        return node.get(part)
    return None


def spec_to_yaml(spec: ExperimentSpec) -> str:
    """The spec as YAML, camelCase, defaults included: what a user downloads and edits."""
    text: str = _dump_yaml(_yaml_data(spec), None)
    return text


def spec_to_yaml_within(spec: ExperimentSpec, max_chars: int) -> str | None:
    """:func:`spec_to_yaml`, or None as soon as the text passes ``max_chars``: a page that
    shows a spec only up to a size stops writing there, instead of writing a recorded
    cluster's megabytes to throw them away."""
    data = _yaml_data(spec)
    if _keys_length(data, max_chars) > max_chars:
        return None
    out = _BoundedText(max_chars)
    try:
        _dump_yaml(data, out)
    except _TooLongError:
        return None
    return "".join(out.parts)


def _keys_length(data: Any, enough: int) -> int:
    """A lower bound of the YAML's length, counted up to a little past ``enough``: each
    mapping key is written at least as its own text and a colon. PyYAML builds the whole
    document's node tree before the emitter writes a character, so the bounded stream
    alone still built all of a recorded cluster's 400,000 nodes (2.8 s for the openb
    trace, in every finished run's page precompute) to throw them away."""
    total = 0
    pending = [data]
    while pending and total <= enough:
        item = pending.pop()
        if isinstance(item, dict):
            for key, value in item.items():
                total += len(str(key)) + 1
                if isinstance(value, dict | list):
                    pending.append(value)
        elif isinstance(item, list):
            pending.extend(v for v in item if isinstance(v, dict | list))
    return total


def _dump_yaml(data: dict[str, Any], stream: _BoundedText | None) -> Any:
    """A spec's :func:`_yaml_data` as YAML into ``stream``, or returned when it is None."""
    return yaml.dump(data, stream, Dumper=_SpecDumper, sort_keys=False, allow_unicode=True)


def _yaml_data(spec: ExperimentSpec) -> dict[str, Any]:
    data = spec.model_dump(mode="json", by_alias=True, exclude_none=True)
    study = data.get("placementStudy") or {}
    for key in ("podOrder", "nodeOrder"):
        if key in study:  # 8,152 numbers: wrapped flow lines, not a line each
            study[key] = _FlowList(study[key])
    return data


class _TooLongError(Exception):
    """The YAML passed its budget (:func:`spec_to_yaml_within`)."""


class _BoundedText:
    """A text stream that refuses to grow past ``limit`` characters."""

    def __init__(self, limit: int) -> None:
        self.limit = limit
        self.size = 0
        self.parts: list[str] = []

    def write(self, text: str) -> None:
        self.size += len(text)
        if self.size > self.limit:
            raise _TooLongError
        self.parts.append(text)


class _FlowList(list[Any]):
    """A list ``spec_to_yaml`` writes in flow style (``[0, 3, 1, ...]``)."""


class _SpecDumper(getattr(yaml, "CSafeDumper", yaml.SafeDumper)):  # type: ignore[misc]
    """libyaml's emitter where PyYAML was built with it (the same text, several times
    faster: a recorded cluster's spec is hundreds of thousands of YAML nodes), else
    PyYAML's own."""


_SpecDumper.add_representer(
    _FlowList,
    lambda dumper, data: dumper.represent_sequence("tag:yaml.org,2002:seq", data, flow_style=True),
)
