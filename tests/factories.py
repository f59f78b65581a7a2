"""factory_boy factories for the web tests, all in one place."""

from __future__ import annotations

import factory
from django.contrib.auth import get_user_model

import scheduler_core as sc
from experiments import selectors
from experiments.event_log import EventLog
from experiments.models import Experiment, Replication, Run, Status, WorkloadRecord
from experiments.specs import product_version, spec_document
from scheduler_core.metrics import RECORD_FIELDS

PRESET = "s3-grace-period"


def preset_document(preset_id: str = PRESET) -> dict:
    return spec_document(sc.get_preset(preset_id).spec())


class UserFactory(factory.django.DjangoModelFactory):
    class Meta:
        model = get_user_model()
        django_get_or_create = ("username",)
        skip_postgeneration_save = True

    username = factory.Sequence(lambda n: f"user{n}")
    email = factory.LazyAttribute(lambda user: f"{user.username}@example.com")
    password = factory.django.Password("correct horse battery staple")


class ExperimentFactory(factory.django.DjangoModelFactory):
    class Meta:
        model = Experiment
        skip_postgeneration_save = True

    owner = factory.SubFactory(UserFactory)
    spec = factory.LazyFunction(preset_document)
    name = factory.LazyAttribute(lambda experiment: experiment.spec["name"])
    description = factory.LazyAttribute(lambda experiment: experiment.spec["description"])

    @factory.post_generation
    def shared_with(self, create: bool, users: list | None, **kwargs: object) -> None:
        if create and users:
            self.shared_with.set(users)


class RunFactory(factory.django.DjangoModelFactory):
    class Meta:
        model = Run

    experiment = factory.SubFactory(ExperimentFactory)
    created_by = factory.LazyAttribute(lambda run: run.experiment.owner)
    spec = factory.LazyAttribute(lambda run: run.experiment.spec)
    product_version = factory.LazyFunction(product_version)
    status = Status.QUEUED


class ReplicationFactory(factory.django.DjangoModelFactory):
    class Meta:
        model = Replication

    run = factory.SubFactory(RunFactory)
    variant_index = 0
    variant = factory.LazyAttribute(lambda rep: sc.variant_names(sc.parse_spec(rep.run.spec))[0])
    replication = 0


def stored_events(replication: Replication) -> EventLog:
    """The event log stored with ``replication`` (empty when none is)."""
    return selectors.replication_event_log(replication_id=replication.pk)


def events_stored(**filters: object) -> int:
    """Events stored with the replications matching ``filters`` (every one without)."""
    pks = Replication.objects.filter(**filters).values_list("pk", flat=True)
    return sum(len(selectors.replication_event_log(replication_id=pk)) for pk in pks)


def stored_records(replication: Replication) -> list[dict]:
    """The per-workload records stored with ``replication``, in the simulator's order,
    as the core's ``WorkloadRecord`` dicts."""
    rows = WorkloadRecord.objects.filter(replication=replication).order_by("position")
    return list(rows.values(*RECORD_FIELDS))
