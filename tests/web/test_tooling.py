"""The developer tooling of issue 12 §4: the core ships its types, and a test run that
runs no test fails (make would otherwise turn pytest's exit 5 into a bare "Error 2" that
CI cannot tell from a failure it understands, or a wrapper could let it pass)."""

from __future__ import annotations

import shutil
import subprocess
import sys
import tomllib
from pathlib import Path

import pytest

import scheduler_core

ROOT = Path(__file__).resolve().parents[2]


def test_scheduler_core_ships_py_typed() -> None:
    """PEP 561: without the marker (and its package-data entry) a user's mypy ignores
    the core's annotations."""
    assert (Path(scheduler_core.__file__).parent / "py.typed").is_file()
    config = tomllib.loads((ROOT / "pyproject.toml").read_text())
    assert "py.typed" in config["tool"]["setuptools"]["package-data"]["scheduler_core"]


def _make_pytest(args: str) -> subprocess.CompletedProcess[str]:
    """The Makefile's own ``pytest`` recipe, with these arguments, on this interpreter."""
    probe = f"probe: ; $(call pytest,,{args})"
    return subprocess.run(
        ["make", "--no-print-directory", f"PY={sys.executable}", "--eval", probe, "probe"],
        cwd=ROOT,
        capture_output=True,
        text=True,
        timeout=120,
        check=False,
    )


@pytest.mark.skipif(shutil.which("make") is None, reason="needs GNU make")
def test_make_fails_with_a_message_when_pytest_runs_no_test() -> None:
    this = Path(__file__).relative_to(ROOT)
    result = _make_pytest(f"{this} -q -p no:cacheprovider -k no_such_test_anywhere")
    assert result.returncode != 0
    assert "pytest ran no tests" in result.stderr


@pytest.mark.skipif(shutil.which("make") is None, reason="needs GNU make")
def test_make_passes_a_run_that_ran_tests() -> None:
    this = Path(__file__).relative_to(ROOT)
    result = _make_pytest(f"{this} -q -p no:cacheprovider -k py_typed")
    assert result.returncode == 0, result.stdout + result.stderr
    assert "1 passed" in result.stdout
