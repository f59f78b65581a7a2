"""``manage.py runlocal``: the web server and a Celery worker (with beat) on this machine,
as ``make run`` starts them; Ctrl-C stops both."""

from __future__ import annotations

import json
import os
import signal
import socket
import subprocess
import sys
import time
from collections.abc import Callable
from pathlib import Path
from typing import IO, Any

from django.conf import settings
from django.core.management.base import BaseCommand, CommandError, CommandParser


class Command(BaseCommand):
    help = "Serve the app with gunicorn and run a Celery worker, until interrupted."

    def add_arguments(self, parser: CommandParser) -> None:
        parser.add_argument("--host", default="127.0.0.1")
        parser.add_argument("--port", type=int, default=8000)
        parser.add_argument("--concurrency", type=int, default=2, help="worker processes")
        parser.add_argument(
            "--remind-every",
            type=float,
            default=600.0,
            help="seconds between reprints of the URL and login (0: never)",
        )

    def handle(self, *args: Any, **options: Any) -> None:
        logs = Path(settings.VAR_DIR)
        logs.mkdir(parents=True, exist_ok=True)
        host, port = options["host"], options["port"]
        children = [
            self._worker(options["concurrency"], logs / "worker.log"),
            self._web(host, port, logs / "access.log", logs / "web.log"),
        ]
        if not _wait_for_port(host, port, children):
            _stop(children)
            raise CommandError(
                f"the web server did not start on {host}:{port}; the end of "
                f"{logs / 'web.log'}:\n{_tail(logs / 'web.log')}"
            )
        login = _local_login(logs / "local-superuser.json")

        def banner() -> None:
            # Printed once the server answers, and again now and then, so the URL and the
            # login are the last thing on the terminal rather than lost in a scroll-back.
            self.stdout.write(self.style.SUCCESS(f"Disruption Lab: http://{host}:{port}/"))
            if login:
                self.stdout.write(self.style.SUCCESS(f"Log in as {login}"))
            self.stdout.write(
                f"(logs: {logs / 'access.log'}, {logs / 'web.log'}, {logs / 'worker.log'}; "
                "Ctrl-C stops)"
            )

        banner()
        _wait_then_stop(children, remind=banner, every=options["remind_every"])

    def _worker(self, concurrency: int, log: Path) -> subprocess.Popen[bytes]:
        command = [
            sys.executable,
            "-m",
            "celery",
            "-A",
            "config",
            "worker",
            "--beat",
            "--loglevel",
            "INFO",
            "--concurrency",
            str(concurrency),
            "--schedule",
            str(Path(settings.VAR_DIR) / "celerybeat-schedule"),
        ]
        with log.open("ab") as out:  # the worker's chatter goes to its log, not the console
            return _start(command, out)

    def _web(self, host: str, port: int, access_log: Path, log: Path) -> subprocess.Popen[bytes]:
        # The access log goes to a file, and so does everything else gunicorn and the app
        # print (start-up lines, the broker's warnings): on the terminal they would bury
        # the URL and the login. No control socket: it is one path per user
        # (~/.gunicorn/gunicorn.ctl), shared by every gunicorn on the machine.
        command = [
            sys.executable,
            "-m",
            "gunicorn",
            "config.wsgi",
            "--bind",
            f"{host}:{port}",
            "--workers",
            "2",
            "--threads",
            "4",
            "--access-logfile",
            str(access_log),
            "--no-control-socket",
        ]
        with log.open("ab") as out:
            return _start(command, out)


def _wait_for_port(
    host: str, port: int, children: list[subprocess.Popen[bytes]], timeout: float = 60.0
) -> bool:
    """Until the web server accepts connections (True), or a child died or time ran out
    (False), so the banner is printed only when the URL works."""
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline and all(c.poll() is None for c in children):
        try:
            with socket.create_connection((host, port), timeout=1):
                return True
        except OSError:
            time.sleep(0.2)
    return False


def _tail(path: Path, lines: int = 20) -> str:
    """The last lines of a log, for an error that points at it."""
    try:
        return "\n".join(path.read_text(errors="replace").splitlines()[-lines:])
    except OSError:
        return "(no log)"


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
    return subprocess.Popen(
        command,
        env=os.environ.copy(),
        start_new_session=True,
        stdout=out,
        stderr=subprocess.STDOUT if out else None,
    )


def _wait_then_stop(
    children: list[subprocess.Popen[bytes]],
    remind: Callable[[], None] | None = None,
    every: float = 0.0,
) -> None:
    """Run until a child exits or we are told to stop; then stop the others politely.
    ``remind`` is called every ``every`` seconds meanwhile (when both are set)."""
    stopping = False
    next_reminder = time.monotonic() + every

    def stop(signum: int, frame: Any) -> None:
        nonlocal stopping
        stopping = True

    signal.signal(signal.SIGINT, stop)
    signal.signal(signal.SIGTERM, stop)
    while not stopping and all(child.poll() is None for child in children):
        time.sleep(0.5)
        if remind is not None and every > 0 and time.monotonic() >= next_reminder:
            remind()
            next_reminder = time.monotonic() + every
    _stop(children)


def _stop(children: list[subprocess.Popen[bytes]]) -> None:
    """SIGTERM to each child still running, then up to 15 s for all to end."""
    for child in children:
        if child.poll() is None:
            child.send_signal(signal.SIGTERM)
    deadline = time.monotonic() + 15
    for child in children:
        try:
            child.wait(timeout=max(0.1, deadline - time.monotonic()))
        except subprocess.TimeoutExpired:
            child.kill()
