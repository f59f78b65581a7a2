"""``{% run_charts run %}``: the run page's charts, from the run page's own template
without touching its view (the run was already checked visible there)."""

from __future__ import annotations

from django import template
from django.utils.safestring import SafeString

from experiments import selectors_run_page
from experiments.models import Run
from experiments.views import charts as chart_views

register = template.Library()


@register.simple_tag(takes_context=True)
def run_charts(context: template.Context, run: Run) -> SafeString:
    """The charts section, rendered once per run state (and chosen replication) for every
    viewer, by the worker when the run finished (``selectors_run_page``): its embedded
    data is a megabyte on a large run, and building it was most of the page's cost.
    ``?replication=<id>`` on the run page picks the replication the timeline and tables
    open on; an id that is not one of this run's reads as none (so junk ids add no
    cache entries)."""
    request = context.get("request")
    raw = request.GET.get("replication", "") if request is not None else ""
    chosen = (
        raw
        if raw.isdigit() and len(raw) <= 18 and run.replications.filter(pk=int(raw)).exists()
        else ""
    )
    return SafeString(selectors_run_page.run_page_charts_html(run=run, chosen=chosen))


@register.simple_tag
def plotly_version() -> str:
    """The served bundle's digest, for its URL (a new bundle is never read from a cache)."""
    return chart_views.plotly_digest()
