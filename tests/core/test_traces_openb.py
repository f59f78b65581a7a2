"""The openb (Alibaba GPU v2023) importer on small fixtures in the real column layout."""

from __future__ import annotations

import io
from pathlib import Path

import pytest

from scheduler_core.traces import ImportOptions, TraceError, import_trace, import_uploads
from scheduler_core.traces.build import GPU_MODEL_LABEL
from scheduler_core.traces.qos import OPENB_QOS

FIXTURES = Path(__file__).parent / "fixtures" / "traces"
NODES = FIXTURES / "openb_nodes.csv"
PODS = FIXTURES / "openb_pods.csv"


@pytest.fixture(scope="module")
def imported():
    return import_trace("openb", [NODES, PODS])


def by_name(result, name):
    return next(w for w in result.mapping["workloads"] if w["name"] == name)


def test_identical_nodes_become_a_pool_and_one_offs_keep_their_names(imported):
    cluster = imported.mapping["cluster"]
    assert cluster["nodePools"] == [
        {
            "name": "g2-8gpu",
            "count": 2,
            "gpus": 8,
            "cpu": 96.0,
            "memory": 384.0,
            "labels": {GPU_MODEL_LABEL: "G2"},
        }
    ]
    assert [n["name"] for n in cluster["nodes"]] == [
        "openb-node-0000",
        "openb-node-0003",
        "openb-node-0004",
    ]
    assert cluster["nodes"][0] == {
        "name": "openb-node-0000",
        "gpus": 0,
        "cpu": 32.0,
        "memory": 256.0,
    }
    assert imported.counts["nodes"] == 5


def test_time_zero_is_the_first_deletion_and_carried_in_pods_arrive_at_zero(imported):
    # the earliest deletion is 1500 (pod 0002): the window starts there
    first = by_name(imported, "openb-pod-0000")  # created at 100, before the window
    assert "arrival" not in first  # the spec default, 0
    assert first["durationSeconds"] == 5000 - 1500 - 180  # remaining life minus startup
    later = by_name(imported, "openb-pod-0005")  # created at 1600, scheduled at 1605
    assert later["arrival"] == 100
    assert later["durationSeconds"] == 2000 - 1605 - 180
    assert imported.mapping["horizonSeconds"] == 5000 - 1500


def test_a_pod_becomes_a_workload_with_its_resources_class_and_kind(imported):
    multi = by_name(imported, "openb-pod-0003")
    assert multi == {
        "name": "openb-pod-0003",
        "gpus": 8,
        "cpu": 32.0,
        "memory": 64.0,
        "priorityClassName": "best-effort",
        "durationSeconds": 4000 - 1500 - 60,
        "startupSeconds": 60,
        "checkpoint": {"intervalSeconds": 3600, "writeSeconds": 30},
        "nodeSelector": {GPU_MODEL_LABEL: "G2"},
    }


def test_a_fractional_gpu_share_holds_one_whole_gpu(imported):
    shared = by_name(imported, "openb-pod-0001")
    assert shared.get("gpus", 1) == 1
    assert imported.counts["rounded_up_shares"] == 1
    assert any("fraction of a GPU" in note for note in imported.notes)


def test_pending_pods_are_left_out_by_default_and_kept_on_request(imported):
    assert "openb-pod-0004" not in {w["name"] for w in imported.mapping["workloads"]}
    assert imported.counts["skipped_pending"] == 1
    kept = import_trace("openb", [NODES, PODS], ImportOptions(pending="keep"))
    pending = by_name(kept, "openb-pod-0004")  # created 1300, deleted 1600 while pending
    assert pending["durationSeconds"] == 1600 - 1500 - 60
    assert kept.counts["workloads"] == 5


def test_a_pod_that_ended_before_the_window_is_left_out(imported):
    assert imported.counts["skipped_ended_before_the_start"] == 1  # pod 0002 ends at 1500
    assert imported.counts["workloads"] == 4


def test_a_gpu_spec_with_several_models_selects_a_label_on_exactly_those_nodes(imported):
    multi = by_name(imported, "openb-pod-0005")
    label = "disruption-lab.io/gpu-spec-t4-v100m16"
    assert multi["nodeSelector"] == {label: "true"}
    labelled = [
        n["name"]
        for n in imported.mapping["cluster"]["nodes"]
        if n.get("labels", {}).get(label) == "true"
    ]
    assert labelled == ["openb-node-0003", "openb-node-0004"]


def test_qos_classes_become_priority_classes_and_the_mapping_is_editable():
    mapping = OPENB_QOS.with_assignments("BE=scavenger:-10:Never")
    result = import_trace("openb", [NODES, PODS], ImportOptions(qos_map=mapping))
    classes = {c["name"]: c for c in result.mapping["priorityClasses"]}
    assert classes["scavenger"] == {"name": "scavenger", "value": -10, "preemptionPolicy": "Never"}
    assert "best-effort" not in classes
    assert by_name(result, "openb-pod-0003")["priorityClassName"] == "scavenger"


def test_the_imported_spec_parses_and_simulates(imported):
    from scheduler_core import simulate

    assert len(imported.spec.workloads) == 4
    result = simulate(imported.spec, "default")
    assert result.summary["pods_terminated"] == 0


def test_bad_rows_report_file_line_column_and_nothing_is_returned():
    bad = FIXTURES / "openb_pods_bad.csv"
    with pytest.raises(TraceError) as caught:
        import_trace("openb", [NODES, bad])
    assert caught.value.errors == [
        {
            "file": str(bad),
            "line": 3,
            "column": 4,
            "message": "num_gpu: '1.5' is not a whole number",
        },
        {
            "file": str(bad),
            "line": 4,
            "column": 7,
            "message": "qos: 'XX' is not in the QoS mapping (mapped: LS, Guaranteed, Burstable, "
            "BE); add it with --qos-map",
        },
        {
            "file": str(bad),
            "line": 5,
            "column": 10,
            "message": "deletion_time: 900 is before creation_time 1100",
        },
    ]


def test_a_row_with_too_few_fields_is_an_error():
    text = (
        "name,cpu_milli,memory_mib,num_gpu,gpu_milli,gpu_spec,qos,pod_phase,creation_time,"
        "deletion_time,scheduled_time\nopenb-pod-0000,1000,1024,1\n"
    )
    errors = import_uploads("openb", [(io.BytesIO(text.encode()), "pods.csv")])
    assert errors == [
        {
            "file": "pods.csv",
            "line": 2,
            "column": 5,
            "message": "expected 11 fields (name, cpu_milli, memory_mib, num_gpu, "
            "gpu_milli, gpu_spec, qos, pod_phase, creation_time, "
            "deletion_time, scheduled_time), found 4",
        }
    ]


def test_a_pod_list_without_times_cannot_be_replayed():
    text = "name,cpu_milli,memory_mib,num_gpu,gpu_milli\nopenb-pod-0000,1000,1024,1,1000\n"
    errors = import_uploads("openb", [(io.StringIO(text), "multigpu20.csv")])
    assert errors == [
        {
            "file": "multigpu20.csv",
            "line": 1,
            "column": 0,
            "message": "this pod list has no creation_time, deletion_time or qos "
            "(the multigpu* files carry resources only): it cannot be "
            "replayed",
        }
    ]


def test_a_pod_larger_than_every_node_points_at_its_row():
    text = (
        "name,cpu_milli,memory_mib,num_gpu,gpu_milli,gpu_spec,qos,pod_phase,creation_time,"
        "deletion_time,scheduled_time\n"
        "openb-pod-0000,1000,1024,1,1000,,LS,Running,0,100,0\n"
        "openb-pod-0001,1000,1024,16,1000,,LS,Running,0,200,0\n"
    )
    errors = import_uploads(
        "openb", [(NODES.open("rb"), "nodes.csv"), (io.BytesIO(text.encode()), "pods.csv")]
    )
    assert errors == [
        {
            "file": "pods.csv",
            "line": 3,
            "column": 0,
            "message": "workloads[0].gpus: a member needs 16 GPU(s), 1 CPU and "
            "1 GiB, more than any node has",
        }
    ]


def test_a_node_listed_twice_is_an_error():
    errors = import_uploads("openb", [(NODES.open("rb"), "a.csv"), (NODES.open("rb"), "b.csv")])
    assert errors[0] == {
        "file": "b.csv",
        "line": 2,
        "column": 1,
        "message": "sn: node 'openb-node-0000' is listed twice",
    }
    assert len(errors) == 5
