"""Tests: the base settings with a fast password hasher and Celery tasks run inline.

Tests that need a real worker process start one and switch the app to a real broker.
"""

from __future__ import annotations

import os

from config.settings.base import *  # noqa: F403
from config.settings.base import DATABASES, VAR_DIR

# Fast hashing for test users; PBKDF2 stays available for users that a real server
# process (end-to-end tests) must log in, since production settings cannot read MD5.
PASSWORD_HASHERS = [
    "django.contrib.auth.hashers.MD5PasswordHasher",
    "django.contrib.auth.hashers.PBKDF2PasswordHasher",
]
CELERY_TASK_ALWAYS_EAGER = True
CELERY_TASK_EAGER_PROPAGATES = True

# A test database of this test process's own (several test runs may share a checkout or
# a server); on SQLite a file, not memory, so real worker processes can open it too.
_default = DATABASES["default"]
if _default["ENGINE"] == "django.db.backends.sqlite3":
    _default["TEST"] = {"NAME": str(VAR_DIR / f"test-db-{os.getpid()}.sqlite3")}
else:
    _default["TEST"] = {"NAME": f"test_{_default['NAME']}_{os.getpid()}"}

# One test process, one cache: local memory is right here (and fast). Every real
# deployment gets the shared cache of ``base`` (see ``_cache``).
CACHES = {"default": {"BACKEND": "django.core.cache.backends.locmem.LocMemCache"}}
