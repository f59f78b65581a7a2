"""The cyclic garbage collector paused while the core builds long-lived objects.

The core's big phases (an import of a recorded cluster, a simulation) create hundreds of
thousands of objects that live until the phase ends: pods, events, decision records.
Every few hundred allocations the collector walks the young ones, and each full
collection walks all of them again, so its cost grows faster than the run (issue #14: a
tenth of a 10,000-pod preemption run, and a larger share as runs grow). Almost none of
what a phase creates becomes cyclic garbage before the phase ends (the peak memory of the
growth benchmark is the same either way), reference counting frees the rest, and the
collector resumes, if it was on, however the phase ends. For an import of 140,000 pods
(millions of dicts and lists, none in a cycle) the collector tripled the time
(bench/bench_k8s.py).

Parsing a spec, resolving a variant and deriving, storing and reading a timeline pause it
as well: they run next to a big live heap (a recorded cluster's spec, a 70,000-event
log), and each full pass walks all of it. On the openb trace, with a task's spec and log
alive, ``Timeline.to_json`` took 0.43 s with the collector on and 0.02 s paused,
``resolve_variant`` 0.67 s and 0.24 s; a worker task pauses it for its whole work.
"""

from __future__ import annotations

import gc
from collections.abc import Iterator
from contextlib import contextmanager


@contextmanager
def gc_paused() -> Iterator[None]:
    """Collector off for the ``with`` block; back to its previous state after it."""
    was_enabled = gc.isenabled()
    gc.disable()
    try:
        yield
    finally:
        if was_enabled:
            gc.enable()
