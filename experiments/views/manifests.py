"""The pages' Kubernetes downloads: an experiment's manifests (its page) and one
variant of what a run ran ("apply this variant", the run page). Same permissions as the
spec: anyone who may see it."""

from __future__ import annotations

from collections.abc import Callable

from django.http import Http404, HttpRequest, HttpResponse
from django.views.decorators.http import require_GET

import scheduler_core as sc
from experiments import selectors_k8s
from experiments.views.common import visible_experiment, visible_run

YAML_TYPE = "application/yaml; charset=utf-8"


@require_GET
def experiment_manifests(request: HttpRequest, pk: int) -> HttpResponse:
    experiment = visible_experiment(request, pk)
    return _download(
        lambda **query: selectors_k8s.experiment_manifests(experiment=experiment, **query), request
    )


@require_GET
def run_manifests(request: HttpRequest, pk: int) -> HttpResponse:
    run = visible_run(request, pk)
    return _download(lambda **query: selectors_k8s.run_manifests(run=run, **query), request)


def _download(
    select: Callable[..., selectors_k8s.ManifestDownload], request: HttpRequest
) -> HttpResponse:
    """A link names a variant the page listed; one that is not (an edited spec, a typed
    URL) is a 404, like any other missing thing a page links to."""
    try:
        download = select(
            variant=request.GET.get("variant") or None,
            fmt=request.GET.get("format", "k8s"),
            policy_only=request.GET.get("policy_only") == "1",
        )
    except sc.SpecError as exc:
        raise Http404(str(exc)) from None
    response = HttpResponse(download.text, content_type=YAML_TYPE)
    response["Content-Disposition"] = f'attachment; filename="{download.filename}.yaml"'
    return response
