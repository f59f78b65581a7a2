"""The checkpoint planner's one click: an experiment swept over a job's checkpoint
interval, saved as the user's own experiment and started through the workers.

Every number comes from ``scheduler_core.checkpoint_planner``; this module only saves
and enqueues (and passes the deployment's horizon limit, so a sweep too long for it is
refused on the planner's own field rather than on a horizon the user never typed)."""

from __future__ import annotations

from django.conf import settings
from django.contrib.auth.models import User
from django.db import transaction

import scheduler_core as sc
from experiments.models import Experiment, Run
from experiments.services.experiments import experiment_create
from experiments.services.runs import run_start
from experiments.specs import spec_document, spec_parse
from scheduler_core.checkpoint_planner import PlanRequest, plan_spec

PLAN_TAG = "checkpoint-plan"


def plan_prepare(*, experiment: Experiment, request: PlanRequest) -> sc.ExperimentSpec:
    """The swept spec, validated by the core and then by this deployment's limits.
    Raises ``sc.SpecError`` (paths ``planner.*`` for the request's own fields)."""
    spec = spec_parse(document=experiment.spec)
    planned = plan_spec(
        spec, request, max_horizon_seconds=settings.LAB_LIMITS["LAB_MAX_HORIZON_SECONDS"]
    )
    return spec_parse(document=spec_document(planned))


@transaction.atomic
def plan_start(
    *,
    experiment: Experiment,
    user: User,
    request: PlanRequest,
    rate: tuple[int, int] | None,
) -> Run:
    """Save the sweep as a new experiment of ``user`` (the original is left as it was,
    and may be someone else's, shared) and start its run, under the user's run allowance
    (``RunStartThrottledError``); nothing is saved when either step refuses."""
    planned = plan_prepare(experiment=experiment, request=request)
    tags = [PLAN_TAG, *(tag for tag in experiment.tag_names if tag not in ("preset", PLAN_TAG))]
    copy = experiment_create(
        owner=user, spec=planned, tags=tags, source_preset=experiment.source_preset
    )
    return run_start(experiment=copy, user=user, rate=rate)
