"""Production: everything of ``base``, but the secret must come from the environment,
and cookies, HSTS and HTTPS are strict (``manage.py check --deploy`` is clean).

Behind a TLS-terminating proxy set ``SECURE_PROXY_SSL_HEADER_NAME`` (for example
``HTTP_X_FORWARDED_PROTO``). Serving plain HTTP on localhost (docker-compose on a
laptop) needs ``SECURE_SSL_REDIRECT=false``.
"""

from __future__ import annotations

from django.core.exceptions import ImproperlyConfigured

from config.env import env_bool, env_int, env_str
from config.settings.base import *  # noqa: F403
from config.settings.base import BASE_DIR, DEVELOPMENT_SECRET_KEY, STORAGES

MIN_SECRET_KEY_LENGTH = 50  # what ``check --deploy`` asks for (security.W009)


def production_secret_key(value: str) -> str:
    """The deployment's own key: long, not the public development key."""
    if value.strip() == "" or len(value) < MIN_SECRET_KEY_LENGTH:
        raise ImproperlyConfigured(
            f"SECRET_KEY must have at least {MIN_SECRET_KEY_LENGTH} characters "
            f"(it has {len(value)}); make one with: python -c 'import secrets; "
            "print(secrets.token_urlsafe(50))'"
        )
    if value == DEVELOPMENT_SECRET_KEY or value.startswith(
        ("local-development-only", "process-local-")
    ):
        raise ImproperlyConfigured("SECRET_KEY is the public development key; set your own")
    return value


SECRET_KEY = production_secret_key(env_str("SECRET_KEY"))
DEBUG = env_bool("DEBUG", False)

SESSION_COOKIE_SECURE = True
CSRF_COOKIE_SECURE = True
SECURE_SSL_REDIRECT = env_bool("SECURE_SSL_REDIRECT", True)
SECURE_HSTS_SECONDS = env_int("SECURE_HSTS_SECONDS", 31536000, minimum=0)
SECURE_HSTS_INCLUDE_SUBDOMAINS = env_bool("SECURE_HSTS_INCLUDE_SUBDOMAINS", True)
SECURE_HSTS_PRELOAD = env_bool("SECURE_HSTS_PRELOAD", True)
_PROXY_HEADER = env_str("SECURE_PROXY_SSL_HEADER_NAME", "")
SECURE_PROXY_SSL_HEADER = (_PROXY_HEADER, "https") if _PROXY_HEADER else None

# Hashed, compressed files from collectstatic (the Dockerfile runs it).
STATIC_ROOT = BASE_DIR / "staticfiles"
WHITENOISE_USE_FINDERS = False
STORAGES = {
    **STORAGES,
    "staticfiles": {"BACKEND": "whitenoise.storage.CompressedManifestStaticFilesStorage"},
}
