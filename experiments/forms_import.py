"""The import page's form: format, files, the QoS mapping and per-kind defaults shown
with their values (editable), and the replay scenarios.

The form only collects and checks the syntax of what the user typed; the import and
its validation are the service's (``experiments.services.imports``). Edits are sent as
the service takes them: a changed QoS mapping as its text, changed default cells as
``KIND.FIELD=VALUE`` items. An unchanged mapping or table is sent as nothing at all, so
an import with the defaults is exactly the REST API's and the CLI's.
"""

from __future__ import annotations

from collections.abc import Iterator, Sequence
from typing import Any, cast

import yaml
from django import forms
from django.core.files.uploadedfile import UploadedFile

from experiments.services.import_scenarios import ReplayScenarios
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


class TraceImportForm(forms.Form):
    format = forms.ChoiceField(choices=[(f.name, f"{f.name}: {f.title}") for f in FORMATS.values()],
                               initial="openb")
    files = MultipleFileField(  # type: ignore[assignment]  # a form field, not BaseForm.files
        help_text="The format's files, all at once (e.g. the openb node list and pod list).")
    name = forms.CharField(required=False, max_length=200,
                           help_text="Blank: named after the trace.")
    horizon_seconds = forms.FloatField(required=False, min_value=1.0, label="Horizon (s)",
                                       widget=forms.TextInput(attrs={"inputmode": "decimal"}),
                                       help_text="Blank: what the trace covers.")
    tags = forms.CharField(required=False, max_length=500, help_text="Comma-separated.")

    inject_urgent = forms.CharField(
        required=False, max_length=40, label="Inject an urgent group",
        help_text="MEMBERSxGPUS@ARRIVAL, e.g. 4x8@3600: an all-or-nothing group above every "
                  "class.")
    urgent_duration = forms.FloatField(required=False, initial=URGENT_SECONDS, min_value=1.0,
                                       label="Urgent group's work (s)",
                                       widget=forms.TextInput(attrs={"inputmode": "decimal"}))
    spot_reclaim = forms.CharField(
        required=False, max_length=200, label="Spot reclaims",
        help_text="SHARE@TIME, comma-separated, e.g. 10%@7200: one variant each, reclaiming "
                  "that share of the GPU nodes.")
    spot_notice = forms.FloatField(required=False, initial=NOTICE_SECONDS, min_value=0.0,
                                   label="Spot notice (s)",
                                   widget=forms.TextInput(attrs={"inputmode": "decimal"}))
    seed = forms.IntegerField(required=False, initial=0, label="Seed",
                              widget=forms.TextInput(attrs={"inputmode": "numeric"}),
                              help_text="Picks the reclaimed nodes.")
    compare_qos_map = forms.CharField(
        required=False, max_length=100_000, label="Compare a QoS mapping",
        widget=forms.Textarea(attrs={"rows": 3, "class": "code"}),
        help_text="A variant with another mapping: QOS=CLASS[:VALUE[:POLICY]],... or a "
                  "document like the one above.")
    compare_policies = forms.MultipleChoiceField(
        required=False, widget=forms.CheckboxSelectMultiple, label="Compare preemption policies",
        help_text="One variant per policy.")

    def __init__(self, *args: Any, **kwargs: Any) -> None:
        super().__init__(*args, **kwargs)
        policies = cast(forms.MultipleChoiceField, self.fields["compare_policies"])
        policies.choices = [(p, p) for p in policy_choices()["preemption"]]
        for fmt in FORMATS.values():
            if fmt.qos_map is not None:
                self.fields[qos_field_name(fmt.name)] = forms.CharField(
                    required=False, max_length=100_000, label=f"QoS → PriorityClass ({fmt.name})",
                    initial=yaml.safe_dump(fmt.qos_map.to_document(), sort_keys=False),
                    widget=forms.Textarea(attrs={"rows": 16, "class": "code"}),
                    help_text="The default mapping, as YAML; edit it, or replace it with "
                              "QOS=CLASS[:VALUE[:POLICY]],...")
        for kind, row in KindDefaults.builtin().as_table().items():
            for field, value in row.items():
                self.fields[default_field_name(kind, field)] = _default_cell(field, value)
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
        return [(fmt, self[qos_field_name(fmt)]) for fmt in FORMATS
                if qos_field_name(fmt) in self.fields]

    def default_rows(self) -> Iterator[tuple[str, list[forms.BoundField]]]:
        """The per-kind table, a row per kind, in the columns' order."""
        for kind in KindDefaults.builtin().as_table():
            yield kind, [self[default_field_name(kind, f)] for f in DEFAULT_FIELDS]

    def import_arguments(self) -> dict[str, Any]:
        """Keyword arguments for ``experiment_import_with_scenarios`` (after is_valid)."""
        data = self.cleaned_data
        return {
            "fmt": data["format"], "uploads": [(f, f.name) for f in data["files"]],
            "qos_map": self._edited_qos_map(data["format"]), "defaults": self._edited_defaults(),
            "name": data["name"].strip(), "horizon_seconds": data["horizon_seconds"],
            "tags": [t.strip() for t in data["tags"].split(",") if t.strip()],
            "scenarios": ReplayScenarios(
                inject_urgent=data["inject_urgent"],
                urgent_duration=_or(data["urgent_duration"], URGENT_SECONDS),
                spot_reclaims=tuple(data["spot_reclaim"]),
                spot_notice=_or(data["spot_notice"], NOTICE_SECONDS), seed=_or(data["seed"], 0),
                compare_qos_map=_text(data["compare_qos_map"]),
                compare_policies=tuple(data["compare_policies"])),
        }

    def _edited_qos_map(self, fmt: str) -> str:
        name = qos_field_name(fmt)
        if name not in self.fields:
            return ""
        text = _text(self.cleaned_data.get(name))
        return "" if text == _text(self.fields[name].initial) else text

    def _edited_defaults(self) -> str:
        """Only the cells the user changed, as ``KIND.FIELD=VALUE`` lines. A cell the
        request did not send at all is unchanged (blank means "none" only when sent)."""
        edited = []
        for kind, row in KindDefaults.builtin().as_table().items():
            for field, value in row.items():
                name = default_field_name(kind, field)
                if self.add_prefix(name) not in self.data:
                    continue
                typed = _text(self.cleaned_data.get(name))
                if typed != default_text(value):
                    edited.append(f"{kind}.{field}={typed or 'null'}")
        return "\n".join(edited)

    def add_import_errors(self, errors: Sequence[dict[str, Any]]) -> None:
        """The service's errors, each beside what it is about: a file's rows beside the
        upload field, an option at its field, a defaults cell at its cell, the rest on top."""
        for error in errors:
            path, message = str(error.get("path", "")), str(error["message"])
            if path.startswith("files"):
                self.file_errors.append(error)
            elif path == "qos_map":
                self.add_error(qos_field_name(self.cleaned_data["format"]), message)
            elif path == "defaults":
                self.add_error(self._default_cell_named(message), message)
            elif path == "spot_reclaims":
                self.add_error("spot_reclaim", message)
            elif path in self.fields:
                self.add_error(path, message)
            else:
                self.add_error(None, f"{path}: {message}" if path else message)

    def _default_cell_named(self, message: str) -> str | None:
        """``training.startupSeconds: ...`` names its cell; a message naming none goes on top."""
        kind, _, field = message.partition(":")[0].partition(".")
        name = default_field_name(kind, field)
        return name if name in self.fields else None


def _default_cell(field: str, value: Any) -> forms.Field:
    """One editable cell of the defaults table, showing the built-in value."""
    label = DEFAULT_FIELDS[field][0]
    if field == "recovery":
        return forms.ChoiceField(choices=[(m.value, m.value) for m in RecoveryModel],
                                 initial=value, label=label, required=False)
    if field == "controller":
        return forms.ChoiceField(choices=[(c.value, c.value) for c in ControllerKind],
                                 initial=value, label=label, required=False)
    if field == "checkpointOnSigterm":
        return forms.ChoiceField(choices=[("false", "no"), ("true", "yes")],
                                 initial=default_text(value), label=label, required=False)
    return forms.CharField(required=False, max_length=30, initial=default_text(value),
                           label=label, widget=forms.TextInput(attrs={"size": 6}))
