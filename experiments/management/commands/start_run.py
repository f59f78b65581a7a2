"""``manage.py start_run EXPERIMENT_ID``: what the Run button does, from a shell."""

from __future__ import annotations

from typing import Any

from django.core.management.base import BaseCommand, CommandError, CommandParser

import scheduler_core as sc
from experiments import services
from experiments.models import Experiment


class Command(BaseCommand):
    help = "Enqueue a run of an experiment on the Celery workers and print its id."

    def add_arguments(self, parser: CommandParser) -> None:
        parser.add_argument("experiment", type=int, help="the experiment's id")

    def handle(self, *args: Any, **options: Any) -> None:
        experiment = Experiment.objects.filter(pk=options["experiment"]).first()
        if experiment is None:
            raise CommandError(f"no experiment with id {options['experiment']}")
        try:
            run = services.run_enqueue(experiment=experiment, user=experiment.owner)
        except sc.SpecError as exc:
            raise CommandError(str(exc)) from None
        self.stdout.write(str(run.pk))
