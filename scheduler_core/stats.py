"""Interval statistics across replications: Student's t quantile, the mean's interval,
and the difference of two variants, paired when they share seeds.

scipy is not a dependency, so the t distribution is computed here: its CDF from the
regularized incomplete beta function (Lentz's continued fraction, as in Numerical
Recipes §6.4), inverted by safeguarded Newton steps. That is exact to ~1e-12 for every
real df > 0, so no table, and no rounding of df (which, done the wrong way, gives
intervals too narrow).
"""

from __future__ import annotations

import functools
import math
import statistics
from collections.abc import Hashable, Mapping, Sequence
from dataclasses import dataclass
from enum import StrEnum

CONFIDENCE = 0.95
_EPS = 1e-15
_TINY = 1e-300


def _beta_fraction(a: float, b: float, x: float) -> float:
    """The continued fraction of the incomplete beta function (modified Lentz)."""
    qab, qap, qam = a + b, a + 1.0, a - 1.0
    c, d = 1.0, 1.0 - qab * x / qap
    d = 1.0 / (d if abs(d) > _TINY else _TINY)
    h = d
    for m in range(1, 400):
        m2 = 2 * m
        for aa in (
            m * (b - m) * x / ((qam + m2) * (a + m2)),
            -(a + m) * (qab + m) * x / ((a + m2) * (qap + m2)),
        ):
            d = 1.0 + aa * d
            d = 1.0 / (d if abs(d) > _TINY else _TINY)
            c = 1.0 + aa / c
            c = c if abs(c) > _TINY else _TINY
            h *= d * c
        if abs(d * c - 1.0) < _EPS:
            break
    return h


def incomplete_beta(a: float, b: float, x: float) -> float:
    """I_x(a, b), the regularized incomplete beta function, for a, b > 0 and 0 <= x <= 1."""
    if x <= 0.0:
        return 0.0
    if x >= 1.0:
        return 1.0
    log_front = (
        math.lgamma(a + b) - math.lgamma(a) - math.lgamma(b) + a * math.log(x) + b * math.log1p(-x)
    )
    if x < (a + 1.0) / (a + b + 2.0):
        return math.exp(log_front) * _beta_fraction(a, b, x) / a
    return 1.0 - math.exp(log_front) * _beta_fraction(b, a, 1.0 - x) / b


def t_cdf(t: float, df: float) -> float:
    """P(T <= t) for Student's t with ``df`` degrees of freedom (any real df > 0)."""
    tail = 0.5 * incomplete_beta(df / 2.0, 0.5, df / (df + t * t))
    return 1.0 - tail if t > 0 else tail


def t_pdf(t: float, df: float) -> float:
    log_norm = math.lgamma((df + 1.0) / 2.0) - math.lgamma(df / 2.0) - 0.5 * math.log(df * math.pi)
    return math.exp(log_norm - (df + 1.0) / 2.0 * math.log1p(t * t / df))


@functools.lru_cache(maxsize=4096)
def t_quantile(p: float, df: float) -> float:
    """The t with P(T <= t) = p. ``df`` may be fractional (Welch); ``math.inf`` gives the
    normal quantile. Newton's method from the normal quantile, safeguarded by a bracket
    (bisection whenever a step would leave it); cached, since aggregation asks for the
    same few df over and over."""
    if not 0.0 < p < 1.0:
        raise ValueError(f"p must be in (0, 1), got {p}")
    if not df > 0:
        raise ValueError(f"df must be positive, got {df}")
    if p < 0.5:
        return -t_quantile(1.0 - p, df)
    if p == 0.5:
        return 0.0
    normal = statistics.NormalDist().inv_cdf(p)
    if math.isinf(df):
        return normal
    low, high = 0.0, max(1.0, normal)
    while t_cdf(high, df) < p:
        low, high = high, high * 2.0
    t = min(max(normal, low), high)
    for _ in range(200):
        error = t_cdf(t, df) - p
        if abs(error) < 1e-15 or high - low <= 1e-14 * max(1.0, t):
            break
        if error < 0:
            low = t
        else:
            high = t
        step = t - error / t_pdf(t, df)
        t = step if low <= step <= high else (low + high) / 2.0
    return t


def t_critical(df: float, confidence: float = CONFIDENCE) -> float:
    """The two-sided critical value: half-width = t_critical x standard error."""
    return t_quantile(0.5 + confidence / 2.0, df)


def mean_interval(values: Sequence[float]) -> tuple[float, float]:
    """Mean and the half-width of its 95% interval (Student's t, n - 1 df); 0 for n = 1."""
    mean = math.fsum(values) / len(values)
    if len(values) < 2:
        return mean, 0.0
    return mean, t_critical(len(values) - 1) * statistics.stdev(values) / math.sqrt(len(values))


class IntervalMethod(StrEnum):
    """How a difference's interval was made: said next to every interval shown."""

    PAIRED = "paired"
    """Same seeds on both sides (common random numbers): t over the per-seed differences."""
    WELCH = "welch"
    """Different seeds: independent samples, Welch's t with Satterthwaite's df."""
    NONE = "none"
    """Too few replications with a value on a side for any interval."""


@dataclass(frozen=True, slots=True)
class Difference:
    """``other - base`` of a metric's replication means, and its 95% half-width."""

    mean: float | None
    half_width: float | None
    method: IntervalMethod
    n: int  # pairs (paired) or the smaller sample (welch)


def difference(
    base: Mapping[Hashable, float | None],
    other: Mapping[Hashable, float | None],
) -> Difference:
    """The difference of two variants' replications, keyed by seed.

    When both sides ran the same seeds, the replications are paired (the same dice,
    different policy) and the interval comes from the per-seed differences, which is
    much narrower than treating them as independent, and correct. Otherwise the samples
    are independent and Welch's interval is used."""
    a = {seed: v for seed, v in base.items() if v is not None}
    b = {seed: v for seed, v in other.items() if v is not None}
    if not a or not b:
        return Difference(None, None, IntervalMethod.NONE, 0)
    mean = math.fsum(b.values()) / len(b) - math.fsum(a.values()) / len(a)
    if set(base) == set(other) and set(a) == set(b):
        return _paired(mean, [b[seed] - a[seed] for seed in a])
    return _welch(mean, list(a.values()), list(b.values()))


def _paired(mean: float, diffs: list[float]) -> Difference:
    if len(diffs) < 2:
        return Difference(mean, None, IntervalMethod.NONE, len(diffs))
    _, half = mean_interval(diffs)
    return Difference(mean, half, IntervalMethod.PAIRED, len(diffs))


def _welch(mean: float, a: list[float], b: list[float]) -> Difference:
    n = min(len(a), len(b))
    if n < 2:
        return Difference(mean, None, IntervalMethod.NONE, n)
    va, vb = statistics.variance(a) / len(a), statistics.variance(b) / len(b)
    se2 = va + vb
    if se2 == 0:
        return Difference(mean, 0.0, IntervalMethod.WELCH, n)
    df = se2**2 / (va**2 / (len(a) - 1) + vb**2 / (len(b) - 1))
    return Difference(mean, t_critical(df) * math.sqrt(se2), IntervalMethod.WELCH, n)
