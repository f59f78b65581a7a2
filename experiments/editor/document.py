"""The spec document the editor works on: a plain mapping, valid or not yet.

Both tabs read and write this mapping; only saving asks ``spec_parse`` whether it is
a valid spec. Helpers here address it by dotted paths (``checkpoint.intervalSeconds``).
"""

from __future__ import annotations

import copy
from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any

import yaml

from experiments.specs import policy_choices


@dataclass(frozen=True, slots=True)
class Section:
    """A list in the spec that the form shows as rows."""

    key: str  # formset prefix, also used in URLs and templates
    path: str  # where the list lives in the document
    title: str
    item: str  # what one row is called


SECTIONS = (
    Section("nodePools", "cluster.nodePools", "Node pools", "node pool"),
    Section("nodes", "cluster.nodes", "Named nodes", "node"),
    Section("priorityClasses", "priorityClasses", "Priority classes", "priority class"),
    Section("workloads", "workloads", "Workloads", "workload"),
    Section("queues", "queues", "Admission queues (Kueue ClusterQueues)", "queue"),
    Section("resourceQuotas", "resourceQuotas", "Resource quotas per PriorityClass", "quota"),
    Section("initialState", "initialState", "Initial state (pods already there at t = 0)", "pod"),
    Section("events", "events", "Timeline events", "event"),
    Section(
        "failures", "failures", "Failure models (random node failures, traces)", "failure model"
    ),
    Section("variants", "variants", "Variants to compare", "variant"),
)
SECTION_BY_KEY = {section.key: section for section in SECTIONS}

MISSING = object()


def get_path(document: Mapping[str, Any], path: str, default: Any = None) -> Any:
    node: Any = document
    for part in path.split("."):
        if not isinstance(node, Mapping) or part not in node:
            return default
        node = node[part]
    return node


def set_path(document: dict[str, Any], path: str, value: Any) -> None:
    """Set a value, creating parents; ``None`` leaves the key out (the default applies)."""
    if value is None:
        return
    parts = path.split(".")
    node = document
    for part in parts[:-1]:
        child = node.get(part)
        if not isinstance(child, dict):
            child = node[part] = {}
        node = child
    node[parts[-1]] = value


def pop_path(document: dict[str, Any], path: str) -> None:
    """Remove a key, and the parents that removing it left empty."""
    parts = path.split(".")
    trail = [document]
    for part in parts[:-1]:
        child = trail[-1].get(part)
        if not isinstance(child, dict):
            return
        trail.append(child)
    trail[-1].pop(parts[-1], None)
    for parent, part in zip(reversed(trail[:-1]), reversed(parts[:-1]), strict=True):
        if parent.get(part) == {}:
            del parent[part]


def without_paths(item: Mapping[str, Any], paths: list[str]) -> dict[str, Any]:
    """A deep copy of ``item`` minus the paths a form shows: what goes into ``extra``."""
    rest = copy.deepcopy(dict(item))
    for path in paths:
        pop_path(rest, path)
    return rest


def form_problem(document: Any) -> str | None:
    """Why the form tab cannot show this document, or None if it can."""
    if not isinstance(document, Mapping):
        return "the spec must be a mapping (key: value lines) to open it in the form"
    for key, path in (("cluster", "cluster"), ("policy", "policy")):
        if document.get(key) is not None and not isinstance(document[key], Mapping):
            return f"'{path}' must be a mapping to open the spec in the form"
    for section in SECTIONS:
        items = get_path(document, section.path)
        if items is None:
            continue
        if not isinstance(items, list) or not all(isinstance(i, Mapping) for i in items):
            return f"'{section.path}' must be a list of mappings to open the spec in the form"
    return None


def to_yaml(document: Any) -> str:
    """Any document as YAML text, in its own key order."""
    return yaml.safe_dump(document, sort_keys=False, allow_unicode=True, default_flow_style=False)


def blank_document() -> dict[str, Any]:
    """A small, valid starting point for "New experiment" without a preset, that shows
    what the product is for: a two-node training gang fills all 16 GPUs, an urgent
    notebook arrives at 10 minutes, and the two variants differ (with preemption the
    notebook runs at once; without, it waits past the horizon)."""
    training = new_workload("training", [])
    training.update(name="training", members=2, podGroup={**training["podGroup"], "minCount": 2})
    return {
        "name": "my-experiment",
        "description": "",
        "horizonSeconds": 3600,
        "replications": 1,
        "cluster": {"nodePools": [{"name": "gpu", "count": 2, "gpus": 8}]},
        "priorityClasses": [
            {"name": "low", "value": 100, "globalDefault": True},
            {"name": "high", "value": 1000},
        ],
        "workloads": [
            training,
            {
                **new_workload("notebook", []),
                "name": "notebook",
                "arrival": 600,
                "priorityClassName": "high",
                "urgent": True,
            },
        ],
        "variants": [
            {"name": "pod-preemption", "preemption": "pod"},
            {"name": "no-preemption", "preemption": "none"},
        ],
    }


KIND_LABELS = {
    "training": "Training group",
    "elastic-training": "Elastic training",
    "evaluation": "Evaluation shards",
    "inference": "Inference",
    "notebook": "Notebook",
    "batch": "Batch job",
}

# What picking a kind gives you: the usual shape of that kind of workload.
KIND_DEFAULTS: dict[str, dict[str, Any]] = {
    "training": {
        "members": 4,
        "gpus": 8,
        "durationSeconds": 7200,
        "startupSeconds": 120,
        "terminationGracePeriodSeconds": 30,
        "checkpoint": {"intervalSeconds": 1800, "writeSeconds": 60},
        "recovery": {"model": "synchronous"},
        "controller": {"kind": "jobset"},
        "podGroup": {"minCount": 4, "disruptionMode": "All"},
    },
    "elastic-training": {
        "members": 4,
        "gpus": 8,
        "durationSeconds": 7200,
        "startupSeconds": 120,
        "checkpoint": {"intervalSeconds": 1800, "writeSeconds": 60},
        "recovery": {"model": "elastic", "minMembers": 2},
        "controller": {"kind": "jobset"},
    },
    "evaluation": {
        "members": 8,
        "gpus": 1,
        "durationSeconds": 1800,
        "startupSeconds": 60,
        "checkpoint": {"intervalSeconds": 300},
        "recovery": {"model": "independent"},
        "controller": {"kind": "job"},
    },
    "inference": {
        "members": 2,
        "gpus": 1,
        "startupSeconds": 300,
        "terminationGracePeriodSeconds": 30,
        "recovery": {"model": "serving"},
        "controller": {"kind": "deployment"},
    },
    "notebook": {
        "members": 1,
        "gpus": 1,
        "durationSeconds": 1800,
        "startupSeconds": 30,
        "recovery": {"model": "interactive"},
        "controller": {"kind": "none"},
    },
    "batch": {
        "members": 1,
        "gpus": 1,
        "durationSeconds": 3600,
        "checkpoint": {"intervalSeconds": 600},
        "recovery": {"model": "independent"},
        "controller": {"kind": "job"},
    },
}


def kind_default_paths() -> list[str]:
    """Every field some kind sets a default for: picking another kind re-applies these
    (a field the new kind leaves out is cleared, e.g. a notebook has no pod group)."""
    paths: list[str] = []
    for defaults in KIND_DEFAULTS.values():
        for path in _leaf_paths(defaults):
            if path not in paths:
                paths.append(path)
    return paths


def _leaf_paths(item: Mapping[str, Any], prefix: str = "") -> list[str]:
    found = []
    for key, value in item.items():
        path = f"{prefix}{key}"
        found += _leaf_paths(value, f"{path}.") if isinstance(value, Mapping) else [path]
    return found


def new_workload(kind: str, existing: list[Any]) -> dict[str, Any]:
    """A workload of ``kind`` with that kind's defaults and a name not yet taken."""
    return {
        "name": _free_name(kind, existing),
        "kind": kind,
        **copy.deepcopy(KIND_DEFAULTS.get(kind, KIND_DEFAULTS["batch"])),
    }


def new_item(section: str, document: Mapping[str, Any], kind: str = "") -> dict[str, Any]:
    """A sensible new row for ``section`` of ``document``."""
    existing = get_path(document, SECTION_BY_KEY[section].path) or []
    if section == "workloads":
        return new_workload(kind or "batch", existing)
    if section == "nodePools":
        return {"name": _free_name("pool", existing), "count": 2, "gpus": 8}
    if section == "nodes":
        return {"name": _free_name("node", existing), "gpus": 8}
    if section == "priorityClasses":
        return {"name": _free_name("class", existing), "value": 1000}
    if section == "events":
        return _new_event(document)
    if section == "queues":
        return {"name": _free_name("queue", existing), "nominalGpus": 8}
    if section == "resourceQuotas":
        classes = get_path(document, "priorityClasses") or [{}]
        return {"priorityClassName": classes[0].get("name", ""), "gpus": 8}
    if section == "initialState":
        return _new_initial_pod(document)
    if section == "failures":
        return {
            "name": _free_name("failures", existing),
            "interArrival": {"distribution": "exponential", "meanSeconds": 30 * 86400},
            "repair": {"distribution": "constant", "meanSeconds": 3600},
        }
    return {"name": _free_name("variant", existing), "preemption": "pod"}


def _new_initial_pod(document: Mapping[str, Any]) -> dict[str, Any]:
    """A pod of the first workload, already running on the first node for an hour."""
    workloads = get_path(document, "workloads") or [{}]
    pools = get_path(document, "cluster.nodePools") or []
    nodes = get_path(document, "cluster.nodes") or []
    node = (
        f"{pools[0].get('name', 'pool')}-0"
        if pools
        else (nodes[0].get("name", "") if nodes else "")
    )
    return {"workload": workloads[0].get("name", ""), "node": node, "startedAt": -3600}


def _new_event(document: Mapping[str, Any]) -> dict[str, Any]:
    event: dict[str, Any] = {"at": 600, "type": policy_choices()["disruptions"][0], "count": 1}
    pools = get_path(document, "cluster.nodePools") or []
    if pools and isinstance(pools[0], Mapping) and pools[0].get("name"):
        event["pool"] = pools[0]["name"]
    return event


def _free_name(stem: str, existing: list[Any]) -> str:
    taken = {item.get("name") for item in existing if isinstance(item, Mapping)}
    number = 1
    while f"{stem}-{number}" in taken:
        number += 1
    return f"{stem}-{number}"
