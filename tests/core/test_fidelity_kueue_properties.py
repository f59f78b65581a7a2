"""Kueue's admission layer against an independent model of the upstream rules
(kubernetes-preemption.md §7), on random flat cohorts checked with Hypothesis.

* §7.3 classic preemption: a small reference implementation written here from the
  document (candidates, classifyPreemptionVariant, the borrowing attempts, lazy
  candidateIsValid, workloadFits, fill-back) chooses the victims and their reasons; the
  engine must evict exactly those, at the head's arrival, and admit the head then;
* quota is never counted twice: replaying Admitted / WorkloadEvicted / WorkloadCompleted,
  no workload is admitted while admitted, and no queue or cohort ever exceeds its quota;
* every evicted workload is re-queued (§7.5): it is admitted again later, or still waits.
"""

from __future__ import annotations

import math
from collections import defaultdict
from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

import scheduler_core as sc
from scheduler_core import events as ev
from scheduler_core.engine import Engine

PROPERTY = settings(max_examples=150, deadline=None, suppress_health_check=[HealthCheck.too_slow])
PRIORITIES = [-3, -2, -1, 0, 1, 2, 3]
BASE = {"controller": {"kind": "job"}, "cpu": 0, "memory": 0}


# =========================================================================== reference
RESOURCES = ("gpus", "cpu")


@dataclass
class Ref:
    """One admitted workload in the reference model."""

    name: str
    queue: str
    priority: int
    req: dict[str, int]
    admitted_at: float
    arrival: float
    idx: int


class Model:
    """A flat cohort as §7 describes it: every queue's nominal quota of each covered
    resource is lent to the cohort; a queue borrows a resource when its usage of it
    exceeds its nominal. A resource the queue does not cover is not limited."""

    def __init__(self, queues: list[Mapping[str, Any]]) -> None:
        self.queues = {q["name"]: q for q in queues}
        self.admitted: list[Ref] = []

    def covered(self, queue: str) -> tuple[str, ...]:
        return tuple(self.queues[queue]["_nominal"])

    def nominal(self, queue: str, r: str) -> int:
        return self.queues[queue]["_nominal"][r]

    def usage(self, queue: str, r: str, removed: frozenset[str] = frozenset()) -> int:
        return sum(w.req[r] for w in self.admitted if w.queue == queue and w.name not in removed)

    def borrows(self, queue: str, resources: Any, removed: frozenset[str] = frozenset()) -> bool:
        return any(self.usage(queue, r, removed) > self.nominal(queue, r) for r in resources)

    def available(self, queue: str, r: str, removed: frozenset[str]) -> int:
        """Available(cq) (§7.3): the cohort's unused quota, capped by the borrowing limit."""
        cohort_free = sum(self.nominal(n, r) for n in self.queues) - sum(
            self.usage(n, r, removed) for n in self.queues
        )
        limit = self.queues[queue]["_limit"].get(r)
        if limit is not None:
            cohort_free = min(
                cohort_free, self.nominal(queue, r) - self.usage(queue, r, removed) + limit
            )
        return max(0, cohort_free)

    def potential(self, queue: str, r: str) -> int:
        """PotentialAvailable(cq): the cohort's quota, capped by the borrowing limit."""
        total = sum(self.nominal(n, r) for n in self.queues)
        limit = self.queues[queue]["_limit"].get(r)
        return total if limit is None else min(total, self.nominal(queue, r) + limit)

    def fits(
        self,
        queue: str,
        req: Mapping[str, int],
        removed: frozenset[str] = frozenset(),
        *,
        borrowing: bool = True,
    ) -> bool:
        """workloadFits(allowBorrowing) (§7.3), every covered resource."""
        for r in self.covered(queue):
            if req[r] == 0:
                continue
            if not borrowing and self.usage(queue, r, removed) + req[r] > self.nominal(queue, r):
                return False
            if req[r] > self.available(queue, r, removed):
                return False
        return True

    # ---------------------------------------------------------------- §7.1-§7.3
    def targets(
        self, queue: str, priority: int, req: Mapping[str, int], arrival: float
    ) -> dict[str, str] | None:
        """The victims (name -> reason) classic preemption picks for a head that does not
        fit, or None when no attempt makes it fit."""
        q = self.queues[queue]
        policy = q["preemption"]
        bwc = policy.get("borrowWithinCohort")
        forbidden = bwc is None or bwc["policy"] == "Never"
        needed = {
            r
            for r in self.covered(queue)
            if req[r] > 0 and req[r] > self.available(queue, r, frozenset())
        }
        for r in needed:
            # fitsResourceQuota: above what the cohort could ever give, or above the nominal
            # quota without borrowWithinCohort, the flavor does not fit: no preemption
            if req[r] > self.potential(queue, r) or (req[r] > self.nominal(queue, r) and forbidden):
                return None

        def uses_needed(w: Ref) -> bool:
            return any(w.req[r] > 0 for r in needed)

        own = [
            w
            for w in self.admitted
            if w.queue == queue
            and uses_needed(w)
            and satisfies(policy["withinClusterQueue"], priority, arrival, w)
        ]
        cohort: list[tuple[Ref, str]] = []
        advantage = all(
            self.usage(queue, r) + req[r] <= self.nominal(queue, r)
            for r in self.covered(queue)
            if req[r] > 0
        )
        if policy["reclaimWithinCohort"] != "Never":
            for w in self.admitted:
                if w.queue == queue or not self.borrows(w.queue, needed):
                    continue
                if uses_needed(w) and satisfies(
                    policy["reclaimWithinCohort"], priority, arrival, w
                ):
                    cohort.append((w, self.variant(policy, priority, w, advantage)))
        hierarchy = sorted([c for c in cohort if c[1] == "hierarchical"], key=ordering)
        others = sorted([c for c in cohort if c[1] != "hierarchical"], key=ordering)
        mine = sorted([(w, "own") for w in own], key=ordering)
        candidates = hierarchy + others + mine
        under_nominal = all(self.usage(queue, r) < self.nominal(queue, r) for r in needed)
        if not cohort or (forbidden and not under_nominal):
            attempts = [True]
        elif forbidden and not hierarchy:
            attempts = [False, True]
        else:
            attempts = [True, False]
        for borrowing in attempts:
            found = self.attempt(queue, req, candidates, borrowing, needed)
            if found is not None:
                return {w.name: REASON[variant] for w, variant in found}
        return None

    @staticmethod
    def variant(policy: Mapping[str, Any], priority: int, w: Ref, advantage: bool) -> str:
        bwc = policy.get("borrowWithinCohort")
        if advantage:
            return "hierarchical"
        if bwc is None or bwc["policy"] == "Never":
            return "without-borrowing"
        threshold = bwc.get("maxPriorityThreshold")
        if w.priority >= priority or (threshold is not None and w.priority > threshold):
            return "without-borrowing"
        return "while-borrowing"

    def attempt(
        self,
        queue: str,
        req: Mapping[str, int],
        candidates: list[tuple[Ref, str]],
        borrowing: bool,
        needed: set[str],
    ) -> list[tuple[Ref, str]] | None:
        removed: list[tuple[Ref, str]] = []
        for w, variant in candidates:
            gone = frozenset(r.name for r, _ in removed)
            if variant != "own":
                if borrowing and variant == "without-borrowing":
                    continue
                if not self.borrows(w.queue, needed, gone):
                    continue
            removed.append((w, variant))
            if self.fits(queue, req, frozenset(r.name for r, _ in removed), borrowing=borrowing):
                return self.fill_back(queue, req, removed, borrowing)
        return None

    def fill_back(
        self, queue: str, req: Mapping[str, int], targets: list[tuple[Ref, str]], borrowing: bool
    ) -> list[tuple[Ref, str]]:
        for i in range(len(targets) - 2, -1, -1):
            without = frozenset(r.name for j, (r, _) in enumerate(targets) if j != i)
            if self.fits(queue, req, without, borrowing=borrowing):
                targets[i] = targets[-1]
                targets.pop()
        return targets


REASON = {
    "own": "InClusterQueue",
    "hierarchical": "InCohortReclamation",
    "without-borrowing": "InCohortReclamation",
    "while-borrowing": "InCohortReclaimWhileBorrowing",
}


class FairModel(Model):
    """§7.4 on the same flat cohort: dominant resource shares with weights, the target
    queue with the highest share, FairSharingPreemptWithinNominal, the first strategy,
    then rule S2-b with LessThanInitialShare; fill-back with borrowing."""

    def __init__(self, queues: list[Mapping[str, Any]], strategies: list[str]) -> None:
        super().__init__(queues)
        self.strategies = strategies

    def share(
        self, queue: str, removed: frozenset[str], extra: Mapping[str, int] | None = None
    ) -> float:
        borrowed = {
            r: self.usage(queue, r, removed) + (extra or {}).get(r, 0) - self.nominal(queue, r)
            for r in self.covered(queue)
        }
        ratios = [
            b * 1000 / sum(self.nominal(n, r) for n in self.queues)
            for r, b in borrowed.items()
            if b > 0 and sum(self.nominal(n, r) for n in self.queues) > 0
        ]
        if not any(b > 0 for b in borrowed.values()):
            return 0.0
        weight = self.queues[queue].get("fairSharing", {}).get("weight", 1)
        ratio = max(ratios, default=0.0)
        return math.inf if weight == 0 else ratio / weight

    def targets(
        self, queue: str, priority: int, req: Mapping[str, int], arrival: float
    ) -> dict[str, str] | None:
        policy = self.queues[queue]["preemption"]
        needed = {
            r
            for r in self.covered(queue)
            if req[r] > 0 and req[r] > self.available(queue, r, frozenset())
        }
        for r in needed:
            if req[r] > self.potential(queue, r) or (
                req[r] > self.nominal(queue, r) and policy["reclaimWithinCohort"] == "Never"
            ):
                return None
        uses = [w for w in self.admitted if any(w.req[r] > 0 for r in needed)]
        own = [
            w
            for w in uses
            if w.queue == queue and satisfies(policy["withinClusterQueue"], priority, arrival, w)
        ]
        others = [
            w
            for w in uses
            if w.queue != queue
            and self.borrows(w.queue, needed)
            and policy["reclaimWithinCohort"] != "Never"
            and satisfies(policy["reclaimWithinCohort"], priority, arrival, w)
        ]

        def order(w: Ref) -> tuple:
            return (1 if w.queue == queue else 0, w.priority, -w.admitted_at, w.idx)

        pending: dict[str, list[Ref]] = {}
        for w in sorted(own + others, key=order):
            pending.setdefault(w.queue, []).append(w)
        gone: list[tuple[Ref, str]] = []
        within = all(self.usage(queue, r) + req[r] <= self.nominal(queue, r) for r in needed)

        def removed() -> frozenset[str]:
            return frozenset(w.name for w, _ in gone)

        def pick(lists: dict[str, list[Ref]]) -> str | None:
            best = None
            for name, items in lists.items():
                share = self.share(name, removed())
                if not items or (name != queue and share <= 0):
                    continue
                rank = (share, tuple(-x for x in order(items[0])))
                if best is None or rank > best[0]:
                    best = (rank, name)
            return best[1] if best else None

        def done() -> dict[str, str]:
            return {w.name: reason for w, reason in self.fill_back(queue, req, gone, True)}

        retry: dict[str, list[Ref]] = {}
        while (target := pick(pending)) is not None:
            items = pending[target]
            if target == queue or within:
                w = items.pop(0)
                gone.append((w, "InClusterQueue" if target == queue else "InCohortReclamation"))
                if self.fits(queue, req, removed()):
                    return done()
                continue
            mine = self.share(queue, removed(), req)
            old = self.share(target, removed())
            while items:
                w = items.pop(0)
                new = self.share(target, removed() | {w.name})
                ok = (
                    mine <= new
                    if self.strategies[0] == "LessThanOrEqualToFinalShare"
                    else mine < old
                )
                if ok:
                    gone.append((w, "InCohortFairSharing"))
                    if self.fits(queue, req, removed()):
                        return done()
                    break
                retry.setdefault(target, []).append(w)
        if len(self.strategies) > 1:
            while (target := pick(retry)) is not None:
                w = retry.pop(target)[0]
                if self.share(queue, removed(), req) < self.share(target, removed()):
                    gone.append((w, "InCohortFairSharing"))
                    if self.fits(queue, req, removed()):
                        return done()
        return None


def ordering(item: tuple[Ref, str]) -> tuple[int, float, int]:
    """§7.2 within one list: lower priority, more recently admitted, then a stable id."""
    return (item[0].priority, -item[0].admitted_at, item[0].idx)


def satisfies(policy: str, priority: int, arrival: float, w: Ref) -> bool:
    """SatisfiesPreemptionPolicy (§7.1); the queue-order timestamp is the creation time."""
    if policy == "LowerPriority":
        return priority > w.priority
    if policy == "LowerOrNewerEqualPriority":
        return priority > w.priority or (priority == w.priority and arrival < w.arrival)
    return policy == "Any"


def quota_fields(nominal: Mapping[str, int], limit: Mapping[str, int | None]) -> dict[str, Any]:
    """The spec's way to say the quota: nominalGpus for GPUs alone, else one resource
    group (one flavor) covering every resource given."""
    if list(nominal) == ["gpus"]:
        fields: dict[str, Any] = {"nominalGpus": nominal["gpus"]}
        if limit.get("gpus") is not None:
            fields["borrowingLimitGpus"] = limit["gpus"]
        return fields
    resources = []
    for r, value in nominal.items():
        entry: dict[str, Any] = {"name": r, "nominalQuota": value}
        if limit.get(r) is not None:
            entry["borrowingLimit"] = limit[r]
        resources.append(entry)
    return {
        "resourceGroups": [
            {"coveredResources": list(nominal), "flavors": [{"name": "f", "resources": resources}]}
        ]
    }


def spec_queue(queue: Mapping[str, Any]) -> dict[str, Any]:
    return {k: v for k, v in queue.items() if not k.startswith("_")}


# =========================================================================== scenarios
def classes() -> list[dict[str, Any]]:
    return [{"name": f"p{v}".replace("-", "m"), "value": v} for v in PRIORITIES]


def class_of(priority: int) -> str:
    return f"p{priority}".replace("-", "m")


@st.composite
def flat_cohorts(draw: st.DrawFn) -> dict[str, Any]:
    """2-4 queues in one cohort with random quotas and policies, on GPUs alone or on GPUs
    and CPU; a few workloads admitted one after another (each fitting when it arrives, so
    no preemption yet); then one head arrives in a random queue."""
    multi = draw(st.booleans())
    resources = RESOURCES if multi else ("gpus",)
    queues = []
    for i in range(draw(st.integers(2, 4))):
        reclaim = draw(st.sampled_from(["Never", "LowerPriority", "Any"]))
        preemption: dict[str, Any] = {
            "withinClusterQueue": draw(
                st.sampled_from(["Never", "LowerPriority", "LowerOrNewerEqualPriority"])
            ),
            "reclaimWithinCohort": reclaim,
        }
        if reclaim != "Never" and draw(st.booleans()):
            preemption["borrowWithinCohort"] = {
                "policy": draw(st.sampled_from(["Never", "LowerPriority"])),
                "maxPriorityThreshold": draw(st.sampled_from([None, -1, 1])),
            }
        nominal = {r: draw(st.integers(0, 6)) for r in resources}
        limit = {
            r: draw(st.integers(0, 4)) if draw(st.integers(0, 3)) == 0 else None for r in resources
        }
        queue = {
            "name": f"cq{i}",
            "cohort": "c",
            "orderBy": "priority",
            "preemption": preemption,
            **quota_fields(nominal, limit),
            "_nominal": nominal,
            "_limit": limit,
        }
        queues.append(queue)
    model = Model(queues)

    def request() -> dict[str, int]:
        return {"gpus": draw(st.integers(1, 4)), "cpu": draw(st.integers(0, 4)) if multi else 0}

    workloads = []
    for i in range(draw(st.integers(1, 7))):
        queue = draw(st.sampled_from(queues))["name"]
        req = request()
        if not model.fits(queue, req):
            continue
        priority = draw(st.sampled_from(PRIORITIES))
        model.admitted.append(
            Ref(f"w{i}", queue, priority, req, float(i), float(i), len(workloads))
        )
        workloads.append(
            {
                **BASE,
                "name": f"w{i}",
                "gpus": req["gpus"],
                "cpu": req["cpu"],
                "queue": queue,
                "arrival": float(i),
                "priorityClassName": class_of(priority),
            }
        )
    req = request()
    req["gpus"] = draw(st.integers(1, 6))
    head = {
        **BASE,
        "name": "head",
        "gpus": req["gpus"],
        "cpu": req["cpu"],
        "queue": draw(st.sampled_from(queues))["name"],
        "arrival": 10.0,
        "priorityClassName": class_of(draw(st.sampled_from(PRIORITIES))),
    }
    return {
        "horizonSeconds": 20,
        "cluster": {"nodes": [{"name": "n", "gpus": 64, "cpu": 64}]},
        "priorityClasses": classes(),
        "queues": queues,
        "workloads": [*workloads, head],
        "policy": {"preemption": "none"},
    }


@st.composite
def busy_queues(draw: st.DrawFn) -> dict[str, Any]:
    """Queues (some in a cohort, some ordered by queuePriority, some with CPU quota and a
    second flavor too, classic or fair-sharing preemption) with Jobs and bare pods
    arriving and finishing over time, so preemptions, quota held by terminating victims,
    re-queues and re-admissions interleave."""
    multi = draw(st.booleans())
    resources = RESOURCES if multi else ("gpus",)
    queues = []
    for i in range(draw(st.integers(1, 3))):
        reclaim = draw(st.sampled_from(["Never", "LowerPriority", "Any"]))
        flavors = ["f", "g"][: draw(st.integers(1, 2))] if multi else ["default"]
        nominal = {(f, r): draw(st.integers(1, 6)) for f in flavors for r in resources}
        if multi:
            quota: dict[str, Any] = {
                "resourceGroups": [
                    {
                        "coveredResources": list(resources),
                        "flavors": [
                            {
                                "name": f,
                                "resources": [
                                    {"name": r, "nominalQuota": nominal[(f, r)]} for r in resources
                                ],
                            }
                            for f in flavors
                        ],
                    }
                ],
                "flavorFungibility": {
                    "whenCanBorrow": draw(st.sampled_from(["MayStopSearch", "TryNextFlavor"])),
                    "whenCanPreempt": draw(st.sampled_from(["MayStopSearch", "TryNextFlavor"])),
                },
            }
        else:
            quota = {"nominalGpus": nominal[("default", "gpus")]}
        queues.append(
            {
                "name": f"q{i}",
                **quota,
                "_quota": nominal,
                "cohort": draw(st.sampled_from([None, "c"])),
                "orderBy": draw(st.sampled_from(["priority", "queuePriority"])),
                "queueingStrategy": draw(st.sampled_from(["StrictFIFO", "BestEffortFIFO"])),
                "fairSharing": {"weight": draw(st.sampled_from([0.5, 1, 2]))},
                "preemption": {
                    "withinClusterQueue": draw(
                        st.sampled_from(["Never", "LowerPriority", "LowerOrNewerEqualPriority"])
                    ),
                    "reclaimWithinCohort": reclaim,
                },
            }
        )
    workloads = [
        {
            **BASE,
            "name": f"w{i}",
            "gpus": draw(st.integers(1, 3)),
            "cpu": draw(st.integers(0, 3)) if multi else 0,
            "controller": {"kind": draw(st.sampled_from(["job", "none"]))},
            "queue": draw(st.sampled_from(queues))["name"],
            "arrival": draw(st.integers(0, 60)),
            "durationSeconds": draw(st.sampled_from([5, 20, 60])),
            "queuePriority": draw(st.sampled_from([0, 5, 10])),
            "terminationGracePeriodSeconds": draw(st.sampled_from([0, 5, 10])),
            "priorityClassName": class_of(draw(st.sampled_from(PRIORITIES))),
        }
        for i in range(draw(st.integers(2, 8)))
    ]
    doc = {
        "horizonSeconds": 400,
        "cluster": {"nodes": [{"name": "n", "gpus": 64, "cpu": 64}]},
        "priorityClasses": classes(),
        "queues": queues,
        "workloads": workloads,
        "policy": {"preemption": "none"},
    }
    if draw(st.booleans()):
        doc["fairSharing"] = {
            "preemptionStrategies": draw(
                st.sampled_from(
                    [
                        ["LessThanOrEqualToFinalShare"],
                        ["LessThanInitialShare"],
                        ["LessThanOrEqualToFinalShare", "LessThanInitialShare"],
                    ]
                )
            )
        }
    return doc


def simulate(doc: Mapping[str, Any]) -> tuple[list[ev.Event], Engine]:
    doc = {**doc, "queues": [spec_queue(q) for q in doc["queues"]]}
    # bounded: a loop at one instant (tests/core/test_kueue_instant.py) fails the example
    # instead of filling memory
    engine = Engine(sc.resolve_variant(sc.parse_spec(doc), "default"), 0, max_events=50_000)
    return engine.run(), engine


def priority_of(doc: Mapping[str, Any], workload: Mapping[str, Any]) -> int:
    return next(
        c["value"] for c in doc["priorityClasses"] if c["name"] == workload["priorityClassName"]
    )


# =========================================================================== properties
@PROPERTY
@given(flat_cohorts())
def test_classic_preemption_matches_the_reference_on_flat_cohorts(doc):
    """§7.3: same victims, same reasons (§7.5), and the head admitted at once exactly when
    the reference finds targets or the head fits as it is; GPUs alone or GPUs and CPU."""
    model = Model(doc["queues"])
    for i, w in enumerate(doc["workloads"][:-1]):
        model.admitted.append(
            Ref(
                w["name"],
                w["queue"],
                priority_of(doc, w),
                {"gpus": w["gpus"], "cpu": w["cpu"]},
                w["arrival"],
                w["arrival"],
                i,
            )
        )
    head = doc["workloads"][-1]
    req = {"gpus": head["gpus"], "cpu": head["cpu"]}
    fits = model.fits(head["queue"], req)
    expected = {} if fits else model.targets(head["queue"], priority_of(doc, head), req, 10.0)
    log, _ = simulate(doc)
    evicted = {
        e.workload: e.message.rsplit("(", 1)[-1].rstrip(")")
        for e in log
        if e.reason == ev.SUSPENDED and e.related == "head"
    }
    admitted_now = any(e.reason == ev.ADMITTED and e.workload == "head" for e in log)
    assert evicted == (expected or {})
    assert admitted_now == (expected is not None)


RELEASED_MESSAGE = "pods gone: quota released"


def flavors_of(message: str, request: Mapping[str, int]) -> dict[tuple[str, str], int]:
    """The (flavor, resource) usage an Admitted event names (``flavors: gpus=f, cpu=f``);
    the short form nominalGpus has one flavor, 'default'."""
    if not message.startswith("flavors: "):
        return {("default", "gpus"): request["gpus"]}
    pairs = (item.split("=") for item in message[len("flavors: ") :].split(", "))
    return {(flavor, r): request[r] for r, flavor in pairs}


def replay_usage(doc: Mapping[str, Any], log: list[ev.Event]) -> Any:
    """Replay Admitted / WorkloadEvicted / quota released / WorkloadCompleted; yields the
    (flavor, resource) usage reserved per workload after each event. A bare pod's workload
    (Kueue's Pod integration) keeps its quota from its eviction until its pods are gone;
    a Job's returns at once."""
    kind = {w["name"]: w["controller"]["kind"] for w in doc["workloads"]}
    request = {w["name"]: {"gpus": w["gpus"], "cpu": w["cpu"]} for w in doc["workloads"]}
    admitted: dict[str, dict[tuple[str, str], int]] = {}
    held: dict[str, dict[tuple[str, str], int]] = {}
    for e in log:
        if e.reason == ev.ADMITTED:
            assert e.workload not in admitted.keys() | held.keys(), (
                f"{e.workload} admitted twice at {e.time}"
            )
            admitted[e.workload] = flavors_of(e.message, request[e.workload])
        elif e.reason in (ev.SUSPENDED, ev.WORKLOAD_DONE):
            assert e.workload in admitted
            usage = admitted.pop(e.workload)
            if e.reason == ev.SUSPENDED and kind[e.workload] == "none":
                held[e.workload] = usage
        elif e.reason == ev.QUEUED and e.message.startswith(RELEASED_MESSAGE):
            assert e.workload in held
            del held[e.workload]
        yield {**admitted, **held}


@PROPERTY
@given(busy_queues())
def test_quota_is_never_counted_twice(doc):
    """Replaying the log: a workload is admitted only while it neither runs nor holds
    quota; for every (flavor, resource) each queue stays within nominal (alone) or the
    cohort within the sum of nominals, counting the quota evicted workloads still hold;
    and the engine's final usage equals what the log says is still reserved. Classic and
    fair-sharing preemption, one or two flavors, GPUs alone or with CPU."""
    log, engine = simulate(doc)
    queues = {q["name"]: q for q in doc["queues"]}
    queue_of = {w["name"]: w["queue"] for w in doc["workloads"]}
    reserved: dict[str, dict[tuple[str, str], int]] = {}
    for reserved in replay_usage(doc, log):
        usage: dict[tuple[str, tuple[str, str]], int] = defaultdict(int)
        for name, frs in reserved.items():
            for fr, value in frs.items():
                usage[(queue_of[name], fr)] += value
        frs_all = {fr for q in queues.values() for fr in q["_quota"]}
        for fr in frs_all:
            for name, q in queues.items():
                if q["cohort"] is None:
                    assert usage[(name, fr)] <= q["_quota"].get(fr, 0), (name, fr)
            cohort = [n for n, q in queues.items() if q["cohort"] == "c"]
            assert sum(usage[(n, fr)] for n in cohort) <= sum(
                queues[n]["_quota"].get(fr, 0) for n in cohort
            ), fr
    for name, state in engine.admission.queues.items():
        mine = {w: frs for w, frs in reserved.items() if queue_of[w] == name}
        for fr, used in state.usage.items():
            assert used == pytest.approx(sum(frs.get(fr, 0) for frs in mine.values()))
        assert {w.name for w in state.admitted} == set(mine)


@PROPERTY
@given(busy_queues())
def test_every_evicted_workload_is_requeued(doc):
    """§7.5: an evicted workload waits in its queue again: it is admitted later, or it is
    still waiting at the horizon, or its pods are still terminating then (its quota still
    reserved); it is never lost."""
    log, engine = simulate(doc)
    waiting = {w.name for q in engine.admission.queues.values() for _, w in q.waiting}
    evicting = {w.name for q in engine.admission.queues.values() for w in q.evicting if w.holding()}
    for i, e in enumerate(log):
        if e.reason == ev.SUSPENDED:
            later = any(x.reason == ev.ADMITTED and x.workload == e.workload for x in log[i + 1 :])
            assert later or e.workload in waiting | evicting, (
                f"{e.workload} evicted at {e.time} is lost"
            )


@st.composite
def fair_cohorts(draw: st.DrawFn) -> dict[str, Any]:
    """2-4 queues in one cohort with Kueue's fairSharing on, random weights and
    strategies; small workloads admitted one after another until the cohort is about
    full, some queues borrowing; then one head arrives in a random queue."""
    multi = draw(st.booleans())
    resources = RESOURCES if multi else ("gpus",)
    queues = []
    for i in range(draw(st.integers(2, 4))):
        nominal = {r: draw(st.integers(0, 4)) for r in resources}
        limit = {
            r: draw(st.integers(0, 3)) if draw(st.integers(0, 4)) == 0 else None for r in resources
        }
        queues.append(
            {
                "name": f"cq{i}",
                "cohort": "c",
                "orderBy": "priority",
                "preemption": {
                    "withinClusterQueue": draw(
                        st.sampled_from(["Never", "LowerPriority", "LowerOrNewerEqualPriority"])
                    ),
                    "reclaimWithinCohort": draw(
                        st.sampled_from(["Any", "Any", "LowerPriority", "Never"])
                    ),
                },
                "fairSharing": {"weight": draw(st.sampled_from([0, 0.5, 1, 1, 2]))},
                **quota_fields(nominal, limit),
                "_nominal": nominal,
                "_limit": limit,
            }
        )
    model = Model(queues)
    workloads = []
    for i in range(draw(st.integers(1, 10))):
        queue = draw(st.sampled_from(queues))["name"]
        req = {"gpus": draw(st.integers(1, 2)), "cpu": draw(st.integers(0, 2)) if multi else 0}
        if not model.fits(queue, req):
            continue
        priority = draw(st.sampled_from(PRIORITIES))
        model.admitted.append(
            Ref(f"w{i}", queue, priority, req, float(i), float(i), len(workloads))
        )
        workloads.append(
            {
                **BASE,
                "name": f"w{i}",
                "gpus": req["gpus"],
                "cpu": req["cpu"],
                "queue": queue,
                "arrival": float(i),
                "priorityClassName": class_of(priority),
            }
        )
    head = {
        **BASE,
        "name": "head",
        "gpus": draw(st.integers(1, 4)),
        "cpu": draw(st.integers(0, 2)) if multi else 0,
        "queue": draw(st.sampled_from(queues))["name"],
        "arrival": 10.0,
        "priorityClassName": class_of(draw(st.sampled_from(PRIORITIES))),
    }
    return {
        "horizonSeconds": 20,
        "cluster": {"nodes": [{"name": "n", "gpus": 64, "cpu": 64}]},
        "priorityClasses": classes(),
        "queues": queues,
        "workloads": [*workloads, head],
        "policy": {"preemption": "none"},
        "fairSharing": {
            "preemptionStrategies": draw(
                st.sampled_from(
                    [
                        ["LessThanOrEqualToFinalShare"],
                        ["LessThanInitialShare"],
                        ["LessThanOrEqualToFinalShare", "LessThanInitialShare"],
                    ]
                )
            )
        },
    }


@PROPERTY
@given(fair_cohorts())
def test_fair_sharing_preemption_matches_the_reference_on_flat_cohorts(doc):
    """§7.4: same victims and reasons as the reference, and the head admitted at once
    exactly when it fits or the reference finds targets."""
    model = FairModel(doc["queues"], doc["fairSharing"]["preemptionStrategies"])
    for i, w in enumerate(doc["workloads"][:-1]):
        model.admitted.append(
            Ref(
                w["name"],
                w["queue"],
                priority_of(doc, w),
                {"gpus": w["gpus"], "cpu": w["cpu"]},
                w["arrival"],
                w["arrival"],
                i,
            )
        )
    head = doc["workloads"][-1]
    req = {"gpus": head["gpus"], "cpu": head["cpu"]}
    fits = model.fits(head["queue"], req)
    expected = {} if fits else model.targets(head["queue"], priority_of(doc, head), req, 10.0)
    log, _ = simulate(doc)
    evicted = {
        e.workload: e.message.rsplit("(", 1)[-1].rstrip(")")
        for e in log
        if e.reason == ev.SUSPENDED and e.related == "head"
    }
    admitted_now = any(e.reason == ev.ADMITTED and e.workload == "head" for e in log)
    assert evicted == (expected or {})
    assert admitted_now == (expected is not None)
