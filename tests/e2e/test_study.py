"""Issue #18 §3 in a real browser: load the placement-study preset in the editor, see
its placementStudy fields, save, run it on a real worker, and see the allocation
against arrived load per policy with the seeds' spread. Screenshots at 1440x900 in
artifacts/screenshots/."""

from __future__ import annotations

import pytest

from experiments.models import Experiment, Run, Status
from tests.e2e.conftest import SCREENSHOTS
from tests.e2e.test_charts import Visit, _user

pytestmark = [pytest.mark.e2e, pytest.mark.slow]
VIEWPORT = {"width": 1440, "height": 900}
DRAWN = "() => document.documentElement.dataset.chartsReady === 'true'"
POLICIES = ["Random", "DotProduct", "GpuClustering", "GpuPacking", "BestFit", "FGD"]


@pytest.fixture
def alice(transactional_db):
    return _user("alice")


def test_the_study_preset_runs_on_a_worker_and_draws_its_curves(browser, stack, server, alice):
    stack.start_worker(name="study", concurrency=2)
    visit = Visit(browser, server, "alice")
    page = visit.page
    page.set_viewport_size(VIEWPORT)
    page.goto(f"{server}/")
    page.click("[data-preset=s17-placement-study]")
    load = page.locator("[name='spec-placement_study__arrived_load_percent']")
    assert load.input_value() == "130"
    page.click("#save")
    page.wait_for_selector("#run-button")
    experiment = Experiment.objects.get(owner=alice)
    assert experiment.spec["placementStudy"]["arrivedLoadPercent"] == 130
    page.click("#run-button")
    page.wait_for_selector("h1:has-text('Placement study: run')")
    page.wait_for_selector("#chart-study-curve .main-svg", timeout=240_000)
    page.wait_for_function(DRAWN, timeout=60_000)
    run = Run.objects.get(experiment=experiment)
    assert run.status == Status.SUCCEEDED
    assert page.evaluate("document.documentElement.dataset.chartsError || ''") == ""
    names = page.evaluate(
        "() => document.getElementById('chart-study-curve').data"
        ".filter(t => t.fill !== 'toself').map(t => t.name)"
    )
    assert names == ["every request placed", *POLICIES]
    bands = page.evaluate(
        "() => document.getElementById('chart-study-curve').data"
        ".filter(t => t.fill === 'toself').length"
    )
    assert bands == 6
    assert page.locator("#study-table tbody tr").count() == 6
    # Labels fit: the axis titles lie inside the chart's box, not clipped.
    for chart in ("#chart-study-curve", "#chart-study-at-load"):
        box = page.locator(chart).bounding_box()
        for title in page.locator(f"{chart} .xtitle, {chart} .ytitle").all():
            inner = title.bounding_box()
            assert inner
            assert box
            assert inner["x"] >= box["x"] - 1
            assert inner["y"] >= box["y"] - 1
            assert inner["x"] + inner["width"] <= box["x"] + box["width"] + 1
            assert inner["y"] + inner["height"] <= box["y"] + box["height"] + 1
    page.locator("#study-charts").scroll_into_view_if_needed()
    page.screenshot(path=SCREENSHOTS / "study-1-curves.png")
    page.locator("#study-summary").scroll_into_view_if_needed()
    page.screenshot(path=SCREENSHOTS / "study-2-table.png")
    assert visit.errors == []
    assert visit.only_this_server()
