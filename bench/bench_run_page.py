"""The run page at scale (issue 5 §3): a finished run of 10,000 nodes and more than
100,000 events, opened in headless Chromium against gunicorn. Not a test: run by hand.

    python bench/bench_run_page.py [--repeat 5] [--record] [--database-url URL]

1. Simulates a 10,000-node cluster (250 racks of 40 eight-GPU nodes, every GPU busy,
   300 urgent pods preempting) under two variants with ``scheduler_core`` and writes the
   run straight into a database of its own (PostgreSQL by default, created if missing),
   as the worker would: replications, summaries, event rows. Kept between invocations.
2. Starts gunicorn on that database and opens the run page in Debian's Chromium
   (1400x900). static/js/charts.js draws the charts of the first viewport first and the
   others one per task when the main thread is idle, so each visit reports two times
   from navigation:

   * **viewport**: every chart in the first viewport drawn and the main thread idle
     again (``data-charts-viewport-ms``: an idle callback after the last of them). What
     someone who has not scrolled sees finished and can use. The run page's first
     viewport holds its progress and provenance cards, so it is also measured opened at
     the GPU timeline (``/runs/<id>/#charts-timeline``, a link the page itself uses),
     whose viewport holds the heaviest chart, the occupancy heatmap;
   * **all charts**: every chart on the page drawn (``data-charts-ready-ms``).

   Also the main thread's long tasks (> 50 ms) after the viewport mark, the jank
   someone scrolling meanwhile could meet, the server's time to first byte, and the
   page weight (bytes transferred, HTML, plotly.js) with an empty browser cache.
3. Before the server starts, the run page is precomputed into the shared cache as the
   worker does when a run finishes (``worker_precompute_s``). First view after a
   restart = the server's first request (its process cold, the cache warm); first
   visit = a fresh browser profile; returning = a profile on disk that has seen the
   page twice (plotly.js cached, and compiled by V8 once, not on every visit).
   ``--record`` merges the figures into bench/baselines.json under ``run_page``.
"""

from __future__ import annotations

import argparse
import json
import os
import platform
import random
import socket
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path
from typing import Any

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))
BASELINES = Path(__file__).with_name("baselines.json")
DEFAULT_DATABASE = "postgres://postgres@127.0.0.1:5432/disruption_lab_bench_run_page"
CHROMIUM = "/usr/bin/chromium"
CHROMIUM_ARGS = [
    "--headless",
    "--no-sandbox",
    "--disable-gpu",
    "--disable-background-networking",
    "--disable-component-update",
    "--disable-sync",
    "--no-first-run",
]
USER, PASSWORD = "bench", "bench-run-page-password"
NAME = "bench: run page at 10,000 nodes (v1)"
TARGET_SECONDS = 1.5
"""Issue #16 §5: a first visit to a large run page within this."""


def bench_spec(
    *,
    racks: int = 250,
    per_rack: int = 40,
    groups: int = 2000,
    members: int = 5,
    urgent: int = 300,
    horizon: float = 7200.0,
    seed: int = 3,
) -> dict[str, Any]:
    """Every GPU busy with 5-node jobs (half synchronous training, half independent
    batch); urgent 8-GPU pods arrive through the run and each preempts a node."""
    rng = random.Random(seed)
    pools = [
        {"name": f"r{k:03d}", "count": per_rack, "gpus": 8, "labels": {"rack": f"r{k:03d}"}}
        for k in range(racks)
    ]
    workloads: list[dict[str, Any]] = []
    for i in range(groups):
        synchronous = i % 2 == 0
        workloads.append(
            {
                "name": f"{'train' if synchronous else 'batch'}-{i}",
                "kind": "training" if synchronous else "batch",
                "members": members,
                "gpus": 8,
                "durationSeconds": 36000,
                "startupSeconds": 60,
                "checkpoint": {
                    "intervalSeconds": rng.choice([900, 1800, 3600]),
                    "writeSeconds": 20,
                },
                "recovery": {"model": "synchronous" if synchronous else "independent"},
                **({"podGroup": {"minCount": members}} if synchronous else {}),
            }
        )
    for j in range(urgent):
        workloads.append(
            {
                "name": f"urgent-{j}",
                "kind": "evaluation",
                "gpus": 8,
                "priorityClassName": "high",
                "arrival": round(600 + j * (horizon - 1800) / urgent, 1),
                "durationSeconds": 900,
                "startupSeconds": 30,
                "urgent": j == 0,
                "controller": {"kind": "none"},
            }
        )
    return {
        "name": NAME,
        "horizonSeconds": horizon,
        "cluster": {"nodePools": pools},
        "priorityClasses": [
            {"name": "low", "value": 100, "globalDefault": True},
            {"name": "high", "value": 1000},
        ],
        "workloads": workloads,
        "variants": [
            {"name": "pod", "preemption": "pod"},
            {"name": "checkpoint-aware", "preemption": "checkpoint-aware"},
        ],
    }


# ----------------------------------------------------------------------- the database
def ensure_database(url: str) -> None:
    """Create the PostgreSQL database named in ``url`` if it does not exist yet."""
    if not url.startswith("postgres"):
        return
    import psycopg

    base, _, name = url.rpartition("/")
    with psycopg.connect(f"{base}/postgres", autocommit=True) as connection:
        exists = connection.execute(
            "SELECT 1 FROM pg_database WHERE datname = %s", [name]
        ).fetchone()
        if not exists:
            connection.execute(f'CREATE DATABASE "{name}"')


def setup_django(url: str, var_dir: str) -> None:
    os.environ.update(
        {
            "DJANGO_SETTINGS_MODULE": "config.settings.base",
            "DATABASE_URL": url,
            "LAB_VAR_DIR": var_dir,
        }
    )
    import django
    from django.core.management import call_command

    django.setup()
    call_command("migrate", verbosity=0)


def precompute(run_id: int) -> float:
    """What the worker does when a run finishes: the run page into the shared cache
    (this invocation's var/ directory, which the server reads). Seconds taken."""
    from experiments.models import Run
    from experiments.selectors_run_page import run_page_precompute

    return run_page_precompute(run=Run.objects.get(pk=run_id))


def ensure_run() -> tuple[int, int]:
    """The finished benchmark run (built once, then reused): its id and event count."""
    from django.contrib.auth import get_user_model

    from experiments.models import Run, Status

    user, _ = get_user_model().objects.get_or_create(username=USER)
    user.set_password(PASSWORD)
    user.save()
    run = Run.objects.filter(experiment__name=NAME, status=Status.SUCCEEDED).first()
    if run is None:
        run = build_run(user)
    return run.pk, sum(run.replications.values_list("event_count", flat=True))


def build_run(user: Any) -> Any:
    """Simulate both variants and store them as the worker would (the event log encoded)."""
    from django.db import transaction
    from django.utils import timezone

    import scheduler_core as sc
    from experiments.models import Experiment, Replication, Run, Status
    from experiments.services.execution import _insert_records, encode_event_log
    from experiments.specs import product_version, spec_document
    from scheduler_core import timeline as core_timeline

    spec = sc.parse_spec(bench_spec())
    document = spec_document(spec)
    started = time.perf_counter()
    results = [sc.simulate(spec, name, 0) for name in sc.variant_names(spec)]
    print(
        f"simulated {len(results)} variants in {time.perf_counter() - started:.1f} s",
        file=sys.stderr,
    )
    now = timezone.now()
    with transaction.atomic():
        experiment = Experiment.objects.create(owner=user, name=NAME, spec=document)
        run = Run.objects.create(
            experiment=experiment,
            created_by=user,
            spec=document,
            status=Status.SUCCEEDED,
            product_version=product_version(),
            progress=1.0,
            started_at=now,
            finished_at=now,
            aggregate=[
                {
                    "variant": r.variant,
                    "preemption": r.preemption,
                    "placement": r.placement,
                    "metrics": sc.aggregate([r]),
                }
                for r in results
            ],
        )
        for index, result in enumerate(results):
            data = result.to_dict(include_events=False)
            replication = Replication.objects.create(
                run=run,
                variant_index=index,
                variant=result.variant,
                replication=0,
                status=Status.SUCCEEDED,
                progress=1.0,
                started_at=now,
                finished_at=now,
                event_count=len(result.events),
                event_log=encode_event_log(result),
                timeline=core_timeline.for_variant(spec, result.variant, result.events).to_json(),
                **{
                    k: data[k]
                    for k in (
                        "seed",
                        "preemption",
                        "placement",
                        "summary",
                        "distributions",
                        "by_priority_class",
                        "events_processed",
                        "wall_seconds",
                    )
                },
            )
            _insert_records(replication, result)
    return run


# ----------------------------------------------------------------------- the browser
def _free_port() -> int:
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        return sock.getsockname()[1]


def start_server(port: int, env: dict[str, str], log: Path) -> subprocess.Popen[bytes]:
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
        "--timeout",
        "120",
    ]
    with log.open("ab") as out:
        server = subprocess.Popen(
            command, cwd=ROOT, env=env, stdout=out, stderr=subprocess.STDOUT, start_new_session=True
        )
    deadline = time.monotonic() + 30
    while time.monotonic() < deadline:
        with socket.socket() as sock:
            if sock.connect_ex(("127.0.0.1", port)) == 0:
                return server
        time.sleep(0.2)
    server.terminate()
    raise RuntimeError(f"gunicorn did not start: see {log}")


LONG_TASKS = """(() => {
  window.__longTasks = [];
  new PerformanceObserver(list => list.getEntries().forEach(
    e => window.__longTasks.push([e.startTime, e.duration]))).observe({type: "longtask"});
})();"""

MEASURE = """() => {
  const nav = performance.getEntriesByType("navigation")[0];
  const viewport = Number(document.documentElement.dataset.chartsViewportMs);
  const after = (window.__longTasks || []).filter(t => t[0] + t[1] > viewport);
  const resources = performance.getEntriesByType("resource");
  const all = [nav, ...resources];
  const plotly = resources.find(r => r.name.includes("/charts/plotly.min.js"));
  return {
    ready_ms: Number(document.documentElement.dataset.chartsReadyMs),
    viewport_ms: viewport,
    viewport_charts: Number(document.documentElement.dataset.chartsViewport),
    long_tasks_after_viewport_ms: Math.round(after.reduce((sum, t) => sum + t[1], 0)),
    longest_task_after_viewport_ms: Math.round(Math.max(0, ...after.map(t => t[1]))),
    charts_start_ms: Number(document.documentElement.dataset.chartsStartMs),
    plotly_loaded_ms: plotly ? plotly.responseEnd : 0,
    draw_ms: window.chartTimings || {},
    error: document.documentElement.dataset.chartsError || "",
    ttfb_ms: nav.responseStart - nav.requestStart,
    html_transfer_bytes: nav.transferSize, html_bytes: nav.decodedBodySize,
    plotly_transfer_bytes: plotly ? plotly.transferSize : 0,
    plotly_bytes: plotly ? plotly.decodedBodySize : 0,
    transfer_bytes: all.reduce((sum, r) => sum + (r.transferSize || 0), 0),
    decoded_bytes: all.reduce((sum, r) => sum + (r.decodedBodySize || 0), 0),
    charts: document.querySelectorAll("[data-chart] .main-svg").length,
  };
}"""


def open_page(context: Any, url: str) -> dict[str, Any]:
    """One visit: navigate, wait for every chart, read the timings; no console error."""
    page = context.new_page()
    page.add_init_script(LONG_TASKS)
    devtools = context.new_cdp_session(page)
    devtools.send("Performance.enable")
    errors: list[str] = []
    page.on("console", lambda m: errors.append(m.text) if m.type == "error" else None)
    page.on("pageerror", lambda e: errors.append(str(e)))
    page.goto(url, timeout=180_000)
    page.wait_for_function(  # a function, not an expression: the page's CSP forbids eval
        "() => (document.documentElement.dataset.chartsReady === 'true' && "
        "document.documentElement.dataset.chartsViewportMs) || "
        "document.documentElement.dataset.chartsError",
        timeout=120_000,
    )
    figures = page.evaluate(MEASURE)
    # The page's main-thread work (tasks, of which script): less bent by other load on
    # the machine than the wall clock, though a preempted task still counts its wait.
    metrics = {m["name"]: m["value"] for m in devtools.send("Performance.getMetrics")["metrics"]}
    page.close()
    return {
        **figures,
        "main_thread_ms": round(metrics.get("TaskDuration", 0.0) * 1000),
        "script_ms": round(metrics.get("ScriptDuration", 0.0) * 1000),
        "console_errors": errors,
    }


def login(context: Any, base: str) -> None:
    page = context.new_page()
    page.goto(f"{base}/accounts/login/")
    page.fill("#id_username", USER)
    page.fill("#id_password", PASSWORD)
    page.click("button[type=submit]")
    page.wait_for_load_state()
    page.close()


def measure(base: str, run_id: int, repeat: int) -> dict[str, Any]:
    """First visits in fresh incognito contexts (empty cache), then returning visits in a
    browser profile on disk, as a user's: there Chromium keeps plotly.js and, from the
    third load on, V8's compiled code for it."""
    from playwright.sync_api import sync_playwright

    url = f"{base}/runs/{run_id}/"
    with sync_playwright() as playwright:
        browser = playwright.chromium.launch(executable_path=CHROMIUM, args=CHROMIUM_ARGS)
        warmup = browser.new_context()
        login(warmup, base)  # a browser process that has started once, like a user's
        warmup.close()

        def fresh() -> Any:
            context = browser.new_context(viewport={"width": 1400, "height": 900})
            login(context, base)
            return context

        cold = open_page(fresh(), url)
        warm, at_timeline = [], []
        for _ in range(repeat):  # alternated, so a burst of load bends both alike
            warm.append(open_page(fresh(), url))
            at_timeline.append(open_page(fresh(), url + "#charts-timeline"))
        browser.close()
        profile = playwright.chromium.launch_persistent_context(
            tempfile.mkdtemp(prefix="bench-profile-"),
            executable_path=CHROMIUM,
            args=CHROMIUM_ARGS,
            viewport={"width": 1400, "height": 900},
        )
        login(profile, base)
        for _ in range(2):  # V8 caches a script's code once it has run twice
            open_page(profile, url)
        cached = [open_page(profile, url) for _ in range(repeat)]
        profile.close()
    return {"cold": cold, "warm": warm, "cached": cached, "at_timeline": at_timeline}


def _seconds(visits: list[dict[str, Any]], key: str, how: Any = statistics.median) -> float:
    return round(how(v[key] for v in visits) / 1000, 3)


def summarize(visits: dict[str, Any], events: int, run_id: int) -> dict[str, Any]:
    warm, cached, timeline = visits["warm"], visits["cached"], visits["at_timeline"]
    every = [visits["cold"], *warm, *cached, *timeline]
    errors = sorted({e for v in every for e in v["console_errors"]})
    typical = sorted(warm, key=lambda v: v["ready_ms"])[len(warm) // 2]
    slowest = sorted(typical["draw_ms"].items(), key=lambda kv: -kv[1])[:3]
    return {
        "nodes": 10_000,
        "events": events,
        "run_id": run_id,
        "viewport": "1400x900",
        # Every chart in the first viewport drawn, the main thread idle again.
        "first_visit_viewport_s_median": _seconds(warm, "viewport_ms"),
        "first_visit_viewport_s_max": _seconds(warm, "viewport_ms", max),
        "first_visit_viewport_charts": warm[0]["viewport_charts"],
        "first_visit_at_timeline_viewport_s_median": _seconds(timeline, "viewport_ms"),
        "first_visit_at_timeline_viewport_s_max": _seconds(timeline, "viewport_ms", max),
        "first_visit_at_timeline_viewport_charts": timeline[0]["viewport_charts"],
        # Every chart on the page drawn.
        "first_visit_all_charts_s_median": _seconds(warm, "ready_ms"),
        "first_visit_all_charts_s_max": _seconds(warm, "ready_ms", max),
        "returning_viewport_s_median": _seconds(cached, "viewport_ms"),
        "returning_all_charts_s_median": _seconds(cached, "ready_ms"),
        "returning_all_charts_s_max": _seconds(cached, "ready_ms", max),
        "restart_first_view_viewport_s": round(visits["cold"]["viewport_ms"] / 1000, 3),
        "restart_first_view_all_charts_s": round(visits["cold"]["ready_ms"] / 1000, 3),
        "restart_first_view_ttfb_s": round(visits["cold"]["ttfb_ms"] / 1000, 3),
        "ttfb_s_median": round(statistics.median(v["ttfb_ms"] for v in warm) / 1000, 3),
        "long_tasks_after_viewport_ms_median": statistics.median(
            v["long_tasks_after_viewport_ms"] for v in warm
        ),
        "longest_task_after_viewport_ms_max": max(
            v["longest_task_after_viewport_ms"] for v in warm + timeline
        ),
        "page_transfer_bytes": warm[0]["transfer_bytes"],
        "page_decoded_bytes": warm[0]["decoded_bytes"],
        "html_bytes": warm[0]["html_bytes"],
        "plotly_transfer_bytes": warm[0]["plotly_transfer_bytes"],
        "plotly_bytes": warm[0]["plotly_bytes"],
        "charts_drawn": warm[0]["charts"],
        "median_visit_ms": {
            "main_thread": typical["main_thread_ms"],
            "script": typical["script_ms"],
            "ttfb": round(typical["ttfb_ms"]),
            "plotly_loaded": round(typical["plotly_loaded_ms"]),
            "charts_start": typical["charts_start_ms"],
            "viewport": typical["viewport_ms"],
            "charts_ready": typical["ready_ms"],
            "slowest_charts": dict(slowest),
        },
        "console_errors": errors,
        "chart_errors": sorted({v["error"] for v in every if v["error"]}),
    }


def main() -> int:
    parser = argparse.ArgumentParser(
        description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter
    )
    parser.add_argument(
        "--database-url", default=os.environ.get("BENCH_DATABASE_URL", DEFAULT_DATABASE)
    )
    parser.add_argument("--repeat", type=int, default=5, help="visits per measurement")
    parser.add_argument("--record", action="store_true", help="write bench/baselines.json")
    args = parser.parse_args()
    var_dir = tempfile.mkdtemp(prefix="bench-run-page-")
    ensure_database(args.database_url)
    setup_django(args.database_url, var_dir)
    run_id, events = ensure_run()
    load_before = os.getloadavg()[0]
    precompute_seconds = precompute(run_id)
    port = _free_port()
    env = {**os.environ, "PYTHONPATH": str(ROOT), "DB_CONN_MAX_AGE": "60"}
    server = start_server(port, env, Path(var_dir) / "web.log")
    try:
        figures = summarize(
            measure(f"http://127.0.0.1:{port}", run_id, args.repeat), events, run_id
        )
    finally:
        server.terminate()
        server.wait(timeout=30)
    figures["worker_precompute_s"] = round(precompute_seconds, 3)
    figures["load_average_1min"] = [round(load_before, 2), round(os.getloadavg()[0], 2)]
    figures["cpus"] = os.cpu_count()
    print(json.dumps(figures, indent=2))
    f = figures
    print(
        f"run page, {events:,} events on 10,000 nodes (target {TARGET_SECONDS:g} s), first "
        f"visit: first viewport drawn and idle {f['first_visit_viewport_s_median']:.2f} s "
        f"median (max {f['first_visit_viewport_s_max']:.2f}; "
        f"{f['first_visit_viewport_charts']} charts in it), opened at the timeline "
        f"{f['first_visit_at_timeline_viewport_s_median']:.2f} s (max "
        f"{f['first_visit_at_timeline_viewport_s_max']:.2f}; "
        f"{f['first_visit_at_timeline_viewport_charts']} charts), every chart drawn "
        f"{f['first_visit_all_charts_s_median']:.2f} s (max "
        f"{f['first_visit_all_charts_s_max']:.2f}); returning visit: viewport "
        f"{f['returning_viewport_s_median']:.2f} s, every chart "
        f"{f['returning_all_charts_s_median']:.2f} s; first view after a server restart: "
        f"viewport {f['restart_first_view_viewport_s']:.2f} s, every chart "
        f"{f['restart_first_view_all_charts_s']:.2f} s; "
        f"{f['page_transfer_bytes'] / 1e6:.2f} MB transferred; load average "
        f"{f['load_average_1min']} on {f['cpus']} CPUs",
        file=sys.stderr,
    )
    if args.record:
        _record(figures)
    return 0 if not figures["console_errors"] and not figures["chart_errors"] else 1


def _record(figures: dict[str, Any]) -> None:
    """Merge into baselines.json, keeping what other benchmarks recorded."""
    data = json.loads(BASELINES.read_text()) if BASELINES.exists() else {}
    data["run_page"] = {
        **{k: v for k, v in figures.items() if k != "run_id"},
        "python": platform.python_version(),
        "machine": platform.machine(),
        "recorded": time.strftime("%Y-%m-%d"),
    }
    BASELINES.write_text(json.dumps(data, indent=2, sort_keys=True) + "\n")


if __name__ == "__main__":
    raise SystemExit(main())
