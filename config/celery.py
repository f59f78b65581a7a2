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
    """kombu's filesystem transport expects its folders to exist already."""
    options = sender.conf.broker_transport_options or {}
    for key in ("data_folder_in", "data_folder_out", "control_folder", "processed_folder"):
        if options.get(key):
            Path(options[key]).mkdir(parents=True, exist_ok=True)
    backend = str(sender.conf.result_backend or "")
    if backend.startswith("file://"):
        Path(backend.removeprefix("file://")).mkdir(parents=True, exist_ok=True)
