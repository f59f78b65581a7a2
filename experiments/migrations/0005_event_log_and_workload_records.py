# Two results change shape (issue #14 "The log", #12 §4):
# - the event log moves from one RunEvent row per event to one Parquet blob per
#   replication (experiments.event_log): existing rows are carried over, replication by
#   replication, in seq order, then the table is dropped;
# - per-workload records move from a JSON array on the replication to WorkloadRecord
#   rows, one per workload, in the array's order.
# Going back rebuilds the rows and the arrays.

import django.db.models.deletion
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


_RECORD_KEYS = ("id", "replication", "position")


def _record_columns(WorkloadRecord):
    return [f for f in WorkloadRecord._meta.concrete_fields if f.name not in _RECORD_KEYS]


def _record(WorkloadRecord, pk, position, stored):
    """A row from a stored record: a field an older simulator did not write keeps its
    column's default (null where the column allows it)."""
    values = {
        f.name: stored[f.name]
        for f in _record_columns(WorkloadRecord)
        if stored.get(f.name) is not None or f.null
        if f.name in stored
    }
    return WorkloadRecord(replication_id=pk, position=position, **values)


def arrays_to_records(apps, schema_editor):
    Replication = apps.get_model("experiments", "Replication")
    WorkloadRecord = apps.get_model("experiments", "WorkloadRecord")
    stored = Replication.objects.values_list("pk", "workloads")
    for pk, records in stored.iterator(chunk_size=10):
        WorkloadRecord.objects.bulk_create(
            (_record(WorkloadRecord, pk, i, r) for i, r in enumerate(records or [])),
            batch_size=2000,
        )


def records_to_arrays(apps, schema_editor):
    Replication = apps.get_model("experiments", "Replication")
    WorkloadRecord = apps.get_model("experiments", "WorkloadRecord")
    names = [f.name for f in _record_columns(WorkloadRecord)]
    with_records = WorkloadRecord.objects.values_list("replication_id", flat=True).distinct()
    for pk in with_records.order_by("replication_id").iterator():
        records = WorkloadRecord.objects.filter(replication_id=pk).order_by("position")
        Replication.objects.filter(pk=pk).update(workloads=list(records.values(*names)))


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
        migrations.CreateModel(
            name='WorkloadRecord',
            fields=[
                ('id', models.BigAutoField(auto_created=True, primary_key=True, serialize=False, verbose_name='ID')),
                ('position', models.PositiveIntegerField()),
                ('workload', models.TextField(blank=True, default='')),
                ('kind', models.TextField(blank=True, default='')),
                ('priority_class', models.TextField(blank=True, default='')),
                ('priority', models.BigIntegerField(default=0)),
                ('members', models.BigIntegerField(default=0)),
                ('gpus_per_member', models.BigIntegerField(default=0)),
                ('urgent', models.BooleanField(default=False)),
                ('recovery', models.TextField(blank=True, default='')),
                ('arrival', models.FloatField(blank=True, default=None, null=True)),
                ('time_to_victims_selected', models.FloatField(blank=True, default=None, null=True)),
                ('time_to_victims_released', models.FloatField(blank=True, default=None, null=True)),
                ('release_latency', models.FloatField(blank=True, default=None, null=True)),
                ('time_to_group_scheduled', models.FloatField(blank=True, default=None, null=True)),
                ('time_to_group_useful', models.FloatField(blank=True, default=None, null=True)),
                ('preemption_not_helpful', models.BigIntegerField(default=0)),
                ('victims', models.BigIntegerField(default=0)),
                ('lost_work', models.FloatField(default=0.0)),
                ('stranded_capacity', models.FloatField(default=0.0)),
                ('disruptions', models.BigIntegerField(default=0)),
                ('time_to_resume', models.FloatField(blank=True, default=None, null=True)),
                ('time_to_recover', models.FloatField(blank=True, default=None, null=True)),
                ('pods_terminated', models.BigIntegerField(default=0)),
                ('restarts', models.BigIntegerField(default=0)),
                ('preempted_while_loading', models.BigIntegerField(default=0)),
                ('sessions_lost', models.BigIntegerField(default=0)),
                ('wasted_gpu_seconds', models.FloatField(default=0.0)),
                ('over_evicted_pods', models.BigIntegerField(default=0)),
                ('groups_broken', models.BigIntegerField(default=0)),
                ('premature_disruptions', models.BigIntegerField(default=0)),
                ('completion_time', models.FloatField(blank=True, default=None, null=True)),
                ('queue_wait', models.FloatField(blank=True, default=None, null=True)),
                ('useful_work', models.FloatField(default=0.0)),
                ('remaining_work', models.FloatField(default=0.0)),
                ('computed_work', models.FloatField(default=0.0)),
                ('ettr', models.FloatField(blank=True, default=None, null=True)),
                ('replication', models.ForeignKey(on_delete=django.db.models.deletion.CASCADE, related_name='workload_records', to='experiments.replication')),
            ],
            options={
                'ordering': ['replication', 'position'],
                'constraints': [models.UniqueConstraint(fields=('replication', 'position'), name='unique_record_position')],
            },
        ),
        migrations.RunPython(arrays_to_records, records_to_arrays, elidable=True),
        migrations.RemoveField(model_name="replication", name="workloads"),
    ]
