"""What the run page shows of a run, read through the shared cache (``selectors_cache``),
and the precompute that fills that cache when a run finishes (issue #16 §5).

The page only reads. ``run_page_precompute`` is called by the worker that finalizes a
run, with the state it is about to publish, so by the time a browser can see the run
succeeded its charts section (a megabyte of figures on a 10,000-node run, seconds to
draw from the stored timelines) is already in the cache every web process shares
(Redis when configured, files under var/ otherwise). The keys hold the run's state, so
nothing is invalidated by hand: another state reads other entries. An entry that
expired or was evicted is built by the first view again, exactly as before.
"""

from __future__ import annotations

import json
import logging
import time
from typing import Any
from urllib.parse import urlencode

from django.conf import settings
from django.core.serializers.json import DjangoJSONEncoder
from django.db import transaction
from django.template.loader import render_to_string
from django.urls import reverse

from experiments import selectors, selectors_cache, selectors_k8s
from experiments.models import Run, Status
from experiments.specs import spec_yaml_within
from experiments.views import chart_data

logger = logging.getLogger(__name__)
SPEC_SHOWN_CHARS = 200_000
"""Above this the frozen spec is offered as a download only: inline it would make the
page megabytes (a spec of thousands of workloads)."""


def run_page_charts_html(*, run: Run, chosen: str = "") -> str:
    """The charts section of the run page, for every viewer (it holds nothing of the
    viewer's), opened on replication ``chosen`` (an id already checked to be one of this
    run's, or "" for the first). Finished runs keep it ``LAB_CHART_CACHE_SECONDS``."""
    return selectors_cache.run_cached(
        run=run,
        kind="page-charts-html",
        params=f"replication={chosen}",
        build=lambda: _charts_html(run, chosen),
        timeout=settings.LAB_CHART_CACHE_SECONDS,
    )


def _charts_html(run: Run, chosen: str) -> str:
    variants = "&".join(urlencode({"v": f"{run.pk}:{v['variant']}"}) for v in run.aggregate)
    context = {
        "run": run,
        "charts": chart_data.run_charts(run=run, replication=chosen),
        "compare_url": f"{reverse('experiments:compare')}?{variants}",
    }
    return render_to_string("experiments/run_charts.html", context)


def run_page_reads(*, run: Run) -> dict[str, Any]:
    """The rest of what the page shows of the run, each read cached under its state."""

    def cached(kind: str, build: Any) -> Any:
        return selectors_cache.run_cached(run=run, kind=kind, build=build)

    return {
        "status": cached("page-status", lambda: selectors.run_status(run=run)),
        "replications": cached(
            "page-replications", lambda: list(selectors.run_replications(run=run))
        ),
        "replication_count": cached(
            "page-replication-count", lambda: selectors.run_replication_count(run=run)
        ),
        "manifest_variants": cached(
            "page-manifest-variants",
            lambda: selectors_k8s.manifest_variants(spec_document=run.spec),
        ),
        "spec_yaml": cached("page-spec-yaml", lambda: _shown_spec(run)),
    }


def _shown_spec(run: Run) -> str:
    """The frozen spec's YAML for the page, or "" past SPEC_SHOWN_CHARS (the API still
    downloads it whole)."""
    return spec_yaml_within(run.spec, SPEC_SHOWN_CHARS) or ""


def is_study_run(run: Run) -> bool:
    """A placement-study run (its page draws the allocation curves, not a replay)."""
    return isinstance(run.spec, dict) and run.spec.get("placementStudy") is not None


def study_page(*, run: Run) -> dict[str, Any] | None:
    """What a placement-study run's page draws, from its aggregate (the core's numbers),
    or None until it has succeeded; cached under the run's state."""
    if run.status != Status.SUCCEEDED or not run.aggregate:
        return None
    return selectors_cache.run_cached(run=run, kind="page-study", build=lambda: _study(run))


def _study(run: Run) -> dict[str, Any]:
    from experiments.charts.study import study_figure, zoom_figure

    rows = run.aggregate
    figures = {"study-curve": study_figure(rows), "study-at-load": zoom_figure(rows)}
    study = run.spec["placementStudy"]
    return {
        "data": json.dumps(figures, cls=DjangoJSONEncoder),
        "rows": sorted(rows, key=lambda row: row.get("rank", 0)),
        "load": study.get("arrivedLoadPercent", 130),
        "paper_workload": study.get("paperWorkload") or "",
        "seeds": rows[0]["study"]["atLoad"]["n"] if rows else 0,
        "has_paper": any(row.get("paper") for row in rows),
    }


def run_page_precompute(*, run: Run) -> float:
    """Fill the cache with what the first view of the finished ``run`` reads: the page's
    reads, its charts section, and the timeline of the first variant's first replication
    (the others: :func:`run_timelines_precompute`). ``run`` carries the state about to be
    published. Returns the seconds it took; a failure is logged and left to the first
    view, which builds what is missing (a run never fails for its charts). In a
    savepoint: a database error here leaves the caller's transaction usable."""
    return _precompute(run, timelines=slice(0, 1))


def run_timelines_precompute(*, run: Run) -> float:
    """The timeline of every other variant's first replication (what the timeline's
    variant menu loads), once the run is published: on the openb sweep these were 5.8 s
    of the 8 s between its last replication and the run shown succeeded, for timelines a
    viewer loads one at a time, from a menu. A viewer quicker than this builds the one
    it asked for, as an expired entry is built."""
    return _precompute(run, timelines=slice(1, None), page=False)


def _precompute(run: Run, *, timelines: slice, page: bool = True) -> float:
    started = time.perf_counter()
    if is_study_run(run):
        try:
            with transaction.atomic():
                run_page_reads(run=run)
                study_page(run=run)
        except Exception:
            logger.exception("run %s: the study page was not precomputed", run.pk)
        return time.perf_counter() - started
    try:
        with transaction.atomic():
            if page:
                run_page_reads(run=run)
                run_page_charts_html(run=run)
            for replication_id in _first_replications(run)[timelines]:
                _timeline_read(run, replication_id)
    except Exception:
        logger.exception("run %s: the run page was not precomputed", run.pk)
    return time.perf_counter() - started


def _first_replications(run: Run) -> list[int]:
    first: dict[int, int] = {}
    for index, pk in (
        selectors.run_replications(run=run)
        .filter(status=Status.SUCCEEDED)
        .values_list("variant_index", "pk")
    ):
        first.setdefault(index, pk)
    return list(first.values())


def _timeline_read(run: Run, replication_id: int) -> None:
    """The timeline endpoint's answer to ``?replication=<id>`` (views.charts.run_timeline
    reads the same key: its query string)."""
    selectors_cache.run_cached(
        run=run,
        kind="chart-timeline",
        params=urlencode({"replication": replication_id}),
        build=lambda: json.dumps(
            chart_data.replication_timeline(run=run, replication_id=replication_id),
            cls=DjangoJSONEncoder,
        ),
        timeout=settings.LAB_CHART_CACHE_SECONDS,
    )
