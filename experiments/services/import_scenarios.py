"""An import plus the replay scenarios asked of it (issue 7, the browser's import page).

The scenarios (docs/traces.md, "Scenarios on a recorded cluster") are added by the core
(``scheduler_core.traces.import_experiment``, the function the CLI calls), before
anything is stored: a scenario that cannot be added (no GPU node to reclaim, a variant
name taken) is an error at its field and nothing half-made is left behind.
"""

from __future__ import annotations

from collections.abc import Iterable, Sequence
from typing import IO, Any

from django.contrib.auth.models import User

from experiments.services.imports import ImportedExperiment, ImportWindow, experiment_import
from scheduler_core.traces import ReplayScenarios


def experiment_import_with_scenarios(
    *,
    owner: User,
    fmt: str,
    uploads: Sequence[tuple[IO[Any], str]],
    qos_map: str = "",
    defaults: str = "",
    name: str = "",
    horizon_seconds: float | None = None,
    tags: Iterable[str] = (),
    scenarios: ReplayScenarios | None = None,
    window: ImportWindow | None = None,
) -> ImportedExperiment:
    """``experiment_import`` with ``scenarios``, all or nothing.

    Raises ``ImportRejectedError`` (errors as ``{path, message}``, plus ``file``, ``line``,
    ``column`` for those found in a file) and stores nothing if anything is wrong."""
    return experiment_import(
        owner=owner,
        fmt=fmt,
        uploads=uploads,
        qos_map=qos_map,
        defaults=defaults,
        name=name,
        horizon_seconds=horizon_seconds,
        tags=tags,
        scenarios=scenarios,
        window=window,
    )


__all__ = ["ImportWindow", "ReplayScenarios", "experiment_import_with_scenarios"]
