"""A digest of every preset's event log: the contract the typed reasons must keep.

``tests/core/fixtures/preset_event_digests.json`` was written by this module from the
code *before* the reasons became an enum; ``test_event_contract`` compares against it.
Regenerate only when a change to the event log is intended:
``python -m tests.core.event_digest > tests/core/fixtures/preset_event_digests.json``.
"""

from __future__ import annotations

import hashlib
import json

import scheduler_core as sc

REPLICATIONS = (0, 1)


def log_digest(events: object, *, messages: bool = True) -> str:
    """SHA-256 of every field of every event, in log order (reasons as plain strings);
    ``messages=False`` leaves the message text out (issue #13 rewrote it in
    kube-scheduler's wording and must move nothing else)."""
    digest = hashlib.sha256()
    for e in events:  # type: ignore[attr-defined]
        row = [e.time, str(e.reason), e.workload, e.pod, e.node, float(e.value), e.related]
        if messages:
            row.append(e.message)
        digest.update(json.dumps(row, separators=(",", ":")).encode())
        digest.update(b"\n")
    return digest.hexdigest()


def preset_digests(*, messages: bool = True) -> dict[str, dict[str, str]]:
    """preset id -> "variant#replication" -> digest, for replications 0 and 1 (two
    seeds: a change that only shows under other dice is caught too)."""
    out: dict[str, dict[str, str]] = {}
    for preset in sc.list_presets():
        spec = sc.parse_spec(preset.text)
        out[preset.id] = {
            f"{name}#{rep}": log_digest(sc.simulate(spec, name, rep).events, messages=messages)
            for name in sc.variant_names(spec)
            for rep in REPLICATIONS
        }
    return out


if __name__ == "__main__":
    print(json.dumps(preset_digests(), indent=2, sort_keys=True))
