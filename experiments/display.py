"""How metrics read on a page: label, unit and null reading, all from the core's metric
registry (``scheduler_core.metric_registry``), so pages, API and CLI never disagree.
"""

from __future__ import annotations

from dataclasses import dataclass

import scheduler_core as sc


@dataclass(frozen=True, slots=True)
class MetricDisplay:
    label: str
    unit: str  # "s", "GPU·s", "count" or "ratio"


def metric_display(name: str) -> MetricDisplay:
    info = sc.metric_info(name)
    return MetricDisplay(info.label, info.unit)


UNIT_WORDS = {
    "s": "simulated seconds",
    "GPU·s": "GPU-seconds (GPUs times seconds)",
    "count": "a count",
    "ratio": "a share, shown as %",
}


def metric_tooltip(name: str) -> str:
    """A metric's definition, unit and better direction in one line, all from the
    registry: what a name, a column head or a chart title shows on hover, so a reader
    never needs the glossary to know which way is good."""
    info = sc.metric_info(name)
    unit = UNIT_WORDS.get(info.unit, info.unit)
    direction = "Higher" if info.better == "higher" else "Lower"
    definition = info.definition.rstrip(".")
    return f"{info.title}: {definition}. Unit: {unit}. {direction} is better."


def format_value(value: float | None, unit: str = "", *, null: str = "—") -> str:
    """A number for a table cell: ratios as percentages, no noise digits; a null reads
    as the metric's null reading (e.g. "never (> horizon)"), "—" when none is given."""
    if value is None:
        return null
    if unit == "ratio":
        return f"{value * 100:.1f}%"
    if float(value).is_integer():
        return f"{value:,.0f}"
    return f"{value:,.3g}" if abs(value) < 1000 else f"{value:,.1f}"
