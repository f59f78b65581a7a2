"""Issue 16's acceptance in a real Chromium, for the bullets the other browser tests
leave out: the blank example run on a real worker, the whole spec edited in place from
the form, the import page's window, load and limit options, the event log's folded
setup and units, the metric tooltips and glossary links, the empty compare page
without plotly.js, and every download. Each test leaves 1440x900 screenshots in
artifacts/screenshots/ (viewport shots, one per section, so they can be read)."""

from __future__ import annotations

import re
from pathlib import Path

import pytest
from django.contrib.auth.hashers import make_password

from experiments import services
from experiments.models import Experiment, Status
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
