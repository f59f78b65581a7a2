"""Fidelity of pod priority (kubernetes-preemption.md §1): how a pod's priority and
preemption policy are resolved from PriorityClasses, checked black-box where the rule
shows in who may preempt whom, and at the admission step (``resolve_priority``) where it
does not."""

from __future__ import annotations

import pytest

import scheduler_core as sc
from scheduler_core import events as ev
from scheduler_core.engine import resolve_priority
from scheduler_core.spec import ExperimentSpec


def duel(lab, classes, victim_class, preemptor_class, **preemptor):
    """One 2-GPU node held by ``victim`` (started 10 s ago); ``preemptor`` (2 GPUs)
    arrives at t=1. A class of None means the workload names no class."""
    victim = {"name": "victim", "gpus": 2}
    attacker = {"name": "preemptor", "gpus": 2, "arrival": 1, **preemptor}
    if victim_class is not None:
        victim["priorityClassName"] = victim_class
    if preemptor_class is not None:
        attacker["priorityClassName"] = preemptor_class
    return lab.run(
        nodes=[("n1", 2)],
        classes=classes,
        workloads=[victim, attacker],
        initial=[("victim", "n1", -10)],
    )


def resolved(classes, **workload):
    """(value, never, class) the admission step gives ``workload`` under ``classes``.
    Built without the cross-field checks, so a spec with several defaults (a race the
    admission plugin normally prevents) can be expressed."""
    spec = ExperimentSpec.model_validate(
        {
            "cluster": {"nodes": [{"name": "n1"}]},
            "priorityClasses": classes,
            "workloads": [{"name": "w", **workload}],
        }
    )
    return resolve_priority(spec, spec.workloads[0])


# --------------------------------------------------------------------------- defaults
def test_pod_without_class_gets_the_global_default_value(lab):
    """§1: with priorityClassName empty, the pod gets the globalDefault class's value
    (500 here), so it may preempt a pod of class value 100."""
    classes = [
        {"name": "batch", "value": 500, "globalDefault": True},
        {"name": "low", "value": 100},
    ]
    out = duel(lab, classes, "low", None)
    assert out.engine.by_name["preemptor"].priority == 500
    assert out.preempted() == [(1.0, "victim-0", "n1", "preemptor-0")]


def test_pod_without_class_and_no_default_cannot_preempt_value_100(lab):
    """§1: no globalDefault ⇒ DefaultPriorityWhenNoDefaultClassExists = 0, lower than the
    victim's 100: nothing is preempted."""
    out = duel(lab, {"low": 100}, "low", None)
    assert out.engine.by_name["preemptor"].priority == 0
    assert out.preempted() == []
    assert out.scheduled("preemptor-0") is None


@pytest.mark.parametrize(
    ("victim_value", "preempts"),
    [(-1, True), (0, False)],
    ids=["victim-minus-1-is-lower-than-0", "victim-0-is-not-lower"],
)
def test_no_class_and_no_default_means_priority_zero(lab, victim_value, preempts):
    """§1: a pod naming no class, with no default class, has priority exactly 0: it
    preempts a -1 pod but not a 0 pod (victims must be strictly lower, §4.3)."""
    out = duel(lab, {"v": victim_value}, "v", None)
    assert bool(out.victims_of("preemptor-0")) is preempts


def test_the_default_class_also_gives_its_preemption_policy(lab):
    """§1 + KEP-902: admission copies the resolved class's preemptionPolicy, including
    the global default's: a classless pod under a `Never` default evicts nobody."""
    classes = [
        {"name": "batch", "value": 500, "globalDefault": True, "preemptionPolicy": "Never"},
        {"name": "low", "value": 100},
    ]
    out = duel(lab, classes, "low", None)
    assert out.preempted() == []
    assert any(
        "preemptionPolicy=Never" in e.message for e in out.of(ev.FAILED_SCHEDULING, "preemptor-0")
    )


def test_admission_refuses_a_second_global_default():
    """§1: the admission plugin refuses to create a second globalDefault class."""
    doc = {
        "cluster": {"nodes": [{"name": "n1"}]},
        "priorityClasses": [
            {"name": "a", "value": 10, "globalDefault": True},
            {"name": "b", "value": 5, "globalDefault": True},
        ],
    }
    with pytest.raises(sc.SpecError, match="globalDefault"):
        sc.parse_spec(doc)


@pytest.mark.parametrize(
    ("values", "expected"),
    [
        ((10, 5), (5, "b")),
        ((5, 10), (5, "a")),
        ((-3, 7, -2), (-3, "a")),
    ],
    ids=["second-is-lower", "first-is-lower", "negative-lowest-of-three"],
)
def test_lowest_value_default_wins_when_several(values, expected):
    """§1: if a race leaves several globalDefault classes, the one with the lowest value
    is used for pods that name no class."""
    classes = [{"name": "abc"[i], "value": v, "globalDefault": True} for i, v in enumerate(values)]
    value, never, name = resolved(classes)
    assert (value, name) == expected
    assert never is False


def test_a_named_class_beats_the_global_default():
    """§1: the default applies only when priorityClassName is empty."""
    classes = [
        {"name": "batch", "value": 500, "globalDefault": True},
        {"name": "low", "value": 100},
    ]
    assert resolved(classes, priorityClassName="low")[:1] == (100,)


# --------------------------------------------------------------------------- system classes
@pytest.mark.parametrize(
    ("name", "value"),
    [
        ("system-cluster-critical", 2_000_000_000),
        ("system-node-critical", 2_000_001_000),
    ],
    ids=["cluster-critical", "node-critical"],
)
def test_system_classes_have_their_builtin_values(name, value):
    """§1: system-cluster-critical = 2e9, system-node-critical = 2e9 + 1000; they exist
    without being declared, and preempt lower priority (the default policy)."""
    assert resolved([], priorityClassName=name) == (value, False, name)


@pytest.mark.parametrize(
    ("victim_class", "preemptor_class", "preempts"),
    [
        ("top-user", "system-cluster-critical", True),
        ("system-cluster-critical", "system-node-critical", True),
        ("system-node-critical", "system-cluster-critical", False),
        ("system-cluster-critical", "top-user", False),
    ],
    ids=[
        "cluster-critical-over-1e9",
        "node-critical-over-cluster-critical",
        "cluster-critical-not-over-node-critical",
        "1e9-not-over-cluster-critical",
    ],
)
def test_system_classes_sit_above_every_user_class(lab, victim_class, preemptor_class, preempts):
    """§1: the system classes rank above HighestUserDefinablePriority (1e9), and
    node-critical above cluster-critical."""
    out = duel(lab, {"top-user": 1_000_000_000}, victim_class, preemptor_class)
    assert bool(out.victims_of("preemptor-0")) is preempts


# --------------------------------------------------------------------------- validation
@pytest.mark.parametrize(
    ("value", "ok"),
    [
        (1_000_000_000, True),
        (1_000_000_001, False),
        (-5, True),
        (-(2**31), True),
    ],
    ids=[
        "1e9-is-the-highest-user-value",
        "above-1e9-rejected",
        "negative-allowed",
        "int32-min-allowed",
    ],
)
def test_user_class_value_range(value, ok):
    """§1: a user-defined class may have any int32 value up to 1e9; above is rejected."""
    doc = {
        "cluster": {"nodes": [{"name": "n1"}]},
        "priorityClasses": [{"name": "c", "value": value}],
    }
    if ok:
        assert sc.parse_spec(doc).priority_classes[0].value == value
    else:
        with pytest.raises(sc.SpecError, match=r"priorityClasses\[0\]\.value"):
            sc.parse_spec(doc)


def test_system_prefix_is_reserved():
    """§1: user classes may not use the `system-` prefix."""
    doc = {
        "cluster": {"nodes": [{"name": "n1"}]},
        "priorityClasses": [{"name": "system-mine", "value": 1}],
    }
    with pytest.raises(sc.SpecError, match=r"priorityClasses\[0\]\.name"):
        sc.parse_spec(doc)


def test_a_pod_naming_an_unknown_class_is_rejected():
    """§1: 'no PriorityClass with name X was found' (Forbidden at admission)."""
    doc = {
        "cluster": {"nodes": [{"name": "n1"}]},
        "workloads": [{"name": "w", "priorityClassName": "ghost"}],
    }
    with pytest.raises(sc.SpecError, match="no PriorityClass with name 'ghost' was found"):
        sc.parse_spec(doc)


# --------------------------------------------------------------------------- preemptionPolicy
def test_preemption_policy_defaults_to_preempt_lower_priority(lab):
    """§1: preemptionPolicy unset = PreemptLowerPriority."""
    out = duel(lab, {"low": 0, "high": 100}, "low", "high")
    assert out.victims_of("preemptor-0") == ["victim-0"]


def test_never_class_evicts_nobody_and_waits(lab):
    """§1 / §4.1: a `Never` pod is not eligible to preempt; it binds only once the
    victim finishes on its own (durationSeconds 20, started at -10 ⇒ t=10)."""
    classes = [
        {"name": "low", "value": 0},
        {"name": "polite", "value": 100, "preemptionPolicy": "Never"},
    ]
    victim = {"name": "victim", "gpus": 2, "priorityClassName": "low", "durationSeconds": 20}
    polite = {"name": "polite", "gpus": 2, "arrival": 1, "priorityClassName": "polite"}
    out = lab.run(
        nodes=[("n1", 2)],
        classes=classes,
        workloads=[victim, polite],
        initial=[("victim", "n1", -10)],
    )
    assert out.preempted() == []
    assert out.engine.by_name["polite"].never_preempts
    assert (
        "not eligible due to preemptionPolicy=Never."
        in out.of(ev.FAILED_SCHEDULING, "polite-0")[0].message
    )
    assert out.scheduled("polite-0") == (10.0, "n1")


def test_a_never_pod_is_still_evictable_by_others(lab):
    """§1: `Never` only stops the pod preempting; it stays a victim for higher pods."""
    classes = [
        {"name": "polite", "value": 10, "preemptionPolicy": "Never"},
        {"name": "high", "value": 100},
    ]
    out = duel(lab, classes, "polite", "high")
    assert out.victims_of("preemptor-0") == ["victim-0"]
