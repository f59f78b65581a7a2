"""The timeline stored with each replication (issue #12 §1): the worker derives it when
it stores the results, pages draw it without reading the event log, and a row stored
before timelines existed gets one on its first view. The stranded band of a synchronous
gang, drawn from it, covers exactly the interval the events give."""

from __future__ import annotations

from pathlib import Path

import pytest
from django.core.cache import cache
from django.urls import reverse

import scheduler_core as sc
from experiments import services
from experiments.models import Replication, Status
from experiments.services.timelines import replication_costs
from scheduler_core import timeline as core_timeline
from tests.factories import ExperimentFactory, preset_document, stored_events
from tests.gang_case import gang_document, stranded_interval_from_events
from tests.web.charts_support import big_cluster_spec


@pytest.fixture(autouse=True)
def _fresh_cache():
    cache.clear()


def _finished(document, user, capture):
    experiment = ExperimentFactory(owner=user, spec=document)
    with capture(execute=True):
        run = services.run_enqueue(experiment=experiment, user=user)
    run.refresh_from_db()
    assert run.status == Status.SUCCEEDED
    return run


def _timeline(client, run, replication):
    answer = client.get(
        reverse("experiments:run-chart-timeline", args=[run.pk]), {"replication": replication.pk}
    )
    assert answer.status_code == 200
    return answer.json()


def _stranded_bars(answer):
    bars = next(
        t
        for t in answer["figures"]["gantt"]["data"]
        if t["name"] == "stranded" and t["type"] == "bar"
    )
    return sorted(
        (c[0], b, b + x)
        for c, b, x in zip(bars["customdata"], bars["base"], bars["x"], strict=True)
    )


def test_the_worker_stores_the_timeline_the_core_derives(alice, django_capture_on_commit_callbacks):
    run = _finished(
        preset_document("s1-training-vs-shards"), alice, django_capture_on_commit_callbacks
    )
    spec = sc.parse_spec(run.spec)

    for replication in run.replications.all():
        expected = core_timeline.for_variant(
            spec, replication.variant, sc.simulate(spec, replication.variant, 0).events
        )
        assert core_timeline.is_current(replication.timeline)
        assert core_timeline.Timeline.from_json(replication.timeline) == expected


def test_a_page_draws_the_stored_timeline_without_the_event_log(
    alice, alice_client, django_capture_on_commit_callbacks
):
    run = _finished(
        preset_document("s1-training-vs-shards"), alice, django_capture_on_commit_callbacks
    )
    replication = run.replications.get(variant="pod")
    before = _timeline(alice_client, run, replication)
    cache.clear()
    Replication.objects.filter(pk=replication.pk).update(event_log=None)  # nothing to derive from

    after = _timeline(alice_client, run, replication)

    assert after == before
    victims = next(t for t in after["figures"]["gantt"]["data"] if t["name"] == "victim")
    assert len(victims["customdata"]) == 4


def test_a_replication_stored_without_a_timeline_gets_one_on_its_first_view(
    alice, alice_client, django_capture_on_commit_callbacks
):
    run = _finished(gang_document(), alice, django_capture_on_commit_callbacks)
    replication = run.replications.get()
    stored = replication.timeline
    drawn = _timeline(alice_client, run, replication)
    Replication.objects.filter(pk=replication.pk).update(timeline=None)  # an older row
    cache.clear()

    assert _timeline(alice_client, run, replication) == drawn
    replication.refresh_from_db()
    assert replication.timeline == stored


def test_cost_figures_read_the_stored_costs(
    alice, alice_client, django_capture_on_commit_callbacks
):
    run = _finished(gang_document(), alice, django_capture_on_commit_callbacks)
    replication = run.replications.get()
    Replication.objects.filter(pk=replication.pk).update(event_log=None)

    figures = replication_costs(replication_ids=[replication.pk])

    costs, recoveries = figures[replication.pk]
    assert sum(c.lost for c in costs) == pytest.approx(replication.summary["lost_work"])
    assert [(r.workload, r.time) for r in recoveries] == [("train", 600.0)]


def test_a_synchronous_gangs_stranded_band_is_the_interval_the_events_give(
    alice, alice_client, django_capture_on_commit_callbacks
):
    """The issue's chart bug: the survivors were drawn running until ~1,096 s because the
    replacement Ready at the interval's end was counted among the GPUs held."""
    run = _finished(gang_document(), alice, django_capture_on_commit_callbacks)
    replication = run.replications.get()
    start, end = stranded_interval_from_events(stored_events(replication))

    answer = _timeline(alice_client, run, replication)

    assert _stranded_bars(answer) == [
        (pod, start, end) for pod in ("train-0", "train-1", "train-2")
    ]
    states = {t["name"]: t for t in answer["figures"]["states"]["data"]}
    inside = [
        i for i, x in enumerate(states["stranded"]["x"]) if start + 15 < x < end - 15
    ]  # slices wholly inside (30 s wide)
    assert {states["stranded"]["y"][i] for i in inside} == {6.0}
    before = [i for i, x in enumerate(states["stranded"]["x"]) if x < start - 15]
    assert {states["stranded"]["y"][i] for i in before} == {0.0}


def test_a_timeline_over_the_span_budget_is_stored_without_its_spans(
    alice, alice_client, django_capture_on_commit_callbacks, settings
):
    """A 2,000-member gang failing 460 times has a million pod spans (158 MB of JSON):
    above LAB_MAX_STORED_TIMELINE_SPANS the row keeps the costs and preemptions, and
    the page says spans were left out instead of drawing half a picture. The worker
    builds no more spans than the budget: the row counts budget + 1, where it stopped."""
    settings.LAB_MAX_STORED_TIMELINE_SPANS = 2
    run = _finished(preset_document("s3-grace-period"), alice, django_capture_on_commit_callbacks)
    replication = run.replications.order_by("variant_index").first()

    stored = Replication.objects.values_list("timeline", flat=True).get(pk=replication.pk)
    full = core_timeline.for_variant(
        sc.parse_spec(run.spec), replication.variant, list(stored_events(replication))
    )

    assert stored["spans"] == []
    assert len(full.spans) > 2
    assert stored["omitted_spans"] == 3
    assert stored["costs"] == [list(c) for c in full.costs]
    assert stored["stranded"] == full.to_json()["stranded"]
    answer = _timeline(alice_client, run, replication)
    title = answer["figures"]["gantt"]["layout"]["title"]["text"]
    assert "not drawn: 3 pod spans or more, past LAB_MAX_STORED_TIMELINE_SPANS" in title
    # the whole cluster's GPUs by state still draw: the core gathered them from every
    # span, those left out too
    assert full.states is not None
    drawn = {t["name"]: t["y"][:-1] for t in answer["figures"]["states"]["data"]}
    assert drawn == full.states.gpus
    assert any(drawn["running"])
    assert any(drawn["terminating"])
    assert "not drawn" not in answer["figures"]["states"]["layout"]["title"]["text"]


def test_a_large_clusters_heatmap_past_the_span_budget_is_the_one_its_spans_draw(
    alice, alice_client, django_capture_on_commit_callbacks, settings
):
    """80 nodes in two pools: a heatmap of node groups, drawn from the spans. Past the
    budget the worker stored each group's GPUs held instead (the core's rows are the
    page's groups), and the heatmap draws the same shares; only the Gantt is not drawn."""
    whole_run = _finished(big_cluster_spec(), alice, django_capture_on_commit_callbacks)
    settings.LAB_MAX_STORED_TIMELINE_SPANS = 2
    cut_run = _finished(big_cluster_spec(), alice, django_capture_on_commit_callbacks)

    drawn = _timeline(alice_client, whole_run, whole_run.replications.get())
    cut = _timeline(alice_client, cut_run, cut_run.replications.get())

    stored = Replication.objects.values_list("timeline", flat=True).get(run=cut_run)
    assert stored["spans"] == []
    assert len(stored["states"]["groups"]) == 2
    heatmap, expected = cut["figures"]["occupancy"]["data"][0], drawn["figures"]["occupancy"]
    assert heatmap["y"] == expected["data"][0]["y"]
    assert heatmap["x"] == expected["data"][0]["x"]
    for row, want in zip(heatmap["z"], expected["data"][0]["z"], strict=True):
        assert row == pytest.approx(want, abs=0.002)
    assert any(v > 0.5 for row in heatmap["z"] for v in row)
    assert "not drawn" not in cut["figures"]["occupancy"]["layout"]["title"]["text"]
    assert "not drawn" in cut["figures"]["gantt"]["layout"]["title"]["text"]


def test_under_the_budget_every_span_is_kept():
    timeline = core_timeline.Timeline(spans=[], costs=[])
    assert core_timeline.Timeline.from_json(timeline.to_json(max_spans=0)).omitted_spans == 0


@pytest.mark.slow
def test_the_fleet_preset_runs_within_a_workers_address_space_cap(
    alice, django_capture_on_commit_callbacks, settings
):
    """s13's 5-minute checkpoints over 54 days are 24 million write overlays: a worker
    that built them all before storing none died of MemoryError under its default 6 GB
    cap (RLIMIT_AS, as a pool process has it), so the shipped preset's run failed."""
    import resource

    settings.LAB_MAX_STORED_TIMELINE_SPANS = 200_000
    soft, hard = resource.getrlimit(resource.RLIMIT_AS)
    # 6 GB on top of what this test process has mapped already (a pool process starts
    # small; the suite's process has grown by the time this runs).
    status = Path("/proc/self/status").read_text()
    mapped = int(
        next(line for line in status.splitlines() if line.startswith("VmSize:")).split()[1]
    )
    cap = mapped * 1024 + 6144 * 2**20
    resource.setrlimit(resource.RLIMIT_AS, (cap if hard < 0 or hard > cap else hard, hard))
    try:
        run = _finished(
            preset_document("s13-fleet-reliability"), alice, django_capture_on_commit_callbacks
        )
    finally:
        resource.setrlimit(resource.RLIMIT_AS, (soft, hard))
    stored = Replication.objects.filter(run=run, variant="checkpoint-every-5m").values_list(
        "timeline", flat=True
    )
    assert [t["omitted_spans"] for t in stored] == [200_001]
    # its 24 million writes are in the GPUs by state, a 5-minute cycle's share of them
    writing = [max(t["states"]["gpus"]["checkpointing"]) for t in stored]
    assert writing
    assert all(w > 0 for w in writing)
