from django.urls import path

from experiments.views import charts as chart_views
from experiments.views import compare as compare_views
from experiments.views import decisions as decision_views
from experiments.views import docs as doc_views
from experiments.views import experiments as experiment_views
from experiments.views import imports as import_views
from experiments.views import manifests as manifest_views
from experiments.views import planner as planner_views
from experiments.views import runs as run_views

app_name = "experiments"

urlpatterns = [
    path("", experiment_views.experiment_list, name="list"),
    path("experiments/new/", experiment_views.experiment_new, name="new"),
    path("experiments/import/", import_views.experiment_import, name="import"),
    path("experiments/import/kubernetes/", import_views.experiment_import_k8s, name="import-k8s"),
    path("experiments/<int:pk>/", experiment_views.experiment_detail, name="detail"),
    path("experiments/<int:pk>/edit/", experiment_views.experiment_edit, name="edit"),
    path("experiments/<int:pk>/clone/", experiment_views.experiment_clone, name="clone"),
    path("experiments/<int:pk>/delete/", experiment_views.experiment_delete, name="delete"),
    path("experiments/<int:pk>/run/", experiment_views.experiment_run, name="run-start"),
    path(
        "experiments/<int:pk>/manifests.yaml", manifest_views.experiment_manifests, name="manifests"
    ),
    path("experiments/<int:pk>/plan/", planner_views.plan_new, name="plan-new"),
    path("plan/", planner_views.plan_index, name="plan"),
    path("runs/<int:pk>/plan/", planner_views.run_plan, name="run-plan"),
    path("runs/", run_views.run_overview, name="runs"),
    path("runs/<int:pk>/", run_views.run_detail, name="run"),
    path("runs/<int:pk>/status.json", run_views.run_status, name="run-status"),
    path("runs/<int:pk>/cancel/", run_views.run_cancel, name="run-cancel"),
    path("runs/<int:pk>/manifests.yaml", manifest_views.run_manifests, name="run-manifests"),
    path(
        "runs/<int:pk>/replications/<int:replication_pk>/events/",
        run_views.replication_events,
        name="replication-events",
    ),
    path(
        "runs/<int:pk>/replications/<int:replication_pk>/decisions.json",
        decision_views.replication_decisions,
        name="replication-decisions",
    ),
    path(
        "runs/<int:pk>/replications/<int:replication_pk>/pods/<str:pod>/",
        decision_views.pod_detail,
        name="pod",
    ),
    # Charts (issue 5): the run page's chart data, the compare page, plotly.js itself.
    path("runs/<int:pk>/charts/timeline.json", chart_views.run_timeline, name="run-chart-timeline"),
    path(
        "runs/<int:pk>/charts/workloads.json", chart_views.run_workloads, name="run-chart-workloads"
    ),
    path("runs/<int:pk>/charts/events.json", chart_views.run_events, name="run-chart-events"),
    path("compare/", compare_views.compare, name="compare"),
    path("metrics/", compare_views.metrics_glossary, name="metrics"),
    path("docs/", doc_views.doc_index, name="docs"),
    path("docs/<slug:slug>/", doc_views.doc_page, name="doc"),
    path("charts/plotly.min.js", chart_views.plotly_js, name="plotly-js"),
]
