"""Every bad input gets an error naming the field, never a traceback (issue #10 §2): the
one core document loader and the spec's own checks, then the CLI as a user runs it."""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path
from typing import Any

import pytest

import scheduler_core as sc

NODES = '"cluster": {"nodes": [{"name": "n"}]}'


def errors_of(document: Any) -> list[dict[str, str]]:
    with pytest.raises(sc.SpecError) as caught:
        sc.parse_spec(document)
    return caught.value.errors


def cli(*args: str, stdin: str | None = None) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        [sys.executable, "-m", "scheduler_core", *args],
        input=stdin,
        capture_output=True,
        text=True,
        timeout=120,
        check=False,
    )


@pytest.mark.parametrize(
    "text",
    [
        '{"horizonSeconds": 1e999, ' + NODES + "}",
        "horizonSeconds: .inf\ncluster: {nodes: [{name: n}]}\n",
        "horizonSeconds: .nan\ncluster: {nodes: [{name: n}]}\n",
    ],
)
def test_infinite_and_nan_durations_are_refused_naming_the_field(text: str) -> None:
    assert [e["path"] for e in errors_of(text)] == ["horizonSeconds"]


def test_json_nan_literals_are_not_json() -> None:
    [error] = errors_of('{"horizonSeconds": NaN, ' + NODES + "}")
    assert error["message"] == "malformed JSON: NaN is not a JSON number"


def test_json_is_read_as_json_so_exponents_are_numbers() -> None:
    assert sc.load_document('{"a": 1e308, "b": 1e3}') == {"a": 1e308, "b": 1000.0}
    spec = sc.parse_spec('{"horizonSeconds": 1e3, ' + NODES + "}")
    assert spec.horizon_seconds == 1000.0


@pytest.mark.parametrize(
    ("value", "what"), [("a\x00b", "a NUL character"), ("a\ud800b", "a lone surrogate")]
)
def test_nul_and_lone_surrogates_are_refused_in_any_string(value: str, what: str) -> None:
    data = {"cluster": {"nodes": [{"name": "n", "labels": {"zone": value}}]}}
    [error] = errors_of(data)
    assert error == {
        "path": "cluster.nodes[0].labels.zone",
        "message": f"contains {what}, which text may not contain",
    }
    text = json.dumps(data)  # escaped as \\u0000 / \\ud800 in JSON text
    assert errors_of(text)[0]["path"] == "cluster.nodes[0].labels.zone"


def test_a_nul_in_yaml_text_is_refused_with_its_line() -> None:
    [error] = errors_of("name: x\ndescription: a\x00b\n")
    assert error["message"] == "a NUL character at line 2: text may not contain it"


def test_100000_deep_json_is_refused_not_a_recursion_error() -> None:
    deep = (
        '{"cluster": {"nodes": [{"name": "n"}]}, "grid": {"x": '
        + "[" * 100_000
        + "]" * 100_000
        + "}}"
    )
    [error] = errors_of(deep)
    assert "nested more than 64 levels deep" in error["message"]


def test_deep_parsed_data_is_refused_with_where_it_is() -> None:
    value: Any = 1
    for _ in range(100):
        value = [value]
    [error] = errors_of({"cluster": {"nodes": [{"name": "n"}]}, "description": value})
    assert error["message"] == "nested more than 64 levels deep"
    assert error["path"].startswith("description[0][0]")


@pytest.mark.parametrize("seed", [2**63, 2**64, 10**30])
def test_seeds_that_do_not_fit_64_bits_are_refused(seed: int) -> None:
    [error] = errors_of({"seed": seed, "cluster": {"nodes": [{"name": "n"}]}})
    assert error["path"] == "seed"


def test_a_duplicate_yaml_key_is_refused_with_its_line() -> None:
    [error] = errors_of("cluster: {nodes: [{name: n}]}\nhorizonSeconds: 60\nhorizonSeconds: 120\n")
    assert error["message"] == "duplicate key 'horizonSeconds' at line 3, column 1"


def test_a_duplicate_json_key_is_refused_with_its_line() -> None:
    [error] = errors_of('{\n  "horizonSeconds": 60,\n  ' + NODES + ',\n  "horizonSeconds": 120\n}')
    assert error["message"] == "duplicate key 'horizonSeconds' at line 4"


def test_a_huge_integer_is_an_error_not_a_crash() -> None:
    [error] = errors_of('{"seed": ' + "9" * 5000 + ", " + NODES + "}")
    assert error["message"].startswith("malformed JSON")


# ------------------------------------------------------------------------ the CLI
def test_cli_reads_a_json_file_as_json(tmp_path: Path) -> None:
    path = tmp_path / "spec.json"
    path.write_text('{"horizonSeconds": 1e308, ' + NODES + "}")
    result = cli("validate", str(path))
    assert result.returncode == 2
    assert result.stderr.startswith("error: horizonSeconds: Input should be less than")


def test_cli_refuses_a_duplicate_key_with_exit_2(tmp_path: Path) -> None:
    path = tmp_path / "spec.json"
    path.write_text('{"seed": 1, "seed": 2, ' + NODES + "}")
    result = cli("validate", str(path))
    assert (result.returncode, result.stderr) == (2, "error: duplicate key 'seed' at line 1\n")


def test_cli_run_json_on_an_infinite_duration_exits_2_naming_the_field() -> None:
    result = cli(
        "run",
        "-",
        "--json",
        "--quiet",
        stdin="cluster: {nodes: [{name: n}]}\nworkloads: [{name: w, durationSeconds: .inf}]\n",
    )
    assert result.returncode == 2
    assert result.stderr.startswith("error: workloads[0].durationSeconds:")
    assert "Traceback" not in result.stderr


def test_cli_refuses_a_seed_flag_that_does_not_fit() -> None:
    result = cli("run", "s3-grace-period", "--seed", str(2**63), "--quiet")
    assert result.returncode == 2
    assert result.stderr.startswith("error: --seed: must be between 0 and")


def test_cli_applies_the_lab_max_settings_from_the_environment() -> None:
    env = {"LAB_MAX_TASKS": "1", "PATH": "/usr/bin:/bin"}
    result = subprocess.run(
        [sys.executable, "-m", "scheduler_core", "validate", "s3-grace-period"],
        capture_output=True,
        text=True,
        timeout=60,
        env=env,
        check=False,
    )
    assert result.returncode == 2
    assert (
        "2 simulations (variants x replications) is above the limit of 1 (LAB_MAX_TASKS)"
        in result.stderr
    )


def test_cli_validate_prints_the_cost_estimate() -> None:
    result = cli("validate", "s8-gang-at-scale")
    assert result.returncode == 0, result.stderr
    estimate = result.stdout.splitlines()[-1]
    assert estimate.startswith("estimate: ~")
    assert "3 simulation(s)" in estimate
    assert "MB per replication" in estimate
