"""Importing a recorded cluster in a real browser: from the experiments list to the
import page, upload an openb node list and pod list, edit the QoS mapping, and land on
the new experiment, ready to edit and run."""

from __future__ import annotations

from pathlib import Path

import pytest
from django.contrib.auth.hashers import make_password

from experiments.models import Experiment
from tests.e2e.conftest import SCREENSHOTS
from tests.factories import UserFactory

pytestmark = [pytest.mark.e2e, pytest.mark.slow]
PASSWORD = "correct horse battery staple"
TRACES = Path(__file__).resolve().parents[1] / "core" / "fixtures" / "traces"


def test_an_uploaded_trace_becomes_an_experiment_the_browser_lands_on(browser, server):
    user = UserFactory(username="alice")
    user.password = make_password(PASSWORD, hasher="pbkdf2_sha256")  # what the server reads
    user.save()
    page = browser.new_page(viewport={"width": 1280, "height": 900})
    page.goto(f"{server}/")
    page.fill("#id_username", "alice")
    page.fill("#id_password", PASSWORD)
    page.click("button[type=submit]")

    page.click("#import-link")
    page.wait_for_selector("#import-form")
    page.select_option("select[name='format']", "openb")
    page.set_input_files(
        "input[name='files']", [TRACES / "openb_nodes.csv", TRACES / "openb_pods.csv"]
    )
    mapping = page.locator("textarea[name='qos_map_openb']")
    mapping.fill(mapping.input_value().replace("value: 1000\n", "value: 7\n"))
    page.fill("input[name='tags']", "e2e-import")
    assert page.locator(".qos-map[data-format='dlrm']").is_hidden()
    page.screenshot(path=SCREENSHOTS / "import-1-form.png", full_page=True)
    page.click("#import")
    page.wait_for_selector("#run-button")
    page.screenshot(path=SCREENSHOTS / "import-2-experiment.png", full_page=True)

    experiment = Experiment.objects.get(owner__username="alice")
    assert page.url == f"{server}/experiments/{experiment.pk}/"
    assert experiment.tag_names == ["e2e-import"]
    classes = {c["name"]: c["value"] for c in experiment.spec["priorityClasses"]}
    assert classes["best-effort"] == 7
    assert "Imported" in page.inner_text(".messages")
