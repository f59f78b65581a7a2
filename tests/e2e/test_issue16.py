"""Issue 16's acceptance in a real Chromium, for the bullets the other browser tests
leave out: the blank example run on a real worker, the whole spec edited in place from
the form, the import page's window, load and limit options, the event log's folded
setup and units, the metric tooltips and glossary links, the empty compare page
without plotly.js, and every download. Each test leaves 1440x900 screenshots in
artifacts/screenshots/ (viewport shots, one per section, so they can be read)."""

from __future__ import annotations

import re
from contextlib import nullcontext
from pathlib import Path

import pytest
from django.contrib.auth.hashers import make_password
from django.utils import timezone

import scheduler_core as sc
from experiments import services
from experiments.models import Experiment, Run, Status
from tests.e2e.conftest import SCREENSHOTS, _answers, _free_port
from tests.factories import ExperimentFactory, UserFactory, preset_document
from tests.web.live import wait_for

pytestmark = [pytest.mark.e2e, pytest.mark.slow]
PASSWORD = "correct horse battery staple"
VIEWPORT = {"width": 1440, "height": 900}
TRACES = Path(__file__).resolve().parents[1] / "core" / "fixtures" / "traces"
READY = (
    "() => document.documentElement.dataset.chartsReady === 'true' || "
    "document.documentElement.dataset.chartsError"
)
CLOCK = re.compile(r"^-?\d+:\d\d:\d\d$")


def _logged_in(browser, server: str, errors: list[str] | None = None):
    user = UserFactory(username="alice")
    user.password = make_password(PASSWORD, hasher="pbkdf2_sha256")  # what the server reads
    user.save()
    page = browser.new_page(viewport=VIEWPORT)
    if errors is not None:
        page.on("console", lambda m: errors.append(m.text) if m.type == "error" else None)
        page.on("pageerror", lambda error: errors.append(str(error)))
    page.goto(f"{server}/accounts/login/")
    page.fill("#id_username", "alice")
    page.fill("#id_password", PASSWORD)
    page.click("button[type=submit]")
    page.wait_for_selector("h1:has-text('Experiments')")
    return page, user


def _shot(page, selector: str, name: str) -> None:
    """A 1440x900 viewport shot with ``selector`` scrolled to the top of the window."""
    page.locator(selector).first.evaluate("el => el.scrollIntoView({block: 'start'})")
    page.wait_for_timeout(150)
    page.screenshot(path=SCREENSHOTS / name)


def _finished_run(owner, spec: dict):
    run = services.run_enqueue(experiment=ExperimentFactory(owner=owner, spec=spec), user=owner)
    run.refresh_from_db()
    assert run.status == Status.SUCCEEDED
    return run


def _charts_ready(page) -> None:
    page.wait_for_function(READY, timeout=60_000)
    assert page.evaluate("document.documentElement.dataset.chartsError || ''") == ""


# ------------------------------------------------------------------ §1 editing


@pytest.mark.worker
def test_the_blank_example_run_shows_the_variants_differ(browser, server, stack):
    """§1: "New experiment" as it opens, saved and run on a real worker: with preemption
    the urgent notebook is useful within a minute, without it never before the horizon."""
    stack.start_worker(name="blank", concurrency=2)
    errors: list[str] = []
    page, _ = _logged_in(browser, server, errors)
    page.click("nav >> text=New experiment")
    page.wait_for_selector("input[name='workloads-0-gpus']")
    page.click("#save")
    page.click("#run-button")
    page.wait_for_selector("#summary-table", timeout=120_000)
    _charts_ready(page)
    drawn = timezone.now()
    run = Run.objects.get()
    # §4: the charts appear when the run succeeds (the page polls each second and
    # reloads at once), not seconds later.
    late = (drawn - run.finished_at).total_seconds()
    print(f"charts drawn {late:.2f} s after the run finished")
    assert late < 3.0
    _shot(page, "#summary-table", "16-1-blank-example-summary.png")
    _shot(page, "#charts-glance", "16-1-blank-example-charts.png")

    assert page.inner_text("#run-status") == "succeeded"
    heads = page.locator("#summary-table thead th").all_inner_texts()[1:]
    assert [h.split()[0].lower() for h in heads] == ["pod-preemption", "no-preemption"]
    useful = page.locator("#summary-table tr[data-metric='time_to_group_useful'] td")
    with_preemption, without = useful.all_inner_texts()
    assert float(with_preemption.replace(",", "")) < 60
    assert without == "never (> horizon)"
    lost = page.locator("#summary-table tr[data-metric='lost_work'] td").all_inner_texts()
    assert float(lost[0].replace(",", "")) > 0
    assert lost[1] == "0"
    assert errors == []


def test_the_form_edits_the_whole_spec_in_place(browser, server):
    """§1: tolerations, node selectors, taints, PDBs, topology, the initial state, queues
    and quotas, timeline events, the grid and policy settings, all from the form (added
    in place, durations as people write them), saved in one go into the spec."""
    errors: list[str] = []
    page, user = _logged_in(browser, server, errors)
    page.click("nav >> text=New experiment")
    page.wait_for_selector("input[name='workloads-0-gpus']")
    page.evaluate("() => { window.sameDocument = true; }")  # gone if the page reloads

    page.fill("input[name='spec-horizon_seconds']", "1h30m")
    page.fill("input[name='spec-policy__min_runtime_seconds']", "5m")
    page.fill("[name='spec-grid']", "workloads.training.checkpoint.intervalSeconds: [600, 1800]")
    page.fill("input[name='nodePools-0-taints']", "dedicated=ml:NoSchedule")
    page.fill("input[name='nodePools-0-labels']", "pool=gpu")
    page.fill("input[name='workloads-0-tolerations']", "dedicated=ml:NoSchedule")
    page.fill("input[name='workloads-0-node_selector']", "pool=gpu")
    page.fill("input[name='workloads-1-tolerations']", "dedicated=ml:NoSchedule")
    page.fill("input[name='workloads-0-pdb__min_available']", "1")
    page.fill("[name='workloads-0-pod_group__topology']", "levels: [zone, rack]")
    page.fill("input[name='workloads-1-queue']", "team-a")
    for section, field in [
        ("queues", "name"),
        ("resourceQuotas", "gpus"),
        ("initialState", "node"),
        ("events", "at"),
    ]:
        page.click(f"button[value='add:{section}']")
        page.wait_for_selector(f"[name='{section}-0-{field}']")
    assert page.evaluate("() => window.sameDocument") is True
    page.fill("input[name='queues-0-name']", "team-a")
    page.fill("input[name='queues-0-nominal_gpus']", "16")
    page.fill("input[name='resourceQuotas-0-priority_class_name']", "low")
    page.fill("input[name='resourceQuotas-0-gpus']", "12")
    page.fill("input[name='initialState-0-workload']", "training")
    page.fill("input[name='initialState-0-node']", "gpu-0")
    page.fill("input[name='initialState-0-started_at']", "-2h")
    page.fill("input[name='events-0-at']", "45m")
    page.select_option("select[name='events-0-type']", "drain")
    page.fill("input[name='events-0-pool']", "gpu")
    page.fill("input[name='events-0-count']", "1")
    page.fill("input[name='events-0-timeout_seconds']", "10m")
    _shot(page, "#section-events", "16-1-whole-spec-in-place.png")
    page.click("#save")
    if page.locator("#error-summary").count():
        pytest.fail(page.inner_text("#error-summary"))
    page.wait_for_selector("#run-button")

    spec = Experiment.objects.get(owner=user).spec
    assert spec["horizonSeconds"] == 5400
    assert spec["policy"]["minRuntimeSeconds"] == 300
    assert spec["grid"] == {"workloads.training.checkpoint.intervalSeconds": [600, 1800]}
    pool = spec["cluster"]["nodePools"][0]
    assert pool["taints"] == [{"key": "dedicated", "value": "ml", "effect": "NoSchedule"}]
    training = spec["workloads"][0]
    assert training["nodeSelector"] == {"pool": "gpu"}
    assert training["tolerations"][0]["key"] == "dedicated"
    assert training["pdb"]["minAvailable"] == 1
    assert training["podGroup"]["topology"]["levels"] == ["zone", "rack"]
    assert spec["workloads"][1]["queue"] == "team-a"
    assert spec["queues"][0]["name"] == "team-a"
    assert spec["resourceQuotas"] == [{"priorityClassName": "low", "gpus": 12}]
    assert spec["initialState"][0]["startedAt"] == -7200
    event = spec["events"][0]
    assert (event["at"], event["type"], event["timeoutSeconds"]) == (2700, "drain", 600)

    page.click("text=Edit")  # durations come back as written, not as seconds
    page.wait_for_selector("input[name='spec-horizon_seconds']")
    assert page.input_value("input[name='spec-horizon_seconds']") == "1h 30m"  # reads back
    assert page.input_value("input[name='events-0-at']") == "45m"
    assert page.input_value("input[name='initialState-0-started_at']") == "-2h"
    assert errors == []


# ------------------------------------------------------------- §2 understanding


def test_every_metric_name_head_and_chart_title_explains_itself(browser, server):
    """§2: the summary's metric names, the workload table's column heads and the headline
    charts' titles carry the registry's definition, unit and better direction; a metric
    name leads to its glossary entry."""
    errors: list[str] = []
    page, user = _logged_in(browser, server, errors)
    run = _finished_run(user, preset_document("s1-training-vs-shards"))
    page.goto(f"{server}/runs/{run.pk}/")
    _charts_ready(page)

    lost = page.locator("#summary-table tr[data-metric='lost_work'] th")
    tip = lost.get_attribute("title")
    assert tip.startswith("Lost work (GPU·s): Progress since the last durable checkpoint")
    assert "Unit: GPU-seconds" in tip
    assert tip.endswith("Lower is better.")
    goodput = page.locator("#summary-table tr[data-metric='goodput'] th").get_attribute("title")
    assert goodput.endswith("Higher is better.")
    every_row = page.locator("#summary-table tbody th").evaluate_all(
        "ths => ths.every(th => /Unit: .* is better\\.$/.test(th.title))"
    )
    assert every_row is True

    head = page.locator("#workloads-table thead th[data-sort='lost_work']")
    assert head.get_attribute("title") == tip
    assert page.locator("#workloads-table thead th[data-sort='kind']").get_attribute("title") in (
        None,
        "",
    )
    title = page.locator("#chart-headline-time_to_group_useful .gtitle")
    title.hover()
    assert title.locator("title").text_content().endswith("Lower is better.")
    box = title.bounding_box()
    hit = page.evaluate(
        "([x, y]) => !!document.elementFromPoint(x, y).closest('.gtitle')",
        [box["x"] + box["width"] / 2, box["y"] + box["height"] / 2],
    )
    assert hit is True  # the title takes the pointer, so the browser shows the tooltip
    _shot(page, "#charts-glance", "16-2-chart-titles.png")

    lost.locator("a").click()
    page.wait_for_url("**/metrics/#metric-lost_work")
    entry = page.locator("#metric-lost_work")
    assert "Progress since the last durable checkpoint" in entry.inner_text()
    assert "GPU·s" in entry.inner_text()
    page.screenshot(path=SCREENSHOTS / "16-2-glossary.png")
    assert errors == []


def test_the_event_log_folds_the_setup_and_reads_one_time_format_with_units(browser, server):
    """§2: the initial placement (t <= 0) is folded on the run page and the full log, so
    the preemption is on screen at once; every time reads h:mm:ss; VALUE has units."""
    errors: list[str] = []
    page, user = _logged_in(browser, server, errors)
    run = _finished_run(user, preset_document("s1-training-vs-shards"))
    page.goto(f"{server}/runs/{run.pk}/")
    _charts_ready(page)
    rows = page.locator("#events-table tbody tr:not(:has(.setup-folded))")

    assert "setup events at t ≤ 0" in page.inner_text("#events-table .setup-folded")
    times = page.locator("#events-table tbody td:nth-child(3)").all_inner_texts()
    assert times
    assert all(CLOCK.match(t) for t in times), times
    assert "0:00:00" not in times  # the setup rows are folded away
    shown = page.locator("#events-table tbody td:nth-child(2)").all_inner_texts()[:10]
    assert "Preempted" in shown  # the preemption is visible at once
    _shot(page, "#charts-events", "16-2-event-log-folded.png")
    folded = rows.count()
    page.click("#events-show-setup")
    page.wait_for_function(
        "() => !document.querySelector('#events-table .setup-folded') && "
        "Array.from(document.querySelectorAll('#events-table tbody td:nth-child(3)'))"
        ".some(td => td.textContent === '0:00:00')"
    )
    assert rows.count() > folded or page.locator("#events-pager").inner_text()

    page.goto(f"{server}/runs/{run.pk}/")
    _charts_ready(page)
    with page.expect_popup() if page.get_attribute("#events-full", "target") else nullcontext():
        page.click("#events-full")
    page.wait_for_selector("table#events")
    assert page.locator("#setup-folded").is_visible()
    assert page.locator("table#events thead th").all_inner_texts()[0].lower().startswith("time")
    cells = page.locator("table#events tbody td:nth-child(6)").all_inner_texts()
    values = [c for c in cells if c.strip()]
    assert values
    unit = re.compile(r"^(-?[\d,.]+ [^\d\s,.]+|yes|no)$")
    assert [v for v in values if not unit.match(v)] == []  # "300 s", "1 pod", a flag "yes"
    assert "5 s" in values  # Killing: the grace period, in seconds
    assert any(v.endswith(" GPU·s") for v in values)  # Disrupted: the work lost
    clocks = page.locator("table#events tbody td:nth-child(1)").all_inner_texts()
    assert all(CLOCK.match(t) for t in clocks), clocks
    page.screenshot(path=SCREENSHOTS / "16-2-event-log-page.png")
    assert errors == []


# ---------------------------------------------------- §3 recorded clusters


@pytest.fixture
def limited_server(stack) -> str:
    """The app with an instance limit of 2 workloads (the fixture trace has 4)."""
    port = _free_port()
    stack.start_web(port, LAB_MAX_WORKLOADS="2")
    wait_for(lambda: _answers(port), timeout=30, what="the web server", stack=stack)
    return f"http://127.0.0.1:{port}"


def test_the_import_page_takes_a_window_reshapes_the_load_and_names_the_limit(
    browser, limited_server
):
    """§3: above the instance's workload limit the import says which setting refuses it
    and which field brings it under; sampling, a window (start, horizon as durations) and
    compressed arrivals then import it."""
    server = limited_server
    page, user = _logged_in(browser, server)
    page.click("#import-link")
    page.wait_for_selector("#import-form")
    page.select_option("select[name='format']", "openb")
    files = [TRACES / "openb_nodes.csv", TRACES / "openb_pods.csv"]
    page.set_input_files("input[name='files']", files)
    page.click("#import")
    page.wait_for_selector(".errorlist")
    page.screenshot(path=SCREENSHOTS / "16-3-import-limit.png", full_page=False)
    text = page.inner_text("#import-form")
    assert "above the limit of 2 (LAB_MAX_WORKLOADS)" in text
    assert "set “Sample to N workloads” lower" in text  # the field, by its label
    assert "(“Start (trace time)”, “Horizon”)" in text
    assert Experiment.objects.count() == 0

    page.set_input_files("input[name='files']", files)  # a browser drops files on a redisplay
    page.fill("input[name='sample']", "2")
    page.fill("input[name='seed']", "3")
    page.fill("input[name='horizon_seconds']", "1d")
    page.fill("input[name='compress']", "4")
    page.fill("input[name='start_seconds']", "0s")
    _shot(page, "input[name='start_seconds']", "16-3-import-window-and-load.png")
    page.click("#import")
    page.wait_for_selector("#run-button")

    spec = Experiment.objects.get(owner=user).spec
    assert len(spec["workloads"]) == 2
    assert spec["horizonSeconds"] == 86400
    assert "arrivals compressed x4" in page.content()  # the import's notes say so
    page.screenshot(path=SCREENSHOTS / "16-3-imported.png")


# ------------------------------------------- §4 navigating, taking results away


def test_the_empty_compare_page_loads_no_plotly(browser, server):
    """§5 (checked here): the compare page with nothing chosen asks for no plotly.js."""
    page, user = _logged_in(browser, server)
    _finished_run(user, preset_document("s3-grace-period"))
    requests: list[str] = []
    page.on("request", lambda request: requests.append(request.url))
    page.click("nav >> text=Compare")
    page.wait_for_load_state("networkidle")
    page.screenshot(path=SCREENSHOTS / "16-4-compare-empty.png")

    assert requests  # the page itself was fetched
    assert not [url for url in requests if "plotly" in url.lower()]
    assert page.evaluate("() => typeof window.Plotly") == "undefined"


def test_the_run_page_hands_over_the_spec_and_every_table_in_every_format(browser, server):
    """§4: the spec as YAML; summary, workloads and events as CSV, JSON and Parquet."""
    page, user = _logged_in(browser, server)
    run = _finished_run(user, preset_document("s3-grace-period"))
    page.goto(f"{server}/runs/{run.pk}/")
    _shot(page, "#downloads", "16-4-downloads.png")

    offered = page.locator("#downloads a[data-download]").evaluate_all(
        "links => links.map(a => a.dataset.download)"
    )
    assert set(offered) >= {
        f"{table}.{fmt}"
        for table in ("summary", "workloads", "events")
        for fmt in ("csv", "json", "parquet")
    }
    with page.expect_download() as spec:
        page.click("#downloads a:has-text('The spec it ran (YAML)')")
    text = Path(spec.value.path()).read_text()
    assert text.startswith("name: ") or "\nname: " in text
    for name in offered:  # each button's file, as the browser would fetch it
        link = page.locator(f"#downloads a[data-download='{name}']")
        assert link.get_attribute("download") is not None
        answer = page.request.get(server + link.get_attribute("href"))
        assert answer.status == 200, (name, answer.status, answer.text()[:300])
        body = answer.body()
        if name.endswith(".parquet"):
            assert body[:4] == b"PAR1", name
        elif name.endswith(".json"):
            assert body.lstrip()[:1] in (b"[", b"{"), name
        else:
            assert b"," in body.splitlines()[0], name
    with page.expect_download() as download:  # and a click hands the file over
        page.click("#downloads a[data-download='workloads.parquet']")
    assert download.value.suggested_filename == f"run-{run.pk}-workloads.parquet"


def test_presets_are_listed_once_and_a_copy_keeps_the_from_preset_tag(browser, server):
    """§4: each preset shows once, on a card (or, once installed, as a row, never both);
    "Use this preset" says it makes a copy, and the saved copy is tagged from-preset."""
    page, user = _logged_in(browser, server)
    cards = page.locator("a[data-preset]")
    every = len(sc.list_presets(studies=True))
    assert cards.count() == every
    assert set(cards.all_inner_texts()) == {"Use this preset (makes a copy)"}
    _shot(page, "#presets", "16-4-presets.png")

    page.click("a[data-preset='s3-grace-period']")
    page.click("#save")
    page.wait_for_selector("#run-button")
    assert Experiment.objects.get(owner=user).tag_names == ["from-preset"]

    Experiment.objects.filter(owner=user).delete()
    installed = services.presets_install(owner=user)  # what make run does for admin
    page.goto(f"{server}/")
    assert page.locator("a[data-preset]").count() == 0  # no card repeats a row
    assert page.locator("#presets-installed").is_visible()
    listed = page.locator("#experiments tbody tr").all_inner_texts()
    for experiment in installed:
        assert sum(experiment.name in row for row in listed) == 1, experiment.name
