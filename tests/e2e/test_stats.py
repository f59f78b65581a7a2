"""Issue #12 §2 in a real browser: the compare page's paired deltas, and the run page's
replication selector (chosen in the page, kept in the URL, drawn by the server on a
reload). Screenshots at 1440x900 in artifacts/screenshots/."""

from __future__ import annotations

import json
from urllib.parse import parse_qs, urlparse

import pytest

import scheduler_core as sc
from experiments.specs import spec_document
from scheduler_core.stats import difference
from tests.e2e.conftest import SCREENSHOTS
from tests.e2e.test_charts import Visit, _finished_run, _user
from tests.web.test_stats_pages import RECLAIM

pytestmark = [pytest.mark.e2e, pytest.mark.slow]
VIEWPORT = {"width": 1440, "height": 900}
GANTT = """() => JSON.stringify(document.getElementById('chart-gantt').data
  .map(t => [t.name, t.x, t.base, t.y]))"""


@pytest.fixture
def alice(transactional_db):
    return _user("alice")


@pytest.fixture
def reclaim(alice):
    return _finished_run(alice, spec_document(sc.parse_spec(RECLAIM)))


def _seeded(run, variant: str) -> dict:
    return {
        seed: summary["lost_work"]
        for seed, summary in run.replications.filter(variant=variant).values_list("seed", "summary")
    }


def test_the_compare_page_shows_paired_deltas(browser, server, reclaim):
    visit = Visit(browser, server, "alice")
    visit.page.set_viewport_size(VIEWPORT)
    visit.open(
        f"/compare/?v={reclaim.pk}:no-notice-checkpoint&v={reclaim.pk}:checkpoint-on-notice&diff=1"
    )
    page = visit.page

    delta = page.locator("#compare-table tr[data-metric='lost_work'] .delta[data-interval]")
    kinds = delta.evaluate_all("els => els.map(e => e.dataset.interval)")
    assert kinds == ["", "paired"]  # the baseline, then the paired difference
    expected = difference(
        _seeded(reclaim, "no-notice-checkpoint"), _seeded(reclaim, "checkpoint-on-notice")
    )
    text = delta.nth(1).inner_text()
    assert text.startswith(f"-{-expected.mean:,.0f} ± ")
    assert text.rstrip().endswith("PAIRED")  # the kind is printed (small caps by CSS)
    assert page.locator("#compare-interval-kind").inner_text().startswith("Intervals shown: paired")
    assert page.locator("#parameter-diff tbody tr").count() == 2
    page.locator("#compare-table").scroll_into_view_if_needed()
    page.screenshot(path=SCREENSHOTS / "stats-1-compare-paired.png")
    assert visit.errors == []
    assert visit.only_this_server()


def test_the_replication_selector_draws_and_keeps_each_replication(browser, server, reclaim):
    visit = Visit(browser, server, "alice")
    visit.page.set_viewport_size(VIEWPORT)
    visit.open(f"/runs/{reclaim.pk}/")
    page = visit.page
    assert page.locator("#run-product-version").inner_text() == reclaim.product_version
    page.locator("#provenance").screenshot(path=SCREENSHOTS / "stats-4-provenance.png")
    options = page.locator("#timeline-variant option").all_inner_texts()
    assert len(options) == 10
    assert options[0] == "no-notice-checkpoint · replication 0"

    drawn = {}
    for number in range(5):  # a random spot node is reclaimed: not every seed draws alike
        chosen = reclaim.replications.get(variant="checkpoint-on-notice", replication=number)
        page.select_option("#timeline-variant", str(chosen.pk))
        page.wait_for_function(
            "() => document.getElementById('timeline-status').textContent === ''"
        )
        assert parse_qs(urlparse(page.url).query)["replication"] == [str(chosen.pk)]
        drawn[chosen.pk] = page.evaluate(GANTT)
    assert len(set(drawn.values())) > 1

    last = chosen
    page.reload()
    visit.wait()
    assert page.locator("#timeline-variant").input_value() == str(last.pk)
    data = json.loads(page.locator("#run-charts-data").text_content())
    assert data["timeline"]["replication"] == last.pk
    assert page.evaluate(GANTT) == drawn[last.pk]
    page.locator("#charts-timeline").scroll_into_view_if_needed()
    page.screenshot(path=SCREENSHOTS / "stats-2-replication-selector.png")
    assert visit.errors == []


def test_s8_none_is_flagged_and_reads_never_in_the_browser(browser, server, alice):
    """S8's `none` variant: flagged above the charts, never ★ best, "never (> horizon)"
    where its gang's time to useful would be."""
    from tests.factories import preset_document

    run = _finished_run(alice, preset_document("s8-gang-at-scale"))
    visit = Visit(browser, server, "alice")
    visit.page.set_viewport_size(VIEWPORT)
    visit.open(f"/runs/{run.pk}/")
    page = visit.page

    assert page.locator("#run-unserved").inner_text().startswith("⚠ none: an urgent workload")
    notes = page.evaluate(
        "() => document.getElementById('chart-headline-time_to_group_useful')"
        ".layout.annotations.map(a => [a.x, a.text])"
    )
    assert ["none", "never (> horizon)"] in notes
    assert ["workload-aware", "★ best"] in notes
    lost = page.evaluate(
        "() => document.getElementById('chart-headline-lost_work')"
        ".layout.annotations.map(a => [a.x, a.text])"
    )
    assert ["none", "★ best"] not in lost
    page.locator("#charts-glance").scroll_into_view_if_needed()
    page.screenshot(path=SCREENSHOTS / "stats-3-s8-unserved.png")
    assert visit.errors == []
