"""The personas of the permission tests (healthchecks style): Alice owns, Bob is shared
with, Charlie is a stranger. Imported by the web and API conftests."""

from __future__ import annotations

import pytest

from tests.factories import ExperimentFactory, UserFactory

__all__ = ["alice", "bob", "charlie", "experiment"]


@pytest.fixture
def alice(db):
    return UserFactory(username="alice")


@pytest.fixture
def bob(db):
    return UserFactory(username="bob")


@pytest.fixture
def charlie(db):
    return UserFactory(username="charlie")


@pytest.fixture
def experiment(alice, bob):
    """Alice's experiment (the S3 grace-period preset), shared with Bob."""
    return ExperimentFactory(owner=alice, shared_with=[bob])
