"""Why the scheduler did what it did: a replication's decision records as JSON for the
run page's decision panel, and a pod's page in the shape of ``kubectl describe pod``.

Everything shown is read from what ``scheduler_core`` stored (decision records, the event
log) or derived by it (``describe_pod``); nothing here interprets event names."""

from __future__ import annotations

from typing import Any

from django.http import Http404, HttpRequest, HttpResponse, JsonResponse
from django.shortcuts import render
from django.urls import reverse
from django.views.decorators.http import require_GET

from experiments import selectors, selectors_api
from experiments.charts import kubectl
from experiments.models import Replication, Run
from experiments.views.common import visible_run
from scheduler_core.decisions import describe_pod

MAX_POD_EVENTS = 2000
POD_PLACEHOLDER = "__pod__"
"""The page script puts the pod's name in its place."""


def _replication(run: Run, replication_pk: int) -> Replication:
    replication = (
        run.replications.filter(pk=replication_pk)
        .defer("event_log", "timeline", "timeline_costs")
        .first()
    )
    if replication is None:
        raise Http404("No such replication")
    return replication


def _filters(request: HttpRequest, replication: Replication) -> dict[str, Any]:
    filters: dict[str, Any] = {
        "variant": replication.variant,
        "replication": replication.replication,
    }
    for key in ("pod", "node", "reason", "workload"):
        value = request.GET.get(key, "").strip()[:250]
        if value:
            filters[key] = value
    raw = request.GET.get("id", "").strip()
    if raw:
        if not raw.isdigit() or len(raw) > 9:
            raise Http404("No such decision")
        filters["id"] = int(raw)
    return filters


@require_GET
def replication_decisions(request: HttpRequest, pk: int, replication_pk: int) -> JsonResponse:
    """Decisions of one replication, filtered by ``pod``, ``node``, ``reason``, ``id``."""
    run = visible_run(request, pk)
    replication = _replication(run, replication_pk)
    decisions = selectors_api.run_decisions(run=run, filters=_filters(request, replication))
    return JsonResponse(
        {
            "decisions": decisions[:200],
            "count": len(decisions),
            "diagnosis": replication.diagnosis,
            "pod_url": reverse("experiments:pod", args=[run.pk, replication.pk, POD_PLACEHOLDER]),
        }
    )


@require_GET
def pod_detail(request: HttpRequest, pk: int, replication_pk: int, pod: str) -> HttpResponse:
    run = visible_run(request, pk)
    replication = _replication(run, replication_pk)
    rows = selectors.replication_event_log(replication_id=replication.pk).filter({"pod": pod})[
        :MAX_POD_EVENTS
    ]
    if not rows:
        raise Http404("No such pod in this replication")
    described = describe_pod(rows, pod)
    decisions = selectors_api.run_decisions(
        run=run,
        filters={
            "variant": replication.variant,
            "replication": replication.replication,
            "pod": pod,
        },
    )
    events = [{**kubectl.describe(e.as_dict()), "decision": e.decision} for e in rows]
    return render(
        request,
        "experiments/pod_detail.html",
        {
            "run": run,
            "replication": replication,
            "pod": described,
            "events": events,
            "decisions": decisions,
            "group": _pod_group(run, described.workload),
            "workload": _workload_spec(run, described.workload),
        },
    )


def _workload_spec(run: Run, name: str) -> dict[str, Any]:
    return next((w for w in run.spec.get("workloads", []) if w.get("name") == name), {})


def _pod_group(run: Run, name: str) -> dict[str, Any] | None:
    """The workload's pod group as the spec gave it (minCount, policy, disruptionMode)."""
    group = _workload_spec(run, name).get("podGroup")
    return dict(group) if isinstance(group, dict) else None
