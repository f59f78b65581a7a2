"""The checkpoint planner over the API: start a sweep, read its curve.

``POST experiments/{id}/plan/`` is the form's one click (the sweep saved as the caller's
own experiment and started); ``GET runs/{id}/plan/`` the planner's result, computed by
``scheduler_core.checkpoint_planner`` (``?work=30d`` adds the expected wall-clock time
to finish that much work, per interval). Errors name the request's fields."""

from __future__ import annotations

import re
from collections.abc import Mapping, Sequence
from typing import Any

from django.http import Http404
from drf_spectacular.types import OpenApiTypes
from drf_spectacular.utils import (
    OpenApiParameter,
    OpenApiResponse,
    extend_schema,
    extend_schema_field,
)
from rest_framework import serializers, status
from rest_framework.exceptions import Throttled
from rest_framework.request import Request
from rest_framework.response import Response
from rest_framework.views import APIView

import scheduler_core as sc
from experiments import selectors_planner
from experiments.api.exceptions import ApiError, flatten_errors
from experiments.api.schema import ERROR_REF
from experiments.api.serializers import RunOutputSerializer
from experiments.api.throttles import run_start_rate
from experiments.api.views.common import readable_run, user_context, visible_experiment
from experiments.models import Status
from experiments.services.planner import plan_start
from experiments.services.runs import RunStartThrottledError
from experiments.users import signed_in
from scheduler_core.checkpoint_planner import (
    MAX_POINTS,
    MAX_REPLICATIONS,
    MIN_POINTS,
    PlanRequest,
)


@extend_schema_field(
    {
        "oneOf": [{"type": "number"}, {"type": "string"}],
        "description": "seconds, or a duration such as 30m, 32h or 1d 8h",
    }
)
class DurationSecondsField(serializers.Field):
    """Seconds as a number or as people write them (``"32h"``, ``"1d 8h"``)."""

    def to_internal_value(self, data: Any) -> float:
        if isinstance(data, bool):
            raise serializers.ValidationError("a number of seconds or a duration such as 32h")
        if isinstance(data, int | float):
            return float(data)
        try:
            return sc.parse_duration(str(data))
        except ValueError as exc:
            raise serializers.ValidationError(str(exc)) from None

    def to_representation(self, value: float) -> float:
        return value


class PlanInputSerializer(serializers.Serializer):
    workload = serializers.CharField(max_length=253)
    mtbf_seconds = DurationSecondsField(help_text="per node: mean time up between failures")
    repair_seconds = DurationSecondsField(required=False, default=4 * 3600.0)
    distribution = serializers.ChoiceField(
        choices=["exponential", "weibull", "lognormal"], default="exponential"
    )
    shape = serializers.FloatField(required=False, default=1.0)
    sigma = serializers.FloatField(required=False, default=1.0)
    min_interval_seconds = DurationSecondsField(required=False, default=300.0)
    max_interval_seconds = DurationSecondsField(required=False, default=3 * 3600.0)
    points = serializers.IntegerField(min_value=MIN_POINTS, max_value=MAX_POINTS, default=12)
    replications = serializers.IntegerField(min_value=2, max_value=MAX_REPLICATIONS, default=50)
    work_seconds = DurationSecondsField(required=False, allow_null=True, default=None)


def _snake(path: str) -> str:
    """``planner.mtbfSeconds`` -> ``mtbf_seconds``: the core's path as this request's field."""
    name = path.removeprefix("planner.")
    return re.sub(r"(?<!^)([A-Z])", r"_\1", name).lower() if path.startswith("planner.") else path


def _request_errors(errors: Sequence[Mapping[str, str]]) -> ApiError:
    return ApiError([{"path": _snake(e["path"]), "message": e["message"]} for e in errors])


class ExperimentPlanApi(APIView):
    """Start a checkpoint-interval sweep of one job of an experiment you may see: it is
    saved as your own experiment (tagged ``checkpoint-plan``) and run; poll the run,
    then read ``runs/{id}/plan/``. Throttled like starting a run."""

    @extend_schema(
        request=PlanInputSerializer,
        responses={201: RunOutputSerializer, 400: ERROR_REF, 429: ERROR_REF},
    )
    def post(self, request: Request, pk: int) -> Response:
        experiment = visible_experiment(request, pk)
        serializer = PlanInputSerializer(data=request.data)
        if not serializer.is_valid():
            raise ApiError(flatten_errors(serializer.errors))
        try:
            run = plan_start(
                experiment=experiment,
                user=signed_in(request),
                request=PlanRequest(**serializer.validated_data),
                rate=run_start_rate(),
            )
        except sc.SpecError as exc:
            raise _request_errors(exc.errors) from None
        except RunStartThrottledError as exc:
            raise Throttled(wait=exc.retry_after) from None
        body = RunOutputSerializer(run, context=user_context(request)).data
        return Response(body, status=status.HTTP_201_CREATED)


class RunPlanApi(APIView):
    """A sweep's planner result: per interval the mean wall-clock time and ETTR with
    their 95 % half-widths, Daly's closed form, the empirical optimum with the band of
    intervals not distinguishable from it, Young's and Daly's optima, the closed form's
    inputs, formulas and our semantics. ``plan`` is null until the run has succeeded;
    404 for a run that sweeps no checkpoint interval."""

    @extend_schema(
        parameters=[
            OpenApiParameter(
                "work",
                str,
                description="work to finish (seconds or 30d): adds ``work`` rows, the "
                "expected wall-clock time per interval (simulated, scaled; Daly's)",
            )
        ],
        responses={200: OpenApiResponse(OpenApiTypes.OBJECT), 400: ERROR_REF, 404: ERROR_REF},
    )
    def get(self, request: Request, pk: int) -> Response:
        run = readable_run(request, pk)
        workload = selectors_planner.run_swept_workload(run=run)
        if workload is None:
            raise Http404("this run sweeps no checkpoint interval")
        result = selectors_planner.run_plan(run=run)
        work = _work(request.query_params.get("work", ""))
        body: dict[str, Any] = {
            "run": run.pk,
            "status": run.status,
            "workload": workload,
            "plan": result.to_json() if result else None,
            "work": result.wall_clock_for(work) if result and work else None,
        }
        if run.status != Status.SUCCEEDED:
            body["message"] = f"the sweep is {run.status}: the plan is ready when it succeeds"
        return Response(body)


def _work(text: str) -> float | None:
    if not text.strip():
        return None
    try:
        work = sc.parse_duration(text.strip())
    except ValueError as exc:
        raise ApiError([{"path": "work", "message": str(exc)}]) from None
    if not work > 0:
        raise ApiError([{"path": "work", "message": "must be positive"}])
    return work
