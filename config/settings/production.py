"""Production: everything of ``base``, but the secret must come from the environment,
and cookies, HSTS and HTTPS are strict (``manage.py check --deploy`` is clean).

Behind a TLS-terminating proxy set ``SECURE_PROXY_SSL_HEADER_NAME`` (for example
``HTTP_X_FORWARDED_PROTO``). Serving plain HTTP on localhost (docker-compose on a
laptop) needs ``SECURE_SSL_REDIRECT=false``.
"""

from __future__ import annotations

from config.env import env_bool, env_int, env_str
from config.settings.base import *  # noqa: F403
from config.settings.base import BASE_DIR, STORAGES

SECRET_KEY = env_str("SECRET_KEY")
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
