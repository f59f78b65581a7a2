"""Experiment pages: list, presets, the editor (new / edit), detail, clone, delete, run."""

from __future__ import annotations

from typing import Any

from django.contrib import messages
from django.http import HttpRequest, HttpResponse
from django.shortcuts import redirect, render
from django.views.decorators.http import require_GET, require_http_methods, require_POST

import scheduler_core as sc
from experiments import selectors, selectors_k8s, services
from experiments.api.throttles import run_start_rate
from experiments.editor import Editor, MetaForm, blank_document
from experiments.editor.document import KIND_LABELS
from experiments.editor.editor import kind_defaults
from experiments.models import Experiment
from experiments.selectors_run_page import SPEC_SHOWN_CHARS
from experiments.specs import preset_or_none, spec_yaml_within
from experiments.users import signed_in
from experiments.views.common import owned_experiment, visible_experiment


@require_GET
def experiment_list(request: HttpRequest) -> HttpResponse:
    filters = {key: request.GET.get(key, "").strip() for key in ("q", "tag", "owner")}
    experiments = selectors.experiment_list(user=request.user, filters=filters)
    return render(
        request,
        "experiments/experiment_list.html",
        {
            "experiments": experiments,
            "filters": filters,
            "presets": selectors.presets_to_offer(user=request.user),
        },
    )


@require_http_methods(["GET", "POST"])
def experiment_new(request: HttpRequest) -> HttpResponse:
    if request.method == "POST":
        return _editor_post(request, experiment=None)
    preset_id = request.GET.get("preset", "")
    preset = preset_or_none(preset_id)
    document = preset.spec().model_dump(mode="json", by_alias=True) if preset else blank_document()
    return _editor_page(
        request,
        Editor.for_document(document),
        experiment=None,
        source_preset=preset.id if preset else "",
    )


@require_http_methods(["GET", "POST"])
def experiment_edit(request: HttpRequest, pk: int) -> HttpResponse:
    experiment = owned_experiment(request, pk)
    if request.method == "POST":
        return _editor_post(request, experiment=experiment)
    meta = MetaForm(
        prefix="meta",
        initial={
            "tags": ", ".join(experiment.tag_names),
            "shared_with": ", ".join(u.get_username() for u in experiment.shared_with.all()),
        },
    )
    return _editor_page(
        request,
        Editor.for_document(experiment.spec, meta=meta),
        experiment=experiment,
        source_preset=experiment.source_preset,
        version=experiment.version,
    )


def _editor_post(request: HttpRequest, *, experiment: Experiment | None) -> HttpResponse:
    """Every button of the editor posts here; only *Save* may leave the page. The hidden
    ``version`` is the one the page was opened on: a save over a newer one is refused."""
    editor = Editor.from_post(request.POST)
    source_preset = request.POST.get("source_preset", "")[:100]
    version = _posted_version(request, experiment)
    page: dict[str, Any] = {
        "experiment": experiment,
        "source_preset": source_preset,
        "version": version,
    }
    action, _, argument = request.POST.get("action", "save").partition(":")
    if action == "tab":
        return _editor_page(request, editor.switched(argument), **page)
    if action == "add":
        section, _, kind = argument.partition(":")
        return _editor_page(request, editor.added(section, kind), **page)
    valid = editor.validated()
    if valid is None:
        return _editor_page(request, editor, **page)
    spec, meta = valid
    if experiment is None:
        experiment = services.experiment_create(
            owner=signed_in(request),
            spec=spec,
            tags=meta["tags"],
            shared_with=meta["shared_with"],
            source_preset=source_preset if preset_or_none(source_preset) else "",
        )
        messages.success(request, f"Created “{experiment.name}”.")
        return redirect("experiments:detail", pk=experiment.pk)
    try:
        services.experiment_update(
            experiment=experiment,
            spec=spec,
            tags=meta["tags"],
            shared_with=meta["shared_with"],
            expected_version=version,
        )
    except services.ExperimentChangedError as exc:
        # Keep what was typed; the next Save is a deliberate overwrite of the new version.
        return _editor_page(
            request, editor, **{**page, "version": exc.current}, conflict=exc, status=409
        )
    messages.success(request, f"Saved “{experiment.name}”.")
    return redirect("experiments:detail", pk=experiment.pk)


def _posted_version(request: HttpRequest, experiment: Experiment | None) -> int | None:
    """The version the editor was opened on; a form without one (an old tab) edits the
    current version, as before versions existed."""
    if experiment is None:
        return None
    posted = request.POST.get("version", "").strip()
    return int(posted) if posted.isdigit() and len(posted) < 12 else experiment.version


def _editor_page(
    request: HttpRequest,
    editor: Editor,
    experiment: Experiment | None,
    source_preset: str,
    version: int | None = None,
    conflict: services.ExperimentChangedError | None = None,
    status: int = 200,
) -> HttpResponse:
    return render(
        request,
        "experiments/experiment_form.html",
        {
            "editor": editor,
            "experiment": experiment,
            "source_preset": source_preset,
            "kinds": KIND_LABELS.items(),
            "version": version,
            "conflict": conflict,
            "kind_defaults": kind_defaults(),
            "kind_labels": KIND_LABELS,
        },
        status=status,
    )


@require_GET
def experiment_detail(request: HttpRequest, pk: int) -> HttpResponse:
    experiment = visible_experiment(request, pk)
    context: dict[str, Any] = {
        "experiment": experiment,
        "can_edit": selectors.experiment_can_edit(user=request.user, experiment=experiment),
        "runs": selectors.run_list(experiment=experiment),
        # a recorded cluster's spec is megabytes: past the page's budget the page links
        # to the download instead (as a run's page does)
        "spec_yaml": spec_yaml_within(experiment.spec, SPEC_SHOWN_CHARS) or "",
        "facts": selectors.experiment_facts(experiment=experiment),
        "manifest_variants": selectors_k8s.manifest_variants(spec_document=experiment.spec),
    }
    return render(request, "experiments/experiment_detail.html", context)


@require_POST
def experiment_clone(request: HttpRequest, pk: int) -> HttpResponse:
    copy = services.experiment_clone(
        experiment=visible_experiment(request, pk), owner=signed_in(request)
    )
    messages.success(request, f"Cloned into “{copy.name}”; it is yours to edit.")
    return redirect("experiments:edit", pk=copy.pk)


@require_http_methods(["GET", "POST"])
def experiment_delete(request: HttpRequest, pk: int) -> HttpResponse:
    experiment = owned_experiment(request, pk)
    if request.method == "POST":
        name = experiment.name
        services.experiment_delete(experiment=experiment)
        messages.success(request, f"Deleted “{name}” with its runs and results.")
        return redirect("experiments:list")
    return render(
        request,
        "experiments/experiment_confirm_delete.html",
        {"experiment": experiment, "run_count": experiment.runs.count()},
    )


@require_POST
def experiment_run(request: HttpRequest, pk: int) -> HttpResponse:
    experiment = owned_experiment(request, pk)
    try:
        run = services.run_start(
            experiment=experiment, user=signed_in(request), rate=run_start_rate()
        )
    except sc.SpecError as exc:
        for error in exc.errors:
            messages.error(request, f"Cannot run: {error['path']}: {error['message']}")
        return redirect("experiments:detail", pk=experiment.pk)
    except services.RunStartThrottledError as exc:
        messages.error(
            request,
            f"Cannot run: you started too many runs recently "
            f"(LAB_API_RUN_START_RATE); try again in {exc.retry_after:.0f} s.",
        )
        return redirect("experiments:detail", pk=experiment.pk)
    return redirect("experiments:run", pk=run.pk)
