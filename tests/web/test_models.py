"""The data model keeps itself tidy: deleting an experiment leaves no orphan rows."""

from __future__ import annotations

from django.contrib.auth import get_user_model

import scheduler_core as sc
from experiments import services
from experiments.models import Experiment, ExperimentTag, Replication, Run
from tests.factories import events_stored


def test_deleting_an_experiment_deletes_everything_that_hangs_off_it(
    experiment, alice, bob, django_capture_on_commit_callbacks
):
    copy = services.experiment_clone(experiment=experiment, owner=alice)
    services.experiment_update(
        experiment=experiment,
        spec=sc.parse_spec(experiment.spec),
        tags=["a", "b"],
        shared_with=[bob],
    )
    with django_capture_on_commit_callbacks(execute=True):
        services.run_enqueue(experiment=experiment, user=alice)
    assert events_stored(run__experiment=experiment) > 0

    services.experiment_delete(experiment=experiment)

    assert not Run.objects.filter(experiment_id=experiment.pk).exists()
    assert not Replication.objects.filter(run__experiment_id=experiment.pk).exists()
    assert events_stored() == 0
    assert not ExperimentTag.objects.filter(experiment_id=experiment.pk).exists()
    assert not Experiment.shared_with.through.objects.filter(experiment_id=experiment.pk).exists()
    assert get_user_model().objects.filter(username__in=["alice", "bob"]).count() == 2
    assert list(Experiment.objects.all()) == [copy]
