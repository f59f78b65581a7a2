"""A replication's timeline and decision records as compressed JSON blobs
(``experiments.fields.CompressedJSONField``) instead of ``jsonb``, and the timeline's
costs and recoveries as a column of their own (the work charts read them for every
replication, and a blob cannot be queried into). Rows are copied over one at a time."""

from django.db import migrations

import experiments.fields

BATCH = 20


def costs_of(timeline):
    """``models.timeline_costs_of`` as it was when this migration was written (a
    migration keeps its own copy: the model's may change later)."""
    if timeline is None:
        return None
    return {
        "version": timeline.get("version"),
        "costs": timeline.get("costs", []),
        "recoveries": timeline.get("recoveries", []),
    }


def to_blobs(apps, schema_editor):
    Replication = apps.get_model("experiments", "Replication")
    rows = Replication.objects.values_list("pk", "timeline", "decisions").order_by("pk")
    for pk, timeline, decisions in rows.iterator(chunk_size=BATCH):
        Replication.objects.filter(pk=pk).update(
            timeline_blob=timeline,
            timeline_costs=costs_of(timeline),
            decisions_blob=decisions if decisions is not None else [],
        )


def to_json(apps, schema_editor):
    Replication = apps.get_model("experiments", "Replication")
    rows = Replication.objects.values_list("pk", "timeline_blob", "decisions_blob").order_by("pk")
    for pk, timeline, decisions in rows.iterator(chunk_size=BATCH):
        Replication.objects.filter(pk=pk).update(timeline=timeline, decisions=decisions)


class Migration(migrations.Migration):
    dependencies = [
        ("experiments", "0008_run_spec_digest"),
    ]

    operations = [
        migrations.AddField(
            model_name="replication",
            name="timeline_blob",
            field=experiments.fields.CompressedJSONField(blank=True, null=True),
        ),
        migrations.AddField(
            model_name="replication",
            name="decisions_blob",
            field=experiments.fields.CompressedJSONField(blank=True, default=list),
        ),
        migrations.AddField(
            model_name="replication",
            name="timeline_costs",
            field=experiments.fields.CompressedJSONField(
                blank=True,
                help_text="the timeline's version, cost increments and recoveries "
                "(timeline_costs_of): what the work charts read of every replication, "
                "without the spans",
                null=True,
            ),
        ),
        migrations.RunPython(to_blobs, to_json, elidable=True),
        migrations.RemoveField(model_name="replication", name="timeline"),
        migrations.RemoveField(model_name="replication", name="decisions"),
        migrations.RenameField(
            model_name="replication", old_name="timeline_blob", new_name="timeline"
        ),
        migrations.RenameField(
            model_name="replication", old_name="decisions_blob", new_name="decisions"
        ),
        migrations.AlterField(
            model_name="replication",
            name="timeline",
            field=experiments.fields.CompressedJSONField(
                blank=True,
                help_text="what the time charts draw "
                "(scheduler_core.timeline.Timeline.to_json), derived when the results are "
                "stored; null for rows stored before it existed, derived on first view",
                null=True,
            ),
        ),
        migrations.AlterField(
            model_name="replication",
            name="decisions",
            field=experiments.fields.CompressedJSONField(
                blank=True,
                default=list,
                help_text="scheduler_core decision records, in order; a record's id is its index",
            ),
        ),
    ]
