"""What every endpoint shares: the pages' lookups (404 for what you may not see, 403 for
what you may see but not change), and validating a request whose body holds a spec."""

from __future__ import annotations

from typing import Any

from django.core.exceptions import PermissionDenied
from rest_framework import serializers
from rest_framework.request import Request

import scheduler_core as sc
from experiments import selectors
from experiments.api.exceptions import ApiError, flatten_errors
from experiments.models import Run
from experiments.specs import spec_parse
from experiments.views import common as page_lookups

visible_experiment = page_lookups.visible_experiment
owned_experiment = page_lookups.owned_experiment
visible_run = page_lookups.visible_run
readable_run = page_lookups.readable_run


def owned_run(request: Request, pk: int) -> Run:
    """A run the user may see and whose experiment they own (cancel)."""
    run = visible_run(request, pk)
    if not selectors.experiment_can_edit(user=request.user, experiment=run.experiment):
        raise PermissionDenied("Only the owner may change this experiment")
    return run


def validated_with_spec(
    serializer: serializers.Serializer,
    *,
    spec_key: str = "spec",
) -> tuple[dict[str, Any], sc.ExperimentSpec | None]:
    """Validate the request fields and the spec together, like the editor does, so one
    answer lists every problem. Spec errors keep the spec's own paths
    (``workloads[0].gpus``); other fields are named by their request field."""
    fields_ok = serializer.is_valid()
    errors = [] if fields_ok else flatten_errors(serializer.errors)
    document = (
        serializer.initial_data.get(spec_key) if hasattr(serializer.initial_data, "get") else None
    )
    spec = None
    if document is not None:
        try:
            spec = spec_parse(document=document)
        except sc.SpecError as exc:
            errors.extend({"path": e["path"], "message": e["message"]} for e in exc.errors)
    if errors:
        raise ApiError(errors)
    return serializer.validated_data, spec


def user_context(request: Request) -> dict[str, Any]:
    return {"user": request.user, "request": request}
