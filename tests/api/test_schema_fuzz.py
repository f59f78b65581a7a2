"""Schema-driven fuzzing (schemathesis): every operation of the OpenAPI schema, fed
generated requests, never answers 5xx and never answers outside its own schema.

Requests go through the WSGI app in-process against the test database. Path ids are
pointed at real objects (an experiment, a succeeded run) so the fuzzer reaches the code
behind the 404s. The number of examples is bounded to keep CI within minutes.
"""

from __future__ import annotations

import json
import os

import pytest
import schemathesis
from django.core.handlers.wsgi import WSGIHandler
from django.core.signals import request_finished, request_started
from django.db import close_old_connections
from drf_spectacular.generators import SchemaGenerator
from hypothesis import HealthCheck, settings
from schemathesis.checks import not_a_server_error
from schemathesis.specs.openapi.checks import (
    content_type_conformance,
    response_schema_conformance,
)

from tests.api.conftest import token_client

EXAMPLES = int(os.environ.get("API_FUZZ_EXAMPLES", "40"))
CHECKS = [not_a_server_error, response_schema_conformance, content_type_conformance]
# The manifests are a multi-document YAML stream (what `kubectl apply -f` takes), which the
# schema checker's single-document YAML reader cannot load: their body is checked by
# tests/api/test_manifests.py instead; status and content type are still fuzzed here.
STREAM_CHECKS = [not_a_server_error, content_type_conformance]

pytestmark = pytest.mark.slow


@pytest.fixture
def fuzz_target(alice, bob, finished_run) -> dict:
    """Alice's token, and the ids the fuzzer's path parameters are pointed at."""
    client = token_client(alice)
    token = client._credentials["HTTP_AUTHORIZATION"]
    return {
        "headers": {"Authorization": token},
        "ids": {
            "/api/v1/experiments/": finished_run.experiment_id,
            "/api/v1/runs/": finished_run.pk,
        },
    }


class InProcessApp:
    """The WSGI app as the test client runs it: the connection that holds the test's
    transaction must not be closed at the end of each request (Django's handler would)."""

    def __init__(self) -> None:
        self.handler = WSGIHandler()

    def __call__(self, environ: dict, start_response: object) -> list[bytes]:
        request_started.disconnect(close_old_connections)
        request_finished.disconnect(close_old_connections)
        try:
            response = self.handler(environ, start_response)
            try:
                return [b"".join(response)]
            finally:
                response.close()
        finally:
            request_started.connect(close_old_connections)
            request_finished.connect(close_old_connections)


def _load_schema() -> schemathesis.schemas.BaseSchema:
    """The schema ``/api/schema/`` serves, generated without a request (no database is
    needed at collection time), bound to the in-process app."""
    document = SchemaGenerator().get_schema(request=None, public=True)
    loaded = schemathesis.openapi.from_dict(json.loads(json.dumps(document, default=str)))
    loaded.app = InProcessApp()
    return loaded


schema = _load_schema()


@schema.parametrize()
@settings(
    max_examples=EXAMPLES,
    deadline=None,
    suppress_health_check=[
        HealthCheck.function_scoped_fixture,
        HealthCheck.too_slow,
        HealthCheck.filter_too_much,
    ],
)
def test_no_operation_answers_5xx_or_outside_its_schema(case, fuzz_target):
    for prefix, pk in fuzz_target["ids"].items():
        if case.path.startswith(prefix) and "id" in (case.path_parameters or {}):
            case.path_parameters["id"] = pk
    checks = STREAM_CHECKS if case.path.endswith("/manifests/") else CHECKS
    case.call_and_validate(headers=fuzz_target["headers"], checks=checks)
