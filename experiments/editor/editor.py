"""The experiment editor: two tabs over one spec document, and errors put back where
they belong.

The page is one HTML form. Every button posts it: *Save* validates through
``spec_parse``; the tab buttons and *Add ...* re-render the same document another way.
Nothing is validated in the browser and no JavaScript is needed, so nothing typed is
lost: a bound form re-renders exactly what was sent, and a document carries values the
spec would refuse (``gpus: "eight"``) until the user fixes them.
"""

from __future__ import annotations

import json
import re
from collections.abc import Mapping
from dataclasses import dataclass, field
from typing import Any

from django import forms
from pydantic import BaseModel

import scheduler_core as sc
from experiments.editor import document as doc
from experiments.editor.forms import (
    AdmissionQueueForm,
    FailureModelForm,
    InitialPodForm,
    MetaForm,
    NodeForm,
    NodePoolForm,
    PriorityClassForm,
    ResourceQuotaForm,
    SpecForm,
    TimelineEventForm,
    TopForm,
    VariantForm,
    WorkloadForm,
    YAMLForm,
)
from experiments.editor.yaml_lines import line_of
from experiments.specs import spec_parse
from scheduler_core import spec as spec_models
from scheduler_core.spec import load_document

FORM_CLASSES: dict[str, type[SpecForm]] = {
    "nodePools": NodePoolForm,
    "nodes": NodeForm,
    "priorityClasses": PriorityClassForm,
    "workloads": WorkloadForm,
    "events": TimelineEventForm,
    "variants": VariantForm,
    "queues": AdmissionQueueForm,
    "resourceQuotas": ResourceQuotaForm,
    "initialState": InitialPodForm,
    "failures": FailureModelForm,
}
ITEM_MODELS: dict[str, type[BaseModel]] = {
    "nodePools": spec_models.NodePool,
    "nodes": spec_models.NamedNode,
    "priorityClasses": spec_models.PriorityClass,
    "workloads": spec_models.Workload,
    "events": spec_models.TimelineEvent,
    "variants": spec_models.Variant,
    "queues": spec_models.AdmissionQueue,
    "resourceQuotas": spec_models.ResourceQuota,
    "initialState": spec_models.InitialPod,
    "failures": spec_models.FailureModel,
}
FORMSETS = {
    key: forms.formset_factory(form, extra=0, can_delete=True) for key, form in FORM_CLASSES.items()
}
_SECTION_PATH = re.compile(
    r"^(?P<section>cluster\.nodePools|cluster\.nodes|priorityClasses|workloads|queues"
    r"|resourceQuotas|initialState|events|failures|variants)"
    r"(?:\[(?P<index>\d+)\])?(?:\.|: )?(?P<rest>.*)$"
)
_KEY_BY_PATH = {section.path: section.key for section in doc.SECTIONS}
MODES = ("form", "yaml")


@dataclass(frozen=True, slots=True)
class YAMLError:
    line: int | None
    path: str
    message: str


@dataclass(frozen=True, slots=True)
class ErrorLink:
    """One line of the banner: where the problem is (with a link to that field, when
    there is one on the page) and what it is."""

    where: str
    message: str
    href: str = ""


@dataclass
class SectionView:
    section: doc.Section
    formset: forms.BaseFormSet
    errors: list[str] = field(default_factory=list)


class Editor:
    """What the page shows: the meta form and one tab (form or YAML), with errors."""

    def __init__(
        self,
        *,
        meta: MetaForm,
        mode: str,
        top: TopForm | None = None,
        sections: dict[str, SectionView] | None = None,
        yaml_form: YAMLForm | None = None,
    ) -> None:
        self.meta = meta
        self.mode = mode
        self.top = top
        self.sections = sections or {}
        self.yaml_form = yaml_form
        self.global_errors: list[str] = []
        self.yaml_errors: list[YAMLError] = []
        self._rows: dict[str, list[int]] = {}

    # ------------------------------------------------------------------ construction
    @classmethod
    def for_document(
        cls,
        document: Any,
        *,
        meta: MetaForm | None = None,
        mode: str = "form",
        yaml_text: str | None = None,
    ) -> Editor:
        """An unbound editor showing ``document`` in ``mode`` (the YAML tab if the form
        cannot show it)."""
        meta = meta or MetaForm(prefix="meta")
        problem = doc.form_problem(document)
        if mode == "yaml" or problem:
            text = yaml_text if yaml_text is not None else doc.to_yaml(document)
            editor = cls(
                meta=meta, mode="yaml", yaml_form=YAMLForm(prefix="yaml", initial={"text": text})
            )
            if problem and mode == "form":
                editor.global_errors.append(problem)
            return editor
        top = TopForm(prefix="spec", initial=_initial(TopForm, document, _top_hidden_paths()))
        sections = {
            s.key: SectionView(
                s,
                FORMSETS[s.key](
                    prefix=s.key,
                    initial=[
                        _initial(FORM_CLASSES[s.key], item)
                        for item in doc.get_path(document, s.path) or []
                    ],
                ),
            )
            for s in doc.SECTIONS
        }
        return cls(meta=meta, mode="form", top=top, sections=sections)

    @classmethod
    def from_post(cls, data: Mapping[str, Any]) -> Editor:
        """A bound editor for what the browser sent, in the tab it was sent from."""
        meta = MetaForm(data, prefix="meta")
        if data.get("mode") == "yaml":
            return cls(meta=meta, mode="yaml", yaml_form=YAMLForm(data, prefix="yaml"))
        sections = {
            s.key: SectionView(s, FORMSETS[s.key](data, prefix=s.key)) for s in doc.SECTIONS
        }
        return cls(meta=meta, mode="form", top=TopForm(data, prefix="spec"), sections=sections)

    # -------------------------------------------------------------------- actions
    def switched(self, mode: str) -> Editor:
        """The same document in the other tab. YAML that does not parse stays put."""
        if mode == self.mode:
            return self
        if mode == "yaml":
            return Editor.for_document(self.document(), meta=self.meta, mode="yaml")
        document = self._yaml_document()
        if document is None:
            return self
        problem = doc.form_problem(document)
        if problem:
            self.global_errors.append(problem)
            return self
        return Editor.for_document(document, meta=self.meta)

    def added(self, section: str, kind: str = "") -> Editor:
        """The document with a new row in ``section`` (a workload of ``kind``)."""
        if self.mode != "form" or section not in doc.SECTION_BY_KEY:
            return self
        document = self.document()
        items = list(doc.get_path(document, doc.SECTION_BY_KEY[section].path) or [])
        items.append(doc.new_item(section, document, kind))
        doc.set_path(document, doc.SECTION_BY_KEY[section].path, items)
        return Editor.for_document(document, meta=self.meta)

    def validated(self) -> tuple[sc.ExperimentSpec, dict[str, Any]] | None:
        """The spec and the meta data if everything is valid; else None, with every
        error attached beside its field."""
        meta_ok = self.meta.is_valid()
        forms_ok = self.mode == "yaml" or self._forms_valid()
        document = self._yaml_document() if self.mode == "yaml" else self.document()
        if document is None:
            return None
        try:
            spec = spec_parse(document=document)
        except sc.SpecError as exc:
            self.attach(exc.errors)
            return None
        if not (meta_ok and forms_ok):
            return None
        return spec, self.meta.cleaned_data

    # ------------------------------------------------------------------- document
    def document(self) -> dict[str, Any]:
        """The spec document the form tab holds (valid or not). Form mode only."""
        assert self.top is not None
        document = _item(self.top)  # the top level's optional objects too (placementStudy)
        self._rows = {}
        for key, view in self.sections.items():
            items, rows = [], []
            for index, form in enumerate(view.formset.forms):
                if not _deleted(form):
                    items.append(_ordered(_item(form), ITEM_MODELS[key]))
                    rows.append(index)
            self._rows[key] = rows
            doc.set_path(document, view.section.path, items or None)
        return _ordered(document, spec_models.ExperimentSpec)

    def _yaml_document(self) -> Any:
        assert self.yaml_form is not None
        text = self.yaml_text
        try:
            return load_document(text)
        except sc.SpecError as exc:
            self.attach(exc.errors)
            return None

    @property
    def yaml_text(self) -> str:
        assert self.yaml_form is not None
        if self.yaml_form.is_bound:
            return str(self.yaml_form.data.get(self.yaml_form.add_prefix("text"), ""))
        return str(self.yaml_form.initial.get("text", ""))

    def _forms_valid(self) -> bool:
        assert self.top is not None
        results = [self.top.is_valid()] + [v.formset.is_valid() for v in self.sections.values()]
        return all(results)

    # --------------------------------------------------------------------- errors
    def attach(self, errors: list[dict[str, str]]) -> None:
        """Put each spec error beside its field: a form field, a row, a section, the
        YAML line, or (when nothing fits) the list at the top of the page."""
        if self.mode == "yaml":
            text = self.yaml_text
            found = [YAMLError(line_of(text, e["path"]), e["path"], e["message"]) for e in errors]
            self.yaml_errors.extend(sorted(found, key=lambda e: (e.line is None, e.line or 0)))
            return
        if not self._rows and self.top is not None:
            self.document()
        for error in errors:
            self._attach_to_form(error["path"], error["message"])

    def _attach_to_form(self, path: str, message: str) -> None:
        match = _SECTION_PATH.match(path)
        if match:
            key = _KEY_BY_PATH[match["section"]]
            index = match["index"]
            rows = self._rows.get(key, [])
            if index is not None and int(index) < len(rows):
                form = self.sections[key].formset.forms[rows[int(index)]]
                _add_error(form, match["rest"], message)
                return
            if index is None and not match["rest"]:
                self.sections[key].errors.append(message)
                return
        if path == "cluster":
            self.sections["nodePools"].errors.append(message)
            return
        assert self.top is not None
        if _field_for(self.top, path):
            _add_error(self.top, path, message)
            return
        self.global_errors.append(f"{path}: {message}" if path else message)

    @property
    def has_errors(self) -> bool:
        if self.global_errors or self.yaml_errors or self.meta.errors:
            return True
        if self.mode == "yaml":
            return False
        views = self.sections.values()
        return bool(
            (self.top and self.top.errors)
            or any(v.errors or v.formset.total_error_count() for v in views)
        )

    def section_views(self) -> list[SectionView]:
        return list(self.sections.values())

    def error_links(self) -> list[ErrorLink]:
        """Every problem on the page, in page order, each linking to its field: the
        banner lists them all, so one save shows every mistake."""
        links = _form_links(self.meta, "Experiment")
        links += [ErrorLink("", message) for message in self.global_errors]
        if self.mode == "yaml":
            text_id = self.yaml_form["text"].auto_id if self.yaml_form else ""
            return links + [
                ErrorLink(
                    f"line {e.line}" if e.line else e.path or "YAML",
                    f"{e.path}: {e.message}" if e.line and e.path else e.message,
                    f"#{text_id}",
                )
                for e in self.yaml_errors
            ]
        if self.top is not None:
            links += _form_links(self.top, "Experiment", anchor="section-top")
        for view in self.sections.values():
            anchor = f"section-{view.section.key}"
            links += [
                ErrorLink(view.section.title, str(message), f"#{anchor}")
                for message in [*view.errors, *view.formset.non_form_errors()]
            ]
            for index, form in enumerate(view.formset.forms):
                name = form["name"].value() if "name" in form.fields else ""
                where = f"{view.section.item} {index + 1}" + (f" ({name})" if name else "")
                links += _form_links(
                    form, where.capitalize(), anchor=f"row-{view.section.key}-{index}"
                )
        return links


def kind_defaults() -> dict[str, dict[str, str]]:
    """Per workload kind, the text each kind-dependent field of a workload row shows
    with that kind's defaults (field name without the row prefix → text). The page
    re-applies them when the user picks another kind and says yes."""
    paths = set(doc.kind_default_paths())
    fields = {name: path for name, path in WorkloadForm.spec_fields().items() if path in paths}
    return {
        kind: {
            name: WorkloadForm.base_fields[name].format(  # type: ignore[attr-defined]
                doc.get_path(defaults, path)
            )
            for name, path in fields.items()
        }
        for kind, defaults in doc.KIND_DEFAULTS.items()
    }


# --------------------------------------------------------------------------- helpers
def _form_links(form: forms.Form, where: str, anchor: str = "") -> list[ErrorLink]:
    """A form's errors as banner lines: a field's link to the field, the others' to
    ``anchor`` (the form's box)."""
    if not form.is_bound:
        return []
    links = []
    for name, messages in form.errors.items():
        if name in form.fields:
            label = str(form.fields[name].label or name)
            links += [
                ErrorLink(f"{where}: {label}", str(m), f"#{form[name].auto_id}") for m in messages
            ]
        else:
            links += [ErrorLink(where, str(m), f"#{anchor}" if anchor else "") for m in messages]
    return links


def _top_hidden_paths() -> list[str]:
    return [*TopForm.spec_fields().values(), *(s.path for s in doc.SECTIONS)]


def _initial(
    form_class: type[SpecForm], item: Mapping[str, Any], hidden: list[str] | None = None
) -> dict[str, Any]:
    """Initial data for a form showing ``item``; the rest goes to ``extra``."""
    paths = form_class.spec_fields()
    initial = {
        name: form_class.base_fields[name].format(doc.get_path(item, path))  # type: ignore[attr-defined]
        for name, path in paths.items()
    }
    initial["extra"] = json.dumps(doc.without_paths(item, hidden or list(paths.values())))
    return initial


def _form_values(form: SpecForm) -> dict[str, Any]:
    """The document fragment a form holds: cleaned values where valid, the raw text
    where not (so switching tabs keeps it)."""
    if form.is_bound:
        form.is_valid()
    values: dict[str, Any] = {}
    for name, path in form.spec_fields().items():
        if not form.is_bound:
            value = _initial_value(form, name)
        elif name in getattr(form, "cleaned_data", {}):
            value = form.cleaned_data[name]
        else:
            value = form.data.get(form.add_prefix(name)) or None
        doc.set_path(values, path, value)
    return values


def _initial_value(form: SpecForm, name: str) -> Any:
    try:
        return form.fields[name].to_python(form.initial.get(name))
    except forms.ValidationError:
        return form.initial.get(name) or None


def _item(form: SpecForm) -> dict[str, Any]:
    """One row's item: its fields, then what ``extra`` carried, minus the optional
    sub-objects whose key field was left blank."""
    values = _form_values(form)
    item = _merge(values, _extra(form))
    for path, key_fields in form.OPTIONAL_OBJECTS.items():
        if all(doc.get_path(values, form.spec_fields()[key]) is None for key in key_fields):
            doc.pop_path(item, path)
    return item


def _extra(form: SpecForm) -> dict[str, Any]:
    raw = form.data.get(form.add_prefix("extra")) if form.is_bound else form.initial.get("extra")
    try:
        extra = json.loads(raw or "{}")
    except json.JSONDecodeError:
        return {}
    return extra if isinstance(extra, dict) else {}


def _merge(primary: dict[str, Any], extra: Mapping[str, Any]) -> dict[str, Any]:
    """``primary`` with the keys of ``extra`` it lacks, nested mappings merged."""
    merged = dict(primary)
    for key, value in extra.items():
        if key not in merged:
            merged[key] = value
        elif isinstance(merged[key], dict) and isinstance(value, Mapping):
            merged[key] = _merge(merged[key], value)
    return merged


def _ordered(item: dict[str, Any], model: type[BaseModel]) -> dict[str, Any]:
    """Keys in the spec's own order (as the YAML shows them), unknown keys last."""
    order = {(f.alias or name): i for i, (name, f) in enumerate(model.model_fields.items())}
    return dict(sorted(item.items(), key=lambda kv: order.get(kv[0], len(order))))


def _deleted(form: forms.Form) -> bool:
    if not form.is_bound:
        return False
    form.is_valid()
    return bool(getattr(form, "cleaned_data", {}).get("DELETE"))


def _field_for(form: SpecForm, rest: str) -> str | None:
    """The form field an error path inside the item points at (longest match)."""
    best = None
    for name, path in form.spec_fields().items():
        if rest == path or rest.startswith((path + ".", path + "[", path + ":")):
            best = name if best is None or len(path) > len(form.spec_fields()[best]) else best
    return best


def _add_error(form: SpecForm, rest: str, message: str) -> None:
    name = _field_for(form, rest)
    if name is None:
        form.add_error(None, f"{rest}: {message}" if rest else message)
        return
    remainder = rest[len(form.spec_fields()[name]) :].lstrip(".: ")
    form.add_error(name, f"{remainder}: {message}" if remainder else message)
