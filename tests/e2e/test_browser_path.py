"""The browser path (issue 16), in a real Chromium: every error after one save, each
linked to its field; the Docs section; the Runs page and the experiments list. Each
test leaves a 1440x900 screenshot in artifacts/screenshots/."""

from __future__ import annotations

import pytest
from django.contrib.auth.hashers import make_password

from experiments.models import Status
from tests.e2e.conftest import SCREENSHOTS
from tests.factories import ExperimentFactory, RunFactory, UserFactory

pytestmark = [pytest.mark.e2e, pytest.mark.slow]
PASSWORD = "correct horse battery staple"
VIEWPORT = {"width": 1440, "height": 900}


def _logged_in(browser, server: str):
    user = UserFactory(username="alice")
    user.password = make_password(PASSWORD, hasher="pbkdf2_sha256")
    user.save()
    page = browser.new_page(viewport=VIEWPORT)
    page.goto(f"{server}/accounts/login/")
    page.fill("#id_username", "alice")
    page.fill("#id_password", PASSWORD)
    page.click("button[type=submit]")
    page.wait_for_selector("h1:has-text('Experiments')")
    return page, user


def test_one_save_lists_every_error_and_each_link_goes_to_its_field(browser, server):
    page, _ = _logged_in(browser, server)
    page.click("nav >> text=New experiment")
    page.wait_for_selector("input[name='workloads-0-gpus']")
    assert page.input_value("input[name='workloads-0-duration_seconds']") == "2h"

    page.fill("input[name='workloads-0-gpus']", "1.5")
    page.fill("input[name='workloads-1-priority_class_name']", "urgnet")
    page.check("input[name='priorityClasses-1-global_default']")
    page.click("#save")
    page.wait_for_selector("#error-summary")
    page.screenshot(path=SCREENSHOTS / "16-1-every-error.png")

    banner = page.locator("#error-summary")
    text = banner.inner_text()
    assert "3 problems to fix" in text
    assert "must be a whole number, got 1.5" in text
    assert "urgnet" in text
    assert "only one PriorityClass may be globalDefault" in text
    banner.locator("a[href='#id_workloads-1-priority_class_name']").click()
    page.wait_for_function("() => location.hash === '#id_workloads-1-priority_class_name'")
    box = page.locator("#id_workloads-1-priority_class_name").bounding_box()
    assert box is not None
    assert box["y"] + box["height"] > 0  # the field is on screen after the jump
    assert box["y"] < VIEWPORT["height"]


def test_the_docs_section_is_in_the_app(browser, server):
    page, _ = _logged_in(browser, server)
    page.click("nav >> text=Docs")
    page.wait_for_selector("h1:has-text('Docs')")
    page.click(".docs-index >> text=The application model")
    page.wait_for_selector("#doc h1:has-text('The application model')")
    page.screenshot(path=SCREENSHOTS / "16-2-docs.png")
    assert page.locator("#doc table").count() >= 1
    assert "../shared" not in page.content()
    index = page.locator(".docs-index").inner_text()
    for title in ("Metrics", "The presets", "Recorded clusters"):  # the list
        assert title in index
    page.click(".docs-index >> text=Kubernetes and Kueue preemption, exactly")
    page.wait_for_selector("#doc h1:has-text('Kubernetes and Kueue preemption, exactly')")
    assert "pickOneNodeForPreemption" in page.inner_text("#doc")
    page.screenshot(path=SCREENSHOTS / "16-2-docs-preemption.png")


def test_the_runs_page_and_the_last_run_of_each_experiment(browser, server):
    page, user = _logged_in(browser, server)
    experiment = ExperimentFactory(owner=user)
    RunFactory(experiment=experiment, status=Status.FAILED, error="worker lost")
    RunFactory(experiment=experiment, status=Status.SUCCEEDED, progress=1.0)

    page.goto(f"{server}/")
    row = page.locator("#experiments tbody tr", has_text=experiment.name)
    assert row.locator(".badge").inner_text() == "succeeded"
    page.click("nav >> text=Runs")
    page.wait_for_selector("#run-list")
    page.screenshot(path=SCREENSHOTS / "16-4-runs.png")
    assert page.locator("#run-list tbody tr").count() == 2
    page.select_option("#run-status", "failed")
    page.click("form.filters button[type=submit]")
    page.wait_for_selector("#run-list tbody tr >> text=worker lost")
    assert page.locator("#run-list tbody tr").count() == 1


def test_add_and_remove_happen_in_place_and_a_new_kind_offers_its_defaults(browser, server):
    page, user = _logged_in(browser, server)
    page.click("nav >> text=New experiment")
    page.wait_for_selector("input[name='workloads-0-gpus']")
    page.evaluate("() => { window.sameDocument = true; }")  # gone if the page reloads
    errors: list[str] = []
    page.on("pageerror", lambda error: errors.append(str(error)))

    page.click("button[value='add:workloads:batch']")
    page.wait_for_selector("input[name='workloads-2-name']")
    assert page.evaluate("() => window.sameDocument") is True
    assert page.evaluate("() => window.scrollY") > 0  # not back at the top
    assert page.input_value("input[name='workloads-2-name']") == "batch-1"
    page.screenshot(path=SCREENSHOTS / "16-1-added-in-place.png")

    page.check("input[name='workloads-1-DELETE']")
    assert not page.locator("input[name='workloads-1-gpus']").is_visible()
    page.uncheck("input[name='workloads-1-DELETE']")
    assert page.locator("input[name='workloads-1-gpus']").is_visible()
    page.check("input[name='workloads-1-DELETE']")

    page.once("dialog", lambda dialog: dialog.accept())
    page.select_option("select[name='workloads-2-kind']", "training")
    assert page.input_value("input[name='workloads-2-members']") == "4"
    assert page.input_value("input[name='workloads-2-gpus']") == "8"
    assert page.input_value("input[name='workloads-2-checkpoint__interval_seconds']") == "30m"
    assert page.input_value("input[name='workloads-2-name']") == "batch-1"  # kept
    page.once("dialog", lambda dialog: dialog.dismiss())
    page.select_option("select[name='workloads-2-kind']", "notebook")
    assert page.input_value("input[name='workloads-2-members']") == "4"  # said no: untouched

    page.fill("input[name='workloads-2-members']", "1")
    page.fill("input[name='workloads-2-pod_group__min_count']", "")
    page.click("#save")
    page.wait_for_selector("#run-button")
    experiment = user.experiments.get()
    assert [w["name"] for w in experiment.spec["workloads"]] == ["training", "batch-1"]
    assert experiment.spec["workloads"][1]["kind"] == "notebook"
    assert errors == []
