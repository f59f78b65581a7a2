"""Template filters for numbers and metrics."""

from __future__ import annotations

from typing import Any

from django import template

import scheduler_core as sc
from experiments.display import format_value, metric_display, metric_tooltip

register = template.Library()


@register.filter
def metric_label(name: str) -> str:
    return metric_display(name).label


@register.filter
def metric_definition(name: str) -> str:
    """The registry's definition, unit and better direction, for a tooltip."""
    return metric_tooltip(name)


@register.filter
def chart_tooltip(chart: str) -> str:
    """A headline chart's tooltip (``headline-<metric>``); other charts have none."""
    prefix = "headline-"
    return metric_tooltip(chart[len(prefix) :]) if chart.startswith(prefix) else ""


@register.filter
def unserved(variant: dict[str, Any]) -> bool:
    """A ``Run.aggregate`` entry in which an urgent workload never became useful."""
    return sc.is_unserved(variant.get("metrics", {}))


@register.filter
def metric_unit(name: str) -> str:
    unit = metric_display(name).unit
    return "" if unit in ("ratio", "count") else unit


@register.filter
def metric_value(cell: dict[str, Any] | None, name: str) -> str:
    """``mean ± ci95`` of an aggregate cell, formatted for ``name``'s unit."""
    if not cell or cell.get("mean") is None:
        return sc.metric_info(name).null
    unit = metric_display(name).unit
    text = format_value(cell["mean"], unit)
    if cell.get("n", 0) > 1 and cell.get("ci95"):
        text += f" ± {format_value(cell['ci95'], unit)}"
    return text


@register.filter
def number(value: float | None) -> str:
    return format_value(value)


@register.filter
def percent(value: float | None) -> str:
    return "—" if value is None else f"{value * 100:.0f}%"


@register.filter
def duration(seconds: float | None) -> str:
    """Seconds as people read them: 90 → "1m 30s", 7200 → "2h" (whole seconds)."""
    return "—" if seconds is None else sc.format_duration(round(seconds))


@register.filter
def sim_clock(seconds: float | None) -> str:
    """Simulated time as the run page's event log shows it (h:mm:ss), one format."""
    from experiments.charts.kubectl import clock  # late: charts import plotly helpers

    return "—" if seconds is None else clock(seconds)


SINGULAR_UNITS = {"pods": "pod", "GPUs": "GPU"}


@register.filter
def event_value(event: Any) -> str:
    """An event's value with its unit from the core's reason registry ("300 s", "1 pod");
    a flag reads "yes" or "no" (the cell's tooltip, ``event_value_meaning``, says what)."""
    from scheduler_core.events import reason_info

    info = reason_info(event.reason)
    if info is None or not info.value:
        return "" if not event.value else number(event.value)
    if info.unit == "flag":
        return "yes" if event.value else "no"
    unit = SINGULAR_UNITS.get(info.unit, info.unit) if event.value == 1 else info.unit
    return f"{number(event.value)} {unit}".strip()


@register.filter
def event_value_meaning(event: Any) -> str:
    """What an event's value holds, from the reason registry ("GPUs freed")."""
    from scheduler_core.events import reason_info

    info = reason_info(event.reason)
    return info.value if info is not None else ""
