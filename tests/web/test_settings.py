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

PRODUCTION_ENV = {"DJANGO_SETTINGS_MODULE": "config.settings.production",
                  "SECRET_KEY": "k9#Qv2!xP7@zL4$wR8^tN1&bM6*cJ3(hF5)gD0-sA_eY+uI=oT",
                  "ALLOWED_HOSTS": "lab.example.com", "DATABASE_URL": "sqlite:///:memory:"}


@pytest.mark.parametrize(("helper", "value", "message"), [
    (lambda: env_bool("X_TEST", False), "flase", "X_TEST='flase' is not a boolean"),
    (lambda: env_int("X_TEST", 1), "10m", "X_TEST='10m' is not a whole number"),
    (lambda: env_int("X_TEST", 1, minimum=5), "2", "X_TEST=2 is below its minimum of 5"),
    (lambda: env_float("X_TEST", 1.0), "soon", "X_TEST='soon' is not a number"),
], ids=["bool", "int", "minimum", "float"])
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
    return subprocess.run([sys.executable, str(ROOT / "manage.py"), *args], cwd=ROOT,
                          env={**clean, **env}, capture_output=True, text=True, timeout=120,
                          check=False)


def test_production_settings_pass_the_deployment_checklist():
    done = _manage("check", "--deploy", "--fail-level", "WARNING", **PRODUCTION_ENV)

    assert done.returncode == 0, done.stderr
    assert done.stdout == "System check identified no issues (0 silenced).\n"


def test_production_cookies_are_secure_and_debug_is_off():
    code = ("from django.conf import settings as s; print(s.DEBUG, s.SESSION_COOKIE_SECURE, "
            "s.CSRF_COOKIE_SECURE, s.SECURE_SSL_REDIRECT, s.SECURE_HSTS_SECONDS, "
            "'django.middleware.csrf.CsrfViewMiddleware' in s.MIDDLEWARE)")
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
