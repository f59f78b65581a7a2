"""REST API under load (issue #6 §3): 50 concurrent clients polling runs and reading
results for 30 s against the real stack (gunicorn + a Celery worker + PostgreSQL +
Redis), all on loopback. Not a test: run by hand; ``tests/api/test_load.py`` runs the
same load and asserts zero errors.

    python bench/bench_api_load.py [--clients 50] [--seconds 30] [--record]

It creates a fresh database (``BENCH_DATABASE_URL``, default
``postgres://postgres@127.0.0.1:5432/disruption_lab_bench``), migrates it, starts the
server and a worker, makes a user with a token, creates an experiment from the S3
preset over the API, runs it to completion, starts a second run that stays busy while
the clients read, and prints requests/s, p50/p95/p99 latency and errors.
``--record`` merges the figures into bench/baselines.json under ``api_load``.
"""

from __future__ import annotations

import argparse
import json
import os
import platform
import signal
import socket
import subprocess
import sys
import tempfile
import threading
import time
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from dataclasses import dataclass, field
from datetime import date
from pathlib import Path
from typing import Any
from urllib.parse import urlparse

import requests

ROOT = Path(__file__).resolve().parents[1]
BASELINES = Path(__file__).with_name("baselines.json")
DEFAULT_DATABASE = "postgres://postgres@127.0.0.1:5432/disruption_lab_bench"
DEFAULT_BROKER = "redis://127.0.0.1:6379/12"
REQUEST_TIMEOUT = 30.0


# ------------------------------------------------------------------------ the load
def read_paths(run_id: int, experiment_id: int, busy_run_id: int) -> list[str]:
    """What a notebook polling a run and pulling its results asks for, in turn."""
    return [f"/api/v1/runs/{run_id}/",
            f"/api/v1/runs/{busy_run_id}/",
            f"/api/v1/runs/?experiment={experiment_id}",
            f"/api/v1/runs/{run_id}/summary/",
            f"/api/v1/runs/{run_id}/events/?page_size=100",
            f"/api/v1/runs/{run_id}/events/?reason=Preempted",
            f"/api/v1/runs/{run_id}/workloads/",
            f"/api/v1/runs/{run_id}/export/summary.csv"]


@dataclass
class Samples:
    """Every request's latency, and the failures with what they were."""

    latencies: list[float] = field(default_factory=list)
    errors: list[str] = field(default_factory=list)
    lock: threading.Lock = field(default_factory=threading.Lock)

    def add(self, seconds: float, error: str | None) -> None:
        with self.lock:
            self.latencies.append(seconds)
            if error:
                self.errors.append(error)


def _client(base_url: str, token: str, paths: list[str], offset: int, deadline: float,
            samples: Samples) -> None:
    """One client: its own connection, requests back to back until the deadline."""
    session = requests.Session()
    session.headers["Authorization"] = f"Token {token}"
    index = offset
    while time.monotonic() < deadline:
        path = paths[index % len(paths)]
        index += 1
        started = time.perf_counter()
        error = _request(session, base_url + path)
        samples.add(time.perf_counter() - started, error)


def _request(session: requests.Session, url: str) -> str | None:
    try:
        response = session.get(url, timeout=REQUEST_TIMEOUT)
        response.content  # noqa: B018 (read the whole body, streamed exports included)
    except requests.RequestException as exc:
        return f"{url}: {type(exc).__name__}: {exc}"
    return None if response.status_code == 200 else f"{url}: HTTP {response.status_code}"


def run_load(*, base_url: str, token: str, paths: list[str], clients: int,
             seconds: float) -> dict[str, Any]:
    """``clients`` threads for ``seconds``; returns throughput, latency percentiles and
    the first errors (an empty list is the pass condition)."""
    samples = Samples()
    deadline = time.monotonic() + seconds
    threads = [threading.Thread(target=_client, daemon=True,
                                args=(base_url, token, paths, n, deadline, samples))
               for n in range(clients)]
    started = time.perf_counter()
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join(seconds + REQUEST_TIMEOUT + 5)
    return summarize(samples, time.perf_counter() - started, clients)


def summarize(samples: Samples, elapsed: float, clients: int) -> dict[str, Any]:
    latencies = sorted(samples.latencies)
    return {"clients": clients, "seconds": round(elapsed, 1), "requests": len(latencies),
            "errors": len(samples.errors), "first_errors": samples.errors[:5],
            "requests_per_s": round(len(latencies) / elapsed, 1),
            "p50_ms": _percentile(latencies, 0.50), "p95_ms": _percentile(latencies, 0.95),
            "p99_ms": _percentile(latencies, 0.99), "max_ms": _percentile(latencies, 1.0)}


def _percentile(ordered: list[float], fraction: float) -> float | None:
    if not ordered:
        return None
    index = min(len(ordered) - 1, max(0, round(fraction * len(ordered)) - 1))
    return round(ordered[index] * 1000, 1)


# ---------------------------------------------------------------- talking to the API
def wait_for(condition: Callable[[], Any], *, timeout: float, what: str) -> Any:
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        value = condition()
        if value:
            return value
        time.sleep(0.3)
    raise TimeoutError(f"timed out after {timeout:g} s waiting for {what}")


def api_ready(base_url: str) -> bool:
    try:
        return requests.get(f"{base_url}/api/v1/presets/", timeout=2).status_code == 401
    except requests.RequestException:
        return False


@dataclass
class Api:
    """A small client: what the README's curl session does, from Python."""

    base_url: str
    token: str

    def call(self, method: str, path: str, **kwargs: Any) -> Any:
        response = requests.request(method, self.base_url + path, timeout=REQUEST_TIMEOUT,
                                    headers={"Authorization": f"Token {self.token}"}, **kwargs)
        response.raise_for_status()
        return response.json()

    def experiment_from_preset(self, preset: str) -> int:
        return self.call("POST", "/api/v1/experiments/from-preset/", json={"preset": preset})["id"]

    def start_run(self, experiment_id: int) -> int:
        return self.call("POST", f"/api/v1/experiments/{experiment_id}/runs/")["id"]

    def run_status(self, run_id: int) -> str:
        return self.call("GET", f"/api/v1/runs/{run_id}/")["status"]

    def finished_run(self, experiment_id: int, timeout: float = 180) -> int:
        run_id = self.start_run(experiment_id)
        status = wait_for(lambda: _terminal(self.run_status(run_id)), timeout=timeout,
                          what=f"run {run_id} to finish")
        if status != "succeeded":
            raise RuntimeError(f"run {run_id} {status}")
        return run_id


def _terminal(status: str) -> str | None:
    return status if status in ("succeeded", "failed", "cancelled") else None


# --------------------------------------------------------------------- the stack
def free_port() -> int:
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        return int(sock.getsockname()[1])


def fresh_database(url: str) -> None:
    """Drop and create the bench database (never the development or test ones)."""
    import psycopg

    name = urlparse(url).path.lstrip("/")
    if not name.endswith("_bench"):
        raise SystemExit(f"refusing to recreate '{name}': the bench database must end in _bench")
    admin = url.rsplit("/", 1)[0] + "/postgres"
    with psycopg.connect(admin, autocommit=True) as connection:
        connection.execute(f'DROP DATABASE IF EXISTS "{name}" WITH (FORCE)')
        connection.execute(f'CREATE DATABASE "{name}"')


def stack_env(database_url: str, var_dir: Path) -> dict[str, str]:
    return {**os.environ, "DJANGO_SETTINGS_MODULE": "config.settings.base",
            "PYTHONPATH": str(ROOT), "DATABASE_URL": database_url,
            "CELERY_BROKER_URL": DEFAULT_BROKER, "CELERY_RESULT_BACKEND": DEFAULT_BROKER,
            "CELERY_TASK_DEFAULT_QUEUE": f"bench-{os.getpid()}", "LAB_VAR_DIR": str(var_dir),
            "LAB_API_RUN_START_RATE": "1000/hour", "DB_CONN_MAX_AGE": "60"}


def server_command(port: int, workers: int, threads: int) -> list[str]:
    return [sys.executable, "-m", "gunicorn", "config.wsgi", "--bind", f"127.0.0.1:{port}",
            "--workers", str(workers), "--threads", str(threads), "--worker-class", "gthread"]


def worker_command(queue: str) -> list[str]:
    return [sys.executable, "-m", "celery", "-A", "config.celery", "worker", "-Q", queue,
            "--concurrency", "1", "--loglevel", "WARNING", "--without-gossip",
            "--without-mingle", "-n", f"{queue}@%h"]


@contextmanager
def processes(commands: list[list[str]], env: dict[str, str], logs: Path) -> Iterator[None]:
    """Start each command in its own process group; stop them all on the way out."""
    started = []
    try:
        for number, command in enumerate(commands):
            with (logs / f"process-{number}.log").open("ab") as out:
                started.append(subprocess.Popen(command, cwd=ROOT, env=env, stdout=out,
                                                stderr=subprocess.STDOUT,
                                                start_new_session=True))
        yield
    finally:
        for process in started:
            if process.poll() is None:
                os.killpg(process.pid, signal.SIGTERM)
        for process in started:
            try:
                process.wait(timeout=20)
            except subprocess.TimeoutExpired:
                os.killpg(process.pid, signal.SIGKILL)


def make_token(env: dict[str, str]) -> str:
    """A bench user and its token, made by ``manage.py shell`` in the stack's environment."""
    code = ("from django.contrib.auth import get_user_model;"
            "from rest_framework.authtoken.models import Token;"
            "u, _ = get_user_model().objects.get_or_create(username='bench');"
            "print(Token.objects.get_or_create(user=u)[0].key)")
    done = subprocess.run([sys.executable, "manage.py", "shell", "-c", code], cwd=ROOT,
                          env=env, capture_output=True, text=True, check=True, timeout=120)
    return done.stdout.strip().splitlines()[-1]


def bench(clients: int, seconds: float, workers: int, threads: int) -> dict[str, Any]:
    database_url = os.environ.get("BENCH_DATABASE_URL", DEFAULT_DATABASE)
    fresh_database(database_url)
    with tempfile.TemporaryDirectory(prefix="api-bench-") as tmp:
        env = stack_env(database_url, Path(tmp))
        subprocess.run([sys.executable, "manage.py", "migrate", "--noinput"], cwd=ROOT,
                       env=env, check=True, capture_output=True, timeout=300)
        token, port = make_token(env), free_port()
        base_url = f"http://127.0.0.1:{port}"
        commands = [server_command(port, workers, threads),
                    worker_command(env["CELERY_TASK_DEFAULT_QUEUE"])]
        with processes(commands, env, Path(tmp)):
            wait_for(lambda: api_ready(base_url), timeout=60, what="the server")
            api = Api(base_url, token)
            experiment = api.experiment_from_preset("s3-grace-period")
            run_id = api.finished_run(experiment)
            busy = api.start_run(api.experiment_from_preset("s8-gang-at-scale"))
            paths = read_paths(run_id, experiment, busy)
            load_before = os.getloadavg()[0]  # the machine is shared: say how busy it was
            result = run_load(base_url=base_url, token=token, paths=paths, clients=clients,
                              seconds=seconds)
    return {**result, "server": f"gunicorn gthread {workers}x{threads}",
            "load_average_before": round(load_before, 2),
            "database": "postgresql", "machine": platform.machine(),
            "cpus": os.cpu_count(), "python": platform.python_version(),
            "recorded": date.today().isoformat()}


def record(figures: dict[str, Any]) -> None:
    baselines = json.loads(BASELINES.read_text()) if BASELINES.exists() else {}
    baselines["api_load"] = {k: v for k, v in figures.items() if k != "first_errors"}
    BASELINES.write_text(json.dumps(baselines, indent=2, sort_keys=True) + "\n")


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--clients", type=int, default=50)
    parser.add_argument("--seconds", type=float, default=30.0)
    parser.add_argument("--workers", type=int, default=2, help="gunicorn processes")
    parser.add_argument("--threads", type=int, default=8, help="threads per process")
    parser.add_argument("--record", action="store_true")
    args = parser.parse_args()
    figures = bench(args.clients, args.seconds, args.workers, args.threads)
    print(json.dumps(figures, indent=2))
    if args.record:
        record(figures)
    return 1 if figures["errors"] else 0


if __name__ == "__main__":
    sys.exit(main())
