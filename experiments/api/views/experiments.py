"""Experiments: list, create, read, update, delete, clone, validate, create from a
preset, the spec as YAML; and the presets themselves."""

from __future__ import annotations

from django.db.models import QuerySet
from django.http import HttpResponse
from django_filters.rest_framework import DjangoFilterBackend
from drf_spectacular.types import OpenApiTypes
from drf_spectacular.utils import OpenApiResponse, extend_schema
from rest_framework import generics, serializers, status
from rest_framework.request import Request
from rest_framework.response import Response
from rest_framework.views import APIView

import scheduler_core as sc
from experiments import selectors, services
from experiments.api.exceptions import ApiError, spec_invalid
from experiments.api.filters import ExperimentFilter
from experiments.api.pagination import Pagination
from experiments.api.serializers import (
    ExperimentListOutputSerializer,
    ExperimentOutputSerializer,
    MetaInputSerializer,
    SpecDocumentField,
)
from experiments.api.views.common import (
    owned_experiment,
    user_context,
    validated_with_spec,
    visible_experiment,
)
from experiments.models import Experiment
from experiments.specs import preset_or_none, spec_document, spec_parse, spec_yaml
from experiments.users import signed_in

YAML_TYPE = "application/yaml; charset=utf-8"


def experiment_response(
    request: Request, experiment: Experiment, code: int = status.HTTP_200_OK
) -> Response:
    data = ExperimentOutputSerializer(experiment, context=user_context(request)).data
    response = Response(data, status=code)
    response["ETag"] = etag(experiment.version)
    return response


def etag(version: int) -> str:
    return f'"{version}"'


def if_match_version(request: Request) -> int | None:
    """The version an ``If-Match`` header names (``"3"``, ``W/"3"``); None without one or
    for ``*``. An ETag this API never sent matches no version: 412 like a stale one."""
    header = request.headers.get("If-Match", "").strip()
    if not header or header == "*":
        return None
    tag = header.split(",")[0].strip().removeprefix("W/").strip('"')
    return int(tag) if tag.isdigit() and len(tag) < 12 else 0


class ExperimentListApi(generics.ListAPIView):
    """``GET``: the experiments you may see (filters, ordering, pages).
    ``POST``: a new experiment of yours from a spec."""

    filter_backends = [DjangoFilterBackend]
    filterset_class = ExperimentFilter
    pagination_class = Pagination
    serializer_class = ExperimentListOutputSerializer

    class InputSerializer(MetaInputSerializer):
        spec = SpecDocumentField()

    def get_queryset(self) -> QuerySet:
        # Meta.ordering does not apply to a query with aggregates (run_count): say it.
        return selectors.experiment_list(user=self.request.user).order_by("-updated_at", "-id")

    def get_serializer_context(self) -> dict:
        return user_context(self.request)

    @extend_schema(request=InputSerializer, responses={201: ExperimentOutputSerializer})
    def post(self, request: Request) -> Response:
        data, spec = validated_with_spec(self.InputSerializer(data=request.data))
        assert spec is not None  # the serializer requires it
        experiment = services.experiment_create(
            owner=signed_in(request), spec=spec, tags=data["tags"], shared_with=data["shared_with"]
        )
        return experiment_response(request, experiment, status.HTTP_201_CREATED)


class ExperimentDetailApi(APIView):
    """One experiment: read (anyone who may see it); replace, change, delete (owner)."""

    class InputSerializer(MetaInputSerializer):
        spec = SpecDocumentField()
        version = serializers.IntegerField(
            required=False,
            min_value=1,
            max_value=2**31 - 1,
            help_text="the version you edited: 409 if the experiment has moved on",
        )

    @extend_schema(responses=ExperimentOutputSerializer)
    def get(self, request: Request, pk: int) -> Response:
        return experiment_response(request, visible_experiment(request, pk))

    @extend_schema(request=InputSerializer, responses=ExperimentOutputSerializer)
    def put(self, request: Request, pk: int) -> Response:
        return self._update(request, pk, partial=False)

    @extend_schema(request=InputSerializer(partial=True), responses=ExperimentOutputSerializer)
    def patch(self, request: Request, pk: int) -> Response:
        return self._update(request, pk, partial=True)

    @extend_schema(responses={204: None})
    def delete(self, request: Request, pk: int) -> Response:
        services.experiment_delete(experiment=owned_experiment(request, pk))
        return Response(status=status.HTTP_204_NO_CONTENT)

    def _update(self, request: Request, pk: int, *, partial: bool) -> Response:
        """PUT replaces spec, tags and sharing; PATCH writes only the fields it is given.
        With ``If-Match`` (412) or ``version`` (409), an edit of an older version is
        refused instead of overwriting someone else's."""
        experiment = owned_experiment(request, pk)
        serializer = self.InputSerializer(data=request.data, partial=partial)
        data, spec = validated_with_spec(serializer)
        if spec is None:
            _check_stored_spec(experiment)
        header_version = if_match_version(request)
        expected = header_version if header_version is not None else data.get("version")
        try:
            experiment = services.experiment_update(
                experiment=experiment,
                spec=spec,
                tags=data.get("tags"),
                shared_with=data.get("shared_with"),
                expected_version=expected,
            )
        except services.ExperimentChangedError as exc:
            raise _changed(exc, precondition=header_version is not None) from None
        return experiment_response(request, experiment)


def _changed(exc: services.ExperimentChangedError, *, precondition: bool) -> ApiError:
    message = (
        f"the experiment was changed since you read it (you edited version "
        f"{exc.expected}, it is at version {exc.current}): read it again and "
        "reapply your change"
    )
    if precondition:
        return ApiError(
            [{"path": "", "message": message}], status_code=status.HTTP_412_PRECONDITION_FAILED
        )
    return ApiError([{"path": "version", "message": message}], status_code=status.HTTP_409_CONFLICT)


def _check_stored_spec(experiment: Experiment) -> None:
    """A PATCH that leaves the spec alone still needs it to pass (one an older version
    wrote may not): then the answer lists why, and a PATCH with a fixed spec is needed.
    Only checked, never written back: that would undo a concurrent PUT."""
    try:
        spec_parse(document=experiment.spec)
    except sc.SpecError as exc:
        raise spec_invalid(exc.errors) from None


class ExperimentCloneApi(APIView):
    """A private copy for you of an experiment you may see (same spec and tags)."""

    @extend_schema(request=None, responses={201: ExperimentOutputSerializer})
    def post(self, request: Request, pk: int) -> Response:
        copy = services.experiment_clone(
            experiment=visible_experiment(request, pk), owner=signed_in(request)
        )
        return experiment_response(request, copy, status.HTTP_201_CREATED)


class ExperimentValidateApi(APIView):
    """The form's checks (spec, limits, tags, sharing) without saving anything."""

    class InputSerializer(MetaInputSerializer):
        spec = SpecDocumentField()

    class OutputSerializer(serializers.Serializer):
        valid = serializers.BooleanField()
        name = serializers.CharField()
        variants = serializers.ListField(child=serializers.CharField())
        spec = serializers.JSONField(help_text="the spec as it would be stored")

    @extend_schema(request=InputSerializer, responses=OutputSerializer)
    def post(self, request: Request) -> Response:
        _, spec = validated_with_spec(self.InputSerializer(data=request.data))
        assert spec is not None  # the serializer requires it
        return Response(
            self.OutputSerializer(
                {
                    "valid": True,
                    "name": spec.name,
                    "variants": sc.variant_names(spec),
                    "spec": spec_document(spec),
                }
            ).data
        )


class ExperimentFromPresetApi(APIView):
    """A new experiment of yours from a scenario preset (``GET /presets/`` lists them)."""

    class InputSerializer(MetaInputSerializer):
        preset = serializers.CharField(max_length=100)

    @extend_schema(request=InputSerializer, responses={201: ExperimentOutputSerializer})
    def post(self, request: Request) -> Response:
        serializer = self.InputSerializer(data=request.data)
        serializer.is_valid(raise_exception=True)
        data = serializer.validated_data
        preset = preset_or_none(data["preset"])
        if preset is None:
            raise ApiError([{"path": "preset", "message": f"no preset '{data['preset']}'"}])
        experiment = services.experiment_create(
            owner=signed_in(request),
            spec=preset.spec(),
            tags=data["tags"],
            shared_with=data["shared_with"],
            source_preset=preset.id,
        )
        return experiment_response(request, experiment, status.HTTP_201_CREATED)


class ExperimentSpecYamlApi(APIView):
    """The experiment's spec as YAML, as the editor's YAML tab shows it."""

    @extend_schema(responses={(200, "application/yaml"): OpenApiResponse(OpenApiTypes.OBJECT)})
    def get(self, request: Request, pk: int) -> HttpResponse:
        experiment = visible_experiment(request, pk)
        return yaml_download(spec_yaml(experiment.spec), f"experiment-{experiment.pk}")


def yaml_download(text: str, filename: str) -> HttpResponse:
    response = HttpResponse(text, content_type=YAML_TYPE)
    response["Content-Disposition"] = f'attachment; filename="{filename}.yaml"'
    return response


class PresetSerializer(serializers.Serializer):
    id = serializers.CharField()
    name = serializers.CharField()
    description = serializers.CharField()


class PresetListApi(APIView):
    """Every scenario preset, in scenario order."""

    @extend_schema(responses=PresetSerializer(many=True))
    def get(self, request: Request) -> Response:
        return Response(PresetSerializer(sc.list_presets(studies=True), many=True).data)


class PresetDetailApi(APIView):
    """One preset with its spec (as stored) and its YAML text."""

    class OutputSerializer(PresetSerializer):
        spec = serializers.JSONField()
        yaml = serializers.CharField()

    @extend_schema(responses=OutputSerializer)
    def get(self, request: Request, preset_id: str) -> Response:
        preset = preset_or_none(preset_id)
        if preset is None:
            raise ApiError(
                [{"path": "", "message": f"no preset '{preset_id}'"}],
                status_code=status.HTTP_404_NOT_FOUND,
            )
        return Response(
            self.OutputSerializer(
                {
                    "id": preset.id,
                    "name": preset.name,
                    "description": preset.description,
                    "spec": spec_document(preset.spec()),
                    "yaml": preset.text,
                }
            ).data
        )
