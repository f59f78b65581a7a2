"""The typed timeline (issue #12 §1): what the charts draw, derived by the core from the
event log and the spec, checked against the log and the metrics computed from it.

- the registry of reasons covers every reason, with a Kubernetes event type and source;
- the stranded band of a synchronous gang covers exactly the interval the events give
  (the chart bug of issue #12: the replacement that became Ready was counted in);
- Hypothesis properties on random specs: concurrent spans never share a GPU slot,
  per-node GPU-seconds never exceed capacity x horizon, the stranded GPU-seconds drawn
  equal ``stranded_capacity`` and the lost work drawn equals ``lost_work``.
"""

from __future__ import annotations

import tracemalloc
from collections import defaultdict
from typing import Any

import pytest
import yaml
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

import scheduler_core as sc
from scheduler_core import events as ev
from scheduler_core import state_area as sa
from scheduler_core import timeline as tl
from scheduler_core.events import REASONS, Reason
from tests.core.test_properties import specs
from tests.gang_case import gang_document, stranded_interval_from_events

PROPERTY = settings(
    max_examples=40,
    deadline=None,
    suppress_health_check=[HealthCheck.too_slow, HealthCheck.data_too_large],
)


# ------------------------------------------------------------------------ registry
def test_every_reason_has_a_kubernetes_type_a_source_and_a_meaning():
    assert set(REASONS) == set(Reason)
    assert {info.type for info in REASONS.values()} <= {"Normal", "Warning"}
    for reason, info in REASONS.items():
        assert info.source, reason
        assert info.doc, reason
        assert bool(info.value) == bool(info.unit), f"{reason}: a value needs a unit"


def test_reasons_compare_equal_to_the_strings_stored_and_filtered_on():
    """Stored rows and API filters keep the plain strings."""
    assert Reason.STRANDED == "Stranded"
    assert str(Reason.SUSPENDED) == "WorkloadEvicted"
    assert ev.KILLING is Reason.KILLING
    assert ev.Event(1.0, Reason.READY, "w").as_dict()["reason"].__class__ is str
    assert ev.reason_info("Preempted") is REASONS[Reason.PREEMPTED]
    assert ev.reason_info("NotAReason") is None


# ------------------------------------------------------ the stranded band (issue #12)
def gang_one_member_preempted() -> sc.ExperimentSpec:
    return sc.parse_spec(gang_document())


def test_a_synchronous_gangs_stranded_band_spans_exactly_the_interval_the_events_give():
    spec = gang_one_member_preempted()
    result = sc.simulate(spec, "pod")
    events = result.events
    preempted = next(e for e in events if e.reason == Reason.PREEMPTED and e.workload == "train")
    stranded = [e for e in events if e.reason == Reason.STRANDED]
    replacement = next(
        e
        for e in events
        if e.reason == Reason.READY and e.workload == "train" and e.time > preempted.time
    )
    survivors = sorted(
        {e.pod for e in events if e.reason == Reason.READY and e.workload == "train" and e.time < 0}
        - {preempted.pod}
    )
    assert [e.time for e in stranded] == [replacement.time]

    found = tl.for_variant(spec, "pod", events)

    assert found.stranded == [
        tl.Stranded("train", preempted.time, replacement.time, 6.0, tuple(survivors))
    ]
    bands = sorted((s.pod, s.start, s.end, s.under) for s in found.spans if s.state == "stranded")
    assert bands == [(pod, preempted.time, replacement.time, "running") for pod in survivors]
    assert stranded_interval_from_events(events) == (preempted.time, replacement.time)
    assert (preempted.time, replacement.time) == (600.0, 2585.0)  # the log as it stands
    drawn = sum((s.end - s.start) * s.gpus for s in found.spans if s.state == "stranded")
    assert drawn == pytest.approx(result.summary["stranded_capacity"])


def test_a_stranded_interval_leaves_out_a_member_killed_before_it_and_one_ready_at_its_end():
    row = ev.Event
    events = [
        row(0, Reason.SCHEDULED, "w", "a", "n", 2),
        row(0, Reason.SCHEDULED, "w", "b", "n", 2),
        row(0, Reason.SCHEDULED, "w", "c", "n", 2),
        row(10, Reason.READY, "w", "a", "n"),
        row(10, Reason.READY, "w", "b", "n"),
        row(10, Reason.READY, "w", "c", "n"),
        row(20, Reason.KILLING, "w", "c", "n", 5),
        row(60, Reason.SCHEDULED, "w", "c2", "n", 2),
        row(100, Reason.READY, "w", "c2", "n"),
        row(100, Reason.STRANDED, "w", value=4 * 80.0),
    ]

    assert tl.stranded_intervals(events) == [tl.Stranded("w", 20.0, 100.0, 4.0, ("a", "b"))]


# ------------------------------------------------------------------ properties
def simulated(data: dict[str, Any]) -> tuple[sc.ExperimentSpec, sc.ReplicationResult, tl.Timeline]:
    spec = sc.parse_spec(data)
    result = sc.simulate(spec, "default")
    return spec, result, tl.for_variant(spec, "default", result.events)


def base_spans(found: tl.Timeline) -> list[tl.Span]:
    return [s for s in found.spans if s.state in sa.BASE_STATES]


@PROPERTY
@given(specs())
def test_concurrent_spans_never_share_a_gpu_slot(data: dict[str, Any]) -> None:
    spec, _, found = simulated(data)
    capacity = tl.node_capacity(spec)
    by_node: dict[str, list[tl.Span]] = defaultdict(list)
    for span in base_spans(found):
        by_node[span.node].append(span)
        assert len(span.slots) == span.gpus, span
        assert all(0 <= i < capacity[span.node] for i in span.slots), span
    for node, spans in by_node.items():
        spans.sort(key=lambda s: s.start)
        for i, a in enumerate(spans):
            for b in spans[i + 1 :]:
                if b.start >= a.end:
                    break
                if a.pod != b.pod:
                    assert not set(a.slots) & set(b.slots), (node, a, b)


@PROPERTY
@given(specs())
def test_per_node_gpu_seconds_never_exceed_capacity_times_horizon(data: dict[str, Any]) -> None:
    spec, _, found = simulated(data)
    horizon = spec.horizon_seconds
    held: dict[str, float] = defaultdict(float)
    for span in base_spans(found):
        held[span.node] += max(0.0, min(span.end, horizon) - max(span.start, 0.0)) * span.gpus
    capacity = tl.node_capacity(spec)
    for node, gpu_seconds in held.items():
        assert gpu_seconds <= capacity[node] * horizon + 1e-6, node


@PROPERTY
@given(specs())
def test_stranded_gpu_seconds_drawn_equal_the_stranded_capacity_metric(
    data: dict[str, Any],
) -> None:
    """And each band lies on a running span of its pod: stranded members are Ready."""
    _, result, found = simulated(data)
    bands = [s for s in found.spans if s.state == "stranded"]
    drawn = sum((s.end - s.start) * s.gpus for s in bands)
    assert drawn == pytest.approx(result.summary["stranded_capacity"], abs=1e-6)
    running = defaultdict(list)
    for s in base_spans(found):
        if s.state == "running":
            running[s.pod].append(s)
    for band in bands:
        assert any(
            r.start <= band.start + 1e-9 and band.end <= r.end + 1e-9 for r in running[band.pod]
        ), band


@PROPERTY
@given(specs())
def test_lost_work_drawn_equals_the_lost_work_metric(data: dict[str, Any]) -> None:
    _, result, found = simulated(data)
    assert sum(c.lost for c in found.costs) == pytest.approx(result.summary["lost_work"], abs=1e-6)
    wasted = sum(c.wasted for c in found.costs)
    assert wasted == pytest.approx(result.summary["wasted_gpu_seconds"], abs=1e-6)


@pytest.mark.parametrize("preset", [p.id for p in sc.list_presets()])
def test_every_preset_draws_the_stranded_capacity_and_lost_work_it_reports(preset):
    """The properties on the presets, which strand GPUs the random specs rarely do (S7).

    The bands are read without the checkpoint-write overlays (``pod_spans`` given no
    write times): they take no part in the sum, and the fleet preset's 5-minute writes
    alone are 24 million of them (a minute and 6.6 GB here, for nothing checked)."""
    spec = sc.get_preset(preset).spec()
    for name in sc.variant_names(spec):
        result = sc.simulate(spec, name)
        resolved = sc.resolve_variant(spec, name).spec
        bands = tl.pod_spans(
            result.events, end=resolved.horizon_seconds, capacity=tl.node_capacity(resolved)
        )
        drawn = sum((s.end - s.start) * s.gpus for s in bands if s.state == "stranded")
        assert drawn == pytest.approx(result.summary["stranded_capacity"]), name
        lost = sum(c.lost for c in tl.cost_increments(result.events))
        assert lost == pytest.approx(result.summary["lost_work"])


# --------------------------------------------------------------- the span budget
def _without_spans(found: tl.Timeline) -> tuple[Any, ...]:
    return found.preemptions, found.costs, found.recoveries, found.stranded


@PROPERTY
@given(specs(), st.integers(min_value=0, max_value=60))
def test_a_budget_keeps_every_span_or_none_and_all_the_rest(
    data: dict[str, Any], budget: int
) -> None:
    """A timeline built with a span budget is the whole one when its spans fit, else
    the same without spans, counting budget + 1 (the first span past it, where the
    reader stopped); the costs, recoveries, preemptions and stranded intervals whole."""
    spec, result, whole = simulated(data)
    bounded = tl.build(result.events, spec, max_spans=budget)
    if len(whole.spans) <= budget:
        assert bounded == whole
    else:
        assert bounded.spans == []
        assert bounded.omitted_spans == budget + 1
        assert _without_spans(bounded) == _without_spans(whole)
        # the GPUs by state, from the spans left out too (past the budget a group's
        # members are summed together, so a float may round the other way)
        assert bounded.states is not None
        assert whole.states is not None
        for state, gpus in whole.states.gpus.items():
            assert bounded.states.gpus[state] == pytest.approx(gpus, abs=0.011), state
        assert bounded.to_json(max_spans=budget) == {
            **whole.to_json(max_spans=budget),
            "omitted_spans": budget + 1,
            "states": bounded.states.to_json(),
        }


def test_a_budget_of_exactly_the_spans_keeps_them_and_one_fewer_keeps_none():
    spec = gang_one_member_preempted()
    events = sc.simulate(spec, "pod").events
    whole = tl.build(events, spec)
    assert tl.build(events, spec, max_spans=len(whole.spans)) == whole
    short = tl.build(events, spec, max_spans=len(whole.spans) - 1)
    assert (short.spans, short.omitted_spans) == ([], len(whole.spans))


def test_the_fleet_presets_checkpoints_past_the_budget_cost_what_the_budget_allows():
    """s13's 5-minute checkpoints over 54 days are 24 million write overlays: built
    whole, a minute and 6.6 GB (past a worker's 6 GB address-space cap, so the preset's
    run failed). Cut to its first 6 days (2.6 million), a reader that stopped at the
    budget allocates a few MB; one that built them all and dropped them, 700 MB."""
    document = yaml.safe_load(sc.get_preset("s13-fleet-reliability").text)
    document["horizonSeconds"] = 6 * 86_400
    spec = sc.parse_spec(document)
    events = sc.simulate(spec, "checkpoint-every-5m").events
    resolved = sc.resolve_variant(spec, "checkpoint-every-5m").spec
    tracemalloc.start()
    try:
        found = tl.build(events, resolved, max_spans=10_000)
        _, peak = tracemalloc.get_traced_memory()
    finally:
        tracemalloc.stop()
    assert (found.spans, found.omitted_spans) == ([], 10_001)
    assert len(found.stranded) == sum(e.reason == ev.STRANDED for e in events)
    assert found.costs
    assert peak < 64 * 2**20, f"{peak / 2**20:.0f} MB"


def test_a_timeline_survives_its_json_column():
    spec = gang_one_member_preempted()
    found = tl.for_variant(spec, "pod", sc.simulate(spec, "pod").events)
    stored = yaml.safe_load(yaml.safe_dump(found.to_json()))  # plain lists and numbers

    assert tl.is_current(stored)
    assert tl.Timeline.from_json(stored) == found


def test_the_event_log_page_lists_every_reason_as_the_registry_says():
    """docs/events.md is the reader's copy of the registry: it must not drift."""
    from pathlib import Path

    page = (Path(__file__).resolve().parents[2] / "docs" / "events.md").read_text()
    rows = {
        line.split("|")[1].strip().strip("`"): [c.strip() for c in line.split("|")[2:4]]
        for line in page.splitlines()
        if line.startswith("| `")
    }
    assert rows == {r.value: [info.type, info.source] for r, info in REASONS.items()}
