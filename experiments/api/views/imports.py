"""Trace import (issue 7): upload recorded-cluster files, get an ordinary experiment."""

from __future__ import annotations

from typing import Any

from drf_spectacular.utils import extend_schema, extend_schema_field
from rest_framework import serializers, status
from rest_framework.parsers import FormParser, MultiPartParser
from rest_framework.request import Request
from rest_framework.response import Response
from rest_framework.views import APIView

from experiments.api.exceptions import ApiError
from experiments.api.serializers import ExperimentOutputSerializer, TagsField, UsernamesField
from experiments.api.views.common import user_context
from experiments.api.views.experiments import etag
from experiments.models import Experiment
from experiments.services import imports
from experiments.users import signed_in
from scheduler_core.traces import FORMATS

MAX_FILES = 10


class ImportReportSerializer(serializers.Serializer):
    counts = serializers.DictField(
        child=serializers.IntegerField(),
        help_text="what the import made: nodes, pods, workloads, initial_pods... (per format)",
    )
    kinds = serializers.DictField(
        child=serializers.IntegerField(),
        help_text="Kubernetes imports: the input objects per kind ({} for trace formats)",
    )
    notes = serializers.ListField(
        child=serializers.CharField(),
        help_text="what was approximated or left out, each naming its objects by kind and "
        "name with the reason: every input object is used or named here",
    )


class ImportOutputSerializer(ExperimentOutputSerializer):
    """The new experiment, and what the importer said about the files."""

    import_report = serializers.SerializerMethodField()

    @extend_schema_field(ImportReportSerializer)
    def get_import_report(self, experiment: Experiment) -> dict[str, Any]:
        return ImportReportSerializer(self.context["import_report"]).data


class ExperimentImportApi(APIView):
    """``multipart/form-data``: ``format``, one or more ``files``, and optionally
    ``qos_map`` (YAML/JSON, or ``QOS=CLASS[:VALUE[:POLICY]],...``), ``defaults``
    (``KIND.FIELD=VALUE`` items), ``name``, ``horizon_seconds``, ``tags``,
    ``shared_with``. All or nothing: any bad row answers 400 with
    ``{path, file, line, column, message}`` items and stores nothing. 201 answers the
    experiment with ``import_report``: the counts of what was made, the objects read per
    kind and the notes (every object the import did not use, by kind and name, with the
    reason)."""

    parser_classes = [MultiPartParser, FormParser]

    class InputSerializer(serializers.Serializer):
        format = serializers.ChoiceField(choices=sorted(FORMATS))
        files = serializers.ListField(
            child=serializers.FileField(), min_length=1, max_length=MAX_FILES
        )
        qos_map = serializers.CharField(
            required=False, allow_blank=True, default="", max_length=100_000
        )
        defaults = serializers.CharField(
            required=False, allow_blank=True, default="", max_length=10_000
        )
        name = serializers.CharField(required=False, allow_blank=True, default="", max_length=200)
        horizon_seconds = serializers.FloatField(
            required=False, allow_null=True, default=None, min_value=1.0
        )
        start_seconds = serializers.FloatField(
            required=False,
            allow_null=True,
            default=None,
            help_text="the trace time that becomes t = 0 (blank: the recording's start)",
        )
        compress = serializers.FloatField(
            required=False, default=1.0, help_text="arrivals N times as dense (durations kept)"
        )
        sample = serializers.IntegerField(
            required=False,
            allow_null=True,
            default=None,
            help_text="keep at most N workloads, drawn with sample_seed",
        )
        sample_seed = serializers.IntegerField(required=False, default=0, min_value=0)
        placement_study = serializers.FloatField(
            required=False,
            allow_null=True,
            default=None,
            help_text="openb: import for the placement-study mode at this arrived load (%), "
            "fractional GPUs kept as gpuMilli (docs/placement-study.md)",
        )
        tags = TagsField(required=False, default=list, max_length=50)
        shared_with = UsernamesField(required=False, default=list)

    @extend_schema(
        request={"multipart/form-data": InputSerializer}, responses={201: ImportOutputSerializer}
    )
    def post(self, request: Request) -> Response:
        serializer = self.InputSerializer(data=_form(request))
        serializer.is_valid(raise_exception=True)
        data = serializer.validated_data
        try:
            outcome = imports.experiment_import(
                owner=signed_in(request),
                fmt=data["format"],
                uploads=[(upload, upload.name) for upload in data["files"]],
                qos_map=data["qos_map"],
                defaults=data["defaults"],
                name=data["name"],
                horizon_seconds=data["horizon_seconds"],
                tags=data["tags"],
                shared_with=data["shared_with"],
                window=imports.ImportWindow(
                    start_seconds=data["start_seconds"],
                    compress=data["compress"],
                    sample=data["sample"],
                    seed=data["sample_seed"],
                    placement_study=data["placement_study"],
                ),
            )
        except imports.ImportRejectedError as exc:
            raise ApiError(exc.errors) from None
        context = {
            **user_context(request),
            "import_report": {
                "counts": outcome.counts,
                "kinds": outcome.kinds,
                "notes": outcome.notes,
            },
        }
        data = ImportOutputSerializer(outcome.experiment, context=context).data
        response = Response(data, status=status.HTTP_201_CREATED)
        response["ETag"] = etag(outcome.experiment.version)
        return response


def _form(request: Request) -> dict:
    """Multipart fields as the serializer wants them: repeated ``files``, ``tags`` and
    ``shared_with`` as lists (a single comma-separated value works too)."""
    form: Any = request.data  # a QueryDict (multipart) or a dict (JSON)
    many = form.getlist if hasattr(form, "getlist") else lambda key: [form.get(key)]
    data = {key: form.get(key) for key in form if key not in ("files", "tags", "shared_with")}
    data["files"] = request.FILES.getlist("files")
    for key in ("tags", "shared_with"):
        data[key] = [
            part.strip()
            for value in many(key)
            if value is not None
            for part in str(value).split(",")
            if part.strip()
        ]
    return data


class TraceFormatsApi(APIView):
    """What the import accepts: each format's files and default QoS mapping, and the
    per-kind defaults ``defaults`` can override."""

    class OutputSerializer(serializers.Serializer):
        formats = serializers.ListField(child=serializers.DictField())
        kind_defaults = serializers.DictField(child=serializers.DictField())

    @extend_schema(responses=OutputSerializer)
    def get(self, request: Request) -> Response:
        return Response(
            self.OutputSerializer(
                {"formats": imports.trace_formats(), "kind_defaults": imports.kind_defaults()}
            ).data
        )
