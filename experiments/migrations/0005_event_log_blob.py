# The event log moves from one RunEvent row per event to one Parquet blob per
# replication (experiments.event_log). Existing rows are carried over, replication by
# replication, in seq order, then the table is dropped. Going back rebuilds the rows.

from django.db import migrations, models

from experiments import event_log

_FIELDS = ("time", "reason", "workload", "pod", "node", "value", "related", "message", "decision")


def rows_to_blobs(apps, schema_editor):
    Replication = apps.get_model("experiments", "Replication")
    RunEvent = apps.get_model("experiments", "RunEvent")
    with_events = RunEvent.objects.values_list("replication_id", flat=True).distinct()
    for pk in with_events.order_by("replication_id").iterator():
        rows = (
            RunEvent.objects.filter(replication_id=pk).order_by("seq").values_list(*_FIELDS)
        )
        blob = event_log.encode(rows.iterator(chunk_size=20_000))
        Replication.objects.filter(pk=pk).update(event_log=blob)


def blobs_to_rows(apps, schema_editor):
    Replication = apps.get_model("experiments", "Replication")
    RunEvent = apps.get_model("experiments", "RunEvent")
    stored = Replication.objects.exclude(event_log=None).values_list("pk", "event_log")
    for pk, blob in stored.iterator(chunk_size=10):
        RunEvent.objects.bulk_create(
            (
                RunEvent(replication_id=pk, **{f: getattr(e, f) for f in ("seq", *_FIELDS)})
                for e in event_log.EventLog.decode(blob)
            ),
            batch_size=5000,
        )


class Migration(migrations.Migration):
    dependencies = [
        ("experiments", "0004_decisions"),
    ]

    operations = [
        migrations.AddField(
            model_name="replication",
            name="event_log",
            field=models.BinaryField(
                blank=True,
                editable=False,
                help_text="the whole event log as one zstd Parquet file "
                "(experiments.event_log); null until the results are stored",
                null=True,
            ),
        ),
        migrations.RunPython(rows_to_blobs, blobs_to_rows, elidable=True),
        migrations.DeleteModel(name="RunEvent"),
    ]
