"""The charts in a real browser: a finished run's page and the compare page drawn by the
app's own plotly.js in headless Chromium, every chart present, no console error, and
the controls (timeline variant and node group, workload sorting, event filters,
compare toggles) doing what they say. Screenshots land in artifacts/screenshots/."""

from __future__ import annotations

from urllib.parse import parse_qs, urlparse

import pytest
from django.contrib.auth.hashers import make_password

from experiments import services
from experiments.models import Status
from tests.e2e.conftest import SCREENSHOTS
from tests.factories import ExperimentFactory, UserFactory, preset_document
from tests.web.charts_support import big_cluster_spec

pytestmark = [pytest.mark.e2e, pytest.mark.slow]
PASSWORD = "correct horse battery staple"
READY = (
    "() => document.documentElement.dataset.chartsReady === 'true' || "
    "document.documentElement.dataset.chartsError"
)
DRAWN = """() => Array.from(document.querySelectorAll('[data-chart]')).filter(el => !el.hidden)
  .map(el => [el.id, el.querySelectorAll('.main-svg').length > 0])"""


class Visit:
    """A logged-in page that records every request and every console error."""

    def __init__(self, browser, server: str, username: str) -> None:
        self.server = server
        self.requests: list[str] = []
        self.errors: list[str] = []
        self.page = browser.new_page(viewport={"width": 1440, "height": 900})
        self.page.on("request", lambda request: self.requests.append(request.url))
        self.page.on("console", lambda m: self.errors.append(m.text) if m.type == "error" else None)
        self.page.on("pageerror", lambda error: self.errors.append(str(error)))
        self.page.goto(f"{server}/")
        self.page.fill("#id_username", username)
        self.page.fill("#id_password", PASSWORD)
        self.page.click("button[type=submit]")
        self.page.wait_for_selector("h1:has-text('Experiments')")

    def open(self, path: str) -> None:
        self.page.goto(self.server + path)
        self.wait()

    def wait(self) -> None:
        self.page.wait_for_function(READY, timeout=60_000)
        assert self.page.evaluate("document.documentElement.dataset.chartsError || ''") == ""

    def charts(self) -> dict[str, bool]:
        return dict(self.page.evaluate(DRAWN))

    def figure(self, element_id: str) -> dict:
        """What Plotly drew in a chart: its traces and layout, as the browser has them."""
        return self.page.evaluate(
            f"() => {{ const el = document.getElementById('{element_id}');"
            " return {data: el.data.map(t => ({name: t.name, type: t.type,"
            " customdata: t.customdata || null})), title: el.layout.title.text}; }"
        )

    def only_this_server(self) -> bool:
        return {urlparse(url).netloc for url in self.requests} == {urlparse(self.server).netloc}


def _user(username: str):
    user = UserFactory(username=username)
    user.password = make_password(PASSWORD, hasher="pbkdf2_sha256")  # what the server reads
    user.save()
    return user


def _finished_run(owner, spec: dict):
    run = services.run_enqueue(experiment=ExperimentFactory(owner=owner, spec=spec), user=owner)
    run.refresh_from_db()
    assert run.status == Status.SUCCEEDED
    return run


@pytest.fixture
def alice(transactional_db):
    return _user("alice")


def test_a_finished_run_draws_every_chart(browser, server, alice):
    run = _finished_run(alice, preset_document("s1-training-vs-shards"))
    visit = Visit(browser, server, "alice")

    visit.open(f"/runs/{run.pk}/")
    visit.page.screenshot(path=SCREENSHOTS / "charts-1-run-page.png", full_page=True)
    for section in ("glance", "milestones", "timeline", "costs"):  # readable 1440x900 shots
        visit.page.locator(f"#charts-{section}").evaluate("el => el.scrollIntoView()")
        visit.page.wait_for_timeout(500)  # Plotly re-lays out after the full-page shot
        visit.page.screenshot(path=SCREENSHOTS / f"charts-1-{section}.png")

    charts = visit.charts()
    assert set(charts) == {
        "chart-headline-time_to_victims_released",
        "chart-headline-time_to_group_useful",
        "chart-headline-lost_work",
        "chart-headline-time_to_recover",
        "chart-headline-stranded_capacity",
        "chart-tradeoff",
        "chart-milestones",
        "chart-gantt",
        "chart-states",
        "chart-costs",
        "chart-recovery",
    }
    assert all(charts.values()), charts
    shapes = visit.page.evaluate(
        "() => document.getElementById('chart-states').data.map(t => t.line && t.line.shape)"
    )
    assert shapes
    assert set(shapes) == {"hv"}  # GPUs by pod state: steps, not slopes (issue 16 §2)
    victims = next(t for t in visit.figure("chart-gantt")["data"] if t["name"] == "victim")
    assert sorted(c[0] for c in victims["customdata"]) == [
        "train-0",
        "train-1",
        "train-2",
        "train-3",
    ]
    assert visit.errors == []
    assert visit.only_this_server()


def test_the_run_page_controls(browser, server, alice):
    run = _finished_run(alice, preset_document("s1-training-vs-shards"))
    visit = Visit(browser, server, "alice")
    visit.open(f"/runs/{run.pk}/")
    page = visit.page

    page.select_option("#timeline-variant", label="workload-aware-all")
    page.wait_for_function("() => document.getElementById('timeline-status').textContent === ''")
    victims = next(t for t in visit.figure("chart-gantt")["data"] if t["name"] == "victim")
    assert sorted(c[0] for c in victims["customdata"]) == [f"eval-{i}" for i in range(8)]

    page.click("#workloads-table th[data-sort='workload']")
    page.wait_for_selector("#workloads-table th[data-sort='workload'][aria-sort='descending']")
    assert page.locator("#workloads-table tbody td:first-child").all_inner_texts() == [
        "urgent urgent",
        "train",
        "eval",
    ]
    page.fill("#workloads-filter", "independent")
    page.wait_for_function(
        "() => document.getElementById('workloads-count').textContent.startsWith('1 of 3')"
    )

    page.select_option("#events-reason", "Preempted")
    page.wait_for_function("() => document.querySelectorAll('#events-table tbody tr').length === 4")
    reasons = page.locator("#events-table tbody td:nth-child(2)").all_inner_texts()
    assert reasons == ["Preempted"] * 4
    page.locator("#charts-events").screenshot(path=SCREENSHOTS / "charts-2-event-log.png")
    assert visit.errors == []


def test_a_large_cluster_opens_on_a_heatmap_and_zooms_into_a_group(browser, server, alice):
    run = _finished_run(alice, big_cluster_spec())
    visit = Visit(browser, server, "alice")

    visit.open(f"/runs/{run.pk}/")

    assert visit.charts()["chart-occupancy"] is True
    page = visit.page
    first = visit.figure("chart-gantt")["title"]
    other = "b" if first.endswith(": a") else "a"
    page.select_option("#timeline-group", label=other)
    page.wait_for_function(
        f"() => document.getElementById('chart-gantt').layout.title.text.endsWith(': {other}')"
    )
    page.locator("#charts-timeline").screenshot(path=SCREENSHOTS / "charts-3-timeline-groups.png")
    assert page.evaluate(FITS) == []  # the heatmap's and the Gantt's node labels too
    assert visit.errors == []


def test_a_run_past_the_span_budget_still_draws_the_gpus_by_pod_state(browser, server, alice):
    """The fleet preset's 5-minute checkpoints are 24 million write overlays, past the
    store's span budget: the Gantt says its spans were not drawn, and the whole
    cluster's GPUs by state and the heatmap of node groups (the core's area, from every
    span) draw all the same, with the writes in them (both were empty before)."""
    run = _finished_run(alice, preset_document("s13-fleet-reliability"))
    visit = Visit(browser, server, "alice")

    visit.open(f"/runs/{run.pk}/")

    page = visit.page
    page.locator("#charts-timeline").evaluate("el => el.scrollIntoView()")
    page.wait_for_timeout(500)
    page.locator("#charts-timeline").screenshot(path=SCREENSHOTS / "charts-4-past-budget.png")
    assert "pod spans or more" in visit.figure("chart-gantt")["title"]
    drawn = page.evaluate(
        "() => Object.fromEntries(document.getElementById('chart-states').data"
        ".map(t => [t.name, Math.max(...t.y)]))"
    )
    assert drawn["running"] > 0
    assert drawn["checkpointing"] > 0
    # and the heatmap of node groups, from the GPUs each group held (kept by the core)
    held = page.evaluate(
        "() => Math.max(...document.getElementById('chart-occupancy').data[0].z.flat())"
    )
    assert held > 0.5
    assert visit.errors == []


def test_the_compare_page_draws_the_selection_and_keeps_it_in_the_url(browser, server, alice):
    s1 = _finished_run(alice, preset_document("s1-training-vs-shards"))
    s3 = _finished_run(alice, preset_document("s3-grace-period"))
    visit = Visit(browser, server, "alice")

    visit.open(f"/compare/?v={s1.pk}:pod&v={s1.pk}:workload-aware-all&v={s3.pk}:grace-30s")
    visit.page.screenshot(path=SCREENSHOTS / "charts-4-compare.png", full_page=True)
    visit.page.wait_for_timeout(500)  # Plotly re-lays out after the full-page shot
    visit.page.screenshot(path=SCREENSHOTS / "charts-4-compare-top.png")
    visit.page.locator("#chart-tradeoff").evaluate("el => el.scrollIntoView()")
    visit.page.wait_for_timeout(500)
    visit.page.screenshot(path=SCREENSHOTS / "charts-4-compare-charts.png")

    charts = visit.charts()
    assert len(charts) == 9
    assert all(charts.values()), charts
    assert visit.page.locator("#compare-table td.best").count() > 0
    every_metric = visit.page.locator("#compare-table tbody tr").count()
    visit.page.check("#compare-diff")
    visit.page.wait_for_url("**diff=1**")
    visit.wait()
    query = parse_qs(urlparse(visit.page.url).query)
    assert query["v"] == [f"{s1.pk}:pod", f"{s1.pk}:workload-aware-all", f"{s3.pk}:grace-30s"]
    assert query["diff"] == ["1"]
    assert 0 < visit.page.locator("#compare-table tbody tr").count() < every_metric
    assert visit.page.locator("[data-metric='time_to_victims_selected']").count() == 0
    assert visit.errors == []
    assert visit.only_this_server()


FITS = """() => {
  // Every tick label, axis title and legend entry lies inside its chart's drawing,
  // no legend covers an axis title or scrolls (what a colour means must be in sight)
  // and the toolbar covers no title (issue 16 §2).
  const problems = [];
  const inside = (r, box) => r.left >= box.left - 1 && r.right <= box.right + 1 &&
                             r.top >= box.top - 1 && r.bottom <= box.bottom + 1;
  const overlap = (a, b) => a.left < b.right && b.left < a.right && a.top < b.bottom &&
                            b.top < a.bottom;
  document.querySelectorAll('[data-chart]').forEach(chart => {
    if (chart.hidden) return;
    const svg = chart.querySelector('.main-svg');
    if (!svg) return;
    const box = svg.getBoundingClientRect();
    const texts = chart.querySelectorAll('.xtick text, .ytick text, .g-xtitle text, ' +
                                         '.g-ytitle text, .legendtext');
    texts.forEach(t => {
      const r = t.getBoundingClientRect();
      if (r.width && !inside(r, box)) problems.push(chart.id + ': ' + t.textContent);
    });
    const bar = chart.querySelector('.modebar');
    const title = chart.querySelector('.gtitle');
    if (bar && title && title.textContent && overlap(bar.getBoundingClientRect(),
                                                     title.getBoundingClientRect()))
      problems.push(chart.id + ': toolbar over ' + title.textContent);
    const full = chart._fullLayout && chart._fullLayout.legend;
    if (full && full._height > full._maxHeight)
      problems.push(chart.id + ': legend scrolls (' + full._height + ' > ' + full._maxHeight + ')');
    const legend = chart.querySelector('.legend');
    if (legend) {
      const l = legend.getBoundingClientRect();
      chart.querySelectorAll('.g-xtitle text, .g-ytitle text').forEach(t => {
        if (t.textContent && overlap(l, t.getBoundingClientRect()))
          problems.push(chart.id + ': legend over ' + t.textContent);
      });
    }
  });
  return problems;
}"""


def test_no_chart_clips_a_label_or_hides_an_axis_title(browser, server, alice):
    spec = preset_document("s1-training-vs-shards")
    renamed = {}
    for node in spec["cluster"]["nodes"]:
        renamed[node["name"]] = f"{node['name']}-a-very-long-node-name-in-zone-europe-west4"
        node["name"] = renamed[node["name"]]
    for pod in spec.get("initialState") or []:
        pod["node"] = renamed[pod["node"]]
    run = _finished_run(alice, spec)
    visit = Visit(browser, server, "alice")

    visit.open(f"/runs/{run.pk}/")
    visit.page.screenshot(path=SCREENSHOTS / "charts-5-long-names.png", full_page=True)
    visit.page.locator("#chart-gantt").screenshot(path=SCREENSHOTS / "charts-5-gantt.png")

    assert visit.page.evaluate(FITS) == []
    ticks = visit.page.locator("#chart-gantt .ytick text").all_text_contents()
    assert ticks
    assert all(t.endswith("…") and len(t) < 40 for t in ticks), ticks  # shortened...
    plot = visit.page.locator("#chart-gantt .nsewdrag").first.bounding_box()
    visit.page.mouse.move(plot["x"] + plot["width"] * 0.7, plot["y"] + plot["height"] * 0.75)
    visit.page.wait_for_selector("#chart-gantt .hoverlayer .hovertext")
    hover = visit.page.locator("#chart-gantt .hoverlayer").text_content()
    assert "-a-very-long-node-name-in-zone-europe-west4" in hover  # ...and whole on hover
    # After the window is resized (Plotly redraws responsive charts), each drawing still
    # lies inside its own box: no chart runs over the next one.
    visit.page.set_viewport_size({"width": 1100, "height": 700})
    visit.page.set_viewport_size({"width": 1440, "height": 900})
    visit.page.wait_for_timeout(500)
    assert visit.page.evaluate(CONTAINED) == []
    assert visit.page.evaluate(FITS) == []
    assert visit.errors == []


CONTAINED = """() => Array.from(document.querySelectorAll('[data-chart]'))
  .filter(el => !el.hidden && el.querySelector('.main-svg')).flatMap(el => {
    const box = el.getBoundingClientRect();
    const svg = el.querySelector('.main-svg').getBoundingClientRect();
    return svg.bottom <= box.bottom + 1 && svg.top >= box.top - 1 ? [] : [el.id];
  })"""


def test_the_workloads_table_says_it_scrolls_and_lets_columns_be_chosen(browser, server, alice):
    run = _finished_run(alice, preset_document("s1-training-vs-shards"))
    visit = Visit(browser, server, "alice")
    page = visit.page
    page.set_viewport_size({"width": 900, "height": 900})
    visit.open(f"/runs/{run.pk}/")
    lost = page.locator("#workloads-table thead th[data-sort='lost_work']")

    assert page.locator("#workloads-scroll-hint").is_visible()
    assert lost.count() == 1
    page.click("#workloads-columns summary")
    page.uncheck("#workloads-columns input[value='lost_work']")
    assert lost.count() == 0
    page.locator("#charts-workloads").screenshot(path=SCREENSHOTS / "charts-6-workloads.png")

    visit.open(f"/runs/{run.pk}/")  # the choice is remembered in this browser
    assert lost.count() == 0
    assert page.locator("#workloads-table thead th").first.get_attribute("data-sort") == "workload"
    assert visit.errors == []


def test_each_chart_downloads_as_png_and_svg_and_the_tables_as_files(browser, server, alice):
    """Issue 16 §4: plotly's toolbar is on, with PNG and SVG; the run page's download
    buttons hand over the files."""
    run = _finished_run(alice, preset_document("s3-grace-period"))
    visit = Visit(browser, server, "alice")
    visit.page.context.set_default_timeout(30_000)
    visit.open(f"/runs/{run.pk}/")
    page = visit.page
    chart = page.locator("#chart-milestones")
    chart.hover()
    titles = page.evaluate(
        "() => Array.from(document.querySelectorAll("
        "'#chart-milestones .modebar-btn')).map(b => b.dataset.title)"
    )
    assert not any("Share" in title for title in titles)  # nothing leaves this server

    with page.expect_download() as svg:
        chart.locator(".modebar-btn[data-title='Download plot as SVG']").click()
    assert svg.value.suggested_filename.endswith(".svg")
    with page.expect_download() as png:
        chart.locator(".modebar-btn[data-title='Download plot as a PNG']").click()
    assert png.value.suggested_filename.endswith(".png")
    with page.expect_download() as csv:
        page.click("#downloads a[data-download='events.csv']")
    assert csv.value.suggested_filename == f"run-{run.pk}-events.csv"
    assert visit.errors == []
