"""``/api/v1/`` routes, the OpenAPI schema and the browsable docs.

Every API view opts out of the site's LoginRequiredMiddleware (which would redirect a
token-authenticated script to the login page): DRF authenticates and answers 401/403
in the API's error shape instead. The docs page is for browsers: it redirects to the
login page like every other page. (Swagger UI only: drf-spectacular's Redoc page loads
Google Fonts from a CDN, and the product must work offline.) The split view serves
Swagger UI's start-up script as a file of its own: the Content-Security-Policy allows no
inline script.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

from django.contrib.auth.decorators import login_not_required, login_required
from django.urls import URLPattern, include, path, re_path
from drf_spectacular.views import (
    SpectacularJSONAPIView,
    SpectacularSwaggerSplitView,
)

from experiments.api.exceptions import api_not_found
from experiments.api.views import auth, imports, manifests, planner, results, runs, study
from experiments.api.views import experiments as exp

app_name = "api"


def api(view: Any, route: str, name: str) -> URLPattern:
    """A route to a DRF view that authenticates for itself."""
    handler: Callable[..., Any] = login_not_required(view.as_view())
    return path(route, handler, name=name)


v1 = [
    api(auth.TokenApi, "auth/token/", "token"),
    api(exp.ExperimentListApi, "experiments/", "experiment-list"),
    api(exp.ExperimentValidateApi, "experiments/validate/", "experiment-validate"),
    api(exp.ExperimentFromPresetApi, "experiments/from-preset/", "experiment-from-preset"),
    api(imports.ExperimentImportApi, "experiments/import/", "experiment-import"),
    api(exp.ExperimentDetailApi, "experiments/<int:pk>/", "experiment-detail"),
    api(exp.ExperimentCloneApi, "experiments/<int:pk>/clone/", "experiment-clone"),
    api(exp.ExperimentSpecYamlApi, "experiments/<int:pk>/spec.yaml", "experiment-spec"),
    api(
        manifests.ExperimentManifestsApi, "experiments/<int:pk>/manifests/", "experiment-manifests"
    ),
    api(runs.ExperimentRunsApi, "experiments/<int:pk>/runs/", "experiment-runs"),
    api(planner.ExperimentPlanApi, "experiments/<int:pk>/plan/", "experiment-plan"),
    api(exp.PresetListApi, "presets/", "preset-list"),
    api(exp.PresetDetailApi, "presets/<slug:preset_id>/", "preset-detail"),
    api(imports.TraceFormatsApi, "trace-formats/", "trace-formats"),
    api(runs.RunListApi, "runs/", "run-list"),
    api(runs.RunDetailApi, "runs/<int:pk>/", "run-detail"),
    api(runs.RunCancelApi, "runs/<int:pk>/cancel/", "run-cancel"),
    api(runs.RunSpecYamlApi, "runs/<int:pk>/spec.yaml", "run-spec"),
    api(manifests.RunManifestsApi, "runs/<int:pk>/manifests/", "run-manifests"),
    api(results.RunSummaryApi, "runs/<int:pk>/summary/", "run-summary"),
    api(planner.RunPlanApi, "runs/<int:pk>/plan/", "run-plan"),
    api(study.RunStudyApi, "runs/<int:pk>/study/", "run-study"),
    api(results.RunWorkloadsApi, "runs/<int:pk>/workloads/", "run-workloads"),
    api(results.RunEventsApi, "runs/<int:pk>/events/", "run-events"),
    api(results.RunDecisionsApi, "runs/<int:pk>/decisions/", "run-decisions"),
    api(results.RunExportApi, "runs/<int:pk>/export/<slug:table>.<slug:fmt>", "run-export"),
    api(results.CompareApi, "compare/", "compare"),
    api(results.MetricRegistryApi, "metrics/", "metrics"),
]

urlpatterns = [
    path("v1/", include(v1)),
    path("schema/", login_not_required(SpectacularJSONAPIView.as_view()), name="schema"),
    path(
        "docs/",
        login_required(SpectacularSwaggerSplitView.as_view(url_name="api:schema")),
        name="docs",
    ),
    re_path(r"^[\s\S]*$", login_not_required(api_not_found)),  # any path, newlines too
]
