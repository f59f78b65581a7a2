"""What every endpoint shares: token and session authentication, one error shape for
every failure, the OpenAPI schema and the docs served without any CDN."""

from __future__ import annotations

import re

import pytest
from django.test import Client
from rest_framework.authtoken.models import Token
from rest_framework.test import APIClient

from experiments.models import Experiment
from tests.api.conftest import errors
from tests.factories import preset_document


@pytest.mark.parametrize(
    "url", ["/api/v1/experiments/", "/api/v1/runs/", "/api/v1/presets/", "/api/schema/"]
)
def test_anonymous_requests_get_401_with_the_error_shape(url):
    response = APIClient().get(url)

    assert response.status_code == 401
    assert response["WWW-Authenticate"] == "Token"
    assert errors(response) == [
        {"path": "", "message": "Authentication credentials were not provided."}
    ]


def test_a_wrong_token_is_refused():
    client = APIClient()
    client.credentials(HTTP_AUTHORIZATION="Token 0123456789abcdef")

    response = client.get("/api/v1/experiments/")

    assert response.status_code == 401
    assert errors(response) == [{"path": "", "message": "Invalid token."}]


def test_a_script_gets_its_token_with_username_and_password(alice):
    client = APIClient()

    response = client.post(
        "/api/v1/auth/token/",
        {"username": "alice", "password": "correct horse battery staple"},
        format="json",
    )
    wrong = client.post(
        "/api/v1/auth/token/", {"username": "alice", "password": "guess"}, format="json"
    )

    assert response.status_code == 200
    assert response.json() == {"token": Token.objects.get(user=alice).key}
    assert wrong.status_code == 400
    assert errors(wrong) == [{"path": "", "message": "Unable to log in with provided credentials."}]


def test_password_guessing_at_the_token_endpoint_is_throttled(alice, settings):
    settings.REST_FRAMEWORK = {
        **settings.REST_FRAMEWORK,
        "DEFAULT_THROTTLE_RATES": {
            **settings.REST_FRAMEWORK["DEFAULT_THROTTLE_RATES"],
            "token": "3/minute",
        },
    }
    client = APIClient()

    codes = [
        client.post(
            "/api/v1/auth/token/", {"username": "alice", "password": guess}, format="json"
        ).status_code
        for guess in ("a", "b", "c", "d")
    ]

    assert codes == [400, 400, 400, 429]
    assert not Token.objects.exists()


def test_the_browser_session_works_and_needs_its_csrf_token(alice):
    client = APIClient(enforce_csrf_checks=True)
    client.force_login(alice)

    listed = client.get("/api/v1/experiments/")
    posted = client.post("/api/v1/experiments/", {"spec": preset_document()}, format="json")

    assert listed.status_code == 200
    assert posted.status_code == 403
    assert errors(posted)[0]["message"].startswith("CSRF Failed")
    assert not Experiment.objects.exists()


@pytest.mark.parametrize(
    ("method", "url", "status", "message"),
    [
        (
            "get",
            "/api/v1/nothing-here/",
            404,
            "no API endpoint at /api/v1/nothing-here/; the endpoints are listed at /api/docs/"
            " (OpenAPI: /api/schema/)",
        ),
        ("get", "/api/v1/experiments/999999/", 404, "No such experiment"),
        ("delete", "/api/v1/presets/", 405, 'Method "DELETE" not allowed.'),
    ],
    ids=["unknown-url", "unknown-object", "wrong-method"],
)
def test_every_failure_has_the_same_shape(alice_api, method, url, status, message):
    response = getattr(alice_api, method)(url)

    assert response.status_code == status
    assert errors(response) == [{"path": "", "message": message}]


def test_malformed_json_is_an_error_of_the_whole_request(alice_api):
    response = alice_api.generic(
        "POST", "/api/v1/experiments/", "{not json", content_type="application/json"
    )

    assert response.status_code == 400
    [error] = errors(response)
    assert error["path"] == ""
    assert error["message"].startswith("JSON parse error")


def test_the_schema_is_openapi_3_with_every_endpoint(alice_api):
    response = alice_api.get("/api/schema/")

    schema = response.json()
    assert response.status_code == 200
    assert schema["openapi"].startswith("3.")
    assert {
        "/api/v1/experiments/",
        "/api/v1/experiments/{id}/clone/",
        "/api/v1/experiments/validate/",
        "/api/v1/experiments/from-preset/",
        "/api/v1/experiments/import/",
        "/api/v1/runs/{id}/cancel/",
        "/api/v1/runs/{id}/summary/",
        "/api/v1/runs/{id}/events/",
        "/api/v1/runs/{id}/export/{table}.{fmt}",
        "/api/v1/compare/",
    } <= set(schema["paths"])
    assert schema["components"]["schemas"]["Error"]["required"] == ["errors"]


def test_the_docs_page_needs_a_login_and_loads_only_local_assets(alice):
    url, bundle = "/api/docs/", "swagger-ui-bundle.js"
    anonymous = Client().get(url)
    client = Client()
    client.force_login(alice)

    page = client.get(url)

    assert anonymous.status_code == 302
    assert anonymous["Location"].startswith("/accounts/login/")
    assert page.status_code == 200
    assets = re.findall(r'(?:src|href)="([^"]+)"', page.content.decode())
    assert not [a for a in assets if a.startswith(("http:", "https:", "//"))]
    script = next(a for a in assets if a.endswith(bundle))
    assert b"".join(client.get(script).streaming_content)  # served by the app itself


def test_unknown_urls_with_odd_characters_still_answer_in_json(alice_api):
    response = alice_api.get("/api/v1/presets/%0Anope/")

    assert response.status_code == 404
    assert errors(response) == [
        {
            "path": "",
            "message": "no API endpoint at /api/v1/presets/\nnope/; the endpoints are listed"
            " at /api/docs/ (OpenAPI: /api/schema/)",
        }
    ]
