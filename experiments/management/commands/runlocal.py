"""``manage.py runlocal``: the web server and a Celery worker (with beat) on this machine,
as ``make run`` starts them; Ctrl-C stops both."""

from __future__ import annotations

import json
import os
import signal
import subprocess
import sys
import time
from pathlib import Path
from typing import IO, Any

from django.conf import settings
from django.core.management.base import BaseCommand, CommandParser


class Command(BaseCommand):
    help = "Serve the app with gunicorn and run a Celery worker, until interrupted."

    def add_arguments(self, parser: CommandParser) -> None:
        parser.add_argument("--host", default="127.0.0.1")
        parser.add_argument("--port", type=int, default=8000)
        parser.add_argument("--concurrency", type=int, default=2, help="worker processes")

    def handle(self, *args: Any, **options: Any) -> None:
        logs = Path(settings.VAR_DIR)
        logs.mkdir(parents=True, exist_ok=True)
        children = [self._worker(options["concurrency"], logs / "worker.log"),
                    self._web(options["host"], options["port"])]
        self.stdout.write(self.style.SUCCESS(
            f"Disruption Lab: http://{options['host']}:{options['port']}/  "
            f"(worker log: {logs / 'worker.log'})"))
        login = _local_login(logs / "local-superuser.json")
        if login:
            self.stdout.write(self.style.SUCCESS(f"Log in as {login}"))
        _wait_then_stop(children)

    def _worker(self, concurrency: int, log: Path) -> subprocess.Popen[bytes]:
        command = [sys.executable, "-m", "celery", "-A", "config", "worker", "--beat",
                   "--loglevel", "INFO", "--concurrency", str(concurrency),
                   "--schedule", str(Path(settings.VAR_DIR) / "celerybeat-schedule")]
        with log.open("ab") as out:  # the worker's chatter goes to its log, not the console
            return _start(command, out)

    def _web(self, host: str, port: int) -> subprocess.Popen[bytes]:
        command = [sys.executable, "-m", "gunicorn", "config.wsgi", "--bind", f"{host}:{port}",
                   "--workers", "2", "--threads", "4", "--access-logfile", "-"]
        return _start(command)


def _local_login(path: Path) -> str | None:
    """The login ``ensure_local_superuser`` wrote, to print beside the URL."""
    try:
        data = json.loads(path.read_text())
    except (OSError, ValueError):
        return None
    return f"{data['username']} / password {data['password']}"


def _start(command: list[str], out: IO[bytes] | None = None) -> subprocess.Popen[bytes]:
    """A child in its own session: Ctrl-C reaches only us, and we stop each child through
    its main process (Celery's warm shutdown hands unfinished messages back)."""
    return subprocess.Popen(command, env=os.environ.copy(), start_new_session=True,
                            stdout=out, stderr=subprocess.STDOUT if out else None)


def _wait_then_stop(children: list[subprocess.Popen[bytes]]) -> None:
    """Run until a child exits or we are told to stop; then stop the others politely."""
    stopping = False

    def stop(signum: int, frame: Any) -> None:
        nonlocal stopping
        stopping = True

    signal.signal(signal.SIGINT, stop)
    signal.signal(signal.SIGTERM, stop)
    while not stopping and all(child.poll() is None for child in children):
        time.sleep(0.5)
    for child in children:
        if child.poll() is None:
            child.send_signal(signal.SIGTERM)
    deadline = time.monotonic() + 15
    for child in children:
        try:
            child.wait(timeout=max(0.1, deadline - time.monotonic()))
        except subprocess.TimeoutExpired:
            child.kill()
