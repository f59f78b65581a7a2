"""Policies are plugins at named extension points, shaped like the kube-scheduler framework.

A variant names its plugins; the registry maps names to factories. A new policy is one
new module plus one line here. Names are never resolved to user-given import paths.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any, Protocol

if TYPE_CHECKING:
    from scheduler_core.cluster import Cluster
    from scheduler_core.guards import Guards
    from scheduler_core.model import Node, Pod, Workload
    from scheduler_core.spec import Policy, TimelineEvent
    from scheduler_core.status import Status


class PlacementScorer(Protocol):
    """Score extension point: pick the node a pod binds to among those that fit."""

    def select(self, cluster: Cluster, pod: Pod) -> Node | None:
        """The best feasible node for ``pod``, or None when no node passes Filter."""
        ...


QueueingHint = Callable[["PreemptionHost", "Pod", "Node"], bool]
"""Could a change on this node turn a pod's failed attempt into another outcome? False
only when the node, as it is now, neither fits the pod nor is a preemption candidate."""


class PreemptionPolicy(Protocol):
    """PostFilter extension point: runs when no node fits."""

    group_aware: bool
    """True: a group preempts as one (its members are not assumed meanwhile); False: each
    member that does not fit preempts for itself."""

    def post_filter(self, host: PreemptionHost, pod: Pod) -> Status:
        """SUCCESS after victims were evicted and the pod nominated (it binds in a later
        cycle); UNSCHEDULABLE when preemption did not (or may not) help, with the reason."""
        ...

    def post_filter_group(
        self, host: PreemptionHost, workload: Workload, pending: list[Pod], need: int
    ) -> Status:
        """PodGroupPostFilter: runs once when fewer than ``need`` pending members fit.
        SUCCESS after victims were evicted and members nominated; else why not."""
        ...

    def queueing_hint(self) -> QueueingHint | None:
        """The per-node test that keeps a pod's failed verdict across changes on nodes
        that cannot help it (upstream's QueueingHintFn, per node); None: any change may
        help, every verdict is dropped on every cluster change."""
        ...


class PreemptionHost(Protocol):
    """What a preemption policy may see and do."""

    cluster: Cluster
    now: float
    guards: Guards
    """The variant's anti-thrashing guards (scheduler_core/guards.py)."""

    def random_offset(self, n: int) -> int: ...

    def wait_for_token(self) -> None:
        """The rate limit refused a preemption: try the queue again when a token is back."""

    def pdb_allowed(self, pods: list[Pod]) -> dict[object, int]: ...

    def actuate(self, preemptor: Pod, node: Node, victims: list[Pod]) -> None: ...

    def actuate_group(self, assignments: list[tuple[Pod, Node]], victims: list[Pod]) -> None: ...

    def clear_nomination(self, pod: Pod) -> None: ...


class DisruptionSource(Protocol):
    """A timeline event that takes capacity away (spot reclaim, node failure, drain)."""

    def __call__(self, host: DisruptionHost, event: TimelineEvent, nodes: list[Node]) -> None:
        """Act on ``nodes`` at the event's time; may schedule follow-ups with ``host.at``."""
        ...


class DisruptionHost(Protocol):
    now: float

    def at(self, time: float, callback: Callable[..., None], *args: Any) -> None: ...

    def cordon(self, node: Node, reason: str) -> None: ...

    def lose_node(self, node: Node, reason: str) -> None: ...

    def fail_node(self, node: Node, reason: str, evict_after: float) -> None: ...

    def restore_node(self, node: Node) -> None: ...

    def evict(self, pod: Pod, grace: float, cause: str) -> None: ...

    def eviction_allowed(self, pod: Pod) -> bool: ...


@dataclass
class Registry:
    placement: dict[str, Callable[[], PlacementScorer]] = field(default_factory=dict)
    preemption: dict[str, Callable[[Policy], PreemptionPolicy]] = field(default_factory=dict)
    disruptions: dict[str, DisruptionSource] = field(default_factory=dict)


def _default_registry() -> Registry:
    from scheduler_core.plugins import (
        default_preemption,
        disruptions,
        placement,
        workload_preemption,
    )

    return Registry(
        placement={
            "MostAllocated": placement.MostAllocated,
            "LeastAllocated": placement.LeastAllocated,
        },
        preemption={
            "none": default_preemption.NoPreemption,
            "pod": default_preemption.DefaultPreemption,
            "workload-aware": workload_preemption.WorkloadAwarePreemption,
            "checkpoint-aware": workload_preemption.CheckpointAwarePreemption,
        },
        disruptions={
            "spot-reclaim": disruptions.spot_reclaim,
            "node-failure": disruptions.node_failure,
            "drain": disruptions.drain,
        },
    )


registry = _default_registry()


def policy_names() -> dict[str, list[str]]:
    """The names a variant may use at each extension point (for forms and docs)."""
    return {
        "preemption": list(registry.preemption),
        "placement": list(registry.placement),
        "disruptions": list(registry.disruptions),
    }
