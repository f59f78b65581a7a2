"""``manage.py sweep_runs``: the watchdog once, by hand (Celery beat runs it periodically)."""

from __future__ import annotations

from typing import Any

from django.core.management.base import BaseCommand

from experiments import services


class Command(BaseCommand):
    help = "Fail runs whose worker was lost; finalize runs whose aggregation was lost."

    def handle(self, *args: Any, **options: Any) -> None:
        changed = services.runs_sweep_stale()
        self.stdout.write(f"Swept {len(changed)} run(s): {', '.join(map(str, changed)) or '-'}")
