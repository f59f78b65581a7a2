"""Importing Kubernetes manifests in a real browser (issue 11 §1): paste the seed
article's three-class setup, preview what was read (objects per kind, workloads, notes,
the defaults in use), edit a default, save, and land on the new experiment."""

from __future__ import annotations

from pathlib import Path

import pytest
from django.contrib.auth.hashers import make_password

from experiments.models import Experiment
from tests.e2e.conftest import SCREENSHOTS
from tests.factories import UserFactory

pytestmark = [pytest.mark.e2e, pytest.mark.slow]
PASSWORD = "correct horse battery staple"
THREE_CLASS = (
    Path(__file__).resolve().parents[1]
    / "core"
    / "fixtures"
    / "k8s"
    / "seed-004-three-class-setup.yaml"
)


def test_pasted_manifests_are_previewed_edited_and_saved(browser, server):
    user = UserFactory(username="alice")
    user.password = make_password(PASSWORD, hasher="pbkdf2_sha256")
    user.save()
    page = browser.new_page(viewport={"width": 1440, "height": 900})
    page.goto(f"{server}/")
    page.fill("#id_username", "alice")
    page.fill("#id_password", PASSWORD)
    page.click("button[type=submit]")

    page.click("#import-k8s-link")
    page.wait_for_selector("#k8s-import-form")
    page.fill("textarea[name='manifests']", THREE_CLASS.read_text())
    page.fill("input[name='tags']", "e2e-k8s")
    page.click("#preview-button")
    page.wait_for_selector("#preview")

    kinds = page.inner_text("#preview-kinds")
    assert "PriorityClass" in kinds
    assert "ResourceQuota" in kinds
    workloads = page.inner_text("#preview-workloads")
    for name in ("chat-frontend-inference", "bulk-generation", "finetune"):
        assert name in workloads
    assert "applies cluster-wide here" in page.inner_text("#preview-notes")
    assert page.locator("tr.in-use[data-kind='batch']").count() == 1
    assert not Experiment.objects.exists()  # a preview stores nothing

    page.fill("input[name='default__batch__startupSeconds']", "45")
    page.locator("#preview").scroll_into_view_if_needed()
    page.screenshot(path=SCREENSHOTS / "import-k8s-1-preview.png")
    page.click("#save-button")
    page.wait_for_selector("#run-button")
    page.screenshot(path=SCREENSHOTS / "import-k8s-2-experiment.png")

    experiment = Experiment.objects.get(owner__username="alice")
    assert page.url == f"{server}/experiments/{experiment.pk}/"
    assert experiment.tag_names == ["e2e-k8s"]
    bulk = next(w for w in experiment.spec["workloads"] if w["name"] == "bulk-generation")
    assert bulk["startupSeconds"] == 45
    assert "Import note:" in page.inner_text(".messages")
