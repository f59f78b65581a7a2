"""The run page's chart endpoints (a timeline group, a page of workloads or events, as
JSON for the page's script) and plotly.js itself: our own bundle of the trace types we
draw (static/vendor/plotly, rebuilt by ``make plotly-bundle``), served from here, never
a CDN, so the pages work offline."""

from __future__ import annotations

import functools
import gzip
import hashlib
import json
from collections.abc import Callable
from pathlib import Path
from typing import Any

from django.conf import settings
from django.contrib.auth.decorators import login_not_required
from django.core.serializers.json import DjangoJSONEncoder
from django.http import Http404, HttpRequest, HttpResponse, HttpResponseNotModified
from django.views.decorators.http import require_GET

from experiments import selectors_cache, selectors_charts
from experiments.models import Replication, Run
from experiments.views import chart_data
from experiments.views.common import readable_run

PLOTLY_JS = Path(settings.BASE_DIR) / "static" / "vendor" / "plotly" / "plotly-lab.min.js"
FILTERS = ("reason", "workload", "pod", "node")


@functools.cache
def _plotly_bundle() -> tuple[bytes, bytes, str]:
    """The library, its gzip and a digest of it, made once per process (1.2 MB becomes
    0.4 MB; the full plotly.min.js was 4.8 MB and took a first visit a second to compile)."""
    raw = PLOTLY_JS.read_bytes()
    return raw, gzip.compress(raw, compresslevel=6, mtime=0), hashlib.sha256(raw).hexdigest()[:16]


def plotly_digest() -> str:
    """What the script's URL carries (``?v=``): a new bundle is a new URL."""
    return _plotly_bundle()[2]


@login_not_required
@require_GET
def plotly_js(request: HttpRequest) -> HttpResponse:
    """Our plotly.js bundle. Its URL carries its digest, so browsers may keep it for a
    year; the login page needs no charts but a cached page may."""
    raw, packed, digest = _plotly_bundle()
    etag = f'"plotly-{digest}"'
    if request.headers.get("If-None-Match") == etag:
        return HttpResponseNotModified()
    gzipped = "gzip" in request.headers.get("Accept-Encoding", "")
    response = HttpResponse(
        packed if gzipped else raw, content_type="text/javascript; charset=utf-8"
    )
    if gzipped:
        response["Content-Encoding"] = "gzip"
    response["ETag"] = etag
    response["Cache-Control"] = "public, max-age=31536000, immutable"
    response["Vary"] = "Accept-Encoding"
    return response


def _replication(request: HttpRequest, run: Run) -> Replication:
    """The succeeded replication of ``run`` named by ``?replication=``; 404 otherwise, so
    an id from another run (even a visible one) never answers here."""
    raw = request.GET.get("replication", "")
    replication = (
        selectors_charts.replication_of_run(run=run, pk=int(raw)) if raw.isdigit() else None
    )
    if replication is None:
        raise Http404("No such replication in this run")
    return replication


def _page(request: HttpRequest) -> int:
    raw = request.GET.get("page", "1")
    return int(raw) if raw.isdigit() else 1


def _cached_json(
    request: HttpRequest, run: Run, kind: str, build: Callable[[], dict[str, Any]]
) -> HttpResponse:
    """The chart data as JSON text, built once per run state and query (any process):
    a finished run's figures never change, and rebuilding them per request was the
    run page's largest cost under load. ``build`` checks that the ``?replication=`` is
    of this run (404 otherwise, and nothing is kept), so an entry only exists for a
    replication that was found in this run, and a hit needs no second look."""
    text = selectors_cache.run_cached(
        run=run,
        kind=kind,
        params=request.GET.urlencode(),
        build=lambda: json.dumps(build(), cls=DjangoJSONEncoder),
    )
    return HttpResponse(text, content_type="application/json")


@require_GET
def run_timeline(request: HttpRequest, pk: int) -> HttpResponse:
    run = readable_run(request, pk)
    raw = request.GET.get("group", "")
    return _cached_json(
        request,
        run,
        "chart-timeline",
        lambda: chart_data.replication_timeline(
            run=run,
            replication_id=_replication(request, run).pk,
            group=int(raw) if raw.isdigit() else None,
        ),
    )


@require_GET
def run_workloads(request: HttpRequest, pk: int) -> HttpResponse:
    run = readable_run(request, pk)
    return _cached_json(
        request,
        run,
        "chart-workloads",
        lambda: chart_data.workload_table(
            replication_id=_replication(request, run).pk,
            query=request.GET.get("q", "").strip(),
            sort=request.GET.get("sort", "-lost_work"),
            page=_page(request),
        ),
    )


@require_GET
def run_events(request: HttpRequest, pk: int) -> HttpResponse:
    run = readable_run(request, pk)
    filters = {key: value for key in FILTERS if (value := request.GET.get(key, "").strip())}
    return _cached_json(
        request,
        run,
        "chart-events",
        lambda: chart_data.event_page(
            replication=_replication(request, run),
            filters=filters,
            page=_page(request),
            setup=request.GET.get("setup") == "1",
        ),
    )
