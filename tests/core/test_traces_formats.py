"""DLRM v2025, the PAI v2020 and spot v2026 node inventories, and our own CSV / JSON Lines
format, on small fixtures in the real layouts."""

from __future__ import annotations

import io
from pathlib import Path

import pytest

from scheduler_core.traces import ImportOptions, TraceError, TraceFile, import_trace, import_uploads

FIXTURES = Path(__file__).parent / "fixtures" / "traces"


def named(result, name):
    return next(w for w in result.mapping["workloads"] if w["name"] == name)


# ------------------------------------------------------------------ DLRM
@pytest.fixture(scope="module")
def dlrm():
    return import_trace("dlrm", [FIXTURES / "dlrm.csv"])


def test_dlrm_empty_times_mean_outside_the_window(dlrm):
    before_and_after = named(dlrm, "app-0-instance-0")  # no times at all
    assert "arrival" not in before_and_after
    assert "durationSeconds" not in before_and_after  # null, the default: to the horizon
    still_running = named(dlrm, "app-0-instance-1")  # created 475.00000000000006, no deletion
    assert still_running["arrival"] == 475.0
    assert "durationSeconds" not in still_running
    deleted_only = named(dlrm, "app-1-instance-3")  # existed at start, deleted at 2000
    assert deleted_only["durationSeconds"] == 2000 - 180
    inside = named(dlrm, "app-1-instance-2")  # 100 / 130 / 1000.4999 -> rounded
    assert (inside["arrival"], inside["durationSeconds"]) == (100.0, 1000 - 130 - 180)


def test_dlrm_instances_are_serving_workloads_of_one_high_class(dlrm):
    assert dlrm.mapping["priorityClasses"] == [
        {
            "name": "dlrm-serving",
            "value": 10000,
            "description": "DLRM inference: every instance is latency-sensitive",
        }
    ]
    cpu_instance = named(dlrm, "app-0-instance-1")
    assert (cpu_instance["gpus"], cpu_instance["cpu"], cpu_instance["memory"]) == (0, 64.0, 320.0)
    assert cpu_instance["kind"] == "inference"
    assert cpu_instance["controller"] == {"kind": "deployment"}


def test_dlrm_without_an_inventory_derives_a_cluster_from_peak_requests(dlrm):
    # peak: 2 GPU instances (1 GPU each) -> 1 GPU node; CPU instances 64 + 48 CPUs, 560 GiB
    # -> one 192-CPU node with 10% headroom still rounds up to 1
    assert dlrm.mapping["cluster"] == {
        "nodes": [
            {
                "name": "gpu-0",
                "gpus": 8,
                "cpu": 128.0,
                "memory": 1024.0,
                "taints": [{"key": "nvidia.com/gpu", "value": "present", "effect": "NoSchedule"}],
            },
            {"name": "cpu-0", "gpus": 0, "cpu": 192.0, "memory": 1024.0},
        ]
    }
    # only GPU instances tolerate the GPU nodes' taint
    assert named(dlrm, "app-1-instance-2")["tolerations"] == [
        {"key": "nvidia.com/gpu", "operator": "Exists", "effect": "NoSchedule"}
    ]
    assert "tolerations" not in named(dlrm, "app-0-instance-1")
    assert dlrm.mapping["horizonSeconds"] == 2000.0


def test_dlrm_takes_a_node_inventory_from_another_format():
    options = ImportOptions(nodes=("spot", (TraceFile.from_path(FIXTURES / "spot_nodes.csv"),)))
    result = import_trace("dlrm", [FIXTURES / "dlrm.csv"], options)
    assert result.counts["nodes"] == 3
    assert [p["name"] for p in result.mapping["cluster"]["nodePools"]] == ["a10-1gpu"]


def test_dlrm_rejects_an_unknown_role_and_a_deletion_before_scheduling():
    text = (FIXTURES / "dlrm.csv").read_text().splitlines()
    text[1] = text[1].replace(",HN,", ",XN,")
    text[3] = text[3].replace("1000.4999", "120")
    errors = import_uploads("dlrm", [(io.StringIO("\n".join(text) + "\n"), "dlrm.csv")])
    assert errors == [
        {
            "file": "dlrm.csv",
            "line": 2,
            "column": 2,
            "message": "role: 'XN' is not in the mapping (mapped: HN, CN)",
        },
        {
            "file": "dlrm.csv",
            "line": 4,
            "column": 17,
            "message": "deletion_time: 120 is before 130",
        },
    ]


# ------------------------------------------------------------------ inventories
def test_pai_reads_a_headerless_machine_list_with_its_separate_header():
    result = import_trace(
        "pai", [FIXTURES / "pai_machine_spec.csv", FIXTURES / "pai_machine_spec.header"]
    )
    assert result.mapping["cluster"] == {
        "nodePools": [
            {
                "name": "p100-2gpu",
                "count": 2,
                "gpus": 2,
                "cpu": 64.0,
                "memory": 512.0,
                "labels": {"nvidia.com/gpu.product": "P100"},
            }
        ],
        "nodes": [
            {"name": "7399a758eb02bae1a3621236", "gpus": 0, "cpu": 96.0, "memory": 512.0},
            {
                "name": "cb5c703eae0a123ad25e480d",
                "gpus": 8,
                "cpu": 96.0,
                "memory": 512.0,
                "labels": {"nvidia.com/gpu.product": "V100M32"},
            },
        ],
    }
    assert result.mapping["workloads"] == []
    assert "CC BY 4.0" in result.mapping["description"]


def test_pai_without_the_header_file_uses_the_published_columns_and_says_so():
    result = import_trace("pai", [FIXTURES / "pai_machine_spec.csv"])
    assert result.counts["nodes"] == 4
    assert result.notes == [
        "no header file given: columns read as machine,gpu_type,cap_cpu,cap_mem,cap_gpu"
    ]


def test_pai_bad_value_points_at_the_line_of_the_headerless_file():
    text = "a1,CPU,96,512,0\nb2,P100,lots,512,2\n"
    errors = import_uploads("pai", [(io.StringIO(text), "m.csv")])
    assert errors == [
        {"file": "m.csv", "line": 2, "column": 3, "message": "cap_cpu: 'lots' is not a number"}
    ]


def test_spot_node_list_groups_models_and_keeps_one_offs():
    result = import_trace("spot", [FIXTURES / "spot_nodes.csv"])
    assert result.mapping["cluster"] == {
        "nodePools": [
            {
                "name": "a10-1gpu",
                "count": 2,
                "gpus": 1,
                "cpu": 128.0,
                "labels": {"nvidia.com/gpu.product": "A10"},
            }
        ],
        "nodes": [
            {
                "name": "spot-node-2",
                "gpus": 8,
                "cpu": 192.0,
                "labels": {"nvidia.com/gpu.product": "H800"},
            }
        ],
    }


# ------------------------------------------------------------------ our own format
@pytest.fixture(scope="module")
def native_csv():
    return import_trace(
        "csv", [FIXTURES / "nodes.csv", FIXTURES / "jobs.csv", FIXTURES / "classes.csv"]
    )


def test_csv_nodes_become_pools_or_named_nodes_with_labels_taints_and_spot(native_csv):
    assert native_csv.mapping["cluster"] == {
        "nodePools": [
            {
                "name": "gpu",
                "count": 3,
                "gpus": 8,
                "cpu": 96.0,
                "memory": 1024.0,
                "labels": {"zone": "a", "rack": "r1"},
            },
            {
                "name": "spot-gpu",
                "count": 2,
                "gpus": 8,
                "cpu": 96.0,
                "memory": 1024.0,
                "labels": {"zone": "b"},
                "taints": [{"key": "spot", "value": "true", "effect": "NoSchedule"}],
                "spot": True,
            },
        ],
        "nodes": [
            {"name": "big", "gpus": 8, "cpu": 128.0, "memory": 2048.0, "labels": {"zone": "a"}}
        ],
    }


def test_csv_rows_of_one_group_are_one_gang_workload(native_csv):
    train = named(native_csv, "train-a")
    assert train == {
        "name": "train-a",
        "kind": "training",
        "members": 2,
        "gpus": 8,
        "cpu": 32.0,
        "memory": 256.0,
        "priorityClassName": "low",
        "durationSeconds": 3600.0,
        "stopSeconds": 20,
        "startupSeconds": 300,
        "checkpoint": {"intervalSeconds": 600.0, "writeSeconds": 60},
        "recovery": {"model": "synchronous"},
        "controller": {"kind": "jobset"},
        "podGroup": {"minCount": 2},
    }


def test_csv_a_job_row_with_members_and_no_duration(native_csv):
    chat = named(native_csv, "chat")
    assert (chat["members"], chat["gpus"], chat["arrival"]) == (2, 2, 120.0)
    assert "durationSeconds" not in chat  # empty: runs to the horizon
    assert named(native_csv, "eval")["members"] == 4
    assert [c["name"] for c in native_csv.mapping["priorityClasses"]] == ["low", "high"]
    assert native_csv.mapping["horizonSeconds"] == 3600.0


def test_jsonl_is_the_same_format_one_record_per_line(native_csv):
    result = import_trace("jsonl", [FIXTURES / "cluster.jsonl"])
    assert named(result, "train-a")["podGroup"] == {"minCount": 2}
    assert named(result, "chat") == {
        **{k: v for k, v in named(native_csv, "chat").items() if k not in ("cpu", "memory")}
    }
    assert result.mapping["cluster"]["nodePools"][1]["taints"] == [
        {"key": "spot", "value": "true", "effect": "NoSchedule"}
    ]


def test_csv_group_rows_that_disagree_are_an_error():
    text = "name,arrival,gpus,group\nw-0,0,8,g\nw-1,10,8,g\n"
    errors = import_uploads(
        "csv", [(io.StringIO("name,gpus\nn,8\n"), "nodes.csv"), (io.StringIO(text), "jobs.csv")]
    )
    assert errors == [
        {
            "file": "jobs.csv",
            "line": 3,
            "column": 2,
            "message": "arrival: 10.0 disagrees with 0.0 on line 2 of the same group",
        }
    ]


def test_csv_an_undefined_priority_class_points_at_its_first_use():
    text = "name,arrival,gpus,priorityClass\nw,0,1,gold\n"
    errors = import_uploads(
        "csv", [(io.StringIO("name,gpus\nn,8\n"), "nodes.csv"), (io.StringIO(text), "jobs.csv")]
    )
    assert errors == [
        {
            "file": "jobs.csv",
            "line": 2,
            "column": 4,
            "message": "priorityClass: 'gold' is not defined (add a priorityClass "
            "record or classes.csv row)",
        }
    ]


def test_jsonl_errors_carry_the_column_of_the_bad_key():
    text = (
        '{"node": {"name": "n", "gpus": 8}}\n'
        '{"job": {"name": "w", "arrival": "soon", "gpus": 1}}\n'
        '{"jobs": {}}\n'
        '{"job": {"name": "x", \n'
    )
    errors = import_uploads("jsonl", [(io.BytesIO(text.encode()), "c.jsonl")])
    assert errors == [
        {"file": "c.jsonl", "line": 2, "column": 23, "message": "arrival: 'soon' is not a number"},
        {
            "file": "c.jsonl",
            "line": 3,
            "column": 1,
            "message": 'expected one of {"node": {...}}, {"job": {...}}, {"priorityClass": {...}}',
        },
        {
            "file": "c.jsonl",
            "line": 4,
            "column": 23,
            "message": "not JSON: Expecting property name enclosed in double quotes",
        },
    ]


def test_a_file_that_is_not_utf8_is_an_error_not_a_crash():
    errors = import_uploads("csv", [(io.BytesIO(b"name,gpus\nn\xff,8\n"), "nodes.csv")])
    assert errors[0]["file"] == "nodes.csv"
    assert "unreadable" in errors[0]["message"] or "UTF-8" in errors[0]["message"]


def test_an_unknown_format_is_an_error():
    with pytest.raises(TraceError, match="unknown format 'parquet'"):
        import_trace("parquet", [])


def test_an_unknown_column_or_field_is_a_typo_not_silently_dropped():
    errors = import_uploads("csv", [(io.StringIO("name,gpus,zone\nn,8,a\n"), "nodes.csv")])
    assert errors == [
        {
            "file": "nodes.csv",
            "line": 1,
            "column": 3,
            "message": "unknown column 'zone' for node records (known: name, gpus, "
            "cpu, memory, count, maxPods, labels, taints, spot)",
        }
    ]
    text = '{"job": {"name": "w", "arival": 0, "gpus": 1}}\n'
    errors = import_uploads("jsonl", [(io.StringIO(text), "c.jsonl")])
    assert errors[0] == {
        "file": "c.jsonl",
        "line": 1,
        "column": 23,
        "message": "arival: unknown field for job records (known: name, "
        "arrival, duration, gpus, cpu, memory, priorityClass, "
        "kind, members, group, groupSize, startupSeconds, "
        "checkpointIntervalSeconds, terminationGracePeriodSeconds, "
        "recovery)",
    }
