"""Settings for every environment, read from the environment through strict helpers.

With nothing set, the app runs on one machine: SQLite under ``var/`` and Celery over
kombu's ``filesystem://`` transport, so ``make run`` needs no server. ``DATABASE_URL``
and ``CELERY_BROKER_URL`` switch the same code to PostgreSQL and Redis.
"""

from __future__ import annotations

import os
from pathlib import Path
from typing import Any

import dj_database_url
from django.core.exceptions import ImproperlyConfigured

from config.env import env_bool, env_float, env_int, env_list, env_str

BASE_DIR = Path(__file__).resolve().parent.parent.parent
VAR_DIR = Path(env_str("LAB_VAR_DIR", str(BASE_DIR / "var")))
VAR_DIR.mkdir(parents=True, exist_ok=True)  # the SQLite file and the local broker live here

DEBUG = env_bool("DEBUG", False)
# The fixed key below is public (it is in the repository), so it signs nothing outside
# DEBUG: there, without SECRET_KEY, every process of this machine shares a random key
# kept in var/ (made on first start, readable by this user only). Production settings
# require SECRET_KEY itself, and a long one.
DEVELOPMENT_SECRET_KEY = "local-development-only-not-secret-3f9c2a7b1e5d4c8a9b0e"


def _machine_secret_key(path: Path) -> str:
    """This checkout's own random key, created once (atomically: processes race)."""
    try:
        return path.read_text().strip()
    except FileNotFoundError:
        pass
    import secrets

    temporary = path.with_name(f".{path.name}.{os.getpid()}")
    temporary.write_text(secrets.token_urlsafe(50))
    temporary.chmod(0o600)
    try:
        os.link(temporary, path)  # fails if another process made it first: keep theirs
    except FileExistsError:
        pass
    finally:
        temporary.unlink()
    return path.read_text().strip()


SECRET_KEY = env_str("SECRET_KEY", "") or (
    DEVELOPMENT_SECRET_KEY if DEBUG else _machine_secret_key(VAR_DIR / "secret_key")
)
if SECRET_KEY == DEVELOPMENT_SECRET_KEY and not DEBUG:
    raise ImproperlyConfigured(
        "the development SECRET_KEY is public: it works only with "
        "DEBUG=true; set SECRET_KEY (or unset it) outside DEBUG"
    )
ALLOWED_HOSTS = env_list("ALLOWED_HOSTS", ["localhost", "127.0.0.1", "[::1]"])
CSRF_TRUSTED_ORIGINS = env_list("CSRF_TRUSTED_ORIGINS", [])

INSTALLED_APPS = [
    "django.contrib.admin",
    "django.contrib.auth",
    "django.contrib.contenttypes",
    "django.contrib.sessions",
    "django.contrib.messages",
    "whitenoise.runserver_nostatic",
    "django.contrib.staticfiles",
    "rest_framework",
    "rest_framework.authtoken",
    "django_filters",
    "drf_spectacular",
    "drf_spectacular_sidecar",
    "csp",
    "experiments",
]

MIDDLEWARE = [
    "django.middleware.security.SecurityMiddleware",
    # Oversized bodies are refused before anything reads them (JSON under /api/).
    "experiments.middleware.RequestSizeLimitMiddleware",
    "csp.middleware.CSPMiddleware",
    "whitenoise.middleware.WhiteNoiseMiddleware",
    "django.contrib.sessions.middleware.SessionMiddleware",
    "django.middleware.common.CommonMiddleware",
    "django.middleware.csrf.CsrfViewMiddleware",
    "django.contrib.auth.middleware.AuthenticationMiddleware",
    # Login for everything: a view opts out with @login_not_required (only the login page).
    "django.contrib.auth.middleware.LoginRequiredMiddleware",
    "django.contrib.messages.middleware.MessageMiddleware",
    "django.middleware.clickjacking.XFrameOptionsMiddleware",
    "experiments.middleware.PrivateCacheControlMiddleware",
]

ROOT_URLCONF = "config.urls"
WSGI_APPLICATION = "config.wsgi.application"

TEMPLATES = [
    {
        "BACKEND": "django.template.backends.django.DjangoTemplates",
        "DIRS": [BASE_DIR / "templates"],
        "APP_DIRS": True,
        "OPTIONS": {
            "context_processors": [
                "django.template.context_processors.request",
                "django.contrib.auth.context_processors.auth",
                "django.contrib.messages.context_processors.messages",
            ],
        },
    },
]


def _database(url: str) -> dict[str, Any]:
    """One database from a URL; SQLite gets WAL and immediate transactions because the
    web server and the worker write to the same file at the same time."""
    config: dict[str, Any] = dict(
        dj_database_url.parse(url, conn_max_age=env_int("DB_CONN_MAX_AGE", 60, minimum=0))
    )
    if config["ENGINE"] == "django.db.backends.sqlite3":
        config["CONN_MAX_AGE"] = 0
        config["OPTIONS"] = {
            "timeout": 30,
            "transaction_mode": "IMMEDIATE",
            "init_command": "PRAGMA journal_mode=WAL; PRAGMA synchronous=NORMAL;",
        }
    else:
        config["CONN_HEALTH_CHECKS"] = True
    return config


DATABASES = {"default": _database(env_str("DATABASE_URL", f"sqlite:///{VAR_DIR / 'db.sqlite3'}"))}
DEFAULT_AUTO_FIELD = "django.db.models.BigAutoField"

AUTH_PASSWORD_VALIDATORS = [
    {"NAME": "django.contrib.auth.password_validation.UserAttributeSimilarityValidator"},
    {"NAME": "django.contrib.auth.password_validation.MinimumLengthValidator"},
    {"NAME": "django.contrib.auth.password_validation.CommonPasswordValidator"},
    {"NAME": "django.contrib.auth.password_validation.NumericPasswordValidator"},
]
LOGIN_URL = "login"
LOGIN_REDIRECT_URL = "experiments:list"
LOGOUT_REDIRECT_URL = "login"

LANGUAGE_CODE = "en-us"
TIME_ZONE = "UTC"
USE_I18N = True
USE_TZ = True

STATIC_URL = "static/"
STATIC_ROOT: Path | None = None  # production.py sets it: collectstatic is for deployments only
STATICFILES_DIRS = [BASE_DIR / "static"]
# Assets are served by the app itself (WhiteNoise): no CDN, the product works offline.
# Without collectstatic (make run), WhiteNoise serves straight from the finders.
WHITENOISE_USE_FINDERS = True
STORAGES = {
    "default": {"BACKEND": "django.core.files.storage.FileSystemStorage"},
    "staticfiles": {"BACKEND": "django.contrib.staticfiles.storage.StaticFilesStorage"},
}

# Content-Security-Policy (django-csp): scripts only from this site, no inline script,
# no eval; nothing framed, no plugins, forms post only here. Styles allow inline ones:
# Plotly writes style attributes and a <style> element as it draws, and Swagger UI does
# too (a style attribute cannot carry a nonce).
CONTENT_SECURITY_POLICY = {
    "DIRECTIVES": {
        "default-src": ["'self'"],
        "script-src": ["'self'"],
        "style-src": ["'self'", "'unsafe-inline'"],
        "img-src": ["'self'", "data:", "blob:"],
        "font-src": ["'self'", "data:"],
        "connect-src": ["'self'"],
        "worker-src": ["'self'", "blob:"],
        "object-src": ["'none'"],
        "base-uri": ["'self'"],
        "form-action": ["'self'"],
        "frame-ancestors": ["'none'"],
    },
}

SESSION_COOKIE_HTTPONLY = True
CSRF_COOKIE_HTTPONLY = False  # the run page's Cancel form reads no cookie; forms carry the token
X_FRAME_OPTIONS = "DENY"
SECURE_CONTENT_TYPE_NOSNIFF = True
SECURE_REFERRER_POLICY = "same-origin"

# The largest request body (a spec, a trace upload) the app reads; a bigger one is
# refused with 413 before it is read: in the API's error shape under /api/, as a page
# that says so elsewhere. Django's own limit on form fields follows it.
LAB_MAX_UPLOAD_BYTES = env_int("LAB_MAX_UPLOAD_BYTES", 10 * 1024 * 1024, minimum=1024)
DATA_UPLOAD_MAX_MEMORY_SIZE = LAB_MAX_UPLOAD_BYTES

# Exports (issue #10 §4): written once to files under LAB_EXPORT_DIR and served from
# there. One of at most LAB_EXPORT_INLINE_ROWS rows is written by the request itself;
# a larger one by a Celery worker (202 + Retry-After meanwhile), at most
# LAB_EXPORT_BUILDS_PER_USER at once per user (429 past it). A build silent for
# LAB_EXPORT_BUILD_SECONDS (its worker vanished, or none has picked it up yet) is
# started again by the next request; a running build keeps itself fresh.
LAB_EXPORT_DIR = Path(env_str("LAB_EXPORT_DIR", str(VAR_DIR / "exports")))
LAB_EXPORT_INLINE_ROWS = env_int("LAB_EXPORT_INLINE_ROWS", 20_000, minimum=0)
LAB_EXPORT_BUILDS_PER_USER = env_int("LAB_EXPORT_BUILDS_PER_USER", 2, minimum=1)
LAB_EXPORT_BUILD_SECONDS = env_int("LAB_EXPORT_BUILD_SECONDS", 120, minimum=10)
# How often the watchdog looks for export files no run owns (a crash, a recreated database).
LAB_EXPORT_SWEEP_SECONDS = env_int("LAB_EXPORT_SWEEP_SECONDS", 3600, minimum=1)
# Hot reads of a run (detail, summary, event pages, chart data) are kept in the shared
# cache under the run's state; a finished run's for LAB_READ_CACHE_SECONDS, an active
# run's (its progress moves) for LAB_READ_CACHE_ACTIVE_SECONDS.
LAB_READ_CACHE_SECONDS = env_int("LAB_READ_CACHE_SECONDS", 3600, minimum=0)
LAB_READ_CACHE_ACTIVE_SECONDS = env_float("LAB_READ_CACHE_ACTIVE_SECONDS", 1.0, minimum=0.0)
# A finished run's page (its charts, a megabyte on a large run) is precomputed by the
# worker into that cache and kept this long; a view after that builds it again.
LAB_CHART_CACHE_SECONDS = env_int(
    "LAB_CHART_CACHE_SECONDS", 7 * 24 * 3600 if LAB_READ_CACHE_SECONDS else 0, minimum=0
)

# Login form: at most LAB_LOGIN_FAILURES wrong passwords per (username, address) in
# LAB_LOGIN_WINDOW_SECONDS, counted in the shared cache.
LAB_LOGIN_FAILURES = env_int("LAB_LOGIN_FAILURES", 5, minimum=1)
LAB_LOGIN_WINDOW_SECONDS = env_int("LAB_LOGIN_WINDOW_SECONDS", 300, minimum=1)


def _cache(url: str, var_dir: Path) -> dict[str, Any]:
    """The cache every web process shares (throttles, hot reads): Redis when a redis://
    URL is given, else files under var/ (shared by every process of one machine). Never
    local memory: each gunicorn process would count its own throttles."""
    if url.startswith(("redis://", "rediss://", "unix://")):
        return {
            "BACKEND": "django.core.cache.backends.redis.RedisCache",
            "LOCATION": url,
            "KEY_PREFIX": env_str("CACHE_KEY_PREFIX", "disruption-lab"),
            "TIMEOUT": 300,
        }
    return {
        "BACKEND": "experiments.cache_backends.AtomicAddFileCache",
        "LOCATION": str(var_dir / "cache"),
        "TIMEOUT": 300,
        "OPTIONS": {"MAX_ENTRIES": 5000},
    }


LOGGING = {
    "version": 1,
    "disable_existing_loggers": False,
    "handlers": {"console": {"class": "logging.StreamHandler"}},
    "root": {"handlers": ["console"], "level": env_str("LOG_LEVEL", "INFO")},
}

# ------------------------------------------------------------------------------ Celery
CELERY_BROKER_URL = env_str("CELERY_BROKER_URL", "filesystem://")
BROKER_IS_FILESYSTEM = CELERY_BROKER_URL.startswith("filesystem://")
BROKER_DIR = VAR_DIR / "broker"
TASK_TIME_LIMIT = env_int("CELERY_TASK_TIME_LIMIT", 1800, minimum=10)
VISIBILITY_TIMEOUT = env_int("CELERY_VISIBILITY_TIMEOUT", 600, minimum=1)

if BROKER_IS_FILESYSTEM:
    CELERY_BROKER_TRANSPORT_OPTIONS = {
        "data_folder_in": str(BROKER_DIR / "queue"),
        "data_folder_out": str(BROKER_DIR / "queue"),
        "control_folder": str(BROKER_DIR / "control"),
        "processed_folder": str(BROKER_DIR / "processed"),
        "store_processed": False,
    }
    _DEFAULT_RESULT_BACKEND = f"file://{VAR_DIR / 'celery-results'}"
else:
    # A message unacknowledged this long is handed to another worker. A duplicate that
    # arrives while the first delivery is alive waits (its heartbeat is fresh), so this
    # may be shorter than the longest task.
    # Abandoned messages are looked for every CELERY_UNACKED_RESTORE_INTERVAL seconds.
    CELERY_BROKER_TRANSPORT_OPTIONS = {
        "visibility_timeout": VISIBILITY_TIMEOUT,
        "unacked_restore_interval": env_int("CELERY_UNACKED_RESTORE_INTERVAL", 10, minimum=1),
        "unacked_restore_throttle": 1,
    }
    _DEFAULT_RESULT_BACKEND = CELERY_BROKER_URL

CELERY_RESULT_BACKEND = env_str("CELERY_RESULT_BACKEND", _DEFAULT_RESULT_BACKEND)
CACHES = {"default": _cache(env_str("CACHE_URL", CELERY_BROKER_URL), VAR_DIR)}
CELERY_RESULT_BACKEND_TRANSPORT_OPTIONS = CELERY_BROKER_TRANSPORT_OPTIONS
CELERY_RESULT_EXPIRES = 24 * 3600
CELERY_TASK_DEFAULT_QUEUE = env_str("CELERY_TASK_DEFAULT_QUEUE", "disruption-lab")
CELERY_TASK_SERIALIZER = "json"
CELERY_RESULT_SERIALIZER = "json"
CELERY_ACCEPT_CONTENT = ["json"]
# A worker killed mid-task must not lose the task: acknowledge only when it is done,
# and hand the message back when the child process dies.
CELERY_TASK_ACKS_LATE = True
CELERY_TASK_REJECT_ON_WORKER_LOST = True
CELERY_WORKER_PREFETCH_MULTIPLIER = 1
CELERY_TASK_TIME_LIMIT = TASK_TIME_LIMIT
CELERY_TASK_SOFT_TIME_LIMIT = max(5, TASK_TIME_LIMIT - 30)
CELERY_TASK_ALWAYS_EAGER = env_bool("CELERY_TASK_ALWAYS_EAGER", False)
# Guard rails of every simulation (a worker's pool process): an address-space cap
# (RLIMIT_AS, so an allocation past it raises MemoryError in that task, which fails its
# run at once with the reason) and a wall-clock deadline checked as it simulates. A pool
# process whose memory grew past LAB_WORKER_MAX_MEMORY_MB is replaced after its task.
LAB_WORKER_MEMORY_LIMIT_MB = env_int("LAB_WORKER_MEMORY_LIMIT_MB", 6144, minimum=0)  # 0: off
LAB_SIMULATION_DEADLINE_SECONDS = env_float(
    "LAB_SIMULATION_DEADLINE_SECONDS", max(5.0, TASK_TIME_LIMIT - 60.0), minimum=1.0
)
CELERY_WORKER_MAX_MEMORY_PER_CHILD = (
    env_int("LAB_WORKER_MAX_MEMORY_MB", 2048, minimum=64) * 1024
)  # Celery counts KiB
# A database blip (connection lost, server restarting) is waited out with back-off for
# up to this long before the task gives the work back to the queue; the run is not failed.
LAB_DB_RETRY_SECONDS = env_float("LAB_DB_RETRY_SECONDS", 60.0, minimum=0.0)
CELERY_BROKER_CONNECTION_RETRY_ON_STARTUP = True
CELERY_WORKER_HIJACK_ROOT_LOGGER = False
CELERY_BEAT_SCHEDULE_FILENAME = str(VAR_DIR / "celerybeat-schedule")
CELERY_BEAT_SCHEDULE = {
    "sweep-stale-runs": {
        "task": "experiments.tasks.sweep_stale_runs",
        "schedule": env_float("LAB_SWEEP_EVERY_SECONDS", 30.0, minimum=1.0),
    },
}

# ------------------------------------------------------------------- Disruption Lab
# Who sees what: owners and the users an experiment is shared with, or everyone.
LAB_SHARE_ALL = env_bool("LAB_SHARE_ALL", False)
# Limits on what one spec may ask for; a spec above one is refused with the limit named.
LAB_LIMITS = {
    "LAB_MAX_NODES": env_int("LAB_MAX_NODES", 5000, minimum=1),
    "LAB_MAX_WORKLOADS": env_int("LAB_MAX_WORKLOADS", 10_000, minimum=1),
    "LAB_MAX_PODS": env_int("LAB_MAX_PODS", 50000, minimum=1),
    "LAB_MAX_HORIZON_SECONDS": env_float("LAB_MAX_HORIZON_SECONDS", 60 * 86400.0, minimum=1.0),
    "LAB_MAX_TASKS": env_int("LAB_MAX_TASKS", 5000, minimum=1),
}
# A running replication writes a heartbeat with its progress (at most every
# LAB_PROGRESS_EVERY_SECONDS). One silent for LAB_HEARTBEAT_STALE_SECONDS may be taken
# over by another delivery of its task; one silent for LAB_WORKER_LOST_SECONDS fails
# its run (the sweep), with the reason.
LAB_PROGRESS_EVERY_SECONDS = env_float("LAB_PROGRESS_EVERY_SECONDS", 1.0, minimum=0.0)
LAB_HEARTBEAT_STALE_SECONDS = env_float("LAB_HEARTBEAT_STALE_SECONDS", 120.0, minimum=1.0)
# Redis hands a lost task to another worker after the visibility timeout, so wait for
# that; the filesystem broker never does, so there is nothing to wait for.
LAB_WORKER_LOST_SECONDS = env_float(
    "LAB_WORKER_LOST_SECONDS",
    (0 if BROKER_IS_FILESYSTEM else VISIBILITY_TIMEOUT) + 2 * LAB_HEARTBEAT_STALE_SECONDS,
    minimum=1.0,
)
LAB_MAX_ATTEMPTS = env_int("LAB_MAX_ATTEMPTS", 3, minimum=1)
# A run is sent as at most this many tasks, each a chunk of consecutive replications, so
# 2,400 small ones do not each pay a task round trip; a chunk hands the rest of its
# replications back to the queue after LAB_TASK_CHUNK_SECONDS (well inside the broker's
# visibility timeout and the task time limit).
LAB_TASKS_PER_RUN = env_int("LAB_TASKS_PER_RUN", 64, minimum=1)
LAB_TASK_CHUNK_SECONDS = env_float("LAB_TASK_CHUNK_SECONDS", 30.0, minimum=0.0)
# Placement-study replications (about a second each) one worker task takes at a time,
# all of one variant (experiments.services.study): fewer round trips, progress per seed.
LAB_STUDY_CHUNK = env_int("LAB_STUDY_CHUNK", 10, minimum=1)
# A replication's stored timeline keeps its per-pod spans up to this many (about 6 MB of
# JSON per 100k); above it only costs, recoveries and preemptions are kept, and the page
# says the per-pod drawing was left out (a 2,000-member gang failing 460 times has 1 M).
LAB_MAX_STORED_TIMELINE_SPANS = env_int("LAB_MAX_STORED_TIMELINE_SPANS", 200_000, minimum=0)
# A run nobody picked up (no worker running) is failed after this long.
LAB_QUEUED_TIMEOUT_SECONDS = env_float("LAB_QUEUED_TIMEOUT_SECONDS", 24 * 3600.0, minimum=1.0)

# ------------------------------------------------------------------------- REST API
# Scripts send a token (``Authorization: Token ...``), the browser its session. Every
# error, whatever raised it, is ``{"errors": [{"path", "message"}]}``. Run starts are
# throttled per user by counting their runs in the database, so the limit holds across
# every web process and machine (LAB_API_RUN_START_RATE, e.g. ``60/hour``).
REST_FRAMEWORK = {
    "DEFAULT_AUTHENTICATION_CLASSES": [
        "rest_framework.authentication.TokenAuthentication",
        "rest_framework.authentication.SessionAuthentication",
    ],
    "DEFAULT_PERMISSION_CLASSES": ["rest_framework.permissions.IsAuthenticated"],
    "DEFAULT_RENDERER_CLASSES": [
        "rest_framework.renderers.JSONRenderer",
        "rest_framework.renderers.BrowsableAPIRenderer",
    ],
    "DEFAULT_SCHEMA_CLASS": "experiments.api.schema.AutoSchema",
    "EXCEPTION_HANDLER": "experiments.api.exceptions.api_exception_handler",
    "DEFAULT_THROTTLE_RATES": {
        "run_start": env_str("LAB_API_RUN_START_RATE", "60/hour"),
        # Password guesses at the token endpoint, per client address, counted in the
        # shared cache (CACHES), so every web process and machine sees the same count.
        "token": env_str("LAB_API_TOKEN_RATE", "20/minute"),
    },
    "URL_FORMAT_OVERRIDE": None,  # ?format= belongs to the export endpoints
    "TEST_REQUEST_DEFAULT_FORMAT": "json",
}
SPECTACULAR_SETTINGS = {
    "TITLE": "Disruption Lab API",
    "DESCRIPTION": "Experiments, runs, results and exports: everything the pages do, "
    "for scripts and notebooks.",
    "VERSION": "1",
    "SERVE_INCLUDE_SCHEMA": False,
    "SERVE_PERMISSIONS": ["rest_framework.permissions.IsAuthenticated"],
    "COMPONENT_SPLIT_REQUEST": True,
    "SCHEMA_PATH_PREFIX": "/api/v1",
    # Swagger UI from the drf-spectacular-sidecar package: no CDN.
    "SWAGGER_UI_DIST": "SIDECAR",
    "SWAGGER_UI_FAVICON_HREF": "SIDECAR",
    "POSTPROCESSING_HOOKS": [
        "drf_spectacular.hooks.postprocess_schema_enums",
        "experiments.api.schema.add_error_responses",
    ],
}
