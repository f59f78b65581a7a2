"""Serializers shared by several endpoints: the spec field, tags and sharing, and the
output shapes of experiments and runs. Endpoint-specific input shapes live nested in
their views (``InputSerializer``), HackSoft style."""

from __future__ import annotations

from typing import Any, cast

from drf_spectacular.utils import extend_schema_field
from rest_framework import serializers

from experiments import selectors
from experiments.models import Experiment, Run, Status


@extend_schema_field(
    {
        "oneOf": [{"type": "object", "additionalProperties": True}, {"type": "string"}],
        "description": "the spec: a JSON object, or YAML/JSON text",
    }
)
class SpecDocumentField(serializers.JSONField):
    """A spec as the editor takes it: an object, or the YAML text of the YAML tab.
    Validation is ``scheduler_core``'s (through ``specs.spec_parse``), not ours."""


class UsernamesField(serializers.ListField):
    """Usernames in, users out; unknown names are refused, as the form does."""

    child = serializers.CharField(max_length=150)

    def to_internal_value(self, data: Any) -> list[Any]:
        names = super().to_internal_value(data)
        users, unknown = selectors.users_by_username(usernames=names)
        if unknown:
            raise serializers.ValidationError(f"no user named {', '.join(unknown)}")
        return users


class TagsField(serializers.ListField):
    """At most 50 tags of at most 50 characters (the model's column)."""

    child = serializers.CharField(max_length=50, allow_blank=False)


class MetaInputSerializer(serializers.Serializer):
    """What belongs to the experiment rather than to its spec (the form's meta part)."""

    tags = TagsField(required=False, default=list, max_length=50)
    shared_with = UsernamesField(required=False, default=list)


class ExperimentListOutputSerializer(serializers.Serializer):
    """An experiment in a list: everything but the spec (which may be large)."""

    id = serializers.IntegerField()
    name = serializers.CharField()
    description = serializers.CharField()
    owner = serializers.SerializerMethodField()
    tags = serializers.SerializerMethodField()
    source_preset = serializers.CharField()
    run_count = serializers.SerializerMethodField()
    can_edit = serializers.SerializerMethodField()
    created_at = serializers.DateTimeField()
    updated_at = serializers.DateTimeField()

    def get_owner(self, experiment: Experiment) -> str:
        return experiment.owner.get_username()

    def get_tags(self, experiment: Experiment) -> list[str]:
        return experiment.tag_names

    def get_run_count(self, experiment: Experiment) -> int:
        count = getattr(experiment, "run_count", None)
        return experiment.runs.count() if count is None else count

    def get_can_edit(self, experiment: Experiment) -> bool:
        return selectors.experiment_can_edit(user=self.context["user"], experiment=experiment)


class ExperimentOutputSerializer(ExperimentListOutputSerializer):
    """One experiment with its stored spec (camelCase, defaults written out). Who it is
    shared with is shown to its owner only, as on the page (``null`` for others)."""

    spec = serializers.JSONField()
    shared_with = serializers.SerializerMethodField()
    version = serializers.IntegerField(
        help_text="one more at every change; send it back (or the ETag as If-Match) with "
        "PUT/PATCH to refuse the edit if someone changed the experiment meanwhile"
    )

    @extend_schema_field(serializers.ListField(child=serializers.CharField(), allow_null=True))
    def get_shared_with(self, experiment: Experiment) -> list[str] | None:
        if not self.get_can_edit(experiment):
            return None
        return sorted(user.get_username() for user in experiment.shared_with.all())


class VariantProgressSerializer(serializers.Serializer):
    name = serializers.CharField()
    status = serializers.ChoiceField(choices=Status.choices)
    progress = serializers.FloatField()
    succeeded = serializers.IntegerField()
    total = serializers.IntegerField()


class RunListOutputSerializer(serializers.Serializer):
    id = serializers.IntegerField()
    experiment = serializers.IntegerField(source="experiment_id")
    status = serializers.ChoiceField(choices=Status.choices)
    is_terminal = serializers.BooleanField()
    progress = serializers.FloatField()
    error = serializers.CharField()
    created_by = serializers.SerializerMethodField()
    product_version = serializers.CharField()
    created_at = serializers.DateTimeField()
    started_at = serializers.DateTimeField(allow_null=True)
    finished_at = serializers.DateTimeField(allow_null=True)

    @extend_schema_field(serializers.CharField(allow_null=True))
    def get_created_by(self, run: Run) -> str | None:
        return run.created_by.get_username() if run.created_by else None


class RunOutputSerializer(RunListOutputSerializer):
    """A run with its live progress per variant (what the run page polls)."""

    progress = serializers.SerializerMethodField()  # type: ignore[assignment]  # live, not stored
    variants = serializers.SerializerMethodField()

    def get_progress(self, run: Run) -> float:
        return float(self._status(run)["progress"])

    @extend_schema_field(VariantProgressSerializer(many=True))
    def get_variants(self, run: Run) -> list[dict[str, Any]]:
        return self._status(run)["variants"]

    def _status(self, run: Run) -> dict[str, Any]:
        cache = cast(dict[str, Any], self.context).setdefault("_run_status", {})
        if run.pk not in cache:
            cache[run.pk] = selectors.run_status(run=run)
        return cache[run.pk]
