"""Fidelity of the admission layer against Kueue (kubernetes-preemption.md §7): the
preemption policies (§7.1), candidate ordering (§7.2), classic preemption with fill-back
(§7.3), issuing preemptions (§7.5), plus the queue rules around them (StrictFIFO,
concurrency, nominal quota, cohort borrowing) and a ResourceQuota per priority class
(domain.md §6).

Every scenario runs on one big node with `policy.preemption: none`, so the queues alone
decide who runs. Workloads are one-pod Jobs of 2 GPUs unless a test says otherwise; a
queue named ``q`` has a nominal quota of 2 GPUs unless a test says otherwise.
"""

from __future__ import annotations

from typing import Any

import pytest

from scheduler_core import events as ev

CLASSES = {"top": 1000, "p10": 10, "p5": 5, "p3": 3, "p2": 2, "p1": 1}


def queue(
    name: str = "q",
    nominal: int | None = 2,
    *,
    within: str = "Never",
    reclaim: str = "Never",
    **extra: Any,
) -> dict:
    return {
        "name": name,
        "nominalGpus": nominal,
        "orderBy": "priority",
        "preemption": {"withinClusterQueue": within, "reclaimWithinCohort": reclaim},
        **extra,
    }


def job(
    name: str,
    cls: str,
    arrival: float = 0.0,
    *,
    q: str = "q",
    gpus: int = 2,
    duration: float = 100.0,
    **extra: Any,
) -> dict:
    return {
        "name": name,
        "gpus": gpus,
        "priorityClassName": cls,
        "arrival": arrival,
        "queue": q,
        "durationSeconds": duration,
        "controller": {"kind": "job"},
        **extra,
    }


def run(
    lab,
    queues: list[dict],
    workloads: list[dict],
    *,
    horizon: float = 400.0,
    quotas: list[dict] = (),
    nodes=(("n1", 64),),
):
    doc = lab.doc(
        nodes=list(nodes),
        classes=CLASSES,
        workloads=workloads,
        policy={"preemption": "none"},
        horizon=horizon,
    )
    doc["queues"] = queues
    doc["resourceQuotas"] = list(quotas)
    return lab.run_doc(doc)


def admitted(out) -> list[tuple[float, str]]:
    return [(e.time, e.workload) for e in out.of(ev.ADMITTED)]


def evicted(out) -> list[tuple[float, str, str]]:
    """Every queue eviction as (time, victim, preemptor)."""
    return [(e.time, e.workload, e.related) for e in out.of(ev.SUSPENDED)]


def first_admission(out, workload: str) -> float | None:
    return next((t for t, w in admitted(out) if w == workload), None)


# =========================================================================== §7.1
def policy_scenario(policy: str, preemptor: str, candidate: str, candidate_arrival: float):
    """Queue ordered by `queuePriority`: `x` (top) holds the 2-GPU quota until t=10. `b`
    (the preemptor, queuePriority 0) arrives at t=1, `a` (queuePriority 5) at
    ``candidate_arrival``; a is admitted first when x ends. Then b, at the head, may
    preempt a if ``SatisfiesPreemptionPolicy(b, a, withinClusterQueue)``."""
    q = queue(within=policy, orderBy="queuePriority")
    return [q], [
        job("x", "top", 0, duration=10, queuePriority=100),
        job("b", preemptor, 1, queuePriority=0),
        job("a", candidate, candidate_arrival, queuePriority=5),
    ]


@pytest.mark.parametrize(
    ("policy", "b_class", "a_class", "a_arrival", "preempts"),
    [
        ("Never", "p10", "p5", 2, False),
        ("LowerPriority", "p10", "p5", 2, True),
        ("LowerPriority", "p5", "p5", 2, False),
        ("LowerPriority", "p5", "p10", 2, False),
        ("LowerOrNewerEqualPriority", "p10", "p5", 2, True),
        ("LowerOrNewerEqualPriority", "p5", "p5", 2, True),
        ("LowerOrNewerEqualPriority", "p5", "p5", 0.5, False),
        ("LowerOrNewerEqualPriority", "p5", "p10", 2, False),
    ],
    ids=[
        "never",
        "lower-lower",
        "lower-equal",
        "lower-higher",
        "newer-equal-lower",
        "newer-equal-equal-and-newer",
        "newer-equal-equal-but-older",
        "newer-equal-higher",
    ],
)
def test_satisfies_preemption_policy(lab, policy, b_class, a_class, a_arrival, preempts):
    """§7.1 SatisfiesPreemptionPolicy: LowerPriority = prio(pre) > prio(cand);
    LowerOrNewerEqualPriority adds equal priority with the candidate created after the
    preemptor; Never never."""
    out = run(lab, *policy_scenario(policy, b_class, a_class, a_arrival))
    assert first_admission(out, "a") == 10.0
    if preempts:
        assert evicted(out) == [(10.0, "a", "b")]
        assert first_admission(out, "b") == 10.0
    else:
        assert evicted(out) == []
        assert first_admission(out, "b") == 110.0


# =========================================================================== §7.2
@pytest.mark.parametrize(
    ("candidates", "victim"),
    [
        ([("c1", "p1", 0), ("c2", "p2", 1)], "c1"),
        ([("c1", "p1", 0), ("c2", "p1", 1)], "c2"),
        ([("c2", "p1", 0), ("c1", "p1", 1)], "c1"),
        ([("c1", "p1", 0), ("c2", "p1", 0)], "c1"),
    ],
    ids=[
        "lower-priority-first",
        "more-recently-admitted-first",
        "recency-over-declaration-order",
        "stable-id-tie-break",
    ],
)
def test_candidates_in_the_same_queue_are_ordered(lab, candidates, victim):
    """§7.2 CandidatesOrdering (preempted first): lower priority, then more recently
    admitted (later QuotaReserved), then the id (here: the workload declared first). The
    quota (4) holds both candidates; `h` (p10, 2 GPUs) needs one gone."""
    workloads = [job(name, cls, t) for name, cls, t in candidates]
    out = run(lab, [queue(nominal=4, within="LowerPriority")], [*workloads, job("h", "p10", 5)])
    assert evicted(out) == [(5.0, victim, "h")]


def test_other_queues_candidates_come_before_the_own_queue(lab):
    """§7.2 rule 1: workloads of other ClusterQueues in the cohort are preempted before the
    preemptor's own, whatever their priority. q1 (nominal 4) runs `own` (p1); q2
    (nominal 0) borrows q1's spare 2 GPUs for `other` (p3). `h` (p10) fits q1's nominal
    once either is gone; `other` goes."""
    queues = [
        queue("q1", 4, within="LowerPriority", reclaim="LowerPriority", cohort="c"),
        queue("q2", 0, cohort="c"),
    ]
    out = run(
        lab,
        queues,
        [job("own", "p1", 0, q="q1"), job("other", "p3", 1, q="q2"), job("h", "p10", 5, q="q1")],
    )
    assert evicted(out) == [(5.0, "other", "h")]


# =========================================================================== §7.3
def test_fill_back_drops_an_early_target(lab):
    """§7.3: candidates in order `a` (1 GPU, p1), `b` (3 GPUs, p2); `h` needs 3 of the
    4-GPU quota. Greedy removes a (1 free), then b (4 free): targets [a, b]. Fill-back
    from len-2 adds a back: h still fits (1 + 3 = 4), so a is dropped. Only b goes."""
    out = run(
        lab,
        [queue(nominal=4, within="LowerPriority")],
        [job("b", "p2", 0, gpus=3), job("a", "p1", 1, gpus=1), job("h", "p10", 5, gpus=3)],
    )
    assert evicted(out) == [(5.0, "b", "h")]
    assert first_admission(out, "h") == 5.0


def test_fill_back_runs_from_the_second_to_last_target_down(lab):
    """§7.3: targets [a (1 GPU), b (1 GPU), c (2 GPUs)] for `h` (3 GPUs of the 4-GPU
    quota). Fill-back tries b first (i = len-2): without it h fits, so b is dropped;
    then a: adding it back leaves 2 free < 3, so a stays. Victims {a, c} (a forward
    pass would have kept a and evicted b)."""
    out = run(
        lab,
        [queue(nominal=4, within="LowerPriority")],
        [
            job("c", "p3", 0),
            job("b", "p2", 1, gpus=1),
            job("a", "p1", 2, gpus=1),
            job("h", "p10", 5, gpus=3),
        ],
    )
    assert sorted(evicted(out)) == [(5.0, "a", "h"), (5.0, "c", "h")]


def test_no_preemption_when_removing_every_candidate_is_not_enough(lab):
    """§7.3: if the head does not fit with all candidates gone, nothing is evicted (the
    snapshot is restored) and the head waits: at t=5 `h` (p5, 4 GPUs) would need `hi`
    (p10) gone too. When hi ends (t=100), removing `lo` is enough: lo goes then."""
    out = run(
        lab,
        [queue(nominal=4, within="LowerPriority")],
        [job("hi", "p10", 0), job("lo", "p1", 1), job("h", "p5", 5, gpus=4)],
    )
    assert evicted(out) == [(100.0, "lo", "h")]
    assert first_admission(out, "h") == 100.0


# =========================================================================== cohorts
def borrowed_cohort(reclaim: str, borrower_class: str = "p1"):
    """q1 and q2 (nominal 2 each) in cohort c; q2 runs w2a and w2b (2 GPUs each), the
    second borrowing q1's unused quota. `h` (p10) arrives in the idle q1 at t=10."""
    queues = [queue("q1", 2, reclaim=reclaim, cohort="c"), queue("q2", 2, cohort="c")]
    return queues, [
        job("w2a", borrower_class, 0, q="q2"),
        job("w2b", borrower_class, 1, q="q2"),
        job("h", "p10", 10, q="q1"),
    ]


def test_a_cohort_never_admits_beyond_its_total_quota(lab):
    """§7.3 workloadFits: `v > Available(cq, fr)` fails, and Available accounts for what
    the cohort's other queues use. q2 borrowed q1's unused 2 GPUs; with reclaim Never,
    `h` must wait until w2a ends (t=100) instead of pushing the cohort to 6 of 4 GPUs."""
    out = run(lab, *borrowed_cohort("Never"))
    assert first_admission(out, "h") == 100.0


@pytest.mark.parametrize(
    ("reclaim", "borrower_class", "reclaims"),
    [
        ("LowerPriority", "p1", True),
        ("LowerPriority", "top", False),
        ("Any", "top", True),
    ],
    ids=[
        "lower-priority-reclaims-a-lower-borrower",
        "lower-priority-spares-a-higher-one",
        "any-reclaims-whatever-the-priority",
    ],
)
def test_reclaim_within_cohort_takes_back_lent_quota(lab, reclaim, borrower_class, reclaims):
    """§7.1 reclaimWithinCohort / §7.3 cohort candidates: the borrowing queue's workloads
    are candidates when they satisfy the policy; the more recently admitted w2b goes."""
    out = run(lab, *borrowed_cohort(reclaim, borrower_class))
    if reclaims:
        assert evicted(out) == [(10.0, "w2b", "h")]
        assert first_admission(out, "h") == 10.0
    else:
        assert evicted(out) == []
        assert first_admission(out, "h") == 100.0


@pytest.mark.parametrize("reclaim", ["LowerPriority", "Any"])
def test_a_queue_within_nominal_is_never_reclaimed_from(lab, reclaim):
    """§7.3 cohort candidates: the walk skips any ClusterQueue within nominal. q1 and q2
    (nominal 2) each use their own 2 GPUs; `h` in q1 finds no candidate in q2 and waits
    for q1's own `w1` to end."""
    queues = [queue("q1", 2, reclaim=reclaim, cohort="c"), queue("q2", 2, cohort="c")]
    out = run(
        lab,
        queues,
        [job("w1", "p1", 0, q="q1"), job("w2", "p1", 0, q="q2"), job("h", "p10", 10, q="q1")],
    )
    assert evicted(out) == []
    assert first_admission(out, "h") == 100.0


def test_a_head_that_would_borrow_cannot_reclaim_without_borrow_within_cohort(lab):
    """§7.3: q1 (nominal 2) already runs w1; q3 (nominal 0) borrows 2 of q2's unused
    GPUs for w3; the cohort (4) is full. `h` in q1 would have to borrow: only the
    `[borrowing=true]` attempt runs, w3 is classified ReclaimWithoutBorrowing (no
    borrowWithinCohort) and is invalid when borrowing, so nobody is evicted. h is
    admitted at t=100, when w3 ends and the cohort's unused quota (q2's) can be borrowed,
    without waiting for w1 (t=101)."""
    queues = [
        queue("q1", 2, reclaim="Any", cohort="c"),
        queue("q2", 2, cohort="c"),
        queue("q3", 0, cohort="c"),
    ]
    out = run(
        lab,
        queues,
        [job("w3", "p1", 0, q="q3"), job("w1", "p1", 1, q="q1"), job("h", "p10", 5, q="q1")],
    )
    assert evicted(out) == []
    assert first_admission(out, "h") == 100.0


def test_a_candidate_whose_queue_stops_borrowing_is_skipped(lab):
    """§7.3 candidateIsValid, checked lazily as the iterator reaches each candidate: q1
    (nominal 4) is idle; q2 (nominal 2) runs w2a and w2b, borrowing 2; q3 (nominal 0)
    runs w3, borrowing 2. `h` (4 GPUs) in q1 needs 4 back. Order: w2b (p1), w2a (p2),
    w3 (p3). After w2b, q2 is within nominal, so w2a is no longer valid: w3 goes."""
    queues = [
        queue("q1", 4, reclaim="LowerPriority", cohort="c"),
        queue("q2", 2, cohort="c"),
        queue("q3", 0, cohort="c"),
    ]
    out = run(
        lab,
        queues,
        [
            job("w2a", "p2", 0, q="q2"),
            job("w2b", "p1", 1, q="q2"),
            job("w3", "p3", 2, q="q3"),
            job("h", "p10", 5, q="q1", gpus=4),
        ],
    )
    assert sorted(evicted(out)) == [(5.0, "w2b", "h"), (5.0, "w3", "h")]


@pytest.mark.parametrize(
    ("limit", "third_admitted"),
    [
        (None, 2.0),
        (4, 2.0),
        (2, 100.0),
        (0, 100.0),
    ],
    ids=["no-limit-borrows-all-spare", "limit-4", "limit-2-stops-the-third", "limit-0"],
)
def test_cohort_borrowing_stops_at_the_borrowing_limit(lab, limit, third_admitted):
    """§7.1 / §7.3 Available (borrowing limits along the path): q1 (nominal 2) borrows
    from the idle q2 (nominal 4). a (within nominal) and b (borrows 2) are admitted at
    once (with limit 0, b waits too); c would borrow 4 in all."""
    extra = {} if limit is None else {"borrowingLimitGpus": limit}
    queues = [queue("q1", 2, cohort="c", **extra), queue("q2", 4, cohort="c")]
    out = run(
        lab,
        queues,
        [job("a", "p1", 0, q="q1"), job("b", "p1", 1, q="q1"), job("c", "p1", 2, q="q1")],
    )
    if limit == 0:
        assert admitted(out)[:3] == [(0.0, "a"), (100.0, "b"), (200.0, "c")]
    else:
        assert admitted(out)[:2] == [(0.0, "a"), (1.0, "b")]
        assert first_admission(out, "c") == third_admitted


# =========================================================================== queue rules
def test_strict_fifo_head_blocks_the_queue(lab):
    """Kueue StrictFIFO (admission.py): `big` (4 GPUs) heads the queue and does not fit
    the 2 GPUs left; `small` (1 GPU) behind it would fit but waits. big is admitted when
    `x` ends (t=100) and small when big ends (t=200)."""
    out = run(
        lab,
        [queue(nominal=4)],
        [job("x", "p1", 0), job("big", "p1", 1, gpus=4), job("small", "p1", 2, gpus=1)],
    )
    assert admitted(out) == [(0.0, "x"), (100.0, "big"), (200.0, "small")]


def test_queue_concurrency_caps_admitted_workloads(lab):
    """domain.md §6: at most `concurrency` workloads admitted at once, quota aside."""
    out = run(
        lab,
        [queue(nominal=None, concurrency=2)],
        [job("a", "p1", 0), job("b", "p1", 1), job("c", "p1", 2)],
    )
    assert admitted(out) == [(0.0, "a"), (1.0, "b"), (100.0, "c")]


def test_nominal_quota_caps_admitted_gpus(lab):
    """§7.3 workloadFits without a cohort: usage + request <= nominal."""
    out = run(lab, [queue(nominal=4)], [job("a", "p1", 0), job("b", "p1", 1), job("c", "p1", 2)])
    assert admitted(out) == [(0.0, "a"), (1.0, "b"), (100.0, "c")]


def test_pods_exist_only_once_admitted(lab):
    """domain.md §6: a workload waiting in its queue has no pods (nothing to prioritise)."""
    out = run(lab, [queue(nominal=2)], [job("a", "p1", 0), job("b", "p10", 1)])
    assert [(e.time, e.pod) for e in out.of(ev.CREATED)] == [(0.0, "a-0"), (100.0, "b-0")]


# =========================================================================== §7.5
def test_an_evicted_workload_is_suspended_requeued_and_readmitted(lab):
    """§7.5: the victim gets Evicted, its pods are deleted and, being suspended, not
    replaced by its Job controller meanwhile; it waits in its queue and is admitted again
    (with new pods) when the preemptor ends."""
    out = run(
        lab,
        [queue(within="LowerPriority")],
        [
            job("a", "p1", 0, controller={"kind": "job"}),
            job("h", "p10", 10, duration=20, controller={"kind": "job"}),
        ],
    )
    assert evicted(out) == [(10.0, "a", "h")]
    assert [e.time for e in out.of(ev.KILLING, "a-0")] == [10.0]
    assert [(e.time, e.pod) for e in out.of(ev.CREATED) if e.workload == "a"] == [
        (0.0, "a-0"),
        (30.0, "a-0-r0"),
    ]
    assert admitted(out) == [(0.0, "a"), (10.0, "h"), (30.0, "a")]


def test_a_preempted_workload_keeps_its_creation_time_in_the_queue(lab):
    """§7.1 queueOrderTimestamp (Kueue `workload.Ordering.GetQueueOrderTimestamp`): the
    eviction time is used only after a PodsReady timeout or an AdmissionCheck eviction
    (and, without PrioritySortingWithinCohort, InCohortReclaimWhileBorrowing); a workload
    preempted InClusterQueue keeps its creation timestamp. `a` (created 0) is preempted
    by `h` at t=10 while `b` (created 5, same priority) waits; when h ends (t=30) a, the
    older, is admitted again before b."""
    out = run(
        lab,
        [queue(within="LowerPriority")],
        [job("a", "p1", 0), job("b", "p1", 5), job("h", "p10", 10, duration=20)],
    )
    assert evicted(out) == [(10.0, "a", "h")]
    assert admitted(out)[:4] == [(0.0, "a"), (10.0, "h"), (30.0, "a"), (130.0, "b")]


# =========================================================================== ResourceQuota
def test_a_resource_quota_per_class_blocks_pod_creation_until_it_frees(lab):
    """domain.md §6: a ResourceQuota scoped to a PriorityClass refuses pods beyond it
    (FailedCreate, "exceeded quota"); the controller creates the pod when quota frees, and
    a pod of another class is unaffected."""
    workloads = [
        {"name": "a", "gpus": 2, "priorityClassName": "p1", "durationSeconds": 10},
        {"name": "b", "gpus": 2, "priorityClassName": "p1", "arrival": 1},
        {"name": "c", "gpus": 2, "priorityClassName": "p2", "arrival": 2},
    ]
    doc = lab.doc(
        nodes=[("n1", 8)],
        classes=CLASSES,
        workloads=workloads,
        policy={"preemption": "none"},
        horizon=60,
    )
    doc["resourceQuotas"] = [{"priorityClassName": "p1", "gpus": 2}]
    out = lab.run_doc(doc)
    refused = out.of(ev.QUOTA_EXCEEDED, "b-0")
    assert [(e.time, e.related) for e in refused] == [(1.0, "p1")]
    assert "exceeded quota" in refused[0].message
    assert [e.time for e in out.of(ev.CREATED, "b-0")] == [10.0]
    assert out.scheduled("b-0") == (10.0, "n1")
    assert out.scheduled("c-0") == (2.0, "n1")


# =========================================================================== §7.3 attempts
def reasons(out) -> dict[str, str]:
    """victim -> its Preempted reason (§7.5), from the WorkloadEvicted message."""
    return {e.workload: e.message.rsplit("(", 1)[1].rstrip(")") for e in out.of(ev.SUSPENDED)}


def test_borrowed_quota_is_reclaimed_together_with_the_queues_own_workloads(lab):
    """§7.3 Attempts: no borrowWithinCohort, cq0 under nominal (3 < 5) and no hierarchy
    candidate, so `[borrowing=false, borrowing=true]`. In the borrowing=false attempt the
    cohort candidate w0 (ReclaimWithoutBorrowing) is valid; after w0 and cq0's own w1 are
    removed, h (4 GPUs) fits within cq0's nominal. Fill-back cannot return w0 (the cohort
    would have 3 free). Upstream: {w0: InCohortReclamation, w1: InClusterQueue}."""
    classes = {"p2": 2, "m1": -1, "m2": -2}
    queues = [
        queue("cq0", 5, within="LowerPriority", reclaim="Any", cohort="c"),
        queue("cq1", 0, cohort="c"),
    ]
    doc = lab.doc(
        nodes=[("n1", 64)],
        classes=classes,
        policy={"preemption": "none"},
        horizon=400,
        workloads=[
            job("w1", "m2", 0, q="cq0", gpus=3),
            job("w0", "m1", 1, q="cq1", gpus=2),
            job("h", "p2", 5, q="cq0", gpus=4),
        ],
    )
    doc["queues"] = queues
    out = lab.run_doc(doc)
    assert reasons(out) == {"w0": "InCohortReclamation", "w1": "InClusterQueue"}
    assert first_admission(out, "h") == 5.0


def test_a_victim_that_sorts_before_the_head_is_requeued_not_dropped(lab):
    """§7.5 (the victim waits in its queue again) and queue bookkeeping: `a` (queuePriority
    10) is evicted by `b` (priority 10, queuePriority 0) at t=5; re-enqueued, a sorts
    before b. The admitted entry must be b's own: a is admitted again when b ends
    (t=25), and b is admitted exactly once."""
    q = queue(within="LowerPriority", orderBy="queuePriority")
    out = run(
        lab,
        [q],
        [
            job("a", "p1", 0, queuePriority=10, duration=100),
            job("b", "p10", 5, queuePriority=0, duration=20),
        ],
    )
    assert evicted(out) == [(5.0, "a", "b")]
    assert admitted(out) == [(0.0, "a"), (5.0, "b"), (25.0, "a")]
    assert out.engine.admission.queues["q"].used(("default", "gpus")) == 0  # a finished at 125


def test_borrow_within_cohort_lets_a_borrowing_head_reclaim_from_a_lower_borrower(lab):
    """§7.1 borrowWithinCohort / §7.3 classifyPreemptionVariant: q1 (nominal 2) runs w1 and
    must borrow for h; w3 borrows q2's quota in q3. Without borrowWithinCohort w3 is
    ReclaimWithoutBorrowing and invalid while h borrows (see the test above). With policy
    LowerPriority it is ReclaimWhileBorrowing: it goes at once, reason
    InCohortReclaimWhileBorrowing; with maxPriorityThreshold 0 (w3 has priority 1 > 0) it
    is spared again."""

    def scenario(bwc):
        preemption = {
            "withinClusterQueue": "Never",
            "reclaimWithinCohort": "Any",
            "borrowWithinCohort": bwc,
        }
        queues = [
            {**queue("q1", 2, cohort="c"), "preemption": preemption},
            queue("q2", 2, cohort="c"),
            queue("q3", 0, cohort="c"),
        ]
        return run(
            lab,
            queues,
            [job("w3", "p1", 0, q="q3"), job("w1", "p1", 1, q="q1"), job("h", "p10", 5, q="q1")],
        )

    allowed = scenario({"policy": "LowerPriority"})
    assert reasons(allowed) == {"w3": "InCohortReclaimWhileBorrowing"}
    assert first_admission(allowed, "h") == 5.0
    capped = scenario({"policy": "LowerPriority", "maxPriorityThreshold": 0})
    assert evicted(capped) == []
    assert first_admission(capped, "h") == 100.0


def test_borrow_within_cohort_needs_reclaim_within_cohort(lab):
    """§7.1: borrowWithinCohort may not be combined with reclaimWithinCohort Never."""
    import scheduler_core as sc

    doc = lab.doc(nodes=[("n1", 8)], classes=CLASSES, workloads=[job("a", "p1")])
    doc["queues"] = [
        {
            "name": "q",
            "nominalGpus": 2,
            "preemption": {"borrowWithinCohort": {"policy": "LowerPriority"}},
        }
    ]
    with pytest.raises(sc.SpecError, match=r"queues\[0\]\.preemption.*reclaimWithinCohort"):
        sc.parse_spec(doc)


def test_best_effort_fifo_admits_behind_a_head_that_does_not_fit(lab):
    """Kueue queueingStrategy BestEffortFIFO: unlike StrictFIFO (the test above, same
    workloads), `small` is admitted at t=2 while `big` waits for x to end."""
    out = run(
        lab,
        [queue(nominal=4, queueingStrategy="BestEffortFIFO")],
        [job("x", "p1", 0), job("big", "p1", 1, gpus=4), job("small", "p1", 2, gpus=1)],
    )
    assert admitted(out)[:2] == [(0.0, "x"), (2.0, "small")]
    assert first_admission(out, "big") == 102.0
