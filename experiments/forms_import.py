"""The import page's form: format, files, the QoS mapping and per-kind defaults shown
with their values (editable), and the replay scenarios.

The form only collects and checks the syntax of what the user typed; the import and
its validation are the service's (``experiments.services.imports``). Edits are sent as
the service takes them: a changed QoS mapping as its text, changed default cells as
``KIND.FIELD=VALUE`` items. An unchanged mapping or table is sent as nothing at all, so
an import with the defaults is exactly the REST API's and the CLI's.
"""

from __future__ import annotations

import io
import json
from collections.abc import Iterator, Sequence
from typing import Any, cast

import yaml
from django import forms
from django.core.files.uploadedfile import UploadedFile

import scheduler_core as sc
from experiments.services.import_scenarios import ImportWindow, ReplayScenarios
from experiments.specs import policy_choices
from scheduler_core.spec import ControllerKind, RecoveryModel
from scheduler_core.traces import FORMATS, KindDefaults
from scheduler_core.traces.scenarios import ScenarioError, parse_reclaim, parse_urgent

MAX_FILES = 10  # as the REST API's import endpoint
URGENT_SECONDS = 3600  # the CLI's --urgent-duration default
NOTICE_SECONDS = 120  # the CLI's --spot-notice default
DEFAULT_FIELDS = {  # the table's columns: spec field -> (heading, unit)
    "checkpointIntervalSeconds": ("Checkpoint every", "s, blank: none"),
    "checkpointWriteSeconds": ("Checkpoint write", "s"),
    "checkpointOnSigterm": ("Checkpoint on SIGTERM", ""),
    "startupSeconds": ("Startup", "s"),
    "recovery": ("Recovery model", ""),
    "terminationGracePeriodSeconds": ("Grace period", "s"),
    "stopSeconds": ("Stop", "s"),
    "controller": ("Controller", ""),
}


class DurationField(forms.Field):
    """Seconds typed as people write durations (``3600``, ``24h``, ``1d``, ``1h30m``),
    read by the core's one parser, as in the editor and the CLI."""

    widget = forms.TextInput

    def __init__(self, *, min_value: float | None = None, **kwargs: Any) -> None:
        self.min_value = min_value
        super().__init__(**kwargs)

    def to_python(self, value: Any) -> float | None:
        text = str(value if value is not None else "").strip()
        if not text:
            return None
        try:
            return sc.parse_duration(text)
        except ValueError as exc:
            raise forms.ValidationError(str(exc), code="duration") from None

    def validate(self, value: Any) -> None:
        super().validate(value)
        if value is not None and self.min_value is not None and value < self.min_value:
            raise forms.ValidationError(
                f"must be at least {self.min_value:g} seconds", code="min_value"
            )


class MultipleFileInput(forms.ClearableFileInput):
    allow_multiple_selected = True


class MultipleFileField(forms.FileField):
    """Several files under one name (Django's documented recipe); cleans to a list."""

    def __init__(self, *args: Any, **kwargs: Any) -> None:
        kwargs.setdefault("widget", MultipleFileInput())
        super().__init__(*args, **kwargs)

    def clean(self, data: Any, initial: Any = None) -> list[UploadedFile]:
        items = list(data) if isinstance(data, list | tuple) else [data]
        items = items or [None]  # no file chosen: FileField's "required" message
        cleaned = [super(MultipleFileField, self).clean(item, initial) for item in items]
        if len(cleaned) > MAX_FILES:
            raise forms.ValidationError(f"At most {MAX_FILES} files per import.")
        return cleaned


def qos_field_name(fmt: str) -> str:
    return f"qos_map_{fmt}"


def default_field_name(kind: str, field: str) -> str:
    return f"default__{kind}__{field}"


def default_text(value: Any) -> str:
    """A default as the table shows it: blank for none, true/false, numbers without .0."""
    if value is None:
        return ""
    if isinstance(value, bool):
        return "true" if value else "false"
    if isinstance(value, int | float):
        return f"{value:g}"
    return str(value)


def _or(value: Any, default: Any) -> Any:
    return default if value is None else value


def _text(value: Any) -> str:
    """Browsers send text areas with CRLF line ends; compare and pass on LF text."""
    return str(value or "").replace("\r\n", "\n").strip()


class KindDefaultsMixin:
    """The per-kind defaults table as editable cells (``default__KIND__FIELD``): shown
    with the built-in values; only the cells the user changed are sent on."""

    fields: dict[str, forms.Field]
    data: Any
    cleaned_data: dict[str, Any]

    def add_default_cells(self) -> None:
        for kind, row in KindDefaults.builtin().as_table().items():
            for field, value in row.items():
                self.fields[default_field_name(kind, field)] = _default_cell(field, value)

    def default_rows(self) -> Iterator[tuple[str, list[forms.BoundField]]]:
        """The per-kind table, a row per kind, in the columns' order."""
        for kind in KindDefaults.builtin().as_table():
            yield (
                kind,
                [
                    self[default_field_name(kind, f)]  # type: ignore[index]
                    for f in DEFAULT_FIELDS
                ],
            )

    def _edited_defaults(self) -> str:
        """Only the cells the user changed, as ``KIND.FIELD=VALUE`` lines. A cell the
        request did not send at all is unchanged (blank means "none" only when sent)."""
        edited = []
        for kind, row in KindDefaults.builtin().as_table().items():
            for field, value in row.items():
                name = default_field_name(kind, field)
                if self.add_prefix(name) not in self.data:  # type: ignore[attr-defined]
                    continue
                typed = _text(self.cleaned_data.get(name))
                if typed != default_text(value):
                    edited.append(f"{kind}.{field}={typed or 'null'}")
        return "\n".join(edited)

    def _default_cell_named(self, message: str) -> str | None:
        """``training.startupSeconds: ...`` names its cell; a message naming none goes on top."""
        kind, _, field = message.partition(":")[0].partition(".")
        name = default_field_name(kind, field)
        return name if name in self.fields else None


class ApiNamesAsLabels:
    """The import service names its options as the API and CLI spell them; on an import
    page each reads as the label of the field to change (a form without that field
    keeps the name)."""

    API_NAMES = (
        ("'sample' (at most N workloads)", "sample"),
        ("'sample'", "sample"),
        ("'start'", "start_seconds"),
        ("'horizon_seconds'", "horizon_seconds"),
    )
    fields: dict[str, forms.Field]

    def _labelled(self, message: str) -> str:
        """``message`` with each API option name replaced by its field's label here."""
        for name, field in self.API_NAMES:
            if field in self.fields:
                message = message.replace(name, f"“{self.fields[field].label}”")
        return message


class TraceImportForm(ApiNamesAsLabels, KindDefaultsMixin, forms.Form):
    format = forms.ChoiceField(
        choices=[(f.name, f"{f.name}: {f.title}") for f in FORMATS.values()], initial="openb"
    )
    files = MultipleFileField(  # type: ignore[assignment]  # a form field, not BaseForm.files
        help_text="The format's files, all at once (e.g. the openb node list and pod list)."
    )
    name = forms.CharField(
        required=False, max_length=200, help_text="Blank: named after the trace."
    )
    start_seconds = DurationField(
        required=False,
        label="Start (trace time)",
        help_text="The trace time that becomes t = 0, e.g. 9964972 or 115d. Blank: where "
        "the recording starts.",
    )
    horizon_seconds = DurationField(
        required=False,
        min_value=1.0,
        label="Horizon",
        help_text="e.g. 24h, 7d. Blank: what the trace covers.",
    )
    placement_study = forms.FloatField(
        required=False,
        min_value=0.001,
        max_value=400.0,
        label="Placement study at arrived load (%)",
        widget=forms.TextInput(attrs={"inputmode": "decimal"}),
        help_text="openb only: import for the time-less placement study (FGD paper), e.g. "
        "130; fractional GPUs are kept. Blank: a time-based replay.",
    )
    compress = forms.FloatField(
        required=False,
        initial=1.0,
        min_value=0.001,
        max_value=1000.0,
        label="Compress arrivals (times)",
        widget=forms.TextInput(attrs={"inputmode": "decimal"}),
        help_text="Arrivals N times as dense (durations kept): a recorded load is often light.",
    )
    sample = forms.IntegerField(
        required=False,
        min_value=1,
        label="Sample to N workloads",
        widget=forms.TextInput(attrs={"inputmode": "numeric"}),
        help_text="Keep at most N workloads, drawn with the seed below. Blank: all.",
    )
    tags = forms.CharField(required=False, max_length=500, help_text="Comma-separated.")

    inject_urgent = forms.CharField(
        required=False,
        max_length=40,
        label="Inject an urgent group",
        help_text="MEMBERSxGPUS@ARRIVAL, e.g. 4x8@3600: an all-or-nothing group above every class.",
    )
    urgent_duration = DurationField(
        required=False,
        initial=URGENT_SECONDS,
        min_value=1.0,
        label="Urgent group's work",
        help_text="e.g. 1h",
    )
    spot_reclaim = forms.CharField(
        required=False,
        max_length=200,
        label="Spot reclaims",
        help_text="SHARE@TIME, comma-separated, e.g. 10%@7200: one variant each, reclaiming "
        "that share of the GPU nodes.",
    )
    spot_notice = DurationField(
        required=False,
        initial=NOTICE_SECONDS,
        min_value=0.0,
        label="Spot notice",
        help_text="e.g. 2m",
    )
    seed = forms.IntegerField(
        required=False,
        initial=0,
        label="Seed",
        widget=forms.TextInput(attrs={"inputmode": "numeric"}),
        help_text="Picks the reclaimed nodes and the sample.",
    )
    compare_qos_map = forms.CharField(
        required=False,
        max_length=100_000,
        label="Compare a QoS mapping",
        widget=forms.Textarea(attrs={"rows": 3, "class": "code"}),
        help_text="A variant with another mapping: QOS=CLASS[:VALUE[:POLICY]],... or a "
        "document like the one above.",
    )
    compare_policies = forms.MultipleChoiceField(
        required=False,
        widget=forms.CheckboxSelectMultiple,
        label="Compare preemption policies",
        help_text="One variant per policy.",
    )

    def __init__(self, *args: Any, **kwargs: Any) -> None:
        super().__init__(*args, **kwargs)
        policies = cast(forms.MultipleChoiceField, self.fields["compare_policies"])
        policies.choices = [(p, p) for p in policy_choices()["preemption"]]
        for fmt in FORMATS.values():
            if fmt.qos_map is not None:
                self.fields[qos_field_name(fmt.name)] = forms.CharField(
                    required=False,
                    max_length=100_000,
                    label=f"QoS → PriorityClass ({fmt.name})",
                    initial=yaml.safe_dump(fmt.qos_map.to_document(), sort_keys=False),
                    widget=forms.Textarea(attrs={"rows": 16, "class": "code"}),
                    help_text="The default mapping, as YAML; edit it, or replace it with "
                    "QOS=CLASS[:VALUE[:POLICY]],...",
                )
        self.add_default_cells()
        self.file_errors: list[dict[str, Any]] = []

    def clean_inject_urgent(self) -> str:
        text = self.cleaned_data["inject_urgent"].strip()
        if text:
            try:
                parse_urgent(text)
            except ScenarioError as exc:
                raise forms.ValidationError(str(exc)) from None
        return text

    def clean_spot_reclaim(self) -> list[str]:
        items = [p.strip() for p in self.cleaned_data["spot_reclaim"].split(",") if p.strip()]
        for item in items:
            try:
                parse_reclaim(item)
            except ScenarioError as exc:
                raise forms.ValidationError(str(exc)) from None
        return items

    def qos_fields(self) -> list[tuple[str, forms.BoundField]]:
        return [
            (fmt, self[qos_field_name(fmt)])
            for fmt in FORMATS
            if qos_field_name(fmt) in self.fields
        ]

    def import_arguments(self) -> dict[str, Any]:
        """Keyword arguments for ``experiment_import_with_scenarios`` (after is_valid)."""
        data = self.cleaned_data
        return {
            "fmt": data["format"],
            "uploads": [(f, f.name) for f in data["files"]],
            "qos_map": self._edited_qos_map(data["format"]),
            "defaults": self._edited_defaults(),
            "name": data["name"].strip(),
            "horizon_seconds": data["horizon_seconds"],
            "window": ImportWindow(
                start_seconds=data["start_seconds"],
                compress=_or(data["compress"], 1.0),
                sample=data["sample"],
                seed=_or(data["seed"], 0),
                placement_study=data["placement_study"],
            ),
            "tags": [t.strip() for t in data["tags"].split(",") if t.strip()],
            "scenarios": ReplayScenarios(
                inject_urgent=data["inject_urgent"],
                urgent_duration=_or(data["urgent_duration"], URGENT_SECONDS),
                spot_reclaims=tuple(data["spot_reclaim"]),
                spot_notice=_or(data["spot_notice"], NOTICE_SECONDS),
                seed=_or(data["seed"], 0),
                compare_qos_map=_text(data["compare_qos_map"]),
                compare_policies=tuple(data["compare_policies"]),
            ),
        }

    def _edited_qos_map(self, fmt: str) -> str:
        name = qos_field_name(fmt)
        if name not in self.fields:
            return ""
        text = _text(self.cleaned_data.get(name))
        return "" if text == _text(self.fields[name].initial) else text

    def add_import_errors(self, errors: Sequence[dict[str, Any]]) -> None:
        """The service's errors, each beside what it is about: a file's rows beside the
        upload field, an option at its field, a defaults cell at its cell, the rest on top."""
        for error in errors:
            path, message = str(error.get("path", "")), self._labelled(str(error["message"]))
            if path.startswith("files"):
                self.file_errors.append(error)
            elif path == "qos_map":
                self.add_error(qos_field_name(self.cleaned_data["format"]), message)
            elif path == "defaults":
                self.add_error(self._default_cell_named(message), message)
            elif path == "spot_reclaims":
                self.add_error("spot_reclaim", message)
            elif path == "start":
                self.add_error("start_seconds", message)
            elif path in self.fields:
                self.add_error(path, message)
            else:
                self.add_error(None, f"{path}: {message}" if path else message)


def _default_cell(field: str, value: Any) -> forms.Field:
    """One editable cell of the defaults table, showing the built-in value."""
    label = DEFAULT_FIELDS[field][0]
    if field == "recovery":
        return forms.ChoiceField(
            choices=[(m.value, m.value) for m in RecoveryModel],
            initial=value,
            label=label,
            required=False,
        )
    if field == "controller":
        return forms.ChoiceField(
            choices=[(c.value, c.value) for c in ControllerKind],
            initial=value,
            label=label,
            required=False,
        )
    if field == "checkpointOnSigterm":
        return forms.ChoiceField(
            choices=[("false", "no"), ("true", "yes")],
            initial=default_text(value),
            label=label,
            required=False,
        )
    return forms.CharField(
        required=False,
        max_length=30,
        initial=default_text(value),
        label=label,
        widget=forms.TextInput(attrs={"size": 6}),
    )


# ============================================================================ Kubernetes
PASTED_MANIFESTS = "pasted-manifests.yaml"
PASTED_SNAPSHOT = "pasted-snapshot.yaml"
MAX_CARRIED_CHARS = 1_000_000
"""Uploaded files are carried from the preview to the save as text in the form (a
browser never sends a file twice); larger uploads are chosen again."""
MAX_PASTED_CHARS = 600_000
"""Each text area's limit (the browser enforces it): with what is carried, a request's
text fields stay under Django's DATA_UPLOAD_MAX_MEMORY_SIZE (2.5 MB). Larger manifest
sets are uploaded as files, which have no such limit."""


class OptionalMultipleFileField(MultipleFileField):
    """Several files or none."""

    def clean(self, data: Any, initial: Any = None) -> list[UploadedFile]:
        items = [
            item for item in (list(data) if isinstance(data, list | tuple) else [data]) if item
        ]
        if not items:
            return []
        return super().clean(items, initial)


class ManifestImportForm(ApiNamesAsLabels, KindDefaultsMixin, forms.Form):
    """The Kubernetes import page: manifests pasted and/or uploaded, an optional cluster
    snapshot (``kubectl get -o yaml|json``, KWOK, kube-scheduler-simulator), the per-kind
    defaults. Preview reads it all and shows what was read; save stores it."""

    manifests = forms.CharField(
        required=False,
        max_length=MAX_PASTED_CHARS,
        label="Manifests (paste)",
        widget=forms.Textarea(attrs={"rows": 14, "class": "code", "spellcheck": "false"}),
        help_text="YAML or JSON, several documents separated by ---: PriorityClasses, "
        "Jobs, JobSets, Deployments, PodGroups, PDBs, Kueue queues...",
    )
    files = OptionalMultipleFileField(  # type: ignore[assignment]  # a form field
        required=False,
        label="…or upload manifest files",
        help_text=f"Up to {MAX_FILES} .yaml / .yml / .json files.",
    )
    snapshot = forms.FileField(
        required=False,
        label="Cluster snapshot (optional)",
        help_text="kubectl get nodes,pods -A -o yaml|json, a kwokctl snapshot export, or a "
        "kube-scheduler-simulator export. Without Nodes, a default pool is assumed.",
    )
    snapshot_text = forms.CharField(
        required=False,
        max_length=MAX_PASTED_CHARS,
        label="…or paste the snapshot",
        widget=forms.Textarea(attrs={"rows": 4, "class": "code", "spellcheck": "false"}),
    )
    carried = forms.CharField(required=False, widget=forms.HiddenInput)
    name = forms.CharField(
        required=False,
        max_length=200,
        help_text="Blank: the name the manifests give, else kubernetes-import.",
    )
    horizon_seconds = DurationField(
        required=False, min_value=1.0, label="Horizon", help_text="e.g. 24h. Blank: one hour."
    )
    tags = forms.CharField(required=False, max_length=500, help_text="Comma-separated.")

    def __init__(self, *args: Any, **kwargs: Any) -> None:
        super().__init__(*args, **kwargs)
        self.add_default_cells()
        self.file_errors: list[dict[str, Any]] = []

    def clean_carried(self) -> list[tuple[str, str]]:
        """``[[name, text], ...]`` from the preview; anything else is dropped (the user
        then chooses the files again, and is told so by the empty-input error)."""
        try:
            value = json.loads(self.cleaned_data.get("carried") or "[]")
        except ValueError:
            return []
        if not isinstance(value, list):
            return []
        return [
            (str(entry[0]), str(entry[1]))
            for entry in value
            if isinstance(entry, list) and len(entry) == 2
        ][: MAX_FILES + 1]

    def clean(self) -> dict[str, Any]:
        data = super().clean() or {}
        if not self.errors and not self.uploads():
            raise forms.ValidationError("Paste manifests or choose files to import.")
        return data

    def uploads(self) -> list[tuple[Any, str]]:
        """What the core reads, as (stream, name): files chosen now (else those carried
        from the preview), then the pasted texts."""
        data = self.cleaned_data
        chosen = list(data.get("files") or []) + (
            [data["snapshot"]] if data.get("snapshot") else []
        )
        found: list[tuple[Any, str]] = [(f, f.name) for f in chosen] or [
            (io.StringIO(text), name) for name, text in data.get("carried") or []
        ]
        for field, name in (("manifests", PASTED_MANIFESTS), ("snapshot_text", PASTED_SNAPSHOT)):
            text = _text(data.get(field))
            if text:
                found.append((io.StringIO(text + "\n"), name))
        return found

    def carry(self) -> str:
        """The files chosen now as the hidden field's JSON, when they are small enough
        and text; "" otherwise."""
        data = self.cleaned_data
        chosen = list(data.get("files") or []) + (
            [data["snapshot"]] if data.get("snapshot") else []
        )
        if not chosen:
            return self.data.get(self.add_prefix("carried"), "")
        entries, size = [], 0
        for upload in chosen:
            upload.seek(0)
            raw = upload.read()
            upload.seek(0)
            size += len(raw)
            if size > MAX_CARRIED_CHARS:
                return ""
            try:
                entries.append([upload.name, raw.decode("utf-8-sig")])
            except UnicodeDecodeError:
                return ""
        return json.dumps(entries)

    def import_arguments(self) -> dict[str, Any]:
        """Keyword arguments for the import services (after is_valid)."""
        data = self.cleaned_data
        return {
            "fmt": "k8s",
            "uploads": self.uploads(),
            "defaults": self._edited_defaults(),
            "name": data["name"].strip(),
            "horizon_seconds": data["horizon_seconds"],
        }

    def tag_list(self) -> list[str]:
        return [t.strip() for t in self.cleaned_data["tags"].split(",") if t.strip()]

    def add_import_errors(self, errors: Sequence[dict[str, Any]]) -> None:
        """Located errors (file, line, column) go to the list above the inputs; a
        defaults cell's error to its cell; the rest on top."""
        for error in errors:
            path, message = str(error.get("path", "")), self._labelled(str(error["message"]))
            if path.startswith("files"):
                self.file_errors.append(error)
            elif path == "defaults":
                self.add_error(self._default_cell_named(message), message)
            elif path in self.fields:
                self.add_error(path, message)
            else:
                self.add_error(None, f"{path}: {message}" if path else message)
