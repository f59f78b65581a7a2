"""The import page (issue 7): a recorded cluster's files in, an ordinary experiment out.

Uploads arrive through Django's upload handlers (in memory up to
FILE_UPLOAD_MAX_MEMORY_SIZE, streamed to a temporary file above it) and the importer
reads them row by row, so a large trace is never held whole in the request.
"""

from __future__ import annotations

from django.contrib import messages
from django.http import HttpRequest, HttpResponse
from django.shortcuts import redirect, render
from django.views.decorators.http import require_http_methods

from experiments.forms_import import DEFAULT_FIELDS, TraceImportForm
from experiments.services.import_scenarios import experiment_import_with_scenarios
from experiments.services.imports import ImportRejectedError
from experiments.users import signed_in
from scheduler_core.traces import FORMATS


@require_http_methods(["GET", "POST"])
def experiment_import(request: HttpRequest) -> HttpResponse:
    """GET: the form with every default shown. POST: import and go to the new experiment,
    or the same page (200) with every error beside its field and nothing stored."""
    posted = request.method == "POST"
    form = TraceImportForm(request.POST, request.FILES) if posted else TraceImportForm()
    if posted and form.is_valid():
        try:
            experiment = experiment_import_with_scenarios(owner=signed_in(request),
                                                          **form.import_arguments())
        except ImportRejectedError as exc:
            form.add_import_errors(exc.errors)
        else:
            messages.success(request, f"Imported “{experiment.name}”: check it, edit it, run it.")
            return redirect("experiments:detail", pk=experiment.pk)
    chosen = [f.name for f in request.FILES.getlist("files")]
    return render(request, "experiments/import.html", {
        "form": form, "formats": FORMATS.values(), "chosen_files": chosen,
        "default_columns": DEFAULT_FIELDS.values()})
