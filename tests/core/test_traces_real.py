"""The real traces in ../shared/traces (not in the repository: licences). Skipped when absent."""

from __future__ import annotations

from pathlib import Path

import pytest

from scheduler_core.traces import ImportOptions, TraceFile, import_trace

TRACES = Path(__file__).parents[2].parent / "shared" / "traces"
OPENB = TRACES / "alibaba-gpu-v2023"
DLRM = TRACES / "alibaba-dlrm-gpu-v2025" / "disaggregated_DLRM_trace.csv"
PAI = TRACES / "alibaba-pai-gpu-v2020"
SPOT = TRACES / "alibaba-spot-gpu-v2026" / "node_info_df.csv"


def needs(*paths: Path) -> None:
    missing = [p for p in paths if not p.exists()]
    if missing:
        pytest.skip(f"real trace not available: {missing[0]} (see shared/traces/README.md)")


@pytest.fixture(scope="module")
def openb():
    nodes, pods = OPENB / "openb_node_list_all_node.csv", OPENB / "openb_pod_list_default.csv"
    needs(nodes, pods)
    return import_trace("openb", [nodes, pods])


def test_openb_has_1523_nodes_and_8152_pods(openb):
    assert openb.counts["nodes"] == 1523
    assert openb.counts["pods"] == 8152
    assert (
        sum(p.count for p in openb.spec.cluster.node_pools) + len(openb.spec.cluster.nodes) == 1523
    )
    assert (
        sum(p.count * p.gpus for p in openb.spec.cluster.node_pools)
        + sum(n.gpus for n in openb.spec.cluster.nodes)
        == 6212
    )


def test_openb_every_pod_is_a_workload_or_counted_out(openb):
    counts = openb.counts
    assert counts["skipped_pending"] == 897
    left_out = (
        counts["skipped_pending"]
        + counts["skipped_ended_before_the_start"]
        + counts["skipped_after_the_horizon"]
    )
    assert counts["workloads"] + left_out == 8152
    assert len(openb.spec.workloads) == counts["workloads"]


def test_openb_replays_the_window_not_115_idle_days(openb):
    assert openb.spec.horizon_seconds == 12_902_960 - 9_964_972
    late = max(w.arrival for w in openb.spec.workloads)
    assert late <= openb.spec.horizon_seconds


@pytest.mark.parametrize("variant", ["cpu037", "gpushare40", "gpuspec33"])
def test_openb_derived_pod_lists_import_unsorted_and_with_gpu_specs(variant):
    nodes, pods = OPENB / "openb_node_list_gpu_node.csv", OPENB / f"openb_pod_list_{variant}.csv"
    needs(nodes, pods)
    result = import_trace("openb", [nodes, pods])
    assert result.counts["nodes"] == 1213
    arrivals = [w.arrival for w in result.spec.workloads]
    assert arrivals == sorted(arrivals)


def test_dlrm_imports_every_instance_with_a_derived_or_given_cluster():
    needs(DLRM, SPOT)
    derived = import_trace("dlrm", [DLRM])
    assert derived.counts["pods"] == 23871
    assert derived.counts["workloads"] == 23871
    given = import_trace(
        "dlrm", [DLRM], ImportOptions(nodes=("spot", (TraceFile.from_path(SPOT),)))
    )
    assert given.counts["nodes"] == 4278


def test_pai_machine_list_with_its_header():
    needs(PAI / "pai_machine_spec.csv", PAI / "pai_machine_spec.header")
    result = import_trace("pai", [PAI / "pai_machine_spec.header", PAI / "pai_machine_spec.csv"])
    assert result.counts["nodes"] == 1897
    cluster = result.spec.cluster
    assert (
        sum(p.count * p.gpus for p in cluster.node_pools) + sum(n.gpus for n in cluster.nodes)
        == 6742
    )


def test_spot_node_list():
    needs(SPOT)
    result = import_trace("spot", [SPOT])
    cluster = result.spec.cluster
    assert result.counts["nodes"] == 4278
    assert (
        sum(p.count * p.gpus for p in cluster.node_pools) + sum(n.gpus for n in cluster.nodes)
        == 10412
    )
