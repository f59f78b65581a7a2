"""Anti-thrashing guards on preemption, as policy settings (docs/kubernetes-rules.md,
"Anti-thrashing guards").

Two guards keep preemption from undoing its own work faster than the work gets done:

- **a minimum guaranteed runtime** (KAI scheduler's ``preempt-min-runtime``): a pod that
  has run for less than ``policy.minRuntimeSeconds`` since it was bound is not a potential
  victim; 0 (the default) keeps every pod preemptible, as KAI's default does;
- **a cluster-wide preemption rate limit** (``policy.preemptionRateLimit``), a token
  bucket in the shape of Armada's scheduling rate limits (``maximumSchedulingRate`` and
  ``maximumSchedulingBurst``), applied to evictions: ``perMinute`` tokens arrive a minute,
  at most ``burst`` are kept. A preemption needs one token and spends one per victim; the
  bucket may go into debt for a large victim set, which the next preemptions wait out, so
  the sustained rate never exceeds ``perMinute``.

Both are off by default, and a variant without them simulates exactly as before. They
apply to the scheduler's preemption (every ``pod`` and workload-aware policy), not to a
Kueue queue's preemption of admitted workloads.
"""

from __future__ import annotations

from scheduler_core.model import Pod
from scheduler_core.spec import Policy
from scheduler_core.status import Code, Status

MIN_RUNTIME_PLUGIN = "MinRuntime"
RATE_LIMIT_PLUGIN = "PreemptionRateLimit"
PROTECTED = "protected by min runtime"


class Guards:
    """The variant's guards and the rate limit's bucket (one per engine run)."""

    __slots__ = ("burst", "min_runtime", "rate", "stamp", "tokens")

    def __init__(self, policy: Policy) -> None:
        self.min_runtime = policy.min_runtime_seconds
        limit = policy.preemption_rate_limit
        self.rate = limit.per_minute / 60.0 if limit is not None else 0.0
        """Tokens a second; 0: no rate limit."""
        self.burst = float(limit.burst) if limit is not None else 0.0
        self.tokens = self.burst
        self.stamp = 0.0

    @property
    def active(self) -> bool:
        return self.min_runtime > 0 or self.rate > 0

    # ----------------------------------------------------------------- min runtime
    def protected(self, pod: Pod, now: float) -> bool:
        """Bound less than the minimum runtime ago (a terminating pod is leaving anyway)."""
        return (
            self.min_runtime > 0
            and pod.bound_at is not None
            and now - pod.bound_at < (self.min_runtime - 1e-9)
        )

    def protection_text(self, pod: Pod, now: float) -> str:
        ran = now - (pod.bound_at or now)
        return f"{PROTECTED} (ran {ran:.0f} s of {self.min_runtime:.0f} s)"

    def protected_status(self, count: int) -> Status:
        return Status(
            Code.UNSCHEDULABLE,
            f"{count} lower-priority pod(s) {PROTECTED} ({self.min_runtime:.0f} s); "
            "preemption waits until they have run that long",
            MIN_RUNTIME_PLUGIN,
        )

    # ----------------------------------------------------------------- rate limit
    def _refill(self, now: float) -> None:
        if now > self.stamp:
            self.tokens = min(self.burst, self.tokens + (now - self.stamp) * self.rate)
            self.stamp = now

    def allows(self, now: float) -> bool:
        """A preemption may start now: no rate limit, or at least one token saved."""
        if self.rate <= 0:
            return True
        self._refill(now)
        return self.tokens >= 1.0 - 1e-9

    def spend(self, now: float, victims: int) -> None:
        if self.rate > 0:
            self._refill(now)
            self.tokens -= victims

    def next_token_at(self, now: float) -> float:
        """When the bucket next holds a whole token (for the engine's wake-up)."""
        self._refill(now)
        return now + max(0.0, 1.0 - self.tokens) / self.rate

    def rate_limited_status(self) -> Status:
        return Status(
            Code.UNSCHEDULABLE,
            f"preemption rate limit reached ({self.rate * 60:g} evictions a minute, "
            f"burst {self.burst:g}, cluster-wide)",
            RATE_LIMIT_PLUGIN,
        )
