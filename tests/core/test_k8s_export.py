"""Writing an experiment as Kubernetes manifests and a KWOK snapshot, and reading it back.

The upstream shapes checked here are the API field names of kubernetes/kubernetes
(``scheduling.k8s.io/v1`` PriorityClass, ``scheduling.k8s.io/v1beta1`` PodGroup with the
``schedulingPolicy.gang.minCount`` and ``disruptionMode: {single|all: {}}`` unions,
``Pod.spec.schedulingGroup.podGroupName``), kubernetes-sigs/jobset (``v1alpha2``
``replicatedJobs``, ``failurePolicy.restartStrategy``) and kubernetes-sigs/kueue
(``v1beta2`` ClusterQueue ``cohortName``, ``resourceGroups[].flavors[].resources[]``).
"""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path
from typing import Any

import pytest
import yaml

import scheduler_core as sc
from scheduler_core.k8s import read_manifest_texts
from scheduler_core.k8s.export import (
    ExportOptions,
    duration,
    export_kwok_snapshot,
    export_manifests,
    manifest_objects,
    memory_quantity,
)
from scheduler_core.k8s.roundtrip import normalised
from scheduler_core.traces import TraceError

PRESETS = [p.id for p in sc.list_presets()]


def read_back(text: str) -> sc.ExperimentSpec:
    return read_manifest_texts([(text, "export.yaml")]).spec


def documents(text: str) -> list[dict[str, Any]]:
    return [d for d in yaml.safe_load_all(text) if d is not None]


def of_kind(objects: list[dict[str, Any]], kind: str) -> list[dict[str, Any]]:
    return [o for o in objects if o["kind"] == kind]


def spec_of(text: str) -> sc.ExperimentSpec:
    return sc.parse_spec(text)


# ============================================================================ round trips
@pytest.mark.parametrize("preset_id", PRESETS)
def test_importing_the_export_of_every_preset_gives_the_same_spec(preset_id: str) -> None:
    spec = sc.get_preset(preset_id).spec()
    back = read_back(export_manifests(spec))
    assert normalised(back) == normalised(spec)


@pytest.mark.parametrize("preset_id", PRESETS)
def test_the_kwok_snapshot_of_every_preset_reads_back_as_the_same_spec(preset_id: str) -> None:
    spec = sc.get_preset(preset_id).spec()
    back = read_back(export_kwok_snapshot(spec))
    assert normalised(back) == normalised(spec)


def test_a_variant_exports_as_a_plain_spec_with_its_overrides_and_policy() -> None:
    spec = sc.get_preset("s7-three-class-setup").spec()
    back = read_back(export_manifests(spec, variant="everything-preempts"))
    training = next(pc for pc in back.priority_classes if pc.name == "training")
    assert training.preemption_policy == "PreemptLowerPriority"
    assert back.variants == []
    assert back.grid == {}
    resolved = sc.resolve_variant(spec, "everything-preempts")
    assert normalised(back) == normalised(resolved.spec.model_copy(update={"variants": []}))


def test_a_variant_that_changes_the_policy_carries_it_into_the_spec() -> None:
    spec = sc.get_preset("s8-gang-at-scale").spec()
    back = read_back(export_manifests(spec, variant="workload-aware"))
    assert back.policy.preemption == "workload-aware"
    assert [v.name for v in sc.expand_variants(back)] == ["default"]


def test_the_exported_variant_simulates_exactly_as_the_variant_did() -> None:
    spec = sc.get_preset("s3-grace-period").spec()
    back = read_back(export_manifests(spec, variant="grace-30s"))
    original = sc.simulate(spec, "grace-30s")
    again = sc.simulate(back, "default")
    assert again.summary == original.summary


def test_the_same_spec_exports_byte_identical_yaml() -> None:
    spec = sc.get_preset("s1-training-vs-shards").spec()
    assert export_manifests(spec) == export_manifests(spec)


def test_policy_only_leaves_out_nodes_and_bound_pods() -> None:
    spec = sc.get_preset("s2-jump-the-queue").spec()
    objects = manifest_objects(spec, ExportOptions(nodes=False))
    assert not of_kind(objects, "Node")
    assert not [p for p in of_kind(objects, "Pod") if "nodeName" in p["spec"]]
    assert len(of_kind(objects, "Job")) == len(spec.workloads)


def test_an_unknown_variant_is_an_error_naming_it() -> None:
    spec = sc.get_preset("s3-grace-period").spec()
    with pytest.raises(sc.SpecError, match="no variant named 'nope'"):
        export_manifests(spec, variant="nope")


# ============================================================================ shapes
def test_priority_classes_carry_value_default_and_preemption_policy() -> None:
    objects = documents(export_manifests(sc.get_preset("s7-three-class-setup").spec()))
    classes = {o["metadata"]["name"]: o for o in of_kind(objects, "PriorityClass")}
    assert classes["training"] == {
        "apiVersion": "scheduling.k8s.io/v1",
        "kind": "PriorityClass",
        "metadata": {"name": "training"},
        "value": 500,
        "globalDefault": False,
        "preemptionPolicy": "Never",
    }
    assert classes["batch"]["globalDefault"] is True


def test_a_gang_is_a_v1beta1_pod_group_its_members_join_by_name() -> None:
    objects = documents(export_manifests(sc.get_preset("s8-gang-at-scale").spec()))
    (group,) = of_kind(objects, "PodGroup")
    assert group["apiVersion"] == "scheduling.k8s.io/v1beta1"
    assert group["spec"] == {
        "schedulingPolicy": {"gang": {"minCount": 1000}},
        "disruptionMode": {"single": {}},
    }
    job = next(o for o in of_kind(objects, "Job") if o["metadata"]["name"] == "big-training")
    pod = job["spec"]["template"]["spec"]
    assert pod["schedulingGroup"] == {"podGroupName": "big-training"}
    assert pod["containers"][0]["resources"]["limits"] == {"nvidia.com/gpu": "1"}
    assert pod["priorityClassName"] == "training"


def test_disruption_mode_all_and_required_topology_are_written_natively() -> None:
    spec = sc.get_preset("s12-topology-placement").spec()
    objects = documents(export_manifests(spec))
    (group,) = of_kind(objects, "PodGroup")
    assert group["spec"]["schedulingConstraints"] == {"topology": [{"key": "rack"}]}
    owner = next(
        o for o in objects if o["metadata"].get("name") == "train" and o["kind"] != "PodGroup"
    )
    assert owner["metadata"]["annotations"]["disruption-lab.io/topology"] == (
        "block,rack;required=rack;algorithm=BestFit"
    )


def test_a_jobset_restarting_as_a_group_uses_jobset_recreate() -> None:
    spec = spec_of("""
cluster: {nodePools: [{name: gpu, count: 2}]}
workloads:
  - {name: train, kind: training, members: 2, gpus: 8, controller: {kind: jobset, restart: group}}
""")
    (jobset,) = of_kind(documents(export_manifests(spec)), "JobSet")
    assert jobset["apiVersion"] == "jobset.x-k8s.io/v1alpha2"
    assert jobset["spec"]["failurePolicy"] == {"maxRestarts": 10, "restartStrategy": "Recreate"}
    (replicated,) = jobset["spec"]["replicatedJobs"]
    assert replicated["replicas"] == 1
    assert replicated["template"]["spec"]["parallelism"] == 2
    assert replicated["template"]["spec"]["backoffLimit"] == 0
    assert read_back(export_manifests(spec)).workloads[0].controller.restart == "group"


def test_a_pdb_selects_the_workload_label_its_pods_carry() -> None:
    spec = spec_of("""
cluster: {nodePools: [{name: gpu, count: 2}]}
workloads:
  - {name: serve, kind: inference, members: 3, gpus: 1, controller: {kind: deployment},
     pdb: {maxUnavailable: 1}}
""")
    objects = documents(export_manifests(spec))
    (pdb,) = of_kind(objects, "PodDisruptionBudget")
    (deployment,) = of_kind(objects, "Deployment")
    assert pdb["apiVersion"] == "policy/v1"
    assert pdb["spec"] == {
        "maxUnavailable": 1,
        "selector": {"matchLabels": {"disruption-lab.io/workload": "serve"}},
    }
    template_labels = deployment["spec"]["template"]["metadata"]["labels"]
    assert pdb["spec"]["selector"]["matchLabels"].items() <= template_labels.items()
    assert deployment["spec"]["selector"]["matchLabels"] == {"disruption-lab.io/workload": "serve"}
    assert deployment["spec"]["replicas"] == 3


QUEUED = """
cluster: {nodePools: [{name: gpu, count: 2}]}
priorityClasses: [{name: low, value: 10}]
queues:
  - {name: team-a, nominalGpus: 8, cohort: research, borrowingLimitGpus: 4,
     preemption: {withinClusterQueue: LowerPriority, reclaimWithinCohort: Any}}
  - {name: ops, concurrency: 2, orderBy: priority}
resourceQuotas: [{priorityClassName: low, gpus: 4}]
workloads:
  - {name: a, gpus: 2, queue: team-a, queuePriority: 5}
  - {name: b, gpus: 2, queue: ops}
"""


def test_admission_queues_become_kueue_v1beta2_objects() -> None:
    objects = documents(export_manifests(spec_of(QUEUED)))
    kinds = [o["kind"] for o in objects if o["apiVersion"].startswith("kueue.x-k8s.io/")]
    assert kinds == [
        "ResourceFlavor",
        "Cohort",
        "ClusterQueue",
        "LocalQueue",
        "ClusterQueue",
        "LocalQueue",
    ]
    team = next(o for o in of_kind(objects, "ClusterQueue") if o["metadata"]["name"] == "team-a")
    assert team["apiVersion"] == "kueue.x-k8s.io/v1beta2"
    assert team["spec"]["cohortName"] == "research"
    assert team["spec"]["resourceGroups"] == [
        {
            "coveredResources": ["nvidia.com/gpu"],
            "flavors": [
                {
                    "name": "default-flavor",
                    "resources": [
                        {"name": "nvidia.com/gpu", "nominalQuota": "8", "borrowingLimit": "4"}
                    ],
                }
            ],
        }
    ]
    assert team["spec"]["preemption"] == {
        "withinClusterQueue": "LowerPriority",
        "reclaimWithinCohort": "Any",
    }
    job = next(o for o in of_kind(objects, "Job") if o["metadata"]["name"] == "a")
    assert job["metadata"]["labels"]["kueue.x-k8s.io/queue-name"] == "team-a"
    assert job["spec"]["suspend"] is True


def test_queue_fields_kueue_lacks_and_quotas_survive_the_round_trip() -> None:
    spec = spec_of(QUEUED)
    back = read_back(export_manifests(spec))
    assert normalised(back) == normalised(spec)
    assert back.queues[1].concurrency == 2
    assert back.queues[1].nominal_gpus is None


def test_a_resource_quota_is_scoped_to_its_priority_class() -> None:
    (quota,) = of_kind(documents(export_manifests(spec_of(QUEUED))), "ResourceQuota")
    assert quota["spec"] == {
        "hard": {"requests.nvidia.com/gpu": "4"},
        "scopeSelector": {
            "matchExpressions": [
                {"scopeName": "PriorityClass", "operator": "In", "values": ["low"]}
            ]
        },
    }


def test_nodes_carry_allocatable_labels_taints_and_their_pool() -> None:
    spec = spec_of("""
cluster:
  nodePools: [{name: spot, count: 2, gpus: 4, cpu: 0.5, memory: 0.5, spot: true,
               labels: {zone: a}, taints: [{key: spot, effect: NoSchedule}]}]
  nodes: [{name: big, gpus: 8}]
workloads: [{name: w, cpu: 0.25, memory: 0.25}]
""")
    nodes = of_kind(documents(export_manifests(spec)), "Node")
    assert [n["metadata"]["name"] for n in nodes] == ["spot-0", "spot-1", "big"]
    spot = nodes[0]
    assert spot["status"]["allocatable"] == {
        "cpu": "500m",
        "memory": "512Mi",
        "pods": "110",
        "nvidia.com/gpu": "4",
    }
    assert spot["metadata"]["labels"] == {"zone": "a"}
    assert spot["metadata"]["annotations"] == {
        "disruption-lab.io/node-pool": "spot",
        "disruption-lab.io/spot": "true",
    }
    assert spot["spec"]["taints"] == [{"key": "spot", "effect": "NoSchedule"}]
    assert normalised(read_back(export_manifests(spec))) == normalised(spec)


def test_the_initial_state_is_pods_bound_to_their_node_and_owned_by_their_job() -> None:
    spec = sc.get_preset("s11-pod-replacement-policy").spec()
    pods = [p for p in of_kind(documents(export_manifests(spec)), "Pod") if "nodeName" in p["spec"]]
    job_pod = next(
        p for p in pods if p["metadata"]["labels"]["disruption-lab.io/workload"] == "job"
    )
    assert job_pod["spec"]["nodeName"] == "node-a"
    assert job_pod["status"] == {"phase": "Running", "startTime": "2025-12-31T23:50:00Z"}
    (owner,) = job_pod["metadata"]["ownerReferences"]
    assert (owner["kind"], owner["name"], owner["controller"]) == ("Job", "job", True)


def test_every_application_field_is_an_annotation_even_at_its_default() -> None:
    spec = spec_of("""
cluster: {nodePools: [{name: gpu, count: 1}]}
workloads: [{name: w}]
""")
    (job,) = of_kind(documents(export_manifests(spec)), "Job")
    annotations = job["metadata"]["annotations"]
    assert annotations == job["spec"]["template"]["metadata"]["annotations"]
    assert annotations["disruption-lab.io/duration-seconds"] == "none"
    assert annotations["disruption-lab.io/checkpoint-interval"] == "none"
    assert annotations["disruption-lab.io/stop-seconds"] == "5s"
    assert annotations["disruption-lab.io/kind"] == "batch"


@pytest.mark.parametrize(
    ("seconds", "text"),
    [
        (7200, "2h"),
        (1800, "30m"),
        (90, "90s"),
        (0, "0s"),
        (1.5, "1.5s"),
        (-600, "-600"),
    ],
    ids=["hours", "minutes", "seconds", "zero", "fraction", "negative"],
)
def test_durations_use_the_largest_whole_unit(seconds: float, text: str) -> None:
    assert duration(seconds) == text


@pytest.mark.parametrize(("gib", "text"), [(1024, "1024Gi"), (0.5, "512Mi"), (0, "0Gi")])
def test_memory_uses_the_largest_whole_binary_unit(gib: float, text: str) -> None:
    assert memory_quantity(gib) == text


def test_a_broken_experiment_configmap_is_a_located_error() -> None:
    text = export_manifests(sc.get_preset("s3-grace-period").spec())
    broken = text.replace("    seed: 0\n", "    seeds: 0\n", 1)
    with pytest.raises(TraceError) as raised:
        read_back(broken)
    (error,) = raised.value.errors
    assert "ConfigMap disruption-lab/disruption-lab-experiment" in error["message"]
    assert "unknown field(s) seeds" in error["message"]
    assert error["line"] > 1


# ============================================================================ KWOK
def test_the_kwok_snapshot_marks_nodes_for_kwok_and_binds_the_initial_pods() -> None:
    text = export_kwok_snapshot(sc.get_preset("s2-jump-the-queue").spec())
    assert "kwokctl snapshot restore --path THIS_FILE --format k8s" in text.splitlines()[1]
    objects = documents(text)
    nodes = of_kind(objects, "Node")
    assert nodes
    assert all(n["metadata"]["annotations"]["kwok.x-k8s.io/node"] == "fake" for n in nodes)
    bound = [p for p in of_kind(objects, "Pod") if p["spec"].get("nodeName")]
    assert len(bound) == 5
    assert all(p["status"]["phase"] == "Running" for p in bound)


# ============================================================================ CLI
def cli(*args: str) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        [sys.executable, "-m", "scheduler_core", *args],
        capture_output=True,
        text=True,
        timeout=120,
        check=False,
    )


def test_cli_export_writes_a_file_that_imports_back(tmp_path: Path) -> None:
    out = tmp_path / "three-class.yaml"
    result = cli(
        "export", "k8s", "s7-three-class-setup", "--variant", "three-class", "-o", str(out)
    )
    assert result.returncode == 0, result.stderr
    assert out.read_text().startswith("# Disruption Lab: experiment 'S7 The three-class")
    imported = cli("import", "k8s", str(out))
    assert imported.returncode == 0, imported.stderr
    spec = sc.get_preset("s7-three-class-setup").spec()
    expected = sc.resolve_variant(spec, "three-class").spec.model_copy(update={"variants": []})
    assert normalised(sc.parse_spec(imported.stdout)) == normalised(expected)


def test_cli_export_names_an_unknown_variant_and_exits_2() -> None:
    result = cli("export", "kwok", "s3-grace-period", "--variant", "nope")
    assert result.returncode == 2
    assert result.stderr.strip() == "error: variant: no variant named 'nope'"
    assert result.stdout == ""


# ============================================================================ a real set
MIXED = Path(__file__).parent / "fixtures" / "k8s" / "mixed-platform.yaml"


def test_the_mixed_platform_set_has_more_than_fifty_objects() -> None:
    objects = documents(MIXED.read_text())
    count = sum(len(o["items"]) if o["kind"] == "List" else 1 for o in objects)
    assert count > 50


def test_the_mixed_platform_set_imports_runs_and_exports_back() -> None:
    from scheduler_core.k8s import read_manifests

    imported = read_manifests([MIXED])
    spec = imported.spec
    assert len(spec.cluster.nodes) == 9
    assert len(spec.initial_state) == 10
    assert [q.name for q in spec.queues] == ["team-nlp", "team-vision"]
    assert any("Service ml-platform/llm-serving" in note for note in imported.notes)
    first = sc.run_experiment(spec)

    exported = export_manifests(spec)
    again = read_back(exported)
    assert normalised(again) == normalised(spec)
    assert len(documents(exported)) > 50
    rerun = sc.run_experiment(again)
    assert [v.aggregate for v in rerun] == [v.aggregate for v in first]
    assert [r.workload for r in rerun[0].replications[0].workloads] == [
        w.name for w in spec.workloads
    ]
