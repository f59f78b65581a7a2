"""The experiment editor: a form tab and a YAML tab over one spec, the same validation
in both, errors beside the field they concern, and nothing the user typed lost."""

from __future__ import annotations

import re
from html import unescape

import pytest
import yaml
from django.urls import reverse
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

import scheduler_core as sc
from experiments.editor.document import get_path
from experiments.models import Experiment
from experiments.specs import spec_document
from tests.factories import ExperimentFactory, RunFactory, UserFactory
from tests.web.pages import element_text, form_fields

NEW = reverse("experiments:new")
PRESET_IDS = [preset.id for preset in sc.list_presets(studies=True)]


def _open(client, url: str) -> dict[str, str]:
    response = client.get(url)
    assert response.status_code == 200
    return form_fields(response.content.decode())


def _post(client, url: str, data: dict[str, str], action: str = "save"):
    return client.post(url, {**data, "action": action})


def _field_errors(response, name: str) -> list[str]:
    """The errors shown inside the wrapper of field ``name`` (empty: none)."""
    html = response.content.decode()
    assert f'data-field="{name}"' in html, f"no field {name} on the page"
    wrapper = html.split(f'data-field="{name}"', 1)[1].split("</div>", 1)[0]
    if 'class="errorlist"' not in wrapper:
        return []
    return [unescape(item) for item in re.findall(r"<li>(.*?)</li>", wrapper, re.S)]


@pytest.mark.parametrize("preset_id", PRESET_IDS)
def test_saving_a_preset_from_the_form_stores_exactly_its_spec(alice_client, alice, preset_id):
    data = _open(alice_client, f"{NEW}?preset={preset_id}")

    response = _post(alice_client, NEW, data)

    experiment = Experiment.objects.get(owner=alice)
    assert response.status_code == 302
    assert response["Location"] == reverse("experiments:detail", args=[experiment.pk])
    assert experiment.spec == spec_document(sc.get_preset(preset_id).spec())
    assert experiment.source_preset == preset_id


@pytest.mark.parametrize("preset_id", PRESET_IDS)
def test_the_yaml_tab_round_trips_every_preset(alice_client, alice, preset_id):
    data = _open(alice_client, f"{NEW}?preset={preset_id}")
    yaml_page = _post(alice_client, NEW, data, action="tab:yaml")
    yaml_data = form_fields(yaml_page.content.decode())
    assert yaml_data["mode"] == "yaml"

    response = _post(alice_client, NEW, yaml_data)

    assert response.status_code == 302
    experiment = Experiment.objects.get(owner=alice)
    assert experiment.spec == spec_document(sc.get_preset(preset_id).spec())


def test_a_bad_value_is_shown_beside_its_field_and_kept(alice_client, alice):
    data = _open(alice_client, f"{NEW}?preset=s3-grace-period")
    data["workloads-0-gpus"] = "eight"

    response = _post(alice_client, NEW, data)

    assert response.status_code == 200
    assert _field_errors(response, "workloads-0-gpus") == [
        "Input should be a valid integer, unable to parse string as an integer"
    ]
    assert form_fields(response.content.decode())["workloads-0-gpus"] == "eight"
    assert _field_errors(response, "workloads-1-gpus") == []
    assert not Experiment.objects.exists()


@pytest.mark.parametrize(
    ("field", "value", "message"),
    [
        ("workloads-1-priority_class_name", "nope", "no PriorityClass with name 'nope' was found"),
        ("spec-horizon_seconds", "-5", "Input should be greater than 0"),
        ("spec-replications", "0", "Input should be greater than or equal to 1"),
        (
            "priorityClasses-1-value",
            "2000000000",
            "2000000000 is above 1,000,000,000, the highest value a user-defined "
            "PriorityClass may have",
        ),
        (
            "variants-1-set",
            "workloads.batch-job.nope: 1",
            "workloads.batch-job.nope: unknown field 'nope'",
        ),
        (
            "workloads-0-checkpoint__interval_seconds",
            "soon",
            "'soon' is not a duration (use seconds or e.g. '30s', '5m', '2h', '1h30m', '1d')",
        ),
    ],
    ids=["unknown-class", "horizon", "replications", "class-value", "override", "duration"],
)
def test_each_spec_error_lands_beside_its_field(alice_client, field, value, message):
    data = _open(alice_client, f"{NEW}?preset=s3-grace-period")
    data[field] = value

    response = _post(alice_client, NEW, data)

    assert response.status_code == 200
    assert _field_errors(response, field) == [message]
    assert form_fields(response.content.decode())[field] == value


def test_a_too_large_node_request_points_at_the_workload(alice_client):
    data = _open(alice_client, f"{NEW}?preset=s3-grace-period")
    data["nodes-0-gpus"] = "1"

    response = _post(alice_client, NEW, data)

    assert _field_errors(response, "workloads-0-gpus") == [
        "a member needs 8 GPU(s), 4 CPU and 32 GiB, more than any node has"
    ]


def test_yaml_syntax_errors_name_the_line_and_keep_the_text(alice_client):
    text = "name: broken\ncluster:\n  nodes: [\n"
    response = _post(alice_client, NEW, {"mode": "yaml", "yaml-text": text})

    assert response.status_code == 200
    html = response.content.decode()
    assert form_fields(html)["yaml-text"] == text
    problems = element_text(html, "aria-label", "Problems")[0]
    assert problems.startswith("Problems malformed YAML: line 4, column 1:")
    assert not Experiment.objects.exists()


def test_yaml_spec_errors_are_listed_with_their_line(alice_client):
    document = spec_document(sc.get_preset("s3-grace-period").spec())
    document["workloads"][1]["gpus"] = "many"
    text = sc.spec_to_yaml(sc.get_preset("s3-grace-period").spec()).replace(
        "  gpus: 2\n", "  gpus: many\n"
    )
    line = text.splitlines().index("  gpus: many") + 1

    response = _post(alice_client, NEW, {"mode": "yaml", "yaml-text": text})

    assert response.status_code == 200
    html = response.content.decode()
    assert element_text(html, "data-path", "workloads[1].gpus") == [
        f"line {line} workloads[1].gpus Input should be a valid integer, unable to parse "
        "string as an integer"
    ]
    assert form_fields(html)["yaml-text"] == text


def test_switching_tabs_keeps_what_was_typed_even_if_invalid(alice_client):
    data = _open(alice_client, f"{NEW}?preset=s3-grace-period")
    data["workloads-0-gpus"] = "eight"
    data["meta-tags"] = "draft, q3"

    as_yaml = form_fields(_post(alice_client, NEW, data, "tab:yaml").content.decode())
    document = yaml.safe_load(as_yaml["yaml-text"])
    assert document["workloads"][0]["gpus"] == "eight"
    assert as_yaml["meta-tags"] == "draft, q3"

    back = form_fields(_post(alice_client, NEW, as_yaml, "tab:form").content.decode())
    assert back["workloads-0-gpus"] == "eight"
    assert back["meta-tags"] == "draft, q3"
    assert back["mode"] == "form"


def test_yaml_the_form_cannot_show_stays_in_the_yaml_tab(alice_client):
    text = "name: x\nworkloads: just text\n"
    response = _post(alice_client, NEW, {"mode": "yaml", "yaml-text": text}, "tab:form")

    html = response.content.decode()
    assert response.status_code == 200
    assert form_fields(html)["mode"] == "yaml"
    assert form_fields(html)["yaml-text"] == text
    assert "'workloads' must be a list of mappings to open the spec in the form" in unescape(html)


def test_fields_the_form_does_not_show_survive_an_edit_in_the_form(alice_client, alice):
    spec = sc.parse_spec(
        {
            **spec_document(sc.get_preset("s3-grace-period").spec()),
            "initialState": [{"workload": "batch-job", "node": "node-a"}],
        }
    )
    document = spec_document(spec)
    document["workloads"][0]["nodeSelector"] = {"zone": "a"}
    document["cluster"]["nodes"][0]["labels"] = {"zone": "a"}
    experiment = ExperimentFactory(owner=alice, spec=spec_document(sc.parse_spec(document)))
    url = reverse("experiments:edit", args=[experiment.pk])
    data = _open(alice_client, url)
    data["workloads-0-gpus"] = "4"

    response = _post(alice_client, url, data)

    assert response.status_code == 302
    experiment.refresh_from_db()
    assert experiment.spec["workloads"][0]["gpus"] == 4
    assert experiment.spec["workloads"][0]["nodeSelector"] == {"zone": "a"}
    assert experiment.spec["initialState"] == [
        {
            "workload": "batch-job",
            "node": "node-a",
            "startedAt": 0.0,
            "member": None,
            "terminatingUntil": None,
            "nominated": False,
        }
    ]


@pytest.mark.parametrize(
    ("kind", "expected"),
    [
        (
            "training",
            {
                "members": 4,
                "gpus": 8,
                "recovery.model": "synchronous",
                "podGroup.minCount": 4,
                "podGroup.disruptionMode": "All",
                "checkpoint.intervalSeconds": 1800.0,
            },
        ),
        (
            "evaluation",
            {"members": 8, "gpus": 1, "podGroup": None, "recovery.model": "independent"},
        ),
        (
            "inference",
            {
                "startupSeconds": 300.0,
                "durationSeconds": None,
                "recovery.model": "serving",
                "controller.kind": "deployment",
            },
        ),
        ("notebook", {"recovery.model": "interactive", "controller.kind": "none"}),
        ("batch", {"members": 1, "gpus": 1, "checkpoint.intervalSeconds": 600.0}),
    ],
    ids=lambda v: v if isinstance(v, str) else "",
)
def test_adding_a_workload_of_a_kind_gives_its_defaults(alice_client, alice, kind, expected):
    data = _open(alice_client, f"{NEW}?preset=s3-grace-period")
    data["workloads-0-arrival"] = "15"
    data["workloads-1-startup_seconds"] = "1h30m"

    page = _post(alice_client, NEW, data, f"add:workloads:{kind}")
    added = form_fields(page.content.decode())
    assert added["workloads-0-arrival"] == "15s"  # a number of seconds, shown as a duration
    assert added["workloads-1-startup_seconds"] == "1h30m"  # what was typed stays as typed
    assert added["workloads-2-name"] == f"{kind}-1"
    _post(alice_client, NEW, added)

    workload = Experiment.objects.get(owner=alice).spec["workloads"][2]
    assert (workload["name"], workload["kind"]) == (f"{kind}-1", kind)
    assert {path: get_path(workload, path) for path in expected} == expected


def test_removing_a_row_drops_it_from_the_spec(alice_client, alice):
    data = _open(alice_client, f"{NEW}?preset=s3-grace-period")
    data["variants-1-DELETE"] = "on"

    response = _post(alice_client, NEW, data)

    assert response.status_code == 302
    assert [v["name"] for v in Experiment.objects.get(owner=alice).spec["variants"]] == [
        "grace-300s"
    ]


def test_a_spec_above_a_limit_is_refused_naming_the_limit(alice_client, settings):
    settings.LAB_LIMITS = {**settings.LAB_LIMITS, "LAB_MAX_NODES": 3}
    data = _open(alice_client, f"{NEW}?preset=s4-preemption-not-helpful")

    response = _post(alice_client, NEW, data)

    assert response.status_code == 200
    html = response.content.decode()
    assert element_text(html, "id", "section-nodePools")[0].startswith(
        "Node pools 4 nodes is above the limit of 3 (LAB_MAX_NODES)"
    )
    assert not Experiment.objects.exists()


@pytest.mark.parametrize(
    ("limit", "value", "path", "message"),
    [
        (
            "LAB_MAX_WORKLOADS",
            1,
            "workloads",
            "2 workloads is above the limit of 1 (LAB_MAX_WORKLOADS)",
        ),
        (
            "LAB_MAX_PODS",
            1,
            "workloads",
            "2 pods (members of all workloads) is above the limit of 1 (LAB_MAX_PODS)",
        ),
        (
            "LAB_MAX_HORIZON_SECONDS",
            60,
            "horizonSeconds",
            "1,800 seconds of horizon is above the limit of 60 (LAB_MAX_HORIZON_SECONDS)",
        ),
        (
            "LAB_MAX_TASKS",
            1,
            "replications",
            "2 simulations (variants x replications) is above the limit of 1 (LAB_MAX_TASKS)",
        ),
    ],
)
def test_every_limit_is_named_in_the_yaml_tab_too(
    alice_client, settings, limit, value, path, message
):
    settings.LAB_LIMITS = {**settings.LAB_LIMITS, limit: value}
    text = sc.get_preset("s3-grace-period").text

    response = _post(alice_client, NEW, {"mode": "yaml", "yaml-text": text})

    assert response.status_code == 200
    assert element_text(response.content.decode(), "data-path", path)[0].endswith(message)


def test_sharing_with_an_unknown_user_is_an_error_beside_the_field(alice_client):
    data = _open(alice_client, f"{NEW}?preset=s3-grace-period")
    data["meta-shared_with"] = "bob, nobody"
    UserFactory(username="bob")

    response = _post(alice_client, NEW, data)

    assert response.status_code == 200
    assert _field_errors(response, "meta-shared_with") == ["no user named nobody"]
    assert not Experiment.objects.exists()


def test_tags_and_sharing_are_saved(alice_client, alice, bob):
    data = _open(alice_client, f"{NEW}?preset=s3-grace-period")
    data["meta-tags"] = "q3, grace, q3"
    data["meta-shared_with"] = "bob, alice"

    _post(alice_client, NEW, data)

    experiment = Experiment.objects.get(owner=alice)
    assert experiment.tag_names == ["from-preset", "grace", "q3"]  # from a preset: tagged so
    assert list(experiment.shared_with.all()) == [bob]


def test_editing_changes_the_spec_but_not_past_runs(alice_client, experiment):
    run = RunFactory(experiment=experiment)
    frozen = dict(run.spec)
    url = reverse("experiments:edit", args=[experiment.pk])
    data = _open(alice_client, url)
    data["spec-name"] = "renamed"
    data["workloads-0-termination_grace_period_seconds"] = "120"

    response = _post(alice_client, url, data)

    assert response.status_code == 302
    experiment.refresh_from_db()
    run.refresh_from_db()
    assert experiment.name == "renamed"
    assert experiment.spec["workloads"][0]["terminationGracePeriodSeconds"] == 120.0
    assert run.spec == frozen


def test_two_tabs_the_second_save_is_refused_and_keeps_what_was_typed(alice_client, experiment):
    """Optimistic concurrency: each tab carries the version it opened; the save of the
    tab opened before the other's save says so and loses nothing of either edit."""
    url = reverse("experiments:edit", args=[experiment.pk])
    first, second = _open(alice_client, url), _open(alice_client, url)
    first["spec-name"] = "first tab"
    second["spec-name"] = "second tab"
    second["workloads-0-termination_grace_period_seconds"] = "77"

    saved = _post(alice_client, url, first)
    refused = _post(alice_client, url, second)

    assert saved.status_code == 302
    assert refused.status_code == 409
    experiment.refresh_from_db()
    assert (experiment.name, experiment.version) == ("first tab", 2)
    html = refused.content.decode()
    [message] = element_text(html, "id", "edit-conflict")
    assert message.startswith(
        "Not saved: this experiment was changed since you opened it "
        "(in another tab or by someone else; it is at version 2 now, "
        "you edited version 1)."
    )
    kept = form_fields(html)
    assert (kept["spec-name"], kept["workloads-0-termination_grace_period_seconds"]) == (
        "second tab",
        "77",
    )
    assert kept["version"] == "2"

    overwrite = _post(alice_client, url, kept)  # Save again: a deliberate overwrite

    assert overwrite.status_code == 302
    experiment.refresh_from_db()
    assert (experiment.name, experiment.version) == ("second tab", 3)


def test_a_tampered_formset_is_a_page_with_an_error_not_a_crash(alice_client):
    data = _open(alice_client, f"{NEW}?preset=s3-grace-period")
    del data["workloads-TOTAL_FORMS"]

    response = _post(alice_client, NEW, data)

    assert response.status_code == 200
    assert "ManagementForm data is missing or has been tampered with" in response.content.decode()
    assert not Experiment.objects.exists()


def test_new_without_a_preset_starts_from_a_valid_example(alice_client, alice):
    data = _open(alice_client, NEW)

    response = _post(alice_client, NEW, data)

    assert response.status_code == 302
    assert Experiment.objects.get(owner=alice).name == "my-experiment"


@settings(
    max_examples=60, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture]
)
@given(text=st.text(max_size=300))
def test_any_yaml_text_gets_a_page_never_a_server_error(alice_client, text):
    for action in ("save", "tab:form"):
        response = _post(alice_client, NEW, {"mode": "yaml", "yaml-text": text}, action)
        assert response.status_code in (200, 302)


@settings(
    max_examples=40, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture]
)
@given(
    value=st.text(max_size=40),
    field=st.sampled_from(
        [
            "spec-horizon_seconds",
            "spec-seed",
            "workloads-0-gpus",
            "workloads-0-members",
            "workloads-1-pod_group__min_count",
            "nodes-0-labels",
            "variants-1-set",
            "events-0-at",
            "priorityClasses-0-value",
            "workloads-0-kind",
            "spec-policy__preemption",
        ]
    ),
)
def test_any_value_in_any_field_gets_a_page_never_a_server_error(alice_client, value, field):
    data = form_fields(alice_client.get(f"{NEW}?preset=s3-grace-period").content.decode())
    data[field] = value
    response = _post(alice_client, NEW, data)
    assert response.status_code in (200, 302)


def test_blanking_the_podgroup_min_count_removes_the_gang(alice_client, alice):
    """The group's other settings (its scheduling policy here) go with it."""
    data = _open(alice_client, f"{NEW}?preset=s1-training-vs-shards")
    gang = next(i for i in range(20) if data.get(f"workloads-{i}-pod_group__scheduling") == "basic")
    data[f"workloads-{gang}-pod_group__min_count"] = ""

    response = _post(alice_client, NEW, data)

    assert response.status_code == 302
    assert Experiment.objects.get(owner=alice).spec["workloads"][gang]["podGroup"] is None


def test_a_gang_is_made_in_the_form_with_its_settings(alice_client, alice):
    data = _open(alice_client, f"{NEW}?preset=s3-grace-period")
    data["workloads-0-pod_group__min_count"] = "1"
    data["workloads-0-pod_group__scheduling"] = "basic"

    _post(alice_client, NEW, data)

    group = Experiment.objects.get(owner=alice).spec["workloads"][0]["podGroup"]
    assert (group["minCount"], group["scheduling"], group["disruptionMode"]) == (
        1,
        "basic",
        "Single",
    )


def test_an_old_spec_that_no_longer_validates_still_shows_and_clones(alice_client, alice):
    experiment = ExperimentFactory(owner=alice)
    experiment.spec = {**experiment.spec, "retiredField": 1}
    experiment.save()

    detail = alice_client.get(reverse("experiments:detail", args=[experiment.pk]))
    clone = alice_client.post(reverse("experiments:clone", args=[experiment.pk]))
    edit = alice_client.post(
        reverse("experiments:edit", args=[experiment.pk]),
        {
            **_open(alice_client, reverse("experiments:edit", args=[experiment.pk])),
            "action": "save",
        },
    )

    assert detail.status_code == 200
    assert "retiredField: 1" in detail.content.decode()
    assert clone.status_code == 302
    assert edit.status_code == 200
    assert "retiredField: unknown field" in unescape(edit.content.decode())


def test_our_own_policy_is_labelled_as_not_kubernetes_where_it_is_picked(alice_client):
    """Issue 3: checkpoint-aware is ours; the form says so wherever a user chooses it."""
    html = alice_client.get(NEW).content.decode()
    assert "checkpoint-aware (ours, not a Kubernetes behaviour)" in html
    assert ">workload-aware<" in html


def test_the_blank_example_demonstrates_preemption(alice_client, alice):
    """Issue 16 §1: "New experiment" without a preset saves as it is, and pressing Run
    shows a difference: with preemption the urgent notebook is useful within a minute,
    without it the notebook never runs before the horizon."""
    data = _open(alice_client, NEW)
    assert _post(alice_client, NEW, data).status_code == 302
    spec = sc.parse_spec(Experiment.objects.get(owner=alice).spec)

    results = {name: sc.simulate(spec, name, 0).summary for name in sc.variant_names(spec)}

    assert results["pod-preemption"]["time_to_group_useful"] is not None
    assert results["pod-preemption"]["time_to_group_useful"] < 60
    assert results["no-preemption"]["time_to_group_useful"] is None
    assert results["pod-preemption"]["lost_work"] > 0


def test_one_save_shows_every_error_and_the_banner_links_each_to_its_field(alice_client):
    """Issue 16 §1: GPUs 1.5, the class `urgnet` and two globalDefault classes are three
    problems, shown after one save, each in the banner with a link to its field."""
    data = _open(alice_client, NEW)
    data["workloads-0-gpus"] = "1.5"
    data["workloads-1-priority_class_name"] = "urgnet"
    data["priorityClasses-1-global_default"] = "on"

    response = _post(alice_client, NEW, data)

    assert response.status_code == 200
    html = response.content.decode()
    banner = html.split('id="error-summary"', 1)[1].split("</div>", 1)[0]
    links = dict(re.findall(r'<a href="#([^"]+)">([^<]+)</a>', banner))
    assert "id_workloads-0-gpus" in links
    assert "id_workloads-1-priority_class_name" in links
    assert "id_priorityClasses-1-global_default" in links
    assert "urgnet" in unescape(banner)
    assert "only one PriorityClass may be globalDefault" in unescape(banner)
    for anchor in links:  # every link lands on an element of the page
        assert f'id="{anchor}"' in html
    assert _field_errors(response, "workloads-1-priority_class_name")
    assert _field_errors(response, "priorityClasses-1-global_default")


def test_the_yaml_tab_lists_every_error_at_once_too(alice_client):
    data = _open(alice_client, NEW)
    yaml_page = form_fields(_post(alice_client, NEW, data, "tab:yaml").content.decode())
    document = yaml.safe_load(yaml_page["yaml-text"])
    document["workloads"][0]["gpus"] = 1.5
    document["workloads"][1]["priorityClassName"] = "urgnet"
    document["priorityClasses"][1]["globalDefault"] = True
    yaml_page["yaml-text"] = yaml.safe_dump(document, sort_keys=False)

    html = unescape(_post(alice_client, NEW, yaml_page).content.decode())

    problems = html.split('class="yaml-errors"', 1)[1].split("</aside>", 1)[0]
    assert "workloads[0].gpus" in problems
    assert "urgnet" in problems
    assert "only one PriorityClass may be globalDefault" in problems


def test_durations_show_as_people_write_them_and_read_back(alice_client, alice):
    """Issue 16 §1: a stored 1800 s reads "30m" in the form; "1h30m" is accepted."""
    data = _open(alice_client, NEW)
    assert data["workloads-0-duration_seconds"] == "2h"
    assert data["workloads-1-arrival"] == "10m"
    data["workloads-0-duration_seconds"] = "1h30m"
    assert _post(alice_client, NEW, data).status_code == 302
    assert Experiment.objects.get(owner=alice).spec["workloads"][0]["durationSeconds"] == 5400


def test_the_page_carries_each_kinds_defaults_for_the_kind_picker(alice_client):
    """What static/js/editor.js re-applies when the user picks another kind: every field
    some kind sets, and blank where the new kind leaves it out (a notebook has no gang)."""
    import json

    html = alice_client.get(NEW).content.decode()
    blob = html.split('<script id="kind-defaults" type="application/json">', 1)[1]
    defaults = json.loads(blob.split("</script>", 1)[0])
    assert defaults["training"]["members"] == "4"
    assert defaults["training"]["pod_group__min_count"] == "4"
    assert defaults["training"]["checkpoint__interval_seconds"] == "30m"
    assert defaults["notebook"]["pod_group__min_count"] == ""
    assert defaults["notebook"]["recovery__model"] == "interactive"
    assert "name" not in defaults["notebook"]  # the name is the user's
