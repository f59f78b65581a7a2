"""Same file, same seed, same result, whatever the path (issue #18 §4).

``placement-study`` reads the openb CSVs straight into a Study; the workers run the spec
the openb importer writes (``--placement-study``), which merges pods of one shape into a
workload and nodes of one shape into a pool. The importer records the files' orders
(``placementStudy.podOrder`` / ``nodeOrder``), so the study a spec describes is the
files' study, pod for pod and node for node, and every seed's allocation record is
identical on both paths (docs/placement-study.md)."""

from __future__ import annotations

import random
from pathlib import Path

import pytest

from scheduler_core.placement_study import Study, StudyNode, load_openb_study, run_study
from scheduler_core.plugins.gpu_scoring import PAPER_POLICIES
from scheduler_core.spec import SpecError, parse_spec
from scheduler_core.study_spec import run_variant_study, study_of, study_record
from scheduler_core.traces import ImportOptions, import_trace
from scheduler_core.traces.yamlout import dump_spec

TRACES = Path(__file__).resolve().parents[2].parent / "shared" / "traces" / "alibaba-gpu-v2023"
NODE_SHAPES = [
    (64000, 262144, 2, "P100"),
    (96000, 786432, 8, "G2"),
    (32000, 131072, 1, "T4"),
    (96000, 393216, 8, "V100M32"),
    (128000, 524288, 0, ""),
]
POD_SHAPES = [
    (4000, 15258, 1, 460, "G2"),
    (8000, 30517, 1, 1000, ""),
    (12000, 61035, 2, 1000, "T4|V100M32|T4"),
    (2000, 4096, 0, 0, ""),
    (6000, 24000, 1, 250, ""),
    (16000, 65536, 8, 1000, "G2"),
    (1000, 2048, 1, 500, "V100M32"),
]


def write_files(tmp_path: Path, nodes: int = 40, pods: int = 300) -> tuple[Path, Path]:
    """Interleaved shapes: repeated node shapes far apart, a one-off node (a named node,
    after every pool in the spec), pods whose shapes recur in no particular order."""
    rng = random.Random(5)
    node_rows = ["sn,cpu_milli,memory_mib,gpu,model"]
    for i in range(nodes):
        cpu, memory, gpus, model = rng.choice(NODE_SHAPES[:4]) if i != 7 else NODE_SHAPES[4]
        node_rows.append(f"node-{i:03d},{cpu},{memory},{gpus},{model}")
    node_rows.append("node-odd,48000,100000,4,T4")
    pod_rows = ["name,cpu_milli,memory_mib,num_gpu,gpu_milli,gpu_spec"]
    for i in range(pods):
        cpu, memory, gpus, milli, spec = rng.choice(POD_SHAPES)
        pod_rows.append(f"pod-{i},{cpu},{memory},{gpus},{milli},{spec}")
    nodes_path, pods_path = tmp_path / "nodes.csv", tmp_path / "openb_pod_list_mix.csv"
    nodes_path.write_text("\n".join(node_rows) + "\n", encoding="utf-8")
    pods_path.write_text("\n".join(pod_rows) + "\n", encoding="utf-8")
    return nodes_path, pods_path


def unnamed(nodes: list[StudyNode]) -> list[tuple[int, int, int, str]]:
    """Node names differ (``g2-8gpu-3`` against ``node-012``) and decide nothing."""
    return [(n.cpu, n.memory, n.gpus, n.model) for n in nodes]


def assert_same_study(files: Study, imported: Study) -> None:
    assert unnamed(imported.nodes) == unnamed(files.nodes)
    assert imported.pods == files.pods
    assert imported.load_percent == files.load_percent


def test_the_imported_study_is_the_files_study_pod_for_pod(tmp_path: Path) -> None:
    nodes, pods = write_files(tmp_path)
    files = load_openb_study(nodes, pods)
    result = import_trace("openb", [nodes, pods], ImportOptions(placement_study=130.0))
    study = result.mapping["placementStudy"]
    assert len(result.mapping["workloads"]) == len(POD_SHAPES)  # still merged
    assert len(study["podOrder"]) == 300
    assert sorted(study["nodeOrder"]) == list(range(41))
    assert_same_study(files, study_of(result.spec))
    for policy in PAPER_POLICIES:
        imported = run_variant_study(result.spec, policy, [0, 1])
        cli = [run_study(files, policy, seed) for seed in (42, 43)]
        assert [study_record(r) for r in imported] == [study_record(r) for r in cli], policy


def test_the_orders_survive_the_yaml_the_importer_writes(tmp_path: Path) -> None:
    nodes, pods = write_files(tmp_path, nodes=12, pods=80)
    result = import_trace("openb", [nodes, pods], ImportOptions(placement_study=130.0))
    text = dump_spec(result.mapping)
    assert len(text.splitlines()) < 40  # the orders are wrapped lists, not a line a pod
    import yaml

    again = parse_spec(yaml.safe_load(text))
    assert_same_study(load_openb_study(nodes, pods), study_of(again))


def test_an_order_that_changes_the_population_is_refused(tmp_path: Path) -> None:
    nodes, pods = write_files(tmp_path, nodes=6, pods=30)
    mapping = import_trace("openb", [nodes, pods], ImportOptions(placement_study=130.0)).mapping
    study = mapping["placementStudy"]
    for key, bad, message in [
        ("podOrder", study["podOrder"][:-1], "time(s), but it has"),
        ("podOrder", [*study["podOrder"][:-1], 99], "index 99 is not a workload"),
        ("nodeOrder", [study["nodeOrder"][1], *study["nodeOrder"][1:]], "once"),
    ]:
        with pytest.raises(SpecError) as caught:
            parse_spec({**mapping, "placementStudy": {**study, key: bad}})
        errors = {e["path"]: e["message"] for e in caught.value.errors}
        assert message in errors[f"placementStudy.{key}"], errors
    # a variant that changes members must bring its own order: named under its set
    shape = mapping["workloads"][0]["name"]
    variant = {"name": "more", "set": {f"workloads.{shape}.members": 1000}}
    with pytest.raises(SpecError) as caught:
        parse_spec({**mapping, "variants": [*mapping["variants"], variant]})
    assert any("podOrder" in e["path"] for e in caught.value.errors)


def test_a_spec_without_orders_keeps_the_workloads_order(tmp_path: Path) -> None:
    nodes, pods = write_files(tmp_path, nodes=6, pods=30)
    mapping = import_trace("openb", [nodes, pods], ImportOptions(placement_study=130.0)).mapping
    plain = {k: v for k, v in mapping["placementStudy"].items() if not k.endswith("Order")}
    study = study_of(parse_spec({**mapping, "placementStudy": plain}))
    counts = [w.get("members", 1) for w in mapping["workloads"]]
    assert len(study.pods) == sum(counts)
    assert study.pods[: counts[0]] == [study.pods[0]] * counts[0]


@pytest.mark.skipif(not TRACES.is_dir(), reason="needs ../shared/traces (no licence to ship)")
def test_the_real_openb_trace_gives_the_same_records_on_both_paths() -> None:
    nodes = TRACES / "openb_node_list_gpu_node.csv"
    pods = TRACES / "openb_pod_list_default.csv"
    files = load_openb_study(nodes, pods)
    result = import_trace("openb", [nodes, pods], ImportOptions(placement_study=130.0))
    assert_same_study(files, study_of(result.spec))
    for policy in PAPER_POLICIES:
        (imported,) = run_variant_study(result.spec, policy, [0])
        assert study_record(imported) == study_record(run_study(files, policy, 42)), policy
