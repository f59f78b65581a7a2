"""The Gantt of a shared-GPU run in a real browser (#18): preset s16's shares drawn in
their devices' slots, each device framed, so a partly used device shows as one. The
screenshot lands in artifacts/screenshots/."""

from __future__ import annotations

import pytest

from tests.e2e.conftest import SCREENSHOTS
from tests.e2e.test_charts import Visit, _finished_run, alice  # noqa: F401 (fixture)
from tests.factories import preset_document

pytestmark = [pytest.mark.e2e, pytest.mark.slow]

DRAWN = """() => {
  const el = document.getElementById('chart-gantt');
  const bars = el.data.filter(t => t.name === 'running' && t.showlegend === false
    && t.hoverinfo !== 'skip');
  const shares = bars.flatMap(t => t.customdata.map((c, i) => [c[0], c[4], t.width[i]]));
  const frames = (el.layout.shapes || []).filter(s => s.xref === 'paper' && s.yref === 'y');
  return {shares: shares, frames: frames.length,
          drawn: el.querySelectorAll('.shapelayer path').length};
}"""


def test_the_gantt_draws_each_share_in_its_device_slot(browser, server, alice):  # noqa: F811
    run = _finished_run(alice, preset_document("s16-shared-gpus"))
    visit = Visit(browser, server, "alice")

    visit.open(f"/runs/{run.pk}/")
    gantt = visit.page.locator("#chart-gantt")
    gantt.scroll_into_view_if_needed()
    gantt.screenshot(path=SCREENSHOTS / "shared-gpus-gantt.png")

    drawn = visit.page.evaluate(DRAWN)
    labels = {pod: label for pod, label, _ in drawn["shares"]}
    assert labels["serving-0"] == "600 milli-GPU of GPU 0"
    assert labels["batch-1"] == "200 milli-GPU of GPU 0"
    assert labels["serving-7"] == "600 milli-GPU of GPU 7"
    widths = {pod: width for pod, _, width in drawn["shares"]}
    assert widths["serving-0"] == pytest.approx(3 * widths["batch-0"], abs=3e-4)
    assert drawn["frames"] == 8
    assert drawn["drawn"] >= 8
    assert visit.errors == []
