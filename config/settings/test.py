"""Tests: the base settings with a fast password hasher and Celery tasks run inline.

Tests that need a real worker process start one and switch the app to a real broker.
"""

from __future__ import annotations

from config.settings.base import *  # noqa: F403

# Fast hashing for test users; PBKDF2 stays available for users that a real server
# process (end-to-end tests) must log in, since production settings cannot read MD5.
PASSWORD_HASHERS = ["django.contrib.auth.hashers.MD5PasswordHasher",
                    "django.contrib.auth.hashers.PBKDF2PasswordHasher"]
CELERY_TASK_ALWAYS_EAGER = True
CELERY_TASK_EAGER_PROPAGATES = True
