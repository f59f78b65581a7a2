"""How metrics read on a page: a label and a unit per metric of metrics.md.

Shared by the run page's summary table and (issue 5) the chart builders. A metric the
simulator adds later shows under its own name until it gets an entry here.
"""

from __future__ import annotations

from dataclasses import dataclass


@dataclass(frozen=True, slots=True)
class MetricDisplay:
    label: str
    unit: str  # "s", "GPU·s", "count" or "ratio"


METRICS: dict[str, MetricDisplay] = {
    "time_to_victims_selected": MetricDisplay("Time to victims selected", "s"),
    "time_to_victims_released": MetricDisplay("Time to victims released", "s"),
    "release_latency": MetricDisplay("Release latency", "s"),
    "time_to_group_scheduled": MetricDisplay("Time to group scheduled", "s"),
    "time_to_group_useful": MetricDisplay("Time to group useful", "s"),
    "preemption_not_helpful": MetricDisplay("Preemption not helpful", "count"),
    "lost_work": MetricDisplay("Lost work", "GPU·s"),
    "stranded_capacity": MetricDisplay("Stranded capacity", "GPU·s"),
    "time_to_resume": MetricDisplay("Time to resume", "s"),
    "time_to_recover": MetricDisplay("Time to recover", "s"),
    "pods_terminated": MetricDisplay("Pods terminated", "count"),
    "restarts": MetricDisplay("Restarts", "count"),
    "preempted_while_loading": MetricDisplay("Preempted while loading", "count"),
    "sessions_lost": MetricDisplay("Sessions lost", "count"),
    "gpu_utilization": MetricDisplay("GPU utilization", "ratio"),
    "goodput": MetricDisplay("Goodput", "ratio"),
    "wasted_gpu_seconds": MetricDisplay("Wasted GPU-seconds", "GPU·s"),
    "completion_time": MetricDisplay("Completion time", "s"),
    "queue_wait": MetricDisplay("Queue wait", "s"),
}


def metric_display(name: str) -> MetricDisplay:
    return METRICS.get(name, MetricDisplay(name.replace("_", " ").capitalize(), ""))


def format_value(value: float | None, unit: str = "") -> str:
    """A number for a table cell: ratios as percentages, no noise digits, "—" for null."""
    if value is None:
        return "—"
    if unit == "ratio":
        return f"{value * 100:.1f}%"
    if float(value).is_integer():
        return f"{value:,.0f}"
    return f"{value:,.3g}" if abs(value) < 1000 else f"{value:,.1f}"
