"""Results of a succeeded run: the per-variant summary with replication statistics,
per-workload records, the event log, streamed exports, and comparisons across runs.

A run that has not succeeded has no final numbers (a failed or cancelled run keeps
none), so these answer 409 with its status rather than a partial table.
"""

from __future__ import annotations

import types
import typing
from collections.abc import Callable
from typing import Any

from django.db.models import QuerySet
from django.http import Http404
from django.http.response import HttpResponseBase
from django_filters.rest_framework import DjangoFilterBackend
from drf_spectacular.types import OpenApiTypes
from drf_spectacular.utils import OpenApiParameter, OpenApiResponse, extend_schema
from rest_framework import generics, serializers, status
from rest_framework.exceptions import Throttled
from rest_framework.request import Request
from rest_framework.response import Response
from rest_framework.views import APIView

import scheduler_core as sc
from experiments import selectors_api, selectors_cache
from experiments.api import exports
from experiments.api.exceptions import ApiError, conflict
from experiments.api.filters import WorkloadRecordFilter
from experiments.api.pagination import Pagination, paginated_response, paginated_schema
from experiments.api.schema import ERROR_REF
from experiments.api.views.common import readable_run
from experiments.models import Run
from experiments.models import WorkloadRecord as WorkloadRecordRow
from experiments.services import exports as export_services
from scheduler_core.metrics import WorkloadRecord
from scheduler_core.stats import IntervalMethod


def run_with_results(request: Request, pk: int) -> Run:
    """A succeeded run the user may see (its specs not loaded: see ``readable_run``)."""
    run = readable_run(request, pk)
    if not selectors_api.run_has_results(run=run):
        raise conflict(f"the run has no results: it is {run.status}")
    return run


def cached_page(request: Request, run: Run, kind: str, build: Callable[[], Response]) -> Response:
    """A page of a list, from the shared cache when this exact page (its absolute URL:
    the links in it name the host) was read before in the run's current state."""
    data = selectors_cache.run_cached(
        run=run, kind=kind, params=request.build_absolute_uri(), build=lambda: build().data
    )
    return Response(data)


class StatsSerializer(serializers.Serializer):
    mean = serializers.FloatField(allow_null=True)
    ci95 = serializers.FloatField(allow_null=True, help_text="half-width of the 95% CI")
    min = serializers.FloatField(allow_null=True)
    max = serializers.FloatField(allow_null=True)
    n = serializers.IntegerField(help_text="replications with a value")


class ReplicationSummarySerializer(serializers.Serializer):
    replication = serializers.IntegerField()
    seed = serializers.IntegerField(allow_null=True)
    summary = serializers.DictField(child=serializers.FloatField(allow_null=True))


class VariantSummarySerializer(serializers.Serializer):
    variant = serializers.CharField()
    preemption = serializers.CharField()
    placement = serializers.CharField()
    unserved = serializers.BooleanField(
        help_text="an urgent workload never became useful before the horizon"
    )
    metrics = serializers.DictField(child=StatsSerializer())
    replications = ReplicationSummarySerializer(many=True)


def _record_field(annotation: Any) -> serializers.Field:
    """A serializer field for a WorkloadRecord attribute: its type, null where allowed."""
    nullable = isinstance(annotation, types.UnionType)
    kind = (
        next(a for a in typing.get_args(annotation) if a is not type(None))
        if nullable
        else annotation
    )
    field = {
        str: serializers.CharField,
        int: serializers.IntegerField,
        float: serializers.FloatField,
        bool: serializers.BooleanField,
    }[kind]
    return field(allow_null=nullable, required=False)


class _RecordBase(serializers.Serializer):
    variant = serializers.CharField()
    replication = serializers.IntegerField(source="replication_number")
    seed = serializers.IntegerField(allow_null=True)


RecordSerializer = type(
    "RecordSerializer",
    (_RecordBase,),
    {
        "__doc__": "One workload of one replication: where it is from, then every field of "
        "scheduler_core's WorkloadRecord (typed from the dataclass).",
        **{
            name: _record_field(kind)
            for name, kind in typing.get_type_hints(WorkloadRecord).items()
        },
    },
)


@extend_schema(responses={200: RecordSerializer(many=True), 409: ERROR_REF})
class RunWorkloadsApi(generics.ListAPIView):
    """Per-workload records (``scheduler_core``'s WorkloadRecord fields), one per
    workload per replication, in (variant, replication, simulator) order; filter by
    ``variant`` and ``replication``."""

    filter_backends = [DjangoFilterBackend]
    filterset_class = WorkloadRecordFilter
    pagination_class = Pagination
    serializer_class = RecordSerializer

    def get_queryset(self) -> QuerySet[Any]:
        if getattr(self, "swagger_fake_view", False):  # the schema generator: no run
            return WorkloadRecordRow.objects.none()
        return selectors_api.run_workload_records(run=self._run())

    _found: Run | None = None

    def _run(self) -> Run:
        """The run, checked once per request (the queryset and the cache key need it)."""
        if self._found is None:
            self._found = run_with_results(self.request, self.kwargs["pk"])
        return self._found

    def list(self, request: Request, *args: Any, **kwargs: Any) -> Response:
        return cached_page(
            request,
            self._run(),
            "api-workloads",
            lambda: super(RunWorkloadsApi, self).list(request),
        )


class EventFilterSerializer(serializers.Serializer):
    variant = serializers.CharField(required=False, allow_blank=True, max_length=200)
    replication = serializers.IntegerField(required=False, min_value=0, max_value=2**31 - 1)
    workload = serializers.CharField(required=False, allow_blank=True, max_length=200)
    pod = serializers.CharField(required=False, allow_blank=True, max_length=250)
    node = serializers.CharField(required=False, allow_blank=True, max_length=200)
    reason = serializers.CharField(required=False, allow_blank=True, max_length=40)
    time_min = serializers.FloatField(required=False, help_text="seconds, inclusive")
    time_max = serializers.FloatField(required=False, help_text="seconds, inclusive")


class EventSerializer(serializers.Serializer):
    variant = serializers.CharField()
    replication = serializers.IntegerField(source="replication_number")
    seq = serializers.IntegerField()
    time = serializers.FloatField()
    reason = serializers.CharField()
    workload = serializers.CharField()
    pod = serializers.CharField()
    node = serializers.CharField()
    value = serializers.FloatField()
    related = serializers.CharField()
    message = serializers.CharField()
    decision = serializers.IntegerField(
        allow_null=True,
        help_text="id of the decision that explains it: "
        "GET decisions/?variant=…&replication=…&id=…",
    )


class RunEventsApi(APIView):
    """The event log, in (variant, replication, simulator) order, filtered."""

    @extend_schema(
        parameters=[EventFilterSerializer],
        responses={200: paginated_schema(EventSerializer, "PaginatedEvents"), 409: ERROR_REF},
    )
    def get(self, request: Request, pk: int) -> Response:
        run = run_with_results(request, pk)
        filters = _query(EventFilterSerializer, request)
        return cached_page(
            request,
            run,
            "api-events",
            lambda: paginated_response(
                items=selectors_api.run_events(run=run, filters=filters),
                serializer_class=EventSerializer,
                request=request,
                view=self,
            ),
        )


class DecisionFilterSerializer(serializers.Serializer):
    variant = serializers.CharField(required=False, allow_blank=True, max_length=200)
    replication = serializers.IntegerField(required=False, min_value=0, max_value=2**31 - 1)
    id = serializers.IntegerField(required=False, min_value=0, max_value=2**31 - 1)
    pod = serializers.CharField(
        required=False,
        allow_blank=True,
        max_length=250,
        help_text="preemptor, victim, reprieved or unit member",
    )
    workload = serializers.CharField(required=False, allow_blank=True, max_length=200)
    node = serializers.CharField(
        required=False, allow_blank=True, max_length=200, help_text="chosen or candidate node"
    )
    reason = serializers.CharField(
        required=False,
        allow_blank=True,
        max_length=200,
        help_text="kind (FailedScheduling, Preemption, "
        "WorkloadPreemption, QueuePreemption) or cause",
    )


class DecisionSerializer(serializers.Serializer):
    variant = serializers.CharField()
    replication = serializers.IntegerField()
    id = serializers.IntegerField()
    time = serializers.FloatField()
    kind = serializers.CharField()
    workload = serializers.CharField()
    pod = serializers.CharField()
    node = serializers.CharField()
    message = serializers.CharField(help_text="kube-scheduler's wording where it has one")
    cause = serializers.CharField()
    rule = serializers.CharField(help_text="which node-selection rule decided")
    victims = serializers.ListField(child=serializers.CharField())
    candidates = serializers.ListField(child=serializers.DictField())
    reprieved = serializers.ListField(child=serializers.DictField())
    units = serializers.ListField(child=serializers.DictField())
    targets = serializers.ListField(child=serializers.DictField())
    events = serializers.ListField(
        child=serializers.ListField(), help_text="[time, reason, pod or workload] it explains"
    )


class RunDecisionsApi(APIView):
    """Why each scheduling and preemption decision went as it did (docs/decisions.md),
    in (variant, replication, decision) order, filtered."""

    @extend_schema(
        parameters=[DecisionFilterSerializer],
        responses={200: paginated_schema(DecisionSerializer, "PaginatedDecisions"), 409: ERROR_REF},
    )
    def get(self, request: Request, pk: int) -> Response:
        run = run_with_results(request, pk)
        decisions = selectors_api.run_decisions(
            run=run, filters=_query(DecisionFilterSerializer, request)
        )
        return paginated_response(
            items=decisions, serializer_class=DecisionSerializer, request=request, view=self
        )


TABLES = export_services.TABLES


class RunExportApi(APIView):
    """A download of ``summary`` (one row per variant and metric), ``workloads`` or
    ``events`` as CSV, JSON or Parquet. ``events`` takes the event log's filters,
    ``workloads`` its ``variant`` and ``replication``.

    Each export is written once to a file and served from it. A large one is written
    by a worker: until it is ready the answer is 202 with ``Retry-After`` (seconds) and
    ``Location`` (this URL: ask again); 429 when you already have
    ``LAB_EXPORT_BUILDS_PER_USER`` exports being prepared."""

    @extend_schema(
        parameters=[
            EventFilterSerializer,
            OpenApiParameter("table", str, OpenApiParameter.PATH, enum=TABLES),
            OpenApiParameter("fmt", str, OpenApiParameter.PATH, enum=exports.FORMATS),
        ],
        responses={
            (200, exports.CONTENT_TYPES["csv"].split(";")[0]): OpenApiResponse(OpenApiTypes.STR),
            (200, "application/json"): OpenApiResponse(OpenApiTypes.ANY),
            (200, exports.CONTENT_TYPES["parquet"]): OpenApiResponse(OpenApiTypes.BINARY),
            202: OpenApiResponse(description="being prepared: ask again after Retry-After seconds"),
            409: ERROR_REF,
            429: ERROR_REF,
        },
    )
    def get(self, request: Request, pk: int, table: str, fmt: str) -> HttpResponseBase:
        if table not in TABLES or fmt not in exports.FORMATS:
            raise ApiError(
                [
                    {
                        "path": "",
                        "message": f"no export {table}.{fmt} (tables: "
                        f"{', '.join(TABLES)}; formats: {', '.join(exports.FORMATS)})",
                    }
                ],
                status_code=404,
            )
        run = run_with_results(request, pk)
        export = export_services.export_of(
            run=run, table=table, fmt=fmt, filters=_query(EventFilterSerializer, request)
        )
        try:
            state = export_services.export_request(run=run, export=export, user=request.user)
        except export_services.ExportBuildsBusyError as exc:
            raise Throttled(wait=exc.retry_after, detail=str(exc)) from None
        if state.path is None:
            return _being_prepared(request, state.retry_after)
        try:
            return exports.file_response(state.path, fmt=fmt, filename=f"run-{run.pk}-{table}")
        except FileNotFoundError:  # the run was deleted a moment ago
            raise Http404("No such run") from None


def _being_prepared(request: Request, retry_after: int) -> Response:
    response = Response(
        {"status": "preparing", "retry_after": retry_after, "location": request.get_full_path()},
        status=status.HTTP_202_ACCEPTED,
    )
    response["Retry-After"] = str(retry_after)
    response["Location"] = request.get_full_path()
    return response


def _query(serializer_class: type[serializers.Serializer], request: Request) -> dict[str, Any]:
    """Validated query parameters (unknown ones are ignored, as DRF filters do)."""
    serializer = serializer_class(data=request.query_params)
    serializer.is_valid(raise_exception=True)
    return dict(serializer.validated_data)


class ComparePairSerializer(serializers.Serializer):
    unserved = serializers.BooleanField(
        help_text="an urgent workload never became useful before the horizon"
    )
    run = serializers.IntegerField()
    experiment = serializers.IntegerField()
    experiment_name = serializers.CharField()
    variant = serializers.CharField()
    preemption = serializers.CharField()
    placement = serializers.CharField()


class CompareValueSerializer(StatsSerializer):
    difference = serializers.FloatField(allow_null=True, help_text="mean - baseline mean")
    difference_ci95 = serializers.FloatField(
        allow_null=True, help_text="95% half-width of the difference; its kind is `interval`"
    )
    interval = serializers.ChoiceField(
        choices=[m.value for m in IntervalMethod],
        help_text="paired: both ran the same seeds (common random numbers), t over the "
        "per-seed differences; welch: different seeds, independent samples; "
        "none: fewer than two replications with a value on a side",
    )
    pairs = serializers.IntegerField(help_text="seeds paired (0 unless interval is paired)")
    relative_difference = serializers.FloatField(
        allow_null=True, help_text="difference / |baseline mean|"
    )
    best = serializers.BooleanField(
        help_text="best on this metric (the registry's direction; never a variant whose "
        "urgent workload was never useful)"
    )


class MetricInfoSerializer(serializers.Serializer):
    """One entry of the core's metric registry."""

    name = serializers.CharField()
    # The registry's key is "label"; the metaclass moves declared fields off the class,
    # so this does not shadow Field.label at run time (only the stubs think so).
    label = serializers.CharField()  # type: ignore[assignment]
    title = serializers.CharField(help_text="label with unit, as column heads show it")
    unit = serializers.CharField(help_text="s, GPU·s, count or ratio")
    group = serializers.CharField()
    definition = serializers.CharField()
    better = serializers.ChoiceField(choices=["lower", "higher"])
    workloads = serializers.CharField(help_text="how one replication folds its workloads")
    replications = serializers.CharField(help_text="how replications aggregate")
    null = serializers.CharField(help_text="what a null value means, as pages print it")
    time = serializers.BooleanField()


class MetricRegistryApi(APIView):
    """Every metric: label, unit, definition, which direction is better, how it
    aggregates, how a null reads; and the interval methods the compare endpoint uses."""

    class OutputSerializer(serializers.Serializer):
        metrics = MetricInfoSerializer(many=True)
        interval_methods = serializers.DictField(child=serializers.CharField())
        never = serializers.CharField(help_text="how a time that never happened reads")

    @extend_schema(responses=OutputSerializer)
    def get(self, request: Request) -> Response:
        return Response(self.OutputSerializer(sc.registry_document()).data)


class RunSummaryApi(APIView):
    """Per variant: mean, 95% CI, min, max and n of every metric across replications,
    and each replication's own values; ``metric_info`` describes each metric (the
    registry entries, also at ``/api/v1/metrics/``)."""

    class OutputSerializer(serializers.Serializer):
        run = serializers.IntegerField()
        metrics = serializers.ListField(child=serializers.CharField())
        metric_info = MetricInfoSerializer(many=True)
        variants = VariantSummarySerializer(many=True)

    @extend_schema(responses={200: OutputSerializer, 409: ERROR_REF})
    def get(self, request: Request, pk: int) -> Response:
        run = run_with_results(request, pk)
        return Response(
            selectors_cache.run_cached(
                run=run, kind="api-summary", build=lambda: self._summary(run)
            )
        )

    def _summary(self, run: Run) -> Any:
        names = selectors_api.metric_names(run=run)
        return self.OutputSerializer(
            {
                "run": run.pk,
                "metrics": names,
                "metric_info": [sc.metric_info(name).as_dict() for name in names],
                "variants": selectors_api.run_variant_summaries(run=run),
            }
        ).data


class CompareRowSerializer(serializers.Serializer):
    metric = serializers.CharField()
    values = CompareValueSerializer(many=True, help_text="one per pair, in pair order")


class CompareApi(APIView):
    """Any set of (run, variant) pairs side by side: per metric, each pair's statistics
    and its difference from the first pair (the baseline) with a 95% interval, paired
    when both ran the same seeds (``interval`` says which kind)."""

    class OutputSerializer(serializers.Serializer):
        pairs = ComparePairSerializer(many=True)
        metrics = CompareRowSerializer(many=True)

    pair_parameter = OpenApiParameter(
        "pair",
        str,
        many=True,
        required=True,
        explode=True,
        description="RUN:VARIANT, repeated (1 to 20); the first is the baseline",
    )

    @extend_schema(parameters=[pair_parameter], responses=OutputSerializer)
    def get(self, request: Request) -> Response:
        pairs = _pairs(request.query_params.getlist("pair"))
        try:
            compared = selectors_api.comparison_variants(user=request.user, pairs=pairs)
        except selectors_api.ComparisonError as exc:
            raise ApiError([{"path": f"pair[{exc.index}]", "message": exc.message}]) from None
        return Response(
            self.OutputSerializer(
                {
                    "pairs": [_pair(c) for c in compared],
                    "metrics": selectors_api.comparison_table(compared=compared),
                }
            ).data
        )


def _pair(compared: selectors_api.ComparedVariant) -> dict[str, Any]:
    run = compared.run
    return {
        "run": run.pk,
        "experiment": run.experiment_id,
        "experiment_name": run.experiment.name,
        "variant": compared.variant,
        "preemption": compared.preemption,
        "placement": compared.placement,
        "unserved": compared.unserved,
    }


MAX_PAIRS = 20


def _pairs(values: list[str]) -> list[tuple[int, str]]:
    """``["12:grace-30s", ...]`` → ``[(12, "grace-30s"), ...]``, every bad one reported."""
    errors, pairs = [], []
    if not 1 <= len(values) <= MAX_PAIRS:
        errors.append({"path": "pair", "message": f"give 1 to {MAX_PAIRS} pairs as RUN:VARIANT"})
    for index, value in enumerate(values[:MAX_PAIRS]):
        run, sep, variant = value.partition(":")
        if not (sep and run.strip().isdigit() and variant.strip()) or len(run.strip()) > 18:
            errors.append(
                {
                    "path": f"pair[{index}]",
                    "message": f"'{value}' is not RUN:VARIANT (e.g. 12:baseline)",
                }
            )
            continue
        pairs.append((int(run), variant.strip()))
    if errors:
        raise ApiError(errors)
    return pairs
