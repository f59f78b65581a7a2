"""One error shape for every failure the API reports:

    {"errors": [{"path": "workloads[0].gpus", "message": "..."}]}

``path`` is where the problem is: a spec path exactly as ``scheduler_core`` writes it
(so the API, the form and the CLI agree), a request field (``tags[1]``), or ``""`` for
the request as a whole (authentication, permissions, not found, throttling). Trace
import errors add ``file``, ``line`` and ``column``. Clients parse one shape, always.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import Any

from django.core.exceptions import RequestDataTooBig, SuspiciousOperation
from django.http import HttpRequest, JsonResponse
from django.urls import reverse
from django.views.decorators.csrf import csrf_exempt
from rest_framework import status
from rest_framework.exceptions import APIException, ValidationError
from rest_framework.response import Response
from rest_framework.views import exception_handler

ErrorItem = dict[str, Any]


class ApiError(APIException):
    """An error that already knows its items (spec errors, import errors, conflicts)."""

    status_code: int = status.HTTP_400_BAD_REQUEST

    def __init__(self, errors: Sequence[ErrorItem], *, status_code: int | None = None) -> None:
        self.errors = [dict(error) for error in errors]
        if status_code is not None:
            self.status_code = status_code
        super().__init__(detail="; ".join(str(e.get("message", "")) for e in self.errors))


def spec_invalid(errors: Sequence[Mapping[str, str]]) -> ApiError:
    """``SpecError.errors`` as a 400, paths untouched."""
    return ApiError([{"path": e["path"], "message": e["message"]} for e in errors])


def conflict(message: str, path: str = "") -> ApiError:
    """409: the request is fine but the resource's state forbids it (a finished run)."""
    return ApiError([{"path": path, "message": message}], status_code=status.HTTP_409_CONFLICT)


def api_exception_handler(exc: Exception, context: dict[str, Any]) -> Response | None:
    """DRF's handler (which sets status codes and headers such as ``WWW-Authenticate``
    and ``Retry-After``), with its body replaced by the one error shape."""
    if isinstance(exc, RequestDataTooBig):  # a body past DATA_UPLOAD_MAX_MEMORY_SIZE
        return Response(
            {"errors": [{"path": "", "message": f"the request is too large: {exc}"}]},
            status=status.HTTP_413_REQUEST_ENTITY_TOO_LARGE,
        )
    if isinstance(exc, SuspiciousOperation):  # too many fields or files, a bad multipart
        return Response(
            {"errors": [{"path": "", "message": str(exc)}]}, status=status.HTTP_400_BAD_REQUEST
        )
    response = exception_handler(exc, context)
    if response is None:
        return None
    if isinstance(exc, ApiError):
        response.data = {"errors": exc.errors}
    elif isinstance(exc, ValidationError):
        response.data = {"errors": flatten_errors(exc.detail)}
    else:
        response.data = {"errors": [{"path": "", "message": _text(response.data)}]}
    return response


def flatten_errors(detail: Any, path: str = "") -> list[ErrorItem]:
    """DRF's nested ``{"field": [{"sub": ["msg"]}]}`` into flat items with dotted paths
    (``spec.workloads[0].gpus``); ``non_field_errors`` belong to their parent."""
    if isinstance(detail, Mapping):
        return [
            item
            for key, value in detail.items()
            for item in flatten_errors(value, _join(path, key))
        ]
    if isinstance(detail, list | tuple):
        if all(not isinstance(v, Mapping | list | tuple) for v in detail):
            return [{"path": path, "message": str(message)} for message in detail]
        return [
            item
            for index, value in enumerate(detail)
            for item in flatten_errors(value, f"{path}[{index}]")
        ]
    return [{"path": path, "message": str(detail)}]


def _join(path: str, key: Any) -> str:
    if key in ("non_field_errors", "__all__"):
        return path
    if isinstance(key, int) or (isinstance(key, str) and key.isdigit()):
        return f"{path}[{key}]"
    return f"{path}.{key}" if path else str(key)


def _text(data: Any) -> str:
    if isinstance(data, Mapping) and "detail" in data:
        return str(data["detail"])
    return str(data)


@csrf_exempt
def api_not_found(request: HttpRequest, *args: Any, **kwargs: Any) -> JsonResponse:
    """Unknown URLs under ``/api/`` answer in the API's shape, not with an HTML page, and
    say where the endpoints are listed (``/api/`` itself is such a URL)."""
    where = f"the endpoints are listed at {reverse('api:docs')} (OpenAPI: {reverse('api:schema')})"
    return JsonResponse(
        {"errors": [{"path": "", "message": f"no API endpoint at {request.path}; {where}"}]},
        status=status.HTTP_404_NOT_FOUND,
    )
