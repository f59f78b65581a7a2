"""The one door every spec comes through: scheduler_core's validation plus this
deployment's limits, so the form, the YAML tab, a re-run and (later) the API all refuse
the same things with the same messages."""

from __future__ import annotations

import functools
import os
import subprocess
from collections.abc import Mapping
from importlib import metadata
from pathlib import Path
from typing import Any

import yaml
from django.conf import settings

import scheduler_core as sc
from scheduler_core.plugins import registry

SpecErrors = list[dict[str, str]]


def spec_parse(*, document: str | Mapping[str, Any]) -> sc.ExperimentSpec:
    """Validate a spec completely and check it against the configured limits.

    Raises ``sc.SpecError`` with ``errors`` as ``[{"path", "message"}]``.
    """
    spec = sc.parse_spec(document)
    errors = spec_limit_errors(spec) + _name_errors(spec)
    if errors:
        raise sc.SpecError(errors)
    return spec


def spec_limit_errors(spec: sc.ExperimentSpec) -> SpecErrors:
    """The limits a spec exceeds, each naming its setting so an operator can find it."""
    limits = settings.LAB_LIMITS
    nodes = sum(pool.count for pool in spec.cluster.node_pools) + len(spec.cluster.nodes)
    pods = sum(workload.members for workload in spec.workloads)
    tasks = len(sc.variant_names(spec)) * spec.replications
    checks = (
        ("cluster", "nodes", nodes, "LAB_MAX_NODES"),
        ("workloads", "workloads", len(spec.workloads), "LAB_MAX_WORKLOADS"),
        ("workloads", "pods (members of all workloads)", pods, "LAB_MAX_PODS"),
        ("horizonSeconds", "seconds of horizon", spec.horizon_seconds, "LAB_MAX_HORIZON_SECONDS"),
        ("replications", "simulations (variants x replications)", tasks, "LAB_MAX_TASKS"),
    )
    return [
        {
            "path": path,
            "message": f"{_number(value)} {what} is above the limit of "
            f"{_number(limits[name])} ({name})",
        }
        for path, what, value, name in checks
        if value > limits[name]
    ]


MAX_NAME_LENGTH = 200


def _name_errors(spec: sc.ExperimentSpec) -> SpecErrors:
    """The experiment's name is also its title in lists: keep it to a line."""
    if len(spec.name) > MAX_NAME_LENGTH:
        return [
            {
                "path": "name",
                "message": f"at most {MAX_NAME_LENGTH} characters (this one has {len(spec.name)})",
            }
        ]
    return []


def _number(value: float) -> str:
    return f"{value:,.0f}" if float(value).is_integer() else f"{value:,}"


def spec_document(spec: sc.ExperimentSpec) -> dict[str, Any]:
    """The spec as stored: camelCase JSON, every default written out, so a stored spec
    means the same thing even if a default changes later."""
    return spec.model_dump(mode="json", by_alias=True)


def spec_yaml(document: Mapping[str, Any]) -> str:
    """A stored spec as the YAML users edit: defaults shown, nulls left out. One that no
    longer validates (written by an older version) is shown as it is stored. Its
    variants are written out, not resolved again: a stored spec was validated whole
    when it was saved, and resolving each variant re-validates the whole spec (16 times
    for the openb sweep: seconds for a page that only shows the text)."""
    try:
        return sc.spec_to_yaml(sc.parse_spec(document, check_variants=False))
    except sc.SpecError:
        return _as_stored(document)


def spec_yaml_within(document: Mapping[str, Any], max_chars: int) -> str | None:
    """:func:`spec_yaml`, or None once the text would pass ``max_chars`` (a page that
    shows a spec only up to a size does not write a recorded cluster's megabytes)."""
    try:
        return sc.spec_to_yaml_within(sc.parse_spec(document, check_variants=False), max_chars)
    except sc.SpecError:
        text = _as_stored(document)
        return text if len(text) <= max_chars else None


def _as_stored(document: Mapping[str, Any]) -> str:
    """A stored spec that no longer validates, as YAML of what is stored."""
    return yaml.safe_dump(dict(document), sort_keys=False, allow_unicode=True)


def product_version() -> str:
    """What produced a run's numbers: the installed distribution, the simulator, and the
    git commit of the source when it is known (stored on the run at creation)."""
    try:
        package = metadata.version("disruption-lab")
    except metadata.PackageNotFoundError:
        package = "source"
    commit = source_commit()
    return f"disruption-lab {package} / scheduler_core {sc.__version__}" + (
        f" / git {commit}" if commit else ""
    )


@functools.cache
def source_commit() -> str:
    """``LAB_GIT_COMMIT`` (an image build sets it: images carry no .git), else what
    ``git rev-parse`` says about the source tree, "+dirty" when it has uncommitted
    changes; "" when neither is known. Read once per process."""
    from_env = os.environ.get("LAB_GIT_COMMIT", "").strip()
    if from_env:
        return from_env[:40]
    root = Path(__file__).resolve().parent.parent
    try:
        commit = subprocess.run(
            ["git", "-C", str(root), "rev-parse", "--short=12", "HEAD"],
            capture_output=True,
            text=True,
            timeout=5,
            check=True,
        )
        status = subprocess.run(
            ["git", "-C", str(root), "status", "--porcelain", "--untracked-files=no"],
            capture_output=True,
            text=True,
            timeout=5,
            check=True,
        )
    except (OSError, subprocess.SubprocessError):
        return ""
    return commit.stdout.strip() + ("+dirty" if status.stdout.strip() else "")


def preset_or_none(preset_id: str) -> sc.Preset | None:
    """The scenario preset with this id, or None (ids come from URLs and forms)."""
    return next(
        (preset for preset in sc.list_presets(studies=True) if preset.id == preset_id), None
    )


def policy_choices() -> dict[str, list[str]]:
    """The registered plugin names, for the form's selects."""
    return {
        "preemption": sorted(registry.preemption),
        "placement": sorted(registry.placement),
        "disruptions": sorted(registry.disruptions),
    }
