"""Lookups every view needs: 404 for what you may not see, 403 for what you may see
but not change."""

from __future__ import annotations

from django.core.exceptions import PermissionDenied
from django.http import Http404, HttpRequest

from experiments import selectors
from experiments.models import Experiment, Run


def visible_experiment(request: HttpRequest, pk: int) -> Experiment:
    experiment = selectors.experiment_get(user=request.user, pk=pk)
    if experiment is None:
        raise Http404("No such experiment")
    return experiment


def owned_experiment(request: HttpRequest, pk: int) -> Experiment:
    experiment = visible_experiment(request, pk)
    if not selectors.experiment_can_edit(user=request.user, experiment=experiment):
        raise PermissionDenied("Only the owner may change this experiment")
    return experiment


def visible_run(request: HttpRequest, pk: int) -> Run:
    run = selectors.run_get(user=request.user, pk=pk)
    if run is None:
        raise Http404("No such run")
    return run


def readable_run(request: HttpRequest, pk: int) -> Run:
    """``visible_run`` for the read endpoints: the same rule (404 for what you may not
    see), without loading the specs (see ``selectors.run_get_brief``)."""
    run = selectors.run_get_brief(user=request.user, pk=pk)
    if run is None:
        raise Http404("No such run")
    return run
