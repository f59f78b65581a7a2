"""`python -m scheduler_core import`: spec YAML out, errors as file:line:column, exit 2."""

from __future__ import annotations

import json
from pathlib import Path

import pytest
import yaml

from scheduler_core import parse_spec
from scheduler_core.cli import main

FIXTURES = Path(__file__).parent / "fixtures" / "traces"
OPENB = [str(FIXTURES / "openb_nodes.csv"), str(FIXTURES / "openb_pods.csv")]


def test_import_writes_a_spec_yaml_to_stdout_with_the_notes_as_comments(capsys):
    assert main(["import", "openb", *OPENB]) == 0
    out, err = capsys.readouterr()
    assert out.startswith(
        "# python -m scheduler_core import openb openb_nodes.csv "
        "openb_pods.csv\n# nodes 5, pods 6, workloads 4,"
    )
    spec = parse_spec(out)
    assert [w.name for w in spec.workloads] == [
        "openb-pod-0000",
        "openb-pod-0001",
        "openb-pod-0003",
        "openb-pod-0005",
    ]
    assert err.startswith("imported openb: nodes 5, pods 6, workloads 4")
    assert "note: 1 pod(s) asked for a fraction of a GPU" in err


def test_import_writes_yaml_or_json_files(tmp_path, capsys):
    for name in ("spec.yaml", "spec.json"):
        target = tmp_path / name
        assert main(["import", "openb", *OPENB, "-o", str(target)]) == 0
        assert parse_spec(target.read_text()).name == "openb-replay"
    assert json.loads((tmp_path / "spec.json").read_text())["horizonSeconds"] == 3500.0
    assert capsys.readouterr().out == ""


def test_errors_are_file_line_column_lines_and_exit_2(capsys):
    bad = str(FIXTURES / "openb_pods_bad.csv")
    assert main(["import", "openb", OPENB[0], bad]) == 2
    out, err = capsys.readouterr()
    assert out == ""
    assert err.splitlines() == [
        f"{bad}:3:4: num_gpu: '1.5' is not a whole number",
        f"{bad}:4:7: qos: 'XX' is not in the QoS mapping (mapped: LS, Guaranteed, Burstable, "
        "BE); add it with --qos-map",
        f"{bad}:5:10: deletion_time: 900 is before creation_time 1100",
    ]


def test_a_missing_file_is_an_error_line_not_a_traceback(capsys):
    assert main(["import", "csv", "/nonexistent/jobs.csv"]) == 2
    assert capsys.readouterr().err == "/nonexistent/jobs.csv:0:0: No such file or directory\n"


def test_the_qos_mapping_is_shown_edited_and_read_back(tmp_path, capsys):
    assert main(["import", "openb", "--show-qos-map", "--qos-map", "BE=low:0"]) == 0
    shown = capsys.readouterr().out
    document = yaml.safe_load(shown)
    assert document["qos"]["BE"] == {"priorityClass": "low", "kind": "batch"}
    path = tmp_path / "qos.yaml"
    path.write_text(shown.replace("value: 0", "value: 7"))
    assert main(["import", "openb", *OPENB, "--qos-map", str(path)]) == 0
    spec = parse_spec(capsys.readouterr().out)
    assert {c.name: c.value for c in spec.priority_classes}["low"] == 7


def test_a_bad_qos_assignment_is_one_error_line(capsys):
    assert main(["import", "openb", *OPENB, "--qos-map", "BE=brand-new"]) == 2
    assert capsys.readouterr().err == (
        "error: 'BE=brand-new': class 'brand-new' is new, give it a value (BE=brand-new:VALUE)\n"
    )


def test_defaults_are_shown_and_overridden(capsys):
    assert (
        main(
            [
                "import",
                "openb",
                "--show-defaults",
                "--defaults",
                "batch.startupSeconds=5,batch.recovery=elastic",
            ]
        )
        == 0
    )
    table = yaml.safe_load(capsys.readouterr().out)
    assert table["batch"]["startupSeconds"] == 5.0
    assert table["batch"]["recovery"] == "elastic"
    assert main(["import", "openb", *OPENB, "--defaults", "batch.startupSeconds=5"]) == 0
    spec = parse_spec(capsys.readouterr().out)
    assert next(w for w in spec.workloads if w.name == "openb-pod-0003").startup_seconds == 5.0


def test_a_bad_default_names_the_key(capsys):
    assert main(["import", "openb", *OPENB, "--defaults", "batch.startup=5"]) == 2
    assert capsys.readouterr().err.startswith("error: batch.startup: unknown field 'startup'")


def test_scenario_flags_add_the_urgent_group_and_variants(capsys):
    assert (
        main(
            [
                "import",
                "openb",
                *OPENB,
                "--inject-urgent",
                "1x8@60",
                "--spot-reclaim",
                "50%@120",
                "--compare-qos-map",
                "BE=best-effort:20000",
                "--compare-policies",
                "none",
            ]
        )
        == 0
    )
    spec = parse_spec(capsys.readouterr().out)
    assert spec.workloads[-1].name == "urgent"
    assert [v.name for v in spec.variants] == [
        "recorded",
        "spot-reclaim-50pct-at-120s",
        "qos-alternative",
        "preemption-none",
    ]


def test_no_files_is_an_error_that_says_which(capsys):
    assert main(["import", "pai"]) == 2
    assert capsys.readouterr().err == (
        "error: name the pai file(s): pai_machine_spec.csv [pai_machine_spec.header]\n"
    )


@pytest.mark.parametrize("flag", ["--show-qos-map", "--compare-qos-map=BE=x:1"])
def test_formats_without_qos_labels_say_so(flag, capsys):
    assert main(["import", "csv", str(FIXTURES / "nodes.csv"), flag]) == 2
    assert "QoS labels" in capsys.readouterr().err


def test_compress_and_sample_reshape_the_recorded_load(capsys):
    """Issue 16 §3: the recorded load is light; arrivals N times as dense, or fewer
    workloads, each said in the notes and reproducible with the seed."""
    assert main(["import", "openb", *OPENB]) == 0
    base = parse_spec(capsys.readouterr().out)
    assert (
        main(
            [
                "import",
                "openb",
                *OPENB,
                "--compress",
                "4",
                "--sample",
                "2",
                "--seed",
                "1",
                "--horizon",
                "1h",
            ]
        )
        == 0
    )
    out = capsys.readouterr().out
    spec = parse_spec(out)

    assert len(spec.workloads) == 2
    by_name = {w.name: w for w in base.workloads}
    assert all(w.arrival == pytest.approx(by_name[w.name].arrival / 4) for w in spec.workloads)
    assert spec.horizon_seconds == 3600
    assert "arrivals compressed x4" in out
    assert "sampled 2 of 4 workloads (seed 1)" in out
    assert main(["import", "openb", *OPENB, "--sample", "2", "--seed", "1"]) == 0
    again = parse_spec(capsys.readouterr().out)
    assert [w.name for w in again.workloads] == [w.name for w in spec.workloads]


@pytest.mark.parametrize(
    ("args", "message"),
    [
        (["--compress", "0"], "--compress: compress must be above 0"),
        (["--sample", "0"], "--sample: sample must keep at least 1 workload"),
    ],
)
def test_a_bad_load_option_is_one_error_line(capsys, args, message):
    assert main(["import", "openb", *OPENB, *args]) == 2
    assert message in capsys.readouterr().err


def test_a_duration_option_takes_people_s_durations(capsys):
    with pytest.raises(SystemExit) as stop:  # argparse's usage error: exit 2, one line
        main(["import", "openb", *OPENB, "--horizon", "soon"])
    assert stop.value.code == 2
    assert "argument --horizon: 'soon' is not a duration" in capsys.readouterr().err
