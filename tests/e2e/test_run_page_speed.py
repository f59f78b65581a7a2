"""Issue #16 §5 in a real browser: the worker that finishes a run precomputes its page into
the cache every web process shares, and the page then only reads it. Proved from the
outside: once the run has succeeded, the rows the charts are drawn from (its event log
and stored timelines) are deleted, and the page still draws every chart, victims
included, from what the worker left in the cache."""

from __future__ import annotations

import pytest

from experiments.models import Replication, Status
from tests.e2e.conftest import SCREENSHOTS
from tests.e2e.test_charts import Visit, _user
from tests.factories import ExperimentFactory, preset_document
from tests.web.live import wait_for

pytestmark = [pytest.mark.e2e, pytest.mark.slow]


@pytest.fixture
def alice(transactional_db):
    return _user("alice")


def test_the_run_page_draws_what_the_worker_precomputed(browser, server, stack, alice):
    experiment = ExperimentFactory(owner=alice, spec=preset_document("s1-training-vs-shards"))
    stack.start_worker(name="precompute")
    run_id = int(stack.manage("start_run", str(experiment.pk)).strip())
    run = wait_for(
        lambda: experiment.runs.filter(pk=run_id, status=Status.SUCCEEDED).first(),
        timeout=120,
        what="the run to succeed",
        stack=stack,
    )
    assert "run page precomputed" in (stack.var_dir / "precompute.log").read_text()
    # What a request would draw the timeline and costs from, gone.
    Replication.objects.filter(run=run).update(timeline={}, event_log=None)

    visit = Visit(browser, server, "alice")
    visit.page.set_viewport_size({"width": 1440, "height": 900})
    visit.open(f"/runs/{run.pk}/")
    visit.page.screenshot(path=SCREENSHOTS / "pagespeed-1-precomputed-run-page.png")
    visit.page.locator("#charts-timeline").scroll_into_view_if_needed()
    visit.page.screenshot(path=SCREENSHOTS / "pagespeed-2-precomputed-timeline.png")

    charts = visit.charts()
    assert len(charts) == 11
    assert all(charts.values()), charts
    victims = next(t for t in visit.figure("chart-gantt")["data"] if t["name"] == "victim")
    assert sorted(c[0] for c in victims["customdata"]) == [f"train-{i}" for i in range(4)]
    served = [u for u in visit.requests if "/charts/plotly.min.js" in u]
    assert len(served) == 1
    assert visit.errors == []
    assert visit.only_this_server()
