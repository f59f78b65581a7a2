"""Issue #12 acceptance: typing the event reasons changes no row of any preset's log.

The digests were recorded from the code before ``events.Reason`` existed (see
``tests/core/event_digest.py``); every field of every event must still match."""

from __future__ import annotations

import json
from pathlib import Path

from tests.core.event_digest import preset_digests

FIXTURE = Path(__file__).parent / "fixtures" / "preset_event_digests.json"


def test_every_preset_log_is_identical_to_the_recorded_one():
    recorded = json.loads(FIXTURE.read_text(encoding="utf-8"))
    now = preset_digests()
    assert sorted(now) == sorted(recorded), "a preset was added or removed"
    changed = [f"{preset} {key}" for preset, logs in recorded.items()
               for key, digest in logs.items() if now[preset].get(key) != digest]
    assert not changed, f"event logs changed: {changed}"
