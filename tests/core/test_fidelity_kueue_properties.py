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

from collections import defaultdict
from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any

from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

import scheduler_core as sc
from scheduler_core import events as ev
from scheduler_core.engine import Engine

PROPERTY = settings(max_examples=150, deadline=None,
                    suppress_health_check=[HealthCheck.too_slow])
PRIORITIES = [-3, -2, -1, 0, 1, 2, 3]
BASE = {"controller": {"kind": "none"}, "cpu": 0, "memory": 0}


# =========================================================================== reference
@dataclass
class Ref:
    """One admitted workload in the reference model."""

    name: str
    queue: str
    priority: int
    gpus: int
    admitted_at: float
    arrival: float
    idx: int


class Model:
    """A flat cohort as §7 describes it: every queue's nominal quota is lent to the
    cohort; a queue borrows when its usage exceeds its nominal."""

    def __init__(self, queues: list[Mapping[str, Any]]) -> None:
        self.queues = {q["name"]: q for q in queues}
        self.admitted: list[Ref] = []

    def usage(self, queue: str, removed: frozenset[str] = frozenset()) -> int:
        return sum(w.gpus for w in self.admitted if w.queue == queue and w.name not in removed)

    def available(self, queue: str, removed: frozenset[str]) -> int:
        """Available(cq) (§7.3): the cohort's unused quota, capped by the borrowing limit."""
        q = self.queues[queue]
        cohort_free = sum(c["nominalGpus"] for c in self.queues.values()) - \
            sum(w.gpus for w in self.admitted if w.name not in removed)
        limit = q.get("borrowingLimitGpus")
        if limit is not None:
            cohort_free = min(cohort_free, q["nominalGpus"] - self.usage(queue, removed) + limit)
        return max(0, cohort_free)

    def fits(self, queue: str, gpus: int, removed: frozenset[str] = frozenset(), *,
             borrowing: bool = True) -> bool:
        """workloadFits(allowBorrowing) (§7.3)."""
        if not borrowing and self.usage(queue, removed) + gpus > self.queues[queue]["nominalGpus"]:
            return False
        return gpus <= self.available(queue, removed)

    # ---------------------------------------------------------------- §7.1-§7.3
    def targets(self, queue: str, priority: int, gpus: int,
                arrival: float) -> dict[str, str] | None:
        """The victims (name -> reason) classic preemption picks for a head that does not
        fit, or None when no attempt makes it fit."""
        q = self.queues[queue]
        policy = q["preemption"]
        own = [w for w in self.admitted if w.queue == queue
               and satisfies(policy["withinClusterQueue"], priority, arrival, w)]
        cohort: list[tuple[Ref, str]] = []
        advantage = self.usage(queue) + gpus <= q["nominalGpus"]
        if policy["reclaimWithinCohort"] != "Never":
            for w in self.admitted:
                owner = self.queues[w.queue]
                if w.queue == queue or self.usage(w.queue) <= owner["nominalGpus"]:
                    continue
                if satisfies(policy["reclaimWithinCohort"], priority, arrival, w):
                    cohort.append((w, self.variant(policy, priority, w, advantage)))
        hierarchy = sorted([c for c in cohort if c[1] == "hierarchical"], key=ordering)
        others = sorted([c for c in cohort if c[1] != "hierarchical"], key=ordering)
        mine = sorted([(w, "own") for w in own], key=ordering)
        candidates = hierarchy + others + mine
        bwc = policy.get("borrowWithinCohort")
        forbidden = bwc is None or bwc["policy"] == "Never"
        if not cohort or (forbidden and not self.usage(queue) < q["nominalGpus"]):
            attempts = [True]
        elif forbidden and not hierarchy:
            attempts = [False, True]
        else:
            attempts = [True, False]
        for borrowing in attempts:
            found = self.attempt(queue, gpus, candidates, borrowing)
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

    def attempt(self, queue: str, gpus: int, candidates: list[tuple[Ref, str]],
                borrowing: bool) -> list[tuple[Ref, str]] | None:
        removed: list[tuple[Ref, str]] = []
        for w, variant in candidates:
            gone = frozenset(r.name for r, _ in removed)
            if variant != "own":
                if borrowing and variant == "without-borrowing":
                    continue
                if self.usage(w.queue, gone) <= self.queues[w.queue]["nominalGpus"]:
                    continue
            removed.append((w, variant))
            if self.fits(queue, gpus, frozenset(r.name for r, _ in removed),
                         borrowing=borrowing):
                return self.fill_back(queue, gpus, removed, borrowing)
        return None

    def fill_back(self, queue: str, gpus: int, targets: list[tuple[Ref, str]],
                  borrowing: bool) -> list[tuple[Ref, str]]:
        for i in range(len(targets) - 2, -1, -1):
            without = frozenset(r.name for j, (r, _) in enumerate(targets) if j != i)
            if self.fits(queue, gpus, without, borrowing=borrowing):
                targets[i] = targets[-1]
                targets.pop()
        return targets


REASON = {"own": "InClusterQueue", "hierarchical": "InCohortReclamation",
          "without-borrowing": "InCohortReclamation",
          "while-borrowing": "InCohortReclaimWhileBorrowing"}


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


# =========================================================================== scenarios
def classes() -> list[dict[str, Any]]:
    return [{"name": f"p{v}".replace("-", "m"), "value": v} for v in PRIORITIES]


def class_of(priority: int) -> str:
    return f"p{priority}".replace("-", "m")


@st.composite
def flat_cohorts(draw: st.DrawFn) -> dict[str, Any]:
    """2-4 queues in one cohort with random quotas and policies; a few workloads admitted
    one after another (each fitting when it arrives, so no preemption yet); then one
    head arrives in a random queue."""
    queues = []
    for i in range(draw(st.integers(2, 4))):
        reclaim = draw(st.sampled_from(["Never", "LowerPriority", "Any"]))
        preemption: dict[str, Any] = {
            "withinClusterQueue": draw(st.sampled_from(
                ["Never", "LowerPriority", "LowerOrNewerEqualPriority"])),
            "reclaimWithinCohort": reclaim}
        if reclaim != "Never" and draw(st.booleans()):
            preemption["borrowWithinCohort"] = {
                "policy": draw(st.sampled_from(["Never", "LowerPriority"])),
                "maxPriorityThreshold": draw(st.sampled_from([None, -1, 1]))}
        queue = {"name": f"cq{i}", "nominalGpus": draw(st.integers(0, 6)), "cohort": "c",
                 "orderBy": "priority", "preemption": preemption}
        if draw(st.integers(0, 3)) == 0:
            queue["borrowingLimitGpus"] = draw(st.integers(0, 4))
        queues.append(queue)
    model = Model(queues)
    workloads = []
    for i in range(draw(st.integers(1, 7))):
        queue = draw(st.sampled_from(queues))["name"]
        gpus = draw(st.integers(1, 4))
        if not model.fits(queue, gpus):
            continue
        priority = draw(st.sampled_from(PRIORITIES))
        model.admitted.append(Ref(f"w{i}", queue, priority, gpus, float(i), float(i),
                                  len(workloads)))
        workloads.append({**BASE, "name": f"w{i}", "gpus": gpus, "queue": queue,
                          "arrival": float(i), "priorityClassName": class_of(priority)})
    head = {**BASE, "name": "head", "gpus": draw(st.integers(1, 6)),
            "queue": draw(st.sampled_from(queues))["name"], "arrival": 10.0,
            "priorityClassName": class_of(draw(st.sampled_from(PRIORITIES)))}
    return {"horizonSeconds": 20, "cluster": {"nodes": [{"name": "n", "gpus": 64}]},
            "priorityClasses": classes(), "queues": queues,
            "workloads": [*workloads, head], "policy": {"preemption": "none"}}


@st.composite
def busy_queues(draw: st.DrawFn) -> dict[str, Any]:
    """Queues (some in a cohort, some ordered by queuePriority) with workloads arriving
    and finishing over time, so preemptions, re-queues and re-admissions interleave."""
    queues = []
    for i in range(draw(st.integers(1, 3))):
        reclaim = draw(st.sampled_from(["Never", "LowerPriority", "Any"]))
        queues.append({
            "name": f"q{i}", "nominalGpus": draw(st.integers(1, 6)),
            "cohort": draw(st.sampled_from([None, "c"])),
            "orderBy": draw(st.sampled_from(["priority", "queuePriority"])),
            "queueingStrategy": draw(st.sampled_from(["StrictFIFO", "BestEffortFIFO"])),
            "preemption": {"withinClusterQueue": draw(st.sampled_from(
                ["Never", "LowerPriority", "LowerOrNewerEqualPriority"])),
                "reclaimWithinCohort": reclaim}})
    workloads = [{**BASE, "name": f"w{i}", "gpus": draw(st.integers(1, 3)),
                  "queue": draw(st.sampled_from(queues))["name"],
                  "arrival": draw(st.integers(0, 60)),
                  "durationSeconds": draw(st.sampled_from([5, 20, 60])),
                  "queuePriority": draw(st.sampled_from([0, 5, 10])),
                  "terminationGracePeriodSeconds": draw(st.sampled_from([0, 5])),
                  "priorityClassName": class_of(draw(st.sampled_from(PRIORITIES)))}
                 for i in range(draw(st.integers(2, 8)))]
    return {"horizonSeconds": 400, "cluster": {"nodes": [{"name": "n", "gpus": 64}]},
            "priorityClasses": classes(), "queues": queues, "workloads": workloads,
            "policy": {"preemption": "none"}}


def simulate(doc: Mapping[str, Any]) -> tuple[list[ev.Event], Engine]:
    engine = Engine(sc.resolve_variant(sc.parse_spec(doc), "default"), 0)
    return engine.run(), engine


# =========================================================================== properties
@PROPERTY
@given(flat_cohorts())
def test_classic_preemption_matches_the_reference_on_flat_cohorts(doc):
    """§7.3: same victims, same reasons (§7.5), and the head admitted at once exactly when
    the reference finds targets or the head fits as it is."""
    model = Model(doc["queues"])
    for i, w in enumerate(doc["workloads"][:-1]):
        priority = next(c["value"] for c in doc["priorityClasses"]
                        if c["name"] == w["priorityClassName"])
        model.admitted.append(Ref(w["name"], w["queue"], priority, w["gpus"], w["arrival"],
                                  w["arrival"], i))
    head = doc["workloads"][-1]
    priority = next(c["value"] for c in doc["priorityClasses"]
                    if c["name"] == head["priorityClassName"])
    fits = model.fits(head["queue"], head["gpus"])
    expected = {} if fits else model.targets(head["queue"], priority, head["gpus"], 10.0)
    log, _ = simulate(doc)
    evicted = {e.workload: e.message.rsplit("(", 1)[-1].rstrip(")")
               for e in log if e.reason == ev.SUSPENDED and e.related == "head"}
    admitted_now = any(e.reason == ev.ADMITTED and e.workload == "head" for e in log)
    assert evicted == (expected or {})
    assert admitted_now == (expected is not None)


@PROPERTY
@given(busy_queues())
def test_quota_is_never_counted_twice(doc):
    """Replaying the log: a workload is admitted only while not admitted; each queue stays
    within nominal (alone) or, in the cohort, the cohort within the sum of nominals; and
    the engine's final usage equals what the log says is still admitted."""
    log, engine = simulate(doc)
    queues = {q["name"]: q for q in doc["queues"]}
    gpus = {w["name"]: w["gpus"] for w in doc["workloads"]}
    queue_of = {w["name"]: w["queue"] for w in doc["workloads"]}
    admitted: set[str] = set()
    for e in log:
        if e.reason == ev.ADMITTED:
            assert e.workload not in admitted, f"{e.workload} admitted twice at {e.time}"
            admitted.add(e.workload)
        elif e.reason in (ev.SUSPENDED, ev.WORKLOAD_DONE):
            assert e.workload in admitted
            admitted.discard(e.workload)
        usage: dict[str, int] = defaultdict(int)
        for name in admitted:
            usage[queue_of[name]] += gpus[name]
        for name, q in queues.items():
            if q["cohort"] is None:
                assert usage[name] <= q["nominalGpus"]
        cohort = [n for n, q in queues.items() if q["cohort"] == "c"]
        assert sum(usage[n] for n in cohort) <= sum(queues[n]["nominalGpus"] for n in cohort)
    for name, state in engine.admission.queues.items():
        assert state.usage == sum(gpus[w] for w in admitted if queue_of[w] == name)
        assert {w.name for w in state.admitted} == {w for w in admitted if queue_of[w] == name}


@PROPERTY
@given(busy_queues())
def test_every_evicted_workload_is_requeued(doc):
    """§7.5: an evicted workload waits in its queue again: it is admitted later, or it is
    still waiting at the horizon; it is never lost."""
    log, engine = simulate(doc)
    waiting = {w.name for q in engine.admission.queues.values() for _, w in q.waiting}
    for i, e in enumerate(log):
        if e.reason == ev.SUSPENDED:
            later = any(x.reason == ev.ADMITTED and x.workload == e.workload
                        for x in log[i + 1:])
            assert later or e.workload in waiting, f"{e.workload} evicted at {e.time} is lost"
