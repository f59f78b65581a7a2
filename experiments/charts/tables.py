"""The per-workload table: filter, sort and page the stored records on the server, so
a run with thousands of workloads sends the browser one page at a time."""

from __future__ import annotations

import math
from collections.abc import Mapping, Sequence
from typing import Any

import scheduler_core as sc

_RECORD_COLUMNS = (
    ("workload", "Workload", "text"),
    ("kind", "Kind", "text"),
    ("priority_class", "Class", "text"),
    ("recovery", "Recovery", "text"),
    ("members", "Members", "number"),
    ("gpus_per_member", "GPUs each", "number"),
    ("lost_work", "", "number"),
    ("stranded_capacity", "", "number"),
    ("wasted_gpu_seconds", "", "number"),
    ("disruptions", "Disruptions", "number"),
    ("pods_terminated", "", "number"),
    ("restarts", "", "number"),
    ("preempted_while_loading", "", "number"),
    ("time_to_group_useful", "", "number"),
    ("time_to_recover", "", "number"),
    ("queue_wait", "", "number"),
    ("completion_time", "", "number"),
)
"""(record field, head, kind); a blank head is a metric's, taken from the registry."""
COLUMNS: tuple[tuple[str, str, str], ...] = tuple(
    (name, label or sc.REGISTRY[name].title, kind) for name, label, kind in _RECORD_COLUMNS
)
SORTABLE = frozenset(name for name, _, _ in COLUMNS)
TEXT_FIELDS = ("workload", "kind", "priority_class", "recovery")
PER_PAGE = 50
DEFAULT_SORT = "-lost_work"


def workload_page(
    records: Sequence[Mapping[str, Any]],
    *,
    query: str = "",
    sort: str = DEFAULT_SORT,
    page: int = 1,
    per_page: int = PER_PAGE,
) -> dict[str, Any]:
    """Records whose text fields contain every word of ``query`` (case-insensitive;
    ``urgent`` matches the preemptor), sorted by ``sort`` (``-`` for descending, blanks
    always last), one page of them."""
    chosen = [r for r in records if _matches(r, query.lower().split())]
    if sort.lstrip("-") not in SORTABLE:
        sort = DEFAULT_SORT
    field, descending = sort.lstrip("-"), sort.startswith("-")
    chosen = _sorted(chosen, field, descending)
    pages = max(1, math.ceil(len(chosen) / per_page))
    page = min(max(1, page), pages)
    rows = chosen[(page - 1) * per_page : page * per_page]
    return {
        "columns": [{"name": n, "label": label, "kind": kind} for n, label, kind in COLUMNS],
        "rows": [
            {n: r.get(n) for n, _, _ in COLUMNS} | {"urgent": bool(r.get("urgent"))} for r in rows
        ],
        "total": len(chosen),
        "all": len(records),
        "page": page,
        "pages": pages,
        "sort": ("-" if descending else "") + field,
        "query": query,
    }


def _matches(record: Mapping[str, Any], words: list[str]) -> bool:
    text = " ".join(str(record.get(f) or "") for f in TEXT_FIELDS).lower()
    text += " urgent" if record.get("urgent") else ""
    return all(word in text for word in words)


def _sorted(
    records: list[Mapping[str, Any]],
    field: str,
    descending: bool,
) -> list[Mapping[str, Any]]:
    """Blanks last in both directions; equal values keep the records' order."""
    present = [r for r in records if r.get(field) not in (None, "")]
    blank = [r for r in records if r.get(field) in (None, "")]
    return sorted(present, key=lambda r: r[field], reverse=descending) + blank
