"""Reads for the chart pages: stored results in the shapes ``experiments.charts`` takes.

Visibility is the pages' rule (``selectors.run_get`` / ``experiment_visible_qs``); this
module only reads rows of runs the caller has already been allowed to see, except
``compare_variants``, which applies the rule itself to every reference it is given.
"""

from __future__ import annotations

import hashlib
from collections import defaultdict
from collections.abc import Iterable, Sequence
from dataclasses import dataclass
from typing import Any

from django.contrib.auth.models import AnonymousUser, User
from django.core.cache import cache
from django.db.models import QuerySet

import scheduler_core as sc
from experiments import selectors
from experiments.charts.data import ROW_FIELDS, Row, VariantResults
from experiments.models import Replication, Run, RunEvent, Status
from scheduler_core.spec_diff import parameter_diff, variant_parameters

TIMELINE_REASONS = ("Scheduled", "Ready", "Killing", "Released", "Completed",
                    "CheckpointWritten", "Stranded", "Preempted", "Nominated", "VictimsSelected")
COST_REASONS = ("Disrupted", "Stranded", "Killing", "Resumed", "Recovered")
"""With the binding and readiness of killed pods (``cost_rows``): what lost work, wasted
GPU-seconds and recovery curves are computed from."""
POD_BATCH = 500
"""Pod names per IN (...) list: SQLite caps the parameters of one statement."""
COST_EVENT_BUDGET = 400_000
"""Above this many events in a run, cost curves read replication 0 of each variant only."""


def run_variant_results(*, run: Run, label_prefix: str = "") -> list[VariantResults]:
    """Each variant of a finished run: its aggregate and every replication's summary."""
    samples: dict[int, dict[str, list[float | None]]] = defaultdict(lambda: defaultdict(list))
    seeds: dict[int, list[int | None]] = defaultdict(list)
    for index, seed, summary in _succeeded(run).values_list("variant_index", "seed", "summary"):
        seeds[index].append(seed)
        for metric in sc.SUMMARY_NAMES:  # aligned with seeds even if a value is missing
            samples[index][metric].append(summary.get(metric))
    return [VariantResults(label=label_prefix + entry["variant"], name=entry["variant"],
                           preemption=entry.get("preemption", ""),
                           placement=entry.get("placement", ""),
                           aggregate=entry.get("metrics", {}), samples=dict(samples[index]),
                           seeds=tuple(seeds[index]))
            for index, entry in enumerate(run.aggregate)]


def _succeeded(run: Run) -> QuerySet[Replication]:
    return run.replications.filter(status=Status.SUCCEEDED).order_by("variant_index",
                                                                     "replication")


def run_replication_ids(*, run: Run, first_only: bool = False) -> dict[int, list[int]]:
    """Succeeded replication ids per variant index, in replication order."""
    found: dict[int, list[int]] = defaultdict(list)
    replications = _succeeded(run)
    if first_only:
        replications = replications.filter(replication=0)
    for index, pk in replications.values_list("variant_index", "pk"):
        found[index].append(pk)
    return dict(found)


def run_event_total(*, run: Run) -> int:
    return sum(_succeeded(run).values_list("event_count", flat=True))


def replication_rows(*, replication_ids: Iterable[int], reasons: Sequence[str],
                     ) -> dict[int, list[Row]]:
    """Event rows with the given reasons per replication, in the simulator's order. One
    query, tuples only: a large run reads 100,000 rows here."""
    return {pk: [row for _, row in rows]
            for pk, rows in _rows(replication_ids=replication_ids, reasons=reasons).items()}


def cost_rows(*, replication_ids: Iterable[int]) -> dict[int, list[Row]]:
    """The rows ``charts.work`` reads, per replication, in log order: costs, recoveries,
    and Scheduled/Ready of the pods that were killed (whose startup an eviction wastes).
    The same totals as reading every row, for a fraction of them."""
    found = _rows(replication_ids=replication_ids, reasons=COST_REASONS)
    for replication_id, rows in found.items():
        killed = sorted({row.pod for _, row in rows if row.reason == "Killing"})
        for i in range(0, len(killed), POD_BATCH):
            rows.extend(_rows(replication_ids=[replication_id], reasons=("Scheduled", "Ready"),
                              pods=killed[i:i + POD_BATCH]).get(replication_id, []))
        rows.sort(key=lambda pair: pair[0])
    return {pk: [row for _, row in rows] for pk, rows in found.items()}


def _rows(*, replication_ids: Iterable[int], reasons: Sequence[str],
          pods: Sequence[str] | None = None) -> dict[int, list[tuple[int, Row]]]:
    """(seq, row) per replication, in log order."""
    out: dict[int, list[tuple[int, Row]]] = defaultdict(list)
    events = RunEvent.objects.filter(replication_id__in=list(replication_ids),
                                     reason__in=reasons)
    if pods is not None:
        events = events.filter(pod__in=pods)
    rows = events.order_by("replication_id", "seq").values_list("replication_id", "seq",
                                                                *ROW_FIELDS)
    for replication_id, seq, *fields in rows.iterator(chunk_size=20_000):
        out[replication_id].append((seq, Row(*fields)))
    return out


def replication_workloads(*, replication_id: int) -> list[dict[str, Any]]:
    return Replication.objects.filter(pk=replication_id).values_list("workloads",
                                                                     flat=True).first() or []


def replication_of_run(*, run: Run, pk: int) -> Replication | None:
    """A succeeded replication of ``run`` (the caller has checked the run)."""
    return _succeeded(run).filter(pk=pk).defer("workloads", "distributions").first()


# ----------------------------------------------------------------------- compare
@dataclass(frozen=True, slots=True)
class VariantRef:
    """A variant of a run, as the compare URL names it: ``<run id>:<variant name>``."""

    run_id: int
    variant: str

    @property
    def key(self) -> str:
        return f"{self.run_id}:{self.variant}"

    @classmethod
    def parse(cls, text: str) -> VariantRef | None:
        run_id, sep, variant = text.partition(":")
        if not sep or not run_id.isdigit() or not variant:
            return None
        return cls(int(run_id), variant)


@dataclass(frozen=True, slots=True)
class ChosenVariant:
    ref: VariantRef
    run: Run
    index: int
    results: VariantResults


def compare_variants(*, user: User | AnonymousUser, refs: Sequence[VariantRef],
                     ) -> tuple[list[ChosenVariant], int]:
    """The referenced variants of finished runs ``user`` may see, in the order given,
    and how many references were left out. A run the user may not see is left out
    exactly like one that does not exist, so a shared URL leaks nothing."""
    runs = _visible_finished_runs(user, {ref.run_id for ref in refs})
    results = {pk: run_variant_results(run=run, label_prefix=f"#{pk} ")
               for pk, run in runs.items()}
    unique = list(dict.fromkeys(refs))
    chosen = []
    for ref in unique:
        run = runs.get(ref.run_id)
        index = _variant_index(run, ref.variant) if run else None
        if run is not None and index is not None:
            chosen.append(ChosenVariant(ref, run, index, results[run.pk][index]))
    return chosen, len(unique) - len(chosen)


def _visible_finished_runs(user: User | AnonymousUser, ids: set[int]) -> dict[int, Run]:
    visible = selectors.experiment_visible_qs(user=user).values("pk")
    runs = Run.objects.select_related("experiment").filter(
        pk__in=ids, experiment__in=visible, status=Status.SUCCEEDED)
    return {run.pk: run for run in runs}


def _variant_index(run: Run, name: str) -> int | None:
    return next((i for i, entry in enumerate(run.aggregate) if entry["variant"] == name), None)


def compare_candidates(*, user: User | AnonymousUser, limit: int = 40) -> list[Run]:
    """Recent finished runs the user may see, to pick variants from."""
    visible = selectors.experiment_visible_qs(user=user).values("pk")
    return list(Run.objects.select_related("experiment")
                .filter(experiment__in=visible, status=Status.SUCCEEDED)
                .defer("spec").order_by("-created_at", "-id")[:limit])


def compare_parameters(*, chosen: Sequence[ChosenVariant]) -> tuple[list[dict[str, Any]], int]:
    """The parameters that differ between the chosen variants' resolved specs (MLflow's
    run diff), one row per dotted path, and how many more differ than are listed. A
    stored spec this version no longer reads shows as such rather than failing the page."""
    if len(chosen) < 2:
        return [], 0
    flat = [_variant_parameters(c.run, c.ref.variant) for c in chosen]
    rows, more = parameter_diff(flat)
    return [{"path": row.path,
             "cells": [{"text": text, "changed": i > 0 and value != row.values[0]}
                       for i, (text, value) in enumerate(zip(row.texts(), row.values,
                                                             strict=True))]}
            for row in rows], more


def _variant_parameters(run: Run, variant: str) -> dict[str, Any]:
    finished = run.finished_at.timestamp() if run.finished_at else 0.0
    digest = hashlib.sha256(variant.encode()).hexdigest()
    key = f"variant-parameters:{run.pk}:{finished:.6f}:{digest}"
    found = cache.get(key)
    if found is None:
        try:
            found = variant_parameters(sc.parse_spec(run.spec, check_variants=False), variant)
        except sc.SpecError:
            found = {"(spec)": "stored by an older version; not comparable"}
        cache.set(key, found, 24 * 3600)
    return found
