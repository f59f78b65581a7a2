"""The assumptions behind a run's numbers, for the panel beside its charts: which
policies are Kubernetes behaviour and which are ours, and the checkpoint, grace-period
and startup figures the workloads were given. Read from the stored spec document (camelCase,
defaults written out), so it shows exactly what the simulation used."""

from __future__ import annotations

from collections import Counter
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from typing import Any, NamedTuple

UPSTREAM, OURS = "Kubernetes behaviour", "ours, not a Kubernetes behaviour"

# Wording from the README's "Policies" section.
PREEMPTION = {
    "none": (UPSTREAM, "nobody is evicted; priority only orders the queue"),
    "pod": (
        UPSTREAM,
        "Kubernetes DefaultPreemption: per node, the smallest set of strictly "
        "lower-priority victims; the node by the upstream tie-breakers; graceful deletion; "
        "nominatedNodeName",
    ),
    "workload-aware": (
        UPSTREAM,
        "Kubernetes 1.37 (KEP-5710): a PodGroup preempts as one, "
        "victims across all nodes, as units",
    ),
    "checkpoint-aware": (
        OURS,
        "the same eligibility, but the victims are the cheapest set by "
        "expected lost work, stranded capacity, startup and recovery",
    ),
}
PLACEMENT = {
    "MostAllocated": (UPSTREAM, "Kubernetes scoring: bin-packing on GPUs"),
    "LeastAllocated": (UPSTREAM, "Kubernetes scoring: spreading on GPUs"),
}
MODEL_NOTES = (
    # The README's "application model (ours)" and "checkpoint-aware cost model" sections.
    "The application model is ours: Kubernetes does not see what runs in a pod. Progress is "
    "seconds of work at full strength; a running segment alternates intervalSeconds of work "
    "with writeSeconds of checkpoint writing.",
    "On a disruption, work since the last durable checkpoint is lost (a checkpoint on SIGTERM "
    "counts only if the write and the stop fit in the grace period).",
    "synchronous: progress only while every member is Ready; a lost member stalls the "
    "survivors, whose GPUs are stranded until the group restarts from its checkpoint. "
    "elastic: progress at live/members of full speed above minMembers. independent: each "
    "member its own shard. serving: capacity is the Ready replicas; a replica evicted while "
    "loading loses its loading. interactive: a lost session is a user-visible cost.",
    "checkpoint-aware (ours) scores each candidate victim in GPU-seconds: lostWork, "
    "strandedCapacity, startup, recovery (the victim's startup time times its GPUs) and session "
    "(an hour of one GPU), each multiplied by a weight in policy.checkpointAwareWeights.",
    "A victim stops after min(stopSeconds [+ a checkpoint write], its grace period); its "
    "GPUs free only then, so the grace period is the preemptor's delay.",
)
MAX_PROFILES = 25


@dataclass(frozen=True, slots=True)
class PolicyNote:
    variant: str
    preemption: str
    preemption_origin: str
    preemption_text: str
    placement: str
    placement_origin: str
    overrides: tuple[str, ...]

    @property
    def ours(self) -> bool:
        return OURS in (self.preemption_origin, self.placement_origin)


@dataclass(frozen=True, slots=True)
class WorkloadProfile:
    """Workloads that share every assumption, counted once (a synthetic spec has
    thousands of workloads but a handful of profiles)."""

    count: int
    kind: str
    recovery: str
    checkpoint: str
    grace_seconds: float
    stop_seconds: float
    startup_seconds: float
    replacement: str
    examples: str


@dataclass(frozen=True, slots=True)
class Assumptions:
    policies: tuple[PolicyNote, ...]
    profiles: tuple[WorkloadProfile, ...]
    profiles_left_out: int
    notes: tuple[str, ...] = MODEL_NOTES


def assumptions(spec: Mapping[str, Any], variants: Sequence[Mapping[str, Any]]) -> Assumptions:
    """``variants``: {variant, preemption, placement} per variant, as ``Run.aggregate``
    lists them; overrides are read from the spec's variants by name."""
    overrides = {v.get("name"): v.get("set") or {} for v in spec.get("variants") or []}
    policies = tuple(_policy(v, overrides.get(v["variant"], {})) for v in variants)
    profiles = _profiles(spec.get("workloads") or [])
    return Assumptions(
        policies, tuple(profiles[:MAX_PROFILES]), max(0, len(profiles) - MAX_PROFILES)
    )


def _policy(variant: Mapping[str, Any], overrides: Mapping[str, Any]) -> PolicyNote:
    pre_origin, pre_text = PREEMPTION.get(variant["preemption"], ("not described", ""))
    place_origin, _ = PLACEMENT.get(variant["placement"], ("not described", ""))
    return PolicyNote(
        variant["variant"],
        variant["preemption"],
        pre_origin,
        pre_text,
        variant["placement"],
        place_origin,
        tuple(f"{path} = {value}" for path, value in overrides.items()),
    )


class _Profile(NamedTuple):
    kind: str
    recovery: str
    checkpoint: str
    grace_seconds: float
    stop_seconds: float
    startup_seconds: float
    replacement: str


def _profiles(workloads: Sequence[Mapping[str, Any]]) -> list[WorkloadProfile]:
    keyed: dict[_Profile, list[str]] = {}
    for w in workloads:
        keyed.setdefault(_profile_key(w), []).append(w["name"])
    counts = Counter({key: len(names) for key, names in keyed.items()})
    return [
        WorkloadProfile(
            count, *key, examples=", ".join(keyed[key][:3]) + (" …" if count > 3 else "")
        )
        for key, count in counts.most_common()
    ]


def _profile_key(w: Mapping[str, Any]) -> _Profile:
    checkpoint = w.get("checkpoint") or {}
    controller = w.get("controller") or {}
    return _Profile(
        w.get("kind", ""),
        (w.get("recovery") or {}).get("model", ""),
        _checkpoint_text(checkpoint),
        w.get("terminationGracePeriodSeconds", 30.0),
        w.get("stopSeconds", 5.0),
        w.get("startupSeconds", 0.0),
        f"{controller.get('kind', 'job')}: {controller.get('podReplacementPolicy', '')}".rstrip(
            ": "
        ),
    )


def _checkpoint_text(checkpoint: Mapping[str, Any]) -> str:
    interval = checkpoint.get("intervalSeconds")
    if interval is None:
        return "never"
    text = f"every {interval:g}s, {checkpoint.get('writeSeconds', 0):g}s to write"
    return text + (", and on SIGTERM" if checkpoint.get("onSigterm") else "")
