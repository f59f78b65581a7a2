"""Run pages: live progress, cancel, results, and a replication's event log."""

from __future__ import annotations

from urllib.parse import urlencode

from django.contrib import messages
from django.core.paginator import Paginator
from django.http import Http404, HttpRequest, HttpResponse, JsonResponse
from django.shortcuts import redirect, render
from django.views.decorators.http import require_GET, require_POST

import scheduler_core as sc
from experiments import (
    selectors,
    selectors_api,
    selectors_cache,
    selectors_planner,
    selectors_run_page,
    services,
)
from experiments.models import Run, Status
from experiments.views.common import owned_experiment, readable_run, visible_run

EVENTS_PER_PAGE = 200
DOWNLOAD_TABLES = (
    ("summary", "Summary"),
    ("workloads", "Workloads"),
    ("events", "Events"),
    ("decisions", "Decisions"),
)
DOWNLOAD_FORMATS = ("csv", "json", "parquet")
"""What the run page offers to download: the API's exports (the browser's session
authenticates them)."""


@require_GET
def run_detail(request: HttpRequest, pk: int) -> HttpResponse:
    """The page itself is per user (who may edit, the CSRF token); what it shows of the
    run comes from the shared cache (see ``selectors_cache``), so a run with a spec of
    thousands of workloads is not loaded and parsed on every view."""
    run = readable_run(request, pk)
    if selectors_run_page.is_study_run(run):
        return _study_detail(request, run)
    return render(
        request,
        "experiments/run_detail.html",
        {
            "run": run,
            "experiment": run.experiment,
            "can_edit": selectors.experiment_can_edit(user=request.user, experiment=run.experiment),
            "table": selectors.run_summary_table(run=run),
            "metric_names": sc.METRIC_NAMES,
            **selectors_run_page.run_page_reads(run=run),
            "download_tables": DOWNLOAD_TABLES,
            "download_formats": DOWNLOAD_FORMATS,
            "diagnoses": selectors_api.variant_diagnoses(run=run),
            "plan_workload": selectors_cache.run_cached(
                run=run,
                kind="page-plan-workload",
                build=lambda: selectors_planner.run_swept_workload(run=run) or "",
            ),
        },
    )


def _study_detail(request: HttpRequest, run: Run) -> HttpResponse:
    """A placement-study run: progress while it runs, then the allocation curves per
    policy, the table at the asked load and the replications (docs/placement-study.md)."""
    return render(
        request,
        "experiments/run_study.html",
        {
            "run": run,
            "experiment": run.experiment,
            "can_edit": selectors.experiment_can_edit(user=request.user, experiment=run.experiment),
            **selectors_run_page.run_page_reads(run=run),
            "study": selectors_run_page.study_page(run=run),
        },
    )


@require_GET
def run_status(request: HttpRequest, pk: int) -> JsonResponse:
    """What the run page polls for live progress (small, no results)."""
    run = readable_run(request, pk)
    return JsonResponse(
        selectors_cache.run_cached(
            run=run, kind="page-status", build=lambda: selectors.run_status(run=run)
        )
    )


@require_POST
def run_cancel(request: HttpRequest, pk: int) -> HttpResponse:
    run = visible_run(request, pk)
    owned_experiment(request, run.experiment_id)
    if services.run_cancel(run=run):
        messages.success(request, "Run cancelled.")
    else:
        messages.info(request, f"The run had already {run.status}.")
    return redirect("experiments:run", pk=run.pk)


@require_GET
def replication_events(request: HttpRequest, pk: int, replication_pk: int) -> HttpResponse:
    run = visible_run(request, pk)
    replication = (
        run.replications.filter(pk=replication_pk)
        .only("pk", "run_id", "variant", "replication", "variant_index", "status")
        .first()
    )
    if replication is None:
        raise Http404("No such replication")
    filters = {
        key: request.GET.get(key, "").strip() for key in ("reason", "workload", "pod", "node")
    }
    # The setup rows (t <= 0) are folded away unless asked for or a filter is set.
    fold = request.GET.get("setup") != "1" and not any(filters.values())
    log = selectors.replication_event_log(replication_id=replication.pk)
    events = log.filter(filters, after_setup=fold)
    page = Paginator(events, EVENTS_PER_PAGE).get_page(request.GET.get("page"))
    shown = {key: value for key, value in filters.items() if value}
    return render(
        request,
        "experiments/replication_events.html",
        {
            "run": run,
            "replication": replication,
            "page": page,
            "filters": filters,
            "reasons": log.reasons(),
            "setup_hidden": log.setup_count() if fold else 0,
            "query": urlencode(shown if fold or shown else {"setup": "1"}),
        },
    )


RUNS_PER_PAGE = 50


@require_GET
def run_overview(request: HttpRequest) -> HttpResponse:
    """Every run the user may see, across experiments: what is queued, running, done."""
    status = request.GET.get("status", "")
    runs = selectors.run_overview(user=request.user, status=status)
    page = Paginator(runs, RUNS_PER_PAGE).get_page(request.GET.get("page"))
    return render(
        request,
        "experiments/run_list.html",
        {
            "page": page,
            "status": status if status in Status.values else "",
            "statuses": Status.values,
        },
    )
