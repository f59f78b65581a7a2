"""Query filters (django-filter) for the list endpoints; the views' base querysets come
from selectors, so visibility is applied before any filter."""

from __future__ import annotations

from typing import Any

import django_filters
from django import forms
from django.db.models import Q, QuerySet

from experiments.models import Experiment, Run, Status, WorkloadRecord

MAX_ID = 2**63 - 1


class IdFilter(django_filters.NumberFilter):
    """A row id: a whole number in the database's range (a NumberFilter takes any
    decimal, and 2.4e293 would reach PostgreSQL as an out-of-range integer)."""

    field_class = forms.IntegerField

    def __init__(self, *args: Any, **kwargs: Any) -> None:
        super().__init__(*args, min_value=1, max_value=MAX_ID, **kwargs)


class ExperimentFilter(django_filters.FilterSet):
    owner = django_filters.CharFilter(
        field_name="owner__username", help_text="the owner's username"
    )
    tag = django_filters.CharFilter(field_name="tags__name", help_text="has this tag")
    name = django_filters.CharFilter(
        field_name="name", lookup_expr="icontains", help_text="name contains (any case)"
    )
    q = django_filters.CharFilter(method="search", help_text="name or description contains")
    ordering = django_filters.OrderingFilter(
        fields=("name", "created_at", "updated_at", "run_count", "id"),
        help_text="e.g. name, -updated_at (default: -updated_at)",
    )

    class Meta:
        model = Experiment
        fields = ("owner", "tag", "name", "q")

    def search(self, queryset: QuerySet[Experiment], name: str, value: str) -> QuerySet[Experiment]:
        return queryset.filter(Q(name__icontains=value) | Q(description__icontains=value))


class RunFilter(django_filters.FilterSet):
    experiment = IdFilter(field_name="experiment_id")
    status = django_filters.ChoiceFilter(choices=Status.choices)

    class Meta:
        model = Run
        fields = ("experiment", "status")


class WorkloadRecordFilter(django_filters.FilterSet):
    """A run's per-workload records: of one variant and/or replication number."""

    variant = django_filters.CharFilter(
        field_name="replication__variant", max_length=200, help_text="the variant's name"
    )
    replication = django_filters.NumberFilter(
        field_name="replication__replication",
        min_value=0,
        max_value=2**31 - 1,
        help_text="the replication number",
    )

    class Meta:
        model = WorkloadRecord
        fields = ("variant", "replication")
