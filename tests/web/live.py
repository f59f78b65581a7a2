"""Real processes for the tests that need them: Celery workers, the web server, and
``manage.py`` commands, all pointed at the test database and a real broker.

The broker follows the database: with PostgreSQL the tests use the machine's Redis
(the deployment's pair), with SQLite kombu's filesystem transport (``make run``'s).
Each test gets its own queue name (and folder), so runs never meet other tests' workers.
"""

from __future__ import annotations

import os
import signal
import subprocess
import sys
import time
import uuid
from collections.abc import Callable, Iterator
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from django.db import connection

ROOT = Path(__file__).resolve().parents[2]
TEST_REDIS_URL = os.environ.get("TEST_REDIS_URL", "redis://127.0.0.1:6379/13")


def database_url() -> str:
    """The URL of the database this test runs on (the test database, not the real one)."""
    conf = connection.settings_dict
    if connection.vendor == "sqlite":
        return f"sqlite:///{conf['NAME']}"
    auth = conf["USER"] + (f":{conf['PASSWORD']}" if conf.get("PASSWORD") else "")
    return f"postgres://{auth}@{conf['HOST'] or '127.0.0.1'}:{conf['PORT'] or 5432}/{conf['NAME']}"


@dataclass
class Stack:
    """Environment and processes of one test's little deployment."""

    var_dir: Path
    extra_env: dict[str, str] = field(default_factory=dict)
    processes: list[subprocess.Popen[bytes]] = field(default_factory=list)
    queue: str = field(default_factory=lambda: f"test-{uuid.uuid4().hex[:10]}")

    @property
    def broker_kind(self) -> str:
        return "filesystem" if connection.vendor == "sqlite" else "redis"

    def env(self, **overrides: str) -> dict[str, str]:
        env = {
            **os.environ,
            "DJANGO_SETTINGS_MODULE": "config.settings.base",
            "PYTHONPATH": str(ROOT),
            "DATABASE_URL": database_url(),
            "LAB_VAR_DIR": str(self.var_dir),
            "CELERY_TASK_DEFAULT_QUEUE": self.queue,
            "CELERY_TASK_ALWAYS_EAGER": "false",
            "DB_CONN_MAX_AGE": "0",
        }
        if self.broker_kind == "redis":
            env["CELERY_BROKER_URL"] = env["CELERY_RESULT_BACKEND"] = TEST_REDIS_URL
        else:
            env["CELERY_BROKER_URL"] = "filesystem://"
            env.pop("CELERY_RESULT_BACKEND", None)
        return {**env, **self.extra_env, **overrides}

    def start_worker(
        self, *, name: str, beat: bool = False, concurrency: int = 1, **env: str
    ) -> subprocess.Popen[bytes]:
        """A real ``celery worker`` (prefork) in its own process group."""
        command = [
            sys.executable,
            str(ROOT / "tests/web/worker_harness.py"),
            "worker",
            "-Q",
            self.queue,
            "-n",
            f"{name}-{self.queue}@%h",
            "--pool",
            "prefork",
            "--concurrency",
            str(concurrency),
            "--loglevel",
            "INFO",
            "--without-gossip",
            "--without-mingle",
        ]
        if beat:
            command += ["--beat", "--schedule", str(self.var_dir / f"beat-{name}")]
        return self._start(command, self.var_dir / f"{name}.log", self.env(**env))

    def start_web(self, port: int, **env: str) -> subprocess.Popen[bytes]:
        """The production WSGI server (gunicorn) serving the app."""
        command = [
            sys.executable,
            "-m",
            "gunicorn",
            "config.wsgi",
            "--bind",
            f"127.0.0.1:{port}",
            "--workers",
            "1",
            "--threads",
            "4",
            "--keep-alive",
            "30",
        ]
        return self._start(command, self.var_dir / "web.log", self.env(**env))

    def manage(self, *args: str) -> str:
        """``manage.py ARGS`` in a separate process with this stack's environment."""
        done = subprocess.run(
            [sys.executable, str(ROOT / "manage.py"), *args],
            env=self.env(),
            capture_output=True,
            text=True,
            timeout=120,
            check=False,
        )
        assert done.returncode == 0, done.stderr
        return done.stdout

    def _start(self, command: list[str], log: Path, env: dict[str, str]) -> subprocess.Popen[bytes]:
        with log.open("ab") as out:
            process = subprocess.Popen(
                command,
                cwd=ROOT,
                env=env,
                stdout=out,
                stderr=subprocess.STDOUT,
                start_new_session=True,
            )
        self.processes.append(process)
        return process

    def kill(self, process: subprocess.Popen[bytes]) -> None:
        """SIGKILL a whole worker: the main process and its pool children at once,
        as when a machine dies. Nothing gets to clean up."""
        os.killpg(process.pid, signal.SIGKILL)
        process.wait(timeout=10)

    def stop_all(self) -> None:
        for process in self.processes:
            if process.poll() is None:
                os.killpg(process.pid, signal.SIGTERM)
        for process in self.processes:
            try:
                process.wait(timeout=15)
            except subprocess.TimeoutExpired:
                os.killpg(process.pid, signal.SIGKILL)
                process.wait(timeout=5)

    def logs(self) -> str:
        return "\n".join(
            f"--- {log.name}\n{log.read_text(errors='replace')[-4000:]}"
            for log in sorted(self.var_dir.glob("*.log"))
        )


def live_stack(tmp_path: Path) -> Iterator[Stack]:
    stack = Stack(var_dir=tmp_path)
    try:
        yield stack
    finally:
        stack.stop_all()


def wait_for(
    condition: Callable[[], Any],
    *,
    timeout: float,
    what: str,
    stack: Stack | None = None,
    every: float = 0.2,
) -> Any:
    """Poll until ``condition()`` is truthy; fail with the processes' logs if it never is."""
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        value = condition()
        if value:
            return value
        time.sleep(every)
    logs = stack.logs() if stack else ""
    raise AssertionError(f"timed out after {timeout:g} s waiting for {what}\n{logs}")
