"""The placement-study mode of the spec (issue #18 §3): validation naming each field,
determinism, the study a spec describes, the numbers the web app stores, the openb
import that keeps fractional GPUs, and ``run`` / ``validate`` on such a spec."""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path
from typing import Any

import pytest

import scheduler_core as sc
from scheduler_core.placement_study import MILLI, run_study
from scheduler_core.spec import SpecError, parse_spec
from scheduler_core.study_spec import (
    paper_delta,
    policy_order,
    published,
    run_variant_study,
    study_of,
    study_record,
    study_seed,
    study_summary,
)
from scheduler_core.traces import ImportOptions, import_trace

ROOT = Path(__file__).resolve().parents[2]
FIXTURES = Path(__file__).parent / "fixtures" / "traces"
PRESET = "s17-placement-study"


def small(**changes: Any) -> dict[str, Any]:
    """A study small enough to run in milliseconds."""
    doc: dict[str, Any] = {
        "name": "small",
        "seed": 7,
        "replications": 3,
        "placementStudy": {"arrivedLoadPercent": 130},
        "cluster": {
            "nodePools": [
                {"name": "big", "count": 4, "gpus": 8, "gpuModel": "G2", "cpu": 96, "memory": 384},
                {"name": "t4", "count": 6, "gpus": 2, "gpuModel": "T4", "cpu": 32, "memory": 64},
            ]
        },
        "workloads": [
            {"name": "share", "members": 12, "gpuMilli": 300, "cpu": 4, "memory": 8},
            {"name": "whole", "members": 10, "gpus": 1, "cpu": 8, "memory": 16},
            {"name": "t4-only", "members": 3, "gpus": 2, "gpuModels": ["T4"], "cpu": 4},
            {"name": "cpu", "members": 4, "gpus": 0, "cpu": 16, "memory": 32},
        ],
        "variants": [
            {"name": "fgd", "placement": "FGD"},
            {"name": "best", "placement": "BestFit"},
            {"name": "random", "placement": "Random"},
        ],
    }
    doc.update(changes)
    return doc


def errors_of(doc: dict[str, Any]) -> dict[str, str]:
    with pytest.raises(SpecError) as caught:
        parse_spec(doc)
    return {e["path"]: e["message"] for e in caught.value.errors}


# ----------------------------------------------------------------------------- validation


def test_bad_study_input_names_every_field_at_once() -> None:
    doc = small(
        variants=[{"name": "x", "placement": "Nope", "preemption": "pod"}],
        events=[{"at": 10, "type": "drain", "nodes": ["big-0"]}],
        placementStudy={"arrivedLoadPercent": 130, "paperWorkload": "zzz"},
    )
    doc["cluster"]["nodePools"][0]["gpus"] = 16
    doc["workloads"][0] = {"name": "mig", "mig": {"1g.10gb": 1}}
    errors = errors_of(doc)
    assert "unknown GPU placement policy 'Nope'" in errors["variants[0].placement"]
    assert "never preempts" in errors["variants[0].preemption"]
    assert "not used in a placement study" in errors["events"]
    assert "no published results for 'zzz'" in errors["placementStudy.paperWorkload"]
    assert "at most 8 devices" in errors["cluster.nodePools[0].gpus"]
    assert "MIG" in errors["workloads[0].mig"]


@pytest.mark.parametrize("load", [0, -5, 401, "lots"])
def test_arrived_load_out_of_range_is_refused_at_its_field(load: Any) -> None:
    errors = errors_of(small(placementStudy={"arrivedLoadPercent": load}))
    assert list(errors) == ["placementStudy.arrivedLoadPercent"]


def test_a_study_with_no_gpu_anywhere_is_refused() -> None:
    doc = small(workloads=[{"name": "cpu", "members": 3, "gpus": 0}])
    assert "no workload requests a GPU" in errors_of(doc)["workloads"]
    doc = small()
    for pool in doc["cluster"]["nodePools"]:
        pool["gpus"] = 0
    assert "no GPU capacity" in errors_of(doc)["cluster"]


def test_cost_is_bounded_by_the_run_budget() -> None:
    limits = sc.Limits(max_run_seconds=1e-9)
    with pytest.raises(SpecError) as caught:
        parse_spec(small(), limits=limits)
    (error,) = caught.value.errors
    assert error["path"] == "replications"
    assert "LAB_MAX_RUN_SECONDS" in error["message"]


def test_the_replay_refuses_a_study_spec_naming_the_field() -> None:
    spec = parse_spec(small())
    with pytest.raises(SpecError) as caught:
        sc.simulate(spec, "fgd")
    assert caught.value.errors[0]["path"] == "placementStudy"


# ----------------------------------------------------------------------------- running


def test_the_study_of_a_spec_keeps_shares_models_and_counts() -> None:
    study = study_of(parse_spec(small()))
    assert len(study.nodes) == 10
    assert study.capacity_milli == (4 * 8 + 6 * 2) * MILLI
    assert len(study.pods) == 12 + 10 + 3 + 4
    shares = [p for p in study.pods if p.shared]
    assert len(shares) == 12
    assert {p.milli for p in shares} == {300}
    assert {p.models for p in study.pods if p.gpus == 2} == {("T4",)}
    assert study.nodes[0].cpu == 96_000
    assert study.nodes[0].memory == 384 * 1024


def test_runs_are_deterministic_and_replication_r_uses_seed_plus_r() -> None:
    spec = parse_spec(small())
    first = run_variant_study(spec, "fgd", [0, 1, 2])
    again = run_variant_study(spec, "fgd", [2, 0])
    assert [r.seed for r in first] == [7, 8, 9] == [study_seed(spec, r) for r in range(3)]
    assert study_record(first[2]) == study_record(again[0])
    assert study_record(first[0]) == study_record(again[1])
    direct = run_study(study_of(spec), "FGD", 8)
    assert study_record(direct) == study_record(first[1])
    assert study_record(first[0]) != study_record(first[1])  # the seed matters


def test_each_replication_records_its_curve_at_every_percent() -> None:
    spec = parse_spec(small())
    seen: list[int] = []
    (run,) = run_variant_study(spec, "best", [1], each=lambda r, _run: seen.append(r))
    record = study_record(run)
    assert seen == [1]
    # Whole percents, increasing; a percent no arrival landed near is left out (the
    # simulator's merge_alloc_discrete), which on ten nodes a 2-GPU pod can cause.
    assert record["load"][0] == 0
    assert record["load"] == sorted(set(record["load"]))
    assert set(record["load"]) <= set(range(131))
    assert len(record["load"]) > 100
    assert all(0 <= a <= 100 for a in record["allocation"])
    # A percent with no record of its own averages those of k-1..k+1 (arrived shares
    # below k + 1.5 %), and a pod's allocation never exceeds what has arrived.
    assert all(a < k + 1.5 for k, a in zip(record["load"], record["allocation"], strict=True))
    if record["load"][-1] == 130:
        assert record["allocationAtLoad"] == record["allocation"][-1]
    assert record["policy"] == "BestFit"
    assert record["seed"] == 8
    json.dumps(record)  # stored as JSON as it is


def test_the_summary_spreads_seeds_per_load() -> None:
    records = [
        {"load": [0, 1, 2], "allocation": [0.0, 1.0, 2.0], "allocationAtLoad": 2.0,
         "arrivedLoadPercent": 2, "failed": 1},
        {"load": [0, 1, 2], "allocation": [0.0, 0.5, 1.0], "allocationAtLoad": 1.0,
         "arrivedLoadPercent": 2, "failed": 2},
    ]  # fmt: skip
    summary = study_summary(records)
    assert summary["load"] == [0, 1, 2]
    assert summary["mean"] == [0.0, 0.75, 1.5]
    assert summary["min"] == [0.0, 0.5, 1.0]
    assert summary["max"] == [0.0, 1.0, 2.0]
    at = summary["atLoad"]
    assert at["mean"] == 1.5
    assert at["n"] == 2
    assert at["sd"] == 0.5
    assert at["min"] == 1.0
    assert at["ci95"] == pytest.approx(12.706 * 0.7071 / 1.4142, abs=0.01)
    assert summary["failed"] == 3
    assert paper_delta(summary, {"mean": 1.25, "sd": 0.1, "n": 10}) == 0.25
    assert paper_delta(summary, None) is None
    low = {**summary, "atLoad": {**at, "mean": 0.5}}
    assert policy_order({"a": low, "b": summary}) == ["b", "a"]


def test_the_preset_runs_every_paper_policy_within_bounds() -> None:
    spec = sc.get_preset(PRESET).spec()
    assert spec.placement_study is not None
    assert PRESET not in {p.id for p in sc.list_presets()}  # replay callers never see it
    assert PRESET in {p.id for p in sc.list_presets(studies=True)}
    for name in sc.variant_names(spec):
        summary = study_summary([study_record(r) for r in run_variant_study(spec, name, [0, 1])])
        assert 80 < summary["atLoad"]["mean"] <= 100, name


# ----------------------------------------------------------------------------- import


def test_openb_import_for_a_study_keeps_fractional_gpus() -> None:
    result = import_trace(
        "openb",
        [FIXTURES / "openb_nodes.csv", FIXTURES / "openb_pods.csv"],
        ImportOptions(placement_study=120),
    )
    mapping = result.mapping
    study = mapping["placementStudy"]
    assert study["arrivedLoadPercent"] == 120
    assert len(study["podOrder"]) == 6  # the file's order (test_study_import_order.py)
    assert set(study) == {"arrivedLoadPercent", "podOrder", "nodeOrder"}
    shares = [w for w in mapping["workloads"] if "gpuMilli" in w]
    assert [w["gpuMilli"] for w in shares] == [460]
    assert sum(w.get("members", 1) for w in mapping["workloads"]) == 6  # Pending kept
    multi = next(w for w in mapping["workloads"] if w.get("gpus") == 2)
    assert multi["gpuModels"] == ["T4", "V100M16", "T4"]  # as the simulator keys it
    assert [v["placement"] for v in mapping["variants"]] == [
        "Random",
        "DotProduct",
        "GpuClustering",
        "GpuPacking",
        "BestFit",
        "FGD",
    ]
    models = {p.get("gpuModel") for p in mapping["cluster"]["nodePools"]}
    models |= {n.get("gpuModel") for n in mapping["cluster"].get("nodes", [])}
    assert {"G2", "T4", "V100M16"} <= models
    spec = result.spec
    assert spec.placement_study is not None
    assert spec.seed == 42
    assert all(r.pods for r in run_variant_study(spec, "FGD", [0]))


def test_the_paper_numbers_ship_with_the_core() -> None:
    assert len(published()) == 17
    assert set(published()["default"]) == {
        "Random", "DotProduct", "GpuClustering", "GpuPacking", "BestFit", "FGD"
    }  # fmt: skip


# ----------------------------------------------------------------------------- CLI


def cli(*args: str) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        [sys.executable, "-m", "scheduler_core", *args],
        cwd=ROOT,
        capture_output=True,
        text=True,
        timeout=300,
    )


def test_cli_run_and_validate_on_a_study_spec(tmp_path: Path) -> None:
    path = tmp_path / "study.json"
    path.write_text(json.dumps(small()))
    checked = cli("validate", str(path))
    assert checked.returncode == 0, checked.stderr
    assert "placement study, 9 run(s)" in checked.stdout
    ran = cli("run", str(path), "--json", "--quiet", "--variant", "fgd")
    assert ran.returncode == 0, ran.stderr
    document = json.loads(ran.stdout)
    (variant,) = document["variants"]
    assert variant["name"] == "fgd"
    assert [r["seed"] for r in variant["replications"]] == [7, 8, 9]
    spec = parse_spec(small())
    expected = [study_record(r) for r in run_variant_study(spec, "fgd", [0, 1, 2])]
    assert variant["replications"] == expected
    table = cli("run", str(path), "--quiet", "--seed", "3")
    assert table.returncode == 0
    assert "3 seed(s) from 3" in table.stdout
    bad = tmp_path / "bad.json"
    bad.write_text(json.dumps(small(placementStudy={"arrivedLoadPercent": 0})))
    refused = cli("run", str(bad))
    assert refused.returncode == 2
    assert "error: placementStudy.arrivedLoadPercent:" in refused.stderr
    assert "Traceback" not in refused.stderr


def test_random_stream_picks_the_simulators_numbers_or_numpys() -> None:
    """``placementStudy.randomStream``: ``go`` (the default) draws what the FGD simulator
    draws for the seed, ``numpy`` another stream; each is what ``run_study`` gives."""
    go_spec = parse_spec(small())
    numpy_spec = parse_spec(
        small(placementStudy={"arrivedLoadPercent": 130, "randomStream": "numpy"})
    )
    assert go_spec.placement_study is not None
    assert go_spec.placement_study.random_stream == "go"
    (go_run,) = run_variant_study(go_spec, "best", [0])
    (numpy_run,) = run_variant_study(numpy_spec, "best", [0])
    study = study_of(go_spec)
    assert study_record(go_run) == study_record(run_study(study, "BestFit", 7, stream="go"))
    assert study_record(numpy_run) == study_record(run_study(study, "BestFit", 7, stream="numpy"))
    assert go_run.arrived_milli != numpy_run.arrived_milli


def test_an_unknown_random_stream_is_refused_at_its_field() -> None:
    errors = errors_of(small(placementStudy={"arrivedLoadPercent": 130, "randomStream": "mt19937"}))
    assert list(errors) == ["placementStudy.randomStream"]
