"""What a task learns from a service: finished, or come back later."""

from __future__ import annotations

import enum


class Outcome(enum.Enum):
    DONE = "done"
    """Nothing (more) to do: finished by this delivery or another, or the run stopped."""
    BUSY = "busy"
    """Another delivery holds the work (fresh heartbeat) or parts are missing: retry later."""
    DATABASE_DOWN = "database-down"
    """The database could not be reached (a blip, a restart): try again after a back-off;
    the work is not lost and the run is not failed."""
