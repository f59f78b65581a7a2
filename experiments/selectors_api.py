"""Reads the API adds to ``selectors``: every visible run, a run's results (per-variant
summaries with replication statistics, per-workload records, the event log) for the
endpoints and their exports, and comparisons across runs.

Everything here is lazy where a run can be large: records and events are read
replication by replication (or in chunks) so an export of millions of rows never holds
them all in memory. Visibility is the pages' rule (``selectors.run_get``).
"""

from __future__ import annotations

import json
from collections.abc import Iterator, Mapping, Sequence
from dataclasses import dataclass
from typing import Any, overload

from django.contrib.auth.models import AnonymousUser, User
from django.db.models import F, QuerySet

import scheduler_core as sc
from experiments import event_log, selectors
from experiments.event_log import EventLog
from experiments.models import Replication, Run, Status, WorkloadRecord
from scheduler_core.metrics import RECORD_FIELDS
from scheduler_core.stats import IntervalMethod, difference

SUMMARY_STATS = ("mean", "ci95", "min", "max", "n")
REGISTRY_COLUMNS = ("label", "unit", "better")
"""From the core's metric registry, so an export reads without the glossary beside it."""
SUMMARY_COLUMNS = (
    "variant",
    "preemption",
    "placement",
    "metric",
    *SUMMARY_STATS,
    *REGISTRY_COLUMNS,
)
RECORD_COLUMNS = ("variant", "replication", "seed", *RECORD_FIELDS)
RECORD_CHUNK = 5000
EVENT_COLUMNS = (
    "variant",
    "replication",
    "seq",
    "time",
    "reason",
    "workload",
    "pod",
    "node",
    "value",
    "related",
    "message",
)


def run_visible_list(*, user: User | AnonymousUser) -> QuerySet[Run]:
    """Every run of every experiment ``user`` may view, newest first."""
    visible = selectors.experiment_visible_qs(user=user).values("pk")
    return (
        Run.objects.select_related("experiment", "created_by")
        .defer("spec", "aggregate", "experiment__spec")  # megabytes each on a large run
        .filter(experiment__in=visible)
        .order_by("-created_at", "-id")
    )


def run_has_results(*, run: Run) -> bool:
    """Only a succeeded run has final numbers; the others have none or partial ones."""
    return run.status == Status.SUCCEEDED


def metric_names(*, run: Run) -> list[str]:
    """``SUMMARY_NAMES`` order, then anything an older or newer simulator stored."""
    stored = [name for variant in run.aggregate for name in variant.get("metrics", {})]
    return list(dict.fromkeys([*sc.SUMMARY_NAMES, *stored]))


def run_variant_summaries(*, run: Run) -> list[dict[str, Any]]:
    """Per variant, in run order: the aggregate (mean, 95% CI, min, max, n per metric)
    and each replication's own summary, so a client can redo the statistics."""
    by_variant: dict[str, list[dict[str, Any]]] = {}
    for rep in run.replications.order_by("variant_index", "replication").values(
        "variant", "replication", "seed", "summary"
    ):
        by_variant.setdefault(rep["variant"], []).append(
            {"replication": rep["replication"], "seed": rep["seed"], "summary": rep["summary"]}
        )
    return [
        {
            "variant": entry["variant"],
            "preemption": entry.get("preemption", ""),
            "placement": entry.get("placement", ""),
            "metrics": entry.get("metrics", {}),
            "unserved": sc.is_unserved(entry.get("metrics", {})),
            "replications": by_variant.get(entry["variant"], []),
        }
        for entry in run.aggregate
    ]


def run_summary_rows(*, run: Run) -> Iterator[dict[str, Any]]:
    """The summary as a tidy table: one row per (variant, metric)."""
    names = metric_names(run=run)
    for entry in run.aggregate:
        for name in names:
            stats = entry.get("metrics", {}).get(name, {})
            info = sc.metric_info(name)
            yield {
                "variant": entry["variant"],
                "preemption": entry.get("preemption", ""),
                "placement": entry.get("placement", ""),
                "metric": name,
                **{stat: stats.get(stat) for stat in SUMMARY_STATS},
                "label": info.label,
                "unit": info.unit,
                "better": info.better.value,
            }


def run_workload_records(
    *, run: Run, variant: str = "", replication: int | None = None
) -> QuerySet[WorkloadRecord]:
    """The run's per-workload records in (variant, replication, simulator) order, each
    with its ``variant``, ``replication_number`` and ``seed``; optionally of one variant
    and/or replication number (the API filters these with django-filter)."""
    records = WorkloadRecord.objects.filter(replication__run=run)
    if variant:
        records = records.filter(replication__variant=variant)
    if replication is not None:
        records = records.filter(replication__replication=replication)
    return records.annotate(
        variant=F("replication__variant"),
        replication_number=F("replication__replication"),
        seed=F("replication__seed"),
    ).order_by("replication__variant_index", "replication__replication", "position")


def run_workload_rows(
    *, run: Run, variant: str = "", replication: int | None = None
) -> Iterator[dict[str, Any]]:
    """The records as flat rows of ``RECORD_COLUMNS`` for exports, read in chunks."""
    records = run_workload_records(run=run, variant=variant, replication=replication)
    values = records.values_list("variant", "replication_number", "seed", *RECORD_FIELDS)
    for row in values.iterator(chunk_size=RECORD_CHUNK):
        yield dict(zip(RECORD_COLUMNS, row, strict=True))


def run_event_count(*, run: Run, variant: str = "", replication: int | None = None) -> int:
    """Stored event rows of the run (of one variant and/or replication number), from the
    replications' own counts: no event row is read."""
    replications = run.replications.all()
    if variant:
        replications = replications.filter(variant=variant)
    if replication is not None:
        replications = replications.filter(replication=replication)
    return sum(replications.values_list("event_count", flat=True))


LOG_FILTERS = ("workload", "pod", "node", "reason", "time_min", "time_max")
"""The event filters applied inside each replication's log (variant and replication
choose the replications)."""


@dataclass(frozen=True, slots=True)
class _LogBlock:
    """Where one replication's chosen events sit within the run's concatenated log."""

    pk: int
    variant: str
    replication: int
    start: int
    length: int


class RunEvents(Sequence[dict[str, Any]]):
    """The filtered event logs of a run's replications as one lazy sequence of rows
    (each event's fields, ``variant`` and ``replication_number``).

    Its length reads no log without a filter (the replications' ``event_count``) and
    only the filtered columns with one; a slice decodes the logs it spans, so paging
    through millions of events stays cheap."""

    def __init__(self, replications: QuerySet[Replication], filters: Mapping[str, Any]) -> None:
        self._filters = {k: filters[k] for k in LOG_FILTERS if filters.get(k) not in (None, "")}
        self._blocks: list[_LogBlock] = []
        start = 0
        rows = replications.values_list("pk", "variant", "replication", "event_count")
        for pk, variant, number, count in rows:
            length = len(self._filtered(pk)) if self._filters else count
            self._blocks.append(_LogBlock(pk, variant, number, start, length))
            start += length
        self._total = start

    def _filtered(self, pk: int, columns: Sequence[str] | None = None) -> EventLog:
        wanted = columns or list(dict.fromkeys(_column(name) for name in self._filters))
        log = selectors.replication_event_log(replication_id=pk, columns=wanted)
        exact = {k: v for k, v in self._filters.items() if k in event_log.TEXT_FILTERS}
        return log.filter(
            exact, time_min=self._filters.get("time_min"), time_max=self._filters.get("time_max")
        )

    def __len__(self) -> int:
        return self._total

    @overload
    def __getitem__(self, index: int) -> dict[str, Any]: ...

    @overload
    def __getitem__(self, index: slice) -> list[dict[str, Any]]: ...

    def __getitem__(self, index: int | slice) -> dict[str, Any] | list[dict[str, Any]]:
        if isinstance(index, int):
            window = self[index : index + 1] if index >= 0 else self[index:][:1]
            if not window:
                raise IndexError(index)
            return window[0]
        start, stop, _ = index.indices(self._total)
        blocks = [b for b in self._blocks if b.start < stop and b.start + b.length > start]
        return [
            row
            for block in blocks
            for row in self._rows(block, start - block.start, stop - block.start)
        ]

    def __iter__(self) -> Iterator[dict[str, Any]]:
        for block in self._blocks:
            yield from self._rows(block, 0, block.length)

    def _rows(self, block: _LogBlock, start: int, stop: int) -> Iterator[dict[str, Any]]:
        if block.length == 0:
            return
        events = self._filtered(block.pk, event_log.COLUMNS)
        for event in events[max(0, start) : stop]:
            yield {
                "variant": block.variant,
                "replication_number": block.replication,
                **event.as_dict(),
            }


def _column(name: str) -> str:
    """The log column a filter reads."""
    return "time" if name.startswith("time_") else name


def run_events(*, run: Run, filters: Mapping[str, Any] | None = None) -> RunEvents:
    """The run's event log in (variant, replication, simulator) order, each row with its
    variant name and replication number. ``filters``: ``variant``, ``replication``,
    ``workload``, ``pod``, ``node``, ``reason`` (exact), ``time_min``/``time_max``
    (inclusive seconds)."""
    filters = filters or {}
    replications = run.replications.filter(status=Status.SUCCEEDED).order_by(
        "variant_index", "replication"
    )
    if filters.get("variant") not in (None, ""):
        replications = replications.filter(variant=filters["variant"])
    if filters.get("replication") is not None:
        replications = replications.filter(replication=filters["replication"])
    return RunEvents(replications, filters)


def run_event_rows(
    *, run: Run, filters: Mapping[str, Any] | None = None
) -> Iterator[dict[str, Any]]:
    """The filtered event log as flat rows for exports, one replication's log at a time."""
    for row in run_events(run=run, filters=filters):
        yield {
            column: row["replication_number" if column == "replication" else column]
            for column in EVENT_COLUMNS
        }


@dataclass(frozen=True, slots=True)
class ComparedVariant:
    """One (run, variant) of a comparison with its aggregate metrics and each
    replication's summary by seed (what pairs it with another variant)."""

    run: Run
    variant: str
    preemption: str
    placement: str
    metrics: dict[str, dict[str, Any]]
    by_seed: dict[Any, dict[str, Any]]

    @property
    def unserved(self) -> bool:
        return sc.is_unserved(self.metrics)

    def samples(self, metric: str) -> dict[Any, float | None]:
        return {seed: summary.get(metric) for seed, summary in self.by_seed.items()}


class ComparisonError(ValueError):
    """A pair that cannot be compared; ``index`` says which, ``field`` which part."""

    def __init__(self, index: int, field: str, message: str) -> None:
        self.index, self.field, self.message = index, field, message
        super().__init__(message)


def comparison_variants(
    *, user: User | AnonymousUser, pairs: Sequence[tuple[int, str]]
) -> list[ComparedVariant]:
    """Each (run id, variant name) resolved to its aggregate; runs ``user`` may not see
    read exactly like runs that do not exist."""
    return [
        _compared(user, index, run_id, variant) for index, (run_id, variant) in enumerate(pairs)
    ]


def _compared(user: User | AnonymousUser, index: int, run_id: int, variant: str) -> ComparedVariant:
    run = selectors.run_get(user=user, pk=run_id)
    if run is None:
        raise ComparisonError(index, "run", f"no run {run_id}")
    if not run_has_results(run=run):
        raise ComparisonError(index, "run", f"run {run_id} has no results (it is {run.status})")
    entry = next((e for e in run.aggregate if e["variant"] == variant), None)
    if entry is None:
        known = ", ".join(e["variant"] for e in run.aggregate)
        raise ComparisonError(
            index, "variant", f"run {run_id} has no variant '{variant}' (it has: {known})"
        )
    reps = (
        run.replications.filter(variant=variant, status=Status.SUCCEEDED)
        .order_by("replication")
        .values_list("replication", "seed", "summary")
    )
    # A replication without a stored seed pairs with nothing (keyed by run and number).
    by_seed = {
        (seed if seed is not None else (run.pk, number)): summary for number, seed, summary in reps
    }
    return ComparedVariant(
        run=run,
        variant=variant,
        preemption=entry.get("preemption", ""),
        placement=entry.get("placement", ""),
        metrics=entry["metrics"],
        by_seed=by_seed,
    )


def comparison_table(*, compared: Sequence[ComparedVariant]) -> list[dict[str, Any]]:
    """Per metric: every pair's statistics and its difference from the first pair (the
    baseline) with its 95% half-width: paired over the per-seed differences when both
    ran the same seeds (common random numbers), Welch's otherwise; ``interval`` says
    which. ``best`` marks the registry's best (never an unserved variant)."""
    names = list(dict.fromkeys(name for c in compared for name in [*sc.SUMMARY_NAMES, *c.metrics]))
    baseline = compared[0]
    unserved = [c.unserved for c in compared]
    rows = []
    for name in names:
        best = set(
            sc.best_indexes(
                [c.metrics.get(name, {}).get("mean") for c in compared], name, unserved=unserved
            )
        )
        rows.append(
            {
                "metric": name,
                "values": [
                    _compared_value(c, baseline, name) | {"best": i in best}
                    for i, c in enumerate(compared)
                ],
            }
        )
    return rows


def _compared_value(
    compared: ComparedVariant,
    base: ComparedVariant,
    name: str,
) -> dict[str, Any]:
    stats, base_stats = compared.metrics.get(name, {}), base.metrics.get(name, {})
    mean, base_mean = stats.get("mean"), base_stats.get("mean")
    delta = mean - base_mean if mean is not None and base_mean is not None else None
    both = delta is not None
    found = difference(base.samples(name), compared.samples(name))
    relative = delta / abs(base_mean) if delta is not None and base_mean else None
    return {
        **{stat: stats.get(stat) for stat in SUMMARY_STATS},
        "difference": delta,
        "difference_ci95": found.half_width if both else None,
        "interval": found.method.value if both else IntervalMethod.NONE.value,
        "pairs": found.n if both and found.method is IntervalMethod.PAIRED else 0,
        "relative_difference": relative,
    }


DECISION_COLUMNS = (
    "variant",
    "replication",
    "id",
    "time",
    "kind",
    "workload",
    "pod",
    "node",
    "rule",
    "cause",
    "message",
    "victims",
    "candidates",
    "reprieved",
    "units",
    "targets",
)


def variant_diagnoses(*, run: Run) -> list[dict[str, Any]]:
    """Per variant with one, in run order: its distinct diagnosis sentences and how many
    replications gave each (the run page shows them above the charts)."""
    rows = (
        run.replications.exclude(diagnosis="")
        .order_by("variant_index", "replication")
        .values_list("variant", "diagnosis")
    )
    out: dict[str, dict[str, int]] = {}
    for variant, text in rows:
        counts = out.setdefault(variant, {})
        counts[text] = counts.get(text, 0) + 1
    return [
        {"variant": v, "diagnoses": [{"text": t, "replications": n} for t, n in c.items()]}
        for v, c in out.items()
    ]


def run_decisions(*, run: Run, filters: Mapping[str, Any] | None = None) -> list[dict[str, Any]]:
    """The decision records of every replication in run order, each with its variant and
    replication. ``filters``: ``variant``, ``replication``, ``id``; ``pod`` and
    ``workload`` (any pod or workload it concerns: preemptor, victims, reprieved, units,
    targets), ``node`` (chosen or candidate), ``reason`` (its kind or its cause)."""
    filters = filters or {}
    replications = run.replications.order_by("variant_index", "replication")
    if filters.get("variant"):
        replications = replications.filter(variant=filters["variant"])
    if filters.get("replication") is not None:
        replications = replications.filter(replication=filters["replication"])
    out = []
    for variant, number, records in replications.values_list("variant", "replication", "decisions"):
        for record in records or []:
            if _decision_matches(record, filters):
                out.append({"variant": variant, "replication": number, **record})
    return out


def _decision_matches(record: Mapping[str, Any], filters: Mapping[str, Any]) -> bool:
    if filters.get("id") is not None and record.get("id") != filters["id"]:
        return False
    pod = filters.get("pod")
    if pod and pod not in _decision_pods(record):
        return False
    workload = filters.get("workload")
    if workload and workload not in _decision_workloads(record):
        return False
    node = filters.get("node")
    if (
        node
        and node != record.get("node")
        and node not in {c.get("node") for c in record.get("candidates", [])}
    ):
        return False
    reason = filters.get("reason")
    return not reason or reason in (record.get("kind"), record.get("cause"))


def _decision_pods(record: Mapping[str, Any]) -> set[str]:
    names = {
        record.get("pod", ""),
        *record.get("victims", []),
        *(r.get("pod", "") for r in record.get("reprieved", [])),
    }
    for unit in record.get("units", []):
        names.update(unit.get("pods", []))
    return names


def _decision_workloads(record: Mapping[str, Any]) -> set[str]:
    return {
        record.get("workload", ""),
        *(t.get("workload") for t in record.get("targets", [])),
        *(u.get("workload") for u in record.get("units", [])),
    }


def run_decision_rows(
    *, run: Run, filters: Mapping[str, Any] | None = None
) -> Iterator[dict[str, Any]]:
    """Decisions as flat rows for exports: lists of names joined by spaces, the nested
    parts (candidates, reprieved, units, targets) as JSON text."""
    for record in run_decisions(run=run, filters=filters):
        row = {c: record.get(c) for c in DECISION_COLUMNS}
        row["victims"] = " ".join(record.get("victims", []))
        for nested in ("candidates", "reprieved", "units", "targets"):
            row[nested] = json.dumps(record.get(nested, []), separators=(",", ":"))
        yield row
