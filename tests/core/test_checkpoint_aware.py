"""`checkpoint-aware` preemption: ours, not a Kubernetes behaviour (domain.md §4).

Same eligibility as workload-aware preemption (units strictly below the preemptor), but
among the victim sets that make the preemptor fit it should pick the one with the least
expected cost: work since the last durable checkpoint, capacity stranded in broken
groups, startup thrown away, recovery time and user sessions, weighted by
`policy.checkpointAwareWeights` (defaults: 1 per GPU-second, 3600 per session).
`policy.checkpointVictims` asks every victim to write a checkpoint in its grace period
when the write (and the stop) fit.
"""

from __future__ import annotations

import pytest

from scheduler_core import events as ev
from scheduler_core.plugins import workload_preemption

CLASSES = {"hi": 100, "lo": 0}
TRAINING = {
    "name": "t",
    "members": 2,
    "gpus": 2,
    "priorityClassName": "lo",
    "recovery": {"model": "synchronous"},
    "checkpoint": {"intervalSeconds": 1800},
    "podGroup": {"minCount": 2},
}
"""Synchronous, checkpoint every 30 min; started at -1700: 1700 s unsaved on 4 GPUs, so
evicting either member costs 6800 GPU-s of lost work."""
TRAINING_AT = [("t", "n1", -1700, 0), ("t", "n2", -1700, 1)]


def lost_work(out) -> float:
    return sum(e.value for e in out.of(ev.DISRUPTED))


# =========================================================================== victim choice
def shards_and_training(lab, policy: str, shard_class: str = "lo"):
    """scenarios.md S1, small: n1 and n2 (4 GPUs) each hold a training member (2 GPUs)
    and two single-GPU evaluation shards (one Single-mode PodGroup, checkpoint every
    60 s, started earlier: their last checkpoint is at t=0, nothing unsaved). A 2-GPU
    gang `p` arrives at t=0."""
    shards = {
        "name": "s",
        "members": 4,
        "gpus": 1,
        "priorityClassName": shard_class,
        "checkpoint": {"intervalSeconds": 60},
        "podGroup": {"minCount": 1},
    }
    p = {"name": "p", "gpus": 2, "priorityClassName": "hi", "podGroup": {"minCount": 1}}
    return lab.run(
        nodes=[("n1", 4), ("n2", 4)],
        classes=CLASSES,
        horizon=30,
        policy={"preemption": policy},
        workloads=[TRAINING, shards, p],
        initial=[*TRAINING_AT, *(("s", f"n{1 + i // 2}", -1800, i) for i in range(4))],
    )


@pytest.mark.parametrize(
    ("policy", "victims", "lost"),
    [
        ("workload-aware", ["t-0"], 6800.0),
        ("checkpoint-aware", ["s-0", "s-1"], 0.0),
    ],
    ids=["upstream-keeps-the-older-shards", "ours-evicts-the-fresh-shards"],
)
def test_it_evicts_the_cheaper_victim_set(lab, policy, victims, lost):
    """S1: §6.2 rule 5 keeps the older shards, so workload-aware evicts a training member
    (one pod, 6800 GPU-s lost); checkpoint-aware evicts two freshly checkpointed shards
    (two pods, nothing lost): the fewest terminated pods is not the least lost work."""
    out = shards_and_training(lab, policy)
    assert out.decisions("p-0") == [(0.0, "n1", victims)]
    assert lost_work(out) == lost
    assert len(out.of(ev.KILLING)) == len(victims)


def test_it_keeps_the_upstream_eligibility(lab):
    """Only units strictly below the preemptor are victims (§6.3): shards of the
    preemptor's own priority are not, however cheap, so a training member goes."""
    out = shards_and_training(lab, "checkpoint-aware", shard_class="hi")
    assert [victims for _, _, victims in out.decisions("p-0")] == [["t-0"]]


def session_or_training(lab, weights=None, *, split: bool = False):
    """n1 (4 GPUs) holds training member t-0 (cost 6800) and an interactive session pod
    `i` of 2 GPUs (no unsaved work; cost: one session, 3600 by default), or, with
    ``split``, two 1-GPU session pods (3600 each). A 2-GPU pod `p` may only use n1."""
    sessions = {
        "name": "i",
        "members": 2 if split else 1,
        "gpus": 1 if split else 2,
        "priorityClassName": "lo",
        "recovery": {"model": "interactive"},
        "checkpoint": {"intervalSeconds": 60},
    }
    at = [("i", "n1", -1800, m) for m in range(2)] if split else [("i", "n1", -1800)]
    policy = {"preemption": "checkpoint-aware"}
    if weights is not None:
        policy["checkpointAwareWeights"] = weights
    p = {"name": "p", "gpus": 2, "priorityClassName": "hi", "nodeSelector": {"pool": "a"}}
    return lab.run(
        nodes=[{"name": "n1", "gpus": 4, "labels": {"pool": "a"}}, ("n2", 2)],
        classes=CLASSES,
        policy=policy,
        horizon=30,
        workloads=[TRAINING, sessions, p],
        initial=[*TRAINING_AT, *at],
    )


@pytest.mark.parametrize(
    ("weights", "victims"),
    [
        (None, ["i-0"]),
        ({"session": 7200}, ["t-0"]),
        ({"lostWork": 0.5}, ["t-0"]),
        ({"lostWork": 2}, ["i-0"]),
        ({"session": 0}, ["i-0"]),
    ],
    ids=[
        "defaults-session-3600-below-6800",
        "session-7200-above-6800",
        "lost-work-halved-to-3400",
        "lost-work-doubled",
        "sessions-free",
    ],
)
def test_weights_change_the_choice(lab, weights, victims):
    """The weights scale each cost term: the session (weight x 1) against the training
    member's lost work (weight x 6800 GPU-s)."""
    out = session_or_training(lab, weights)
    assert out.decisions("p-0") == [(0.0, "n1", victims)]


def test_the_cheapest_set_wins_over_the_cheapest_units(lab):
    """domain.md §4 ("among victim sets that make the preemptor fit, pick the one with
    the least expected ... cost"): two 1-GPU sessions cost 3600 each, 7200 together; the
    training member t-0 costs 6800. Either set frees the 2 GPUs; t-0 alone is cheaper."""
    out = session_or_training(lab, split=True)
    assert out.decisions("p-0") == [(0.0, "n1", ["t-0"])]


# =========================================================================== checkpointVictims
@pytest.mark.parametrize(
    ("flag", "grace", "checkpoint_at", "lost", "stop"),
    [
        (True, 30, 10.0, 0.0, 15.0),
        (True, 15, 10.0, 0.0, 15.0),
        (True, 12, None, 2000.0, 5.0),
        (False, 30, None, 2000.0, 5.0),
    ],
    ids=["write-fits-the-grace", "write-fits-exactly", "write-does-not-fit", "flag-off"],
)
def test_victims_checkpoint_in_the_grace_when_the_write_fits(
    lab, flag, grace, checkpoint_at, lost, stop
):
    """`checkpointVictims`: a victim (2 GPUs, checkpoint every 30 min, 1000 s unsaved)
    writes a checkpoint on SIGTERM if write (10 s) + stop (5 s) fit in its grace period:
    then nothing is lost and it stops after 15 s; otherwise it loses 2000 GPU-s and stops
    after its 5 s."""
    victim = {
        "name": "v",
        "gpus": 2,
        "priorityClassName": "lo",
        "checkpoint": {"intervalSeconds": 1800, "writeSeconds": 10},
        "stopSeconds": 5,
        "terminationGracePeriodSeconds": grace,
    }
    p = {"name": "p", "gpus": 2, "priorityClassName": "hi"}
    out = lab.run(
        nodes=[("n1", 2)],
        classes=CLASSES,
        horizon=60,
        policy={"preemption": "checkpoint-aware", "checkpointVictims": flag},
        workloads=[victim, p],
        initial=[("v", "n1", -1000)],
    )
    on_sigterm = [e for e in out.of(ev.CHECKPOINT, "v-0") if e.message == "checkpoint on SIGTERM"]
    assert [e.time for e in on_sigterm] == ([] if checkpoint_at is None else [checkpoint_at])
    assert [e.value for e in out.of(ev.DISRUPTED, "v-0")] == [lost]
    assert [e.value for e in out.of(ev.KILLING, "v-0")] == [stop]
    assert out.scheduled("p-0") == (stop, "n1")


# =========================================================================== labelling
def test_the_policy_is_labelled_as_not_a_kubernetes_behaviour():
    """domain.md: "Where the model is our own (... checkpoint-aware policy), say so"."""
    assert "not a Kubernetes behaviour" in workload_preemption.__doc__
    assert "not a Kubernetes behaviour" in workload_preemption.CheckpointAwarePreemption.__doc__
