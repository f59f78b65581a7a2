"""Query filters (django-filter) for the list endpoints; the views' base querysets come
from selectors, so visibility is applied before any filter."""

from __future__ import annotations

import django_filters
from django.db.models import Q, QuerySet

from experiments.models import Experiment, Run, Status


class ExperimentFilter(django_filters.FilterSet):
    owner = django_filters.CharFilter(field_name="owner__username",
                                      help_text="the owner's username")
    tag = django_filters.CharFilter(field_name="tags__name", help_text="has this tag")
    name = django_filters.CharFilter(field_name="name", lookup_expr="icontains",
                                     help_text="name contains (any case)")
    q = django_filters.CharFilter(method="search", help_text="name or description contains")
    ordering = django_filters.OrderingFilter(
        fields=("name", "created_at", "updated_at", "run_count", "id"),
        help_text="e.g. name, -updated_at (default: -updated_at)")

    class Meta:
        model = Experiment
        fields = ("owner", "tag", "name", "q")

    def search(self, queryset: QuerySet[Experiment], name: str, value: str
               ) -> QuerySet[Experiment]:
        return queryset.filter(Q(name__icontains=value) | Q(description__icontains=value))


class RunFilter(django_filters.FilterSet):
    experiment = django_filters.NumberFilter(field_name="experiment_id")
    status = django_filters.ChoiceFilter(choices=Status.choices)

    class Meta:
        model = Run
        fields = ("experiment", "status")
