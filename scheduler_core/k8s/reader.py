"""Kubernetes objects -> an experiment draft.

Controllers (Job, JobSet, Deployment, StatefulSet, ReplicaSet, PodGroup, the Workload
API) become workloads from their pod templates; pods in the input join their owner's
workload (bound ones as its initial state, the rest pending), or, when no owner is in
the input, form workloads by owner reference as the ``kubectl`` snapshot import always
did. Classes, nodes, budgets, quotas and Kueue queues are read alongside. Every object
is used or named in the notes; every error names the object, its file and line.
"""

from __future__ import annotations

import json
import math
from collections.abc import Callable, Mapping
from dataclasses import dataclass, field
from datetime import datetime
from typing import Any

from scheduler_core.k8s.documents import Item
from scheduler_core.k8s.kueue import KueueReader
from scheduler_core.k8s.templates import (
    FieldError,
    annotated_fields,
    kind_from,
    mig_requests,
    placement,
    requests,
    set_path,
)
from scheduler_core.spec import SYSTEM_CLASSES, InitialPod
from scheduler_core.traces.build import dns_name
from scheduler_core.traces.errors import ErrorLog
from scheduler_core.traces.options import Draft, ImportOptions
from scheduler_core.traces.quantity import GIB, QuantityError, parse_count, parse_quantity

GPU = "nvidia.com/gpu"
MIG = "nvidia.com/mig-"
GPU_PRODUCT = "nvidia.com/gpu.product"
"""GPU Feature Discovery's model label: read as the node's gpuModel, and a pod's
nodeSelector on it as the workload's gpuModels (docs/shared-gpus.md)."""
UNSCHEDULABLE_TAINT = "node.kubernetes.io/unschedulable"
SPOT_LABELS = {
    "cloud.google.com/gke-spot": "true",
    "cloud.google.com/gke-preemptible": "true",
    "eks.amazonaws.com/capacityType": "SPOT",
    "karpenter.sh/capacity-type": "spot",
    "kubernetes.azure.com/scalesetpriority": "spot",
}
GANG_LABELS = ("scheduling.x-k8s.io/pod-group", "pod-group.scheduling.sigs.k8s.io")
JOBSET_LABEL = "jobset.sigs.k8s.io/jobset-name"
RJOB_LABEL = "jobset.sigs.k8s.io/replicatedjob-name"
QUEUE_LABEL = "kueue.x-k8s.io/queue-name"
OWNER_KIND = {
    "ReplicaSet": ("inference", "deployment"),
    "StatefulSet": ("inference", "deployment"),
    "Deployment": ("inference", "deployment"),
    "Job": ("batch", "job"),
    "JobSet": ("training", "jobset"),
    "PodGroup": ("training", "jobset"),
    "Workload": ("training", "jobset"),
}
DEFAULT_HORIZON = 3600.0
SCHEDULING_GROUPS = ("scheduling.k8s.io",)
KUEUE_GROUP = "kueue.x-k8s.io"
MAX_LISTED = 40
USED_KINDS = {
    "Node",
    "Pod",
    "PriorityClass",
    "PodDisruptionBudget",
    "ResourceQuota",
    "Job",
    "JobSet",
    "Deployment",
    "StatefulSet",
    "ReplicaSet",
    "PodGroup",
    "Workload",
    "ClusterQueue",
    "LocalQueue",
    "Cohort",
    "ResourceFlavor",
    "WorkloadPriorityClass",
    "Configuration",
}
Key = tuple[str, str, str]
PEER_KINDS = {
    "ResourcePatch": "left out, a KWOK recording's changes over time (ResourcePatch, "
    "kwokctl snapshot record/export --record): the snapshot before them is "
    "the initial state",
    "KubeSchedulerConfiguration": "left out, kube-scheduler-simulator's schedulerConfig (the "
    "experiment's policy decides preemption and placement)",
}
"""Peers' documents that are not Kubernetes objects, each with what becomes of it."""


@dataclass
class PodInfo:
    item: Item
    labels: dict[str, str]
    gpus: int
    cpu: float
    memory: float
    node: str | None
    started: datetime | None
    deleting: datetime | None = None
    nominated: str | None = None


@dataclass
class Unit:
    """One future workload: a controller object and/or the pods that belong to it."""

    key: Key
    kind: str
    controller: str
    item: Item | None = None
    template: dict[str, Any] | None = None
    template_meta: dict[str, Any] = field(default_factory=dict)
    declared: int | None = None
    pods: list[PodInfo] = field(default_factory=list)
    group: dict[str, Any] | None = None
    group_item: Item | None = None
    extra: dict[str, Any] = field(default_factory=dict)
    gang: bool = False
    name: str = ""
    pdb: dict[str, Any] | None = None
    suspended: bool = False

    @property
    def namespace(self) -> str:
        return self.key[0]

    @property
    def source(self) -> Item:
        if self.item is not None:
            return self.item
        if self.pods:
            return self.pods[0].item
        assert self.group_item is not None
        return self.group_item

    def pod_spec(self) -> dict[str, Any]:
        if self.template is not None:
            return self.template
        return self.pods[0].item.spec if self.pods else {}

    def labels(self) -> list[dict[str, str]]:
        sets = [p.labels for p in self.pods]
        if self.template is not None:
            sets.append(
                {str(k): str(v) for k, v in (self.template_meta.get("labels") or {}).items()}
            )
        return sets


class Notes:
    """Import notes grouped by reason, each listing the objects it is about."""

    def __init__(self) -> None:
        self.by_reason: dict[str, list[str]] = {}
        self.plain: list[str] = []

    def add(self, reason: str, label: str) -> None:
        self.by_reason.setdefault(reason, []).append(label)

    def lines(self) -> list[str]:
        out = list(self.plain)
        for reason, labels in self.by_reason.items():
            listed = ", ".join(labels[:MAX_LISTED])
            more = f" and {len(labels) - MAX_LISTED} more" if len(labels) > MAX_LISTED else ""
            out.append(f"{reason}: {listed}{more}")
        return out


class ManifestReader:
    """Turns the objects of one import into a draft; errors name the object and line."""

    def __init__(self, options: ImportOptions, log: ErrorLog) -> None:
        self.options, self.log = options, log
        self.draft = Draft(
            name=options.name or "kubernetes-import",
            description="Imported from Kubernetes manifests",
        )
        self.items: dict[str, list[Item]] = {}
        self.nodes: dict[str, dict[str, Any]] = {}
        self.classes: dict[str, int] = dict(SYSTEM_CLASSES)
        self.default_priority = 0
        self.units: dict[Key, Unit] = {}
        self.notes = Notes()
        self.replica_sets: dict[tuple[str, str], Key] = {}
        self.jobs: dict[tuple[str, str], Key] = {}
        self.pod_groups: dict[tuple[str, str], Item] = {}
        self.workload_templates: dict[tuple[str, str, str], dict[str, Any]] = {}
        self.kueue = KueueReader(self)
        self.initial_fields = InitialPod.model_fields
        self.shape_tags: dict[tuple[Any, ...], str] = {}

    def release(self) -> None:
        """Let go of the input objects. The reader and its Kueue reader refer to each
        other; without this, a snapshot's millions of parsed objects would wait for the
        cyclic collector (paused during an import) instead of being freed here."""
        self.items.clear()
        self.units.clear()
        self.kueue = None  # type: ignore[assignment]

    def add(self, item: Item) -> None:
        """Keep an object for the build, unless a section it is read by is not an object
        (``"metadata": 5``): that is an error naming the field, never a traceback."""
        for section in ("metadata", "spec", "status"):
            value = item.data.get(section)
            if value is not None and not isinstance(value, dict):
                self.error(item, f"{section}: must be an object, not {json.dumps(value)}")
                return
        self.items.setdefault(item.kind, []).append(item)
        kinds = self.draft.kinds
        kinds[item.kind or "(no kind)"] = kinds.get(item.kind or "(no kind)", 0) + 1

    def of(self, kind: str) -> list[Item]:
        return self.items.get(kind, [])

    def error(self, item: Item, message: str) -> None:
        self.log.add(
            item.origin.file, item.origin.line, item.origin.column, f"{item.label}: {message}"
        )

    # ================================================================ driver
    def build(self) -> Draft:
        at = self._snapshot_time()
        self._unknown_kinds()
        self._priority_classes()
        for item in self.of("Node"):
            self._node(item)
        self._workload_api()
        for item in self.of("PodGroup"):
            self._pod_group(item)
        self.kueue.read_classes_and_queues()
        for kind in ("Deployment", "StatefulSet", "ReplicaSet", "JobSet", "Job"):
            for item in self.of(kind):
                self._controller(item)
        for item in self.of("Pod"):
            self._pod(item)
        self._check_group_priorities()
        for item in self.of("PodDisruptionBudget"):
            self._pdb(item)
        for item in self.of("ResourceQuota"):
            self._quota(item)
        if not self.log:
            self._emit(at)
        return self.draft

    def _unknown_kinds(self) -> None:
        for kind, items in sorted(self.items.items()):
            if kind in USED_KINDS and self._known_group(kind, items[0]):
                continue
            for item in items:
                if not kind:
                    self.notes.add(
                        "left out, documents without a kind (not Kubernetes objects)",
                        f"{item.origin.file}:{item.origin.line}",
                    )
                elif kind in PEER_KINDS:
                    self.notes.add(PEER_KINDS[kind], f"{item.origin.file}:{item.origin.line}")
                else:
                    self.notes.add("left out, a kind this model does not read", item.label)

    def _known_group(self, kind: str, item: Item) -> bool:
        """A Kueue ``Workload`` is not the scheduling API's ``Workload``."""
        if kind == "Workload":
            return item.api_group in SCHEDULING_GROUPS
        return True

    def _snapshot_time(self) -> datetime | None:
        """The user's ``--snapshot-time``, else the latest timestamp in the input (each
        distinct text parsed once: a snapshot repeats its timestamps)."""
        if self.options.snapshot_time:
            return _timestamp(self.options.snapshot_time)
        texts: set[Any] = set()
        for kind in ("Node", "Pod"):
            for item in self.of(kind):
                _timestamp_texts(item.data, texts)
        return max((t for t in map(_maybe_time, texts) if t is not None), default=None)

    # ================================================================ classes
    def _priority_classes(self) -> None:
        default: Item | None = None
        for item in self.of("PriorityClass"):
            name = item.name
            if name in SYSTEM_CLASSES:
                continue
            value = item.data.get("value")
            if not isinstance(value, int) or isinstance(value, bool):
                self.error(item, f"value: '{value}' is not an integer")
                continue
            if name in self.classes:
                self.error(item, f"metadata.name: duplicate PriorityClass '{name}'")
                continue
            if item.data.get("globalDefault"):
                if default is not None:
                    self.error(
                        item,
                        f"globalDefault: only one PriorityClass may be "
                        f"globalDefault ('{default.name}' is already, at line "
                        f"{default.origin.line} of {default.origin.file})",
                    )
                    continue
                default, self.default_priority = item, value
            entry: dict[str, Any] = {
                "name": name,
                "value": value,
                "globalDefault": bool(item.data.get("globalDefault")),
            }
            if item.data.get("preemptionPolicy"):
                entry["preemptionPolicy"] = item.data["preemptionPolicy"]
            if item.data.get("description"):
                entry["description"] = str(item.data["description"])
            self.draft.provenance.record(
                f"priorityClasses[{len(self.draft.priority_classes)}]", item.origin
            )
            self.draft.priority_classes.append(entry)
            self.classes[name] = value

    def priority_of(self, item: Item, class_name: str | None, field_path: str) -> int | None:
        """The class's value (the API server's admission), or an error naming it."""
        if not class_name:
            return self.default_priority
        if class_name not in self.classes:
            self.error(item, f"{field_path}: no PriorityClass with name '{class_name}' was found")
            return None
        return self.classes[class_name]

    # ================================================================ nodes
    def _node(self, item: Item) -> None:
        meta, spec, status = item.meta, item.spec, item.status
        resources = status.get("allocatable") or status.get("capacity") or {}
        if "name" not in meta:
            self.error(item, "metadata.name is missing")
            return
        try:
            node = {
                "name": meta["name"],
                "gpus": parse_count(resources.get(GPU, 0)),
                "cpu": parse_quantity(resources.get("cpu", 0)),
                "memory": parse_quantity(resources.get("memory", 0)) / GIB,
                "maxPods": max(1, parse_count(resources.get("pods", 110))),
                "mig": {
                    str(k)[len(MIG) :]: parse_count(v)
                    for k, v in sorted(resources.items())
                    if str(k).startswith(MIG) and parse_count(v) > 0
                },
            }
        except QuantityError as exc:
            self.error(item, f"status.allocatable: {exc}")
            return
        if not resources:
            self.notes.add("nodes without status.allocatable (0 GPUs, 0 CPU)", item.label)
        labels = {str(k): str(v) for k, v in (meta.get("labels") or {}).items()}
        node["gpuModel"] = labels.pop(GPU_PRODUCT, "")
        node.update(
            labels=labels,
            taints=_taints(spec),
            spot=any(labels.get(k, "").lower() == v.lower() for k, v in SPOT_LABELS.items()),
        )
        if node["name"] in self.nodes:
            self.error(item, f"metadata.name: duplicate Node '{node['name']}'")
            return
        self.draft.provenance.record(f"cluster.nodes[{len(self.nodes)}]", item.origin)
        self.nodes[node["name"]] = node

    # ================================================================ gangs
    def _workload_api(self) -> None:
        """``scheduling.k8s.io`` Workload: templates its PodGroups refer to (v1alpha2
        ``podGroupTemplates``; v1alpha1 ``podGroups`` that pods join by workloadRef)."""
        for item in self.of("Workload"):
            if item.api_group not in SCHEDULING_GROUPS:
                continue
            spec = item.spec
            for entry in _dicts(spec.get("podGroupTemplates")) + _dicts(spec.get("podGroups")):
                group = self._group_fields(item, entry)
                if group is not None:
                    self.workload_templates[(item.namespace, item.name, str(entry.get("name")))] = (
                        group
                    )
                    group["_item"] = item

    def _group_fields(self, item: Item, spec: Mapping[str, Any]) -> dict[str, Any] | None:
        policy = spec.get("schedulingPolicy") or spec.get("policy") or {}
        group: dict[str, Any] = {}
        if isinstance(policy.get("gang"), dict):
            count = policy["gang"].get("minCount")
            if not isinstance(count, int) or isinstance(count, bool) or count < 1:
                self.error(
                    item,
                    f"schedulingPolicy.gang.minCount: '{count}' is not a positive whole number",
                )
                return None
            group.update(minCount=count, scheduling="gang")
        elif "basic" in policy:
            group["scheduling"] = "basic"
        mode = _disruption_mode(spec.get("disruptionMode"))
        if mode is None:
            self.error(item, f"disruptionMode: '{spec.get('disruptionMode')}' is not Single or All")
            return None
        if mode:
            group["disruptionMode"] = mode
        if spec.get("priorityClassName"):
            group["priorityClassName"] = str(spec["priorityClassName"])
        if spec.get("schedulingConstraints"):
            self.notes.add(
                "schedulingConstraints are not read (use the "
                "disruption-lab.io/topology annotation)",
                item.label,
            )
        return group

    def _pod_group(self, item: Item) -> None:
        if item.api_group not in SCHEDULING_GROUPS:
            self.notes.add(
                "left out, a PodGroup of another API group (only scheduling.k8s.io is read)",
                item.label,
            )
            return
        spec = item.spec
        ref = (spec.get("podGroupTemplateRef") or {}).get("workload") or {}
        inherited = self.workload_templates.get(
            (item.namespace, str(ref.get("workloadName")), str(ref.get("podGroupTemplateName")))
        )
        if ref and inherited is None:
            self.notes.add(
                "PodGroups naming a Workload template not in the input (their own fields are used)",
                item.label,
            )
        group = self._group_fields(item, spec)
        if group is None:
            return
        merged = {k: v for k, v in (inherited or {}).items() if k != "_item"}
        merged.update(group)
        key = (item.namespace, "PodGroup", item.name)
        self.pod_groups[(item.namespace, item.name)] = item
        unit = Unit(key, *OWNER_KIND["PodGroup"], group=merged, group_item=item)
        if merged.get("priorityClassName"):
            self.priority_of(item, merged["priorityClassName"], "spec.priorityClassName")
        self.units[key] = unit

    # ================================================================ controllers
    def _controller(self, item: Item) -> None:
        kind, spec = item.kind, item.spec
        if kind == "ReplicaSet":
            owner = _controller_ref(item.meta)
            if (
                owner
                and owner.get("kind") == "Deployment"
                and (item.namespace, "Deployment", str(owner.get("name"))) in self.units
            ):
                self.replica_sets[(item.namespace, item.name)] = (
                    item.namespace,
                    "Deployment",
                    str(owner.get("name")),
                )
                return
        if kind == "Job":
            owner = _controller_ref(item.meta)
            jobset = (item.meta.get("labels") or {}).get(JOBSET_LABEL) or (
                owner.get("name") if owner and owner.get("kind") == "JobSet" else None
            )
            if jobset and self._jobset_unit(item.namespace, str(jobset), item.meta) is not None:
                self.jobs[(item.namespace, item.name)] = self._jobset_unit(
                    item.namespace, str(jobset), item.meta
                )  # type: ignore[assignment]
                return
        if kind == "JobSet":
            self._jobset(item)
            return
        template = spec.get("template") or {}
        replicas = spec.get("parallelism" if kind == "Job" else "replicas", 1)
        if not _whole(replicas):
            self.error(
                item,
                f"spec.{'parallelism' if kind == 'Job' else 'replicas'}: "
                f"'{replicas}' is not a whole number",
            )
            return
        unit = self._template_unit(item, (item.namespace, kind, item.name), template, int(replicas))
        if kind == "Job":
            self._job_fields(item, unit)

    def _template_unit(
        self, item: Item, key: Key, template: Mapping[str, Any], declared: int
    ) -> Unit:
        kind, controller = OWNER_KIND[item.kind]
        pod_spec = template.get("spec") or {}
        self.priority_of(
            item, pod_spec.get("priorityClassName"), "spec.template.spec.priorityClassName"
        )
        unit = Unit(
            key,
            kind,
            controller,
            item=item,
            template=dict(template.get("spec") or {}),
            template_meta=dict(template.get("metadata") or {}),
            declared=declared,
        )
        self.units[key] = unit
        return unit

    def _job_fields(self, item: Item, unit: Unit) -> None:
        spec = item.spec
        if spec.get("podReplacementPolicy"):
            unit.extra["podReplacementPolicy"] = spec["podReplacementPolicy"]
        completions = spec.get("completions")
        if isinstance(completions, int) and completions > (unit.declared or 1):
            self.notes.add(
                "Job completions beyond parallelism are not modelled (the work "
                "is durationSeconds of parallelism members)",
                item.label,
            )
        self._job_failure_fields(item, spec)
        if spec.get("suspend"):
            unit.suspended = True

    def _job_failure_fields(self, item: Item, job_spec: Mapping[str, Any]) -> None:
        """What a Job does with failed pods: the model replaces every evicted member
        (the Job controller with podFailurePolicy ignoring DisruptionTarget), so a
        finite backoffLimit and the failure policies are named, not modelled."""
        if job_spec.get("backoffLimit") is not None:
            self.notes.add(
                "Job backoffLimit is not counted (an evicted member is always "
                "replaced, as with a podFailurePolicy that ignores "
                "DisruptionTarget)",
                item.label,
            )
        for extra in ("podFailurePolicy", "backoffLimitPerIndex", "activeDeadlineSeconds"):
            if job_spec.get(extra) is not None:
                self.notes.add(f"Job {extra} is not modelled", item.label)

    def _jobset(self, item: Item) -> None:
        rjobs = _dicts(item.spec.get("replicatedJobs"))
        policy = item.spec.get("failurePolicy") or {}
        for extra in ("startupPolicy", "successPolicy"):
            if item.spec.get(extra):
                self.notes.add(f"JobSet {extra} is not modelled", item.label)
        if policy.get("rules"):
            self.notes.add("JobSet failurePolicy.rules are not modelled", item.label)
        if policy.get("maxRestarts") is not None:
            self.notes.add(
                "JobSet failurePolicy.maxRestarts is not counted (a group "
                "restart is never refused)",
                item.label,
            )
        if not rjobs:
            self.error(item, "spec.replicatedJobs: a JobSet needs at least one replicated job")
            return
        for rjob in rjobs:
            job_spec = (rjob.get("template") or {}).get("spec") or {}
            replicas, parallelism = rjob.get("replicas", 1), job_spec.get("parallelism", 1)
            if not (_whole(replicas) and _whole(parallelism)):
                self.error(
                    item,
                    f"spec.replicatedJobs[{rjob.get('name')}]: replicas and "
                    "parallelism must be whole numbers",
                )
                continue
            name = item.name if len(rjobs) == 1 else f"{item.name}-{rjob.get('name')}"
            unit = self._template_unit(
                item,
                (item.namespace, "JobSet", f"{item.name}/{rjob.get('name')}"),
                job_spec.get("template") or {},
                int(replicas) * int(parallelism),
            )
            unit.extra.update(restart=self._jobset_restart(item, policy, job_spec), base=name)
            if job_spec.get("podReplacementPolicy"):
                unit.extra["podReplacementPolicy"] = job_spec["podReplacementPolicy"]
            for extra in ("podFailurePolicy", "backoffLimitPerIndex"):
                if job_spec.get(extra) is not None:
                    self.notes.add(f"Job {extra} is not modelled", item.label)
            if item.spec.get("suspend"):
                unit.suspended = True

    def _jobset_restart(
        self, item: Item, policy: Mapping[str, Any], job_spec: Mapping[str, Any]
    ) -> str:
        """Who replaces an evicted member of a JobSet. Its Job does, while its
        ``backoffLimit`` (6 when unset) allows a retry: ``member``. With ``backoffLimit:
        0`` the eviction fails the Job, and ``failurePolicy`` (``Recreate``,
        ``BlockingRecreate``) recreates every Job of the JobSet: ``group``."""
        if "inplace" in str(policy.get("restartStrategy", "")).lower():
            return "member"
        backoff = job_spec.get("backoffLimit", 6)
        if _whole(backoff) and backoff > 0:
            return "member"
        if not policy:
            self.notes.add(
                "JobSets without failurePolicy fail when a member fails; "
                "modelled as restarting the whole group",
                item.label,
            )
        return "group"

    def _jobset_unit(self, namespace: str, jobset: str, meta: Mapping[str, Any]) -> Key | None:
        labels = meta.get("labels") or {}
        rjob = labels.get(RJOB_LABEL)
        candidates = [
            k
            for k in self.units
            if k[0] == namespace and k[1] == "JobSet" and k[2].partition("/")[0] == jobset
        ]
        if rjob is not None:
            candidates = [k for k in candidates if k[2].partition("/")[2] == rjob] or candidates
        return candidates[0] if candidates else None

    # ================================================================ pods
    def _pod(self, item: Item) -> None:
        meta, spec, status = item.meta, item.spec, item.status
        if status.get("phase") in ("Succeeded", "Failed"):
            self.notes.add("left out, finished pods (Succeeded/Failed)", item.label)
            return
        try:
            gpus, cpu, memory = requests(spec)
            mig_requests(spec)
        except FieldError as exc:
            self.error(item, str(exc))
            return
        node = spec.get("nodeName") or None
        if node is not None and node not in self.nodes:
            self.error(item, f"spec.nodeName: no node named '{node}' in the input")
            return
        labels = {str(k): str(v) for k, v in (meta.get("labels") or {}).items()}
        deleting = meta.get("deletionTimestamp")
        pod = PodInfo(
            item,
            labels,
            gpus,
            cpu,
            memory,
            node,
            _maybe_time(status.get("startTime")),
            _maybe_time(deleting) if deleting is not None else None,
            status.get("nominatedNodeName") or None,
        )
        owners = _dicts(meta.get("ownerReferences"))
        if _is_node_daemon(meta, owners):
            self._overhead(pod)
            return
        if self.priority_of(item, spec.get("priorityClassName"), "spec.priorityClassName") is None:
            return
        owner = next((o for o in owners if o.get("controller")), owners[0] if owners else None)
        unit = self._unit_of(pod, owner)
        unit.pods.append(pod)

    def _unit_of(self, pod: PodInfo, owner: Mapping[str, Any] | None) -> Unit:
        """The controller in the input that owns the pod (``owner``, its controller
        reference), else its PodGroup, else a workload of the pods that share its owner
        reference and shape."""
        meta, spec = pod.item.meta, pod.item.spec
        namespace = str(meta.get("namespace") or "default")
        if owner is not None:
            key = self._owner_unit(namespace, str(owner.get("kind")), str(owner.get("name")), pod)
            if key is not None:
                return self.units[key]
        if JOBSET_LABEL in pod.labels:
            key = self._jobset_unit(namespace, pod.labels[JOBSET_LABEL], meta)
            if key is not None:
                return self.units[key]
        group_name = (spec.get("schedulingGroup") or {}).get("podGroupName")
        if group_name and (namespace, "PodGroup", group_name) in self.units:
            return self.units[(namespace, "PodGroup", group_name)]
        if group_name:
            self.error(
                pod.item,
                f"spec.schedulingGroup.podGroupName: no PodGroup "
                f"'{group_name}' in namespace '{namespace}' in the input",
            )
        return self._implicit_unit(pod, owner, namespace)

    def _owner_unit(self, namespace: str, kind: str, name: str, pod: PodInfo) -> Key | None:
        if kind == "ReplicaSet":
            if (namespace, name) in self.replica_sets:
                return self.replica_sets[(namespace, name)]
            digest = pod.labels.get("pod-template-hash")
            if digest and name.endswith(f"-{digest}"):
                key = (namespace, "Deployment", name[: -len(digest) - 1])
                if key in self.units:
                    return key
        if kind == "Job" and (namespace, name) in self.jobs:
            return self.jobs[(namespace, name)]
        key = (namespace, kind, name)
        return key if key in self.units and self.units[key].item is not None else None

    def _implicit_unit(self, pod: PodInfo, owner: Mapping[str, Any] | None, namespace: str) -> Unit:
        spec = pod.item.spec
        kind, name = "Pod", pod.item.name
        for label in GANG_LABELS:
            if label in pod.labels:
                kind, name = "PodGroup", pod.labels[label]
                break
        else:
            if JOBSET_LABEL in pod.labels:
                kind, name = "JobSet", pod.labels[JOBSET_LABEL]
            elif owner is not None:
                kind, name = str(owner.get("kind")), str(owner.get("name"))
        shape = (
            kind,
            pod.gpus,
            pod.cpu,
            pod.memory,
            spec.get("priorityClassName") or None,
            spec.get("terminationGracePeriodSeconds", 30),
        )
        tag = self.shape_tags.get(shape)
        if tag is None:  # formatted once per shape, not once per pod
            tag = self.shape_tags[shape] = f"{kind}#{shape[1:]}"
        key = (namespace, tag, name)
        if key not in self.units:
            workload_kind, controller = OWNER_KIND.get(kind, ("batch", "none"))
            self.units[key] = Unit(key, workload_kind, controller, gang=kind == "PodGroup")
            self.units[key].extra["base"] = name
        return self.units[key]

    def _overhead(self, pod: PodInfo) -> None:
        """DaemonSet and static pods: what they hold is not there for workloads."""
        self.notes.add("DaemonSet/static pods, taken off their node's allocatable", pod.item.label)
        node = self.nodes.get(pod.node or "")
        if node is None:
            return
        node["gpus"] = max(0, node["gpus"] - pod.gpus)
        node["cpu"] = max(0.0, node["cpu"] - pod.cpu)
        node["memory"] = max(0.0, node["memory"] - pod.memory)
        node["maxPods"] = max(1, node["maxPods"] - 1)

    # ================================================================ group priority
    def _check_group_priorities(self) -> None:
        """1.37 gives a PodGroup's members the group's priority; pods (or templates)
        whose own class disagrees with it, or with each other, are refused here."""
        for unit in list(self.units.values()):
            self._link_group(unit)
            group_item = unit.group_item
            if group_item is None:
                continue
            wanted_class = (unit.group or {}).get("priorityClassName")
            wanted = self.classes.get(wanted_class) if wanted_class else None
            members = [(p.item, p.item.spec.get("priorityClassName")) for p in unit.pods]
            if unit.template is not None and unit.item is not None:
                members.insert(0, (unit.item, unit.template.get("priorityClassName")))
            first: tuple[Item, str | None, int] | None = None
            for item, name in members:
                value = (
                    self.classes.get(name, self.default_priority) if name else self.default_priority
                )
                if wanted is not None and value != wanted:
                    self.error(
                        item,
                        f"spec.priorityClassName: '{name or '(none)'}' "
                        f"(priority {value}) disagrees with its {group_item.label}"
                        f" ('{wanted_class}', priority {wanted}); Kubernetes "
                        "1.37 requires a PodGroup's members to share its "
                        "priority",
                    )
                elif wanted is None and first is not None and value != first[2]:
                    self.error(
                        item,
                        f"spec.priorityClassName: '{name or '(none)'}' "
                        f"(priority {value}) disagrees with {first[0].label} "
                        f"('{first[1] or '(none)'}', priority {first[2]}), a "
                        f"member of the same {group_item.label}",
                    )
                if first is None:
                    first = (item, name, value)

    def _link_group(self, unit: Unit) -> None:
        """A controller whose pod template names a PodGroup takes that group (and the
        group's own unit is then empty)."""
        if unit.template is None or unit.group_item is not None:
            return
        name = (unit.template.get("schedulingGroup") or {}).get("podGroupName")
        if not name:
            return
        key = (unit.namespace, "PodGroup", str(name))
        group_unit = self.units.get(key)
        if group_unit is None:
            assert unit.item is not None
            self.error(
                unit.item,
                f"spec.template.spec.schedulingGroup.podGroupName: no "
                f"PodGroup '{name}' in namespace '{unit.namespace}' in the "
                "input",
            )
            return
        unit.group, unit.group_item = group_unit.group, group_unit.group_item
        unit.pods.extend(group_unit.pods)
        group_unit.pods = []
        group_unit.extra["claimed"] = True

    # ================================================================ PDBs
    def _pdb(self, item: Item) -> None:
        spec = item.spec
        selector = spec.get("selector") or {}
        try:
            matches = _selector(selector)
        except FieldError as exc:
            self.error(item, str(exc))
            return
        units = [
            u
            for u in self._live_units()
            if u.namespace == item.namespace and any(matches(labels) for labels in u.labels())
        ]
        if len(units) != 1:
            what = "no pod" if not units else f"{len(units)} workloads"
            self.notes.add(
                f"budgets not applied: each selects {what} (budgets are per workload here)",
                item.label,
            )
            return
        unit = units[0]
        budget = self._budget(item, spec, _members(unit))
        if budget is None:
            return
        status = item.status
        disrupted = status.get("disruptedPods")
        if disrupted:
            budget.update(self._disrupted(item, disrupted))
        if "disruptionsAllowed" in status:
            self.notes.add(
                "PDB status.disruptionsAllowed is recomputed by the simulation", item.label
            )
        unit.pdb = budget
        relative = spec.get("maxUnavailable") is not None or str(
            spec.get("minAvailable", "")
        ).endswith("%")
        if relative and unit.controller != "deployment":
            self.notes.add(
                "budgets counted against their workload's members; Kubernetes "
                "finds no scalable controller for these pods and would allow no "
                "voluntary disruption",
                item.label,
            )

    def _disrupted(self, item: Item, disrupted: Any) -> dict[str, Any]:
        """``status.disruptedPods`` (pod name -> eviction time): kept where the spec has
        a field for it, else noted."""
        from scheduler_core.spec import PodDisruptionBudget

        if "disrupted_pods" in PodDisruptionBudget.model_fields:
            return {
                "disruptedPods": len(disrupted)
                if isinstance(disrupted, dict)
                else int(disrupted)
                if _whole(disrupted)
                else 0
            }
        self.notes.add("PDB status.disruptedPods is not modelled", item.label)
        return {}

    def _budget(self, item: Item, spec: Mapping[str, Any], members: int) -> dict[str, Any] | None:
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
        if isinstance(value, str) and value.isdigit():
            value = int(value)
        if _whole(value) and int(value) >= 0:
            return {name: int(value)}
        self.error(item, f"spec.{name}: '{value}' is not a whole number or a percentage")
        return None

    # ================================================================ quotas
    def _quota(self, item: Item) -> None:
        hard = item.spec.get("hard") or {}
        gpu_key = next((k for k in (f"requests.{GPU}", GPU, f"limits.{GPU}") if k in hard), None)
        expressions = _dicts((item.spec.get("scopeSelector") or {}).get("matchExpressions"))
        scoped = [e for e in expressions if e.get("scopeName") == "PriorityClass"]
        values = _list(scoped[0].get("values")) if scoped else []
        if (
            gpu_key is None
            or len(scoped) != 1
            or scoped[0].get("operator") != "In"
            or len(values) != 1
            or len(expressions) != 1
        ):
            self.notes.add(
                "quotas not modelled (only a GPU quota scoped to one PriorityClass with In is)",
                item.label,
            )
            return
        try:
            gpus = parse_count(hard[gpu_key])
        except QuantityError as exc:
            self.error(item, f"spec.hard.{gpu_key}: {exc}")
            return
        if self.priority_of(item, str(values[0]), "spec.scopeSelector") is None:
            return
        others = sorted(k for k in hard if k != gpu_key)
        if others:
            self.notes.add(
                f"quota limits other than GPUs are not modelled ({', '.join(others)})", item.label
            )
        self.draft.notes.append(
            f"{item.label}: applies cluster-wide here (the model has no namespaces)"
        )
        self.kueue.quotas.append({"priorityClassName": str(values[0]), "gpus": gpus})

    # ================================================================ output
    def _live_units(self) -> list[Unit]:
        return [u for u in self.units.values() if not u.extra.get("claimed")]

    def _emit(self, at: datetime | None) -> None:
        draft = self.draft
        draft.cluster = {"nodes": list(self.nodes.values())}
        if not self.nodes:
            draft.cluster = None
        draft.horizon_seconds = self.options.horizon_seconds or DEFAULT_HORIZON
        taken: set[str] = set()
        for unit in self._live_units():
            if unit.suspended and not self.kueue.queue_of(unit):
                self.notes.add(
                    "left out, suspended without a Kueue queue (no pods)", unit.source.label
                )
                continue
            if not unit.pods and unit.template is None:
                assert unit.group_item is not None
                if not (unit.group or {}).get("minCount"):
                    self.notes.add(
                        "left out, PodGroups with no member pods, controller or minCount",
                        unit.group_item.label,
                    )
                    continue
            unit.name = _unique(unit, taken)
            self._workload(unit, at)
        self.kueue.emit(draft)
        pods = sum(len(u.pods) for u in self._live_units())
        draft.counts.update(
            nodes=len(self.nodes),
            pods=pods,
            workloads=len(draft.workloads),
            initial_pods=len(draft.initial_state),
        )
        if at is not None and draft.initial_state:
            self.notes.plain.append(f"snapshot time {at.isoformat()}: pods started before it")
        self.notes.plain.append(
            "remaining work is unknown: workloads run to the horizon "
            "unless disruption-lab.io/duration-seconds says otherwise"
        )
        draft.notes.extend(self.notes.lines())

    def _workload(self, unit: Unit, at: datetime | None) -> None:
        source = unit.source
        spec = unit.pod_spec()
        try:
            fields = self._fields(unit, spec)
        except FieldError as exc:
            self.error(source, str(exc))
            return
        self.draft.add_workload(fields, source.origin.file, source.origin.line)
        for member, pod in enumerate(unit.pods):
            if pod.node is not None:
                self._place(unit, member, pod, at)
            elif pod.nominated:
                self._nominated(unit, member, pod)

    def _fields(self, unit: Unit, spec: Mapping[str, Any]) -> dict[str, Any]:
        template_meta = unit.template_meta
        own = (
            unit.item.meta
            if unit.item is not None
            else (
                unit.pods[0].item.meta
                if unit.pods
                else unit.group_item.meta
                if unit.group_item
                else {}
            )
        )
        group_meta = unit.group_item.meta if unit.group_item is not None else {}
        kind = kind_from(
            unit.kind,
            own.get("labels"),
            template_meta.get("labels"),
            *(p.labels for p in unit.pods[:1]),
        )
        where = "metadata.annotations"
        annotations = annotated_fields(
            own.get("annotations"),
            group_meta.get("annotations"),
            template_meta.get("annotations"),
            where=where,
        )
        kind = annotations.pop("kind", kind)
        if unit.template is not None:
            gpus, cpu, memory = requests(spec)
        elif unit.pods:
            first = unit.pods[0]
            gpus, cpu, memory = first.gpus, first.cpu, first.memory
        else:
            gpus, cpu, memory = 1, 4.0, 32.0
            self.notes.add(
                "PodGroups without member pods: each member assumed to need 1 GPU (4 CPU, 32 GiB)",
                unit.source.label,
            )
        defaults = self.options.defaults.for_kind(kind).workload_fields()
        grace = float(spec.get("terminationGracePeriodSeconds", 30))
        group_class = (unit.group or {}).get("priorityClassName")
        fields: dict[str, Any] = {
            "name": unit.name,
            "kind": kind,
            "members": _members(unit),
            "gpus": gpus,
            "cpu": cpu,
            "memory": round(memory, 6),
            "priorityClassName": group_class or spec.get("priorityClassName") or None,
            "arrival": 0.0,
            "durationSeconds": None,
            **defaults,
            "terminationGracePeriodSeconds": grace,
            "stopSeconds": min(defaults["stopSeconds"], grace),
            "controller": {"kind": _controller_kind(unit)},
        }
        rules, notes = placement(spec)
        fields.update(rules)
        self._gpu_sharing(unit, spec, fields)
        for note in notes:
            self.notes.add(note, unit.source.label)
        for key in ("podReplacementPolicy", "restart"):
            if key in unit.extra:
                fields["controller"][key] = unit.extra[key]
        if unit.pdb:
            fields["pdb"] = unit.pdb
        group = self._pod_group_field(unit, fields)
        if group:
            fields["podGroup"] = group
        self.kueue.workload_fields(unit, fields, own, template_meta)
        for path, value in annotations.items():
            set_path(fields, path, value)
        if "stopSeconds" not in annotations:
            fields["stopSeconds"] = min(
                fields["stopSeconds"], fields["terminationGracePeriodSeconds"]
            )
        return fields

    def _gpu_sharing(self, unit: Unit, spec: Mapping[str, Any], fields: dict[str, Any]) -> None:
        """MIG requests (``nvidia.com/mig-<profile>``) and a nodeSelector on the GPU model
        label (as gpuModels); the share in milli-GPU comes from its annotation."""
        source = spec if unit.template is not None or not unit.pods else unit.pods[0].item.spec
        try:
            mig = mig_requests(source)
        except FieldError as exc:
            self.error(unit.source, str(exc))
            mig = {}
        if mig:
            fields["mig"] = mig
        selector = fields.get("nodeSelector")
        if isinstance(selector, dict) and GPU_PRODUCT in selector:
            selector = dict(selector)
            fields["gpuModels"] = [selector.pop(GPU_PRODUCT)]
            fields["nodeSelector"] = selector

    def _pod_group_field(self, unit: Unit, fields: Mapping[str, Any]) -> dict[str, Any] | None:
        if unit.gang:
            return {"minCount": len(unit.pods)}
        if unit.group is None:
            return None
        group = {k: v for k, v in unit.group.items() if k != "_item"}
        if group.get("scheduling") == "basic":
            group.pop("minCount", None)
            group["minCount"] = 1
        group.setdefault("minCount", fields["members"])
        if group.get("priorityClassName") != fields.get("priorityClassName"):
            group.pop("priorityClassName", None)
        return group

    def _place(self, unit: Unit, member: int, pod: PodInfo, at: datetime | None) -> None:
        started = 0.0
        if at is not None and pod.started is not None:
            started = min(0.0, round((pod.started - at).total_seconds(), 3))
        entry: dict[str, Any] = {
            "workload": unit.name,
            "node": pod.node,
            "startedAt": started,
            "member": member,
        }
        if pod.deleting is not None:
            if "terminating_until" not in self.initial_fields:
                self.notes.add(
                    "left out, terminating pods (their GPUs free at t = 0; the "
                    "spec has no terminatingUntil)",
                    pod.item.label,
                )
                return
            until = 0.0 if at is None else (pod.deleting - at).total_seconds()
            entry["terminatingUntil"] = max(0.0, round(until, 3))
        self.draft.provenance.record(
            f"initialState[{len(self.draft.initial_state)}]", pod.item.origin
        )
        self.draft.initial_state.append(entry)

    def _nominated(self, unit: Unit, member: int, pod: PodInfo) -> None:
        if "nominated" not in self.initial_fields or pod.nominated not in self.nodes:
            self.notes.add(
                "status.nominatedNodeName not kept (the pod is plainly pending)", pod.item.label
            )
            return
        self.draft.provenance.record(
            f"initialState[{len(self.draft.initial_state)}]", pod.item.origin
        )
        self.draft.initial_state.append(
            {"workload": unit.name, "node": pod.nominated, "member": member, "nominated": True}
        )


# ==================================================================== helpers
def _controller_kind(unit: Unit) -> str:
    """A PodGroup's members that are bare pods (no owner) have no controller to recreate
    them; without pods in the input, the PodGroup's default stands."""
    if (
        unit.item is None
        and unit.group_item is not None
        and unit.pods
        and not any(_controller_ref(p.item.meta) for p in unit.pods)
    ):
        return "none"
    return unit.controller


def _members(unit: Unit) -> int:
    count = max(unit.declared or 0, len(unit.pods))
    if unit.group and unit.group.get("minCount"):
        count = max(count, int(unit.group["minCount"]))
    return max(1, count)


def _dicts(value: Any) -> list[dict[str, Any]]:
    return [v for v in value if isinstance(v, dict)] if isinstance(value, list) else []


def _list(value: Any) -> list[Any]:
    return value if isinstance(value, list) else []


def _whole(value: Any) -> bool:
    return isinstance(value, int) and not isinstance(value, bool)


def _disruption_mode(value: Any) -> str | None:
    """``Single``/``All`` (1.37 strings), ``{single: {}}``/``{all: {}}`` (the v1beta1
    union), ``Pod``/``PodGroup`` (v1alpha2); "" when unset (the default, Single)."""
    if value is None:
        return ""
    if isinstance(value, dict):
        keys = {k.lower() for k in value}
        return "All" if keys == {"all"} else "Single" if keys == {"single"} else None
    return {"single": "Single", "all": "All", "pod": "Single", "podgroup": "All"}.get(
        str(value).lower()
    )


def _taints(spec: Mapping[str, Any]) -> list[dict[str, str]]:
    taints = [
        {"key": t["key"], "value": str(t.get("value", "")), "effect": t["effect"]}
        for t in _dicts(spec.get("taints"))
        if "key" in t and "effect" in t
    ]
    if spec.get("unschedulable") and not any(t["key"] == UNSCHEDULABLE_TAINT for t in taints):
        taints.append({"key": UNSCHEDULABLE_TAINT, "value": "", "effect": "NoSchedule"})
    return taints


def _selector(selector: Mapping[str, Any]) -> Callable[[Mapping[str, str]], bool]:
    """A label selector (matchLabels AND matchExpressions), as the API defines it; an
    empty selector selects nothing here (policy/v1 would select every pod)."""
    wanted = {str(k): str(v) for k, v in (selector.get("matchLabels") or {}).items()}
    tests = [_expression(e) for e in _dicts(selector.get("matchExpressions"))]
    if not wanted and not tests:
        return lambda labels: False

    def matches(labels: Mapping[str, str]) -> bool:
        return all(labels.get(k) == v for k, v in wanted.items()) and all(t(labels) for t in tests)

    return matches


def _expression(expression: Mapping[str, Any]) -> Callable[[Mapping[str, str]], bool]:
    key, operator = str(expression.get("key")), expression.get("operator")
    values = {str(v) for v in _list(expression.get("values"))}

    def test(labels: Mapping[str, str]) -> bool:
        if operator == "In":
            return labels.get(key) in values
        if operator == "NotIn":
            return labels.get(key) not in values
        return (key in labels) == (operator == "Exists")

    if operator not in ("In", "NotIn", "Exists", "DoesNotExist"):
        raise FieldError(
            f"spec.selector.matchExpressions: '{operator}' is not In, NotIn, Exists or DoesNotExist"
        )
    return test


def _is_node_daemon(meta: Mapping[str, Any], owners: list[dict[str, Any]]) -> bool:
    annotations = meta.get("annotations") or {}
    return (
        any(o.get("kind") in ("DaemonSet", "Node") for o in owners)
        or "kubernetes.io/config.mirror" in annotations
    )


def _controller_ref(meta: Mapping[str, Any]) -> dict[str, Any] | None:
    owners = _dicts(meta.get("ownerReferences"))
    return next((o for o in owners if o.get("controller")), owners[0] if owners else None)


def _unique(unit: Unit, taken: set[str]) -> str:
    """The owner's name; with its namespace if that is taken; then numbered."""
    base = str(unit.extra.get("base") or unit.key[2])
    candidates = [dns_name(base), dns_name(f"{unit.namespace}-{base}")]
    name = next((c for c in candidates if c not in taken), candidates[1])
    stem, suffix = name, 2
    while name in taken:
        name = f"{stem}-{suffix}"
        suffix += 1
    taken.add(name)
    return name


def _timestamp(text: str) -> datetime:
    return datetime.fromisoformat(text.replace("Z", "+00:00"))


def _maybe_time(text: Any) -> datetime | None:
    try:
        return _timestamp(text) if isinstance(text, str) else None
    except ValueError:
        return None


def _timestamp_texts(data: Mapping[str, Any], into: set[Any]) -> None:
    meta, status = data.get("metadata") or {}, data.get("status") or {}
    into.add(meta.get("creationTimestamp"))
    into.add(status.get("startTime"))
    for condition in _dicts(status.get("conditions")):
        into.add(condition.get("lastTransitionTime"))
        into.add(condition.get("lastHeartbeatTime"))
