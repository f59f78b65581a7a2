"""Request-wide guards: a cap on the body a request may send, and ``Cache-Control:
private`` on everything an authenticated user is answered with."""

from __future__ import annotations

from collections.abc import Callable

from django.conf import settings
from django.http import HttpRequest, HttpResponse, JsonResponse
from django.template.loader import render_to_string
from django.utils.cache import patch_cache_control
from django.utils.http import url_has_allowed_host_and_scheme

Handler = Callable[[HttpRequest], HttpResponse]
TOO_LARGE = 413


def size_text(size: int) -> str:
    """``10485760`` → ``10 MB``; ``1536`` → ``1.5 KB`` (what a person reads)."""
    for unit, factor in (("MB", 1024 * 1024), ("KB", 1024)):
        if size >= factor:
            return f"{size / factor:.1f}".removesuffix(".0") + f" {unit}"
    return f"{size} bytes"


def too_large_message(size: int) -> str:
    limit = settings.LAB_MAX_UPLOAD_BYTES
    return (
        f"the request body is {size_text(size)}; the largest accepted is {size_text(limit)} "
        "(LAB_MAX_UPLOAD_BYTES)"
    )


class RequestSizeLimitMiddleware:
    """Refuse a body over ``LAB_MAX_UPLOAD_BYTES`` from its declared length, before the
    CSRF check or a parser reads a byte of it: 413 in the API's error shape under
    ``/api/``, a page saying what happened (and what the limit is) elsewhere.

    Django's own ``DATA_UPLOAD_MAX_MEMORY_SIZE`` does not cover DRF's JSON bodies (DRF
    reads the stream, not ``request.body``) nor files, so it is not enough on its own."""

    def __init__(self, get_response: Handler) -> None:
        self.get_response = get_response

    def __call__(self, request: HttpRequest) -> HttpResponse:
        size = _declared_length(request)
        if size is not None and size > settings.LAB_MAX_UPLOAD_BYTES:
            return self._refuse(request, size)
        return self.get_response(request)

    def _refuse(self, request: HttpRequest, size: int) -> HttpResponse:
        message = too_large_message(size)
        if request.path.startswith("/api/"):
            return JsonResponse({"errors": [{"path": "", "message": message}]}, status=TOO_LARGE)
        back = request.headers.get("Referer", "")
        if not url_has_allowed_host_and_scheme(back, allowed_hosts={request.get_host()}):
            back = ""
        page = render_to_string("413.html", {"message": message, "back": back})
        return HttpResponse(page, status=TOO_LARGE)


def _declared_length(request: HttpRequest) -> int | None:
    try:
        return int(request.META.get("CONTENT_LENGTH") or 0)
    except ValueError:
        return None


class PrivateCacheControlMiddleware:
    """A response made for one user (a session or an API token) must not be stored by a
    shared cache (a proxy, a CDN) and replayed to someone else: ``Cache-Control:
    private``, unless the view already said ``no-store`` or ``private``."""

    def __init__(self, get_response: Handler) -> None:
        self.get_response = get_response

    def __call__(self, request: HttpRequest) -> HttpResponse:
        response = self.get_response(request)
        user = getattr(request, "user", None)  # DRF sets it on the request it wraps
        authenticated = (
            bool(user is not None and user.is_authenticated) or "HTTP_AUTHORIZATION" in request.META
        )
        if authenticated:
            current = response.get("Cache-Control", "")
            if "no-store" not in current and "private" not in current:
                patch_cache_control(response, private=True)
        return response
