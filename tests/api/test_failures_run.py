"""A spec with failure models runs through the web stack (issue #17): the worker draws
each replication's failures, and the run's aggregate carries ETTR across replications."""

from __future__ import annotations

import scheduler_core as sc
from experiments import services
from experiments.models import Status
from experiments.specs import spec_document
from tests.factories import ExperimentFactory

SPEC = {
    "name": "failing fleet",
    "horizonSeconds": 86400,
    "replications": 3,
    "seed": 5,
    "cluster": {"nodePools": [{"name": "gpu", "count": 6, "gpus": 8}]},
    "workloads": [
        {
            "name": "train",
            "kind": "training",
            "members": 4,
            "gpus": 8,
            "recovery": {"model": "synchronous"},
            "startupSeconds": 300,
            "checkpoint": {"intervalSeconds": 1800, "writeSeconds": 60},
        }
    ],
    "failures": [
        {
            "interArrival": {"distribution": "exponential", "meanSeconds": 43200},
            "repair": {"distribution": "constant", "meanSeconds": 7200},
        }
    ],
}


def test_a_run_with_failure_models_redraws_them_per_replication(
    alice, django_capture_on_commit_callbacks
) -> None:
    experiment = ExperimentFactory(owner=alice, spec=spec_document(sc.parse_spec(SPEC)))
    with django_capture_on_commit_callbacks(execute=True):
        run = services.run_enqueue(experiment=experiment, user=alice)
    run.refresh_from_db()
    assert run.status == Status.SUCCEEDED, run.error
    [variant] = run.aggregate
    ettr = variant["metrics"]["ettr"]
    assert ettr["n"] == 3
    assert 0 < ettr["min"] < ettr["max"] < 1  # different failures, different ETTRs
