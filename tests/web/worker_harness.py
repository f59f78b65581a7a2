"""A real Celery worker process whose simulations take a set time, for the tests that
kill a worker mid-task: ``python tests/web/worker_harness.py worker -Q ...``.

Only the duration and the appetite are staged: before simulating, it sleeps
SLOW_SIMULATION_SECONDS in steps, reporting progress through the same callback the
simulator uses (so heartbeats are real), and holds HOG_MEMORY_MB of memory in 16 MB
blocks (as a runaway simulation would); then it runs the real ``scheduler_core.simulate``.
"""

from __future__ import annotations

import os
import sys
import time
from pathlib import Path
from typing import Any

# Run as a script, Python puts tests/web/ first on the path; the repository root belongs
# there instead (a module here must never shadow the standard library's).
sys.path[0] = str(Path(__file__).resolve().parents[2])
os.environ.setdefault("DJANGO_SETTINGS_MODULE", "config.settings.base")

import django  # noqa: E402

django.setup()

import scheduler_core as sc  # noqa: E402
from config.celery import app  # noqa: E402

_real_simulate = sc.simulate
STEPS = 20
BLOCK = 16 * 1024 * 1024


def _slow_simulate(*args: Any, progress: Any = None, **kwargs: Any) -> sc.ReplicationResult:
    seconds = float(os.environ.get("SLOW_SIMULATION_SECONDS", "0"))
    for step in range(STEPS if seconds else 0):
        time.sleep(seconds / STEPS)
        if progress is not None:
            progress(step / STEPS)
    held = [bytearray(BLOCK) for _ in range(int(os.environ.get("HOG_MEMORY_MB", "0")) // 16)]
    del held
    return _real_simulate(*args, progress=progress, **kwargs)


sc.simulate = _slow_simulate

if __name__ == "__main__":
    app.worker_main(sys.argv[1:])
