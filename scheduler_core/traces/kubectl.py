"""A live cluster as it is now: ``kubectl get nodes,pods,priorityclasses,
poddisruptionbudgets -A -o json``.

Nodes become named nodes (allocatable GPUs/CPU/memory/pods, labels, taints; a cordoned
node gets the ``node.kubernetes.io/unschedulable`` taint the node controller gives it);
DaemonSet and static pods are node overhead, taken off the node's allocatable; other
running pods are grouped into workloads by their controller and placed where they run
(``initialState``, started relative to the snapshot time); pending pods arrive at 0;
user PriorityClasses are kept (the two ``system-`` ones are built in); a PDB goes to the
one workload whose pods it selects, percentages rounded up as the disruption controller
does. Nothing runs out on its own: the pods' remaining work is unknown, so every
workload runs to the horizon (default one hour), unless the user sets durations.
"""

from __future__ import annotations

import bisect
import json
import math
from collections.abc import Sequence
from dataclasses import dataclass, field
from datetime import datetime
from typing import Any

from scheduler_core.spec import SYSTEM_CLASSES
from scheduler_core.traces.build import Origin, dns_name
from scheduler_core.traces.errors import ErrorLog
from scheduler_core.traces.options import Draft, ImportOptions
from scheduler_core.traces.quantity import GIB, QuantityError, parse_count, parse_quantity
from scheduler_core.traces.source import TraceFile, read_text

GPU = "nvidia.com/gpu"
UNSCHEDULABLE_TAINT = "node.kubernetes.io/unschedulable"
SPOT_LABELS = {
    "cloud.google.com/gke-spot": "true", "cloud.google.com/gke-preemptible": "true",
    "eks.amazonaws.com/capacityType": "SPOT", "karpenter.sh/capacity-type": "spot",
    "kubernetes.azure.com/scalesetpriority": "spot",
}
KIND_LABEL = "disruption-lab.io/kind"
GANG_LABELS = ("scheduling.x-k8s.io/pod-group", "pod-group.scheduling.sigs.k8s.io")
JOBSET_LABEL = "jobset.sigs.k8s.io/jobset-name"
OWNER_KIND = {"ReplicaSet": ("inference", "deployment"), "StatefulSet": ("inference",
              "deployment"), "Job": ("batch", "job"), "JobSet": ("training", "jobset"),
              "PodGroup": ("training", "jobset")}
DEFAULT_HORIZON = 3600.0


@dataclass(frozen=True, slots=True)
class Item:
    """One object of the dump and where it starts in its file."""

    data: dict[str, Any]
    origin: Origin

    @property
    def kind(self) -> str:
        return str(self.data.get("kind", ""))

    @property
    def label(self) -> str:
        meta = self.data.get("metadata")
        meta = meta if isinstance(meta, dict) else {}
        namespace, name = meta.get("namespace"), meta.get("name", "?")
        where = f"{namespace}/" if isinstance(namespace, str) and namespace else ""
        return f"{self.kind} {where}{name if isinstance(name, str) else '?'}"


@dataclass
class PodInfo:
    item: Item
    namespace: str
    labels: dict[str, str]
    gpus: int
    cpu: float
    memory: float
    node: str | None
    started: datetime | None


@dataclass
class Group:
    """Pods that become one workload (one controller, one shape)."""

    base: str
    namespace: str
    kind: str
    controller: str
    gang: bool
    pods: list[PodInfo] = field(default_factory=list)
    name: str = ""
    pdb: dict[str, int] | None = None


class Snapshot:
    """Turns the dump's objects into a draft; errors name the object and its line."""

    def __init__(self, options: ImportOptions, log: ErrorLog) -> None:
        self.options, self.log = options, log
        self.draft = Draft(name=options.name or "cluster-snapshot",
                           description="Imported from a kubectl snapshot")
        self.items: dict[str, list[Item]] = {}
        self.nodes: dict[str, dict[str, Any]] = {}
        self.groups: dict[tuple[Any, ...], Group] = {}
        self.skipped: dict[str, int] = {}

    def error(self, item: Item, message: str) -> None:
        self.log.add(item.origin.file, item.origin.line, item.origin.column,
                     f"{item.label}: {message}")

    def skip(self, reason: str) -> None:
        self.skipped[reason] = self.skipped.get(reason, 0) + 1

    # ---------------------------------------------------------------- driver
    def build(self) -> Draft:
        at = self._snapshot_time()
        classes = self._priority_classes()
        for item in self.items.get("Node", []):
            self._node(item)
        for item in self.items.get("Pod", []):
            self._pod(item, classes)
        for item in self.items.get("PodDisruptionBudget", []):
            self._pdb(item)
        if not self.log:
            self._emit(at)
        return self.draft

    def _snapshot_time(self) -> datetime | None:
        """The user's ``--snapshot-time``, else the latest timestamp in the dump."""
        if self.options.snapshot_time:
            return _timestamp(self.options.snapshot_time)
        stamps = [t for items in self.items.values() for i in items
                  for t in _timestamps(i.data)]
        return max(stamps, default=None)

    # ---------------------------------------------------------------- classes
    def _priority_classes(self) -> set[str]:
        names = set(SYSTEM_CLASSES)
        for item in self.items.get("PriorityClass", []):
            name = (item.data.get("metadata") or {}).get("name", "")
            if name.startswith("system-"):
                continue
            value = item.data.get("value")
            if not isinstance(value, int) or isinstance(value, bool):
                self.error(item, f"value: '{value}' is not an integer")
                continue
            entry: dict[str, Any] = {"name": name, "value": value,
                                     "globalDefault": bool(item.data.get("globalDefault"))}
            if item.data.get("preemptionPolicy"):
                entry["preemptionPolicy"] = item.data["preemptionPolicy"]
            if item.data.get("description"):
                entry["description"] = str(item.data["description"])
            self.draft.provenance.record(
                f"priorityClasses[{len(self.draft.priority_classes)}]", item.origin)
            self.draft.priority_classes.append(entry)
            names.add(name)
        return names

    # ---------------------------------------------------------------- nodes
    def _node(self, item: Item) -> None:
        meta, spec = item.data.get("metadata") or {}, item.data.get("spec") or {}
        status = item.data.get("status") or {}
        resources = status.get("allocatable") or status.get("capacity") or {}
        try:
            node = {"name": meta["name"], "gpus": parse_count(resources.get(GPU, 0)),
                    "cpu": parse_quantity(resources.get("cpu", 0)),
                    "memory": parse_quantity(resources.get("memory", 0)) / GIB,
                    "maxPods": max(1, parse_count(resources.get("pods", 110)))}
        except QuantityError as exc:
            self.error(item, f"status.allocatable: {exc}")
            return
        except KeyError:
            self.error(item, "metadata.name is missing")
            return
        labels = {str(k): str(v) for k, v in (meta.get("labels") or {}).items()}
        node.update(labels=labels, taints=_taints(spec),
                    spot=any(labels.get(k, "").lower() == v.lower()
                             for k, v in SPOT_LABELS.items()))
        self.draft.provenance.record(f"cluster.nodes[{len(self.nodes)}]", item.origin)
        self.nodes[node["name"]] = node

    # ---------------------------------------------------------------- pods
    def _pod(self, item: Item, classes: set[str]) -> None:
        data = item.data
        meta, spec = data.get("metadata") or {}, data.get("spec") or {}
        status = data.get("status") or {}
        if status.get("phase") in ("Succeeded", "Failed"):
            self.skip("finished pods (Succeeded/Failed)")
            return
        if meta.get("deletionTimestamp"):
            self.skip("pods already terminating")
            return
        try:
            gpus, cpu, memory = _requests(spec)
        except QuantityError as exc:
            self.error(item, f"spec.containers resources: {exc}")
            return
        node = spec.get("nodeName") or None
        if node is not None and node not in self.nodes:
            self.error(item, f"spec.nodeName: no node named '{node}' in the snapshot")
            return
        pod = PodInfo(item, meta.get("namespace", "default"),
                      {str(k): str(v) for k, v in (meta.get("labels") or {}).items()},
                      gpus, cpu, memory, node, _maybe_time(status.get("startTime")))
        if _is_node_daemon(meta):
            self._overhead(pod)
            return
        priority_class = spec.get("priorityClassName") or None
        if priority_class is not None and priority_class not in classes:
            self.error(item, f"spec.priorityClassName: no PriorityClass '{priority_class}' "
                             "in the snapshot")
            return
        grace = spec.get("terminationGracePeriodSeconds", 30)
        key = (*_owner_key(pod, meta), gpus, cpu, memory, priority_class, grace)
        if key not in self.groups:
            self.groups[key] = _group(pod, meta)
        self.groups[key].pods.append(pod)

    def _overhead(self, pod: PodInfo) -> None:
        """DaemonSet and static pods: what they hold is not there for workloads."""
        self.skip("DaemonSet/static pods (taken off their node's allocatable)")
        node = self.nodes.get(pod.node or "")
        if node is None:
            return
        node["gpus"] = max(0, node["gpus"] - pod.gpus)
        node["cpu"] = max(0.0, node["cpu"] - pod.cpu)
        node["memory"] = max(0.0, node["memory"] - pod.memory)
        node["maxPods"] = max(1, node["maxPods"] - 1)

    # ---------------------------------------------------------------- PDBs
    def _pdb(self, item: Item) -> None:
        meta, spec = item.data.get("metadata") or {}, item.data.get("spec") or {}
        selector = spec.get("selector") or {}
        if selector.get("matchExpressions"):
            self.draft.notes.append(f"{item.label}: matchExpressions are not supported; "
                                    "the budget was not applied")
            return
        wanted = selector.get("matchLabels") or {}
        groups = [g for g in self.groups.values() if g.namespace == meta.get("namespace")
                  and any(_matches(wanted, p.labels) for p in g.pods)]
        if len(groups) != 1:
            what = "no pod" if not groups else f"{len(groups)} workloads"
            self.draft.notes.append(f"{item.label} selects {what}; budgets are per workload "
                                    "here, so it was not applied")
            return
        budget = self._budget(item, spec, len(groups[0].pods))
        if budget is not None:
            groups[0].pdb = budget
            self._note_unscaled(item, spec, groups[0])

    def _note_unscaled(self, item: Item, spec: dict[str, Any], group: Group) -> None:
        """Upstream needs a scalable controller's replica count for a percentage or
        maxUnavailable; without one (bare pods, Jobs) it allows no disruption at all."""
        scaled = group.controller == "deployment"
        relative = spec.get("maxUnavailable") is not None or str(
            spec.get("minAvailable", "")).endswith("%")
        if relative and not scaled:
            self.draft.notes.append(
                f"{item.label}: counted against the {len(group.pods)} pod(s) of "
                f"'{dns_name(group.base)}'; Kubernetes finds no scalable controller for them "
                "and would allow no voluntary disruption")

    def _budget(self, item: Item, spec: dict[str, Any], members: int) -> dict[str, int] | None:
        fields = [f for f in ("minAvailable", "maxUnavailable") if spec.get(f) is not None]
        if len(fields) != 1:
            self.error(item, "spec: set exactly one of minAvailable or maxUnavailable")
            return None
        name = fields[0]
        value = spec[name]
        if isinstance(value, str) and value.endswith("%"):
            try:
                percent = float(value[:-1])
            except ValueError:
                percent = -1.0
            if not 0 <= percent <= 100:
                self.error(item, f"spec.{name}: '{value}' is not a percentage from 0% to 100%")
                return None
            return {name: math.ceil(percent * members / 100 - 1e-9)}
        if isinstance(value, int) and not isinstance(value, bool) and value >= 0:
            return {name: value}
        self.error(item, f"spec.{name}: '{value}' is not a whole number or a percentage")
        return None

    # ---------------------------------------------------------------- output
    def _emit(self, at: datetime | None) -> None:
        draft = self.draft
        draft.cluster = {"nodes": list(self.nodes.values())}
        draft.horizon_seconds = self.options.horizon_seconds or DEFAULT_HORIZON
        taken: set[str] = set()
        for group in self.groups.values():
            group.name = _unique(group, taken)
            self._workload(group, at)
        draft.counts.update(nodes=len(self.nodes), pods=sum(len(g.pods) for g in
                                                            self.groups.values()),
                            workloads=len(draft.workloads),
                            initial_pods=len(draft.initial_state))
        for reason, count in self.skipped.items():
            draft.notes.append(f"{count} left out: {reason}")
        if at is not None:
            draft.notes.append(f"snapshot time {at.isoformat()}: pods started before it")

    def _workload(self, group: Group, at: datetime | None) -> None:
        first = group.pods[0]
        spec = first.item.data.get("spec") or {}
        defaults = self.options.defaults.for_kind(group.kind).workload_fields()
        grace = float(spec.get("terminationGracePeriodSeconds", 30))
        fields: dict[str, Any] = {
            "name": group.name, "kind": group.kind, "members": len(group.pods),
            "gpus": first.gpus, "cpu": first.cpu, "memory": round(first.memory, 6),
            "priorityClassName": spec.get("priorityClassName") or None, "arrival": 0.0,
            "durationSeconds": None, **defaults, "terminationGracePeriodSeconds": grace,
            "stopSeconds": min(defaults["stopSeconds"], grace),
            "controller": {"kind": group.controller}}
        fields.update(_placement_rules(spec))
        if group.pdb:
            fields["pdb"] = group.pdb
        if group.gang:
            fields["podGroup"] = {"minCount": len(group.pods)}
        self.draft.add_workload(fields, first.item.origin.file, first.item.origin.line)
        for member, pod in enumerate(group.pods):
            if pod.node is not None:
                self._place(group.name, member, pod, at)

    def _place(self, workload: str, member: int, pod: PodInfo, at: datetime | None) -> None:
        started = 0.0
        if at is not None and pod.started is not None:
            started = min(0.0, round((pod.started - at).total_seconds(), 3))
        self.draft.provenance.record(f"initialState[{len(self.draft.initial_state)}]",
                                     pod.item.origin)
        self.draft.initial_state.append({"workload": workload, "node": pod.node,
                                         "startedAt": started, "member": member})


# ==================================================================== helpers
def _taints(spec: dict[str, Any]) -> list[dict[str, str]]:
    taints = [{"key": t["key"], "value": str(t.get("value", "")), "effect": t["effect"]}
              for t in spec.get("taints") or [] if "key" in t and "effect" in t]
    if spec.get("unschedulable") and not any(t["key"] == UNSCHEDULABLE_TAINT for t in taints):
        taints.append({"key": UNSCHEDULABLE_TAINT, "value": "", "effect": "NoSchedule"})
    return taints


def _placement_rules(spec: dict[str, Any]) -> dict[str, Any]:
    """The pod's nodeSelector and tolerations (``tolerationSeconds`` is not modelled)."""
    rules: dict[str, Any] = {}
    if spec.get("nodeSelector"):
        rules["nodeSelector"] = {str(k): str(v) for k, v in spec["nodeSelector"].items()}
    tolerations = [{k: t[k] for k in ("key", "operator", "value", "effect") if t.get(k)}
                   for t in spec.get("tolerations") or []]
    if tolerations:
        rules["tolerations"] = tolerations
    return rules


def _requests(spec: dict[str, Any]) -> tuple[int, float, float]:
    """Effective requests: the containers' sum, or the largest init container if larger
    (as the scheduler computes them); a limit stands in for a missing request."""
    def total(containers: list[dict[str, Any]], resource: str) -> float:
        return sum(_request(c, resource) for c in containers)

    def largest(containers: list[dict[str, Any]], resource: str) -> float:
        return max((_request(c, resource) for c in containers), default=0.0)

    containers, init = spec.get("containers") or [], spec.get("initContainers") or []
    values = [max(total(containers, r), largest(init, r)) for r in (GPU, "cpu", "memory")]
    gpus = values[0]
    if not float(gpus).is_integer():
        raise QuantityError(f"{GPU} '{gpus:g}' is not a whole number")
    return int(gpus), values[1], values[2] / GIB


def _request(container: dict[str, Any], resource: str) -> float:
    resources = container.get("resources") or {}
    value = (resources.get("requests") or {}).get(resource)
    if value is None:
        value = (resources.get("limits") or {}).get(resource, 0)
    return parse_quantity(value)


def _is_node_daemon(meta: dict[str, Any]) -> bool:
    owners = meta.get("ownerReferences") or []
    annotations = meta.get("annotations") or {}
    return (any(o.get("kind") in ("DaemonSet", "Node") for o in owners)
            or "kubernetes.io/config.mirror" in annotations)


def _owner_key(pod: PodInfo, meta: dict[str, Any]) -> tuple[str, ...]:
    for label in GANG_LABELS:
        if label in pod.labels:
            return (pod.namespace, "PodGroup", pod.labels[label])
    if JOBSET_LABEL in pod.labels:
        return (pod.namespace, "JobSet", pod.labels[JOBSET_LABEL])
    owner = _controller(meta)
    if owner is not None:
        return (pod.namespace, str(owner.get("kind")), str(owner.get("name")))
    return (pod.namespace, "Pod", str(meta.get("name")))


def _controller(meta: dict[str, Any]) -> dict[str, Any] | None:
    owners = meta.get("ownerReferences") or []
    return next((o for o in owners if o.get("controller")), owners[0] if owners else None)


def _group(pod: PodInfo, meta: dict[str, Any]) -> Group:
    namespace, owner_kind, owner_name = _owner_key(pod, meta)
    kind, controller = OWNER_KIND.get(owner_kind, ("batch", "none"))
    kind = pod.labels.get(KIND_LABEL, kind)
    return Group(owner_name, namespace, kind, controller, owner_kind == "PodGroup")


def _unique(group: Group, taken: set[str]) -> str:
    """The owner's name; with its namespace if that is taken; then numbered."""
    candidates = [dns_name(group.base), dns_name(f"{group.namespace}-{group.base}")]
    name = next((c for c in candidates if c not in taken), candidates[1])
    base, suffix = name, 2
    while name in taken:
        name = f"{base}-{suffix}"
        suffix += 1
    taken.add(name)
    return name


def _matches(wanted: dict[str, Any], labels: dict[str, str]) -> bool:
    return bool(wanted) and all(labels.get(k) == str(v) for k, v in wanted.items())


def _timestamp(text: str) -> datetime:
    return datetime.fromisoformat(text.replace("Z", "+00:00"))


def _maybe_time(text: Any) -> datetime | None:
    try:
        return _timestamp(text) if isinstance(text, str) else None
    except ValueError:
        return None


def _timestamps(data: dict[str, Any]) -> list[datetime]:
    meta, status = data.get("metadata") or {}, data.get("status") or {}
    found = [meta.get("creationTimestamp"), status.get("startTime")]
    found += [c.get("lastTransitionTime") for c in status.get("conditions") or []]
    found += [c.get("lastHeartbeatTime") for c in status.get("conditions") or []]
    return [t for t in map(_maybe_time, found) if t is not None]


# ==================================================================== shape
# The parts of a Kubernetes object this importer reads, and their JSON types. A dump is
# the API server's output, but an upload can be anything: ``"metadata": 5`` is an error
# naming the object, its line and the field, never a crash halfway through. Fields not
# listed are not read, so not checked; ``null`` is always allowed (read as absent).
_TEXT: tuple[type, ...] = (str,)
_SCALAR: tuple[type, ...] = (str, int, float, bool)
_NUMBER: tuple[type, ...] = (int, float)


@dataclass(frozen=True)
class _MapOf:
    """An object with any keys, each value of one shape (labels, resource lists)."""

    value: Any


_RESOURCES = _MapOf((str, int, float))
_CONTAINER = {"resources": {"requests": _RESOURCES, "limits": _RESOURCES}}
_SHAPE: dict[str, Any] = {
    "kind": _TEXT,
    "value": _SCALAR,
    "globalDefault": _SCALAR,
    "preemptionPolicy": _TEXT,
    "description": _SCALAR,
    "metadata": {"name": _TEXT, "namespace": _TEXT, "labels": _MapOf(_SCALAR),
                 "annotations": _MapOf(_SCALAR), "creationTimestamp": _TEXT,
                 "deletionTimestamp": _TEXT,
                 "ownerReferences": [{"kind": _TEXT, "name": _TEXT, "controller": _SCALAR}]},
    "spec": {"taints": [{"key": _TEXT, "value": _SCALAR, "effect": _TEXT}],
             "unschedulable": _SCALAR, "nodeName": _TEXT, "priorityClassName": _TEXT,
             "containers": [_CONTAINER], "initContainers": [_CONTAINER],
             "tolerations": [{"key": _TEXT, "operator": _TEXT, "value": _SCALAR,
                              "effect": _TEXT}],
             "nodeSelector": _MapOf(_SCALAR), "terminationGracePeriodSeconds": _NUMBER,
             "selector": {"matchLabels": _MapOf(_SCALAR), "matchExpressions": [_MapOf(Any)]},
             "minAvailable": (str, int), "maxUnavailable": (str, int)},
    "status": {"allocatable": _RESOURCES, "capacity": _RESOURCES, "phase": _TEXT,
               "startTime": _TEXT,
               "conditions": [{"lastTransitionTime": _TEXT, "lastHeartbeatTime": _TEXT}]},
}
_JSON_TYPE = {dict: "an object", list: "an array", str: "a string", int: "a number",
              float: "a number", bool: "a boolean"}


def shape_error(value: Any, shape: Any = None, path: str = "") -> str | None:
    """The first place where ``value`` does not have the shape this importer reads, as
    ``"metadata.labels: must be an object, not 5"``; None when it does."""
    shape = _SHAPE if shape is None else shape
    if shape is Any or (value is None and not path.endswith(("]", "name"))):
        return None  # an absent field; but an array item or a name must be there
    if value is None:
        return f"{path}: must not be null"
    if isinstance(shape, dict | _MapOf):
        if not isinstance(value, dict):
            return _wrong(path, "an object", value)
        for key, child in value.items():
            sub = shape.value if isinstance(shape, _MapOf) else shape.get(key)
            if sub is not None:
                error = shape_error(child, sub, f"{path}.{key}" if path else str(key))
                if error:
                    return error
        return None
    if isinstance(shape, list):
        if not isinstance(value, list):
            return _wrong(path, "an array", value)
        for index, child in enumerate(value):
            error = shape_error(child, shape[0], f"{path}[{index}]")
            if error:
                return error
        return None
    if isinstance(value, bool) and bool not in shape:
        return _wrong(path, " or ".join(sorted({_JSON_TYPE[t] for t in shape})), value)
    if not isinstance(value, shape):
        return _wrong(path, " or ".join(sorted({_JSON_TYPE[t] for t in shape})), value)
    if isinstance(value, float) and not math.isfinite(value):
        return f"{path}: {value} is not a finite number"
    return None


def _wrong(path: str, expected: str, value: Any) -> str:
    shown = json.dumps(value)[:40] if not isinstance(value, float) else repr(value)
    return f"{path}: must be {expected}, not {shown}"


# ==================================================================== reading
def read_snapshot(files: Sequence[TraceFile], options: ImportOptions, log: ErrorLog) -> Draft:
    snapshot = Snapshot(options, log)
    for file in files:
        for item in _items(file, log):
            error = shape_error(item.data)
            if error:
                snapshot.error(item, error)
                continue
            snapshot.items.setdefault(item.kind, []).append(item)
    other = sorted(k for k in snapshot.items if k not in (
        "Node", "Pod", "PriorityClass", "PodDisruptionBudget"))
    draft = snapshot.build()
    if other:
        draft.notes.append(f"ignored object kinds: {', '.join(other)}")
    return draft


def _items(file: TraceFile, log: ErrorLog) -> list[Item]:
    """The dump's objects (a ``List``'s items, or one object), each with its position."""
    text = read_text(file)
    try:
        document = json.loads(text, parse_constant=_no_constant)
    except json.JSONDecodeError as exc:
        log.add(file.name, exc.lineno, exc.colno, f"not JSON: {exc.msg}")
        return []
    except RecursionError:
        log.add(file.name, 1, 1, "not JSON this importer can read: nested too deeply")
        return []
    except ValueError as exc:  # NaN/Infinity, or an integer of over 4,300 digits
        log.add(file.name, 1, 1, f"not JSON: {exc}")
        return []
    lines = _line_starts(text)
    if isinstance(document, dict) and isinstance(document.get("items"), list):
        offsets = _item_offsets(text)
        return [Item(obj, _origin(file.name, lines, offset))
                for obj, offset in zip(document["items"], offsets, strict=True)
                if isinstance(obj, dict)]
    if isinstance(document, dict) and document.get("kind"):
        return [Item(document, _origin(file.name, lines, _skip(text, 0)))]
    log.add(file.name, 1, 1, "expected the JSON of `kubectl get ... -o json` (a List with "
            "items, or one object with a kind)")
    return []


def _no_constant(name: str) -> Any:
    raise ValueError(f"{name} is not a JSON number")


def _line_starts(text: str) -> list[int]:
    starts = [0]
    index = text.find("\n")
    while index >= 0:
        starts.append(index + 1)
        index = text.find("\n", index + 1)
    return starts


def _origin(name: str, starts: list[int], offset: int) -> Origin:
    line = bisect.bisect_right(starts, offset)
    return Origin(name, line, offset - starts[line - 1] + 1)


def _skip(text: str, index: int) -> int:
    while index < len(text) and text[index] in " \t\r\n":
        index += 1
    return index


def _item_offsets(text: str) -> list[int]:
    """Where each element of the top-level ``items`` array starts (the text is valid JSON:
    walk the top-level object with the decoder, recording the array's element offsets)."""
    decoder = json.JSONDecoder()
    index = _skip(text, 0) + 1
    while True:
        index = _skip(text, index)
        key, index = decoder.raw_decode(text, index)
        index = _skip(text, _skip(text, index) + 1)
        if key == "items":
            return _array_offsets(decoder, text, index)
        _, index = decoder.raw_decode(text, index)
        index = _skip(text, index) + 1


def _array_offsets(decoder: json.JSONDecoder, text: str, index: int) -> list[int]:
    offsets = []
    index = _skip(text, index + 1)
    while text[index] != "]":
        offsets.append(index)
        _, index = decoder.raw_decode(text, index)
        index = _skip(text, index)
        if text[index] == ",":
            index = _skip(text, index + 1)
    return offsets
