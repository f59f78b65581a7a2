"""Personas for the API tests (healthchecks style): Alice owns, Bob is shared with,
Charlie is a stranger. Each talks to the API the way a script does: with a token."""

from __future__ import annotations

import pytest
from django.core.cache import cache
from rest_framework.authtoken.models import Token
from rest_framework.test import APIClient

from experiments import services
from experiments.models import Run
from tests.personas import *  # noqa: F403 (the persona fixtures)


@pytest.fixture(autouse=True)
def _database(db):
    """Every API test may use the database."""


@pytest.fixture(autouse=True)
def _fresh_throttles():
    """Cache-based throttles (the token endpoint's) start from zero in every test."""
    cache.clear()


def token_client(user) -> APIClient:
    client = APIClient()
    token, _ = Token.objects.get_or_create(user=user)
    client.credentials(HTTP_AUTHORIZATION=f"Token {token.key}")
    return client


@pytest.fixture
def clients(alice, bob, charlie) -> dict[str, APIClient]:
    return {
        "alice": token_client(alice),
        "bob": token_client(bob),
        "charlie": token_client(charlie),
    }


@pytest.fixture
def alice_api(clients) -> APIClient:
    return clients["alice"]


@pytest.fixture
def bob_api(clients) -> APIClient:
    return clients["bob"]


@pytest.fixture
def charlie_api(clients) -> APIClient:
    return clients["charlie"]


@pytest.fixture
def finished_run(experiment, alice, django_capture_on_commit_callbacks) -> Run:
    """A succeeded run of ``experiment``, simulated inline (tasks run eagerly)."""
    with django_capture_on_commit_callbacks(execute=True):
        run = services.run_enqueue(experiment=experiment, user=alice)
    run.refresh_from_db()
    return run


def errors(response) -> list[dict]:
    """The error items of a response, asserting the one error shape on the way."""
    body = response.json()
    assert set(body) == {"errors"}, body
    return body["errors"]


@pytest.fixture(autouse=True)
def _export_dir(settings, tmp_path):
    """Stored exports go to the test's own folder, not var/."""
    settings.LAB_EXPORT_DIR = tmp_path / "exports"
