"""A replication's timeline and decision records stored as compressed JSON blobs
(``experiments.fields.CompressedJSONField``, migration 0009), and the timeline's costs in
a column of their own (what the work charts read of every replication)."""

from __future__ import annotations

import json
import zlib

import pytest
from django.core import serializers
from django.db import connection
from django.db.migrations.executor import MigrationExecutor
from django.test.utils import CaptureQueriesContext

from experiments.fields import json_blob, json_from_blob
from experiments.models import Replication, timeline_costs_of
from experiments.selectors_charts import stored_costs
from scheduler_core.timeline import COSTS_SINCE, TIMELINE_VERSION
from tests.factories import ReplicationFactory
from tests.web.test_event_log_storage import _old_replication

TIMELINE = {
    "version": TIMELINE_VERSION,
    "omitted_spans": 0,
    "spans": [["a-0", "train", "n-1", 0.0, 5.0, "Preempted", 1, 8, [0, 1], []]],
    "preemptions": [],
    "costs": [[5.0, 12.5, 1.0]],
    "recoveries": [["train", 5.0, 12.5, 9.0, None]],
    "stranded": [],
}


def _raw(pk: int, column: str) -> bytes:
    with connection.cursor() as cursor:
        cursor.execute(f"SELECT {column} FROM experiments_replication WHERE id = %s", [pk])
        return bytes(cursor.fetchone()[0])


@pytest.mark.django_db
def test_the_columns_hold_compressed_json_and_read_back_as_the_values():
    """What is written is zlib-compressed compact JSON, not JSON text the database must
    parse; reading gives the value back, None stays None, and dumpdata writes JSON."""
    replication = ReplicationFactory()
    decisions = [{"id": 0, "kind": "preemption", "candidates": [{"node": "n-1", "cost": 1.5}]}]
    Replication.objects.filter(pk=replication.pk).update(
        timeline=TIMELINE, timeline_costs=timeline_costs_of(TIMELINE), decisions=decisions
    )

    assert json.loads(zlib.decompress(_raw(replication.pk, "timeline"))) == TIMELINE
    assert json_from_blob(_raw(replication.pk, "decisions")) == decisions
    replication.refresh_from_db()
    assert replication.timeline == TIMELINE
    assert replication.decisions == decisions
    assert replication.timeline_costs == {
        "version": TIMELINE_VERSION,
        "costs": TIMELINE["costs"],
        "recoveries": TIMELINE["recoveries"],
    }
    assert Replication.objects.values_list("timeline", flat=True).get(pk=replication.pk) == (
        TIMELINE
    )
    dumped = serializers.serialize("json", [replication])
    assert json.loads(json.loads(dumped)[0]["fields"]["timeline"]) == TIMELINE
    Replication.objects.filter(pk=replication.pk).update(timeline=None, decisions=[])
    for loaded in serializers.deserialize("json", dumped):  # loaddata
        loaded.save()
    replication.refresh_from_db()
    assert (replication.timeline, replication.decisions) == (TIMELINE, decisions)

    Replication.objects.filter(pk=replication.pk).update(timeline=None, timeline_costs=None)
    replication.refresh_from_db()
    assert replication.timeline is None
    assert replication.timeline_costs is None
    assert ReplicationFactory().decisions == []  # the default, stored as a blob too
    assert len(json_blob(TIMELINE)) < len(json.dumps(TIMELINE))


@pytest.mark.django_db
def test_the_work_charts_read_the_costs_without_the_timeline():
    """The costs of many replications are read from their own column: never the timeline,
    whose spans are megabytes per replication on a recorded cluster."""
    rows = [ReplicationFactory() for _ in range(4)]
    for row in rows[:2]:
        Replication.objects.filter(pk=row.pk).update(
            timeline=TIMELINE, timeline_costs=timeline_costs_of(TIMELINE)
        )
    old = {**timeline_costs_of(TIMELINE), "version": COSTS_SINCE - 1}
    Replication.objects.filter(pk=rows[1].pk).update(timeline_costs=old)
    # a version whose timeline is derived again, but whose costs read as this one's
    same_costs = {**timeline_costs_of(TIMELINE), "version": TIMELINE_VERSION - 1}
    Replication.objects.filter(pk=rows[3].pk).update(timeline_costs=same_costs)

    with CaptureQueriesContext(connection) as queries:
        found = stored_costs(replication_ids=[r.pk for r in rows])

    assert not any('"timeline"' in q["sql"] for q in queries.captured_queries)
    costs, recoveries = found[rows[0].pk]
    assert [list(c) for c in costs] == TIMELINE["costs"]
    assert [list(r) for r in recoveries] == TIMELINE["recoveries"]
    assert found[rows[1].pk] is None  # written by another version: derived again
    assert found[rows[2].pk] is None  # none stored
    assert [list(c) for c in found[rows[3].pk][0]] == TIMELINE["costs"]
    assert COSTS_SINCE <= TIMELINE_VERSION - 1


@pytest.mark.django_db(transaction=True)
def test_the_migration_carries_timelines_and_decisions_into_blobs_and_back():
    """0009 copies each row's jsonb timeline and decisions into blobs and the timeline's
    costs into their column; going back restores the JSON columns."""
    executor = MigrationExecutor(connection)
    before, after = (
        [("experiments", "0008_run_spec_digest")],
        [("experiments", "0009_replication_blobs")],
    )
    decisions = [{"id": 0, "kind": "failure", "message": "0/4 nodes are available"}]
    try:
        executor.migrate(before)
        old = executor.loader.project_state(before).apps
        replication = _old_replication(old)
        empty = old.get_model("experiments", "Replication").objects.create(
            run_id=replication.run_id, variant_index=0, variant="pod", replication=1
        )
        old.get_model("experiments", "Replication").objects.filter(pk=replication.pk).update(
            timeline=TIMELINE, decisions=decisions
        )

        executor = MigrationExecutor(connection)
        executor.migrate(after)

        moved = Replication.objects.get(pk=replication.pk)
        assert moved.timeline == TIMELINE
        assert moved.decisions == decisions
        assert moved.timeline_costs == timeline_costs_of(TIMELINE)
        assert json_from_blob(_raw(replication.pk, "timeline")) == TIMELINE
        blank = Replication.objects.get(pk=empty.pk)
        assert (blank.timeline, blank.timeline_costs, blank.decisions) == (None, None, [])

        executor = MigrationExecutor(connection)
        executor.migrate(before)
        back = executor.loader.project_state(before).apps.get_model("experiments", "Replication")
        restored = back.objects.get(pk=replication.pk)
        assert (restored.timeline, restored.decisions) == (TIMELINE, decisions)
        assert back.objects.get(pk=empty.pk).decisions == []
    finally:
        executor = MigrationExecutor(connection)
        executor.loader.build_graph()
        executor.migrate(executor.loader.graph.leaf_nodes())
