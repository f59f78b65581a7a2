"""Reads for the chart pages: stored results in the shapes ``experiments.charts`` takes.

Visibility is the pages' rule (``selectors.run_get`` / ``experiment_visible_qs``); this
module only reads rows of runs the caller has already been allowed to see, except
``compare_variants``, which applies the rule itself to every reference it is given.
"""

from __future__ import annotations

import hashlib
import threading
from collections import defaultdict
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass
from typing import Any

from django.contrib.auth.models import AnonymousUser, User
from django.core.cache import cache
from django.db.models import Case, F, IntegerField, Q, QuerySet, Value, When

import scheduler_core as sc
from experiments import selectors
from experiments.charts import tables
from experiments.charts.data import ROW_FIELDS, Row, VariantResults
from experiments.models import (
    RESULT_BLOBS,
    Replication,
    Run,
    Status,
    WorkloadRecord,
    spec_digest_of,
)
from scheduler_core.spec_diff import parameter_diff, variant_parameters
from scheduler_core.timeline import (
    TIMELINE_REASONS,
    Cost,
    Recovery,
    costs_are_current,
    costs_from_json,
    is_current,
    recoveries_from_json,
)

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
    return [
        VariantResults(
            label=label_prefix + entry["variant"],
            name=entry["variant"],
            preemption=entry.get("preemption", ""),
            placement=entry.get("placement", ""),
            aggregate=entry.get("metrics", {}),
            samples=dict(samples[index]),
            seeds=tuple(seeds[index]),
        )
        for index, entry in enumerate(run.aggregate)
    ]


def _succeeded(run: Run) -> QuerySet[Replication]:
    return run.replications.filter(status=Status.SUCCEEDED).order_by("variant_index", "replication")


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


def replication_rows(
    *,
    replication_ids: Iterable[int],
    reasons: Sequence[str],
) -> dict[int, list[Row]]:
    """Event rows with the given reasons per replication, in the simulator's order. One
    query, tuples only: a large run reads 100,000 rows here."""
    return {
        pk: [row for _, row in rows]
        for pk, rows in _rows(replication_ids=replication_ids, reasons=reasons).items()
    }


def stored_timeline(*, replication_id: int) -> Mapping[str, Any] | None:
    """The timeline the worker stored with a replication, or None: a row stored before
    timelines were, or by a version that read the log differently."""
    data = Replication.objects.filter(pk=replication_id).values_list("timeline", flat=True).first()
    return data if is_current(data) else None


def stored_costs(
    *,
    replication_ids: Iterable[int],
) -> dict[int, tuple[list[Cost], list[Recovery]] | None]:
    """Cost increments and recoveries per replication, from the column that holds them
    apart from the timeline's spans (None where a replication has no current timeline)."""
    rows = Replication.objects.filter(pk__in=list(replication_ids)).values_list(
        "pk", "timeline_costs"
    )
    return {
        pk: (costs_from_json(data["costs"]), recoveries_from_json(data["recoveries"]))
        if costs_are_current(data)
        else None
        for pk, data in rows
    }


def timeline_source(*, replication_id: int) -> tuple[dict[str, Any], str, list[Row]]:
    """What deriving a replication's timeline takes: its run's frozen spec, its variant
    and the event rows the core reads (``scheduler_core.timeline.TIMELINE_REASONS``)."""
    spec, variant = (
        Replication.objects.filter(pk=replication_id).values_list("run__spec", "variant").get()
    )
    rows = replication_rows(replication_ids=[replication_id], reasons=TIMELINE_REASONS)
    return spec, variant, rows.get(replication_id, [])


def _rows(
    *,
    replication_ids: Iterable[int],
    reasons: Sequence[str],
) -> dict[int, list[tuple[int, Row]]]:
    """(seq, row) per replication, in log order."""
    wanted = [str(r) for r in reasons]
    out: dict[int, list[tuple[int, Row]]] = {}
    for pk in dict.fromkeys(replication_ids):
        log = selectors.replication_event_log(replication_id=pk, columns=ROW_FIELDS)
        rows = log.filter(reasons=wanted).columns(ROW_FIELDS)
        found = [(seq, Row(*fields)) for seq, *fields in rows]
        if found:
            out[pk] = found
    return out


def replication_workload_records(
    *, replication_id: int, query: str = "", sort: str = tables.DEFAULT_SORT
) -> tuple[QuerySet[WorkloadRecord], str]:
    """A replication's records whose text fields contain every word of ``query`` (any
    case; ``urgent`` also matches the preemptor), sorted by ``sort`` (``-`` for
    descending; blanks last either way; equal values in the simulator's order), with
    the sort applied (an unknown column falls back to the default)."""
    records = WorkloadRecord.objects.filter(replication_id=replication_id)
    for word in query.lower().split():
        matches = Q()
        for field in tables.TEXT_FIELDS:
            matches |= Q(**{f"{field}__icontains": word})
        if word in "urgent":
            matches |= Q(urgent=True)
        records = records.filter(matches)
    if sort.lstrip("-") not in tables.SORTABLE:
        sort = tables.DEFAULT_SORT
    field = sort.lstrip("-")
    blank = Q(**{f"{field}__isnull": True})
    if field in tables.TEXT_FIELDS:
        blank |= Q(**{field: ""})
    value = F(field).desc() if sort.startswith("-") else F(field).asc()
    last = Case(When(blank, then=Value(1)), default=Value(0), output_field=IntegerField())
    return records.order_by(last, value, "position"), sort


def replication_workload_count(*, replication_id: int) -> int:
    return WorkloadRecord.objects.filter(replication_id=replication_id).count()


def replication_of_run(*, run: Run, pk: int) -> Replication | None:
    """A succeeded replication of ``run`` (the caller has checked the run)."""
    return _succeeded(run).filter(pk=pk).defer("distributions", *RESULT_BLOBS).first()


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


def compare_variants(
    *,
    user: User | AnonymousUser,
    refs: Sequence[VariantRef],
) -> tuple[list[ChosenVariant], int]:
    """The referenced variants of finished runs ``user`` may see, in the order given,
    and how many references were left out. A run the user may not see is left out
    exactly like one that does not exist, so a shared URL leaks nothing."""
    runs = _visible_finished_runs(user, {ref.run_id for ref in refs})
    results = {pk: run_variant_results(run=run, label_prefix=f"#{pk} ") for pk, run in runs.items()}
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
        pk__in=ids, experiment__in=visible, status=Status.SUCCEEDED
    )
    return {run.pk: run for run in runs}


def _variant_index(run: Run, name: str) -> int | None:
    return next((i for i, entry in enumerate(run.aggregate) if entry["variant"] == name), None)


def compare_candidates(*, user: User | AnonymousUser, limit: int = 40) -> list[Run]:
    """Recent finished runs the user may see, to pick variants from."""
    visible = selectors.experiment_visible_qs(user=user).values("pk")
    return list(
        Run.objects.select_related("experiment")
        .filter(experiment__in=visible, status=Status.SUCCEEDED)
        .defer("spec")
        .order_by("-created_at", "-id")[:limit]
    )


def compare_parameters(*, chosen: Sequence[ChosenVariant]) -> tuple[list[dict[str, Any]], int]:
    """The parameters that differ between the chosen variants' resolved specs (MLflow's
    run diff), one row per dotted path, and how many more differ than are listed. A
    stored spec this version no longer reads shows as such rather than failing the page."""
    if len(chosen) < 2:
        return [], 0
    flat = [_variant_parameters(c.run, c.ref.variant) for c in chosen]
    rows, more = parameter_diff(flat)
    return [
        {
            "path": row.path,
            "cells": [
                {"text": text, "changed": i > 0 and value != row.values[0]}
                for i, (text, value) in enumerate(zip(row.texts(), row.values, strict=True))
            ],
        }
        for row in rows
    ], more


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


def variant_scope(*, run: Run, variant: str | None) -> dict[str, Any]:
    """What a variant's time charts are drawn over, from the variant's resolved spec: an
    override may change any of it (``horizonSeconds``, a pool's ``count``, a workload's
    ``mig``), so the run's base spec would cut a longer variant's axes at the base
    horizon and leave a larger variant's extra nodes undrawn. ``horizon`` (seconds),
    ``cluster`` (the cluster document: pools and named nodes) and ``mig`` (each MIG
    workload's label, ``spans.mig_labels``). Cached per run state and variant; a frozen
    spec an older version stored, which no longer parses, gives the base spec's."""
    from experiments.charts.spans import mig_labels  # charts build on this module

    finished = run.finished_at.timestamp() if run.finished_at else 0.0
    digest = hashlib.sha256((variant or "").encode()).hexdigest()
    key = f"variant-scope:{run.pk}:{finished:.6f}:{digest}"
    found: dict[str, Any] | None = cache.get(key)
    if found is not None:
        return found
    try:
        spec = _run_spec(run)
        if variant is not None:
            spec = sc.resolve_variant(spec, variant).spec
        found = {
            "horizon": spec.horizon_seconds,
            "cluster": spec.cluster.model_dump(mode="json", by_alias=True, exclude_none=True),
            "mig": mig_labels(
                {
                    "workloads": [
                        {"name": w.name, "mig": dict(w.mig)}
                        for w in spec.workloads
                        if w.mig and w.gpu_milli is None
                    ]
                }
            ),
        }
    except sc.SpecError:
        found = {
            "horizon": float(run.spec.get("horizonSeconds", 0.0)),
            "cluster": run.spec.get("cluster") or {},
            "mig": mig_labels(run.spec, variant),
        }
    cache.set(key, found, 24 * 3600)
    return found


_parsed_lock = threading.Lock()
_parsed: dict[str, sc.ExperimentSpec] = {}


def _run_spec(run: Run) -> sc.ExperimentSpec:
    """A run's frozen spec parsed, the last one kept per process by its digest: the
    variants of a run ask one after another (a recorded cluster's spec takes 0.5 s to
    parse, a variant 0.03 s to resolve from it)."""
    digest = run.spec_digest or spec_digest_of(run.spec)
    with _parsed_lock:
        spec = _parsed.get(digest)
    if spec is None:
        spec = sc.parse_spec(run.spec, check_variants=False)
        with _parsed_lock:
            _parsed.clear()
            _parsed[digest] = spec
    return spec
