"""``{% run_charts run %}``: the run page's charts, from the run page's own template
without touching its view (the run was already checked visible there)."""

from __future__ import annotations

from typing import Any
from urllib.parse import urlencode

import plotly
from django import template
from django.urls import reverse

from experiments.models import Run
from experiments.views import chart_data

register = template.Library()


@register.inclusion_tag("experiments/run_charts.html", takes_context=True)
def run_charts(context: template.Context, run: Run) -> dict[str, Any]:
    """``?replication=<id>`` on the run page picks the replication shown (server-side)."""
    request = context.get("request")
    chosen = request.GET.get("replication", "") if request is not None else ""
    variants = "&".join(urlencode({"v": f"{run.pk}:{v['variant']}"}) for v in run.aggregate)
    return {"run": run, "charts": chart_data.run_charts(run=run, replication=chosen),
            "compare_url": f"{reverse('experiments:compare')}?{variants}"}


@register.simple_tag
def plotly_version() -> str:
    return plotly.__version__
