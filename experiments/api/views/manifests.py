"""Kubernetes manifests (``kubectl apply``) or a KWOK snapshot of an experiment, or of
the spec a run ran, whole or one variant; for anyone who may see it (as the spec)."""

from __future__ import annotations

from typing import Any

from django.http import HttpResponse
from drf_spectacular.types import OpenApiTypes
from drf_spectacular.utils import OpenApiResponse, extend_schema
from rest_framework import serializers
from rest_framework.request import Request
from rest_framework.views import APIView

import scheduler_core as sc
from experiments import selectors_k8s
from experiments.api.exceptions import ApiError, flatten_errors, spec_invalid
from experiments.api.views.common import visible_experiment, visible_run
from experiments.api.views.experiments import yaml_download


class ManifestQuerySerializer(serializers.Serializer):
    variant = serializers.CharField(
        required=False,
        max_length=500,
        help_text="one variant, its overrides applied; default: the whole experiment",
    )
    format = serializers.ChoiceField(
        choices=selectors_k8s.FORMATS,
        default="k8s",
        help_text="k8s: manifests to kubectl apply; kwok: a snapshot kwokctl restores",
    )
    policy_only = serializers.BooleanField(
        default=False,
        help_text="k8s: leave out the simulated Nodes and the Pods bound "
        "to them (for a real cluster)",
    )


MANIFEST_SCHEMA: dict[str, Any] = {
    "parameters": [ManifestQuerySerializer],
    "responses": {(200, "application/yaml"): OpenApiResponse(OpenApiTypes.STR)},
}


def _query(request: Request) -> dict[str, Any]:
    serializer = ManifestQuerySerializer(data=request.query_params)
    if not serializer.is_valid():
        raise ApiError(flatten_errors(serializer.errors))
    return {
        "variant": serializer.validated_data.get("variant"),
        "fmt": serializer.validated_data["format"],
        "policy_only": serializer.validated_data["policy_only"],
    }


def _download(download: selectors_k8s.ManifestDownload) -> HttpResponse:
    return yaml_download(download.text, download.filename)


class ExperimentManifestsApi(APIView):
    """The experiment as Kubernetes manifests (``?variant=NAME`` for one variant,
    ``?format=kwok`` for a KWOK snapshot), as a YAML download."""

    @extend_schema(**MANIFEST_SCHEMA)
    def get(self, request: Request, pk: int) -> HttpResponse:
        experiment = visible_experiment(request, pk)
        try:
            return _download(
                selectors_k8s.experiment_manifests(experiment=experiment, **_query(request))
            )
        except sc.SpecError as exc:
            raise spec_invalid(exc.errors) from None


class RunManifestsApi(APIView):
    """What the run ran (its frozen spec) as Kubernetes manifests: "apply this variant"."""

    @extend_schema(**MANIFEST_SCHEMA)
    def get(self, request: Request, pk: int) -> HttpResponse:
        run = visible_run(request, pk)
        try:
            return _download(selectors_k8s.run_manifests(run=run, **_query(request)))
        except sc.SpecError as exc:
            raise spec_invalid(exc.errors) from None
