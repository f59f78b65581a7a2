"""Exports of a succeeded run, written once to files and then served as files.

Why files and not a stream per request: an events export of a mid-size run (≈100,000
rows) takes tens of seconds to read and format; streamed, every download held a
request thread (and a database cursor) that long, and a handful of them starved every
other reader. A succeeded run never changes, so the file is written once and each later
download only copies bytes.

Who writes it:
- a small export (at most ``LAB_EXPORT_INLINE_ROWS`` rows) is written by the request
  that first asks for it: it costs about as much as streaming it once did;
- a larger one by a Celery worker (``tasks.build_export``); the request answers 202 with
  ``Retry-After`` and ``Location`` (the same URL) until the file is there. One build per
  export at a time (a lock in the shared cache), at most ``LAB_EXPORT_BUILDS_PER_USER``
  builds per user at a time (slots in the shared cache; 429 past them): no user can
  fill the workers with exports.

The worker keeps its lock and slot fresh while it writes; a build that stopped (its
worker killed, its message lost) lets go of both within ``LAB_EXPORT_BUILD_SECONDS``,
and the next request starts it again. A run's files are removed when the run is
deleted; ``exports_sweep`` (from the watchdog) removes what a crash or a recreated
database left behind.
"""

from __future__ import annotations

import logging
import re
import shutil
import time
from collections.abc import Callable, Iterable, Iterator, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import pyarrow as pa
from django.conf import settings
from django.contrib.auth.models import AnonymousUser, User
from django.core.cache import cache
from django.db import transaction

from experiments import selectors_api
from experiments.api import exports
from experiments.models import Run, Status

logger = logging.getLogger(__name__)
TABLES = ("summary", "workloads", "events", "decisions")
EVENT_FILTERS = (
    "variant",
    "replication",
    "workload",
    "pod",
    "node",
    "reason",
    "time_min",
    "time_max",
)
WORKLOAD_FILTERS = ("variant", "replication")
DECISION_FILTERS = ("variant", "replication", "workload", "pod", "node", "reason")
RUN_FOLDER = re.compile(r"^run-(?P<run_id>\d+)-(?P<task_token>.+)$")
"""The folder name ``exports.run_directory`` gives a run."""
ROWS_PER_SECOND = 20_000
"""A rough writing speed, for the ``Retry-After`` of a build in progress."""


class ExportBuildsBusyError(Exception):
    """The user already has ``LAB_EXPORT_BUILDS_PER_USER`` exports being built."""

    def __init__(self, retry_after: int, limit: int) -> None:
        self.retry_after, self.limit = retry_after, limit
        super().__init__(f"{limit} exports of yours are being prepared; ask again later")


@dataclass(frozen=True, slots=True)
class Export:
    """One export of one run: which table, format and filters, and where its file is."""

    run_id: int
    task_token: str
    table: str
    fmt: str
    filters: dict[str, Any]

    @property
    def path(self) -> Path:
        return exports.run_directory(
            run_id=self.run_id, task_token=self.task_token
        ) / exports.export_name(table=self.table, fmt=self.fmt, filters=self.filters)

    @property
    def lock_key(self) -> str:
        return f"export-build:{self.run_id}:{self.task_token}:{self.path.name}"


@dataclass(frozen=True, slots=True)
class ExportState:
    """The file, when it is there; else how long to wait before asking again."""

    path: Path | None
    retry_after: int = 0


def export_of(*, run: Run, table: str, fmt: str, filters: dict[str, Any]) -> Export:
    """The export named by a request: only the filters its table takes, empty ones
    dropped, so ``?reason=`` and no query name the same file."""
    wanted = {
        "summary": (),
        "workloads": WORKLOAD_FILTERS,
        "events": EVENT_FILTERS,
        "decisions": DECISION_FILTERS,
    }[table]
    kept = {key: filters[key] for key in wanted if filters.get(key) not in (None, "")}
    return Export(run_id=run.pk, task_token=run.task_token, table=table, fmt=fmt, filters=kept)


def export_request(*, run: Run, export: Export, user: User | AnonymousUser) -> ExportState:
    """The file of ``export`` if it exists or is cheap to write now; otherwise make sure
    a worker is building it and say when to look again. Raises ExportBuildsBusyError
    when this would be one build too many for ``user``."""
    if export.path.exists():
        return ExportState(export.path)
    rows = _row_estimate(run, export)
    if rows <= settings.LAB_EXPORT_INLINE_ROWS:
        return ExportState(export_write(run=run, export=export))
    retry_after = max(1, min(30, rows // ROWS_PER_SECOND))
    if cache.add(export.lock_key, 1, settings.LAB_EXPORT_BUILD_SECONDS):
        slot = _claim_slot(export, user, retry_after)
        _enqueue(export, slot)
        if export.path.exists():  # built at once (eager tasks: tests, CELERY_TASK_ALWAYS_EAGER)
            return ExportState(export.path)
    return ExportState(None, retry_after)


def _row_estimate(run: Run, export: Export) -> int:
    """An upper bound of the rows, from counts the database keeps (no event is read)."""
    if export.table == "summary":
        return 0
    if export.table == "workloads":
        return selectors_api.run_workload_records(
            run=run,
            variant=export.filters.get("variant", ""),
            replication=export.filters.get("replication"),
        ).count()
    return selectors_api.run_event_count(
        run=run,
        variant=export.filters.get("variant", ""),
        replication=export.filters.get("replication"),
    )


def _claim_slot(export: Export, user: User | AnonymousUser, retry_after: int) -> str:
    """One of the user's ``LAB_EXPORT_BUILDS_PER_USER`` build slots: a cache key taken
    atomically (``add``), held by the build and let go when it ends. A slot whose build
    vanished expires with it, so nothing leaks for longer than
    ``LAB_EXPORT_BUILD_SECONDS``. Past the cap the export's lock is let go again."""
    limit = settings.LAB_EXPORT_BUILDS_PER_USER
    for number in range(limit):
        slot = f"export-slot:{user.pk}:{number}"
        if cache.add(slot, export.lock_key, settings.LAB_EXPORT_BUILD_SECONDS):
            return slot
    cache.delete(export.lock_key)
    raise ExportBuildsBusyError(retry_after, limit)


def _enqueue(export: Export, slot: str) -> None:
    from experiments.tasks import build_export

    try:
        build_export.delay(
            export.run_id, export.task_token, export.table, export.fmt, export.filters, slot
        )
    except Exception:
        cache.delete_many([export.lock_key, slot])
        raise


def export_build(
    *, run_id: int, task_token: str, table: str, fmt: str, filters: dict[str, Any], slot: str
) -> str | None:
    """What the worker does: write the file (unless it is there already), keeping the
    lock and the user's slot alive while it writes, then let go of both. None when the
    run is gone or has no results."""
    export = Export(run_id=run_id, task_token=task_token, table=table, fmt=fmt, filters=filters)
    held = [export.lock_key, slot]
    try:
        run = Run.objects.filter(pk=run_id, task_token=task_token, status=Status.SUCCEEDED).first()
        if run is None:
            return None
        if export.path.exists():
            return str(export.path)
        return str(export_write(run=run, export=export, alive=lambda: _touch(held)))
    finally:
        cache.delete_many(held)


def _touch(keys: list[str]) -> None:
    for key in keys:
        cache.touch(key, settings.LAB_EXPORT_BUILD_SECONDS)


HEARTBEAT_ROWS = 5000


def export_write(*, run: Run, export: Export, alive: Callable[[], None] | None = None) -> Path:
    """Write the export's file; ``alive`` is called every ``HEARTBEAT_ROWS`` rows (the
    worker keeps its lock fresh, so only a build that stopped is started again)."""
    rows, columns, schema = export_table(run=run, table=export.table, filters=export.filters)
    if alive is not None:
        rows = _beating(rows, alive)
    return exports.write_file(
        export.path, rows=rows, columns=columns, schema=schema, fmt=export.fmt
    )


def _beating(rows: Iterable[dict[str, Any]], alive: Callable[[], None]) -> Iterator[dict[str, Any]]:
    alive()
    for number, row in enumerate(rows, start=1):
        if number % HEARTBEAT_ROWS == 0:
            alive()
        yield row


def export_table(
    *, run: Run, table: str, filters: dict[str, Any]
) -> tuple[Iterable[dict[str, Any]], Sequence[str], pa.Schema]:
    """The rows, columns and Arrow schema of one of a run's tables."""
    if table == "summary":
        return (
            selectors_api.run_summary_rows(run=run),
            selectors_api.SUMMARY_COLUMNS,
            exports.SUMMARY_SCHEMA,
        )
    if table == "workloads":
        records = selectors_api.run_workload_rows(
            run=run, variant=filters.get("variant", ""), replication=filters.get("replication")
        )
        return records, selectors_api.RECORD_COLUMNS, exports.RECORD_SCHEMA
    if table == "decisions":
        return (
            selectors_api.run_decision_rows(run=run, filters=filters),
            selectors_api.DECISION_COLUMNS,
            exports.DECISION_SCHEMA,
        )
    return (
        selectors_api.run_event_rows(run=run, filters=filters),
        selectors_api.EVENT_COLUMNS,
        exports.EVENT_SCHEMA,
    )


def run_files_remove(*, run: Run) -> None:
    """Remove a deleted run's files once the delete is committed (a rolled-back delete
    keeps them)."""
    run_id, token = run.pk, run.task_token
    transaction.on_commit(lambda: exports.remove_run_files(run_id=run_id, task_token=token))


def run_deleted(sender: type[Run], instance: Run, **_: Any) -> None:
    """The ``post_delete`` receiver of Run (connected in ``apps``)."""
    run_files_remove(run=instance)


def exports_sweep(*, now: float | None = None) -> list[str]:
    """Remove export files that no run owns any more, and return their names.

    Deleting a run removes its folder once the delete commits, but a process killed in
    between, a database recreated under the same ``LAB_EXPORT_DIR``, or a build killed
    mid-write (its ``.tmp``) leaves files nothing would ever serve or delete. A folder
    goes when no run has its (id, task token); a temporary file when it is older than
    ``LAB_EXPORT_BUILD_SECONDS``, the time after which its build counts as dead anyway.
    """
    root = Path(settings.LAB_EXPORT_DIR)
    if not root.is_dir():
        return []
    folders: dict[Path, tuple[int, str]] = {}
    for entry in root.iterdir():
        match = RUN_FOLDER.match(entry.name)
        if match and entry.is_dir():
            folders[entry] = (int(match["run_id"]), match["task_token"])
    owned = set(
        Run.objects.filter(pk__in={run_id for run_id, _ in folders.values()}).values_list(
            "pk", "task_token"
        )
    )
    dead_before = (time.time() if now is None else now) - settings.LAB_EXPORT_BUILD_SECONDS
    removed: list[str] = []
    for folder, owner in sorted(folders.items()):
        if owner not in owned:
            shutil.rmtree(folder, ignore_errors=True)
            removed.append(folder.name)
            continue
        for partial in folder.glob(".*.tmp"):
            try:
                if partial.stat().st_mtime < dead_before:
                    partial.unlink()
                    removed.append(f"{folder.name}/{partial.name}")
            except FileNotFoundError:  # its build finished or was cleaned meanwhile
                continue
    if removed:
        logger.info("removed %d orphaned export file(s): %s", len(removed), ", ".join(removed))
    return removed
