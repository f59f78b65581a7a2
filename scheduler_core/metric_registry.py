"""Every metric a run reports, described once: what it is, its unit, which way is
better, how it folds workloads and replications, how a missing value reads, and who may
be named best on it.

The CLI, the API, the pages, the exports and the glossary all read this, so a label,
a unit or a direction can never disagree between two places. ``metrics.SUMMARY_NAMES``
is the order; a test checks the two hold exactly the same names.
"""

from __future__ import annotations

import math
from collections.abc import Mapping, Sequence
from dataclasses import asdict, dataclass
from enum import StrEnum
from typing import Any

from scheduler_core.metrics import SUMMARY_NAMES
from scheduler_core.stats import IntervalMethod


class Better(StrEnum):
    LOWER = "lower"
    HIGHER = "higher"


class Group(StrEnum):
    PREEMPTOR = "preemptor"
    DISPLACED = "displaced"
    CLUSTER = "cluster"
    ACCOUNTING = "accounting"


NEVER = "never (> horizon)"
"""How a time reads whose event did not happen before the horizon: never "0", never blank."""

REPLICATIONS = (
    "mean across replications, with a 95% Student-t interval "
    "(n - 1 degrees of freedom, exact quantile)"
)
UNSERVED_METRIC = "urgent_never_useful"
"""The summary count behind the "urgent workload never useful" flag."""


@dataclass(frozen=True, slots=True)
class MetricInfo:
    name: str
    label: str
    unit: str  # "s", "GPU·s", "count" or "ratio"
    group: Group
    definition: str
    better: Better
    workloads: str  # how one replication's workloads fold into its summary value
    null: str  # what a null (no value) means, as the pages print it
    time: bool = False  # a duration in simulated seconds
    replications: str = REPLICATIONS

    @property
    def title(self) -> str:
        """'Lost work (GPU·s)': label with unit, as column heads show it."""
        if self.unit in ("count", ""):
            return self.label
        return f"{self.label} ({'%' if self.unit == 'ratio' else self.unit})"

    def as_dict(self) -> dict[str, Any]:
        return {**asdict(self), "title": self.title}


_URGENT = "mean over the urgent workloads (every workload if none is marked urgent)"
_ALL_MEAN = "mean over the workloads where it applies"
_SUM = "sum over every workload"


def _m(
    name: str,
    label: str,
    unit: str,
    group: Group,
    definition: str,
    *,
    better: Better = Better.LOWER,
    workloads: str = _SUM,
    null: str = "—",
) -> MetricInfo:
    return MetricInfo(
        name, label, unit, group, definition, better, workloads, null, time=unit == "s"
    )


_ENTRIES = (
    _m(
        "time_to_victims_selected",
        "Time to victims selected",
        "s",
        Group.PREEMPTOR,
        "Arrival of the preemptor until the scheduler first chose victims for it.",
        workloads=_URGENT,
        null="none needed (no preemption)",
    ),
    _m(
        "time_to_victims_released",
        "Time to victims released",
        "s",
        Group.PREEMPTOR,
        "Arrival until every victim chosen for it has stopped and its GPUs are free.",
        workloads=_URGENT,
        null="no victims released",
    ),
    _m(
        "release_latency",
        "Release latency",
        "s",
        Group.PREEMPTOR,
        "Victims selected until victims released: what grace periods cost the preemptor.",
        workloads=_URGENT,
        null="no victims released",
    ),
    _m(
        "time_to_group_scheduled",
        "Time to group scheduled",
        "s",
        Group.PREEMPTOR,
        "Arrival until minCount of its members are bound to nodes.",
        workloads=_URGENT,
        null=NEVER,
    ),
    _m(
        "time_to_group_useful",
        "Time to group useful",
        "s",
        Group.PREEMPTOR,
        "Arrival until minCount members are running and Ready: useful progress begins.",
        workloads=_URGENT,
        null=NEVER,
    ),
    _m(
        "preemption_not_helpful",
        "Preemption not helpful",
        "count",
        Group.PREEMPTOR,
        "Scheduling cycles in which preemption found no victims that would make room.",
        workloads="sum over the urgent workloads (every workload if none is urgent)",
    ),
    _m(
        "lost_work",
        "Lost work",
        "GPU·s",
        Group.DISPLACED,
        "Progress since the last durable checkpoint that a disruption threw away and must "
        "be redone (a synchronous group loses every member's share).",
    ),
    _m(
        "stranded_capacity",
        "Stranded capacity",
        "GPU·s",
        Group.DISPLACED,
        "GPU-seconds held by surviving members of a broken synchronous group that cannot "
        "progress until released or resumed.",
    ),
    _m(
        "time_to_resume",
        "Time to resume",
        "s",
        Group.DISPLACED,
        "Disruption until the workload makes useful progress again.",
        workloads=_ALL_MEAN,
        null="none resumed in the horizon",
    ),
    _m(
        "time_to_recover",
        "Time to recover",
        "s",
        Group.DISPLACED,
        "Disruption until the workload is back where it was (resume plus redoing the lost work).",
        workloads=_ALL_MEAN,
        null="none recovered in the horizon",
    ),
    _m(
        "pods_terminated",
        "Pods terminated",
        "count",
        Group.DISPLACED,
        "Pods sent SIGTERM (preemption, eviction or node loss).",
    ),
    _m(
        "restarts",
        "Restarts",
        "count",
        Group.DISPLACED,
        "Replacement pods created by a controller.",
    ),
    _m(
        "preempted_while_loading",
        "Preempted while loading",
        "count",
        Group.DISPLACED,
        "Evictions of pods not yet Ready: the loading treadmill.",
    ),
    _m(
        "sessions_lost",
        "Sessions lost",
        "count",
        Group.DISPLACED,
        "Interactive sessions ended by a disruption.",
    ),
    _m(
        "gpu_utilization",
        "GPU utilization",
        "ratio",
        Group.CLUSTER,
        "Allocated GPU-seconds over the GPU-seconds the cluster offered in the window.",
        better=Better.HIGHER,
        workloads="whole cluster",
        null="no capacity offered",
    ),
    _m(
        "gpu_fragmentation",
        "GPU fragmentation",
        "ratio",
        Group.CLUSTER,
        "Free GPU capacity the experiment's typical pods could not use, averaged over the "
        "window, as a share of the cluster's GPUs (the FGD paper's measure, Weng et al., "
        "USENIX ATC'23 §3.2: all of a node's free GPU for a pod that cannot run there, else "
        "the free part of each device too small for it, weighted by how common each pod "
        "kind is).",
        workloads="whole cluster",
        null="not measured: whole GPUs only",
    ),
    _m(
        "goodput",
        "Goodput",
        "ratio",
        Group.CLUSTER,
        "Useful-progress GPU-seconds over allocated GPU-seconds.",
        better=Better.HIGHER,
        workloads="whole cluster",
        null="nothing allocated",
    ),
    _m(
        "ettr",
        "ETTR",
        "ratio",
        Group.CLUSTER,
        "Effective training time ratio: seconds of useful progress per wall-clock second "
        "since submission (to completion or the horizon).",
        better=Better.HIGHER,
        workloads="mean of the workloads' ETTRs weighted by their GPUs",
        null="no workload with GPUs submitted",
    ),
    _m(
        "wasted_gpu_seconds",
        "Wasted work",
        "GPU·s",
        Group.CLUSTER,
        "Lost work + stranded capacity + startup time of Ready pods later evicted.",
    ),
    _m(
        "completion_time",
        "Completion time",
        "s",
        Group.CLUSTER,
        "Arrival until the workload is done.",
        workloads=_ALL_MEAN + " (finished ones)",
        null=NEVER,
    ),
    _m(
        "queue_wait",
        "Queue wait",
        "s",
        Group.CLUSTER,
        "Arrival until the workload's first pod is bound.",
        workloads=_ALL_MEAN + " (bound ones)",
        null=NEVER,
    ),
    _m(
        "over_evicted_pods",
        "Over-evicted pods",
        "count",
        Group.ACCOUNTING,
        "Victims beyond the fewest that would have made room.",
    ),
    _m(
        "groups_broken",
        "Groups broken",
        "count",
        Group.ACCOUNTING,
        "Gangs that lost a member while others kept running.",
    ),
    _m(
        "thrashing_workloads",
        "Thrashing workloads",
        "count",
        Group.ACCOUNTING,
        "Workloads disrupted twice or more before getting back to useful progress.",
        workloads="count of workloads",
    ),
    _m(
        UNSERVED_METRIC,
        "Urgent never useful",
        "count",
        Group.ACCOUNTING,
        "Urgent workloads that never became useful before the horizon. A variant with any "
        "is flagged everywhere and is never named best.",
        workloads="count of urgent workloads",
    ),
    _m(
        "standby_activations",
        "Spares called in",
        "count",
        Group.ACCOUNTING,
        "Standby nodes that entered service in place of a failed node (spare pools).",
        workloads="count of StandbyInService node events",
    ),
    _m(
        "workloads_failed",
        "Workloads out of retries",
        "count",
        Group.ACCOUNTING,
        "Workloads that ran out of retries: a Job past its backoffLimit, or a workload "
        "Kueue deactivated after backoffLimitCount requeues.",
        workloads="count of workloads",
    ),
)

REGISTRY: Mapping[str, MetricInfo] = {m.name: m for m in _ENTRIES}


def metric_info(name: str) -> MetricInfo:
    """The entry for ``name``; a name a newer simulator added reads as itself."""
    found = REGISTRY.get(name)
    if found is not None:
        return found
    return MetricInfo(
        name, name.replace("_", " ").capitalize(), "", Group.ACCOUNTING, "", Better.LOWER, "", "—"
    )


def null_reading(name: str) -> str:
    return metric_info(name).null


def registry_document() -> dict[str, Any]:
    """The registry as JSON-ready data (the API's /metrics/ and the CLI's ``metrics``)."""
    return {
        "metrics": [metric_info(name).as_dict() for name in SUMMARY_NAMES],
        "interval_methods": {m.value: _METHODS[m] for m in IntervalMethod},
        "never": NEVER,
    }


_METHODS = {
    IntervalMethod.PAIRED: "variants ran the same seeds (common random numbers): Student-t "
    "interval of the per-seed differences",
    IntervalMethod.WELCH: "seeds differ: independent samples, Welch's t interval with "
    "Satterthwaite's degrees of freedom",
    IntervalMethod.NONE: "fewer than two replications with a value on a side: no interval",
}


def _finite(value: object) -> float | None:
    if isinstance(value, int | float) and not isinstance(value, bool) and math.isfinite(value):
        return float(value)
    return None


def best_indexes(
    values: Sequence[float | None],
    metric: str,
    *,
    unserved: Sequence[bool] | None = None,
    tolerance: float = 1e-9,
) -> list[int]:
    """Positions holding the best value of ``metric`` (ties all win).

    A variant whose urgent workload never became useful (``unserved``) is never best:
    not being served is not a fast time, and not preempting anybody is not a saving.
    None win when fewer than two values compete (a lone number is not best of
    anything) or when all are equal (nothing stands out)."""
    flagged = unserved or [False] * len(values)
    present = [
        (i, v) for i, raw in enumerate(values) if (v := _finite(raw)) is not None and not flagged[i]
    ]
    if len(present) < 2:
        return []
    pick = max if metric_info(metric).better is Better.HIGHER else min
    best = pick(v for _, v in present)
    winners = [i for i, v in present if abs(v - best) <= tolerance * max(1.0, abs(best))]
    return [] if len(winners) == len(present) else winners


def is_unserved(aggregate: Mapping[str, Mapping[str, Any]]) -> bool:
    """A variant (its aggregate) in which, in any replication, an urgent workload never
    became useful before the horizon."""
    entry = aggregate.get(UNSERVED_METRIC) or {}
    return (_finite(entry.get("max")) or 0.0) > 0
