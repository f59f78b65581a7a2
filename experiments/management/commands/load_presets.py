"""``manage.py load_presets --owner admin``: every scenario preset as an experiment."""

from __future__ import annotations

from typing import Any

from django.contrib.auth import get_user_model
from django.core.management.base import BaseCommand, CommandError, CommandParser

from experiments import services


class Command(BaseCommand):
    help = "Create one experiment per scenario preset for a user (skips those already there)."

    def add_arguments(self, parser: CommandParser) -> None:
        parser.add_argument("--owner", required=True, help="username of the owner")

    def handle(self, *args: Any, **options: Any) -> None:
        owner = get_user_model().objects.filter(username=options["owner"]).first()
        if owner is None:
            raise CommandError(f"no user named {options['owner']}")
        created = services.presets_install(owner=owner)
        self.stdout.write(f"Loaded {len(created)} preset experiment(s) for {owner.get_username()}.")
