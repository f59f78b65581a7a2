"""Personas for the web tests (healthchecks style): Alice owns, Bob is shared with,
Charlie is a stranger. Every web test needs the database."""

from __future__ import annotations

import pytest
from django.test import Client

from tests.personas import *  # noqa: F403 (the persona fixtures)


@pytest.fixture(autouse=True)
def _database(db):
    """Every web test may use the database (worker tests ask for real transactions)."""


def client_for(user) -> Client:
    client = Client()
    client.force_login(user)
    return client


@pytest.fixture
def alice_client(alice) -> Client:
    return client_for(alice)


@pytest.fixture
def bob_client(bob) -> Client:
    return client_for(bob)


@pytest.fixture
def charlie_client(charlie) -> Client:
    return client_for(charlie)
