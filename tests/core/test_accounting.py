"""Over-eviction, broken groups and thrashing (metrics.md, issue #3 §4): the accounting a
variant reports beside its metrics, read through the public API (`simulate`).

* over-eviction: victims beyond the fewest lower-priority pods whose GPUs, CPU, memory and
  pod slots would cover the preemptor's shortfall on each node it was placed on
  (OverEviction on the preemptor);
* a broken group: a PodGroup (or a synchronous workload, which needs every member) that
  a preemption takes from >= minCount running members to below it (GroupBroken);
* thrashing: a workload with >= 2 premature disruptions, a premature disruption being an
  eviction while still loading, or a group disrupted again before it resumed.
"""

from __future__ import annotations

from typing import Any

import pytest

import scheduler_core as sc
from scheduler_core import events as ev

CLASSES = {"hi": 100, "p10": 10, "p5": 5, "lo": 0}


def simulate(lab, **scenario: Any) -> sc.ReplicationResult:
    scenario.setdefault("classes", CLASSES)
    return sc.simulate(sc.parse_spec(lab.doc(**scenario)), "default", 0)


def events(result, reason: str) -> list:
    return [e for e in result.events if e.reason == reason]


def record(result, workload: str):
    return next(r for r in result.workloads if r.workload == workload)


# =========================================================================== over-eviction
def over_eviction_cases() -> list:
    node4 = [("n1", 4)]
    return [
        pytest.param(
            {
                "nodes": node4,
                "policy": {"preemption": "pod"},
                "workloads": [
                    {"name": "x", "gpus": 2, "priorityClassName": "p10"},
                    {"name": "y", "gpus": 1, "priorityClassName": "p5"},
                    {"name": "z", "gpus": 1, "priorityClassName": "p5"},
                ],
                "initial": [("x", "n1", -100), ("y", "n1", -50), ("z", "n1", -10)],
            },
            ["y-0", "z-0"],
            1,
            id="reprieve-keeps-the-big-pod-two-small-ones-go",
        ),
        pytest.param(
            {
                "nodes": node4,
                "policy": {"preemption": "pod"},
                "workloads": [
                    {"name": "x", "gpus": 2, "priorityClassName": "p5"},
                    {"name": "y", "gpus": 1, "priorityClassName": "p10"},
                    {"name": "z", "gpus": 1, "priorityClassName": "p10"},
                ],
                "initial": [("x", "n1", -100), ("y", "n1", -50), ("z", "n1", -10)],
            },
            ["x-0"],
            0,
            id="one-victim-is-the-minimum",
        ),
        pytest.param(
            {
                "nodes": [("n1", 2), ("n2", 2)],
                "policy": {"preemption": "workload-aware"},
                "workloads": [
                    {
                        "name": "v",
                        "members": 2,
                        "gpus": 2,
                        "priorityClassName": "lo",
                        "podGroup": {"minCount": 2, "disruptionMode": "All"},
                    }
                ],
                "initial": [("v", "n1", -10, 0), ("v", "n2", -10, 1)],
            },
            ["v-0", "v-1"],
            1,
            id="all-mode-group-evicted-whole",
        ),
        pytest.param(
            {
                "nodes": [("n1", 2), ("n2", 2)],
                "policy": {"preemption": "workload-aware"},
                "workloads": [
                    {
                        "name": "v",
                        "members": 2,
                        "gpus": 2,
                        "priorityClassName": "lo",
                        "podGroup": {"minCount": 2, "disruptionMode": "Single"},
                    }
                ],
                "initial": [("v", "n1", -10, 0), ("v", "n2", -20, 1)],
            },
            ["v-0"],
            0,
            id="single-mode-member-alone",
        ),
        pytest.param(
            {
                "nodes": node4,
                "policy": {"preemption": "pod"},
                "workloads": [
                    {"name": "a", "gpus": 1, "priorityClassName": "lo"},
                    {"name": "b", "gpus": 1, "priorityClassName": "lo"},
                ],
                "initial": [("a", "n1", -10), ("b", "n1", -20)],
                "preemptor_gpus": 4,
            },
            ["b-0", "a-0"],
            0,
            id="both-needed-no-excess",
        ),
    ]


@pytest.mark.parametrize(("scenario", "victims", "over"), over_eviction_cases())
def test_over_eviction_counts_victims_beyond_the_fewest_that_cover_the_shortfall(
    lab, scenario, victims, over
):
    """metrics (issue #3 §4): the preemptor `p` (2 GPUs unless said) needs its shortfall
    covered; the fewest covering victims take the largest lower pods first. Anything
    beyond that is over-eviction, reported once on the preemptor and summed."""
    scenario = dict(scenario)
    gpus = scenario.pop("preemptor_gpus", 2)
    scenario["workloads"] = [
        *scenario["workloads"],
        {"name": "p", "gpus": gpus, "priorityClassName": "hi"},
    ]
    result = simulate(lab, horizon=30, **scenario)
    selected = events(result, ev.VICTIMS_SELECTED)
    assert [e.message.split(", ") for e in selected] == [victims]
    assert [(e.pod, e.value) for e in events(result, ev.OVER_EVICTED)] == (
        [("p-0", float(over))] if over else []
    )
    assert record(result, "p").over_evicted_pods == over
    assert result.summary["over_evicted_pods"] == over


# =========================================================================== broken groups
@pytest.mark.parametrize(
    ("workload", "broken_value"),
    [
        ({"members": 3, "podGroup": {"minCount": 3}}, 2),
        ({"members": 3, "podGroup": {"minCount": 2}}, None),
        ({"members": 3, "recovery": {"model": "synchronous"}}, 2),
        ({"members": 3, "recovery": {"model": "independent"}}, None),
    ],
    ids=[
        "gang-below-min-count",
        "gang-still-at-min-count",
        "synchronous-needs-every-member",
        "independent-pods-are-no-group",
    ],
)
def test_group_broken_when_a_preemption_takes_a_group_below_min_count(lab, workload, broken_value):
    """GroupBroken: emitted on the victim group when its running members drop from
    >= minCount to below it; value = members still running. `g` runs one 2-GPU member
    per node; `p` takes one."""
    g = {"name": "g", "gpus": 2, "priorityClassName": "lo", **workload}
    result = simulate(
        lab,
        nodes=[("n1", 2), ("n2", 2), ("n3", 2)],
        horizon=30,
        workloads=[g, {"name": "p", "gpus": 2, "priorityClassName": "hi"}],
        initial=[("g", f"n{i + 1}", -10, i) for i in range(3)],
    )
    broken = events(result, ev.GROUP_BROKEN)
    if broken_value is None:
        assert broken == []
        assert result.summary["groups_broken"] == 0
    else:
        assert [(e.time, e.workload, e.value, e.related) for e in broken] == [
            (0.0, "g", float(broken_value), "p-0")
        ]
        assert record(result, "g").groups_broken == 1
        assert result.summary["groups_broken"] == 1


def test_a_group_already_below_min_count_is_not_broken_again(lab):
    """A second preemption of a group that is already below minCount breaks nothing."""
    g = {
        "name": "g",
        "members": 3,
        "gpus": 2,
        "priorityClassName": "lo",
        "podGroup": {"minCount": 3},
    }
    result = simulate(
        lab,
        nodes=[("n1", 2), ("n2", 2), ("n3", 2)],
        horizon=30,
        workloads=[
            g,
            {"name": "p", "gpus": 2, "priorityClassName": "hi"},
            {"name": "q", "gpus": 2, "priorityClassName": "hi", "arrival": 10},
        ],
        initial=[("g", f"n{i + 1}", -10, i) for i in range(3)],
    )
    assert len(events(result, ev.PREEMPTED)) == 2
    assert [(e.time, e.value) for e in events(result, ev.GROUP_BROKEN)] == [(0.0, 2.0)]
    assert result.summary["groups_broken"] == 1


# =========================================================================== thrashing
def loading_replica(lab, preemptor_arrivals: list[float]):
    """A serving Deployment replica that needs 100 s to load sits on n1 (bound at -10).
    Each `p<i>` (2 GPUs, runs 20 s) evicts whatever replica is there; the Deployment's
    replacement binds when p<i> is done and starts loading again."""
    srv = {
        "name": "srv",
        "gpus": 2,
        "priorityClassName": "lo",
        "startupSeconds": 100,
        "recovery": {"model": "serving"},
        "controller": {"kind": "deployment"},
    }
    ps = [
        {"name": f"p{i}", "gpus": 2, "priorityClassName": "hi", "arrival": t, "durationSeconds": 20}
        for i, t in enumerate(preemptor_arrivals)
    ]
    return simulate(
        lab, nodes=[("n1", 2)], horizon=200, workloads=[srv, *ps], initial=[("srv", "n1", -10)]
    )


@pytest.mark.parametrize(
    ("arrivals", "premature", "thrashing"),
    [
        ([0.0], 1, 0),
        ([0.0, 50.0], 2, 1),
        ([0.0, 150.0], 1, 0),
    ],
    ids=[
        "evicted-once-while-loading",
        "evicted-twice-while-loading",
        "second-eviction-after-ready",
    ],
)
def test_thrashing_is_two_or_more_evictions_while_loading(lab, arrivals, premature, thrashing):
    """p0 evicts the loading replica at t=0 (premature); its replacement binds at 25 and
    is Ready at 125. p1 at 50 catches it loading again (a second premature disruption:
    thrashing); p1 at 150 finds it Ready (a plain disruption)."""
    result = loading_replica(lab, arrivals)
    assert len(events(result, ev.LOADING_LOST)) == premature
    assert record(result, "srv").premature_disruptions == premature
    assert result.summary["thrashing_workloads"] == thrashing


def synchronous_group(lab, arrivals: list[float], startup: float = 0.0):
    """`g`: a synchronous Job of 3 members (2 GPUs, one per node, Ready since -100);
    each `p<i>` (2 GPUs, runs 100 s) evicts one member. Replacements wait for GPUs, so
    the group cannot resume before t=105."""
    g = {
        "name": "g",
        "members": 3,
        "gpus": 2,
        "priorityClassName": "lo",
        "startupSeconds": startup,
        "recovery": {"model": "synchronous"},
        "checkpoint": {"intervalSeconds": 60},
        "controller": {"kind": "job"},
    }
    ps = [
        {
            "name": f"p{i}",
            "gpus": 2,
            "priorityClassName": "hi",
            "arrival": t,
            "durationSeconds": 100,
        }
        for i, t in enumerate(arrivals)
    ]
    return simulate(
        lab,
        nodes=[("n1", 2), ("n2", 2), ("n3", 2)],
        horizon=400,
        workloads=[g, *ps],
        initial=[("g", f"n{i + 1}", -200, i) for i in range(3)],
    )


@pytest.mark.parametrize(
    ("arrivals", "premature", "thrashing"),
    [
        pytest.param([0.0], 0, 0, id="one-disruption"),
        pytest.param([0.0, 10.0], 1, 0, id="disrupted-again-before-resuming"),
        pytest.param([0.0, 10.0, 20.0], 2, 1, id="twice-again-is-thrashing"),
    ],
)
def test_a_group_disrupted_again_before_it_resumed_is_premature(
    lab, arrivals, premature, thrashing
):
    """The first disruption of a running group is not premature; each further one that
    comes before the group resumed (here: before t=105, when replacements can bind) is.
    Two of them make the workload thrash."""
    result = synchronous_group(lab, arrivals)
    assert [e.time for e in events(result, ev.PREEMPTED)] == arrivals
    assert record(result, "g").premature_disruptions == premature
    assert result.summary["thrashing_workloads"] == thrashing


def test_one_premature_disruption_is_counted_once(lab):
    """A synchronous group (2 members, 100 s startup, Ready since -100) loses g-1 at t=0;
    its replacement binds at 25 and is evicted at 50, still loading. That is one
    premature disruption (evicted while loading, and the group disrupted again before it
    resumed: the same event), so the workload does not thrash."""
    g = {
        "name": "g",
        "members": 2,
        "gpus": 2,
        "priorityClassName": "lo",
        "startupSeconds": 100,
        "recovery": {"model": "synchronous"},
        "checkpoint": {"intervalSeconds": 60},
        "controller": {"kind": "job"},
    }
    result = simulate(
        lab,
        nodes=[("n1", 2), ("n2", 2)],
        horizon=200,
        workloads=[
            g,
            {"name": "p1", "gpus": 2, "priorityClassName": "hi", "durationSeconds": 20},
            {"name": "p2", "gpus": 2, "priorityClassName": "hi", "arrival": 50},
        ],
        initial=[("g", "n1", -200, 0), ("g", "n2", -200, 1)],
    )
    assert [(e.time, e.pod) for e in events(result, ev.PREEMPTED)] == [
        (0.0, "g-1"),
        (50.0, "g-1-r0"),
    ]
    assert [e.time for e in events(result, ev.LOADING_LOST)] == [50.0]
    assert record(result, "g").premature_disruptions == 1
    assert result.summary["thrashing_workloads"] == 0


@pytest.mark.parametrize(
    ("node", "victim_shape", "preemptor_shape", "needed"),
    [
        ({"name": "n1", "gpus": 8, "cpu": 8}, {"gpus": 0, "cpu": 4}, {"gpus": 2, "cpu": 8}, 2),
        (
            {"name": "n1", "gpus": 8, "memory": 64},
            {"gpus": 0, "memory": 32},
            {"gpus": 2, "memory": 64},
            2,
        ),
        ({"name": "n1", "gpus": 8, "maxPods": 2}, {"gpus": 0}, {"gpus": 2}, 1),
    ],
    ids=["cpu", "memory", "pod-slots"],
)
def test_victims_needed_for_cpu_memory_or_pod_slots_are_not_over_eviction(
    lab, node, victim_shape, preemptor_shape, needed
):
    """metrics (issue #15 §2): the shortfall of every resource the preemptor requests
    counts. `p` needs no victim's GPUs (6 of 8 are free) but CPU, memory or a pod slot
    that only evicting ``needed`` victims frees: that is the minimum, not over-eviction."""
    workloads = [
        {"name": "a", "priorityClassName": "lo", "cpu": 0, "memory": 0, **victim_shape},
        {"name": "b", "priorityClassName": "lo", "cpu": 0, "memory": 0, **victim_shape},
        {"name": "p", "priorityClassName": "hi", "cpu": 0, "memory": 0, **preemptor_shape},
    ]
    result = simulate(
        lab,
        nodes=[node],
        horizon=30,
        policy={"preemption": "pod"},
        workloads=workloads,
        initial=[("a", "n1", -10), ("b", "n1", -20)],
    )
    assert len(events(result, ev.VICTIMS_SELECTED)[0].message.split(", ")) == needed
    assert events(result, ev.OVER_EVICTED) == []
    assert result.summary["over_evicted_pods"] == 0
