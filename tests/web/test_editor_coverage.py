"""The form covers the whole spec (issue 16 §1): every field of the spec has a field in
the form tab, and a spec that uses all of them goes through the form unchanged."""

from __future__ import annotations

import json
import types
import typing
from collections.abc import Iterator

import pytest
from django.urls import reverse
from pydantic import BaseModel

import scheduler_core as sc
from experiments.editor import document as doc
from experiments.editor.editor import FORM_CLASSES, ITEM_MODELS
from experiments.editor.forms import TopForm
from experiments.models import Experiment
from experiments.specs import spec_document
from scheduler_core import spec as models
from tests.factories import ExperimentFactory
from tests.web.pages import form_fields


def _model_of(annotation: typing.Any) -> type[BaseModel] | None:
    if isinstance(annotation, type) and issubclass(annotation, BaseModel):
        return annotation
    if typing.get_origin(annotation) in (typing.Union, types.UnionType):
        for arg in typing.get_args(annotation):
            if isinstance(arg, type) and issubclass(arg, BaseModel):
                return arg
    return None


def _leaf_paths(model: type[BaseModel], prefix: str = "") -> Iterator[str]:
    """Every settable path of ``model``: nested objects are walked, lists and maps are
    one field each (tolerations, labels, the grid)."""
    for name, field in model.model_fields.items():
        path = f"{prefix}{field.alias or name}"
        nested = _model_of(field.annotation)
        if nested is None:
            yield path
        else:
            yield path  # a whole object may be one field (a topology as YAML)
            yield from _leaf_paths(nested, f"{path}.")


def _uncovered(
    model: type[BaseModel], covered: set[str], skip: set[str] = frozenset()
) -> list[str]:
    def is_covered(path: str) -> bool:
        parts = path.split(".")
        return any(".".join(parts[:n]) in covered for n in range(1, len(parts) + 1))

    leaves = [p for p in _leaf_paths(model) if _model_of_path(model, p) is None]
    return [p for p in leaves if p not in skip and not is_covered(p)]


def _model_of_path(model: type[BaseModel], path: str) -> type[BaseModel] | None:
    node: type[BaseModel] | None = model
    for part in path.split("."):
        assert node is not None
        field = next(f for n, f in node.model_fields.items() if (f.alias or n) == part)
        node = _model_of(field.annotation)
    return node


IMPORTER_WRITTEN = frozenset({"placementStudy.podOrder", "placementStudy.nodeOrder"})
"""The trace's pod and node order (thousands of indices) that the openb importer writes so an
imported study replays the CLI's exactly: not typed by anyone, so no form field. The editor
keeps them through a save and the YAML tab shows them."""


def test_every_field_of_the_spec_has_a_field_in_the_form():
    sections = {section.path for section in doc.SECTIONS}
    top = set(TopForm.spec_fields().values())
    missing = {
        "(top)": _uncovered(
            models.ExperimentSpec, top | sections | {"cluster"}, skip=IMPORTER_WRITTEN
        )
    }
    for key, form in FORM_CLASSES.items():
        missing[key] = _uncovered(ITEM_MODELS[key], set(form.spec_fields().values()))
    assert {key: paths for key, paths in missing.items() if paths} == {}


def test_every_list_of_the_spec_is_a_section_of_the_form():
    lists = {f"cluster.{f.alias}" for f in models.Cluster.model_fields.values()}
    lists |= {
        f.alias or name
        for name, f in models.ExperimentSpec.model_fields.items()
        if typing.get_origin(f.annotation) is list
    }
    assert lists == {section.path for section in doc.SECTIONS}


RICH: dict[str, typing.Any] = {
    "name": "rich",
    "description": "every field",
    "origin": "snapshot",
    "horizonSeconds": 7200,
    "seed": 3,
    "replications": 2,
    "cluster": {
        "nodePools": [
            {
                "name": "gpu",
                "count": 2,
                "gpus": 8,
                "maxPods": 50,
                "labels": {"rack": "r1"},
                "taints": [{"key": "dedicated", "value": "ml", "effect": "NoSchedule"}],
                "gpuModel": "A100-SXM4-80GB",
                "mig": {"1g.10gb": 7},
            },
            {
                "name": "standby",
                "count": 1,
                "gpus": 8,
                "standby": {"mode": "cold", "activationSeconds": 600, "replaces": "gpu"},
            },
        ],
        "nodes": [
            {"name": "spare", "gpus": 4, "taints": [{"key": "spare", "effect": "NoExecute"}]}
        ],
    },
    "priorityClasses": [
        {"name": "low", "value": 100, "globalDefault": True},
        {"name": "high", "value": 1000},
    ],
    "workloads": [
        {
            "name": "train",
            "kind": "training",
            "members": 2,
            "gpus": 8,
            "priorityClassName": "low",
            "nodeSelector": {"rack": "r1"},
            "tolerations": [
                {"key": "dedicated", "operator": "Equal", "value": "ml", "effect": "NoSchedule"},
                {"operator": "Exists"},
            ],
            "pdb": {"minAvailable": 1, "disruptedPods": 0},
            "podGroup": {
                "minCount": 2,
                "disruptionMode": "All",
                "priorityClassName": "low",
                "topology": {"levels": ["rack"], "preferred": "rack"},
            },
            "recovery": {"model": "elastic", "minMembers": 1},
            "controller": {"kind": "jobset", "restart": "group"},
            "queue": "team-a",
            "queuePriority": 5,
        },
        {
            "name": "urgent",
            "kind": "notebook",
            "priorityClassName": "high",
            "urgent": True,
            "arrival": 600,
            "controller": {"kind": "job", "podReplacementPolicy": "Failed", "backoffLimit": 3},
            "tolerations": [{"key": "dedicated", "operator": "Exists"}],
        },
        {
            "name": "share",
            "gpuMilli": 250,
            "gpuModels": ["A100-SXM4-80GB", "V100M32"],
            "tolerations": [{"operator": "Exists"}],
        },
        {
            "name": "sliced",
            "mig": {"1g.10gb": 2},
            "tolerations": [{"operator": "Exists"}],
        },
        {
            "name": "old",
            "kind": "batch",
            "priorityClassName": "low",
            "tolerations": [{"operator": "Exists"}],
        },
    ],
    "queues": [
        {
            "name": "team-a",
            "nominalGpus": 16,
            "cohort": "all",
            "queueingStrategy": "BestEffortFIFO",
            "preemption": {
                "withinClusterQueue": "LowerPriority",
                "reclaimWithinCohort": "Any",
                "borrowWithinCohort": {"policy": "LowerPriority", "maxPriorityThreshold": 100},
            },
        },
        {
            "name": "team-b",
            "cohort": "all",
            "fairSharing": {"weight": 2},
            "preemption": {"reclaimWithinCohort": "Any", "borrowWithinCohort": {"policy": "Never"}},
            "flavorFungibility": {
                "whenCanBorrow": "TryNextFlavor",
                "whenCanPreempt": "MayStopSearch",
            },
            "resourceGroups": [
                {
                    "coveredResources": ["gpus", "cpu"],
                    "flavors": [
                        {
                            "name": "spot",
                            "resources": [
                                {"name": "gpus", "nominalQuota": 8},
                                {"name": "cpu", "nominalQuota": 64},
                            ],
                        }
                    ],
                }
            ],
        },
    ],
    "fairSharing": {"preemptionStrategies": ["LessThanInitialShare"]},
    "resourceQuotas": [{"priorityClassName": "high", "gpus": 8}],
    "initialState": [{"workload": "old", "node": "gpu-0", "startedAt": -3600}],
    "events": [
        {"at": 1800, "type": "drain", "nodes": ["spare"], "timeoutSeconds": 600},
        {"at": 2400, "type": "node-failure", "nodes": ["gpu-1"], "tolerationSeconds": 300},
    ],
    "failures": [
        {
            "name": "racks",
            "kind": "correlated",
            "pool": "gpu",
            "selector": {"rack": "r1"},
            "per": "scope",
            "domainLabel": "rack",
            "fraction": 0.5,
            "tolerationSeconds": 120,
            "interArrival": {"distribution": "weibull", "meanSeconds": 86400, "shape": 0.7},
            "repair": {"distribution": "lognormal", "meanSeconds": 3600, "sigma": 0.5},
        },
        {
            "name": "spot",
            "disruption": "spot-reclaim",
            "noticeSeconds": 30,
            "interArrival": {"distribution": "empirical", "samplesSeconds": [3600, 7200]},
        },
        {"name": "incidents", "kind": "trace", "csv": "time,target,duration\n600,gpu-0,1h\n"},
    ],
    "policy": {
        "preemption": "pod",
        "minCandidateNodesPercentage": 20,
        "minCandidateNodesAbsolute": 5,
        "podInitialBackoffSeconds": 2,
        "podMaxBackoffSeconds": 20,
        "checkpointVictims": True,
        "checkpointAwareWeights": {"lostWork": 2.0},
        "minRuntimeSeconds": 600,
        "preemptionRateLimit": {"perMinute": 2, "burst": 3},
    },
    "waitForPodsReady": {
        "timeoutSeconds": 600,
        "requeuingStrategy": {
            "backoffBaseSeconds": 30,
            "backoffMaxSeconds": 1800,
            "backoffLimitCount": 4,
        },
    },
    "variants": [{"name": "pod", "preemption": "pod"}],
    "grid": {"workloads.train.checkpoint.intervalSeconds": [600, 1800]},
}


def test_a_spec_using_every_field_goes_through_the_form_unchanged(alice_client, alice):
    stored = spec_document(sc.parse_spec(RICH))
    experiment = ExperimentFactory(owner=alice, spec=stored)
    url = reverse("experiments:edit", args=[experiment.pk])
    data = form_fields(alice_client.get(url).content.decode())

    # Shown in visible fields, not carried along in the hidden ``extra``.
    hidden = [json.loads(value) for key, value in data.items() if key.endswith("extra")]
    carried = [{k: v for k, v in extra.items() if v is not None} for extra in hidden]
    assert [extra for extra in carried if extra] == []  # only absent objects (null) are
    assert data["nodePools-0-taints"] == "dedicated=ml:NoSchedule"
    assert data["workloads-0-tolerations"] == "dedicated=ml:NoSchedule, *"
    assert data["workloads-1-tolerations"] == "dedicated"
    assert data["queues-0-preemption__borrow_within_cohort__policy"] == "LowerPriority"
    assert data["initialState-0-started_at"] == "-1h"

    response = alice_client.post(url, {**data, "action": "save"})

    assert response.status_code == 302, response.content.decode()[:3000]
    experiment.refresh_from_db()
    assert experiment.spec == stored


@pytest.mark.parametrize(
    ("field", "text", "message"),
    [
        ("nodePools-0-taints", "dedicated=ml:Sometimes", "'dedicated=ml:Sometimes' is not a taint"),
        ("workloads-0-tolerations", "=x", "'=x' is not a toleration"),
    ],
)
def test_a_malformed_taint_or_toleration_is_refused_beside_its_field(
    alice_client, field, text, message
):
    data = form_fields(alice_client.get(reverse("experiments:new")).content.decode())
    data[field] = text
    response = alice_client.post(reverse("experiments:new"), {**data, "action": "save"})
    assert response.status_code == 200
    assert message in response.content.decode().replace("&#x27;", "'")
    assert not Experiment.objects.exists()


def test_new_rows_of_the_new_sections_are_sensible(alice_client, alice):
    data = form_fields(alice_client.get(reverse("experiments:new")).content.decode())
    for section in ("queues", "resourceQuotas", "initialState"):
        data = form_fields(
            alice_client.post(
                reverse("experiments:new"), {**data, "action": f"add:{section}"}
            ).content.decode()
        )
    data["workloads-1-queue"] = "queue-1"
    response = alice_client.post(reverse("experiments:new"), {**data, "action": "save"})
    assert response.status_code == 302, response.content.decode()[:3000]
    spec = Experiment.objects.get(owner=alice).spec
    assert spec["queues"][0]["name"] == "queue-1"
    assert spec["resourceQuotas"][0]["priorityClassName"] == "low"
    assert spec["initialState"][0]["workload"] == "training"
    assert spec["initialState"][0]["node"] == "gpu-0"
    assert spec["initialState"][0]["startedAt"] == -3600
