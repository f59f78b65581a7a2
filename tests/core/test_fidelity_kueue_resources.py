"""Kueue beyond one GPU quota (kubernetes-preemption.md §7, docs/kubernetes-rules.md):
several resources and flavors in a ClusterQueue with flavor fungibility, the quota an
evicted workload keeps until its pods are gone, and fair sharing (§7.4).

Every scenario runs on one big node with `policy.preemption: none`, so the queues alone
decide who runs. Workloads are one-pod Jobs unless a test says otherwise.
"""

from __future__ import annotations

from typing import Any

import pytest

import scheduler_core as sc
from scheduler_core import events as ev

CLASSES = {"p10": 10, "p5": 5, "p1": 1}
NODE = {"name": "n1", "gpus": 64, "cpu": 512, "memory": 4096}


def job(
    name: str,
    cls: str = "p1",
    arrival: float = 0.0,
    *,
    q: str = "q",
    gpus: int = 2,
    cpu: float = 0,
    duration: float = 100.0,
    **extra: Any,
) -> dict:
    return {
        "name": name,
        "gpus": gpus,
        "cpu": cpu,
        "memory": 0,
        "priorityClassName": cls,
        "arrival": arrival,
        "queue": q,
        "durationSeconds": duration,
        "controller": {"kind": "job"},
        **extra,
    }


def flavor(name: str, **quota: float) -> dict:
    return {"name": name, "resources": [{"name": r, "nominalQuota": v} for r, v in quota.items()]}


def group(*flavors: dict) -> dict:
    covered = [r["name"] for r in flavors[0]["resources"]]
    return {"coveredResources": covered, "flavors": list(flavors)}


def queue(
    name: str = "q",
    *groups: dict,
    within: str = "LowerPriority",
    reclaim: str = "Never",
    **extra: Any,
) -> dict:
    return {
        "name": name,
        "orderBy": "priority",
        "resourceGroups": list(groups),
        "preemption": {"withinClusterQueue": within, "reclaimWithinCohort": reclaim},
        **extra,
    }


def run(
    lab,
    queues: list[dict],
    workloads: list[dict],
    *,
    horizon: float = 400.0,
    fair: dict | None = None,
):
    doc = lab.doc(
        nodes=[NODE],
        classes=CLASSES,
        workloads=workloads,
        policy={"preemption": "none"},
        horizon=horizon,
    )
    doc["queues"] = queues
    if fair is not None:
        doc["fairSharing"] = fair
    return lab.run_doc(doc)


def admissions(out) -> list[tuple[float, str, str]]:
    return [(e.time, e.workload, e.message) for e in out.of(ev.ADMITTED)]


def evicted(out) -> list[tuple[float, str, str]]:
    return [
        (e.time, e.workload, e.message.rsplit("(", 1)[-1].rstrip(")")) for e in out.of(ev.SUSPENDED)
    ]


# =========================================================================== resources
def test_a_head_short_of_cpu_preempts_only_workloads_that_use_cpu(lab):
    """§7.1: a candidate must use a (flavor, resource) that needs preemption. The queue
    has 4 GPUs and 8 CPUs; `g` (GPUs only) was admitted last, so §7.2 would take it first,
    but the head lacks CPU alone: `c` (6 CPUs) is the victim."""
    q = queue("q", group(flavor("f", gpus=4, cpu=8)))
    out = run(
        lab,
        [q],
        [job("c", gpus=1, cpu=6), job("g", arrival=1, gpus=2), job("h", "p10", 5, gpus=0, cpu=4)],
    )
    assert evicted(out) == [(5.0, "c", "InClusterQueue")]
    assert (5.0, "h", "flavors: cpu=f") in admissions(out)  # only what it requests


def test_every_covered_resource_limits_admission(lab):
    """§7.3 workloadFits checks every (flavor, resource) of the request: two workloads that
    fit the GPUs but not the memory together run one after the other."""
    q = queue("q", group(flavor("f", gpus=8, memory=100)), within="Never")
    out = run(lab, [q], [job("a", gpus=2, memory=60), job("b", arrival=1, gpus=2, memory=60)])
    assert [(t, w) for t, w, _ in admissions(out)] == [(0.0, "a"), (100.0, "b")]


def test_resources_no_group_covers_are_not_limited(lab):
    q = queue("q", group(flavor("f", gpus=8)))
    out = run(lab, [q], [job("a", gpus=2, cpu=300), job("b", arrival=1, gpus=2, cpu=200)])
    assert [(t, w) for t, w, _ in admissions(out)] == [(0.0, "a"), (1.0, "b")]


# =========================================================================== flavors
def two_flavors(**fungibility: str) -> dict:
    """`on-demand` (2 GPUs) first, then `spot` (4 GPUs)."""
    return queue(
        "q",
        group(flavor("on-demand", gpus=2), flavor("spot", gpus=4)),
        flavorFungibility=fungibility,
    )


def test_flavors_are_tried_in_order_and_the_first_that_fits_is_taken(lab):
    """Flavor fungibility (docs/kubernetes-rules.md): `a` takes on-demand; `b` does not fit
    there and fits in spot."""
    out = run(lab, [two_flavors()], [job("a"), job("b", arrival=1)])
    assert admissions(out) == [
        (0.0, "a", "flavors: gpus=on-demand"),
        (1.0, "b", "flavors: gpus=spot"),
    ]


def test_when_can_preempt_try_next_flavor_moves_on_before_preempting(lab):
    """whenCanPreempt TryNextFlavor (the default): on-demand would need `a` preempted, so
    the search goes on to spot, where `h` fits: nobody is evicted."""
    out = run(lab, [two_flavors(whenCanPreempt="TryNextFlavor")], [job("a"), job("h", "p10", 5)])
    assert evicted(out) == []
    assert (5.0, "h", "flavors: gpus=spot") in admissions(out)


@pytest.mark.parametrize("spelling", ["MayStopSearch", "Preempt"])
def test_when_can_preempt_may_stop_search_preempts_in_the_first_flavor(lab, spelling):
    """whenCanPreempt MayStopSearch (v1beta1: Preempt): the search stops at on-demand, where
    preempting `a` makes room."""
    out = run(lab, [two_flavors(whenCanPreempt=spelling)], [job("a"), job("h", "p10", 5)])
    assert evicted(out) == [(5.0, "a", "InClusterQueue")]
    assert (5.0, "h", "flavors: gpus=on-demand") in admissions(out)


def borrowing_cohort(when_can_borrow: str) -> list[dict]:
    """`q` lends nothing in flavor `a` (nominal 0, the cohort has 4) and owns 2 GPUs of
    flavor `b`."""
    q = queue(
        "q",
        group(flavor("a", gpus=0), flavor("b", gpus=2)),
        cohort="c",
        flavorFungibility={"whenCanBorrow": when_can_borrow},
    )
    lender = queue("lender", group(flavor("a", gpus=4), flavor("b", gpus=0)), cohort="c")
    return [q, lender]


@pytest.mark.parametrize(
    ("policy", "chosen"), [("MayStopSearch", "a"), ("Borrow", "a"), ("TryNextFlavor", "b")]
)
def test_when_can_borrow_decides_between_borrowing_and_the_next_flavor(lab, policy, chosen):
    """whenCanBorrow MayStopSearch (v1beta1: Borrow) stops at flavor `a`, borrowing from the
    cohort; TryNextFlavor goes on to `b`, which fits without borrowing."""
    out = run(lab, borrowing_cohort(policy), [job("w")])
    assert admissions(out) == [(0.0, "w", f"flavors: gpus={chosen}")]


def test_a_flavor_that_cannot_fit_even_empty_is_skipped(lab):
    """fitsResourceQuota: a request above what the flavor could ever give is NoFit, and the
    next flavor is tried."""
    out = run(lab, [two_flavors(whenCanPreempt="MayStopSearch")], [job("big", gpus=3)])
    assert admissions(out) == [(0.0, "big", "flavors: gpus=spot")]


def test_no_preemption_for_more_than_the_nominal_quota_without_borrow_within_cohort(lab):
    """fitsResourceQuota: in a cohort, a head that asks more than its queue's nominal quota
    may only preempt with borrowWithinCohort (or fair sharing); here it waits although
    evicting the lower-priority `a` would make room."""
    mine = queue("q", group(flavor("f", gpus=2)), cohort="c", reclaim="Any")
    other = queue("other", group(flavor("f", gpus=2)), cohort="c")
    out = run(
        lab,
        [mine, other],
        [job("a", gpus=2), job("b", q="other", gpus=2), job("h", "p10", 5, gpus=3)],
    )
    assert evicted(out) == []
    assert [w for _, w, _ in admissions(out)] == ["a", "b", "h"]


# =========================================================================== quota release
def bare(name: str, cls: str = "p1", arrival: float = 0.0, **extra: Any) -> dict:
    return job(
        name,
        cls,
        arrival,
        controller={"kind": "none"},
        terminationGracePeriodSeconds=30,
        stopSeconds=8,
        **extra,
    )


def test_an_evicted_pod_workload_keeps_its_quota_until_its_pods_are_gone(lab):
    """docs/kubernetes-rules.md "Quota of an evicted workload": Kueue clears the quota
    reservation once the job is no longer active. Bare pods (the Pod integration) are
    active until they have terminated: `a` needs 8 s to stop, so `h` is admitted at 13,
    and `a` waits in its queue again from then."""
    q = queue("q", group(flavor("f", gpus=2)))
    out = run(lab, [q], [bare("a"), job("h", "p10", 5)])
    assert evicted(out) == [(5.0, "a", "InClusterQueue")]
    assert [(t, w) for t, w, _ in admissions(out)] == [(0.0, "a"), (13.0, "h"), (113.0, "a")]
    released = [e for e in out.of(ev.QUEUED) if e.workload == "a"]
    assert [e.time for e in released] == [0.0, 13.0]
    assert released[1].message.startswith("pods gone: quota released")


def test_a_job_returns_its_quota_at_eviction(lab):
    """A batch Job's status.active leaves out pods being deleted: its quota returns at
    once, so the head is admitted in the same instant."""
    q = queue("q", group(flavor("f", gpus=2)))
    out = run(lab, [q], [job("a", stopSeconds=8), job("h", "p10", 5)])
    assert [(t, w) for t, w, _ in admissions(out)][:2] == [(0.0, "a"), (5.0, "h")]


def test_a_workload_being_evicted_counts_as_preempted_and_is_not_evicted_again(lab):
    """§7.2 step 0 and §7.5: `h` evicts `b` (the newest) at 5; when `h2` arrives at 6, `h`
    is retried while `b` still terminates: `b` comes first among the candidates (already
    evicted) and is enough, so nobody else is evicted. `h` is admitted when `b` is gone
    (13); only then does `h2` need `a`."""
    q = queue("q", group(flavor("f", gpus=4)))
    out = run(lab, [q], [bare("a"), bare("b", arrival=1), job("h", "p10", 5), job("h2", "p10", 6)])
    assert evicted(out) == [(5.0, "b", "InClusterQueue"), (13.0, "a", "InClusterQueue")]
    assert [(t, w) for t, w, _ in admissions(out)] == [
        (0.0, "a"),
        (1.0, "b"),
        (13.0, "h"),
        (21.0, "h2"),
        (113.0, "a"),
        (121.0, "b"),
    ]


# =========================================================================== fair sharing
def teams(weight_b: float = 1.0) -> list[dict]:
    """Three teams of 4 GPUs in one cohort, any workload reclaimable across it."""
    return [
        queue(
            name,
            group(flavor("f", gpus=4)),
            cohort="c",
            reclaim="Any",
            within="Never",
            fairSharing={"weight": weight_b if name == "b" else 1.0},
        )
        for name in ("a", "b", "c")
    ]


def borrowed(sizes: list[int]) -> list[dict]:
    """`a` at its nominal 4 GPUs; `b` holds ``sizes`` (8 GPUs: 4 borrowed, DRS 333)."""
    return [
        job("a1", gpus=4, q="a"),
        *(job(f"b{i}", arrival=1 + i, gpus=g, q="b") for i, g in enumerate(sizes)),
    ]


def test_classic_preemption_does_not_reclaim_for_a_head_that_would_borrow(lab):
    """§7.3: without borrowWithinCohort a head whose queue is not under nominal tries only
    borrowing=true, where reclaiming without borrowing is invalid: `h` waits."""
    out = run(lab, teams(), [*borrowed([2, 2, 2, 2]), job("h", "p1", 10, gpus=2, q="a")])
    assert evicted(out) == []
    assert all(w != "h" or t >= 100 for t, w, _ in admissions(out))


@pytest.mark.parametrize("strategies", [None, ["LessThanOrEqualToFinalShare"]])
def test_fair_sharing_preempts_from_the_queue_with_the_highest_share(lab, strategies):
    """§7.4 LessThanOrEqualToFinalShare: a's share with `h` is 2/12 (167), b's is 4/12
    (333), and 167 after losing one 2-GPU workload: 167 <= 167, so b's newest workload
    is preempted (reason InCohortFairSharing) and `h` is admitted."""
    fair = {} if strategies is None else {"preemptionStrategies": strategies}
    out = run(lab, teams(), [*borrowed([2, 2, 2, 2]), job("h", "p1", 10, gpus=2, q="a")], fair=fair)
    assert evicted(out) == [(10.0, "b3", "InCohortFairSharing")]
    assert (10.0, "h", "flavors: gpus=f") in admissions(out)


def test_less_than_initial_share_takes_what_the_final_share_rule_keeps(lab):
    """§7.4 rule S2-b: b holds one 4-GPU workload beyond its quota; removing it takes b to
    0, below a's 167, so LessThanOrEqualToFinalShare refuses; LessThanInitialShare
    (167 < 333) preempts it. With the first strategy alone, `h` waits."""
    work = [*borrowed([4, 4]), job("h", "p1", 10, gpus=2, q="a")]
    both = run(lab, teams(), work, fair={})
    assert [w for _, w, _ in evicted(both)] == ["b1"]
    first_only = run(
        lab, teams(), work, fair={"preemptionStrategies": ["LessThanOrEqualToFinalShare"]}
    )
    assert evicted(first_only) == []
    initial_only = run(lab, teams(), work, fair={"preemptionStrategies": ["LessThanInitialShare"]})
    assert [w for _, w, _ in evicted(initial_only)] == ["b1"]


def test_a_fair_sharing_weight_divides_the_share(lab):
    """§7.4 DRS / weight: with weight 2, b's share is 333 / 2 = 167, not above a's 167:
    neither strategy preempts."""
    out = run(
        lab,
        teams(weight_b=2.0),
        [*borrowed([2, 2, 2, 2]), job("h", "p1", 10, gpus=2, q="a")],
        fair={},
    )
    assert evicted(out) == []


def test_dominant_resource_share_takes_the_largest_resource_ratio():
    """§7.4: per resource, borrowed * 1000 / what the cohort can lend; the largest counts,
    divided by the weight."""
    from scheduler_core.admission import Admission

    doc = {
        "cluster": {"nodes": [NODE]},
        "fairSharing": {},
        "queues": [
            queue(n, group(flavor("f", gpus=4, cpu=10)), cohort="c", fairSharing={"weight": w})
            for n, w in (("a", 1), ("b", 2))
        ],
        "workloads": [],
    }
    spec = sc.parse_spec(doc)
    admission = Admission(host=None, spec=spec)  # type: ignore[arg-type]
    a = admission.queues["a"]
    a.usage = {("f", "gpus"): 5.0, ("f", "cpu"): 16.0}  # borrows 1 of 8 GPUs, 6 of 20 CPUs
    assert admission._drs(a, set()) == pytest.approx(300.0)
    b = admission.queues["b"]
    b.usage = {("f", "gpus"): 6.0}
    assert admission._drs(b, set()) == pytest.approx(2 * 1000 / 8 / 2)
    assert (
        admission._drs(admission.queues["a"], set(), {("f", "gpus"): -1.0, ("f", "cpu"): -6.0})
        == 0.0
    )


# =========================================================================== validation
@pytest.mark.parametrize(
    ("change", "path", "message"),
    [
        ({"nominalGpus": 2}, "queues[0]", "either as nominalGpus"),
        (
            {"resourceGroups": [group(flavor("f", gpus=2)), group(flavor("g", gpus=2))]},
            "queues[0]",
            "already covered",
        ),
        (
            {
                "resourceGroups": [
                    {"coveredResources": ["gpus", "cpu"], "flavors": [flavor("f", gpus=2)]}
                ]
            },
            "queues[0].resourceGroups[0]",
            "must list exactly the coveredResources",
        ),
        (
            {"resourceGroups": [group(flavor("f", tpus=2))]},
            "queues[0].resourceGroups[0].coveredResources[0]",
            "gpus",
        ),
        (
            {"flavorFungibility": {"whenCanBorrow": "Sometimes"}},
            "queues[0].flavorFungibility.whenCanBorrow",
            "MayStopSearch",
        ),
        ({"fairSharing": {"weight": -1}}, "queues[0].fairSharing.weight", "0"),
    ],
)
def test_bad_queue_fields_are_errors_naming_the_field(change, path, message):
    q = {**queue("q", group(flavor("f", gpus=2))), **change}
    doc = {"cluster": {"nodes": [NODE]}, "queues": [q], "workloads": []}
    with pytest.raises(sc.SpecError) as caught:
        sc.parse_spec(doc)
    errors = caught.value.errors
    assert any(e["path"].startswith(path) and message in e["message"] for e in errors), errors


def test_bad_preemption_strategies_are_an_error_naming_the_field():
    doc = {
        "cluster": {"nodes": [NODE]},
        "workloads": [],
        "fairSharing": {
            "preemptionStrategies": ["LessThanInitialShare", "LessThanOrEqualToFinalShare"]
        },
    }
    with pytest.raises(sc.SpecError) as caught:
        sc.parse_spec(doc)
    assert caught.value.errors[0]["path"].startswith("fairSharing")
    assert "preemptionStrategies must be" in caught.value.errors[0]["message"]
