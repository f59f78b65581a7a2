"""The CLI as a user runs it: a real process, its stdout, stderr and exit status."""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

import scheduler_core as sc


def cli(*args: str, stdin: str | None = None) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        [sys.executable, "-m", "scheduler_core", *args],
        input=stdin,
        capture_output=True,
        text=True,
        timeout=120,
        check=False,
    )


def test_presets_prints_one_preset_per_line_id_first() -> None:
    result = cli("presets")
    assert result.returncode == 0
    ids = [line.split("\t")[0] for line in result.stdout.splitlines()]
    assert ids == [p.id for p in sc.list_presets(studies=True)]
    assert all(i.startswith("s") and i.split("-")[0][1:].isdigit() for i in ids)


def test_run_json_has_one_summary_entry_per_metric() -> None:
    result = cli("run", "s3-grace-period", "--json", "--quiet")
    assert result.returncode == 0, result.stderr
    data = json.loads(result.stdout)
    assert [v["name"] for v in data["variants"]] == ["grace-300s", "grace-30s"]
    for variant in data["variants"]:
        assert list(variant["summary"]) == list(sc.SUMMARY_NAMES)
        assert variant["workloads"]
    assert data["variants"][1]["summary"]["time_to_victims_released"] == 30


def test_run_table_shows_variants_side_by_side() -> None:
    result = cli("run", "s3-grace-period", "--quiet")
    header = result.stdout.splitlines()[0].split()
    assert header == ["grace-300s", "grace-30s"]
    assert sc.metric_info("time_to_victims_released").title in result.stdout  # the registry's


def test_run_table_reads_never_and_flags_an_unserved_variant() -> None:
    """S8 `none`: the gang never becomes useful; it reads "never (> horizon)", not 0 or
    a dash, it is flagged, and the best mark goes to another variant."""
    lines = cli("run", "s8-gang-at-scale", "--quiet").stdout.splitlines()
    useful = next(line for line in lines if line.startswith("Time to group useful"))
    lost = next(line for line in lines if line.startswith("Lost work"))
    assert "never (> horizon)" in useful
    assert lost.split()[-1] == "6,000*"
    assert "0*" not in lost.split()
    assert any(line.startswith("! none: an urgent workload never became useful") for line in lines)


def test_metrics_command_prints_the_registry() -> None:
    data = json.loads(cli("metrics", "--json").stdout)
    assert [m["name"] for m in data["metrics"]] == list(sc.SUMMARY_NAMES)
    text = cli("metrics").stdout
    assert "goodput (ratio, higher is better)" in text


def test_run_with_a_seed_is_deterministic(tmp_path: Path) -> None:
    first = cli("run", "s5-loading-treadmill", "--json", "--quiet", "--seed", "7", "--events")
    second = cli("run", "s5-loading-treadmill", "--json", "--quiet", "--seed", "7", "--events")
    strip = [json.loads(r.stdout) for r in (first, second)]
    for data in strip:
        for variant in data["variants"]:
            for rep in variant["replications"]:
                rep.pop("wall_seconds")
    assert strip[0] == strip[1]


def test_validate_accepts_a_file(tmp_path: Path) -> None:
    path = tmp_path / "spec.yaml"
    path.write_text(sc.get_preset("s6-checkpoint-frequency").text)
    result = cli("validate", str(path))
    assert result.returncode == 0
    assert "2 variant(s)" in result.stdout


def test_bad_spec_is_one_line_exit_2_no_traceback() -> None:
    bad = "cluster: {nodes: [{name: n, gpus: 8}]}\nworkloads: [{name: w, gpus: 1.5}]\n"
    result = cli("validate", "-", stdin=bad)
    assert result.returncode == 2
    assert result.stderr.strip() == "error: workloads[0].gpus: must be a whole number, got 1.5"
    assert "Traceback" not in result.stderr


def test_unknown_preset_or_missing_file_is_exit_2() -> None:
    result = cli("run", "s99-nothing")
    assert result.returncode == 2
    assert result.stderr.startswith("error: preset: no preset 's99-nothing'")
    missing = cli("run", "missing/spec.yaml")
    assert missing.returncode == 2
    assert "no such file" in missing.stderr


def test_malformed_yaml_is_exit_2() -> None:
    result = cli("validate", "-", stdin="cluster: [\n")
    assert result.returncode == 2
    assert result.stderr.startswith("error: malformed YAML: line")


def test_schema_describes_every_top_level_field() -> None:
    result = cli("schema")
    assert result.returncode == 0
    schema = json.loads(result.stdout)
    assert {"cluster", "workloads", "priorityClasses", "variants", "grid", "queues"} <= set(
        schema["properties"]
    )
    assert "cluster" in schema["required"]
