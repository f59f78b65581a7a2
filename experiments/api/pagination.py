"""One pagination for every list: ``?page=N&page_size=M`` → ``{count, next, previous,
results}``, what DRF users expect, and the helper the thin views share."""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

from django.db.models import QuerySet
from drf_spectacular.utils import inline_serializer
from rest_framework import serializers
from rest_framework.pagination import PageNumberPagination
from rest_framework.request import Request
from rest_framework.response import Response
from rest_framework.views import APIView


class Pagination(PageNumberPagination):
    page_size = 50
    page_size_query_param = "page_size"
    max_page_size = 1000


def paginated_response(
    *,
    items: Sequence[Any] | QuerySet[Any],
    request: Request,
    view: APIView,
    serializer_class: type[serializers.Serializer],
    context: dict[str, Any] | None = None,
) -> Response:
    """One page of ``items`` (a queryset or any sliceable sequence with ``len``)."""
    paginator = Pagination()
    page = paginator.paginate_queryset(items, request, view=view)
    data = serializer_class(page, many=True, context=context or {}).data
    return paginator.get_paginated_response(data)


def paginated_schema(
    serializer_class: type[serializers.Serializer], name: str
) -> serializers.Serializer:
    """The page envelope of ``serializer_class`` for the OpenAPI schema."""
    return inline_serializer(
        name=name,
        fields={
            "count": serializers.IntegerField(),
            "next": serializers.URLField(allow_null=True),
            "previous": serializers.URLField(allow_null=True),
            "results": serializer_class(many=True),
        },
    )
