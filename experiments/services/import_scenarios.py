"""An import plus the replay scenarios asked of it (issue 7, the browser's import page).

The import itself is ``experiments.services.imports.experiment_import``, unchanged; the
scenarios (docs/traces.md, "Scenarios on a recorded cluster") are then added to the
stored spec with ``scheduler_core.traces.scenarios``, the functions the CLI uses. Both
happen in one transaction, so a scenario that cannot be added (no GPU node to reclaim, a
variant name taken) rolls the import back: nothing half-made is left behind.
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass
from typing import IO, Any

from django.contrib.auth.models import User
from django.db import transaction

import scheduler_core as sc
from experiments.models import Experiment
from experiments.services.experiments import experiment_update
from experiments.services.imports import ImportRejectedError, experiment_import, import_options
from experiments.specs import spec_parse
from scheduler_core.traces import FORMATS
from scheduler_core.traces.defaults import KindDefaults
from scheduler_core.traces.qos import MappingError, load_mapping
from scheduler_core.traces.scenarios import (
    ScenarioError,
    add_policy_variants,
    add_qos_variant,
    add_spot_reclaim,
    inject_urgent,
    parse_reclaim,
    parse_urgent,
)


@dataclass(frozen=True)
class ReplayScenarios:
    """What the user asks of the recorded cluster beyond replaying it. Each field is
    named as the import form's field, so an error comes back to the field it is about.

    ``inject_urgent`` is ``MxG@T``; ``spot_reclaims`` are ``SHARE@T`` items;
    ``compare_qos_map`` is an alternative mapping (same syntax as the import's)."""

    inject_urgent: str = ""
    urgent_duration: float = 3600.0
    spot_reclaims: tuple[str, ...] = ()
    spot_notice: float = 120.0
    seed: int = 0
    compare_qos_map: str = ""
    compare_policies: tuple[str, ...] = ()

    def __bool__(self) -> bool:
        return bool(self.inject_urgent or self.spot_reclaims or self.compare_qos_map
                    or self.compare_policies)


def experiment_import_with_scenarios(
        *, owner: User, fmt: str, uploads: Sequence[tuple[IO[Any], str]],
        qos_map: str = "", defaults: str = "", name: str = "",
        horizon_seconds: float | None = None, tags: Iterable[str] = (),
        scenarios: ReplayScenarios = ReplayScenarios()) -> Experiment:
    """``experiment_import`` followed by ``scenarios``, all or nothing.

    Raises ``ImportRejectedError`` (errors as ``{path, message}``, plus ``file``, ``line``,
    ``column`` for those found in a file) and stores nothing if anything is wrong."""
    with transaction.atomic():
        experiment = experiment_import(owner=owner, fmt=fmt, uploads=uploads, qos_map=qos_map,
                                       defaults=defaults, name=name,
                                       horizon_seconds=horizon_seconds, tags=tags)
        if not scenarios:
            return experiment
        options = import_options(fmt=fmt, qos_map=qos_map, defaults=defaults, name=name,
                                 horizon_seconds=horizon_seconds)
        mapping = scenarios_applied(experiment.spec, scenarios, fmt=fmt,
                                    qos_map=options.qos_map, defaults=options.defaults)
        try:
            spec = spec_parse(document=mapping)
        except sc.SpecError as exc:
            raise ImportRejectedError(list(exc.errors)) from None
        return experiment_update(experiment=experiment, spec=spec)


def scenarios_applied(mapping: Mapping[str, Any], scenarios: ReplayScenarios, *, fmt: str,
                      qos_map: Any, defaults: KindDefaults) -> dict[str, Any]:
    """The spec mapping with the scenarios added, in the CLI's order (urgent group, spot
    reclaims, QoS alternative, policies); a scenario that cannot be added is an error
    at its field."""
    spec = dict(mapping)
    steps = (("inject_urgent", _urgent), ("spot_reclaims", _reclaims),
             ("compare_qos_map", _qos_alternative), ("compare_policies", _policies))
    for field, step in steps:
        if not getattr(scenarios, field):
            continue
        try:
            spec = step(spec, scenarios, fmt=fmt, qos_map=qos_map, defaults=defaults)
        except (ScenarioError, MappingError, sc.SpecError) as exc:
            raise ImportRejectedError([{"path": field, "message": _message(exc)}]) from None
    return spec


def _urgent(spec: dict[str, Any], scenarios: ReplayScenarios, **context: Any) -> dict[str, Any]:
    members, gpus, arrival = parse_urgent(scenarios.inject_urgent)
    return inject_urgent(spec, members=members, gpus=gpus, arrival=arrival,
                         duration=scenarios.urgent_duration, defaults=context["defaults"])


def _reclaims(spec: dict[str, Any], scenarios: ReplayScenarios, **_: Any) -> dict[str, Any]:
    for text in scenarios.spot_reclaims:
        share, at = parse_reclaim(text)
        spec = add_spot_reclaim(spec, share=share, at=at, seed=scenarios.seed,
                                notice_seconds=scenarios.spot_notice)
    return spec


def _qos_alternative(spec: dict[str, Any], scenarios: ReplayScenarios, *, fmt: str,
                     qos_map: Any, **_: Any) -> dict[str, Any]:
    """The alternative is read against the mapping the import used (the user's edit,
    else the format's default), as ``--compare-qos-map`` does."""
    base = qos_map or FORMATS[fmt].qos_map
    if base is None:
        raise MappingError(f"{fmt} has no QoS labels to compare")
    return add_qos_variant(spec, base, load_mapping(scenarios.compare_qos_map, base))


def _policies(spec: dict[str, Any], scenarios: ReplayScenarios, **_: Any) -> dict[str, Any]:
    return add_policy_variants(spec, list(scenarios.compare_policies))


def _message(exc: Exception) -> str:
    errors = getattr(exc, "errors", None)
    if errors:
        return "; ".join(f"{e['path']}: {e['message']}" if e.get("path") else e["message"]
                         for e in errors)
    return str(exc)


__all__ = ["ReplayScenarios", "experiment_import_with_scenarios", "scenarios_applied"]
