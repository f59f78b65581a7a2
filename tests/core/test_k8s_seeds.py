"""Acceptance (issue 11 §3): every YAML fragment of the four seed articles, written out
as complete manifests under fixtures/k8s/, imports; the three-class setup and the
``Never`` class behave in the simulation as the articles say."""

from __future__ import annotations

from pathlib import Path

import pytest

from scheduler_core import simulate
from scheduler_core.k8s import read_manifests

FIXTURES = Path(__file__).parent / "fixtures" / "k8s"
SEEDS = sorted(FIXTURES.glob("seed-*.yaml"))


def first(events, reason, workload):
    return next(e for e in events if e.reason == reason and e.workload == workload)


@pytest.mark.parametrize("path", SEEDS, ids=[p.name for p in SEEDS])
def test_every_seed_fragment_imports(path):
    result = read_manifests([path])
    assert result.spec.cluster.node_names()


def test_the_workload_aware_article_podgroup_becomes_an_all_or_nothing_group():
    result = read_manifests([FIXTURES / "seed-000-podgroup.yaml"])
    (group,) = result.spec.workloads
    assert (group.name, group.members, group.gpus) == ("restart-together-training", 4, 8)
    assert group.pod_group.min_count == 4
    assert group.pod_group.disruption_mode == "All"
    assert group.priority_class_name == "batch-training"
    assert group.checkpoint.interval_seconds == 1800  # disruption-lab.io/checkpoint-interval
    assert "left out, a kind this model does not read: Namespace ml-team" in result.notes


def test_the_article_classes_keep_value_policy_and_default():
    result = read_manifests(
        [FIXTURES / "seed-004-classes.yaml", FIXTURES / "seed-004-queue-jumper.yaml"]
    )
    classes = {c.name: c for c in result.spec.priority_classes}
    assert classes["inference-interactive"].value == 1_000_000
    assert classes["cluster-default"].global_default
    assert classes["training-queue-jumper"].preemption_policy.value == "Never"


def test_the_polyaxon_fragment_is_named_in_the_notes_not_imported():
    result = read_manifests([FIXTURES / "seed-001-polyaxon-fragment.yaml"])
    assert result.spec.workloads == []
    assert any(
        n.startswith("left out, documents without a kind")
        and "seed-001-polyaxon-fragment.yaml:3" in n
        for n in result.notes
    )


def test_the_never_class_jumps_the_queue_and_evicts_nobody():
    """Non-preempting priority article: the urgent evaluation evicts no training pod,
    waits for the GPUs to free, and is scheduled before the background job."""
    result = read_manifests(
        [FIXTURES / "seed-001-ml-priorities.yaml", FIXTURES / "scenario-001-never.yaml"]
    )
    run = simulate(result.spec, "default")
    assert run.summary["pods_terminated"] == 0
    assert not [e for e in run.events if e.reason == "Preempted"]
    training_done = first(run.events, "WorkloadCompleted", "long-training").time
    evaluation = first(run.events, "Scheduled", "release-evaluation").time
    background = first(run.events, "Scheduled", "background-trial").time
    assert 0 < training_done < 3600  # 70 min of work (plus checkpoints), an hour done
    assert evaluation == training_done  # the freed GPUs go to the urgent class first
    assert evaluation < background


def test_the_three_class_setup_preempts_for_interactive_only():
    """Preempting low-priority inference article: the interactive pod evicts batch
    work; the Never training job evicts nothing and waits, yet starts before the
    batch pod that the interactive pod displaced gets its GPU back."""
    result = read_manifests([FIXTURES / "seed-004-three-class-setup.yaml"])
    assert [q.model_dump(by_alias=True) for q in result.spec.resource_quotas] == [
        {"priorityClassName": "interactive", "gpus": 4}
    ]
    run = simulate(result.spec, "default")
    victims = [e for e in run.events if e.reason == "Preempted"]
    assert victims
    assert all(e.workload == "bulk-generation" for e in victims)
    assert {e.related.split("-")[0] for e in victims} == {"chat"}
    assert not [e for e in run.events if e.reason == "VictimsSelected" and e.workload == "finetune"]
    chat = first(run.events, "Scheduled", "chat-frontend-inference").time
    assert chat == pytest.approx(125.0)  # arrived at 2 min, the victim's 5 s stop
    scheduled = [e for e in run.events if e.reason == "Scheduled"]
    finetune = next(i for i, e in enumerate(scheduled) if e.workload == "finetune")
    restarted = next(i for i, e in enumerate(scheduled) if e.pod.endswith("-r0"))
    assert scheduled[finetune].time == scheduled[restarted].time > chat
    assert finetune < restarted  # the training class jumps the batch replacement
