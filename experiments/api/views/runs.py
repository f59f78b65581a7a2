"""Runs: start one (throttled), list, read with progress per variant, cancel."""

from __future__ import annotations

from django.db.models import QuerySet
from django.http import HttpResponse
from django_filters.rest_framework import DjangoFilterBackend
from drf_spectacular.types import OpenApiTypes
from drf_spectacular.utils import OpenApiResponse, extend_schema
from rest_framework import generics, status
from rest_framework.exceptions import Throttled
from rest_framework.request import Request
from rest_framework.response import Response
from rest_framework.views import APIView

import scheduler_core as sc
from experiments import selectors, selectors_api, selectors_cache, services
from experiments.api.exceptions import conflict, spec_invalid
from experiments.api.filters import RunFilter
from experiments.api.pagination import Pagination
from experiments.api.schema import ERROR_REF
from experiments.api.serializers import RunListOutputSerializer, RunOutputSerializer
from experiments.api.throttles import run_start_rate
from experiments.api.views.common import (
    owned_experiment,
    owned_run,
    readable_run,
    user_context,
    visible_experiment,
    visible_run,
)
from experiments.api.views.experiments import yaml_download
from experiments.models import Run
from experiments.specs import spec_yaml
from experiments.users import signed_in


def run_response(request: Request, run: Run, code: int = status.HTTP_200_OK) -> Response:
    return Response(RunOutputSerializer(run, context=user_context(request)).data, status=code)


class RunListApi(generics.ListAPIView):
    """Every run you may see, newest first; filter by ``experiment`` and ``status``."""

    filter_backends = [DjangoFilterBackend]
    filterset_class = RunFilter
    pagination_class = Pagination
    serializer_class = RunListOutputSerializer

    def get_queryset(self) -> QuerySet:
        return selectors_api.run_visible_list(user=self.request.user)


class ExperimentRunsApi(generics.ListAPIView):
    """``GET``: an experiment's runs. ``POST``: start a run (owner only; throttled per
    user: 429 with ``Retry-After`` past ``LAB_API_RUN_START_RATE``)."""

    pagination_class = Pagination
    serializer_class = RunListOutputSerializer

    def get_queryset(self) -> QuerySet:
        return selectors.run_list(experiment=visible_experiment(self.request, self.kwargs["pk"]))

    @extend_schema(request=None, responses={201: RunOutputSerializer, 429: ERROR_REF})
    def post(self, request: Request, pk: int) -> Response:
        experiment = owned_experiment(request, pk)
        try:
            run = services.run_start(
                experiment=experiment, user=signed_in(request), rate=run_start_rate()
            )
        except sc.SpecError as exc:
            raise spec_invalid(exc.errors) from None
        except services.RunStartThrottledError as exc:
            raise Throttled(wait=exc.retry_after) from None
        return run_response(request, run, status.HTTP_201_CREATED)


class RunDetailApi(APIView):
    """A run: status, overall progress and progress per variant (poll this)."""

    @extend_schema(responses=RunOutputSerializer)
    def get(self, request: Request, pk: int) -> Response:
        run = readable_run(request, pk)  # visibility first, then the shared cache
        return Response(
            selectors_cache.run_cached(
                run=run,
                kind="api-run",
                build=lambda: RunOutputSerializer(run, context=user_context(request)).data,
            )
        )


class RunCancelApi(APIView):
    """Stop a queued or running run (owner only); 409 if it had already finished."""

    @extend_schema(request=None, responses={200: RunOutputSerializer, 409: ERROR_REF})
    def post(self, request: Request, pk: int) -> Response:
        run = owned_run(request, pk)
        if not services.run_cancel(run=run):
            raise conflict(f"the run had already {run.status}")
        return run_response(request, run)


class RunSpecYamlApi(APIView):
    """The spec the run was started with (frozen), as YAML."""

    @extend_schema(responses={(200, "application/yaml"): OpenApiResponse(OpenApiTypes.OBJECT)})
    def get(self, request: Request, pk: int) -> HttpResponse:
        run = visible_run(request, pk)
        return yaml_download(spec_yaml(run.spec), f"run-{run.pk}-spec")
