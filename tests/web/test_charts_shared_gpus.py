"""The Gantt of shared devices (#18): each share is a bar of its milli in its device's
slot, so a device shows how much of it is used, and which shares use it."""

from __future__ import annotations

import pytest

import scheduler_core as sc
from experiments.charts import spans as sp
from experiments.charts import timeline as tl
from scheduler_core import timeline as core_timeline
from tests.web.charts_support import spec_document, validated

BAND_PER_DEVICE = tl.BAND / 8


def _gantt(variant: str):
    spec = sc.get_preset("s16-shared-gpus").spec()
    result = sc.simulate(spec, variant)
    line = core_timeline.for_variant(spec, variant, result.events)
    capacity = sp.node_capacity(spec_document(spec)["cluster"])
    return validated(
        tl.gantt_figure(
            line.spans,
            line.preemptions,
            ["gpu-0"],
            capacity=capacity,
            start=0.0,
            end=float(spec.horizon_seconds),
            title="t",
        )
    )


def _running(figure):
    bars = [
        t
        for t in figure.data
        if t.name == "running" and t.showlegend is False and t.hoverinfo != "skip"
    ]
    return [
        (c[0], c[4], y, w) for t in bars for c, y, w in zip(t.customdata, t.y, t.width, strict=True)
    ]


def test_each_share_fills_its_milli_of_its_device_slot():
    """Device 0 holds serving-0 (600) and batch-0, batch-1 (200 each): three bars that
    tile the device's bar top to bottom; device 5 holds serving-5 only, 60 % of it."""
    drawn = {pod: (label, y, w) for pod, label, y, w in _running(_gantt("one-gpu"))}
    whole = 0.9 * BAND_PER_DEVICE  # what one whole GPU's bar is

    def edges(pod):
        _, y, w = drawn[pod]
        return round(y - w / 2, 3), round(y + w / 2, 3)

    top = 0.05 * BAND_PER_DEVICE
    assert edges("serving-0") == (round(top, 3), round(top + 0.6 * whole, 3))
    assert edges("batch-0") == (round(top + 0.6 * whole, 3), round(top + 0.8 * whole, 3))
    assert edges("batch-1") == (round(top + 0.8 * whole, 3), round(top + whole, 3))
    assert drawn["batch-1"][0] == "200 milli-GPU of GPU 0"
    assert drawn["serving-5"][0] == "600 milli-GPU of GPU 5"
    assert drawn["serving-5"][2] == pytest.approx(0.6 * whole, abs=1e-4)
    assert edges("serving-5")[0] == round(5 * BAND_PER_DEVICE + top, 3)


def test_shared_devices_are_framed_whole_and_the_400_milli_notebook_sits_in_device_4():
    figure = _gantt("share-of-400")
    frames = [s for s in figure.layout.shapes if s.line.color == tl.SHARED_DEVICE_LINE]
    assert len(frames) == 8  # every device holds a share
    assert [f.y1 - f.y0 for f in frames] == [pytest.approx(0.9 * BAND_PER_DEVICE, abs=2e-4)] * 8
    drawn = {pod: label for pod, label, _, _ in _running(figure)}
    assert drawn["notebook-0"] == "400 milli-GPU of GPU 4"
    running = [t for t in figure.data if t.name == "running" and t.showlegend is False]
    assert all("%{customdata[4]}" in t.hovertemplate for t in running if t.hovertemplate)


def test_whole_gpus_are_labelled_and_drawn_as_before():
    """No share, no frame; a whole-GPU bar keeps its slot's 0.9 thickness."""
    spec = sc.get_preset("s2-jump-the-queue").spec()
    name = sc.variant_names(spec)[0]
    result = sc.simulate(spec, name)
    line = core_timeline.for_variant(spec, name, result.events)
    cluster = spec_document(spec)["cluster"]
    capacity = sp.node_capacity(cluster)
    nodes = list(capacity)
    figure = validated(
        tl.gantt_figure(line.spans, [], nodes, capacity=capacity, start=0.0, end=100.0, title="t")
    )
    assert not [s for s in figure.layout.shapes if s.line.color == tl.SHARED_DEVICE_LINE]
    labels = {label for _, label, _, _ in _running(figure)}
    assert labels
    assert all(label.endswith(" GPU") and "milli" not in label for label in labels)


MIG_SPEC = {
    "horizonSeconds": 100,
    "cluster": {"nodes": [{"name": "n", "gpus": 2, "mig": {"3g.40gb": 2, "1g.10gb": 1}}]},
    "workloads": [
        {"name": "big", "members": 2, "mig": {"3g.40gb": 1}},
        {"name": "small", "mig": {"1g.10gb": 1}},
        {"name": "whole", "gpus": 2},
    ],
    "variants": [
        {"name": "default"},
        {
            "name": "two-slices",
            "set": {
                "workloads.big.members": 1,
                "workloads.small.mig": {"1g.10gb": 1, "3g.40gb": 1},
            },
        },
        {"name": "as-share", "set": {"workloads.small.mig": {}, "workloads.small.gpuMilli": 100}},
    ],
}


def test_a_mig_instance_is_named_by_its_profile_not_its_milli():
    """The 3g.40gb instances are drawn at 428 milli-GPU of MIG device 2; the hover text
    says what the pod asked for, "MIG 3g.40gb on GPU 2", not the drawing's milli."""
    spec = sc.parse_spec(MIG_SPEC)
    result = sc.simulate(spec, "default")
    line = core_timeline.for_variant(spec, "default", result.events)
    document = spec_document(spec)
    capacity = sp.node_capacity(document["cluster"])
    figure = validated(
        tl.gantt_figure(
            line.spans,
            [],
            ["n"],
            capacity=capacity,
            start=0.0,
            end=100.0,
            title="t",
            mig_labels=sp.mig_labels(document, "default"),
        )
    )
    drawn = {pod: label for pod, label, _, _ in _running(figure)}
    assert drawn["big-0"] == drawn["big-1"] == "MIG 3g.40gb on GPU 2"
    assert drawn["small-0"] == "MIG 1g.10gb on GPU 2"
    assert drawn["whole-0"] == "2 GPU"


def test_mig_labels_follow_the_variant_overrides():
    document = spec_document(sc.parse_spec(MIG_SPEC))
    assert sp.mig_labels(document) == {"big": "MIG 3g.40gb", "small": "MIG 1g.10gb"}
    assert sp.mig_labels(document, "two-slices")["small"] == "MIG 1g.10gb + 3g.40gb"
    assert "small" not in sp.mig_labels(document, "as-share")
    doubled = {**MIG_SPEC, "workloads": [{"name": "w", "mig": {"1g.10gb": 2}}], "variants": []}
    assert sp.mig_labels(doubled) == {"w": "MIG 2 x 1g.10gb"}


@pytest.mark.django_db
def test_the_timeline_endpoint_names_the_profiles_of_the_replications_variant(
    alice, alice_client, django_capture_on_commit_callbacks
):
    """The run page's timeline reads the stored spec and the replication's variant: the
    "two-slices" variant's small pod holds 1g.10gb + 3g.40gb, the default's 1g.10gb."""
    from django.urls import reverse

    from experiments import services
    from experiments.models import Replication, Status
    from tests.factories import ExperimentFactory

    experiment = ExperimentFactory(owner=alice, spec=spec_document(sc.parse_spec(MIG_SPEC)))
    with django_capture_on_commit_callbacks(execute=True):
        run = services.run_enqueue(experiment=experiment, user=alice)
    run.refresh_from_db()
    assert run.status == Status.SUCCEEDED

    def hover(variant: str) -> set[str]:
        replication = Replication.objects.filter(run=run, variant=variant).first()
        url = reverse("experiments:run-chart-timeline", args=[run.pk])
        answer = alice_client.get(url, {"replication": replication.pk}).json()
        return {
            c[4]
            for t in answer["figures"]["gantt"]["data"]
            if t.get("name") == "running" and t.get("customdata")
            for c in t["customdata"]
            if c[0].startswith("small")
        }

    assert hover("default") == {"MIG 1g.10gb on GPU 2"}
    assert hover("two-slices") == {"MIG 1g.10gb + 3g.40gb on GPU 2"}
    assert hover("as-share") == {"100 milli-GPU of GPU 0"}  # a share: its milli, as before


def test_the_event_log_says_how_many_gpus_a_lost_mig_node_takes_away():
    """NodeLost carries the node's GPUs with its MIG instances as fractions (engine,
    Node.capacity): 2 whole GPUs, two 3g.40gb and a 1g.10gb leave as 3 GPUs."""
    from experiments.charts import kubectl

    document = {
        **{k: v for k, v in MIG_SPEC.items() if k != "variants"},
        "failures": [{"kind": "trace", "csv": "50,n,20\n"}],
    }
    result = sc.simulate(sc.parse_spec(document), "default")
    rows = [
        kubectl.describe(e.as_dict())
        for e in result.events
        if e.reason in ("NodeLost", "NodeReady")
    ]
    assert [(r["reason"], r["message"]) for r in rows] == [
        ("NodeLost", "node failed: NotReady (3 GPUs)"),
        ("NodeReady", "Node Ready (3 GPUs)"),
    ]
