"""The Celery app: configuration from Django settings under the ``CELERY_`` namespace."""

from __future__ import annotations

import os
from pathlib import Path

from celery import Celery

os.environ.setdefault("DJANGO_SETTINGS_MODULE", "config.settings.base")

app = Celery("disruption_lab")
app.config_from_object("django.conf:settings", namespace="CELERY")
app.autodiscover_tasks()


@app.on_configure.connect
def _make_broker_folders(sender: Celery, **kwargs: object) -> None:
    """kombu's filesystem transport expects its folders to exist already. Reads Django's
    settings, not ``sender.conf``: touching the app's config while it is being configured
    re-enters configuration (a RecursionError inside logging)."""
    from django.conf import settings

    options = getattr(settings, "CELERY_BROKER_TRANSPORT_OPTIONS", None) or {}
    for key in ("data_folder_in", "data_folder_out", "control_folder", "processed_folder"):
        if options.get(key):
            Path(options[key]).mkdir(parents=True, exist_ok=True)
    backend = str(getattr(settings, "CELERY_RESULT_BACKEND", "") or "")
    if backend.startswith("file://"):
        Path(backend.removeprefix("file://")).mkdir(parents=True, exist_ok=True)
