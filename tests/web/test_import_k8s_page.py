"""The Kubernetes import page (issue 11 §1, "a browser page"): manifests pasted or
uploaded, with an optional cluster snapshot, are previewed (objects per kind, the
workloads, the notes, the per-kind defaults in use, editable) without storing anything,
then saved as the experiment the core's reader makes of them."""

from __future__ import annotations

import html
import json
import re
from pathlib import Path
from typing import Any

from django.core.files.uploadedfile import SimpleUploadedFile

from experiments.forms_import import PASTED_MANIFESTS, ManifestImportForm
from experiments.models import Experiment
from experiments.specs import spec_document
from scheduler_core.k8s import read_manifests
from scheduler_core.traces import ImportOptions, KindDefaults

URL = "/experiments/import/kubernetes/"
FIXTURES = Path(__file__).resolve().parents[1] / "core" / "fixtures" / "k8s"
THREE_CLASS = FIXTURES / "seed-004-three-class-setup.yaml"
CLUSTER = FIXTURES / "cluster-4x8.yaml"
DEPLOYMENT = FIXTURES / "seed-004-deployment.yaml"


def page_form(**changes: Any) -> dict[str, Any]:
    """What a browser posts: every field as the page showed it, then ``changes``."""
    form = ManifestImportForm()
    data = {name: form[name].value() for name in form.fields if name not in ("files", "snapshot")}
    data = {name: "" if value is None else value for name, value in data.items()}
    return {**data, **changes}


def text_of(response) -> str:
    return html.unescape(response.content.decode())


def located_errors(response) -> list[tuple[str, str, str, str]]:
    items = re.findall(
        r'<li class="trace-error" data-file="([^"]*)" data-line="(\d+)" '
        r'data-column="(\d+)"><code>[^<]*</code> ([^<]*)</li>',
        response.content.decode(),
    )
    return [(f, line, column, html.unescape(message)) for f, line, column, message in items]


def carried_value(response) -> str:
    match = re.search(
        r'<input type="hidden" name="carried" value="([^"]*)"', response.content.decode()
    )
    assert match, "the page carries the uploaded files to the save"
    return html.unescape(match.group(1))


def test_the_import_pages_link_to_the_kubernetes_import(alice_client):
    listing = alice_client.get("/")
    traces = alice_client.get("/experiments/import/")

    assert URL in listing.content.decode()
    assert URL in traces.content.decode()


def test_a_pasted_preview_shows_kinds_workloads_notes_and_the_defaults_in_use(alice_client):
    response = alice_client.post(
        URL, page_form(manifests=THREE_CLASS.read_text(), action="preview")
    )

    assert response.status_code == 200
    preview = response.context["preview"]
    assert dict(preview["kinds"]) == {
        "Deployment": 1,
        "Job": 2,
        "Node": 1,
        "PriorityClass": 3,
        "ResourceQuota": 1,
    }
    assert [w["name"] for w in preview["workloads"]] == [
        "chat-frontend-inference",
        "bulk-generation",
        "finetune",
    ]
    assert preview["kind_usage"] == {"inference": 1, "batch": 1, "training": 1}
    page = text_of(response)
    expected = read_manifests([THREE_CLASS])
    for note in expected.notes:  # the core's notes, every one, on the page
        assert f'<li class="import-note">{note}</li>' in page
    assert 'class="in-use" data-workloads="1"' in response.content.decode()
    assert not Experiment.objects.exists()  # a preview stores nothing


def test_unused_objects_are_named_in_the_previewed_notes(alice_client):
    extra = (
        "---\napiVersion: v1\nkind: ConfigMap\nmetadata: {name: settings, namespace: ml}\n"
        "---\napiVersion: networking.k8s.io/v1\nkind: Ingress\nmetadata: {name: web}\n"
    )
    response = alice_client.post(
        URL, page_form(manifests=THREE_CLASS.read_text() + extra, action="preview")
    )

    notes = response.context["preview"]["notes"]
    assert "left out, a kind this model does not read: ConfigMap ml/settings, Ingress web" in notes


def test_save_stores_what_the_core_reads_with_an_edited_default(alice_client, alice):
    response = alice_client.post(
        URL,
        page_form(
            manifests=THREE_CLASS.read_text(),
            tags="k8s, seed",
            action="save",
            default__batch__startupSeconds="45",
        ),
    )

    experiment = Experiment.objects.get()
    assert response.status_code == 302
    assert response.url == f"/experiments/{experiment.pk}/"
    defaults = KindDefaults.builtin().with_overrides({"batch.startupSeconds": "45"})
    expected = read_manifests([THREE_CLASS], ImportOptions(defaults=defaults))
    assert experiment.spec == spec_document(expected.spec)
    assert experiment.spec["workloads"][1]["startupSeconds"] == 45
    assert (experiment.owner, experiment.tag_names) == (alice, ["k8s", "seed"])


def test_the_saved_experiment_page_shows_the_import_notes(alice_client):
    response = alice_client.post(
        URL, page_form(manifests=THREE_CLASS.read_text(), action="save"), follow=True
    )

    messages = [str(m) for m in response.context["messages"]]
    assert (
        "Import note: ResourceQuota serving/interactive-gpus: applies cluster-wide here "
        "(the model has no namespaces)" in messages
    )


def test_uploaded_files_are_carried_from_the_preview_to_the_save(alice_client):
    manifests = SimpleUploadedFile("deployment.yaml", DEPLOYMENT.read_bytes())
    snapshot = SimpleUploadedFile("cluster.yaml", CLUSTER.read_bytes())
    preview = alice_client.post(
        URL, page_form(files=[manifests], snapshot=snapshot, action="preview")
    )
    assert preview.context["preview"]["cluster"]["nodes"] == 4
    carried = carried_value(preview)
    assert [name for name, _ in json.loads(carried)] == ["deployment.yaml", "cluster.yaml"]

    saved = alice_client.post(URL, page_form(carried=carried, action="save"))

    assert saved.status_code == 302, (
        saved.context["form"].errors,
        saved.context["form"].file_errors,
    )
    expected = read_manifests([DEPLOYMENT, CLUSTER])
    assert Experiment.objects.get().spec == spec_document(expected.spec)


def test_malformed_yaml_is_located_in_the_paste_and_nothing_is_stored(alice_client):
    text = "apiVersion: v1\nkind: Pod\nmetadata:\n  name: [unclosed\n"
    response = alice_client.post(URL, page_form(manifests=text, action="save"))

    assert response.status_code == 200
    [(file, line, _column, message)] = located_errors(response)
    assert (file, message.startswith("malformed YAML")) == (PASTED_MANIFESTS, True)
    assert int(line) >= 4
    assert not Experiment.objects.exists()


def test_a_pod_naming_a_missing_class_is_refused_by_name(alice_client):
    text = (
        "apiVersion: v1\nkind: Pod\nmetadata: {name: p}\nspec:\n"
        "  priorityClassName: gold\n  containers: [{name: c}]\n"
    )
    response = alice_client.post(URL, page_form(manifests=text, action="preview"))

    assert located_errors(response) == [
        (
            PASTED_MANIFESTS,
            "1",
            "1",
            "Pod p: spec.priorityClassName: no PriorityClass with name 'gold' was found",
        )
    ]
    assert response.context["preview"] is None
    assert not Experiment.objects.exists()


def test_nothing_pasted_or_chosen_is_an_error(alice_client):
    response = alice_client.post(URL, page_form(action="preview"))

    assert response.context["form"].non_field_errors() == [
        "Paste manifests or choose files to import."
    ]


def test_a_bad_default_is_shown_at_its_cell(alice_client):
    response = alice_client.post(
        URL,
        page_form(
            manifests=THREE_CLASS.read_text(), action="save", default__batch__startupSeconds="soon"
        ),
    )

    assert response.context["form"].errors["default__batch__startupSeconds"]
    assert not Experiment.objects.exists()


def test_files_too_large_to_carry_are_asked_for_again(alice_client, monkeypatch):
    from experiments import forms_import

    monkeypatch.setattr(forms_import, "MAX_CARRIED_CHARS", 100)
    manifests = SimpleUploadedFile("deployment.yaml", DEPLOYMENT.read_bytes())
    response = alice_client.post(URL, page_form(files=[manifests], action="preview"))

    assert response.context["preview"] is not None
    assert carried_value(response) == ""
    assert "Choose deployment.yaml again before saving" in text_of(response)
