"""The admin site, for operators: find any experiment or run, cancel or fail a run.

Results and event logs are read-only here: they are written by workers only.
"""

from __future__ import annotations

from django.contrib import admin, messages
from django.db.models import QuerySet
from django.http import HttpRequest

from experiments import services
from experiments.models import Experiment, ExperimentTag, Replication, Run


class ExperimentTagInline(admin.TabularInline):
    model = ExperimentTag
    extra = 0


@admin.register(Experiment)
class ExperimentAdmin(admin.ModelAdmin):
    list_display = ("name", "owner", "source_preset", "updated_at")
    list_filter = ("source_preset",)
    search_fields = ("name", "description", "owner__username", "tags__name")
    filter_horizontal = ("shared_with",)
    readonly_fields = ("created_at", "updated_at")
    inlines = [ExperimentTagInline]


class ReplicationInline(admin.TabularInline):
    model = Replication
    fields = (
        "variant",
        "replication",
        "status",
        "progress",
        "attempt",
        "heartbeat_at",
        "event_count",
        "wall_seconds",
    )
    readonly_fields = fields
    extra = 0
    can_delete = False
    show_change_link = True

    def has_add_permission(self, request: HttpRequest, obj: object = None) -> bool:
        return False


@admin.register(Run)
class RunAdmin(admin.ModelAdmin):
    list_display = (
        "pk",
        "experiment",
        "status",
        "progress",
        "created_by",
        "created_at",
        "finished_at",
    )
    list_filter = ("status",)
    search_fields = ("experiment__name", "error")
    readonly_fields = (
        "experiment",
        "created_by",
        "spec",
        "product_version",
        "status",
        "progress",
        "aggregate",
        "created_at",
        "started_at",
        "finished_at",
    )
    inlines = [ReplicationInline]
    actions = ["cancel_runs", "sweep_stale_runs"]

    @admin.action(description="Cancel the selected runs")
    def cancel_runs(self, request: HttpRequest, queryset: QuerySet[Run]) -> None:
        cancelled = sum(services.run_cancel(run=run) for run in queryset)
        self.message_user(request, f"Cancelled {cancelled} run(s).", messages.SUCCESS)

    @admin.action(description="Sweep: fail runs whose worker was lost")
    def sweep_stale_runs(self, request: HttpRequest, queryset: QuerySet[Run]) -> None:
        changed = services.runs_sweep_stale()
        self.message_user(request, f"The sweep changed {len(changed)} run(s).", messages.INFO)


@admin.register(Replication)
class ReplicationAdmin(admin.ModelAdmin):
    list_display = ("pk", "run", "variant", "replication", "status", "attempt", "event_count")
    list_filter = ("status",)
    readonly_fields = [f.name for f in Replication._meta.fields]

    def has_add_permission(self, request: HttpRequest) -> bool:
        return False
