"""Checkpoint rows (issue #14, "The log"): a running segment's periodic writes are one
``CheckpointWritten`` row (the last write's time and durable progress, ``related`` the
number of writes), a group's rows name no pod, and the timeline draws every write the
row stands for, on every member of a group that was running then.

The case is S1's gang (tests/gang_case.py): the synchronous 4-member training (interval
1,800 s, write 60 s, startup 120 s) started at t=-3,500, so it is Ready at -3,380 and
writes end at -1,520 and 340; the urgent pod evicts one member at t=600."""

from __future__ import annotations

import scheduler_core as sc
from scheduler_core import events as ev
from scheduler_core import timeline as tl
from tests.gang_case import gang_document


def _run() -> tuple[sc.ExperimentSpec, list[ev.Event], tl.Timeline]:
    spec = sc.parse_spec(gang_document())
    events = sc.simulate(spec, "pod").events
    return spec, events, tl.for_variant(spec, "pod", events)


def test_a_segments_periodic_writes_are_one_row_with_their_count_and_the_last_write():
    _, events, _ = _run()
    train = [e for e in events if e.reason == ev.CHECKPOINT and e.workload == "train"]
    first = train[0]
    assert (first.time, first.value, first.related, first.pod) == (340.0, 3600.0, "2", "")
    assert all(e.pod == "" for e in train)  # the group's unit: no member's row
    shards = [e for e in events if e.reason == ev.CHECKPOINT and e.workload == "eval"]
    assert shards
    assert all(e.pod.startswith("eval-") for e in shards)  # each shard's own
    # one row per pod segment, not per write: the shards write every 62 s for hours
    written = sum(int(e.related or 1) for e in shards)
    assert len(shards) <= 3 * 8 < written


def test_the_timeline_draws_each_write_a_row_stands_for_on_every_running_member():
    spec, events, timeline = _run()
    writes = {
        (s.pod, s.start, s.end)
        for s in timeline.spans
        if s.state == "checkpointing" and s.workload == "train" and s.end <= 340.0
    }
    members = sorted({e.pod for e in events if e.workload == "train" and e.reason == ev.READY})
    assert len(members) >= 4
    first_four = [m for m in members if "-r" not in m]
    assert writes == {
        (pod, start, end) for pod in first_four for start, end in ((-1580, -1520), (280, 340))
    }
    cycle = tl.checkpoint_cycles(spec)["eval"]
    assert cycle == 62.0
    # every shard write the rows stand for is drawn once, inside its pod's running span
    drawn = [s for s in timeline.spans if s.state == "checkpointing" and s.workload == "eval"]
    rows = [e for e in events if e.reason == ev.CHECKPOINT and e.workload == "eval"]
    expected = {
        (e.pod, round(e.time - k * cycle, 6)) for e in rows for k in range(int(e.related or 1))
    }
    assert {(s.pod, round(s.end, 6)) for s in drawn} == expected
    assert len(drawn) == len(expected)
    running = {s.pod: s for s in timeline.spans if s.state == "running" and s.workload == "eval"}
    assert all(running[s.pod].start <= s.start and s.end <= running[s.pod].end for s in drawn)


def test_an_older_log_with_a_row_per_write_draws_the_same_writes():
    """Stored logs from before hold one row per write (no count): read as before."""
    spec, events, timeline = _run()
    cycle = tl.checkpoint_cycles(spec)
    expanded: list[ev.Event] = []
    for e in events:
        if e.reason != ev.CHECKPOINT or not e.related:
            expanded.append(e)
            continue
        for k in range(int(e.related) - 1, -1, -1):
            expanded.append(
                ev.Event(e.time - k * cycle[e.workload], e.reason, e.workload, e.pod, e.node)
            )
    older = tl.for_variant(spec, "pod", ev.sort_log(expanded))
    assert sorted(older.spans) == sorted(timeline.spans)
