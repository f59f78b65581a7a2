"""Settings come from the environment through helpers that fail loudly, and the
production settings pass ``manage.py check --deploy`` with secure cookies and CSRF on."""

from __future__ import annotations

import os
import subprocess
import sys

import pytest
from django.core.exceptions import ImproperlyConfigured

from config.env import env_bool, env_float, env_int, env_list, env_str
from tests.web.live import ROOT

PRODUCTION_ENV = {
    "DJANGO_SETTINGS_MODULE": "config.settings.production",
    "SECRET_KEY": "k9#Qv2!xP7@zL4$wR8^tN1&bM6*cJ3(hF5)gD0-sA_eY+uI=oT",
    "ALLOWED_HOSTS": "lab.example.com",
    "DATABASE_URL": "sqlite:///:memory:",
}


@pytest.mark.parametrize(
    ("helper", "value", "message"),
    [
        (lambda: env_bool("X_TEST", False), "flase", "X_TEST='flase' is not a boolean"),
        (lambda: env_int("X_TEST", 1), "10m", "X_TEST='10m' is not a whole number"),
        (lambda: env_int("X_TEST", 1, minimum=5), "2", "X_TEST=2 is below its minimum of 5"),
        (lambda: env_float("X_TEST", 1.0), "soon", "X_TEST='soon' is not a number"),
    ],
    ids=["bool", "int", "minimum", "float"],
)
def test_a_bad_value_stops_the_start_naming_the_variable(monkeypatch, helper, value, message):
    monkeypatch.setenv("X_TEST", value)

    with pytest.raises(ImproperlyConfigured) as error:
        helper()

    assert str(error.value).startswith(message)


def test_helpers_read_good_values_and_defaults(monkeypatch):
    monkeypatch.setenv("X_BOOL", "Yes")
    monkeypatch.setenv("X_LIST", "a.example, ,b.example")
    monkeypatch.delenv("X_MISSING", raising=False)

    assert env_bool("X_BOOL", False) is True
    assert env_list("X_LIST", []) == ["a.example", "b.example"]
    assert env_int("X_MISSING", 7) == 7
    assert env_str("X_MISSING", "d") == "d"
    with pytest.raises(ImproperlyConfigured, match="X_MISSING must be set"):
        env_str("X_MISSING")


def _manage(*args: str, **env: str) -> subprocess.CompletedProcess[str]:
    clean = {k: v for k, v in os.environ.items() if not k.startswith(("DJANGO_", "DATABASE_"))}
    return subprocess.run(
        [sys.executable, str(ROOT / "manage.py"), *args],
        cwd=ROOT,
        env={**clean, **env},
        capture_output=True,
        text=True,
        timeout=120,
        check=False,
    )


def test_production_settings_pass_the_deployment_checklist():
    done = _manage("check", "--deploy", "--fail-level", "WARNING", **PRODUCTION_ENV)

    assert done.returncode == 0, done.stderr
    assert done.stdout == "System check identified no issues (0 silenced).\n"


def test_production_cookies_are_secure_and_debug_is_off():
    code = (
        "from django.conf import settings as s; print(s.DEBUG, s.SESSION_COOKIE_SECURE, "
        "s.CSRF_COOKIE_SECURE, s.SECURE_SSL_REDIRECT, s.SECURE_HSTS_SECONDS, "
        "'django.middleware.csrf.CsrfViewMiddleware' in s.MIDDLEWARE)"
    )
    done = _manage("shell", "--no-imports", "-c", code, **PRODUCTION_ENV)

    assert done.returncode == 0, done.stderr
    assert done.stdout.split() == ["False", "True", "True", "True", "31536000", "True"]


def test_production_refuses_to_start_without_a_secret_key():
    env = {k: v for k, v in PRODUCTION_ENV.items() if k != "SECRET_KEY"}

    done = _manage("check", **env)

    assert done.returncode != 0
    assert "the environment variable SECRET_KEY must be set" in done.stderr


def test_a_typo_in_the_environment_stops_the_app():
    done = _manage("check", DJANGO_SETTINGS_MODULE="config.settings.base", DEBUG="ture")

    assert done.returncode != 0
    assert "DEBUG='ture' is not a boolean (use true or false)" in done.stderr


@pytest.mark.parametrize(
    "key", ["", "   ", "short-but-not-empty-0123456789"], ids=["empty", "blank", "short"]
)
def test_production_refuses_an_empty_or_short_secret_key(key):
    done = _manage("check", **{**PRODUCTION_ENV, "SECRET_KEY": key})

    assert done.returncode != 0
    assert "SECRET_KEY must have at least 50 characters" in done.stderr


def test_production_refuses_the_public_development_key():
    from config.settings.base import DEVELOPMENT_SECRET_KEY

    done = _manage("check", **{**PRODUCTION_ENV, "SECRET_KEY": DEVELOPMENT_SECRET_KEY + "x" * 10})

    assert done.returncode != 0
    assert "SECRET_KEY is the public development key" in done.stderr


def _base_value(expression: str, tmp_path, **env: str) -> subprocess.CompletedProcess[str]:
    code = f"from django.conf import settings as s; print({expression})"
    clean = {
        k: v
        for k, v in os.environ.items()
        if k not in ("SECRET_KEY", "DEBUG", "CACHE_URL", "CELERY_BROKER_URL")
    }
    return subprocess.run(
        [sys.executable, str(ROOT / "manage.py"), "shell", "--no-imports", "-c", code],
        cwd=ROOT,
        env={
            **clean,
            "DJANGO_SETTINGS_MODULE": "config.settings.base",
            "LAB_VAR_DIR": str(tmp_path),
            **env,
        },
        capture_output=True,
        text=True,
        timeout=120,
        check=False,
    )


def test_the_development_key_signs_only_under_debug(tmp_path):
    from config.settings.base import DEVELOPMENT_SECRET_KEY

    under_debug = _base_value("s.SECRET_KEY", tmp_path, DEBUG="true")
    without_debug = [_base_value("s.SECRET_KEY", tmp_path) for _ in range(2)]
    forced = _base_value("s.SECRET_KEY", tmp_path, SECRET_KEY=DEVELOPMENT_SECRET_KEY)

    assert under_debug.stdout.strip() == DEVELOPMENT_SECRET_KEY
    keys = {done.stdout.strip() for done in without_debug}
    assert len(keys) == 1, "every process of one machine shares the key"
    assert DEVELOPMENT_SECRET_KEY not in keys
    assert len(keys.pop()) >= 50
    assert (tmp_path / "secret_key").stat().st_mode & 0o077 == 0
    assert forced.returncode != 0
    assert "the development SECRET_KEY is public" in forced.stderr


@pytest.mark.parametrize(
    ("env", "backend"),
    [
        ({"CELERY_BROKER_URL": "redis://127.0.0.1:6379/5"}, "RedisCache redis://127.0.0.1:6379/5"),
        ({"CACHE_URL": "redis://127.0.0.1:6379/7"}, "RedisCache redis://127.0.0.1:6379/7"),
        ({}, "AtomicAddFileCache {var}/cache"),
    ],
    ids=["broker", "cache-url", "local"],
)
def test_the_cache_is_shared_by_every_web_process(tmp_path, env, backend):
    """Throttles and hot reads live in the cache: local memory would be one per process."""
    done = _base_value(
        "s.CACHES['default']['BACKEND'].rsplit('.', 1)[1], s.CACHES['default']['LOCATION']",
        tmp_path,
        **env,
    )

    assert done.returncode == 0, done.stderr
    assert done.stdout.strip() == backend.format(var=tmp_path)


def test_worker_guard_rails_have_defaults_and_read_the_environment(tmp_path):
    expression = (
        "s.LAB_WORKER_MEMORY_LIMIT_MB, s.LAB_SIMULATION_DEADLINE_SECONDS, "
        "s.CELERY_WORKER_MAX_MEMORY_PER_CHILD, s.LAB_MAX_UPLOAD_BYTES"
    )
    default = _base_value(expression, tmp_path)
    chosen = _base_value(
        expression,
        tmp_path,
        LAB_WORKER_MEMORY_LIMIT_MB="900",
        LAB_SIMULATION_DEADLINE_SECONDS="30",
        LAB_WORKER_MAX_MEMORY_MB="512",
        LAB_MAX_UPLOAD_BYTES="2048",
    )

    assert default.stdout.split() == ["6144", "1740.0", "2097152", "10485760"]
    assert chosen.stdout.split() == ["900", "30.0", "524288", "2048"]
