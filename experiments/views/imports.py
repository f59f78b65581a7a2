"""The import pages: a recorded cluster's files (issue 7), or the user's own Kubernetes
manifests and cluster snapshot (issue 11), in; an ordinary experiment out.

Uploads arrive through Django's upload handlers (in memory up to
FILE_UPLOAD_MAX_MEMORY_SIZE, streamed to a temporary file above it) and the importer
reads them row by row, so a large trace is never held whole in the request.
"""

from __future__ import annotations

from django.contrib import messages
from django.http import HttpRequest, HttpResponse
from django.shortcuts import redirect, render
from django.views.decorators.http import require_http_methods

from experiments.forms_import import DEFAULT_FIELDS, ManifestImportForm, TraceImportForm
from experiments.selectors_imports import preview_context
from experiments.services import imports as import_services
from experiments.services.import_scenarios import experiment_import_with_scenarios
from experiments.services.imports import ImportedExperiment, ImportRejectedError
from experiments.users import signed_in
from scheduler_core.k8s import ANNOTATION_NAMES
from scheduler_core.traces import FORMATS, ImportResult


@require_http_methods(["GET", "POST"])
def experiment_import(request: HttpRequest) -> HttpResponse:
    """GET: the form with every default shown. POST: import and go to the new experiment,
    or the same page (200) with every error beside its field and nothing stored."""
    posted = request.method == "POST"
    form = TraceImportForm(request.POST, request.FILES) if posted else TraceImportForm()
    if posted and form.is_valid():
        try:
            outcome = experiment_import_with_scenarios(
                owner=signed_in(request), **form.import_arguments()
            )
        except ImportRejectedError as exc:
            form.add_import_errors(exc.errors)
        else:
            return _imported(request, outcome)
    chosen = [f.name for f in request.FILES.getlist("files")]
    return render(
        request,
        "experiments/import.html",
        {
            "form": form,
            "formats": FORMATS.values(),
            "chosen_files": chosen,
            "default_columns": DEFAULT_FIELDS.values(),
        },
    )


MAX_NOTE_MESSAGES = 30


def _imported(request: HttpRequest, outcome: ImportedExperiment) -> HttpResponse:
    """To the new experiment, with what the importer noted (approximations, objects left
    out) as messages there: an import never drops a note silently."""
    experiment = outcome.experiment
    messages.success(request, f"Imported “{experiment.name}”: check it, edit it, run it.")
    notes = outcome.notes
    for note in notes[:MAX_NOTE_MESSAGES]:
        messages.info(request, f"Import note: {note}")
    if len(notes) > MAX_NOTE_MESSAGES:
        messages.info(
            request,
            f"… and {len(notes) - MAX_NOTE_MESSAGES} more import notes "
            "(the CLI and the API list them all)",
        )
    return redirect("experiments:detail", pk=experiment.pk)


@require_http_methods(["GET", "POST"])
def experiment_import_k8s(request: HttpRequest) -> HttpResponse:
    """The Kubernetes import: paste or upload manifests (and a snapshot), Preview shows
    what was read (objects per kind, the workloads, the notes, the defaults that apply,
    editable), Save stores the experiment and goes to it. Nothing is stored on an error
    or on a preview."""
    posted = request.method == "POST"
    form = ManifestImportForm(request.POST, request.FILES) if posted else ManifestImportForm()
    preview: ImportResult | None = None
    if posted and form.is_valid():
        try:
            if request.POST.get("action") == "save":
                outcome = import_services.experiment_import(
                    owner=signed_in(request), tags=form.tag_list(), **form.import_arguments()
                )
                return _imported(request, outcome)
            preview = import_services.import_read(**form.import_arguments())
        except ImportRejectedError as exc:
            form.add_import_errors(exc.errors)
    carried = form.carry() if posted and form.is_valid() else request.POST.get("carried", "")
    return render(
        request,
        "experiments/import_k8s.html",
        {
            "form": form,
            "preview": preview and preview_context(preview),
            "carried": carried,
            "not_carried": [f.name for key in request.FILES for f in request.FILES.getlist(key)]
            if not carried
            else [],
            "default_columns": DEFAULT_FIELDS.values(),
            "annotations": ANNOTATION_NAMES,
        },
    )
