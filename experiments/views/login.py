"""The login page, with a throttle on wrong passwords.

Failures are counted per (username, client address) in the shared cache (every web
process and machine sees one count): after ``LAB_LOGIN_FAILURES`` within
``LAB_LOGIN_WINDOW_SECONDS`` the form answers 429 without checking the password, so
guessing costs the window, not a round trip.
"""

from __future__ import annotations

import hashlib
from typing import Any

from django.conf import settings
from django.contrib.auth import views as auth_views
from django.contrib.auth.forms import AuthenticationForm
from django.core.cache import cache
from django.core.exceptions import ValidationError
from django.http import HttpResponse

THROTTLED = "throttled"


def failure_key(username: str, address: str) -> str:
    """The cache key of one (username, address); hashed, so any text makes a valid key."""
    digest = hashlib.sha256(f"{username.casefold()}\0{address}".encode()).hexdigest()
    return f"login-failures:{digest}"


class ThrottledAuthenticationForm(AuthenticationForm):
    """Django's login form, refusing to check a password after too many wrong ones."""

    def clean(self) -> dict[str, Any]:
        key = failure_key(self.cleaned_data.get("username") or "", self._address())
        if (cache.get(key) or 0) >= settings.LAB_LOGIN_FAILURES:
            minutes = max(1, round(settings.LAB_LOGIN_WINDOW_SECONDS / 60))
            raise ValidationError(
                f"Too many failed logins for this username from your address. Try again in "
                f"{minutes} minute{'s' if minutes != 1 else ''}.",
                code=THROTTLED,
            )
        try:
            cleaned = super().clean()
        except ValidationError:
            _count_failure(key)
            raise
        cache.delete(key)
        return cleaned

    def _address(self) -> str:
        return self.request.META.get("REMOTE_ADDR", "") if self.request else ""


def _count_failure(key: str) -> None:
    """A fixed window from the first failure: ``add`` sets its expiry, ``incr`` counts."""
    cache.add(key, 0, timeout=settings.LAB_LOGIN_WINDOW_SECONDS)
    try:
        cache.incr(key)
    except ValueError:  # expired between the two calls: this failure opens a new window
        cache.add(key, 1, timeout=settings.LAB_LOGIN_WINDOW_SECONDS)


class LoginView(auth_views.LoginView):
    form_class = ThrottledAuthenticationForm

    def form_invalid(self, form: AuthenticationForm) -> HttpResponse:
        response = super().form_invalid(form)
        if form.has_error("__all__", THROTTLED):
            response.status_code = 429
            response["Retry-After"] = str(settings.LAB_LOGIN_WINDOW_SECONDS)
        return response
