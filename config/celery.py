"""The Celery app: configuration from Django settings under the ``CELERY_`` namespace."""

from __future__ import annotations

import os
import resource
from pathlib import Path

from celery import Celery
from celery.signals import worker_process_init

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


@worker_process_init.connect
def _cap_memory(**kwargs: object) -> None:
    """Each pool process gets an address-space cap (``LAB_WORKER_MEMORY_LIMIT_MB``): a
    simulation that outgrows it gets a MemoryError in its own task (which fails its run
    with the reason) instead of growing until the kernel's OOM killer takes the machine's
    biggest process, and the task with it, to be delivered again into the next OOM."""
    from django.conf import settings

    cap_memory(settings.LAB_WORKER_MEMORY_LIMIT_MB)


def cap_memory(megabytes: int) -> None:
    """Lower this process's RLIMIT_AS to ``megabytes`` (0: leave it); never raise it."""
    if megabytes <= 0:
        return
    limit = megabytes * 1024 * 1024
    _soft, hard = resource.getrlimit(resource.RLIMIT_AS)
    if hard != resource.RLIM_INFINITY:
        limit = min(limit, hard)
    resource.setrlimit(resource.RLIMIT_AS, (limit, hard))
