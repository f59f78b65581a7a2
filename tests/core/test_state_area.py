"""The whole cluster's GPUs by pod state (``scheduler_core.state_area``): gathered by
the timeline's reader from every span, kept or past the store's budget, so the run
page's "GPUs by pod state" chart draws for every run.

- the reader's area is its spans binned (Hypothesis, random specs), and stacks to the
  GPUs the spans hold;
- a comb of periodic writes in closed form is the writes added one by one;
- the fleet preset, whose 5-minute checkpoints are past any budget, gets the area its
  whole timeline has.
"""

from __future__ import annotations

from typing import Any

import pytest
import yaml
from hypothesis import given
from hypothesis import strategies as st

import scheduler_core as sc
from scheduler_core import state_area as sa
from scheduler_core import timeline as tl
from tests.core.test_properties import specs
from tests.core.test_timeline import PROPERTY, simulated


def _close(found: sa.StateArea, expected: sa.StateArea, tolerance: float = 0.011) -> None:
    assert found.end == expected.end
    for state in sa.STATES:
        assert found.gpus[state] == pytest.approx(expected.gpus[state], abs=tolerance), state


@PROPERTY
@given(specs())
def test_the_readers_area_is_its_spans_binned_and_stacks_to_the_gpus_they_hold(
    data: dict[str, Any],
) -> None:
    spec, _, whole = simulated(data)
    assert whole.states is not None
    _close(whole.states, sa.from_spans(whole.spans, end=spec.horizon_seconds))
    # the states stack to the GPUs the base spans hold (an overlay moves GPUs, adds none)
    held = sa.from_spans([s for s in whole.spans if not s.under], end=spec.horizon_seconds)
    stacked = [sum(whole.states.gpus[s][i] for s in sa.STATES) for i in range(sa.SLICES)]
    base = [sum(held.gpus[s][i] for s in sa.BASE_STATES) for i in range(sa.SLICES)]
    assert stacked == pytest.approx(base, abs=0.06)


def test_an_area_is_a_slice_grid_of_mean_gpus_with_overlays_moved_out_of_what_they_cover():
    """4 GPUs running over [0, 100], 2 of them checkpointing over [25, 50]: the first
    half-horizon slice holds 4 GPUs, 3 running and 1 checkpointing on average."""
    spans = [
        tl.Span("n", "p", "w", "running", 0.0, 100.0, 4.0),
        tl.Span("n", "p", "w", "checkpointing", 25.0, 50.0, 2.0, under="running"),
    ]
    area = sa.from_spans(spans, end=100.0, slices=2)
    assert area.gpus["running"] == [3.0, 4.0]
    assert area.gpus["checkpointing"] == [1.0, 0.0]
    assert area.edges() == [0.0, 50.0, 100.0]
    assert sa.StateArea.from_json(yaml.safe_load(yaml.safe_dump(area.to_json()))) == area
    by_node = sa.from_spans(spans, end=100.0, slices=2, rows={"n": 0, "other": 1})
    assert by_node.groups == [[4.0, 4.0], [0.0, 0.0]]  # held: the overlay adds no GPUs
    assert sa.StateArea.from_json(yaml.safe_load(yaml.safe_dump(by_node.to_json()))) == by_node


@given(
    first=st.floats(-500, 5_000),
    cycle=st.floats(1, 2_000),
    share=st.floats(0.01, 1),
    count=st.integers(1, 300),
    gpus=st.floats(0.1, 64),
    end=st.floats(1, 20_000),
    slices=st.integers(1, 130),
)
def test_a_comb_of_periodic_writes_is_its_writes_added_one_by_one(
    first: float, cycle: float, share: float, count: int, gpus: float, end: float, slices: int
) -> None:
    length = cycle * share
    one_by_one = sa.AreaAccumulator(end, slices)
    at_once = sa.AreaAccumulator(end, slices)
    one_by_one.add("running", "", -1_000.0, 30_000.0, 100.0)
    at_once.add("running", "", -1_000.0, 30_000.0, 100.0)
    for k in range(count):
        one_by_one.add(
            "checkpointing", "running", first + k * cycle, first + k * cycle + length, gpus
        )
    at_once.add_comb("checkpointing", "running", first, cycle, length, count, gpus)
    _close(at_once.area(), one_by_one.area())


def test_the_fleet_presets_area_past_the_budget_is_its_whole_timelines():
    """s13's checkpoint-every-5m, cut to a day: 480,000 write overlays, far past a budget
    of 1,000; the area, from the group's combs in closed form, is the whole one's."""
    document = yaml.safe_load(sc.get_preset("s13-fleet-reliability").text)
    document["horizonSeconds"] = 86_400
    spec = sc.parse_spec(document)
    resolved = sc.resolve_variant(spec, "checkpoint-every-5m").spec
    events = sc.simulate(spec, "checkpoint-every-5m").events
    whole = tl.build(events, resolved)
    bounded = tl.build(events, resolved, max_spans=1_000)
    assert bounded.omitted_spans == 1_001
    assert len(whole.spans) > 400_000
    assert whole.states is not None
    assert bounded.states is not None
    assert max(bounded.states.gpus["checkpointing"]) > 0  # the writes are drawn
    _close(bounded.states, whole.states)


@PROPERTY
@given(specs(), st.integers(min_value=1, max_value=4))
def test_past_the_budget_each_row_of_nodes_keeps_the_gpus_its_spans_held(
    data: dict[str, Any], n_rows: int
) -> None:
    """The heatmap of node groups, drawn from the spans, drawn from the rows the core
    kept when it kept no spans: the same figures, for any grouping of the nodes."""
    spec, result, whole = simulated(data)
    nodes = sorted(tl.node_capacity(spec))
    rows = {node: i % n_rows for i, node in enumerate(nodes)}
    bounded = tl.build(result.events, spec, max_spans=0, node_rows=rows)
    expected = sa.from_spans(whole.spans, end=spec.horizon_seconds, rows=rows)
    assert bounded.states is not None
    if not whole.spans:
        return
    assert len(bounded.states.groups) == max(rows.values()) + 1
    for got, want in zip(bounded.states.groups, expected.groups, strict=True):
        assert got == pytest.approx(want, abs=0.011)
    # rows are kept only where the spans are not (the page draws those from the spans)
    assert tl.build(result.events, spec, node_rows=rows).states.groups == []
