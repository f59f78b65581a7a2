"""The checkpoint planner's pages: pick an experiment, fill the one-click form, watch
the sweep run and read its chart."""

from __future__ import annotations

from typing import Any

from django.contrib import messages
from django.http import Http404, HttpRequest, HttpResponse
from django.shortcuts import redirect, render
from django.views.decorators.http import require_GET, require_http_methods

import scheduler_core as sc
from experiments import selectors, selectors_cache, selectors_planner
from experiments.api.throttles import run_start_rate
from experiments.charts.planner import planner_figure
from experiments.forms_planner import PlannerForm, initial_for
from experiments.models import Run
from experiments.services.planner import PLAN_TAG, plan_start
from experiments.services.runs import RunStartThrottledError
from experiments.users import signed_in
from experiments.views.common import readable_run, visible_experiment

LISTED = 100


@require_GET
def plan_index(request: HttpRequest) -> HttpResponse:
    """Where the planner starts: the experiments it can sweep, and past plans."""
    experiments = selectors.experiment_list(user=request.user)[:LISTED]
    return render(
        request,
        "experiments/planner_index.html",
        {
            "experiments": [
                (e, jobs)
                for e in experiments
                if (jobs := selectors_planner.plannable_workloads(experiment=e))
            ],
            "plans": selectors.experiment_list(user=request.user, filters={"tag": PLAN_TAG})[
                :LISTED
            ],
        },
    )


@require_http_methods(["GET", "POST"])
def plan_new(request: HttpRequest, pk: int) -> HttpResponse:
    experiment = visible_experiment(request, pk)
    workloads = selectors_planner.plannable_workloads(experiment=experiment)
    if not workloads:
        messages.error(request, "This experiment has no job whose checkpoints could be planned.")
        return redirect("experiments:detail", pk=experiment.pk)
    if request.method == "POST":
        form = PlannerForm(request.POST, workloads=workloads)
        if form.is_valid():
            run = _start(request, form, experiment)
            if run is not None:
                return redirect("experiments:run-plan", pk=run.pk)
        status = 400
    else:
        chosen = request.GET.get("workload")
        form = PlannerForm(
            workloads=workloads,
            initial=initial_for(
                spec=experiment.spec, workload=chosen if chosen in workloads else workloads[0]
            ),
        )
        status = 200
    return render(
        request,
        "experiments/planner_form.html",
        {"experiment": experiment, "form": form},
        status=status,
    )


def _start(request: HttpRequest, form: PlannerForm, experiment: Any) -> Run | None:
    """Start the sweep, or put the refusal on the form (None)."""
    try:
        return plan_start(
            experiment=experiment,
            user=signed_in(request),
            request=form.plan_request(),
            rate=run_start_rate(),
        )
    except sc.SpecError as exc:
        form.add_plan_errors(exc.errors)
    except RunStartThrottledError as exc:
        form.add_error(
            None,
            f"you started too many runs recently (LAB_API_RUN_START_RATE); "
            f"try again in {exc.retry_after:.0f} s",
        )
    return None


@require_GET
def run_plan(request: HttpRequest, pk: int) -> HttpResponse:
    """The sweep's progress while it runs, then its chart, table and assumptions;
    ``?work=36h`` adds the expected wall-clock time to finish that much work."""
    run = readable_run(request, pk)
    workload = selectors_planner.run_swept_workload(run=run)
    if workload is None:
        raise Http404("This run does not sweep a checkpoint interval")
    result = selectors_planner.run_plan(run=run)
    work, work_error = _work(request, result)
    return render(
        request,
        "experiments/planner_run.html",
        {
            "run": run,
            "experiment": run.experiment,
            "workload": workload,
            "status": selectors_cache.run_cached(
                run=run, kind="page-status", build=lambda: selectors.run_status(run=run)
            ),
            "result": result,
            "figures": {"planner": planner_figure(result)} if result else None,
            "work_text": request.GET.get("work", ""),
            "work_rows": result.wall_clock_for(work) if result and work else [],
            "work_error": work_error,
        },
    )


def _work(request: HttpRequest, result: Any) -> tuple[float | None, str]:
    text = request.GET.get("work", "").strip()
    if not text or result is None:
        return None, ""
    try:
        work = sc.parse_duration(text)
    except ValueError as exc:
        return None, f"work: {exc}"
    if not work > 0:
        return None, "work: must be positive"
    return work, ""
