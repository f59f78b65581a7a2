"""scheduler_core is a plain library: it must never import Django (architecture.md)."""

from __future__ import annotations

import ast
import subprocess
import sys
from pathlib import Path

import scheduler_core

FRAMEWORKS = ("django", "rest_framework", "celery", "plotly")
CORE = Path(scheduler_core.__file__).parent


def test_no_module_in_scheduler_core_imports_a_web_framework() -> None:
    offenders = []
    for path in CORE.rglob("*.py"):
        tree = ast.parse(path.read_text(encoding="utf-8"))
        for node in ast.walk(tree):
            names = []
            if isinstance(node, ast.Import):
                names = [a.name for a in node.names]
            elif isinstance(node, ast.ImportFrom) and node.module:
                names = [node.module]
            offenders += [f"{path.name}: {n}" for n in names if n.split(".")[0] in FRAMEWORKS]
    assert offenders == []


def test_importing_and_running_the_core_loads_no_framework() -> None:
    code = (
        "import sys, scheduler_core as sc; "
        "sc.simulate(sc.get_preset('s3-grace-period').spec(), 'grace-30s'); "
        f"print(sorted(m for m in sys.modules if m.split('.')[0] in {FRAMEWORKS!r}))"
    )
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True)
    assert out.stdout.strip() == "[]"
