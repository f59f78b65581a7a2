"""Reads: an experiment's or a run's spec written as Kubernetes manifests or a KWOK
snapshot (scheduler_core.k8s.export does the writing; this picks the spec and names
the download). Used by the API and the pages alike."""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any

from django.utils.text import slugify

import scheduler_core as sc
from experiments.models import Experiment, Run
from scheduler_core.k8s.export import ExportOptions, export_kwok_snapshot, export_manifests

FORMATS = ("k8s", "kwok")
"""``k8s``: manifests to ``kubectl apply``; ``kwok``: a snapshot ``kwokctl`` restores."""


@dataclass(frozen=True, slots=True)
class ManifestDownload:
    text: str
    filename: str
    """Without the ``.yaml`` extension."""


def experiment_manifests(
    *,
    experiment: Experiment,
    variant: str | None = None,
    fmt: str = "k8s",
    policy_only: bool = False,
) -> ManifestDownload:
    """The experiment's current spec (or one variant of it) as YAML. Raises
    ``sc.SpecError`` naming ``variant`` or ``format`` when either is unknown, and the
    spec's own errors when a stored spec no longer validates."""
    return _manifests(experiment.spec, f"experiment-{experiment.pk}", variant, fmt, policy_only)


def run_manifests(
    *, run: Run, variant: str | None = None, fmt: str = "k8s", policy_only: bool = False
) -> ManifestDownload:
    """What a run ran: its frozen spec, not the experiment as edited since."""
    return _manifests(run.spec, f"run-{run.pk}", variant, fmt, policy_only)


def manifest_variants(*, spec_document: Mapping[str, Any]) -> list[str]:
    """The variant names a download can be asked for; none for a spec that no longer
    validates (its page offers no download then)."""
    try:
        return sc.variant_names(sc.parse_spec(spec_document, check_variants=False))
    except sc.SpecError:
        return []


def _manifests(
    document: Mapping[str, Any], stem: str, variant: str | None, fmt: str, policy_only: bool
) -> ManifestDownload:
    if fmt not in FORMATS:
        raise sc.SpecError(
            [{"path": "format", "message": f"unknown format '{fmt}' (known: {', '.join(FORMATS)})"}]
        )
    spec = sc.parse_spec(document, check_variants=False)
    if fmt == "kwok":
        text = export_kwok_snapshot(spec, variant=variant)
    else:
        text = export_manifests(spec, variant=variant, options=ExportOptions(nodes=not policy_only))
    suffix = f"-{slugify(variant) or 'variant'}" if variant else ""
    kind = "kwok" if fmt == "kwok" else "manifests"
    return ManifestDownload(text, f"{stem}{suffix}-{kind}")
