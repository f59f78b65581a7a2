"""Where the timeline lays out shares and MIG instances on a node's device slots (#18):
a share is drawn on one device, on milli-GPU ranges of it that no other share of that
device covers at the same time, and the device is the one devices.py would choose."""

from __future__ import annotations

from typing import Any

from hypothesis import given, settings
from hypothesis import strategies as st

import scheduler_core as sc
from scheduler_core import timeline
from scheduler_core.events import Reason
from scheduler_core.timeline import Span, Timeline

FULL = 1000


class Row:
    """An event log row as the reader sees it."""

    def __init__(self, time: float, reason: str, pod: str, node: str, value: float) -> None:
        self.time, self.reason, self.pod, self.node, self.value = time, reason, pod, node, value
        self.workload = pod.rsplit("-", 1)[0]
        self.related = ""


def ranges(span: Span) -> list[tuple[int, int]]:
    return list(zip(span.parts[::2], span.parts[1::2], strict=True))


def test_s16_fills_four_devices_with_a_serving_share_and_two_batch_shards() -> None:
    """The preset's own account: 600-milli serving replicas one per device, the eight
    200-milli shards fill four devices up (best fit), the 400-milli notebook takes the
    fullest device with room (device 4, on top of its 600)."""
    spec = sc.get_preset("s16-shared-gpus").spec()
    result = sc.simulate(spec, "share-of-400")
    line = timeline.for_variant(spec, "share-of-400", result.events)
    running = {s.pod: (s.slots, ranges(s)) for s in line.spans if s.state == "running"}
    for i in range(8):
        assert running[f"serving-{i}"] == ((i,), [(0, 600)])
    for i in range(8):
        assert running[f"batch-{i}"] == ((i // 2,), [(600 + 200 * (i % 2), 200)])
    assert running["notebook-0"] == ((4,), [(600, 400)])


def test_every_share_is_drawn_on_one_device_and_the_pending_notebook_nowhere() -> None:
    """The 1-GPU notebook finds no victim set: it never holds a slot, and no slot is
    left empty for a share (before, ``int(0.6)`` gave a share no slot at all)."""
    spec = sc.get_preset("s16-shared-gpus").spec()
    result = sc.simulate(spec, "one-gpu")
    line = timeline.for_variant(spec, "one-gpu", result.events)
    assert {s.workload for s in line.spans} == {"serving", "batch"}
    assert all(s.parts and len(s.slots) == 1 for s in line.spans)


def test_mig_instances_are_drawn_on_the_devices_after_the_whole_ones() -> None:
    """A node of 2 whole GPUs and {3g.40gb: 2, 1g.10gb: 1}: one MIG device, slot 2; the
    instances count 3/7 and 1/7 of it (floored to milli so they never overflow it)."""
    spec = sc.parse_spec(
        {
            "horizonSeconds": 100,
            "cluster": {"nodes": [{"name": "n", "gpus": 2, "mig": {"3g.40gb": 2, "1g.10gb": 1}}]},
            "workloads": [
                {"name": "big", "members": 2, "mig": {"3g.40gb": 1}},
                {"name": "small", "mig": {"1g.10gb": 1}},
                {"name": "whole", "gpus": 2},
            ],
        }
    )
    assert timeline.mig_devices(spec) == {"n": 1}
    result = sc.simulate(spec, "default")
    line = timeline.for_variant(spec, "default", result.events)
    drawn = {s.pod: (s.slots, ranges(s)) for s in line.spans if s.state == "running"}
    assert drawn["big-0"] == ((2,), [(0, 428)])
    assert drawn["big-1"] == ((2,), [(428, 428)])
    assert drawn["small-0"] == ((2,), [(856, 142)])
    assert drawn["whole-0"] == ((0, 1), [])


def test_a_stored_timeline_keeps_the_ranges_and_reads_rows_from_before_them() -> None:
    span = Span("n", "p", "w", "running", 0.0, 5.0, 0.3, "", (2,), (100, 300))
    data = Timeline(spans=[span]).to_json()
    assert Timeline.from_json(data).spans == [span]
    data["spans"][0] = data["spans"][0][:9]  # a row written before shares had ranges
    assert Timeline.from_json(data).spans[0].parts == ()


SHARES = st.lists(
    st.tuples(st.integers(1, 999), st.integers(0, 50), st.integers(1, 50)), max_size=40
)


@settings(max_examples=80, deadline=None)
@given(SHARES)
def test_shares_that_fit_a_device_never_overlap_on_it(shares: list[tuple[int, int, int]]) -> None:
    """Shares come and go on a 2-device node, each admitted only when some device has
    room for it (as the engine admits them): every share is drawn on one device, over
    exactly its milli, within the device, and apart from the shares there with it."""
    free = [FULL, FULL]
    events: list[Any] = []
    live: list[tuple[float, str, int, int]] = []
    for i, (milli, start, length) in enumerate(sorted(shares, key=lambda s: s[1])):
        for end, pod, device, held in sorted(live):
            if end <= start:
                events.append(Row(end, Reason.RELEASED, pod, "n", held / FULL))
                free[device] += held
                live.remove((end, pod, device, held))
        fits = [d for d in range(2) if free[d] >= milli]
        if not fits:
            continue
        device = min(fits, key=lambda d: (free[d], d))
        free[device] -= milli
        events.append(Row(start, Reason.SCHEDULED, f"s-{i}", "n", milli / FULL))
        live.append((start + length, f"s-{i}", device, milli))
    for end, pod, _, held in sorted(live):
        events.append(Row(end, Reason.RELEASED, pod, "n", held / FULL))

    spans = timeline.pod_spans(events, end=200.0, capacity={"n": 2})
    for span in spans:
        assert len(span.slots) == 1
        assert span.slots[0] < 2
        assert sum(n for _, n in ranges(span)) == round(span.gpus * FULL)
        assert all(o >= 0 and o + n <= FULL for o, n in ranges(span))
    for a in spans:
        for b in spans:
            if a.pod < b.pod and a.slots == b.slots and a.start < b.end and b.start < a.end:
                covered_a = {m for o, n in ranges(a) for m in range(o, o + n)}
                assert not covered_a & {m for o, n in ranges(b) for m in range(o, o + n)}
