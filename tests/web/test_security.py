"""Deployment defaults every response carries (Content-Security-Policy, private
caching), the size cap on request bodies, and the login form's throttle."""

from __future__ import annotations

import pytest
from django.core.cache import cache
from django.test import Client
from rest_framework.authtoken.models import Token

from tests.factories import ExperimentFactory

PASSWORD = "correct horse battery staple"


@pytest.fixture(autouse=True)
def _fresh_cache():
    cache.clear()


def _directives(response) -> dict[str, list[str]]:
    policy = response["Content-Security-Policy"]
    return {part.split()[0]: part.split()[1:] for part in policy.split(";") if part.strip()}


def test_every_page_forbids_inline_and_foreign_scripts(alice_client, alice):
    experiment = ExperimentFactory(owner=alice)
    for url in (
        "/",
        f"/experiments/{experiment.pk}/",
        "/experiments/new/",
        "/api/docs/",
        "/accounts/login/",
    ):
        response = alice_client.get(url)
        assert response.status_code == 200, url
        directives = _directives(response)
        assert directives["script-src"] == ["'self'"], url
        assert directives["object-src"] == ["'none'"]
        assert directives["frame-ancestors"] == ["'none'"]
        assert "<script>" not in response.content.decode(), f"an inline script on {url}"


def test_the_api_docs_load_their_script_from_the_site(alice_client):
    """Swagger UI's start-up script is a file of its own, not inline (CSP)."""
    page = alice_client.get("/api/docs/").content.decode()

    script = next(line for line in page.splitlines() if "?script" in line or "script=" in line)
    url = script.split('src="')[1].split('"')[0].replace("&amp;", "&")
    served = alice_client.get(url)
    assert served.status_code == 200
    assert b"SwaggerUIBundle" in served.content


def test_authenticated_answers_are_private_to_the_user(alice_client, alice):
    token = Token.objects.create(user=alice)

    page = alice_client.get("/")
    api = Client().get("/api/v1/experiments/", HTTP_AUTHORIZATION=f"Token {token.key}")
    anonymous = Client().get("/api/v1/presets/")

    assert "private" in page["Cache-Control"]
    assert "private" in api["Cache-Control"]
    assert "private" not in anonymous.get("Cache-Control", "")


# ------------------------------------------------------------------------ body size
def test_an_oversized_api_body_gets_413_in_the_api_error_shape(alice, settings):
    settings.LAB_MAX_UPLOAD_BYTES = 4096
    token = Token.objects.create(user=alice)
    body = '{"spec": {"name": "' + "x" * 5000 + '"}}'

    response = Client().post(
        "/api/v1/experiments/",
        body,
        content_type="application/json",
        HTTP_AUTHORIZATION=f"Token {token.key}",
    )

    assert response.status_code == 413
    assert response["Content-Type"] == "application/json"
    assert response.json() == {
        "errors": [
            {
                "path": "",
                "message": "the request body is 4.9 KB; the largest accepted is 4 KB "
                "(LAB_MAX_UPLOAD_BYTES)",
            }
        ]
    }


def test_an_oversized_upload_in_the_api_gets_413_json(alice, settings):
    settings.LAB_MAX_UPLOAD_BYTES = 4096
    token = Token.objects.create(user=alice)
    from django.core.files.uploadedfile import SimpleUploadedFile

    trace = SimpleUploadedFile("trace.csv", b"name,gpus\n" + b"a,1\n" * 2000)
    response = Client().post(
        "/api/v1/experiments/import/",
        {"files": trace, "format": "csv"},
        HTTP_AUTHORIZATION=f"Token {token.key}",
    )

    assert response.status_code == 413
    assert response.json()["errors"][0]["message"].endswith("(LAB_MAX_UPLOAD_BYTES)")


def test_an_oversized_browser_upload_gets_a_page_that_says_so(alice_client, settings):
    settings.LAB_MAX_UPLOAD_BYTES = 4096
    from django.core.files.uploadedfile import SimpleUploadedFile

    trace = SimpleUploadedFile("trace.csv", b"name,gpus\n" + b"a,1\n" * 2000)
    response = alice_client.post(
        "/experiments/import/",
        {"files": trace},
        HTTP_REFERER="http://testserver/experiments/import/",
    )

    assert response.status_code == 413
    page = response.content.decode()
    assert "That upload is too large" in page
    assert "the largest accepted is 4 KB (LAB_MAX_UPLOAD_BYTES)" in page
    assert 'href="http://testserver/experiments/import/"' in page


def test_a_json_body_past_djangos_field_limit_is_refused_in_the_api_shape(alice, settings):
    """DATA_UPLOAD_MAX_NUMBER_FIELDS and friends raise inside DRF's parser: JSON, not HTML."""
    settings.DATA_UPLOAD_MAX_NUMBER_FIELDS = 5
    token = Token.objects.create(user=alice)
    form = "&".join(f"f{n}=1" for n in range(10))

    response = Client().post(
        "/api/v1/experiments/",
        form,
        content_type="application/x-www-form-urlencoded",
        HTTP_AUTHORIZATION=f"Token {token.key}",
    )

    assert response.status_code == 400
    assert response["Content-Type"] == "application/json"
    assert "DATA_UPLOAD_MAX_NUMBER_FIELDS" in response.json()["errors"][0]["message"]


# ------------------------------------------------------------------------ login
def _login(password: str, address: str = "10.0.0.1", username: str = "alice"):
    return Client(REMOTE_ADDR=address).post(
        "/accounts/login/", {"username": username, "password": password}
    )


def test_the_login_form_stops_checking_passwords_after_too_many_failures(alice, settings):
    settings.LAB_LOGIN_FAILURES = 3
    wrong = [_login("wrong") for _ in range(3)]

    refused = _login(PASSWORD)

    assert [r.status_code for r in wrong] == [200, 200, 200]
    assert refused.status_code == 429
    assert "Too many failed logins" in refused.content.decode()
    assert "_auth_user_id" not in refused.client.session, "the right password was not checked"


def test_the_login_throttle_is_per_username_and_address(alice, bob, settings):
    settings.LAB_LOGIN_FAILURES = 2
    for _ in range(2):
        _login("wrong")

    other_address = _login(PASSWORD, address="10.0.0.2")
    other_user = _login(PASSWORD, username="bob")

    assert other_address.status_code == 302
    assert other_user.status_code == 302


def test_a_successful_login_clears_the_failures(alice, settings):
    settings.LAB_LOGIN_FAILURES = 2
    _login("wrong")
    assert _login(PASSWORD).status_code == 302

    _login("wrong")
    assert _login(PASSWORD).status_code == 302
