"""Topology-aware placement of a group (Kueue TAS, kubernetes-preemption.md §8).

Nodes are grouped into domains by label values, outermost level first (e.g. block, then
rack). Each node can take ``podCount`` more members; counts add up the tree. Phase 2a
finds the level and domain(s) to use; phase 2b descends, filling children greedily
(largest first for BestFit) and finishing with the tightest domain that fits the rest.
Slices are not modelled (sliceSize 1), so sliceCount equals podCount.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass, field

from scheduler_core.model import Node, Pod
from scheduler_core.spec import TopologyConstraint

Free = Callable[[Node], list[float]]


@dataclass
class Domain:
    values: tuple[str, ...]
    count: int = 0
    children: dict[str, Domain] = field(default_factory=dict)
    node: Node | None = None


def pod_capacity(free: list[float], pod: Pod) -> int:
    """How many more members fit a node: the tightest of its resources (and pod slots)."""
    counts = [int(free[3])]
    for have, need in ((free[0], pod.gpus), (free[1], pod.cpu), (free[2], pod.mem)):
        if need > 0:
            counts.append(int((have + 1e-9) // need))
    return max(0, min(counts))


def build_tree(nodes: list[Node], free: Free, pod: Pod, levels: list[str]) -> Domain:
    """The domain tree over nodes carrying every level label; leaves are nodes."""
    root = Domain(())
    for node in nodes:
        if not all(level in node.labels for level in levels):
            continue
        count = pod_capacity(free(node), pod)
        if count <= 0:
            continue
        domain = root
        domain.count += count
        for level in levels:
            value = node.labels[level]
            domain = domain.children.setdefault(value, Domain((*domain.values, value)))
            domain.count += count
        domain.children[node.name] = Domain((*domain.values, node.name), count, node=node)
    return root


def sorted_domains(domains: list[Domain], algorithm: str) -> list[Domain]:
    """BestFit: most room first; LeastFreeCapacity: least room first; then by values."""
    if algorithm == "LeastFreeCapacity":
        return sorted(domains, key=lambda d: (d.count, d.values))
    return sorted(domains, key=lambda d: (-d.count, d.values))


def best_fit(domains: list[Domain], needed: int) -> Domain:
    """findBestFitDomain: the first domain, in order, with the smallest count >= needed;
    the first domain if none is large enough."""
    fitting = [d for d in domains if d.count >= needed]
    return min(fitting, key=lambda d: d.count) if fitting else domains[0]


def place_with_topology(
    pods: list[Pod], nodes: list[Node], free: Free, constraint: TopologyConstraint
) -> list[tuple[Pod, Node]] | None:
    """Per-node member counts for the whole group, or None when the constraint cannot be
    met (required level) or the cluster is short."""
    if not pods:
        return []
    root = build_tree(nodes, free, pods[0], constraint.levels)
    needed = len(pods)
    chosen = _choose_domains(root, needed, constraint)
    if chosen is None:
        return None
    counts: list[tuple[Node, int]] = []
    for domain, amount in chosen:
        _descend(domain, amount, constraint.algorithm, counts)
    assignment: list[tuple[Pod, Node]] = []
    queue = iter(pods)
    for node, amount in counts:
        assignment += [(next(queue), node) for _ in range(amount)]
    return assignment


def _level_domains(root: Domain, depth: int) -> list[Domain]:
    domains = [root]
    for _ in range(depth):
        domains = [c for d in domains for c in d.children.values()]
    return domains


def _choose_domains(
    root: Domain, needed: int, constraint: TopologyConstraint
) -> list[tuple[Domain, int]] | None:
    """Phase 2a: one domain at the requested level, else (preferred) one level up, else
    greedily several domains at the top level."""
    target = constraint.required or constraint.preferred
    depth = constraint.levels.index(target) + 1 if target else 1
    algorithm = constraint.algorithm
    while depth >= 1:
        domains = sorted_domains(_level_domains(root, depth), algorithm)
        fitting = [d for d in domains if d.count >= needed]
        if fitting:
            pick = best_fit(domains, needed) if algorithm == "BestFit" else fitting[0]
            return [(pick, needed)]
        if constraint.required:
            return None
        depth -= 1
    return _greedy(sorted_domains(_level_domains(root, 1), algorithm), needed, algorithm)


def _greedy(domains: list[Domain], needed: int, algorithm: str) -> list[tuple[Domain, int]] | None:
    """Take domains in order; once the rest fits in one, take the best fit for it."""
    if sum(d.count for d in domains) < needed:
        return None
    taken: list[tuple[Domain, int]] = []
    left = list(domains)
    while needed > 0:
        fitting = [d for d in left if d.count >= needed]
        pick = (
            (best_fit(left, needed) if algorithm == "BestFit" else fitting[0])
            if fitting
            else left[0]
        )
        amount = min(pick.count, needed)
        taken.append((pick, amount))
        needed -= amount
        left.remove(pick)
    return taken


def _descend(domain: Domain, amount: int, algorithm: str, out: list[tuple[Node, int]]) -> None:
    """Phase 2b: fill children greedily down to the nodes."""
    if domain.node is not None:
        out.append((domain.node, amount))
        return
    children = sorted_domains(list(domain.children.values()), algorithm)
    for child, share in _greedy(children, amount, algorithm) or []:
        _descend(child, share, algorithm, out)
