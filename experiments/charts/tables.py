"""The per-workload table: the stored records filtered, sorted and paged in the
database, so a run with thousands of workloads sends the browser one page at a time."""

from __future__ import annotations

from typing import Any

from django.core.paginator import Paginator
from django.db.models import QuerySet

import scheduler_core as sc
from experiments.display import metric_tooltip
from experiments.models import WorkloadRecord

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
ROW_FIELDS = (*(name for name, _, _ in COLUMNS), "urgent")
TEXT_FIELDS = ("workload", "kind", "priority_class", "recovery")
PER_PAGE = 50
DEFAULT_SORT = "-lost_work"


def workload_page(
    records: QuerySet[WorkloadRecord],
    *,
    every: int,
    query: str = "",
    sort: str = DEFAULT_SORT,
    page: int = 1,
    per_page: int = PER_PAGE,
) -> dict[str, Any]:
    """One page of ``records`` (already filtered by ``query`` and sorted by ``sort``:
    ``selectors_charts.replication_workload_records``) in the table's columns;
    ``every`` is how many records the replication has."""
    shown = Paginator(records, per_page).get_page(max(1, page))
    return {
        "columns": [
            {
                "name": n,
                "label": label,
                "kind": kind,
                "tip": metric_tooltip(n) if n in sc.REGISTRY else "",
            }
            for n, label, kind in COLUMNS
        ],
        "rows": [{n: getattr(r, n) for n in ROW_FIELDS} for r in shown],
        "total": shown.paginator.count,
        "all": every,
        "page": shown.number,
        "pages": shown.paginator.num_pages,
        "sort": sort,
        "query": query,
    }
