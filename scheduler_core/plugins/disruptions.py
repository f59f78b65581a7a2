"""Disruption sources on the scenario's timeline: spot reclaim, node failure, drain.

They reuse the scheduler's eviction path, so the same recovery and metric machinery
applies, whoever took the capacity away.
"""

from __future__ import annotations

from scheduler_core.model import Node, PodState
from scheduler_core.plugins import DisruptionHost
from scheduler_core.spec import TimelineEvent

DRAIN_RETRY_SECONDS = 5.0


def spot_reclaim(host: DisruptionHost, event: TimelineEvent, nodes: list[Node]) -> None:
    """Notice first: the node is cordoned and its pods get SIGTERM with at most the notice
    as grace (a node-termination handler draining it); at the end of the notice the node
    is gone, and anything still on it dies with it."""
    notice = event.notice_seconds
    for node in nodes:
        host.cordon(node, f"spot interruption notice: reclaimed in {notice:.0f}s")
        for pod in list(node.pods):
            grace = min(pod.workload.spec.termination_grace_period_seconds, notice)
            host.evict(pod, grace, "spot-reclaim")
        host.at(host.now + notice, _reclaimed, host, node, event)


def _reclaimed(host: DisruptionHost, node: Node, event: TimelineEvent) -> None:
    host.lose_node(node, "spot capacity reclaimed")
    _schedule_return(host, node, event)


NODE_MONITOR_GRACE_SECONDS = 40.0
"""kube-controller-manager --node-monitor-grace-period: a node silent this long is marked
NotReady (Unknown) and tainted; the pods' toleration clock starts then."""


def node_failure(host: DisruptionHost, event: TimelineEvent, nodes: list[Node]) -> None:
    """The node dies at once: no SIGTERM, no checkpoint, no grace. With
    ``tolerationSeconds`` its pods stay bound to the NotReady node until the taint manager
    evicts them (docs/kubernetes-rules.md "Node failure"); without, they vanish with it."""
    for node in nodes:
        if event.toleration_seconds is None:
            host.lose_node(node, "node failed")
        else:
            host.fail_node(
                node, "node failed: NotReady", NODE_MONITOR_GRACE_SECONDS + event.toleration_seconds
            )
        _schedule_return(host, node, event)


def drain(host: DisruptionHost, event: TimelineEvent, nodes: list[Node]) -> None:
    """`kubectl drain`: cordon, then evict through the Eviction API, which honours PDBs;
    a blocked eviction is retried every 5 s until the event's ``timeoutSeconds`` (kubectl
    drain --timeout); the node stays cordoned after a timeout, as with kubectl."""
    for node in nodes:
        host.cordon(node, "drained")
        deadline = (
            host.now + event.timeout_seconds if event.timeout_seconds is not None else float("inf")
        )
        _evict_all(host, node, deadline)
        if event.recover_after_seconds is not None:
            host.at(host.now + event.recover_after_seconds, host.restore_node, node)


def _evict_all(host: DisruptionHost, node: Node, deadline: float) -> None:
    blocked = False
    for pod in list(node.pods):
        if pod.state in (PodState.TERMINATING, PodState.SUCCEEDED, PodState.GONE):
            continue
        if host.eviction_allowed(pod):
            host.evict(pod, pod.workload.spec.termination_grace_period_seconds, "drain")
        else:
            blocked = True
    if blocked and node.cordoned and host.now + DRAIN_RETRY_SECONDS <= deadline:
        host.at(host.now + DRAIN_RETRY_SECONDS, _evict_all, host, node, deadline)


def _schedule_return(host: DisruptionHost, node: Node, event: TimelineEvent) -> None:
    if event.recover_after_seconds is not None:
        host.at(host.now + event.recover_after_seconds, host.restore_node, node)
