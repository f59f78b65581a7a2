"""``{% run_charts run %}``: the run page's charts, from the run page's own template
without touching its view (the run was already checked visible there)."""

from __future__ import annotations

from typing import Any
from urllib.parse import urlencode

from django import template
from django.template.loader import render_to_string
from django.urls import reverse
from django.utils.safestring import SafeString

from experiments import selectors_cache
from experiments.models import Run
from experiments.views import chart_data
from experiments.views import charts as chart_views

register = template.Library()


@register.simple_tag(takes_context=True)
def run_charts(context: template.Context, run: Run) -> SafeString:
    """The charts section, rendered once per run state (and chosen replication) for every
    viewer (it holds nothing of the viewer's): its embedded data is a megabyte on a
    mid-size run, and rendering it was most of the run page's cost. ``?replication=<id>``
    on the run page picks the replication the timeline and tables open on; an id that
    is not one of this run's reads as none (so junk ids add no cache entries)."""
    request = context.get("request")
    raw = request.GET.get("replication", "") if request is not None else ""
    chosen = (
        raw
        if raw.isdigit() and len(raw) <= 18 and run.replications.filter(pk=int(raw)).exists()
        else ""
    )
    return selectors_cache.run_cached(
        run=run,
        kind="page-charts-html",
        params=f"replication={chosen}",
        build=lambda: render_to_string("experiments/run_charts.html", _context(run, chosen)),
    )


def _context(run: Run, chosen: str = "") -> dict[str, Any]:
    variants = "&".join(urlencode({"v": f"{run.pk}:{v['variant']}"}) for v in run.aggregate)
    return {
        "run": run,
        "charts": chart_data.run_charts(run=run, replication=chosen),
        "compare_url": f"{reverse('experiments:compare')}?{variants}",
    }


@register.simple_tag
def plotly_version() -> str:
    """The served bundle's digest, for its URL (a new bundle is never read from a cache)."""
    return chart_views.plotly_digest()
