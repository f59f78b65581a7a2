"""The decision panel in a real browser: a click on a victim's ✕ in the GPU timeline opens
the decision that chose it (candidates, deciding rule, victims, reprieved), and an event
row opens its decision too. Screenshot in artifacts/screenshots/ (1440x900)."""

from __future__ import annotations

import pytest

from tests.e2e.conftest import SCREENSHOTS
from tests.e2e.test_charts import Visit, _finished_run, _user
from tests.factories import preset_document

pytestmark = [pytest.mark.e2e, pytest.mark.slow]
MARK = """() => { const gd = document.getElementById('chart-gantt');
  gd.scrollIntoView({block: 'center'});
  const trace = gd.data.find(t => t.name === 'victim');
  const xa = gd._fullLayout.xaxis, ya = gd._fullLayout.yaxis;
  const box = gd.getBoundingClientRect();
  return {x: box.left + xa._offset + xa.l2p(trace.x[0]),
          y: box.top + ya._offset + ya.l2p(trace.y[0]), pod: trace.customdata[0][0]}; }"""


@pytest.fixture
def alice(transactional_db):
    return _user("alice")


def test_a_victim_mark_opens_its_decision_panel(browser, server, alice):
    run = _finished_run(alice, preset_document("s1-training-vs-shards"))
    visit = Visit(browser, server, "alice")
    page = visit.page
    page.set_viewport_size({"width": 1440, "height": 900})
    visit.open(f"/runs/{run.pk}/")
    page.wait_for_function(
        "() => document.getElementById('decision-panel').dataset.listening === 'true'"
    )

    mark = page.evaluate(MARK)
    page.mouse.move(mark["x"], mark["y"])
    page.mouse.click(mark["x"], mark["y"])
    page.wait_for_selector("#decision-panel:not([hidden]) #decision-victims")

    victims = page.inner_text("#decision-victims")
    assert mark["pod"] in victims
    assert page.inner_text("#decision-rule").startswith("Deciding rule: ")
    candidates = page.inner_text("#decision-candidates")
    assert "(chosen)" in candidates
    assert page.locator("#decision-reprieved li").count() > 0
    page.screenshot(path=SCREENSHOTS / "decisions-1-victim-panel.png")

    page.click("#decision-close")
    page.select_option("#events-reason", "Preempted")
    page.wait_for_selector("#events-table tbody tr[data-decision]")
    page.click("#events-table tbody tr[data-decision] >> nth=0")
    page.wait_for_selector("#decision-panel:not([hidden]) #decision-victims")
    assert page.inner_text("#decision-title").startswith("Decision #")
    assert visit.errors == []
