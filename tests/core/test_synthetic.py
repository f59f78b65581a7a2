"""The ``synthetic:`` spec section: seeded, counted, validated with paths."""

from __future__ import annotations

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from scheduler_core import SpecError, parse_spec
from scheduler_core.synthetic import MAX_NODES, expand


def document(**section):
    base = {
        "seed": 7,
        "nodes": [{"name": "gpu", "count": 10, "gpus": 8}],
        "arrivals": {"ratePerHour": 120, "durationSeconds": 3600},
        "gpuMix": {1: 0.6, 2: 0.1, 4: 0.1, 8: 0.2},
        "duration": {"medianSeconds": 1800, "sigma": 1.0},
        "kinds": {"batch": 0.7, "training": 0.2, "notebook": 0.1},
        "priorityMix": {"low": 0.8, "high": 0.2},
    }
    base.update(section)
    return {
        "priorityClasses": [{"name": "low", "value": 0}, {"name": "high", "value": 100}],
        "synthetic": base,
    }


def test_a_synthetic_section_expands_into_pools_and_workloads():
    spec = parse_spec(document())
    assert [(p.name, p.count, p.gpus) for p in spec.cluster.node_pools] == [("gpu", 10, 8)]
    assert spec.horizon_seconds == 3600.0
    assert 60 <= len(spec.workloads) <= 200  # Poisson, mean 120
    arrivals = [w.arrival for w in spec.workloads]
    assert arrivals == sorted(arrivals)
    assert {w.gpus for w in spec.workloads} <= {1, 2, 4, 8}
    assert {w.priority_class_name for w in spec.workloads} == {"low", "high"}
    assert all(w.name.startswith("syn-") for w in spec.workloads)


def test_kind_defaults_fill_what_the_mix_does_not_say():
    spec = parse_spec(document(kinds={"notebook": 1}, defaults={"notebook.startupSeconds": 7}))
    notebook = spec.workloads[0]
    assert notebook.recovery.model.value == "interactive"
    assert notebook.startup_seconds == 7.0
    assert notebook.controller.kind.value == "none"


def test_training_groups_are_all_or_nothing():
    spec = parse_spec(document(kinds={"training": 1}, membersMix={4: 1}))
    assert all(w.members == 4 and w.pod_group.min_count == 4 for w in spec.workloads)


def test_the_section_adds_to_what_the_spec_lists_itself():
    doc = document()
    doc["cluster"] = {"nodes": [{"name": "special", "gpus": 4}]}
    doc["workloads"] = [{"name": "mine", "gpus": 4}]
    doc["horizonSeconds"] = 99
    spec = parse_spec(doc)
    assert spec.cluster.nodes[0].name == "special"
    assert spec.workloads[0].name == "mine"
    assert spec.horizon_seconds == 99


@pytest.mark.parametrize(
    ("section", "path", "message"),
    [
        ({"gpuMix": {16: 1}}, "synthetic.gpuMix", "16 GPUs per member: no node has more than 8"),
        ({"gpuMix": {1: 0}}, "synthetic.gpuMix", "the shares must add up to more than 0"),
        (
            {"priorityMix": {"gold": 1}},
            "synthetic.priorityMix",
            "no PriorityClass with name 'gold' was found",
        ),
        ({"kinds": {"cron": 1}}, "synthetic.kinds.cron", None),
        ({"membersMix": {0: 1}}, "synthetic.membersMix", "group sizes must be at least 1"),
        ({"nodes": [{"count": MAX_NODES + 1}]}, "synthetic.nodes[0].count", None),
        (
            {"arrivals": {"ratePerHour": 0, "durationSeconds": 10}},
            "synthetic.arrivals.ratePerHour",
            None,
        ),
        (
            {"arrivals": {"ratePerHour": 1e6, "durationSeconds": 36000}},
            "synthetic",
            "about 10,000,000 arrivals: at most 200,000 (lower ratePerHour or durationSeconds)",
        ),
        ({"defaults": {"batch.speed": 1}}, "synthetic.defaults", None),
        ({"color": "blue"}, "synthetic.color", "unknown field"),
    ],
    ids=[
        "gpu-too-big",
        "zero-shares",
        "unknown-class",
        "unknown-kind",
        "empty-group",
        "too-many-nodes",
        "zero-rate",
        "too-many-arrivals",
        "bad-default",
        "unknown-field",
    ],
)
def test_errors_carry_paths_inside_the_section(section, path, message):
    with pytest.raises(SpecError) as caught:
        parse_spec(document(**section))
    error = caught.value.errors[0]
    assert error["path"] == path
    if message:
        assert error["message"] == message


def test_ten_thousand_nodes_are_pools_not_ten_thousand_entries():
    spec = parse_spec(
        document(
            nodes=[{"name": "a", "count": 6000, "gpus": 8}, {"name": "b", "count": 4000, "gpus": 4}]
        )
    )
    assert len(spec.cluster.node_names()) == 10_000
    assert len(spec.cluster.node_pools) == 2


SEEDS = st.integers(min_value=0, max_value=2**32 - 1)
RATES = st.floats(min_value=1, max_value=2000)


@settings(max_examples=25, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(seed=SEEDS, rate=RATES)
def test_the_same_seed_expands_to_the_same_workloads(seed, rate):
    doc = document(seed=seed, arrivals={"ratePerHour": rate, "durationSeconds": 3600})
    assert expand(doc) == expand(doc)
    assert doc["synthetic"]["seed"] == seed  # the input is not consumed


@settings(max_examples=25, deadline=None)
@given(seed=SEEDS, other=SEEDS)
def test_different_seeds_draw_different_loads(seed, other):
    if seed == other:
        return
    first = expand(document(seed=seed, arrivals={"ratePerHour": 600, "durationSeconds": 3600}))
    second = expand(document(seed=other, arrivals={"ratePerHour": 600, "durationSeconds": 3600}))
    assert first["workloads"] != second["workloads"]


@settings(max_examples=25, deadline=None)
@given(seed=SEEDS, shares=st.lists(st.floats(min_value=0.01, max_value=1), min_size=4, max_size=4))
def test_every_drawn_value_comes_from_its_mix_and_fits_the_cluster(seed, shares):
    mix = dict(zip((1, 2, 4, 8), shares, strict=True))
    data = expand(document(seed=seed, gpuMix=mix))
    for workload in data["workloads"]:
        assert workload["gpus"] in mix
        assert workload["durationSeconds"] >= 1
        assert 0 <= workload["arrival"] < 3600


def test_counts_follow_the_poisson_rate_on_average():
    counts = [
        len(
            expand(document(seed=s, arrivals={"ratePerHour": 1000, "durationSeconds": 3600}))[
                "workloads"
            ]
        )
        for s in range(20)
    ]
    assert 950 <= sum(counts) / len(counts) <= 1050
