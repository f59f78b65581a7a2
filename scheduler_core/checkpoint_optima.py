"""Closed-form checkpoint intervals (Young 1974, Daly 2006), beside the simulated ones.

Both assume failures arrive as a Poisson process with mean time between failures ``M``
(of the whole job: one member's failure stops a synchronous job), a blocking checkpoint
write of ``delta`` seconds, and a restart of ``restart`` seconds after each failure.
Those are our semantics (docs/failures.md "Checkpoints: our exact semantics"): a failure
during a write loses the work since the previous durable checkpoint, and the interval
is the work between writes (``checkpoint.intervalSeconds``). The simulation adds what
the formulas leave out: the eviction delay of a NotReady node, startup on a spare node,
a finite fleet of spares, and non-exponential failures.
"""

from __future__ import annotations

import math


def young_interval(write_seconds: float, mtbf_seconds: float) -> float:
    """Young's first-order optimum: tau = sqrt(2 * delta * M)."""
    _check(write_seconds, mtbf_seconds)
    return math.sqrt(2.0 * write_seconds * mtbf_seconds)


def daly_interval(write_seconds: float, mtbf_seconds: float) -> float:
    """Daly's higher-order optimum (2006): for delta < 2M,
    tau = sqrt(2 delta M) * (1 + sqrt(delta / 2M) / 3 + (delta / 2M) / 9) - delta;
    otherwise tau = M (checkpointing cannot pay for itself sooner)."""
    _check(write_seconds, mtbf_seconds)
    delta, mtbf = write_seconds, mtbf_seconds
    if delta >= 2.0 * mtbf:
        return mtbf
    ratio = delta / (2.0 * mtbf)
    return math.sqrt(2.0 * delta * mtbf) * (1.0 + math.sqrt(ratio) / 3.0 + ratio / 9.0) - delta


def expected_wall_clock(
    work_seconds: float,
    interval_seconds: float,
    write_seconds: float,
    restart_seconds: float,
    mtbf_seconds: float,
) -> float:
    """Daly's expected wall-clock time to finish ``work_seconds`` of work (2006):
    T_w = M * exp(R / M) * (exp((tau + delta) / M) - 1) * T_s / tau."""
    _check(write_seconds, mtbf_seconds)
    if interval_seconds <= 0:
        raise ValueError("the checkpoint interval must be positive")
    mtbf = mtbf_seconds
    segments = work_seconds / interval_seconds
    return (
        mtbf
        * math.exp(restart_seconds / mtbf)
        * math.expm1((interval_seconds + write_seconds) / mtbf)
        * segments
    )


def expected_ettr(
    interval_seconds: float, write_seconds: float, restart_seconds: float, mtbf_seconds: float
) -> float:
    """The ETTR the closed form predicts: work over expected wall-clock time."""
    return 1.0 / expected_wall_clock(
        1.0, interval_seconds, write_seconds, restart_seconds, mtbf_seconds
    )


def _check(write_seconds: float, mtbf_seconds: float) -> None:
    if mtbf_seconds <= 0:
        raise ValueError(f"the MTBF must be positive, got {mtbf_seconds:g}")
    if write_seconds < 0:
        raise ValueError(f"the checkpoint write time must not be negative, got {write_seconds:g}")
