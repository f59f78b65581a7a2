"""The checkpoint planner's form: the job, its failure model and the sweep.

The form reads what was typed (durations as people write them, ``32h``, ``1d``); the
rules of a plan (positive MTBF, a range that holds the points, a horizon within the
limits) are the core's (``scheduler_core.checkpoint_planner``), whose errors name a
``planner.<field>`` path that :meth:`PlannerForm.add_plan_errors` puts on the field."""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

from django import forms

import scheduler_core as sc
from experiments.forms_import import DurationField
from scheduler_core.checkpoint_planner import MAX_POINTS, MAX_REPLICATIONS, MIN_POINTS, PlanRequest

DISTRIBUTIONS = (
    ("exponential", "exponential (memoryless: the closed forms' assumption)"),
    ("weibull", "Weibull (shape k: < 1 infant mortality, > 1 wear-out)"),
    ("lognormal", "lognormal (sigma of the logarithm)"),
)
FIELDS = {  # the core's planner.<path> -> this form's field
    "workload": "workload",
    "mtbfSeconds": "mtbf",
    "repairSeconds": "repair",
    "distribution": "distribution",
    "shape": "shape",
    "sigma": "sigma",
    "minIntervalSeconds": "min_interval",
    "maxIntervalSeconds": "max_interval",
    "points": "points",
    "replications": "replications",
    "workSeconds": "work",
}


class PlannerForm(forms.Form):
    workload = forms.ChoiceField(label="Job", help_text="whose checkpoint interval is swept")
    work = DurationField(
        label="Work to finish",
        required=False,
        help_text="seconds of work at full strength (2d, 36h); blank: the job's own duration",
    )
    mtbf = DurationField(
        label="MTBF per node",
        help_text="mean time a node stays up between failures (32h, 90d); the job's MTBF is "
        "this over its number of nodes",
    )
    distribution = forms.ChoiceField(label="Time between failures", choices=DISTRIBUTIONS)
    shape = forms.FloatField(label="Weibull shape k", initial=1.0, required=False)
    sigma = forms.FloatField(label="Lognormal sigma", initial=1.0, required=False)
    repair = DurationField(label="Mean repair time", help_text="a failed node is back after this")
    min_interval = DurationField(label="Shortest interval", help_text="work between two writes")
    max_interval = DurationField(label="Longest interval")
    points = forms.IntegerField(
        label="Intervals",
        min_value=MIN_POINTS,
        max_value=MAX_POINTS,
        initial=12,
        help_text="evenly spaced on a log scale",
    )
    replications = forms.IntegerField(
        label="Replications per interval",
        min_value=2,
        max_value=MAX_REPLICATIONS,
        initial=50,
        help_text="each re-draws the failures; every interval sees the same draws",
    )

    def __init__(self, *args: Any, workloads: Sequence[str], **kwargs: Any) -> None:
        super().__init__(*args, **kwargs)
        workload = self.fields["workload"]
        assert isinstance(workload, forms.ChoiceField)
        workload.choices = [(name, name) for name in workloads]

    def plan_request(self) -> PlanRequest:
        """The request the core checks; call after ``is_valid()``."""
        data = self.cleaned_data
        return PlanRequest(
            workload=data["workload"],
            mtbf_seconds=data["mtbf"],
            repair_seconds=data["repair"],
            distribution=data["distribution"],
            shape=data["shape"] if data["shape"] is not None else 1.0,
            sigma=data["sigma"] if data["sigma"] is not None else 1.0,
            min_interval_seconds=data["min_interval"],
            max_interval_seconds=data["max_interval"],
            points=data["points"],
            replications=data["replications"],
            work_seconds=data["work"],
        )

    def add_plan_errors(self, errors: Sequence[dict[str, str]]) -> None:
        """The core's errors on their fields; any other (a limit of the swept spec, with
        its path) above the form."""
        for error in errors:
            path = error["path"]
            name = (
                FIELDS.get(path.removeprefix("planner.")) if path.startswith("planner.") else None
            )
            if name is not None:
                self.add_error(name, error["message"])
            else:
                self.add_error(None, f"{path}: {error['message']}" if path else error["message"])


def initial_for(*, spec: dict[str, Any], workload: str | None) -> dict[str, Any]:
    """The form's starting values from the experiment: its first random failure model
    (or a day's MTBF), and a sweep around the job's own interval."""
    model = next((f for f in spec.get("failures") or [] if f.get("interArrival")), None)
    inter = (model or {}).get("interArrival") or {}
    repair = (model or {}).get("repair") or {}
    initial: dict[str, Any] = {
        "mtbf": _text(inter.get("meanSeconds") or 86_400.0),
        "distribution": inter.get("distribution")
        if inter.get("distribution") in dict(DISTRIBUTIONS)
        else "exponential",
        "shape": inter.get("shape", 1.0),
        "sigma": inter.get("sigma", 1.0),
        "repair": _text(repair.get("meanSeconds") or 4 * 3600.0),
        "min_interval": "5m",
        "max_interval": "3h",
    }
    if workload:
        initial["workload"] = workload
    return initial


def _text(seconds: float) -> str:
    return sc.format_duration(float(seconds))
