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
import re
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
DEFAULT_BROKER = os.environ.get("BENCH_REDIS_URL", "redis://127.0.0.1:6379/12")
REQUEST_TIMEOUT = 30.0
KEEP_ALIVE_SECONDS = 30
"""As the Dockerfile: gunicorn's default (2 s) closes a client's idle connection while
the client may be sending its next request on it (a reset, not a retry)."""


# ------------------------------------------------------------------------ the load
@dataclass(frozen=True)
class Read:
    """One request of the mix: a label for the per-endpoint figures, and its path.
    ``page`` reads go with the browser's session cookie, the others with the token."""

    label: str
    path: str
    page: bool = False


def read_paths(
    run_id: int, experiment_id: int, busy_run_id: int, replication_id: int | None = None
) -> list[Read]:
    """What a notebook polling a run and pulling its results asks for, in turn, and
    what the run page's browser reads (with ``replication_id``, its chart data)."""
    api = f"/api/v1/runs/{run_id}"
    reads = [
        Read("run detail", f"{api}/"),
        Read("busy run detail", f"/api/v1/runs/{busy_run_id}/"),
        Read("run list", f"/api/v1/runs/?experiment={experiment_id}"),
        Read("summary", f"{api}/summary/"),
        Read("events page 1", f"{api}/events/?page_size=100"),
        Read("events reason filter", f"{api}/events/?reason=Preempted"),
        Read("events page 20", f"{api}/events/?page=20&page_size=100"),
        Read("events workload filter", f"{api}/events/?workload=w7"),
        Read("workloads", f"{api}/workloads/"),
        Read("export summary.csv", f"{api}/export/summary.csv"),
        Read("export events.csv", f"{api}/export/events.csv"),
    ]
    if replication_id is not None:
        charts = f"/runs/{run_id}/charts"
        reads += [
            Read("run page", f"/runs/{run_id}/", page=True),
            Read(
                "chart timeline", f"{charts}/timeline.json?replication={replication_id}", page=True
            ),
            Read(
                "chart workloads",
                f"{charts}/workloads.json?replication={replication_id}",
                page=True,
            ),
            Read("chart events", f"{charts}/events.json?replication={replication_id}", page=True),
        ]
    return reads


@dataclass
class Samples:
    """Every request's latency by label, and the failures with what they were."""

    latencies: dict[str, list[float]] = field(default_factory=dict)
    errors: list[str] = field(default_factory=list)
    accepted: int = 0
    lock: threading.Lock = field(default_factory=threading.Lock)

    def add(self, label: str, seconds: float, error: str | None, accepted: bool) -> None:
        with self.lock:
            self.latencies.setdefault(label, []).append(seconds)
            self.accepted += accepted
            if error:
                self.errors.append(error)


def _client(
    base_url: str,
    token: str,
    cookies: dict[str, str],
    reads: list[Read],
    offset: int,
    deadline: float,
    budget: int,
    samples: Samples,
    *,
    once: bool = False,
) -> None:
    """One client: its own connections (one for the API, one for the pages), requests
    back to back until the deadline or its request budget (``once``: each read once).
    A 202 (an export being built) is waited for as its ``Retry-After`` says, then asked
    again."""
    api, browser = requests.Session(), requests.Session()
    api.headers["Authorization"] = f"Token {token}"
    browser.cookies.update(cookies)
    index, sent = offset, 0
    while time.monotonic() < deadline and sent < budget and not (once and index >= len(reads)):
        read = reads[index % len(reads)]
        index += 1
        while sent < budget:
            sent += 1
            started = time.perf_counter()
            error, retry_after = _request(browser if read.page else api, base_url + read.path)
            samples.add(read.label, time.perf_counter() - started, error, retry_after is not None)
            if retry_after is None or time.monotonic() + retry_after > deadline:
                break
            time.sleep(retry_after)


def _request(session: requests.Session, url: str) -> tuple[str | None, float | None]:
    """(an error or None, seconds to wait before asking again after a 202 or None)."""
    try:
        response = session.get(url, timeout=REQUEST_TIMEOUT, allow_redirects=False)
        response.content  # noqa: B018 (read the whole body, exports included)
    except requests.RequestException as exc:
        return f"{url}: {type(exc).__name__}: {exc}", None
    if response.status_code == 202:
        return None, min(5.0, float(response.headers.get("Retry-After", "1")))
    return (None if response.status_code == 200 else f"{url}: HTTP {response.status_code}"), None


def run_load(
    *,
    base_url: str,
    token: str,
    paths: list[Read],
    clients: int,
    seconds: float,
    cookies: dict[str, str] | None = None,
    requests_per_client: int = 10_000,
) -> dict[str, Any]:
    """``clients`` threads for ``seconds`` (or ``requests_per_client`` each); returns
    throughput, latency percentiles overall and per endpoint, and the first errors (an
    empty list is the pass condition)."""
    samples = Samples()
    deadline = time.monotonic() + seconds
    threads = [
        threading.Thread(
            target=_client,
            daemon=True,
            args=(base_url, token, cookies or {}, paths, n, deadline, requests_per_client, samples),
        )
        for n in range(clients)
    ]
    started = time.perf_counter()
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join(seconds + REQUEST_TIMEOUT + 5)
    return summarize(samples, time.perf_counter() - started, clients)


def summarize(samples: Samples, elapsed: float, clients: int) -> dict[str, Any]:
    latencies = sorted(s for group in samples.latencies.values() for s in group)
    return {
        "clients": clients,
        "seconds": round(elapsed, 1),
        "requests": len(latencies),
        "errors": len(samples.errors),
        "first_errors": samples.errors[:5],
        "accepted_202": samples.accepted,
        "requests_per_s": round(len(latencies) / elapsed, 1),
        **_figures(latencies),
        "endpoints": {
            label: {"requests": len(group), **_figures(sorted(group))}
            for label, group in samples.latencies.items()
        },
    }


def _figures(ordered: list[float]) -> dict[str, float | None]:
    return {
        "p50_ms": _percentile(ordered, 0.50),
        "p95_ms": _percentile(ordered, 0.95),
        "p99_ms": _percentile(ordered, 0.99),
        "max_ms": _percentile(ordered, 1.0),
    }


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
        response = requests.request(
            method,
            self.base_url + path,
            timeout=REQUEST_TIMEOUT,
            headers={"Authorization": f"Token {self.token}"},
            **kwargs,
        )
        response.raise_for_status()
        return response.json()

    def experiment_from_preset(self, preset: str) -> int:
        return self.call("POST", "/api/v1/experiments/from-preset/", json={"preset": preset})["id"]

    def experiment_from_spec(self, spec: dict[str, Any]) -> int:
        return self.call("POST", "/api/v1/experiments/", json={"spec": spec})["id"]

    def session_cookies(self, username: str, password: str) -> dict[str, str]:
        """Log in through the login form, as a browser does; its cookies."""
        session = requests.Session()
        session.get(f"{self.base_url}/accounts/login/", timeout=REQUEST_TIMEOUT)
        response = session.post(
            f"{self.base_url}/accounts/login/",
            timeout=REQUEST_TIMEOUT,
            allow_redirects=False,
            data={
                "username": username,
                "password": password,
                "csrfmiddlewaretoken": session.cookies.get("csrftoken", ""),
            },
        )
        if response.status_code != 302:
            raise RuntimeError(f"login failed: HTTP {response.status_code}")
        return session.cookies.get_dict()

    def first_replication(self, run_id: int, cookies: dict[str, str]) -> int:
        """The id of the run's first replication, read off the run page's links."""
        page = requests.get(
            f"{self.base_url}/runs/{run_id}/", cookies=cookies, timeout=REQUEST_TIMEOUT
        )
        page.raise_for_status()
        found = re.search(rf"/runs/{run_id}/replications/(\d+)/events/", page.text)
        if found is None:
            raise RuntimeError(f"run {run_id}'s page links no replication")
        return int(found.group(1))

    def start_run(self, experiment_id: int) -> int:
        return self.call("POST", f"/api/v1/experiments/{experiment_id}/runs/")["id"]

    def run_status(self, run_id: int) -> str:
        return self.call("GET", f"/api/v1/runs/{run_id}/")["status"]

    def finished_run(self, experiment_id: int, timeout: float = 180) -> int:
        run_id = self.start_run(experiment_id)
        status = wait_for(
            lambda: _terminal(self.run_status(run_id)),
            timeout=timeout,
            what=f"run {run_id} to finish",
        )
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
    return {
        **os.environ,
        "DJANGO_SETTINGS_MODULE": "config.settings.base",
        "PYTHONPATH": str(ROOT),
        "DATABASE_URL": database_url,
        "CELERY_BROKER_URL": DEFAULT_BROKER,
        "CELERY_RESULT_BACKEND": DEFAULT_BROKER,
        "CELERY_TASK_DEFAULT_QUEUE": f"bench-{os.getpid()}",
        "LAB_VAR_DIR": str(var_dir),
        "CACHE_KEY_PREFIX": f"bench-{os.getpid()}",  # nothing cached by an earlier run
        "LAB_API_RUN_START_RATE": "1000/hour",
        "DB_CONN_MAX_AGE": "60",
    }


def server_command(port: int, workers: int, threads: int) -> list[str]:
    return [
        sys.executable,
        "-m",
        "gunicorn",
        "config.wsgi",
        "--bind",
        f"127.0.0.1:{port}",
        "--workers",
        str(workers),
        "--threads",
        str(threads),
        "--worker-class",
        "gthread",
        "--keep-alive",
        str(KEEP_ALIVE_SECONDS),
    ]


def worker_command(queue: str) -> list[str]:
    return [
        sys.executable,
        "-m",
        "celery",
        "-A",
        "config.celery",
        "worker",
        "-Q",
        queue,
        "--concurrency",
        "2",
        "--loglevel",
        "WARNING",
        "--without-gossip",
        "--without-mingle",
        "-n",
        f"{queue}@%h",
    ]


@contextmanager
def processes(
    commands: list[list[str]], env: dict[str, str], logs: Path
) -> Iterator[list[subprocess.Popen[bytes]]]:
    """Start each command in its own process group; stop them all on the way out."""
    started: list[subprocess.Popen[bytes]] = []
    try:
        for number, command in enumerate(commands):
            with (logs / f"process-{number}.log").open("ab") as out:
                started.append(
                    subprocess.Popen(
                        command,
                        cwd=ROOT,
                        env=env,
                        stdout=out,
                        stderr=subprocess.STDOUT,
                        start_new_session=True,
                    )
                )
        yield started
    finally:
        for process in started:
            if process.poll() is None:
                os.killpg(process.pid, signal.SIGTERM)
        for process in started:
            try:
                process.wait(timeout=20)
            except subprocess.TimeoutExpired:
                os.killpg(process.pid, signal.SIGKILL)


def cpu_seconds(*, group: int | None = None, pids: set[int] | None = None) -> float:
    """CPU seconds (user + system) used so far by the live processes of a process group
    (gunicorn's master and workers) or of a set of pids (the database's backends), from
    /proc: on a shared machine the CPU a request costs is a steadier figure than how
    long it waited for a core."""
    ticks = os.sysconf("SC_CLK_TCK")
    total = 0
    for stat in Path("/proc").glob("[0-9]*/stat"):
        try:
            pid = int(stat.parent.name)
            fields = stat.read_text().rsplit(")", 1)[1].split()
        except (OSError, ValueError):
            continue  # the process ended meanwhile
        if (group is not None and int(fields[2]) == group) or (pids and pid in pids):
            total += int(fields[11]) + int(fields[12])  # utime, stime
    return total / ticks


def database_backends(url: str) -> set[int]:
    """The pids of the server processes connected to the bench database."""
    import psycopg

    name = urlparse(url).path.lstrip("/")
    with psycopg.connect(url, autocommit=True) as connection:
        rows = connection.execute(
            "SELECT pid FROM pg_stat_activity WHERE datname = %s AND pid <> pg_backend_pid()",
            (name,),
        ).fetchall()
    return {int(row[0]) for row in rows}


def client_cpu_seconds() -> float:
    times = os.times()
    return times.user + times.system


PASSWORD = "bench-password-0"  # a throwaway user of a throwaway database


def make_token(env: dict[str, str]) -> str:
    """A bench user (with a password, for the pages) and its token, made by
    ``manage.py shell`` in the stack's environment."""
    code = (
        "from django.contrib.auth import get_user_model;"
        "from rest_framework.authtoken.models import Token;"
        "u, _ = get_user_model().objects.get_or_create(username='bench');"
        f"u.set_password({PASSWORD!r}); u.save();"
        "print(Token.objects.get_or_create(user=u)[0].key)"
    )
    done = subprocess.run(
        [sys.executable, "manage.py", "shell", "-c", code],
        cwd=ROOT,
        env=env,
        capture_output=True,
        text=True,
        check=True,
        timeout=120,
    )
    return done.stdout.strip().splitlines()[-1]


MID_SIZE = {"nodes": 50, "pods": 3600, "horizon": 7 * 86400.0}
"""≈118,000 events in one replication: the mid-size run of issue #10 §4."""


def results_run(api: Api, size: str) -> tuple[int, int]:
    """(experiment, finished run) to read: the S3 preset, or the mid-size cluster."""
    if size == "tiny":
        experiment = api.experiment_from_preset("s3-grace-period")
        return experiment, api.finished_run(experiment)
    from bench.workloads import cluster_spec

    experiment = api.experiment_from_spec(cluster_spec(**MID_SIZE))
    return experiment, api.finished_run(experiment, timeout=900)


def warm_up(base_url: str, token: str, cookies: dict[str, str], reads: list[Read]) -> float:
    """One client reads each path once (following 202s until the export is written),
    as the first viewer of a finished run does; the load then measures what everyone
    after them gets. Returns how long that first pass took."""
    started = time.perf_counter()
    _client(
        base_url,
        token,
        cookies,
        reads,
        0,
        time.monotonic() + 180,
        len(reads) * 40,
        Samples(),
        once=True,
    )
    return round(time.perf_counter() - started, 1)


def bench(
    *,
    clients: int,
    seconds: float,
    workers: int,
    threads: int,
    size: str,
    requests_per_client: int,
    warm_first: bool = True,
) -> dict[str, Any]:
    database_url = os.environ.get("BENCH_DATABASE_URL", DEFAULT_DATABASE)
    fresh_database(database_url)
    with tempfile.TemporaryDirectory(prefix="api-bench-") as tmp:
        env = stack_env(database_url, Path(tmp))
        subprocess.run(
            [sys.executable, "manage.py", "migrate", "--noinput"],
            cwd=ROOT,
            env=env,
            check=True,
            capture_output=True,
            timeout=300,
        )
        token, port = make_token(env), free_port()
        base_url = f"http://127.0.0.1:{port}"
        commands = [
            server_command(port, workers, threads),
            worker_command(env["CELERY_TASK_DEFAULT_QUEUE"]),
        ]
        with processes(commands, env, Path(tmp)) as (server, _worker):
            wait_for(lambda: api_ready(base_url), timeout=60, what="the server")
            api = Api(base_url, token)
            built = time.perf_counter()
            experiment, run_id = results_run(api, size)
            built = time.perf_counter() - built
            cookies = api.session_cookies("bench", PASSWORD)
            replication = api.first_replication(run_id, cookies)
            events = api.call("GET", f"/api/v1/runs/{run_id}/events/?page_size=1")["count"]
            busy = api.start_run(api.experiment_from_preset("s8-gang-at-scale"))
            paths = read_paths(run_id, experiment, busy, replication)
            warm = warm_up(base_url, token, cookies, paths) if warm_first else None
            load_before = os.getloadavg()[0]  # the machine is shared: say how busy it was
            backends = database_backends(database_url)  # persistent (DB_CONN_MAX_AGE)
            before = (
                cpu_seconds(group=server.pid),
                cpu_seconds(pids=backends),
                client_cpu_seconds(),
            )
            result = run_load(
                base_url=base_url,
                token=token,
                paths=paths,
                clients=clients,
                seconds=seconds,
                cookies=cookies,
                requests_per_client=requests_per_client,
            )
            backends |= database_backends(database_url)
            used = [
                after - start
                for after, start in zip(
                    (
                        cpu_seconds(group=server.pid),
                        cpu_seconds(pids=backends),
                        client_cpu_seconds(),
                    ),
                    before,
                    strict=True,
                )
            ]
            load_after = os.getloadavg()[0]
            if result["errors"]:  # the server's side of the story, before its folder goes
                for log in sorted(Path(tmp).glob("process-*.log")):
                    print(
                        f"--- {log.name}\n{log.read_text(errors='replace')[-3000:]}",
                        file=sys.stderr,
                    )
    return {
        **result,
        "size": size,
        "events": events,
        "run_seconds": round(built, 1),
        "warm_up_seconds": warm,
        "server": f"gunicorn gthread {workers}x{threads}",
        "load_average_before": round(load_before, 2),
        "load_average_after": round(load_after, 2),
        **_cpu_figures(used, result["requests"]),
        "database": "postgresql",
        "machine": platform.machine(),
        "cpus": os.cpu_count(),
        "python": platform.python_version(),
        "recorded": date.today().isoformat(),
    }


def _cpu_figures(used: list[float], requests: int) -> dict[str, float]:
    """CPU milliseconds per request of the server, the database (backends that were
    connected at the start or the end) and the clients, and the throughput those would
    allow on this machine's cores with nothing else running."""
    server, database, client = (1000 * value / max(1, requests) for value in used)
    return {
        "cpu_ms_per_request_server": round(server, 1),
        "cpu_ms_per_request_database": round(database, 1),
        "cpu_ms_per_request_clients": round(client, 1),
        "idle_machine_ceiling_requests_per_s": round(
            1000 * (os.cpu_count() or 1) / max(0.1, server + database + client)
        ),
    }


def record(figures: dict[str, Any]) -> None:
    """Under ``api_load`` (the tiny preset) or ``api_load_mid`` (the mid-size run)."""
    baselines = json.loads(BASELINES.read_text()) if BASELINES.exists() else {}
    key = "api_load" if figures["size"] == "tiny" else "api_load_mid"
    baselines[key] = {k: v for k, v in figures.items() if k != "first_errors"}
    BASELINES.write_text(json.dumps(baselines, indent=2, sort_keys=True) + "\n")


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--clients", type=int, default=50)
    parser.add_argument("--seconds", type=float, default=30.0)
    parser.add_argument(
        "--requests-per-client",
        type=int,
        default=400,
        help="each client stops after this many requests",
    )
    parser.add_argument(
        "--size",
        choices=("mid", "tiny"),
        default="mid",
        help="mid: a 50-node, 3,600-pod, 7-day run (≈118k events); tiny: the S3 preset",
    )
    parser.add_argument("--workers", type=int, default=2, help="gunicorn processes")
    parser.add_argument("--threads", type=int, default=8, help="threads per process")
    parser.add_argument(
        "--cold",
        action="store_true",
        help="no warm-up pass: the clients are the run's first readers",
    )
    parser.add_argument("--record", action="store_true")
    args = parser.parse_args()
    sys.path.insert(0, str(ROOT))  # bench.workloads, when run as a script
    figures = bench(
        clients=args.clients,
        seconds=args.seconds,
        workers=args.workers,
        threads=args.threads,
        size=args.size,
        requests_per_client=args.requests_per_client,
        warm_first=not args.cold,
    )
    print(json.dumps(figures, indent=2))
    if args.record:
        record(figures)
    return 1 if figures["errors"] else 0


if __name__ == "__main__":
    sys.exit(main())
