"""Creating, changing, cloning and deleting experiments."""

from __future__ import annotations

from collections.abc import Iterable, Sequence

from django.contrib.auth.models import AbstractBaseUser
from django.db import transaction

import scheduler_core as sc
from experiments.models import MAX_TAG_LENGTH, Experiment, ExperimentTag
from experiments.specs import MAX_NAME_LENGTH, spec_document


@transaction.atomic
def experiment_create(*, owner: AbstractBaseUser, spec: sc.ExperimentSpec,
                      tags: Iterable[str] = (), shared_with: Iterable[AbstractBaseUser] = (),
                      source_preset: str = "") -> Experiment:
    """A new experiment owned by ``owner``; ``spec`` has already passed ``spec_parse``."""
    experiment = Experiment.objects.create(
        owner=owner, name=spec.name, description=spec.description,
        spec=spec_document(spec), source_preset=source_preset)
    _set_tags(experiment, tags)
    experiment.shared_with.set(_others(experiment, shared_with))
    return experiment


@transaction.atomic
def experiment_update(*, experiment: Experiment, spec: sc.ExperimentSpec,
                      tags: Iterable[str], shared_with: Iterable[AbstractBaseUser]) -> Experiment:
    """Replace the spec, tags and sharing. Past runs keep their own frozen spec."""
    experiment.name = spec.name
    experiment.description = spec.description
    experiment.spec = spec_document(spec)
    experiment.save(update_fields=["name", "description", "spec", "updated_at"])
    _set_tags(experiment, tags)
    experiment.shared_with.set(_others(experiment, shared_with))
    return experiment


@transaction.atomic
def experiment_clone(*, experiment: Experiment, owner: AbstractBaseUser) -> Experiment:
    """A private copy for ``owner`` (who may be someone it was shared with): same spec
    and tags, no runs, shared with nobody. The stored document is copied as it is, so a
    spec an older version wrote can still be cloned (and then fixed in the editor)."""
    name = f"{experiment.name[:MAX_NAME_LENGTH - 7]} (copy)"
    copy = Experiment.objects.create(
        owner=owner, name=name, description=experiment.description,
        spec={**experiment.spec, "name": name}, source_preset=experiment.source_preset)
    _set_tags(copy, experiment.tag_names)
    return copy


def experiment_delete(*, experiment: Experiment) -> None:
    """Delete the experiment with its runs, results and event logs (cascade)."""
    experiment.delete()


@transaction.atomic
def presets_install(*, owner: AbstractBaseUser) -> list[Experiment]:
    """One experiment per scenario preset for ``owner``; presets already installed for
    them are left alone, so this can run at every start."""
    installed = set(Experiment.objects.filter(owner=owner).exclude(source_preset="")
                    .values_list("source_preset", flat=True))
    return [experiment_create(owner=owner, spec=preset.spec(), tags=["preset"],
                              source_preset=preset.id)
            for preset in sc.list_presets() if preset.id not in installed]


def _set_tags(experiment: Experiment, tags: Iterable[str]) -> None:
    names = sorted({tag.strip() for tag in tags if tag.strip()})
    too_long = [name for name in names if len(name) > MAX_TAG_LENGTH]
    if too_long:
        raise ValueError(f"a tag may have at most {MAX_TAG_LENGTH} characters: {too_long[0]}")
    experiment.tags.exclude(name__in=names).delete()
    existing = set(experiment.tags.values_list("name", flat=True))
    ExperimentTag.objects.bulk_create(
        [ExperimentTag(experiment=experiment, name=name) for name in names if name not in existing])


def _others(experiment: Experiment,
            users: Iterable[AbstractBaseUser]) -> Sequence[AbstractBaseUser]:
    """Sharing with yourself means nothing; drop it rather than store it."""
    return [user for user in users if user.pk != experiment.owner_id]
