"""Issue #12 acceptance, in a real browser: the stranded band on the GPU timeline and in
"GPUs by pod state" spans exactly the interval the events give. The figures are read
back from what Plotly drew on the page (``page.evaluate``), not from the server's JSON.

S1's `pod` variant evicts all four training workers at once, so its log has no Stranded
event and its page must draw no stranded band; the synchronous-gang case of the issue
(S1 with a one-pod urgent workload, ``tests/gang_case.py``) strands three survivors from
the preemption to the replacement's Ready, which the page must draw to the second."""

from __future__ import annotations

import pytest

from tests.e2e.conftest import SCREENSHOTS
from tests.e2e.test_charts import Visit, _finished_run, alice  # noqa: F401 (fixture)
from tests.factories import preset_document, stored_events
from tests.gang_case import gang_document, stranded_interval_from_events

pytestmark = [pytest.mark.e2e, pytest.mark.slow]

DRAWN_STRANDED = """() => {
  const gantt = document.getElementById('chart-gantt').data
    .filter(t => t.name === 'stranded' && t.type === 'bar');
  const bars = gantt.flatMap(t => (t.base || []).map((b, i) =>
    [t.customdata[i][0], b, b + t.x[i], t.customdata[i][2]]));
  const states = document.getElementById('chart-states').data
    .find(t => t.name === 'stranded');
  return {bars: bars, x: Array.from(states.x), y: Array.from(states.y)};
}"""


def _drawn(visit: Visit) -> dict:
    return visit.page.evaluate(DRAWN_STRANDED)


def test_the_gang_s_stranded_band_spans_exactly_the_interval_the_events_give(
    browser,
    server,
    alice,  # noqa: F811
):
    run = _finished_run(alice, gang_document())
    start, end = stranded_interval_from_events(stored_events(run.replications.get()))
    visit = Visit(browser, server, "alice")

    visit.open(f"/runs/{run.pk}/")
    visit.page.locator("#charts-timeline").screenshot(
        path=SCREENSHOTS / "timeline-stranded-band.png"
    )

    drawn = _drawn(visit)
    assert sorted(drawn["bars"]) == [
        [pod, start, end, 2] for pod in ("train-0", "train-1", "train-2")
    ]
    inside = {y for x, y in zip(drawn["x"], drawn["y"], strict=True) if start + 15 < x < end - 15}
    outside = {
        y for x, y in zip(drawn["x"], drawn["y"], strict=True) if x < start - 15 or x > end + 15
    }
    assert inside == {6}
    assert outside == {0}
    assert visit.errors == []


def test_s1_pod_draws_no_stranded_band_because_its_events_give_none(browser, server, alice):  # noqa: F811
    run = _finished_run(alice, preset_document("s1-training-vs-shards"))
    pod = run.replications.get(variant="pod")
    assert not [e for e in stored_events(pod) if e.reason == "Stranded"]
    visit = Visit(browser, server, "alice")

    visit.open(f"/runs/{run.pk}/")

    drawn = _drawn(visit)
    assert drawn["bars"] == []
    assert set(drawn["y"]) == {0}
    assert visit.errors == []
