"""Issue #17 §2 in a real browser: from an experiment, the one-click checkpoint planner
form, the sweep's progress on the real worker, then the chart of wall-clock time and
ETTR with the optimum and the Young and Daly optima. Screenshots at 1440x900 in
artifacts/screenshots/."""

from __future__ import annotations

import pytest

from experiments.models import Run, Status
from tests.e2e.conftest import SCREENSHOTS
from tests.e2e.test_charts import Visit, _user
from tests.factories import ExperimentFactory, preset_document

pytestmark = [pytest.mark.e2e, pytest.mark.slow]
VIEWPORT = {"width": 1440, "height": 900}
DRAWN = "() => document.documentElement.dataset.chartsReady === 'true'"


@pytest.fixture
def alice(transactional_db):
    return _user("alice")


def test_the_planner_form_runs_the_sweep_and_draws_the_optimum(browser, stack, server, alice):
    stack.start_worker(name="planner", concurrency=2)  # the sweep runs on real workers
    experiment = ExperimentFactory(owner=alice, spec=preset_document("s14-checkpoint-planner"))
    visit = Visit(browser, server, "alice")
    page = visit.page
    page.set_viewport_size(VIEWPORT)
    page.goto(f"{server}/experiments/{experiment.pk}/")
    page.click("#plan-link")
    page.wait_for_selector("#planner-form")
    assert page.input_value("#id_mtbf") == "1d 8h"  # read from the experiment's failures

    page.fill("#id_work", "1d")
    page.fill("#id_mtbf", "-2h")
    page.click("#plan-button")
    error = page.locator("[data-field=mtbf] .errorlist")
    assert "must be positive" in error.inner_text()
    page.screenshot(path=SCREENSHOTS / "planner-1-form-error.png", full_page=True)
    assert visit.errors == [
        "Failed to load resource: the server responded with a status of 400 (Bad Request)"
    ]
    visit.errors.clear()

    page.fill("#id_mtbf", "32h")
    page.fill("#id_min_interval", "5m")
    page.fill("#id_max_interval", "3h")
    page.fill("#id_points", "6")
    page.fill("#id_replications", "8")
    page.click("#plan-button")
    page.wait_for_selector("h1:has-text('Checkpoint plan for')")
    run = Run.objects.exclude(experiment=experiment).get()
    if not run.is_terminal:
        assert page.locator("#progress progress").count() == 7  # all + one per interval
        page.screenshot(path=SCREENSHOTS / "planner-2-progress.png")

    page.wait_for_selector("#chart-planner .main-svg", timeout=240_000)
    page.wait_for_function(DRAWN, timeout=60_000)
    run.refresh_from_db()
    assert run.status == Status.SUCCEEDED
    assert page.evaluate("document.documentElement.dataset.chartsError || ''") == ""
    names = page.evaluate("() => document.getElementById('chart-planner').data.map(t => t.name)")
    assert "simulated mean" in names
    assert "Daly's closed form" in names
    assert any(name.startswith("empirical optimum") for name in names)
    assert page.locator("#young-interval").inner_text() == "30m 59s"
    assert page.locator("#planner-table tbody tr").count() == 6
    assert page.locator("#planner-table tr.best").count() == 1
    assert "durable only when it completes" in page.locator("#planner-semantics").inner_text()
    page.locator("#planner-optimum").scroll_into_view_if_needed()
    page.screenshot(path=SCREENSHOTS / "planner-3-chart.png")
    page.locator("#chart-planner").screenshot(path=SCREENSHOTS / "planner-4-chart-only.png")

    page.fill("#work-input", "30d")
    page.click("#work-form button")
    page.wait_for_selector("#work-table")
    assert page.locator("#work-table tbody tr").count() == 6
    page.locator("#planner-work").scroll_into_view_if_needed()
    page.screenshot(path=SCREENSHOTS / "planner-5-work-and-assumptions.png")
    assert visit.errors == []
    assert visit.only_this_server()
