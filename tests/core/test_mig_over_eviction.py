"""Over-eviction counts by the resource the preemptor needs, MIG instances included (#18).

Upstream SelectVictimsOnNode removes every lower-priority pod, then puts them back one at
a time, most important first, and keeps (reprieves) each one without which the preemptor
still fits (docs/kubernetes-preemption.md §4.3): a victim is needed only for a resource
the preemptor requests and lacks. ``over_evicted_pods`` counts the victims beyond the
fewest that cover that shortfall (docs/metrics.md). A MIG instance is a resource per
profile (``nvidia.com/mig-<profile>``), so a preemptor asking for ``7g.80gb`` instances
is short of those, and a node of ``7g.80gb`` instances must give the same count as the
same node of whole GPUs.
"""

from __future__ import annotations

from typing import Any

import pytest

import scheduler_core as sc
from scheduler_core import events as ev

CLASSES = [
    {"name": "p5", "value": 5, "globalDefault": True},
    {"name": "p10", "value": 10},
    {"name": "hi", "value": 1000},
]


def request(gpus: int, profile: str | None) -> dict[str, Any]:
    return {"gpus": 0, "mig": {profile: gpus}} if profile else {"gpus": gpus}


def run(
    lows: list[tuple[str, int, str]], preemptor: int, profile: str | None
) -> sc.ReplicationResult:
    """One node of 4 GPUs (or 4 instances of ``profile``); ``lows`` as (name, GPUs,
    class) arrive one a second in that order; the preemptor of ``hi`` at 10 s."""
    node = {"name": "n", **request(4, profile)}
    spec = sc.parse_spec(
        {
            "horizonSeconds": 60,
            "cluster": {"nodes": [node]},
            "priorityClasses": CLASSES,
            "workloads": [
                *(
                    {
                        "name": name,
                        "arrival": i,
                        "durationSeconds": 1000,
                        "priorityClassName": cls,
                        "controller": {"kind": "none"},
                        **request(gpus, profile),
                    }
                    for i, (name, gpus, cls) in enumerate(lows)
                ),
                {
                    "name": "p",
                    "arrival": 10,
                    "durationSeconds": 20,
                    "priorityClassName": "hi",
                    "controller": {"kind": "none"},
                    **request(preemptor, profile),
                },
            ],
        }
    )
    return sc.simulate(spec, "default")


def victims(result: sc.ReplicationResult) -> list[str]:
    return [e.pod for e in result.events if e.reason == ev.PREEMPTED]


CASES = [
    pytest.param(
        [("a", 1, "p5"), ("b", 1, "p5"), ("c", 1, "p5"), ("d", 1, "p5")],
        1,
        1,
        0,
        id="one-victim-frees-the-one-needed",
    ),
    pytest.param(
        [("a", 1, "p5"), ("b", 1, "p5"), ("c", 2, "p5")],
        2,
        1,
        0,
        id="the-big-pod-alone-is-the-minimum",
    ),
    pytest.param(
        # reprieve keeps x (p10) first, so y and z go where x alone would have done
        [("x", 2, "p10"), ("y", 1, "p5"), ("z", 1, "p5")],
        2,
        2,
        1,
        id="reprieve-keeps-the-big-pod-two-small-ones-go",
    ),
]


@pytest.mark.parametrize(("lows", "preemptor", "evicted", "over"), CASES)
@pytest.mark.parametrize("profile", [None, "7g.80gb", "1g.10gb"])
def test_mig_and_whole_gpu_preemptions_count_the_same_over_eviction(
    lows: list[tuple[str, int, str]], preemptor: int, evicted: int, over: int, profile: str | None
) -> None:
    """The same preemption on whole GPUs, on ``7g.80gb`` and on ``1g.10gb`` instances
    evicts the same victims and counts the same over-eviction (counted on the preemptor
    once, summed in the summary)."""
    result = run(lows, preemptor, profile)
    assert len(victims(result)) == evicted
    assert victims(result) == victims(run(lows, preemptor, None))
    over_events = [(e.pod, e.value) for e in result.events if e.reason == ev.OVER_EVICTED]
    assert over_events == ([("p-0", float(over))] if over else [])
    assert result.summary["over_evicted_pods"] == over


def test_holders_of_another_profile_do_not_cover_a_mig_shortfall() -> None:
    """A node of 1 ``3g.40gb`` and 4 ``1g.10gb`` instances, all taken by low pods: a
    ``3g.40gb`` preemptor needs the one ``3g.40gb`` holder; the ``1g.10gb`` holders free
    no instance of its profile, so they are reprieved and the minimum is one victim."""
    spec = sc.parse_spec(
        {
            "horizonSeconds": 60,
            "cluster": {"nodes": [{"name": "n", "gpus": 0, "mig": {"3g.40gb": 1, "1g.10gb": 4}}]},
            "priorityClasses": CLASSES,
            "workloads": [
                {"name": "small", "members": 4, "gpus": 0, "mig": {"1g.10gb": 1}},
                {"name": "big", "arrival": 1, "gpus": 0, "mig": {"3g.40gb": 1}},
                {
                    "name": "p",
                    "arrival": 10,
                    "durationSeconds": 20,
                    "priorityClassName": "hi",
                    "controller": {"kind": "none"},
                    "gpus": 0,
                    "mig": {"3g.40gb": 1},
                },
            ],
        }
    )
    result = sc.simulate(spec, "default")
    assert victims(result) == ["big-0"]
    assert result.summary["over_evicted_pods"] == 0
