"""The kubectl snapshot importer on a hand-written dump in the real API shapes."""

from __future__ import annotations

import io
import json
from pathlib import Path

import pytest

from scheduler_core.traces import ImportOptions, TraceError, import_trace, import_uploads
from scheduler_core.traces.quantity import QuantityError, parse_count, parse_quantity

SNAPSHOT = Path(__file__).parent / "fixtures" / "traces" / "kubectl_snapshot.json"


@pytest.fixture(scope="module")
def imported():
    return import_trace("kubectl", [SNAPSHOT])


def workload(result, name):
    return next(w for w in result.mapping["workloads"] if w["name"] == name)


def test_nodes_keep_allocatable_labels_taints_and_lose_daemon_overhead(imported):
    nodes = {n["name"]: n for n in imported.mapping["cluster"]["nodes"]}
    a = nodes["gpu-node-a"]
    # 96 CPU / 1024Gi / 110 pods, less the device-plugin DaemonSet pod (100m, 128Mi)
    assert (a["gpus"], a["cpu"], a["memory"], a["maxPods"]) == (8, 95.9, 1023.875, 109)
    # GPU Feature Discovery's model label becomes the node's gpuModel (docs/shared-gpus.md)
    assert a["gpuModel"] == "NVIDIA-A100-SXM4-80GB"
    assert "nvidia.com/gpu.product" not in a["labels"]
    assert (nodes["gpu-node-b"]["cpu"], nodes["gpu-node-b"]["memory"]) == (64.0, 512.0)
    assert nodes["cpu-node"]["cpu"] == 15.75  # the static kube-proxy pod's 250m
    assert nodes["cpu-node"]["gpus"] == 0


def test_a_cordoned_node_carries_the_unschedulable_taint_and_spot_labels_mark_spot(imported):
    b = next(n for n in imported.mapping["cluster"]["nodes"] if n["name"] == "gpu-node-b")
    assert b["taints"] == [
        {"key": "nvidia.com/gpu", "value": "present", "effect": "NoSchedule"},
        {"key": "node.kubernetes.io/unschedulable", "value": "", "effect": "NoSchedule"},
    ]
    assert b["spot"] is True


def test_user_priority_classes_are_kept_and_system_ones_skipped(imported):
    assert imported.mapping["priorityClasses"] == [
        {
            "name": "training",
            "value": 1000,
            "globalDefault": False,
            "preemptionPolicy": "PreemptLowerPriority",
            "description": "training jobs",
        },
        {
            "name": "batch",
            "value": 100,
            "globalDefault": True,
            "preemptionPolicy": "PreemptLowerPriority",
        },
        {"name": "interactive", "value": 5000, "globalDefault": False, "preemptionPolicy": "Never"},
    ]


def test_pods_are_grouped_by_controller_into_workloads(imported):
    names = [w["name"] for w in imported.mapping["workloads"]]
    assert names == ["serve-7d9f8b7c6", "llm", "notebook-alice", "etl-2"]
    serve = workload(imported, "serve-7d9f8b7c6")
    assert (serve["kind"], serve["members"], serve["controller"]) == (
        "inference",
        2,
        {"kind": "deployment"},
    )
    assert serve.get("gpus", 1) == 1  # from limits: extended resources default requests to limits


def test_requests_sum_containers_or_take_the_largest_init_container(imported):
    llm = workload(imported, "llm")
    assert (llm["gpus"], llm["cpu"], llm["memory"]) == (4, 8.0, 100.0)
    assert llm["priorityClassName"] == "training"
    assert llm["terminationGracePeriodSeconds"] == 120.0
    assert llm["controller"] == {"kind": "jobset"}


def test_bound_pods_start_before_the_snapshot_and_pending_ones_arrive_at_zero(imported):
    # the latest timestamp in the dump (a node heartbeat) is 11:59:30
    assert imported.mapping["initialState"] == [
        {"workload": "serve-7d9f8b7c6", "node": "gpu-node-a", "startedAt": -3570.0, "member": 0},
        {"workload": "serve-7d9f8b7c6", "node": "gpu-node-a", "startedAt": -1770.0, "member": 1},
        {"workload": "llm", "node": "gpu-node-a", "startedAt": -7170.0, "member": 0},
        {"workload": "notebook-alice", "node": "gpu-node-b", "startedAt": -10770.0, "member": 0},
    ]
    assert workload(imported, "llm")["members"] == 2  # member 1 is pending
    assert "arrival" not in workload(imported, "etl-2")


def test_the_snapshot_time_can_be_given():
    result = import_trace(
        "kubectl", [SNAPSHOT], ImportOptions(snapshot_time="2026-05-01T12:00:00Z")
    )
    assert result.mapping["initialState"][0]["startedAt"] == -3600.0


def test_a_kind_label_and_tolerations_carry_over(imported):
    notebook = workload(imported, "notebook-alice")
    assert notebook["kind"] == "notebook"
    assert notebook["controller"] == {"kind": "none"}
    assert notebook["tolerations"][0] == {
        "key": "nvidia.com/gpu",
        "operator": "Exists",
        "effect": "NoSchedule",
    }


def test_a_percentage_pdb_is_rounded_up_on_the_workload_it_selects(imported):
    assert workload(imported, "serve-7d9f8b7c6")["pdb"] == {"minAvailable": 1}
    assert (
        "budgets not applied: each selects no pod (budgets are per workload here): "
        "PodDisruptionBudget ml/orphan-pdb" in imported.notes
    )


def test_finished_and_daemon_pods_are_counted_out(imported):
    assert imported.counts == {"nodes": 3, "pods": 6, "workloads": 4, "initial_pods": 4}
    assert "left out, finished pods (Succeeded/Failed): Pod ml/etl-1-done-2kq9d" in imported.notes


def test_the_snapshot_simulates(imported):
    from scheduler_core import simulate

    result = simulate(imported.spec, "default")
    # the pending training member (priority 1000) evicts both serving replicas (100)
    assert result.summary["pods_terminated"] == 2


DUMP = """{
    "apiVersion": "v1",
    "kind": "List",
    "items": [
        {
            "apiVersion": "v1",
            "kind": "Node",
            "metadata": {"name": "n1"},
            "status": {"allocatable": {"cpu": "8", "memory": "32Gi", "nvidia.com/gpu": "1"}}
        },
        {
            "apiVersion": "policy/v1",
            "kind": "PodDisruptionBudget",
            "metadata": {"name": "web", "namespace": "default"},
            "spec": {"minAvailable": "150%", "selector": {"matchLabels": {"app": "web"}}}
        },
        {
            "apiVersion": "v1",
            "kind": "Pod",
            "metadata": {"name": "web-1", "namespace": "default", "labels": {"app": "web"}},
            "spec": {"containers": [{"name": "c", "resources": {"requests": {"cpu": "2x"}}}]}
        }
    ]
}
"""


def test_bad_objects_are_reported_at_their_line_and_nothing_is_returned():
    with pytest.raises(TraceError) as caught:
        import_trace("kubectl", [_upload(DUMP, "dump.json")])
    assert caught.value.errors == [
        {
            "file": "dump.json",
            "line": 17,
            "column": 9,
            "message": "Pod default/web-1: spec.containers resources: '2x' is not a quantity "
            "(e.g. '500m', '4', '16Gi')",
        }
    ]


def test_a_percentage_above_100_is_rejected_clearly():
    good_pod = DUMP.replace('"2x"', '"2"')
    errors = import_uploads("kubectl", [(io.StringIO(good_pod), "dump.json")])
    assert errors == [
        {
            "file": "dump.json",
            "line": 11,
            "column": 9,
            "message": "PodDisruptionBudget default/web: spec.minAvailable: '150%' "
            "is not a percentage from 0% to 100%",
        }
    ]


def test_a_pod_on_an_unknown_node_is_an_error():
    data = json.loads(DUMP.replace('"2x"', '"2"').replace('"150%"', "1"))
    data["items"][2]["spec"]["nodeName"] = "n9"
    text = json.dumps(data)
    errors = import_uploads("kubectl", [(io.StringIO(text), "d.json")])
    pod_starts = text.index('{"apiVersion": "v1", "kind": "Pod"') + 1
    assert errors == [
        {
            "file": "d.json",
            "line": 1,
            "column": pod_starts,
            "message": "Pod default/web-1: spec.nodeName: no node named 'n9' in the input",
        }
    ]


def test_malformed_json_points_at_the_syntax_error():
    errors = import_uploads("kubectl", [(io.StringIO('{"items": [\n  {"kind": }]}'), "x.json")])
    assert errors == [
        {"file": "x.json", "line": 2, "column": 12, "message": "not JSON: Expecting value"}
    ]


@pytest.mark.parametrize(
    ("text", "value"),
    [
        ("500m", 0.5),
        ("4", 4.0),
        ("16Gi", 16 * 2**30),
        ("129k", 129000.0),
        ("1e3", 1000.0),
        ("1056762948Ki", 1056762948 * 1024.0),
        ("2.5", 2.5),
        (3, 3.0),
    ],
    ids=["milli", "plain", "binary", "decimal", "exponent", "kibi", "fraction", "number"],
)
def test_quantities_parse_like_kubernetes(text, value):
    assert parse_quantity(text) == value


def test_a_gpu_count_must_be_whole():
    assert parse_count("8") == 8
    with pytest.raises(QuantityError, match="'500m' is not a whole number"):
        parse_count("500m")


def test_a_pod_naming_an_unknown_priority_class_is_an_error():
    data = json.loads(DUMP.replace('"2x"', '"2"').replace('"150%"', "1"))
    data["items"][2]["spec"]["priorityClassName"] = "gold"
    errors = import_uploads("kubectl", [(io.StringIO(json.dumps(data, indent=2)), "d.json")])
    assert [(e["line"], e["message"]) for e in errors] == [
        (
            35,
            "Pod default/web-1: spec.priorityClassName: no PriorityClass with name 'gold' "
            "was found",
        )
    ]


def _upload(text, name):
    from scheduler_core.traces import TraceFile

    return TraceFile.from_stream(io.BytesIO(text.encode()), name)


def test_a_relative_budget_on_pods_without_a_scalable_controller_is_noted():
    data = json.loads(DUMP.replace('"2x"', '"2"').replace('"150%"', '"50%"'))
    result = import_uploads("kubectl", [(io.StringIO(json.dumps(data)), "d.json")])
    assert result.mapping["workloads"][0]["pdb"] == {"minAvailable": 1}
    assert (
        "budgets counted against their workload's members; Kubernetes finds no "
        "scalable controller for these pods and would allow no voluntary disruption: "
        "PodDisruptionBudget default/web"
    ) in result.notes
