"""Creating, changing, cloning and deleting experiments."""

from __future__ import annotations

from collections.abc import Iterable, Sequence

from django.contrib.auth.models import User
from django.db import transaction
from django.db.models import F
from django.utils import timezone

import scheduler_core as sc
from experiments.models import (
    FROM_PRESET_TAG,
    MAX_TAG_LENGTH,
    PRESET_TAG,
    Experiment,
    ExperimentTag,
)
from experiments.specs import MAX_NAME_LENGTH, spec_document


@transaction.atomic
def experiment_create(
    *,
    owner: User,
    spec: sc.ExperimentSpec,
    tags: Iterable[str] = (),
    shared_with: Iterable[User] = (),
    source_preset: str = "",
) -> Experiment:
    """A new experiment owned by ``owner``; ``spec`` has already passed ``spec_parse``.

    One made from a preset (other than the preset's own installed copy) is tagged
    ``from-preset``, so the list can tell the user's copies from the presets themselves."""
    experiment = Experiment.objects.create(
        owner=owner,
        name=spec.name,
        description=spec.description,
        spec=spec_document(spec),
        source_preset=source_preset,
    )
    tags = list(tags)
    if source_preset and PRESET_TAG not in tags:
        tags.append(FROM_PRESET_TAG)
    _set_tags(experiment, tags)
    experiment.shared_with.set(_others(experiment, shared_with))
    return experiment


class ExperimentChangedError(Exception):
    """The experiment is no longer at the version the edit was made on."""

    def __init__(self, expected: int, current: int) -> None:
        super().__init__(
            f"the experiment was changed since version {expected}: it is at version {current} now"
        )
        self.expected = expected
        self.current = current


@transaction.atomic
def experiment_update(
    *,
    experiment: Experiment,
    spec: sc.ExperimentSpec | None = None,
    tags: Iterable[str] | None = None,
    shared_with: Iterable[User] | None = None,
    expected_version: int | None = None,
) -> Experiment:
    """Change what is given (``None``: leave it) and count a new version. Past runs keep
    their own frozen spec.

    One conditional UPDATE writes only the given columns, so a tags-only change never
    writes back a spec it read before someone else's save; with ``expected_version`` it
    changes nothing unless the row is still at that version (``ExperimentChangedError``).
    The update locks the row until the end of the transaction, tags and sharing included.
    """
    changes: dict[str, object] = {"version": F("version") + 1, "updated_at": timezone.now()}
    if spec is not None:
        changes |= {"name": spec.name, "description": spec.description, "spec": spec_document(spec)}
    rows = Experiment.objects.filter(pk=experiment.pk)
    if expected_version is not None:
        rows = rows.filter(version=expected_version)
    if not rows.update(**changes):
        current = Experiment.objects.filter(pk=experiment.pk).values_list("version", flat=True)
        raise ExperimentChangedError(expected_version or 0, current.first() or 0)
    if tags is not None:
        _set_tags(experiment, tags)
    if shared_with is not None:
        experiment.shared_with.set(_others(experiment, shared_with))
    experiment.refresh_from_db()
    return experiment


@transaction.atomic
def experiment_clone(*, experiment: Experiment, owner: User) -> Experiment:
    """A private copy for ``owner`` (who may be someone it was shared with): same spec
    and tags, no runs, shared with nobody. The stored document is copied as it is, so a
    spec an older version wrote can still be cloned (and then fixed in the editor)."""
    name = f"{experiment.name[: MAX_NAME_LENGTH - 7]} (copy)"
    copy = Experiment.objects.create(
        owner=owner,
        name=name,
        description=experiment.description,
        spec={**experiment.spec, "name": name},
        source_preset=experiment.source_preset,
    )
    # A copy of a preset is the user's own experiment, not the preset itself.
    tags = [FROM_PRESET_TAG if tag == PRESET_TAG else tag for tag in experiment.tag_names]
    _set_tags(
        copy,
        tags if not copy.source_preset or FROM_PRESET_TAG in tags else [*tags, FROM_PRESET_TAG],
    )
    return copy


def experiment_delete(*, experiment: Experiment) -> None:
    """Delete the experiment with its runs, results and event logs (cascade)."""
    experiment.delete()


@transaction.atomic
def presets_install(*, owner: User) -> list[Experiment]:
    """One experiment per scenario preset for ``owner``; presets already installed for
    them are left alone, so this can run at every start."""
    installed = set(
        Experiment.objects.filter(owner=owner)
        .exclude(source_preset="")
        .values_list("source_preset", flat=True)
    )
    return [
        experiment_create(
            owner=owner, spec=preset.spec(), tags=[PRESET_TAG], source_preset=preset.id
        )
        for preset in sc.list_presets(studies=True)
        if preset.id not in installed
    ]


def _set_tags(experiment: Experiment, tags: Iterable[str]) -> None:
    names = sorted({tag.strip() for tag in tags if tag.strip()})
    too_long = [name for name in names if len(name) > MAX_TAG_LENGTH]
    if too_long:
        raise ValueError(f"a tag may have at most {MAX_TAG_LENGTH} characters: {too_long[0]}")
    experiment.tags.exclude(name__in=names).delete()
    existing = set(experiment.tags.values_list("name", flat=True))
    ExperimentTag.objects.bulk_create(
        [ExperimentTag(experiment=experiment, name=name) for name in names if name not in existing]
    )


def _others(experiment: Experiment, users: Iterable[User]) -> Sequence[User]:
    """Sharing with yourself means nothing; drop it rather than store it."""
    return [user for user in users if user.pk != experiment.owner_id]
