"""``manage.py ensure_local_superuser``: the local login ``make run`` prints.

The password is generated once and kept in ``var/`` (never committed), so it stays
the same across restarts of the local app; delete the file to get a new one.
"""

from __future__ import annotations

import json
import secrets
from pathlib import Path
from typing import Any

from django.conf import settings
from django.contrib.auth import get_user_model
from django.core.management.base import BaseCommand, CommandParser


class Command(BaseCommand):
    help = "Create (or repair) the local superuser and print its credentials."

    def add_arguments(self, parser: CommandParser) -> None:
        parser.add_argument("--username", default="admin")
        parser.add_argument(
            "--credentials-file", default=str(Path(settings.VAR_DIR) / "local-superuser.json")
        )

    def handle(self, *args: Any, **options: Any) -> None:
        path = Path(options["credentials_file"])
        username = options["username"]
        password = _stored_password(path, username) or secrets.token_urlsafe(12)
        user = get_user_model().objects.filter(username=username).first() or get_user_model()(
            username=username
        )
        if not user.check_password(password) or not user.is_superuser:
            user.is_staff = user.is_superuser = user.is_active = True
            user.set_password(password)
            user.save()
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_text(json.dumps({"username": username, "password": password}))
        path.chmod(0o600)
        self.stdout.write(f"Local superuser: username {username}  password {password}")


def _stored_password(path: Path, username: str) -> str | None:
    try:
        data = json.loads(path.read_text())
    except (OSError, ValueError):
        return None
    return data.get("password") if data.get("username") == username else None
