"""Peers' snapshot formats (issue 11 §1): a ``kwokctl snapshot export`` YAML and a
kube-scheduler-simulator export JSON are read like any other input and run; our own
``export kwok`` reads back (every preset: test_k8s_export.py).

The fixtures follow the peers' own writers: kwok's snapshot ``Save`` walks its default
resource filter in order and encodes each object as YAML with resourceVersion, selfLink
and managedFields cleared (``--record`` then appends ``kind: ResourcePatch`` documents,
apiVersion ``kwok.x-k8s.io/internal``); the simulator's ``GET /api/v1/export`` answers
``{pods, nodes, pvs, pvcs, storageClasses, priorityClasses, schedulerConfig,
namespaces}``, each list holding objects without ``kind``.
"""

from __future__ import annotations

import json
from pathlib import Path

import scheduler_core as sc
from scheduler_core.k8s import read_manifest_texts, read_manifests
from scheduler_core.k8s.export import export_kwok_snapshot
from scheduler_core.traces.scenarios import inject_urgent

FIXTURES = Path(__file__).parent / "fixtures" / "k8s"
KWOK = FIXTURES / "kwok-snapshot-export.yaml"
SIMULATOR = FIXTURES / "simulator-export.json"
RECORDING = """\
---
apiVersion: kwok.x-k8s.io/internal
kind: ResourcePatch
target:
  type: {version: v1, resource: pods}
  name: finetune-llama-z5k1c
  namespace: ml-train
durationNanosecond: 1500000000
patch: {"spec": {"nodeName": "gpu-a100-1"}}
"""


def _summary(result: sc.ExperimentSpec) -> list[tuple[str, int, int, str | None]]:
    return [(w.name, w.members, w.gpus, w.priority_class_name) for w in result.workloads]


def test_a_kwok_snapshot_export_is_read_with_its_bound_and_pending_pods():
    result = read_manifests([KWOK])
    spec = result.spec

    assert [n.name for n in spec.cluster.nodes] == ["gpu-a100-0", "gpu-a100-1", "gpu-a100-2"]
    assert [(c.name, c.value, c.global_default) for c in spec.priority_classes] == [
        ("prod-inference", 100000, False),
        ("batch-low", 100, True),
    ]
    # the Job's template names no class: its pods get the globalDefault (§1)
    assert _summary(spec) == [("llm-serve", 2, 2, "prod-inference"), ("finetune-llama", 3, 4, None)]
    bound = [(p.workload, p.node) for p in spec.initial_state]
    assert bound == [
        ("llm-serve", "gpu-a100-0"),
        ("llm-serve", "gpu-a100-1"),
        ("finetune-llama", "gpu-a100-0"),
        ("finetune-llama", "gpu-a100-2"),
    ]
    # the annotations Kubernetes has no field for
    assert spec.workloads[0].startup_seconds == 240
    assert spec.workloads[1].checkpoint.interval_seconds == 1800
    assert result.kinds["Pod"] == 8
    assert result.kinds["Namespace"] == 4


def test_everything_in_the_kwok_export_is_used_or_named():
    result = read_manifests([KWOK])
    notes = "\n".join(result.notes)

    for label in (
        "ConfigMap ml-serving/kube-root-ca.crt",
        "Service ml-serving/llm-serve",
        "Endpoints ml-serving/llm-serve",
        "ServiceAccount ml-serving/default",
        "Namespace kube-system",
        "DaemonSet kube-system/nvidia-device-plugin-daemonset",
        "Pod kube-system/nvidia-device-plugin-daemonset-xk2pq",
    ):
        assert label in notes
    assert "Job backoffLimit is not counted" in notes  # backoffLimit: 6, as kubectl prints it


def test_the_device_plugin_daemonset_pods_are_taken_off_their_nodes():
    spec = read_manifests([KWOK]).spec

    # 95690m allocatable less the daemon's 50m request
    assert {n.cpu for n in spec.cluster.nodes} == {95.64}
    assert {n.max_pods for n in spec.cluster.nodes} == {109}


def test_a_kwok_recording_is_read_as_its_initial_snapshot_and_the_changes_are_named():
    plain = read_manifests([KWOK])
    recorded = read_manifest_texts([(KWOK.read_text() + RECORDING, "recording.yaml")])

    assert recorded.mapping == plain.mapping
    assert any(
        note.startswith("left out, a KWOK recording's changes over time (ResourcePatch")
        for note in recorded.notes
    )


def test_the_kwok_snapshot_runs_and_an_urgent_group_preempts_batch_work():
    mapping = inject_urgent(read_manifests([KWOK]).mapping, members=2, gpus=8, arrival=60.0)
    spec = sc.parse_spec(mapping)

    [variant] = sc.run_experiment(spec)
    events = variant.replications[0].events
    evicted = {e.workload for e in events if e.reason == "Preempted"}
    assert evicted
    assert evicted <= {"finetune-llama", "llm-serve"}
    assert "finetune-llama" in evicted  # the lowest class goes first (§4.3)


def test_a_scheduler_simulator_export_is_read_as_the_same_cluster():
    from_kwok = read_manifests([KWOK]).spec
    result = read_manifests([SIMULATOR])
    spec = result.spec

    assert [n.name for n in spec.cluster.nodes] == [n.name for n in from_kwok.cluster.nodes]
    # pods only (no controllers in the export): workloads by owner reference and shape,
    # named after the owner, each pod's class as admission wrote it
    assert _summary(spec) == [
        ("llm-serve-6d9f7c8b5", 2, 2, "prod-inference"),
        ("finetune-llama", 3, 4, "batch-low"),
    ]
    assert [p.node for p in spec.initial_state] == [p.node for p in from_kwok.initial_state]
    assert sc.run_experiment(spec)[0].replications[0].events


def test_the_simulator_export_s_other_lists_and_config_are_named():
    result = read_manifests([SIMULATOR])
    notes = "\n".join(result.notes)

    assert "StorageClass standard" in notes
    assert "Namespace ml-train" in notes
    assert "kube-scheduler-simulator's schedulerConfig" in notes
    assert set(json.loads(SIMULATOR.read_text())) == {
        "pods",
        "nodes",
        "pvs",
        "pvcs",
        "storageClasses",
        "priorityClasses",
        "namespaces",
        "schedulerConfig",
    }


def test_our_kwok_snapshot_of_the_imported_cluster_reads_back():
    spec = read_manifests([KWOK]).spec
    again = read_manifest_texts([(export_kwok_snapshot(spec), "ours.yaml")]).spec

    assert _summary(again) == _summary(spec)
    assert [(p.workload, p.node) for p in again.initial_state] == [
        (p.workload, p.node) for p in spec.initial_state
    ]


def test_the_cli_says_what_it_read_per_kind_and_every_note(capsys):
    from scheduler_core.cli import main

    assert main(["import", "k8s", str(SIMULATOR)]) == 0
    err = capsys.readouterr().err.splitlines()
    assert (
        "read: KubeSchedulerConfiguration 1, Namespace 4, Node 3, Pod 5, PriorityClass 4, "
        "StorageClass 1" in err
    )
    assert any(
        line.startswith("note: left out, kube-scheduler-simulator's schedulerConfig")
        for line in err
    )
