"""Reshaping a recorded load before it becomes a spec: compress its arrivals, sample it
down. Recorded clusters are often lightly loaded (openb's pods arrive over weeks), and a
trace can hold more workloads than an instance allows; both are choices the user makes
on the import, recorded in the notes.

- ``compress`` N: every arrival time is divided by N, and so is the horizon the trace
  gave (not one the user set), so the same workloads arrive N times as densely. Their
  durations are kept: that is what raises the load.
- ``sample`` N: at most N workloads are kept, drawn with ``sample_seed`` and kept in
  trace order; the initial-state pods of the others go with them.
"""

from __future__ import annotations

import math
import random
from typing import Any

from scheduler_core.traces.build import Provenance
from scheduler_core.traces.options import Draft, ImportOptions


def reshape_load(draft: Draft, options: ImportOptions) -> None:
    """Apply ``options.compress`` and ``options.sample`` to ``draft`` in place."""
    if options.compress != 1.0:
        _compress(draft, options.compress, user_horizon=options.horizon_seconds is not None)
    if options.sample is not None and len(draft.workloads) > options.sample:
        _sample(draft, options.sample, options.sample_seed)


def _compress(draft: Draft, factor: float, *, user_horizon: bool) -> None:
    for workload in draft.workloads:
        if workload.get("arrival"):
            workload["arrival"] = round(workload["arrival"] / factor, 3)
    if not user_horizon:
        draft.horizon_seconds = max(1.0, round(draft.horizon_seconds / factor, 3))
    draft.notes.append(
        f"arrivals compressed x{factor:g}: each arrival time divided by "
        f"{factor:g} (durations kept), horizon {draft.horizon_seconds:,.0f}s"
    )


def _sample(draft: Draft, keep: int, seed: int) -> None:
    total = len(draft.workloads)
    chosen = sorted(random.Random(seed).sample(range(total), keep))
    names = {draft.workloads[i]["name"] for i in chosen}
    draft.provenance = _renumbered(draft.provenance, chosen)
    draft.workloads = [draft.workloads[i] for i in chosen]
    dropped_pods = sum(1 for pod in draft.initial_state if pod.get("workload") not in names)
    draft.initial_state = [p for p in draft.initial_state if p.get("workload") in names]
    draft.notes.append(
        f"sampled {keep:,} of {total:,} workloads (seed {seed}); "
        f"{dropped_pods:,} initial-state pod(s) of the others left out"
    )


def _renumbered(provenance: Provenance, chosen: list[int]) -> Provenance:
    """Where each kept workload came from, under its new index."""
    items: dict[str, Any] = {
        k: v for k, v in provenance.items.items() if not k.startswith("workloads[")
    }
    for new, old in enumerate(chosen):
        origin = provenance.items.get(f"workloads[{old}]")
        if origin is not None:
            items[f"workloads[{new}]"] = origin
    return Provenance(items=items, default_file=provenance.default_file)


MAX_COMPRESS = 1000.0


class LoadError(ValueError):
    """A reshaping option out of range; ``field`` names it (start, compress, sample)."""

    def __init__(self, field: str, message: str) -> None:
        super().__init__(message)
        self.field = field


def check_load(
    *, start: float | None = None, compress: float = 1.0, sample: int | None = None
) -> None:
    """The options' ranges, each error naming its field (the form's, the API's and the
    CLI's names are the same)."""
    if start is not None and not math.isfinite(start):
        raise LoadError("start", "start must be a finite number of seconds")
    if not (math.isfinite(compress) and 0 < compress <= MAX_COMPRESS):
        raise LoadError(
            "compress", f"compress must be above 0 and at most {MAX_COMPRESS:g} (got {compress:g})"
        )
    if sample is not None and sample < 1:
        raise LoadError("sample", f"sample must keep at least 1 workload (got {sample})")
