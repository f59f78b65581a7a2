"""Experiments, their runs, and the results of every (variant, replication).

Everything hangs off an Experiment with ``on_delete=CASCADE`` down to the replications,
which hold their event log as a column (``Replication.event_log``), so deleting an
experiment leaves nothing behind, files included: there are none.
"""

from __future__ import annotations

import hashlib
import json
import types
import typing
import uuid

from django.conf import settings
from django.db import models
from django.utils import timezone

from experiments.fields import CompressedJSONField
from scheduler_core.metrics import WorkloadRecord as CoreWorkloadRecord


class Experiment(models.Model):
    """A named spec with an owner. ``name`` and ``description`` mirror the spec's own
    fields (the spec is the source of truth) so lists and search need no JSON."""

    owner = models.ForeignKey(
        settings.AUTH_USER_MODEL, on_delete=models.CASCADE, related_name="experiments"
    )
    name = models.CharField(max_length=200)
    description = models.TextField(blank=True)
    spec = models.JSONField(help_text="the validated spec, camelCase, defaults included")
    source_preset = models.CharField(
        max_length=100, blank=True, help_text="the preset it was started from, if any"
    )
    shared_with = models.ManyToManyField(
        settings.AUTH_USER_MODEL, blank=True, related_name="experiments_shared_with_me"
    )
    version = models.PositiveIntegerField(
        default=1,
        help_text="one more at every change: an edit made on an older version is "
        "refused (If-Match, the editor's hidden field), not silently lost",
    )
    created_at = models.DateTimeField(auto_now_add=True)
    updated_at = models.DateTimeField(auto_now=True)

    class Meta:
        ordering = ["-updated_at", "-id"]
        indexes = [models.Index(fields=["owner", "-updated_at"])]

    def __str__(self) -> str:
        return self.name

    @property
    def tag_names(self) -> list[str]:
        return [tag.name for tag in self.tags.all()]


MAX_TAG_LENGTH = 50


class ExperimentTag(models.Model):
    """One tag of one experiment: a row (not JSON) so every database can filter on it."""

    experiment = models.ForeignKey(Experiment, on_delete=models.CASCADE, related_name="tags")
    name = models.CharField(max_length=MAX_TAG_LENGTH)

    class Meta:
        ordering = ["name"]
        constraints = [
            models.UniqueConstraint(fields=["experiment", "name"], name="unique_tag_per_experiment")
        ]
        indexes = [models.Index(fields=["name"])]

    def __str__(self) -> str:
        return self.name


PRESET_TAG = "preset"  # the copy ``load_presets`` installs for a user: the preset itself
FROM_PRESET_TAG = "from-preset"  # an experiment the user made from a preset


class Status(models.TextChoices):
    QUEUED = "queued"
    RUNNING = "running"
    SUCCEEDED = "succeeded"
    FAILED = "failed"
    CANCELLED = "cancelled"


ACTIVE_STATUSES = (Status.QUEUED, Status.RUNNING)
TERMINAL_STATUSES = (Status.SUCCEEDED, Status.FAILED, Status.CANCELLED)


def _new_token() -> str:
    return uuid.uuid4().hex


RESULT_BLOBS = ("event_log", "timeline", "timeline_costs", "decisions")
"""A replication's result columns that are blobs of up to megabytes each: a read that
does not use them defers them."""


def timeline_costs_of(timeline: dict[str, typing.Any] | None) -> dict[str, typing.Any] | None:
    """What ``Replication.timeline_costs`` holds of a stored timeline."""
    if timeline is None:
        return None
    return {
        "version": timeline.get("version"),
        "costs": timeline.get("costs", []),
        "recoveries": timeline.get("recoveries", []),
    }


def spec_digest_of(document: typing.Any) -> str:
    """A digest of a spec document's content: what a worker keys its parsed copy of a
    run's frozen spec by (``Run.spec_digest``). Keys are sorted, so the document as
    saved and as PostgreSQL's ``jsonb`` gives it back (keys in its own order) agree."""
    text = json.dumps(document, sort_keys=True)
    return hashlib.blake2b(text.encode(), digest_size=16).hexdigest()


class Run(models.Model):
    """One execution of an experiment, on a frozen copy of its spec.

    ``queued → running → succeeded | failed | cancelled``; every transition is a
    conditional update in ``services``, so two workers never both move it.
    """

    experiment = models.ForeignKey(Experiment, on_delete=models.CASCADE, related_name="runs")
    created_by = models.ForeignKey(
        settings.AUTH_USER_MODEL, on_delete=models.SET_NULL, null=True, blank=True, related_name="+"
    )
    spec = models.JSONField(help_text="the spec as it was when the run started")
    spec_digest = models.CharField(
        max_length=32,
        blank=True,
        default="",
        editable=False,
        help_text="spec_digest_of(spec), written with the spec: a worker that already parsed "
        "this spec knows it without reading the spec (megabytes for a recorded cluster); "
        "empty on rows from before it existed",
    )
    product_version = models.CharField(max_length=100)
    task_token = models.CharField(
        max_length=32,
        default=_new_token,
        editable=False,
        help_text="makes the run's Celery task ids unique beyond this database's row ids",
    )
    status = models.CharField(max_length=16, choices=Status.choices, default=Status.QUEUED)
    progress = models.FloatField(default=0.0)
    error = models.TextField(blank=True)
    aggregate = models.JSONField(
        default=list,
        blank=True,
        help_text="per variant, in run order: {variant, preemption, placement, metrics: "
        "{name: {mean, ci95, min, max, n}}}",
    )
    created_at = models.DateTimeField(auto_now_add=True)
    started_at = models.DateTimeField(null=True, blank=True)
    finished_at = models.DateTimeField(null=True, blank=True)

    class Meta:
        ordering = ["-created_at", "-id"]
        indexes = [
            models.Index(fields=["status", "created_at"]),
            models.Index(fields=["experiment", "-created_at"]),
        ]

    def __str__(self) -> str:
        return f"Run {self.pk} of {self.experiment_id} ({self.status})"

    def save(self, *args: typing.Any, **kwargs: typing.Any) -> None:
        """Whenever the spec is written, its digest is written with it, so the two never
        disagree (a saved spec is never served to a worker under another's digest)."""
        update_fields = kwargs.get("update_fields")
        if "spec" not in self.get_deferred_fields() and (
            update_fields is None or "spec" in update_fields
        ):
            self.spec_digest = spec_digest_of(self.spec)
            if update_fields is not None:
                kwargs["update_fields"] = {*update_fields, "spec_digest"}
        super().save(*args, **kwargs)

    @property
    def is_terminal(self) -> bool:
        return self.status in TERMINAL_STATUSES

    @property
    def duration_seconds(self) -> float | None:
        """Wall-clock time from start to finish, or so far while it runs; None before
        a worker picked it up."""
        if self.started_at is None:
            return None
        end = self.finished_at or timezone.now()
        return max(0.0, (end - self.started_at).total_seconds())


class Replication(models.Model):
    """One (variant, replication) of a run: the unit of work of one Celery task, its
    heartbeat while it runs, and its results once it has succeeded.

    Results are written in one transaction with the status, so a row is either
    complete or has no results at all.
    """

    run = models.ForeignKey(Run, on_delete=models.CASCADE, related_name="replications")
    variant_index = models.PositiveIntegerField()
    variant = models.TextField()
    replication = models.PositiveIntegerField()
    status = models.CharField(max_length=16, choices=Status.choices, default=Status.QUEUED)
    progress = models.FloatField(default=0.0)
    attempt = models.PositiveIntegerField(default=0, help_text="deliveries that claimed it")
    heartbeat_at = models.DateTimeField(null=True, blank=True)
    started_at = models.DateTimeField(null=True, blank=True)
    finished_at = models.DateTimeField(null=True, blank=True)
    seed = models.BigIntegerField(null=True, blank=True)
    preemption = models.TextField(blank=True)
    placement = models.TextField(blank=True)
    summary = models.JSONField(default=dict, blank=True)
    distributions = models.JSONField(default=dict, blank=True)
    by_priority_class = models.JSONField(default=dict, blank=True)
    events_processed = models.PositiveIntegerField(default=0)
    event_count = models.PositiveIntegerField(default=0)
    event_log = models.BinaryField(
        null=True,
        blank=True,
        editable=False,
        help_text="the whole event log as one zstd Parquet file (experiments.event_log); "
        "null until the results are stored",
    )
    wall_seconds = models.FloatField(default=0.0)
    timeline = CompressedJSONField(
        null=True,
        blank=True,
        help_text="what the time charts draw "
        "(scheduler_core.timeline.Timeline.to_json), derived when the results are stored; "
        "null for rows stored before it existed, derived on first view",
    )
    timeline_costs = CompressedJSONField(
        null=True,
        blank=True,
        help_text="the timeline's version, cost increments and recoveries (timeline_costs_of): "
        "what the work charts read of every replication, without the spans",
    )
    decisions = CompressedJSONField(
        default=list,
        blank=True,
        help_text="scheduler_core decision records, in order; a record's id is its index",
    )
    diagnosis = models.TextField(
        blank=True,
        help_text="why the urgent workloads never "
        "preempted or never ran, in one sentence (or empty)",
    )
    study = models.JSONField(
        null=True,
        blank=True,
        help_text="placement study only: the core's record of the run "
        "(scheduler_core.study_spec.study_record: the allocation ratio at every 1 % of "
        "arrived load, the allocation at the asked load, pods and failed pods)",
    )

    class Meta:
        ordering = ["run", "variant_index", "replication"]
        constraints = [
            models.UniqueConstraint(
                fields=["run", "variant_index", "replication"], name="unique_replication_per_run"
            )
        ]
        indexes = [models.Index(fields=["status", "heartbeat_at"])]

    def __str__(self) -> str:
        return f"{self.variant} #{self.replication} ({self.status})"


class WorkloadRecord(models.Model):
    """One workload's record in one replication: ``scheduler_core``'s WorkloadRecord as a
    row, one column per field (added below from the dataclass, so the two never drift),
    so the API and the run page filter, sort and page them in the database.
    ``position`` keeps the simulator's order."""

    replication = models.ForeignKey(
        Replication, on_delete=models.CASCADE, related_name="workload_records"
    )
    position = models.PositiveIntegerField()

    class Meta:
        ordering = ["replication", "position"]
        constraints = [
            models.UniqueConstraint(
                fields=["replication", "position"], name="unique_record_position"
            )
        ]

    def __str__(self) -> str:
        return f"{self.pk}: record {self.position} of replication {self.replication_id}"


def _record_column(annotation: object) -> models.Field:
    """The column of a WorkloadRecord field: its type, null where the core allows None."""
    nullable = isinstance(annotation, types.UnionType)
    kind = (
        next(a for a in typing.get_args(annotation) if a is not type(None))
        if nullable
        else annotation
    )
    if kind is str:
        return models.TextField(blank=True, default="")
    if kind is bool:
        return models.BooleanField(default=False)
    if kind is int:
        return models.BigIntegerField(
            null=nullable, blank=nullable, default=None if nullable else 0
        )
    return models.FloatField(null=nullable, blank=nullable, default=None if nullable else 0.0)


for _name, _annotation in typing.get_type_hints(CoreWorkloadRecord).items():
    WorkloadRecord.add_to_class(_name, _record_column(_annotation))
del _name, _annotation
