"""The compare page over placement studies in a real browser (#18 §3): variants of two
study runs (other seeds) drawn as allocation against arrived load, one line each, and
tabled at the asked load; the time-based charts left out. Screenshot in
artifacts/screenshots/."""

from __future__ import annotations

import pytest

from tests.e2e.conftest import SCREENSHOTS
from tests.e2e.test_charts import FITS, Visit, _finished_run, alice  # noqa: F401 (fixture)
from tests.factories import preset_document

pytestmark = [pytest.mark.e2e, pytest.mark.slow]
S17 = "s17-placement-study"


def test_the_compare_page_charts_studies_against_arrived_load(browser, server, alice):  # noqa: F811
    first = _finished_run(alice, {**preset_document(S17), "replications": 2, "seed": 42})
    second = _finished_run(alice, {**preset_document(S17), "replications": 2, "seed": 7})
    visit = Visit(browser, server, "alice")

    chosen = [f"{first.pk}:FGD", f"{first.pk}:Random", f"{second.pk}:FGD", f"{second.pk}:Random"]
    visit.open("/compare/?" + "&".join(f"v={ref}" for ref in chosen))
    visit.page.locator("#compare-studies").scroll_into_view_if_needed()
    visit.page.screenshot(path=SCREENSHOTS / "compare-studies.png", full_page=True)

    charts = visit.charts()
    assert set(charts) == {"chart-study-curve", "chart-study-at-load"}
    assert all(charts.values()), charts
    names = visit.page.evaluate(
        "() => document.getElementById('chart-study-curve').data"
        ".filter(t => t.fill !== 'toself').map(t => t.name)"
    )
    assert names == [
        "every request placed",
        f"#{first.pk} FGD",
        f"#{first.pk} Random",
        f"#{second.pk} FGD",
        f"#{second.pk} Random",
    ]
    assert visit.page.locator("#compare-study-table tbody tr").count() == 4
    assert visit.page.locator("#compare-table").count() == 0
    assert visit.page.evaluate(FITS) == []
    assert visit.errors == []
    assert visit.only_this_server()
