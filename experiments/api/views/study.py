"""A placement-study run over the API: ``GET runs/{id}/study/``.

The numbers are the core's (``scheduler_core.study_spec``): per variant its summary
across seeds (the allocation ratio at every 1 % of arrived load: mean, lowest, highest;
at the asked load: mean, 95 % half-width, SD, n), the paper's published point when the
spec names its workload, and every replication's own curve. A study is started like any
run (``POST experiments/{id}/runs/``); its spec says ``placementStudy``."""

from __future__ import annotations

from typing import Any

from django.http import Http404
from drf_spectacular.types import OpenApiTypes
from drf_spectacular.utils import OpenApiResponse, extend_schema
from rest_framework.request import Request
from rest_framework.response import Response
from rest_framework.views import APIView

from experiments.api.schema import ERROR_REF
from experiments.api.views.common import readable_run
from experiments.models import Status
from experiments.selectors_run_page import is_study_run


class RunStudyApi(APIView):
    """A placement study's result. ``variants`` is empty until the run has succeeded;
    404 for a run that is not a placement study."""

    @extend_schema(responses={200: OpenApiResponse(OpenApiTypes.OBJECT), 404: ERROR_REF})
    def get(self, request: Request, pk: int) -> Response:
        run = readable_run(request, pk)
        if not is_study_run(run):
            raise Http404("this run is not a placement study (its spec has no placementStudy)")
        body: dict[str, Any] = {
            "run": run.pk,
            "status": run.status,
            "progress": run.progress,
            "placementStudy": run.spec["placementStudy"],
            "variants": [],
        }
        if run.status != Status.SUCCEEDED:
            body["message"] = f"the study is {run.status}: the curves are ready when it succeeds"
            return Response(body)
        records: dict[str, list[dict[str, Any]]] = {}
        for variant, record in (
            run.replications.order_by("variant_index", "replication")
            .values_list("variant", "study")
            .iterator()
        ):
            if record is not None:
                records.setdefault(variant, []).append(record)
        body["variants"] = [
            {
                "variant": row["variant"],
                "placement": row["placement"],
                "rank": row.get("rank"),
                "summary": row["study"],
                "paper": row.get("paper"),
                "paperDelta": row.get("paperDelta"),
                "replications": records.get(row["variant"], []),
            }
            for row in run.aggregate
        ]
        return Response(body)
