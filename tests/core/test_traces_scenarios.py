"""Scenarios on a recorded cluster: an injected urgent group, spot reclaims on a share of
the nodes, an alternative QoS mapping -- all ordinary spec content."""

from __future__ import annotations

import io
from pathlib import Path

import pytest

from scheduler_core import events as ev
from scheduler_core import parse_spec, simulate
from scheduler_core.traces import import_trace, import_uploads
from scheduler_core.traces.qos import OPENB_QOS, MappingError
from scheduler_core.traces.scenarios import (
    ScenarioError,
    add_policy_variants,
    add_qos_variant,
    add_spot_reclaim,
    gpu_node_names,
    inject_urgent,
    parse_reclaim,
    parse_urgent,
)

FIXTURES = Path(__file__).parent / "fixtures" / "traces"
FULL_CLUSTER = (
    "\n".join(
        [
            '{"priorityClass": {"name": "batch", "value": 100}}',
            '{"node": {"name": "gpu", "gpus": 8, "count": 2}}',
            '{"node": {"name": "cpu", "gpus": 0, "count": 2}}',
            '{"job": {"name": "fill", "arrival": 0, "gpus": 8, "members": 2,'
            ' "priorityClass": "batch",'
            ' "kind": "batch", "duration": 100000}}',
        ]
    )
    + "\n"
)


@pytest.fixture(scope="module")
def recorded():
    result = import_uploads("jsonl", [(io.StringIO(FULL_CLUSTER), "cluster.jsonl")])
    return result.mapping


def test_an_injected_urgent_group_outranks_everything_and_preempts(recorded):
    spec = inject_urgent(recorded, members=2, gpus=8, arrival=600)
    urgent = spec["workloads"][-1]
    assert urgent["urgent"] is True
    assert urgent["podGroup"] == {"minCount": 2}
    assert spec["priorityClasses"][-1] == {
        "name": "urgent",
        "value": 1100,
        "description": "the injected urgent group",
    }
    assert "urgent" not in {w["name"] for w in recorded["workloads"]}  # input unchanged
    result = simulate(parse_spec(spec), "default")
    victims = {e.pod for e in result.events if e.reason == ev.PREEMPTED}
    assert victims == {"fill-0", "fill-1"}
    assert result.summary["time_to_group_scheduled"] is not None


def test_a_second_urgent_group_needs_another_name(recorded):
    spec = inject_urgent(recorded, members=1, gpus=1, arrival=0)
    with pytest.raises(ScenarioError, match="a workload named 'urgent' already exists"):
        inject_urgent(spec, members=1, gpus=1, arrival=0)


def test_spot_reclaim_picks_a_reproducible_share_of_gpu_nodes(recorded):
    spec = add_spot_reclaim(recorded, share=0.5, at=300, seed=1)
    assert [v["name"] for v in spec["variants"]] == ["recorded", "spot-reclaim-50pct-at-300s"]
    event = spec["variants"][1]["set"]["events"][0]
    assert len(event["nodes"]) == 1
    assert event["nodes"][0] in {"gpu-0", "gpu-1"}  # never a CPU node
    assert (
        event
        == add_spot_reclaim(recorded, share=0.5, at=300, seed=1)["variants"][1]["set"]["events"][0]
    )
    result = simulate(parse_spec(spec), "spot-reclaim-50pct-at-300s")
    lost = [e.node for e in result.events if e.reason == ev.NODE_LOST]
    assert lost == event["nodes"]


def test_gpu_node_names_follow_the_spec_order():
    cluster = {
        "nodePools": [{"name": "a", "count": 2, "gpus": 8}, {"name": "c", "gpus": 0}],
        "nodes": [{"name": "x", "gpus": 1}],
    }
    assert gpu_node_names(cluster) == ["a-0", "a-1", "x"]


def test_an_alternative_qos_mapping_becomes_class_overrides():
    imported = import_trace("openb", [FIXTURES / "openb_nodes.csv", FIXTURES / "openb_pods.csv"])
    alternative = OPENB_QOS.with_assignments("BE=best-effort:20000:Never")
    spec = add_qos_variant(imported.mapping, OPENB_QOS, alternative, name="be-first")
    assert spec["variants"][1] == {
        "name": "be-first",
        "set": {
            "priorityClasses.best-effort.value": 20000,
            "priorityClasses.best-effort.preemptionPolicy": "Never",
        },
    }
    parsed = parse_spec(spec)
    from scheduler_core.spec import resolve_variant

    classes = {c.name: c.value for c in resolve_variant(parsed, "be-first").spec.priority_classes}
    assert classes["best-effort"] == 20000


def test_an_alternative_that_splits_a_shared_class_is_refused_with_advice():
    merged = OPENB_QOS.with_assignments("Guaranteed=latency-sensitive")
    split = merged.with_assignments("Guaranteed=gold:50000")
    with pytest.raises(MappingError, match="class 'latency-sensitive' holds LS, Guaranteed"):
        add_qos_variant({"variants": []}, merged, split)


def test_an_identical_alternative_has_nothing_to_compare():
    with pytest.raises(ScenarioError, match="nothing to compare"):
        add_qos_variant({}, OPENB_QOS, OPENB_QOS)


def test_policy_variants_compare_preemption_policies(recorded):
    spec = add_policy_variants(recorded, ["pod", "none"])
    assert spec["variants"] == [
        {"name": "preemption-pod", "preemption": "pod"},
        {"name": "preemption-none", "preemption": "none"},
    ]


@pytest.mark.parametrize(
    ("text", "parsed"), [("4x8@3600", (4, 8, 3600.0)), (" 1 x 2 @ 0.5 ", (1, 2, 0.5))]
)
def test_urgent_shorthand(text, parsed):
    assert parse_urgent(text) == parsed


@pytest.mark.parametrize(
    ("text", "parsed"), [("0.1@7200", (0.1, 7200.0)), ("10%@60", (0.1, 60.0)), ("1@0", (1.0, 0.0))]
)
def test_reclaim_shorthand(text, parsed):
    assert parse_reclaim(text) == pytest.approx(parsed)


@pytest.mark.parametrize("text", ["0x8@1", "4x8", "four"])
def test_bad_urgent_shorthand_says_the_shape(text):
    with pytest.raises(ScenarioError, match="is not MEMBERSxGPUS@ARRIVAL"):
        parse_urgent(text)


@pytest.mark.parametrize("text", ["0@10", "1.5@10", "150%@1", "x@1"])
def test_bad_reclaim_shorthand_says_the_shape(text):
    with pytest.raises(ScenarioError, match="is not SHARE@TIME"):
        parse_reclaim(text)
