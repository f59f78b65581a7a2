"""Issue #12 acceptance: typing the event reasons changes no row of any preset's log.

The digests were recorded from the code before ``events.Reason`` existed (see
``tests/core/event_digest.py``) and regenerated when issue #13 put the messages in
kube-scheduler's wording; every field of every event must still match."""

from __future__ import annotations

import json
from pathlib import Path

from tests.core.event_digest import preset_digests

FIXTURE = Path(__file__).parent / "fixtures" / "preset_event_digests.json"


def test_every_preset_log_is_identical_to_the_recorded_one():
    recorded = json.loads(FIXTURE.read_text(encoding="utf-8"))
    now = preset_digests()
    assert sorted(now) == sorted(recorded), "a preset was added or removed"
    changed = [
        f"{preset} {key}"
        for preset, logs in recorded.items()
        for key, digest in logs.items()
        if now[preset].get(key) != digest
    ]
    assert not changed, f"event logs changed: {changed}"


NO_MESSAGES = Path(__file__).parent / "fixtures" / "preset_event_digests_without_messages.json"


def test_kube_scheduler_wording_moved_nothing_but_messages():
    """Issue #13 rewrote FailedScheduling and Preempted messages in kube-scheduler's
    wording (the full digests above were regenerated then); every other field of every
    event must match the logs recorded just before (``log_digest(messages=False)``)."""
    recorded = json.loads(NO_MESSAGES.read_text(encoding="utf-8"))
    now = preset_digests(messages=False)
    changed = [
        f"{preset} {key}"
        for preset, logs in recorded.items()
        for key, digest in logs.items()
        if now.get(preset, {}).get(key) != digest
    ]
    assert not changed, f"event logs changed beyond their messages: {changed}"
