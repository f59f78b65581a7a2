"""OpenAPI additions: the one error shape, documented on every operation."""

from __future__ import annotations

import re
from typing import Any

import drf_spectacular.openapi

ERROR_SCHEMA: dict[str, Any] = {
    "type": "object",
    "required": ["errors"],
    "properties": {
        "errors": {
            "type": "array",
            "items": {
                "type": "object",
                "required": ["path", "message"],
                "properties": {
                    "path": {
                        "type": "string",
                        "description": "spec path or request field; "
                        "empty for the request as a whole",
                    },
                    "message": {"type": "string"},
                    "file": {"type": "string", "description": "trace imports: the uploaded file"},
                    "line": {"type": "integer", "description": "trace imports: 1-based, 0 = whole"},
                    "column": {"type": "integer", "description": "trace imports: 1-based, 0 = row"},
                },
            },
        }
    },
}
COMMON_ERRORS = {
    "400": "Invalid request: every problem with its path",
    "401": "Not authenticated",
    "403": "Authenticated, but only the owner may do this",
    "404": "No such object, or not one you may see",
    "405": "Method not allowed",
    "406": "Not acceptable",
    "415": "Unsupported media type",
}
ERROR_REF = {"$ref": "#/components/schemas/Error"}


def add_error_responses(
    result: dict[str, Any], generator: Any, request: Any, public: bool
) -> dict[str, Any]:
    """drf-spectacular post-processing hook: an ``Error`` component and the common
    error responses on every operation, so clients (and schemathesis) know the shape."""
    result.setdefault("components", {}).setdefault("schemas", {})["Error"] = ERROR_SCHEMA
    for operations in result.get("paths", {}).values():
        for operation in operations.values():
            responses = operation.setdefault("responses", {})
            for code, description in COMMON_ERRORS.items():
                responses.setdefault(code, _error_response(description))
    return result


def _error_response(description: str) -> dict[str, Any]:
    return {"description": description, "content": {"application/json": {"schema": ERROR_REF}}}


class AutoSchema(drf_spectacular.openapi.AutoSchema):
    """Names that stay unique with HackSoft's nested serializers: every view has its own
    ``InputSerializer``, so a nested one is named after its view
    (``ExperimentListApi.InputSerializer`` → ``ExperimentListInput``), and operation ids
    come from the view (``experiment_list_post``)."""

    def get_serializer_name(self, serializer: Any, direction: str) -> str:
        cls = type(serializer)
        outer, _, _ = cls.__qualname__.rpartition(".")
        return outer.removesuffix("Api") + cls.__name__ if outer else cls.__name__

    def get_operation_id(self) -> str:
        name = type(self.view).__name__.removesuffix("Api")
        return f"{_snake(name)}_{self.method.lower()}"


def _snake(name: str) -> str:
    return re.sub(r"(?<!^)(?=[A-Z])", "_", name).lower()
