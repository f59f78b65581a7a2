"""Properties that must hold for every run (kubernetes-preemption.md §1-§4, domain.md §8),
checked with Hypothesis on random small clusters and workloads, by replaying the event
log independently of the engine's own bookkeeping.

* resources (GPUs, and CPU, memory, pod count) are never overcommitted on any node;
* a victim always has strictly lower priority than its preemptor (§4.3), is bound on the
  node of the decision, and `Never` pods and the `none` policy never preempt (§1, §4.1);
* every pod follows the lifecycle Created → Scheduled → (Ready) → Killing → Released
  or → Completed, and ends in a state the engine agrees with (a pending pod is queued);
* the same seed gives an identical event log;
* time never goes back, per pod and in the order events are emitted.
"""

from __future__ import annotations

from collections import defaultdict
from collections.abc import Mapping
from typing import Any

from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

import scheduler_core as sc
from scheduler_core import events as ev
from scheduler_core.engine import Engine
from scheduler_core.events import Event
from scheduler_core.model import PodState
from scheduler_core.spec import SYSTEM_CLASSES

EPS = 1e-6
PROPERTY = settings(max_examples=40, deadline=None, suppress_health_check=[HealthCheck.too_slow])
# FailedScheduling is aggregated like kubectl's "xN over T": one event per streak of identical
# failures, written when the streak ends and stamped with its first attempt, so it is not
# emitted in time order (the returned log is sorted).
LIFECYCLE = {
    ev.CREATED,
    ev.SCHEDULED,
    ev.READY,
    ev.KILLING,
    ev.RELEASED,
    ev.COMPLETED,
    ev.PREEMPTED,
    ev.VICTIMS_SELECTED,
    ev.NOMINATED,
}


# --------------------------------------------------------------------------- scenarios
@st.composite
def scenarios(draw: st.DrawFn) -> dict[str, Any]:
    """A valid spec mapping: 1-4 nodes, 1-4 classes (some `Never`, maybe one default),
    2-8 workloads, some pods already running, maybe one disruption on the timeline."""
    nodes = [
        {
            "name": f"n{i}",
            "gpus": draw(st.sampled_from([1, 2, 4, 8])),
            "cpu": draw(st.sampled_from([4, 16, 96])),
            "maxPods": draw(st.sampled_from([2, 4, 110])),
        }
        for i in range(draw(st.integers(1, 4)))
    ]
    values = draw(
        st.lists(st.sampled_from([-10, 0, 5, 100, 1000]), min_size=1, max_size=4, unique=True)
    )
    default = draw(st.sampled_from([None, *range(len(values))]))
    classes = [
        {
            "name": f"c{i}",
            "value": v,
            "globalDefault": i == default,
            "preemptionPolicy": draw(
                st.sampled_from(["PreemptLowerPriority", "PreemptLowerPriority", "Never"])
            ),
        }
        for i, v in enumerate(values)
    ]
    class_names = [None, *(c["name"] for c in classes), "system-cluster-critical"]
    max_gpus = max(n["gpus"] for n in nodes)
    max_cpu = max(n["cpu"] for n in nodes)
    workloads, initial = [], []
    for i in range(draw(st.integers(2, 8))):
        workload = _workload(draw, f"w{i}", class_names, max_gpus, max_cpu)
        workloads.append(workload)
        for member in range(draw(st.integers(0, workload["members"]))):
            initial.append(
                {
                    "workload": workload["name"],
                    "member": member,
                    "node": draw(st.sampled_from(nodes))["name"],
                    "startedAt": -draw(st.integers(0, 100)),
                }
            )
    return {
        "horizonSeconds": 300,
        "seed": draw(st.integers(0, 3)),
        "cluster": {"nodes": nodes},
        "priorityClasses": classes,
        "workloads": workloads,
        "initialState": initial,
        "events": draw(st.lists(_disruption(nodes), max_size=1)),
        "policy": {
            "preemption": draw(st.sampled_from(["pod", "pod", "none"])),
            "placement": draw(st.sampled_from(["MostAllocated", "LeastAllocated"])),
            "minCandidateNodesPercentage": draw(st.sampled_from([0, 10, 50])),
            "minCandidateNodesAbsolute": draw(st.sampled_from([1, 2, 100])),
        },
    }


def _workload(
    draw: st.DrawFn, name: str, class_names: list[str | None], max_gpus: int, max_cpu: int
) -> dict[str, Any]:
    kind = draw(st.sampled_from(["none", "none", "job", "deployment"]))
    workload = {
        "name": name,
        "members": draw(st.integers(1, 3)),
        "gpus": draw(st.integers(0, max_gpus) | st.just(max_gpus)),
        "cpu": draw(st.sampled_from([c for c in (0.5, 1, 4) if c <= max_cpu])),
        "arrival": draw(st.integers(0, 120)),
        "durationSeconds": draw(st.sampled_from([None, None, 5, 30, 90, 200])),
        "stopSeconds": draw(st.sampled_from([0, 1, 5, 40])),
        "terminationGracePeriodSeconds": draw(st.sampled_from([0, 2, 30])),
        "startupSeconds": draw(st.sampled_from([0, 3, 20])),
        "recovery": {
            "model": draw(
                st.sampled_from(["independent", "synchronous", "elastic", "serving", "interactive"])
            )
        },
        "controller": {
            "kind": kind,
            "podReplacementPolicy": draw(st.sampled_from(["TerminatingOrFailed", "Failed"])),
        },
    }
    class_name = draw(st.sampled_from(class_names))
    if class_name is not None:
        workload["priorityClassName"] = class_name
    if draw(st.integers(0, 3)) == 0:
        workload["pdb"] = draw(st.sampled_from([{"minAvailable": 1}, {"maxUnavailable": 1}]))
    return workload


def _disruption(nodes: list[dict[str, Any]]) -> st.SearchStrategy[dict[str, Any]]:
    return st.fixed_dictionaries(
        {
            "at": st.integers(0, 200),
            "type": st.sampled_from(["spot-reclaim", "node-failure", "drain"]),
            "nodes": st.lists(st.sampled_from([n["name"] for n in nodes]), min_size=1, max_size=1),
            "noticeSeconds": st.sampled_from([0, 10]),
            "recoverAfterSeconds": st.sampled_from([None, 30]),
        }
    )


# --------------------------------------------------------------------------- running
def run(doc: Mapping[str, Any]) -> tuple[list[Event], Engine]:
    """Simulate the default variant with the spec's seed; the sorted log and the engine."""
    spec = sc.parse_spec(doc)
    engine = Engine(sc.resolve_variant(spec, "default"), spec.seed)
    return engine.run(), engine


def expected_priority(doc: Mapping[str, Any], workload: Mapping[str, Any]) -> int:
    """§1, written independently of the engine: system classes, the named class, else
    the (lowest) global default, else 0."""
    name = workload.get("priorityClassName")
    if name in SYSTEM_CLASSES:
        return SYSTEM_CLASSES[name]
    classes = {c["name"]: c for c in doc["priorityClasses"]}
    if name is None:
        defaults = [c["value"] for c in classes.values() if c.get("globalDefault")]
        return min(defaults) if defaults else 0
    return classes[name]["value"]


def never_preempts(doc: Mapping[str, Any], workload: Mapping[str, Any]) -> bool:
    name = workload.get("priorityClassName")
    classes = {c["name"]: c for c in doc["priorityClasses"]}
    if name is None:
        defaults = [c for c in classes.values() if c.get("globalDefault")]
        chosen = min(defaults, key=lambda c: c["value"]) if defaults else None
    else:
        chosen = classes.get(name)
    return chosen is not None and chosen.get("preemptionPolicy") == "Never"


# --------------------------------------------------------------------------- properties
@PROPERTY
@given(scenarios())
def test_resources_are_never_overcommitted(doc):
    """No node ever holds more GPUs (or CPU, memory, pods) than it has, replaying
    Scheduled (+) and Released / Completed (-) in log order."""
    log, _ = run(doc)
    capacity = {
        n["name"]: (n["gpus"], n["cpu"], 1024.0, n["maxPods"]) for n in doc["cluster"]["nodes"]
    }
    shape = {w["name"]: (w["gpus"], w["cpu"], 32.0, 1) for w in doc["workloads"]}
    used = {name: [0.0, 0.0, 0.0, 0] for name in capacity}
    where: dict[str, str] = {}
    for e in log:
        if e.reason == ev.SCHEDULED:
            assert e.pod not in where, f"{e.pod} bound twice"
            where[e.pod] = e.node
            sign = 1
        elif e.reason in (ev.RELEASED, ev.COMPLETED):
            assert where.pop(e.pod) == e.node, f"{e.pod} freed on the wrong node"
            sign = -1
        else:
            continue
        held = used[e.node]
        for i, amount in enumerate(shape[e.workload]):
            held[i] += sign * amount
            assert -EPS <= held[i] <= capacity[e.node][i] + EPS, (e, held, capacity[e.node])


@PROPERTY
@given(scenarios())
def test_a_victim_always_has_strictly_lower_priority_than_its_preemptor(doc):
    """§4.3: every Preempted victim has priority < its preemptor's (priorities resolved
    here per §1, not read from the engine); it is bound on the decision's node; `Never`
    pods and the `none` policy never preempt."""
    log, _ = run(doc)
    by_name = {w["name"]: w for w in doc["workloads"]}
    priority = {name: expected_priority(doc, w) for name, w in by_name.items()}
    workload_of = {e.pod: e.workload for e in log if e.reason == ev.CREATED}
    bound_on: dict[str, str] = {}
    decision_node: dict[str, str] = {}
    for e in log:
        if e.reason == ev.SCHEDULED:
            bound_on[e.pod] = e.node
        elif e.reason == ev.VICTIMS_SELECTED:
            decision_node[e.pod] = e.node
            assert doc["policy"]["preemption"] == "pod"
            assert not never_preempts(doc, by_name[e.workload]), e
        elif e.reason == ev.PREEMPTED:
            preemptor = workload_of[e.related]
            assert priority[e.workload] < priority[preemptor], (e, priority)
            assert bound_on[e.pod] == e.node == decision_node[e.related], e


@PROPERTY
@given(scenarios())
def test_every_pod_follows_the_lifecycle_and_ends_in_a_known_state(doc):
    """Created → Scheduled → (Ready) → Killing → Released, or → Completed; the final
    state replayed from the log matches the engine's, and a pending pod is still queued
    (never lost)."""
    log, engine = run(doc)
    allowed = {
        ev.CREATED: ({None}, "pending"),
        ev.SCHEDULED: ({"pending"}, "bound"),
        ev.READY: ({"bound"}, "bound"),
        ev.KILLING: ({"bound"}, "terminating"),
        ev.RELEASED: ({"terminating"}, "gone"),
        ev.COMPLETED: ({"bound"}, "succeeded"),
    }
    state: dict[str, str | None] = defaultdict(lambda: None)
    for e in log:
        if e.reason in allowed and e.pod:
            sources, target = allowed[e.reason]
            assert state[e.pod] in sources, (e, state[e.pod])
            state[e.pod] = target
    engine_state = {
        PodState.PENDING: "pending",
        PodState.STARTING: "bound",
        PodState.READY: "bound",
        PodState.TERMINATING: "terminating",
        PodState.SUCCEEDED: "succeeded",
        PodState.GONE: "gone",
    }
    for workload in engine.workloads:
        for pod in workload.slots:
            if pod is None:
                continue
            assert state[pod.name] == engine_state[pod.state], pod
            if pod.state is PodState.PENDING:
                assert pod in engine.queue, f"{pod} is pending but in no queue"


@PROPERTY
@given(scenarios())
def test_same_seed_gives_an_identical_event_log(doc):
    """domain §8: same spec + same seed = identical results (through the public API)."""
    spec = sc.parse_spec(doc)
    first = sc.simulate(spec, "default", 0)
    second = sc.simulate(sc.parse_spec(doc), "default", 0)
    assert first.events == second.events
    assert first.summary == second.summary


@PROPERTY
@given(scenarios())
def test_time_never_goes_back(doc):
    """Lifecycle events are emitted in time order (before the log is sorted); per pod,
    Created ≤ Scheduled ≤ Ready ≤ Killing ≤ Released; Ready comes exactly startupSeconds
    after binding; a victim stops within its grace period of SIGTERM."""
    log, engine = run(doc)
    emitted = [e.time for e in engine.log if e.reason in LIFECYCLE]
    assert emitted == sorted(emitted)
    assert all(e.time <= doc["horizonSeconds"] + EPS for e in log)
    startup = {w["name"]: w["startupSeconds"] for w in doc["workloads"]}
    grace = {w["name"]: w["terminationGracePeriodSeconds"] for w in doc["workloads"]}
    seen: dict[str, dict[str, float]] = defaultdict(dict)
    for e in log:
        if e.pod and e.reason in LIFECYCLE:
            seen[e.pod].setdefault(e.reason, e.time)
            if e.reason == ev.KILLING:
                assert e.value <= grace[e.workload] + EPS, e
    order = [ev.CREATED, ev.SCHEDULED, ev.READY, ev.KILLING, ev.RELEASED]
    for pod, times in seen.items():
        present = [times[r] for r in order if r in times]
        assert present == sorted(present), (pod, times)
        workload = next(e.workload for e in log if e.pod == pod)
        if ev.READY in times:
            assert abs(times[ev.READY] - times[ev.SCHEDULED] - startup[workload]) < EPS
        if ev.KILLING in times and ev.RELEASED in times:
            assert times[ev.RELEASED] <= times[ev.KILLING] + grace[workload] + EPS
