"""The signed-in user of a request, typed as such.

``request.user`` is typed ``User | AnonymousUser``; the views that create or start things
run behind LoginRequiredMiddleware or DRF's IsAuthenticated, so theirs is a ``User``.
Services take a ``User`` (they store it as an owner); selectors also answer an anonymous
one (with nothing), which the OpenAPI schema generator's fake request is.
"""

from __future__ import annotations

from django.contrib.auth.models import User
from django.core.exceptions import PermissionDenied
from django.http import HttpRequest
from rest_framework.request import Request


def signed_in(request: HttpRequest | Request) -> User:
    """``request.user``, refused (403) if anonymous rather than stored as an owner."""
    user = request.user
    if not user.is_authenticated:
        raise PermissionDenied("sign in first")
    return user
