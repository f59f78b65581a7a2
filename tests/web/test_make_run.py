"""What a new user sees after ``make run`` (issue 16 §4): the URL and the login are the
last lines on the terminal (and come back now and then), the access log stays off it,
and the README's ``curl`` session works as written against that fresh stack."""

from __future__ import annotations

import os
import queue
import signal
import socket
import subprocess
import sys
import threading
import time
import urllib.request
from pathlib import Path

import pytest

from tests.web.live import ROOT, Stack, wait_for

pytestmark = [pytest.mark.worker, pytest.mark.slow, pytest.mark.django_db(transaction=True)]


def _free_port() -> int:
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        return sock.getsockname()[1]


def _lines(stream) -> queue.Queue[str]:
    """The process's output, line by line, readable with a timeout."""
    lines: queue.Queue[str] = queue.Queue()

    def pump() -> None:
        for line in iter(stream.readline, ""):
            lines.put(line.rstrip("\n"))

    threading.Thread(target=pump, daemon=True).start()
    return lines


def _read_until(lines: queue.Queue[str], needle: str, timeout: float) -> list[str]:
    seen: list[str] = []
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        try:
            seen.append(lines.get(timeout=max(0.05, deadline - time.monotonic())))
        except queue.Empty:
            break
        if needle in seen[-1]:
            return seen
    raise AssertionError(f"{needle!r} never printed; got:\n" + "\n".join(seen))


@pytest.fixture
def stack(tmp_path: Path):
    """A stack whose state lives in ``tmp_path/var``, as ``make run``'s lives in ``var/``."""
    stack = Stack(var_dir=tmp_path / "var")
    stack.var_dir.mkdir()
    try:
        yield stack
    finally:
        stack.stop_all()


def test_runlocal_prints_the_url_and_login_last_and_keeps_the_access_log_off(stack):
    stack.manage("ensure_local_superuser")
    port = _free_port()
    process = subprocess.Popen(
        [
            sys.executable,
            str(ROOT / "manage.py"),
            "runlocal",
            "--port",
            str(port),
            "--concurrency",
            "1",
            "--remind-every",
            "2",
        ],
        cwd=ROOT,
        env=stack.env(),
        stdout=subprocess.PIPE,
        stderr=subprocess.STDOUT,
        text=True,
        start_new_session=True,
    )
    stack.processes.append(process)
    lines = _lines(process.stdout)

    first = _read_until(lines, "Log in as admin / password", timeout=90)
    url = f"http://127.0.0.1:{port}/"
    assert any(url in line for line in first[-3:])
    # The URL works by the time it is printed.
    with urllib.request.urlopen(url + "accounts/login/", timeout=10) as response:
        assert response.status == 200

    again = _read_until(lines, "Log in as admin / password", timeout=30)

    assert any(url in line for line in again)
    # Nothing but the banner reaches the terminal once it is printed: no gunicorn line
    # (its start-up, its control socket), no broker warning from a request.
    banner = ("Disruption Lab: ", "Log in as ", "(logs: ")
    assert [line for line in again if not line.startswith(banner)] == []
    assert not any("GET /accounts/login/" in line for line in first + again)
    access_log = stack.var_dir / "access.log"
    wait_for(
        lambda: "GET /accounts/login/" in access_log.read_text(),
        timeout=10,
        what="the request in the access log",
    )
    os.kill(process.pid, signal.SIGTERM)
    assert process.wait(timeout=30) == 0


def _readme_curl_session() -> str:
    readme = (ROOT / "README.md").read_text()
    after = readme.split("A complete session with `curl`", 1)[1]
    return after.split("```", 2)[1]


def test_the_readme_curl_session_works_as_written_on_a_fresh_stack(stack, tmp_path):
    stack.manage("ensure_local_superuser")
    stack.manage("load_presets", "--owner", "admin")
    port = _free_port()
    stack.start_web(port)
    stack.start_worker(name="readme")
    wait_for(
        lambda: socket.socket().connect_ex(("127.0.0.1", port)) == 0,
        timeout=30,
        what="the web server",
        stack=stack,
    )
    session = _readme_curl_session().replace("http://localhost:8000", f"http://127.0.0.1:{port}")

    done = subprocess.run(
        ["bash", "-euo", "pipefail", "-c", session],
        cwd=tmp_path,
        capture_output=True,
        text=True,
        timeout=240,
        check=False,
    )

    assert done.returncode == 0, done.stdout + done.stderr + stack.logs()
    out = done.stdout.splitlines()
    assert "succeeded 1.0" in out
    header = out.index("variant,preemption,placement,metric,mean,ci95,min,max,n,label,unit,better")
    assert out[header + 1].startswith("grace-300s,pod,")
    assert len(list(tmp_path.glob("run-*-summary.csv"))) == 1
