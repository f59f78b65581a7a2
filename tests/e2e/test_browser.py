"""A person's path through the app in a real browser: log in, start from a preset in
the form, run it on a real worker, watch it finish, read the results; and cancel a run
that is taking a while. Every request the pages make goes to the app itself."""

from __future__ import annotations

from urllib.parse import urlparse

import pytest
from django.contrib.auth.hashers import make_password

import scheduler_core as sc
from experiments.models import Experiment, Run, Status
from tests.e2e.conftest import SCREENSHOTS
from tests.factories import UserFactory

pytestmark = [pytest.mark.e2e, pytest.mark.worker, pytest.mark.slow]
PASSWORD = "correct horse battery staple"
PRESET = "s3-grace-period"


def _logged_in_page(browser, server: str, requests: list[str]):
    user = UserFactory(username="alice")
    user.password = make_password(PASSWORD, hasher="pbkdf2_sha256")  # what the server reads
    user.save()
    page = browser.new_page(viewport={"width": 1280, "height": 900})
    page.on("request", lambda request: requests.append(request.url))
    page.goto(f"{server}/")
    page.fill("#id_username", "alice")
    page.fill("#id_password", PASSWORD)
    page.click("button[type=submit]")
    page.wait_for_selector("h1:has-text('Experiments')")
    return page


def test_a_preset_is_defined_in_the_form_run_and_its_results_shown(browser, server, stack):
    stack.start_worker(name="e2e", concurrency=2)
    requests: list[str] = []
    page = _logged_in_page(browser, server, requests)

    page.click(f'a[data-preset="{PRESET}"]')
    page.wait_for_selector("input[name='workloads-0-name']")
    page.fill("input[name='meta-tags']", "e2e")
    page.screenshot(path=SCREENSHOTS / "1-editor-from-preset.png", full_page=True)
    page.click("#save")
    page.wait_for_selector("#run-button")
    page.screenshot(path=SCREENSHOTS / "2-experiment.png", full_page=True)
    page.click("#run-button")
    page.wait_for_selector("#summary-table", timeout=90_000)
    page.screenshot(path=SCREENSHOTS / "3-run-results.png", full_page=True)

    experiment = Experiment.objects.get(owner__username="alice")
    run = Run.objects.get(experiment=experiment)
    assert experiment.tag_names == ["e2e", "from-preset"]
    assert run.status == Status.SUCCEEDED
    assert page.inner_text("#run-status") == "succeeded"
    released = page.inner_text("[data-metric='time_to_victims_released']").split()
    assert released[-2:] == ["300", "30"]
    headers = page.locator("#summary-table thead th").all_inner_texts()
    assert [h.lower() for h in headers[1:]] == sc.variant_names(sc.get_preset(PRESET).spec())
    hosts = {urlparse(url).netloc for url in requests}
    assert hosts == {urlparse(server).netloc}


def test_an_error_in_the_form_is_shown_beside_the_field(browser, server, stack):
    page = _logged_in_page(browser, server, [])

    page.click(f'a[data-preset="{PRESET}"]')
    page.fill("input[name='workloads-0-gpus']", "eight")
    page.click("#save")
    page.wait_for_selector("#error-summary")
    page.screenshot(path=SCREENSHOTS / "4-form-error.png", full_page=True)

    field = page.locator("[data-field='workloads-0-gpus']")
    assert field.locator(".errorlist").inner_text() == (
        "Input should be a valid integer, unable to parse string as an integer"
    )
    assert field.locator("input").input_value() == "eight"
    assert Experiment.objects.count() == 0


def test_the_cancel_button_stops_a_running_run(browser, server, stack):
    stack.start_worker(name="slow", SLOW_SIMULATION_SECONDS="60", LAB_PROGRESS_EVERY_SECONDS="0.2")
    page = _logged_in_page(browser, server, [])
    page.click(f'a[data-preset="{PRESET}"]')
    page.click("#save")
    page.click("#run-button")
    page.wait_for_function(
        "() => document.getElementById('progress-overall').value > 0", timeout=60_000
    )
    page.screenshot(path=SCREENSHOTS / "5-run-in-progress.png", full_page=True)
    # Issue 16 §4: a variant with work under way reads "running", never "queued".
    page.wait_for_function(
        "() => Array.from(document.querySelectorAll('#progress [data-variant]'))"
        ".some(row => row.querySelector('progress').value > 0)"
    )
    rows = page.evaluate(
        "() => Array.from(document.querySelectorAll('#progress [data-variant]'))"
        ".map(row => [row.querySelector('progress').value,"
        " row.querySelector('.bar-value').textContent])"
    )
    moving = [text for value, text in rows if 0 < value < 1]
    assert moving, rows
    assert all(text.endswith("· running") for text in moving), rows

    page.click("#cancel-button")
    page.wait_for_selector("#run-cancelled")
    page.screenshot(path=SCREENSHOTS / "6-run-cancelled.png", full_page=True)

    run = Run.objects.get()
    assert run.status == Status.CANCELLED
    assert page.inner_text("#run-status") == "cancelled"
    assert set(run.replications.values_list("status", flat=True)) == {Status.CANCELLED}
