"""Properties that must hold for any cluster and load (Hypothesis).

- GPUs are never overcommitted on any node at any moment of the log;
- progress computed = progress kept + progress lost, and kept + remaining = required
  (the work identity: nothing is created or destroyed by the bookkeeping);
- every pod ends in a known state; the same seed gives the identical log.
"""

from __future__ import annotations

from collections import defaultdict
from typing import Any

from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

import scheduler_core as sc
from scheduler_core import events as ev

KINDS = [
    ("batch", "independent"),
    ("training", "synchronous"),
    ("elastic-training", "elastic"),
    ("inference", "serving"),
    ("notebook", "interactive"),
    ("evaluation", "independent"),
]


@st.composite
def specs(draw: st.DrawFn) -> dict[str, Any]:
    node_gpus = draw(st.lists(st.sampled_from([2, 4, 8]), min_size=1, max_size=4))
    nodes = [{"name": f"n{i}", "gpus": g} for i, g in enumerate(node_gpus)]
    workloads = []
    for i in range(draw(st.integers(1, 8))):
        kind, model = draw(st.sampled_from(KINDS))
        members = draw(st.integers(1, 3))
        workloads.append(
            {
                "name": f"w{i}",
                "kind": kind,
                "members": members,
                "gpus": draw(st.integers(0, min(node_gpus))),
                "priorityClassName": draw(st.sampled_from(["low", "mid", "high", "never"])),
                "arrival": draw(st.integers(0, 600)),
                "durationSeconds": None if model == "serving" else draw(st.integers(60, 2000)),
                "startupSeconds": draw(st.sampled_from([0, 30, 120])),
                "terminationGracePeriodSeconds": draw(st.sampled_from([0, 30, 120])),
                "stopSeconds": draw(st.sampled_from([0, 10, 200])),
                "checkpoint": {
                    "intervalSeconds": draw(st.sampled_from([None, 60, 300])),
                    "writeSeconds": draw(st.sampled_from([0, 5])),
                    "onSigterm": draw(st.booleans()),
                },
                "recovery": {"model": model, "minMembers": 1 if model == "elastic" else None},
                "controller": {
                    "kind": draw(st.sampled_from(["none", "job", "jobset", "deployment"])),
                    "podReplacementPolicy": draw(
                        st.sampled_from(["TerminatingOrFailed", "Failed"])
                    ),
                    "restart": draw(st.sampled_from(["member", "group"])),
                },
            }
        )
    events = []
    if draw(st.booleans()):
        events.append(
            {
                "at": draw(st.integers(0, 1500)),
                "type": draw(st.sampled_from(["spot-reclaim", "node-failure", "drain"])),
                "nodes": ["n0"],
                "noticeSeconds": 60,
                "recoverAfterSeconds": draw(st.sampled_from([None, 300])),
            }
        )
    return {
        "horizonSeconds": 2400,
        "seed": draw(st.integers(0, 5)),
        "cluster": {"nodes": nodes},
        "priorityClasses": [
            {"name": "low", "value": 10, "globalDefault": True},
            {"name": "mid", "value": 100},
            {"name": "never", "value": 500, "preemptionPolicy": "Never"},
            {"name": "high", "value": 1000},
        ],
        "workloads": workloads,
        "events": events,
        "policy": {
            "preemption": draw(st.sampled_from(["pod", "none"])),
            "placement": draw(st.sampled_from(["MostAllocated", "LeastAllocated"])),
        },
    }


PROPERTY = settings(max_examples=60, deadline=None, suppress_health_check=[HealthCheck.too_slow])


@PROPERTY
@given(specs())
def test_gpus_are_never_overcommitted(data: dict[str, Any]) -> None:
    result = sc.simulate(sc.parse_spec(data), "default")
    capacity = {n["name"]: n["gpus"] for n in data["cluster"]["nodes"]}
    used: dict[str, float] = defaultdict(float)
    for e in result.events:
        if e.reason == ev.SCHEDULED:
            used[e.node] += e.value
            assert used[e.node] <= capacity[e.node], e
        elif e.reason in (ev.RELEASED, ev.COMPLETED):
            used[e.node] -= e.value
            assert used[e.node] >= 0, e


@PROPERTY
@given(specs())
def test_work_is_neither_created_nor_destroyed(data: dict[str, Any]) -> None:
    spec = sc.parse_spec(data)
    result = sc.simulate(spec, "default")
    loading = defaultdict(float)
    for e in result.events:
        if e.reason == ev.LOADING_LOST:
            loading[e.workload] += e.value
    for w, record in zip(spec.workloads, result.workloads, strict=True):
        if w.recovery.model.value == "serving":
            continue
        progress_lost = record.lost_work - loading[w.name]
        assert abs(record.useful_work + progress_lost - record.computed_work) < 1e-6, w.name
        required = w.duration_seconds * w.gpus * w.members  # type: ignore[operator]
        assert abs(record.useful_work + record.remaining_work - required) < 1e-6, w.name


@PROPERTY
@given(specs())
def test_every_pod_ends_in_a_known_state_and_time_never_goes_back(data: dict[str, Any]) -> None:
    result = sc.simulate(sc.parse_spec(data), "default")
    times = [e.time for e in result.events]
    assert times == sorted(times)
    assert all(0 <= t <= data["horizonSeconds"] for t in times)
    state: dict[str, str] = {}
    transitions = {
        ev.CREATED: "Pending",
        ev.SCHEDULED: "Bound",
        ev.READY: "Ready",
        ev.KILLING: "Terminating",
        ev.RELEASED: "Gone",
        ev.COMPLETED: "Succeeded",
    }
    for e in result.events:
        if e.reason in transitions:
            state[e.pod] = transitions[e.reason]
    assert set(state.values()) <= set(transitions.values())
    holding = [p for p, s in state.items() if s in ("Bound", "Ready", "Terminating")]
    for pod in holding:
        assert any(e.reason == ev.SCHEDULED and e.pod == pod for e in result.events)


@settings(max_examples=20, deadline=None)
@given(specs())
def test_same_seed_same_event_log(data: dict[str, Any]) -> None:
    spec = sc.parse_spec(data)
    assert sc.simulate(spec, "default").events == sc.simulate(spec, "default").events


def test_backoff_stays_capped_after_thousands_of_attempts() -> None:
    """A pod pending for hours is retried thousands of times; its backoff stays 10 s."""
    from scheduler_core.queue import SchedulingQueue

    queue = SchedulingQueue(1.0, 10.0)
    assert queue.backoff_expiry(5000, 100.5) == 110.0
