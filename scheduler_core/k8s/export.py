"""An experiment (or one variant of it) written back as Kubernetes manifests.

What a platform engineer needs to try the winning policy on a real cluster is the YAML
they would have written by hand: PriorityClasses, PodGroups, PDBs, quotas, Kueue
queues and the workloads as Jobs, JobSets, Deployments or bare Pods. Every field of the
spec that Kubernetes has a home for goes there; every other one becomes a
``disruption-lab.io/`` annotation (docs/kubernetes.md lists them), so reading the export
with :func:`scheduler_core.k8s.read_manifests` gives the same spec back.

Three parts of a spec have no object of their own, and are written so that the reader
can restore them:

* the experiment's own settings (name, horizon, seed, replications, policy, timeline
  events, variants) go into one ConfigMap, ``disruption-lab-experiment``;
* node pools become Nodes ``<pool>-<i>`` carrying the ``disruption-lab.io/node-pool``
  annotation;
* the initial state becomes Pods bound to their node (``spec.nodeName``), owned by
  their workload's controller, with ``status.startTime`` that long before the snapshot
  time, which every Node's Ready heartbeat records.

Kueue's own ``fairSharing`` setting lives in its manager configuration: it is written as
the ConfigMap ``kueue-system/kueue-manager-config`` (Kueue reads it when it starts).

The output is deterministic: the same spec gives byte-identical YAML.
"""

from __future__ import annotations

import hashlib
import math
import uuid
from collections.abc import Iterable, Iterator
from dataclasses import dataclass
from datetime import UTC, datetime, timedelta
from typing import Any

import yaml

from scheduler_core.k8s.experiment import (
    EXPERIMENT_CONFIGMAP,
    EXPERIMENT_KEY,
    EXPERIMENT_LABEL,
    POOL_ANNOTATION,
    PREFIX,
    SETTINGS,
    SPOT_ANNOTATION,
)
from scheduler_core.spec import (
    AdmissionQueue,
    ExperimentSpec,
    InitialPod,
    NodeShape,
    ResolvedVariant,
    Workload,
    resolve_variant,
)

WORKLOAD_LABEL = PREFIX + "workload"
KWOK_NODE_ANNOTATION = "kwok.x-k8s.io/node"
QUEUE_LABEL = "kueue.x-k8s.io/queue-name"
GPU = "nvidia.com/gpu"
MIG = "nvidia.com/mig-"
"""MIG profiles as the NVIDIA device plugin's mixed strategy exposes them."""
GPU_PRODUCT = "nvidia.com/gpu.product"
"""GPU Feature Discovery's label for the GPU model: a node's gpuModel."""
PAUSE_IMAGE = "registry.k8s.io/pause:3.10"
FLAVOR = "default-flavor"
DEFAULT_NAMESPACE = "disruption-lab"
SNAPSHOT_TIME = datetime(2026, 1, 1, tzinfo=UTC)
"""The instant t = 0 of the exported scenario (a fixed date keeps the output stable)."""

JOB_API, JOBSET_API = "batch/v1", "jobset.x-k8s.io/v1alpha2"
KUEUE_API = "kueue.x-k8s.io/v1beta2"
POD_GROUP_API = "scheduling.k8s.io/v1beta1"
JOB_BACKOFF_LIMIT = 6
"""The Job API's default retry budget (members are replaced in place until it runs out)."""
JOBSET_MAX_RESTARTS = 10


Manifest = dict[str, Any]


@dataclass(frozen=True, slots=True)
class ExportOptions:
    """What to write. ``nodes`` and ``initial_state`` describe the simulated cluster: a
    KWOK cluster wants them, a real one has its own nodes (``--policy-only`` drops both)."""

    namespace: str = DEFAULT_NAMESPACE
    nodes: bool = True
    initial_state: bool = True
    snapshot_time: datetime = SNAPSHOT_TIME


# ============================================================================ entry points
def export_spec(spec: ExperimentSpec, variant: str | None = None) -> ExperimentSpec:
    """The spec to write: the whole experiment, or one variant resolved into a plain spec
    (its overrides applied, its policy made the spec's, no variants left), so that the
    manifests say exactly what that variant ran."""
    if variant is None:
        return spec
    return single_variant_spec(resolve_variant(spec, variant))


def single_variant_spec(resolved: ResolvedVariant) -> ExperimentSpec:
    policy = resolved.spec.policy.model_copy(
        update={"preemption": resolved.preemption, "placement": resolved.placement}
    )
    return resolved.spec.model_copy(update={"policy": policy, "variants": [], "grid": {}})


def manifest_objects(spec: ExperimentSpec, options: ExportOptions | None = None) -> list[Manifest]:
    """Every object, in the order ``kubectl apply`` needs them (classes and queues
    before the workloads that name them)."""
    options = options or ExportOptions()
    writer = _Writer(spec, options)
    return list(writer.objects())


def export_manifests(
    spec: ExperimentSpec, *, variant: str | None = None, options: ExportOptions | None = None
) -> str:
    """The experiment (or ``variant``) as multi-document YAML with a header comment."""
    options = options or ExportOptions()
    chosen = export_spec(spec, variant)
    header = manifest_header(chosen, variant, options)
    return dump_documents(manifest_objects(chosen, options), header)


def export_kwok_snapshot(
    spec: ExperimentSpec, *, variant: str | None = None, namespace: str = DEFAULT_NAMESPACE
) -> str:
    """The scenario at t = 0 as a KWOK snapshot (what ``kwokctl snapshot export`` writes:
    one multi-document YAML of the cluster's objects). Its Nodes carry the annotation
    KWOK's controller manages (``kwok.x-k8s.io/node: fake``); the initial state is Pods
    bound to them, owned by their controllers, which KWOK re-links on restore; the
    controllers then create the pending members themselves."""
    chosen = export_spec(spec, variant)
    options = ExportOptions(namespace=namespace)
    objects = manifest_objects(chosen, options)
    for obj in objects:
        if obj["kind"] == "Node":
            obj["metadata"].setdefault("annotations", {})[KWOK_NODE_ANNOTATION] = "fake"
    what = f"experiment '{chosen.name}'" + (f", variant '{variant}'" if variant else "")
    header = [
        f"Disruption Lab: {what} at t = 0 as a KWOK cluster snapshot.",
        "Restore: kwokctl create cluster && kwokctl snapshot restore --path THIS_FILE --format k8s",
        "(newer kwokctl: kwokctl snapshot replay --snapshot --path THIS_FILE).",
        "Install the JobSet and Kueue CRDs first where JobSets or queues appear.",
        f"t = 0 is {timestamp(options.snapshot_time)} (every Node's Ready heartbeat).",
        "Import it back: python -m scheduler_core import k8s THIS_FILE",
    ]
    return dump_documents(objects, header)


def manifest_header(spec: ExperimentSpec, variant: str | None, options: ExportOptions) -> list[str]:
    what = f"experiment '{spec.name}'" + (f", variant '{variant}'" if variant else "")
    lines = [
        f"Disruption Lab: {what} as Kubernetes manifests.",
        f"Apply: kubectl apply -f THIS_FILE (namespace '{options.namespace}' is created).",
        "Needs: the JobSet and Kueue CRDs where JobSets or queues appear; PodGroups need",
        "scheduling.k8s.io/v1beta1 (the GenericWorkload feature gate).",
        "Fields Kubernetes has no home for are disruption-lab.io/ annotations; the",
        f"ConfigMap {EXPERIMENT_CONFIGMAP} keeps the experiment's own settings.",
        "Import it back: python -m scheduler_core import k8s THIS_FILE",
    ]
    if options.nodes:
        lines.append(
            "The Nodes (and Pods bound to them: the initial state) describe the simulated cluster;"
        )
        lines.append("for a real cluster export with --policy-only.")
    return lines


class _Dumper(yaml.SafeDumper):
    """Safe YAML with multi-line strings (the ConfigMap's document) as literal blocks."""


def _string(dumper: yaml.SafeDumper, text: str) -> yaml.Node:
    style = "|" if "\n" in text and not text.startswith(" ") else None
    return dumper.represent_scalar("tag:yaml.org,2002:str", text, style=style)


_Dumper.add_representer(str, _string)


def dump_documents(objects: Iterable[Manifest], header: Iterable[str] = ()) -> str:
    """Multi-document YAML, ``---`` before each object, ``#`` header lines on top."""
    parts = [f"# {line}\n" for line in header]
    for obj in objects:
        parts.append("---\n")
        parts.append(
            yaml.dump(
                obj,
                Dumper=_Dumper,
                sort_keys=False,
                allow_unicode=True,
                default_flow_style=False,
                width=100,
            )
        )
    return "".join(parts)


# ============================================================================ the writer
class _Writer:
    """Builds the objects of one spec; one method per Kubernetes kind."""

    def __init__(self, spec: ExperimentSpec, options: ExportOptions) -> None:
        self.spec, self.options, self.ns = spec, options, options.namespace

    def objects(self) -> Iterator[Manifest]:
        yield {"apiVersion": "v1", "kind": "Namespace", "metadata": {"name": self.ns}}
        yield self.experiment_config()
        yield from (priority_class(pc) for pc in self.spec.priority_classes)
        yield from self.kueue()
        yield from (
            self.resource_quota(q.priority_class_name, q.gpus) for q in self.spec.resource_quotas
        )
        for workload in self.spec.workloads:
            yield from self.workload(workload)
        if self.options.nodes:
            yield from self.nodes()
        if self.writes_initial_state:
            yield from self.initial_pods()

    def meta(self, name: str, **extra: Any) -> dict[str, Any]:
        return {"name": name, "namespace": self.ns, **extra}

    # ------------------------------------------------------------ experiment settings
    def experiment_config(self) -> Manifest:
        document = self.spec.model_dump(mode="json", by_alias=True, exclude_none=True)
        settings = {key: document[key] for key in SETTINGS if key in document}
        text = yaml.safe_dump(settings, sort_keys=False, allow_unicode=True)
        return {
            "apiVersion": "v1",
            "kind": "ConfigMap",
            "metadata": self.meta(EXPERIMENT_CONFIGMAP, labels={EXPERIMENT_LABEL: "true"}),
            "data": {EXPERIMENT_KEY: text},
        }

    # ------------------------------------------------------------ quotas and queues
    def resource_quota(self, class_name: str, gpus: int) -> Manifest:
        """A namespace quota on the GPUs of one PriorityClass (a scope selector)."""
        return {
            "apiVersion": "v1",
            "kind": "ResourceQuota",
            "metadata": self.meta(f"{class_name}-gpus"),
            "spec": {
                "hard": {f"requests.{GPU}": str(gpus)},
                "scopeSelector": {
                    "matchExpressions": [
                        {"scopeName": "PriorityClass", "operator": "In", "values": [class_name]}
                    ]
                },
            },
        }

    def kueue(self) -> Iterator[Manifest]:
        if not self.spec.queues:
            return
        for flavor in flavor_names(self.spec.queues):
            yield {
                "apiVersion": KUEUE_API,
                "kind": "ResourceFlavor",
                "metadata": {"name": flavor},
                "spec": {},
            }
        if self.spec.fair_sharing is not None:
            yield self.kueue_configuration()
        for cohort in sorted({q.cohort for q in self.spec.queues if q.cohort}):
            yield {
                "apiVersion": KUEUE_API,
                "kind": "Cohort",
                "metadata": {"name": cohort},
                "spec": {},
            }
        for queue in self.spec.queues:
            yield cluster_queue(queue, self.total_gpus())
            yield {
                "apiVersion": KUEUE_API,
                "kind": "LocalQueue",
                "metadata": self.meta(queue.name),
                "spec": {"clusterQueue": queue.name},
            }

    def kueue_configuration(self) -> Manifest:
        """Kueue's manager configuration with fairSharing (kueue-system/kueue-manager-config;
        Kueue reads it at start, so restart the controller after applying it)."""
        fair = self.spec.fair_sharing
        assert fair is not None
        config = {
            "apiVersion": "config.kueue.x-k8s.io/v1beta1",
            "kind": "Configuration",
            "fairSharing": {
                "enable": True,
                "preemptionStrategies": list(fair.preemption_strategies),
            },
        }
        return {
            "apiVersion": "v1",
            "kind": "ConfigMap",
            "metadata": {"name": "kueue-manager-config", "namespace": "kueue-system"},
            "data": {"controller_manager_config.yaml": yaml.safe_dump(config, sort_keys=False)},
        }

    def total_gpus(self) -> int:
        cluster = self.spec.cluster
        return sum(p.gpus * p.count for p in cluster.node_pools) + sum(
            n.gpus for n in cluster.nodes
        )

    # ------------------------------------------------------------ workloads
    def workload(self, w: Workload) -> Iterator[Manifest]:
        if w.pod_group is not None:
            yield self.pod_group(w)
        if w.pdb is not None:
            yield self.pdb(w)
        kind = w.controller.kind.value
        if kind == "job":
            yield self.job(w)
        elif kind == "jobset":
            yield self.jobset(w)
        elif kind == "deployment":
            yield self.deployment(w)
        else:
            yield from self.bare_pods(w)

    def labels(self, w: Workload) -> dict[str, str]:
        labels = {WORKLOAD_LABEL: w.name}
        if w.queue:
            labels[QUEUE_LABEL] = w.queue
        return labels

    def object_meta(self, w: Workload) -> dict[str, Any]:
        return self.meta(w.name, labels=self.labels(w), annotations=workload_annotations(w))

    def pod_template(self, w: Workload, restart: str) -> Manifest:
        return {
            "metadata": {"labels": self.labels(w), "annotations": workload_annotations(w)},
            "spec": pod_spec(w, restart),
        }

    def job_spec(self, w: Workload, backoff_limit: int) -> dict[str, Any]:
        spec: dict[str, Any] = {
            "parallelism": w.members,
            "completions": w.members,
            "completionMode": "Indexed",
            "backoffLimit": backoff_limit,
            "podReplacementPolicy": w.controller.pod_replacement_policy,
        }
        if w.queue:
            spec["suspend"] = True  # Kueue admits it by unsuspending
        spec["template"] = self.pod_template(w, "Never")
        return spec

    def job(self, w: Workload) -> Manifest:
        return {
            "apiVersion": JOB_API,
            "kind": "Job",
            "metadata": self.object_meta(w),
            "spec": self.job_spec(
                w,
                JOB_BACKOFF_LIMIT
                if w.controller.backoff_limit is None
                else w.controller.backoff_limit,
            ),
        }

    def jobset(self, w: Workload) -> Manifest:
        """One replicated Job of all members. ``restart: group`` is JobSet's own restart
        (any member failing fails the Job, and the JobSet recreates every Job);
        ``member`` leaves replacing a member to the Job controller."""
        group = w.controller.restart == "group"
        job = {
            "name": "workers",
            "replicas": 1,
            "template": {
                "metadata": {"labels": self.labels(w)},
                "spec": self.job_spec(w, 0 if group else JOB_BACKOFF_LIMIT),
            },
        }
        spec: dict[str, Any] = {"replicatedJobs": [job]}
        if group:
            spec["failurePolicy"] = {
                "maxRestarts": JOBSET_MAX_RESTARTS,
                "restartStrategy": "Recreate",
            }
        if w.queue:
            spec["suspend"] = True
        return {
            "apiVersion": JOBSET_API,
            "kind": "JobSet",
            "metadata": self.object_meta(w),
            "spec": spec,
        }

    def deployment(self, w: Workload) -> Manifest:
        return {
            "apiVersion": "apps/v1",
            "kind": "Deployment",
            "metadata": self.object_meta(w),
            "spec": {
                "replicas": w.members,
                "selector": {"matchLabels": {WORKLOAD_LABEL: w.name}},
                "template": self.pod_template(w, "Always"),
            },
        }

    def bare_pods(self, w: Workload) -> Iterator[Manifest]:
        """No controller: the members are plain Pods, in the workload's place; those of
        the initial state bound to their node when the cluster is written."""
        running = dict(self.placements(w)) if self.writes_initial_state else {}
        for member in range(w.members):
            yield self.pod(w, member, running.get(member))

    @property
    def writes_initial_state(self) -> bool:
        return self.options.nodes and self.options.initial_state

    def pod(self, w: Workload, member: int, placed: InitialPod | None) -> Manifest:
        template = self.pod_template(w, "Never")
        meta = self.meta(pod_name(w, member), **template["metadata"])
        spec = dict(template["spec"])
        manifest: Manifest = {"apiVersion": "v1", "kind": "Pod", "metadata": meta}
        manifest["spec"] = spec
        if placed is not None:
            spec["nodeName"] = placed.node
            self.link_to_controller(w, member, meta)
            started = self.options.snapshot_time + timedelta(seconds=placed.started_at)
            manifest["status"] = {"phase": "Running", "startTime": timestamp(started)}
        return manifest

    def link_to_controller(self, w: Workload, member: int, meta: dict[str, Any]) -> None:
        """Label and own a running member as its controller would: a Job's pod by the
        Job (with its completion index), a JobSet's by its child Job and the JobSet
        labels, a Deployment's by a ReplicaSet ``<name>-<pod-template-hash>``."""
        kind = w.controller.kind.value
        labels = meta["labels"] = dict(meta["labels"])
        if kind == "job":
            labels["batch.kubernetes.io/job-completion-index"] = str(member)
            meta["ownerReferences"] = [self.owner(JOB_API, "Job", w.name)]
        elif kind == "jobset":
            labels.update(
                {
                    "jobset.sigs.k8s.io/jobset-name": w.name,
                    "jobset.sigs.k8s.io/replicatedjob-name": "workers",
                    "batch.kubernetes.io/job-completion-index": str(member),
                }
            )
            meta["ownerReferences"] = [self.owner(JOB_API, "Job", f"{w.name}-workers-0")]
        elif kind == "deployment":
            digest = _digest(f"{self.ns}/{w.name}")[:10]
            labels["pod-template-hash"] = digest
            meta["ownerReferences"] = [self.owner("apps/v1", "ReplicaSet", f"{w.name}-{digest}")]

    def owner(self, api: str, kind: str, name: str) -> dict[str, Any]:
        """An owner reference. The uid is derived from the name: a KWOK restore re-links
        owners by name; a real cluster's garbage collector would remove the pod, hence
        ``--policy-only`` for real clusters."""
        return {
            "apiVersion": api,
            "kind": kind,
            "name": name,
            "controller": True,
            "uid": str(uuid.uuid5(uuid.NAMESPACE_URL, f"{self.ns}/{kind}/{name}")),
        }

    def placements(self, w: Workload) -> list[tuple[int, InitialPod]]:
        """The workload's initial pods with their member index (given, else the next free)."""
        pods = [p for p in self.spec.initial_state if p.workload == w.name]
        taken = {p.member for p in pods if p.member is not None}
        free = (m for m in range(w.members) if m not in taken)
        return [(p.member if p.member is not None else next(free), p) for p in pods]

    # ------------------------------------------------------------ gangs and budgets
    def pod_group(self, w: Workload) -> Manifest:
        assert w.pod_group is not None
        group = w.pod_group
        policy: dict[str, Any] = (
            {"gang": {"minCount": group.min_count}} if group.scheduling == "gang" else {"basic": {}}
        )
        spec: dict[str, Any] = {
            "schedulingPolicy": policy,
            "disruptionMode": {group.disruption_mode.lower(): {}},
        }
        if group.priority_class_name:
            spec["priorityClassName"] = group.priority_class_name
        if group.topology is not None and group.topology.required:
            spec["schedulingConstraints"] = {"topology": [{"key": group.topology.required}]}
        return {
            "apiVersion": POD_GROUP_API,
            "kind": "PodGroup",
            "metadata": self.meta(w.name, labels={WORKLOAD_LABEL: w.name}),
            "spec": spec,
        }

    def pdb(self, w: Workload) -> Manifest:
        assert w.pdb is not None
        budget = (
            {"minAvailable": w.pdb.min_available}
            if w.pdb.min_available is not None
            else {"maxUnavailable": w.pdb.max_unavailable}
        )
        return {
            "apiVersion": "policy/v1",
            "kind": "PodDisruptionBudget",
            "metadata": self.meta(w.name),
            "spec": {**budget, "selector": {"matchLabels": {WORKLOAD_LABEL: w.name}}},
        }

    # ------------------------------------------------------------ the cluster
    def nodes(self) -> Iterator[Manifest]:
        heartbeat = timestamp(self.options.snapshot_time)
        for pool in self.spec.cluster.node_pools:
            for index in range(pool.count):
                yield node(f"{pool.name}-{index}", pool, heartbeat, pool=pool.name)
        for named in self.spec.cluster.nodes:
            yield node(named.name, named, heartbeat)

    def initial_pods(self) -> Iterator[Manifest]:
        """The members of controllers already running at t = 0, in initialState order
        (a bare pod's were written in its workload's place)."""
        workloads = {w.name: w for w in self.spec.workloads}
        members = {w.name: {id(p): m for m, p in self.placements(w)} for w in self.spec.workloads}
        for placed in self.spec.initial_state:
            w = workloads[placed.workload]
            if w.controller.kind.value != "none":
                yield self.pod(w, members[w.name][id(placed)], placed)


# ============================================================================ objects
def priority_class(pc: Any) -> Manifest:
    manifest: Manifest = {
        "apiVersion": "scheduling.k8s.io/v1",
        "kind": "PriorityClass",
        "metadata": {"name": pc.name},
        "value": pc.value,
        "globalDefault": pc.global_default,
        "preemptionPolicy": pc.preemption_policy.value,
    }
    if pc.description:
        manifest["description"] = pc.description
    return manifest


def flavor_names(queues: Iterable[AdmissionQueue]) -> list[str]:
    """Every ResourceFlavor the queues name, in first-use order (the short form's one)."""
    names: dict[str, None] = {}
    for queue in queues:
        if not queue.resource_groups:
            names[FLAVOR] = None
        for group in queue.resource_groups:
            names.update((f.name, None) for f in group.flavors)
    return list(names)


K8S_RESOURCES = {"gpus": GPU, "cpu": "cpu", "memory": "memory"}


def _quota_quantity(resource: str, value: float) -> str:
    if resource == "cpu":
        return cpu_quantity(value)
    if resource == "memory":
        return memory_quantity(value)
    return str(int(value))


def resource_groups(queue: AdmissionQueue, cluster_gpus: int) -> list[dict[str, Any]]:
    """spec.resourceGroups in Kubernetes names and quantities; the short form is one
    GPU-only flavor (the whole cluster when the queue has no GPU cap)."""
    if not queue.resource_groups:
        resource: dict[str, Any] = {
            "name": GPU,
            "nominalQuota": str(cluster_gpus if queue.nominal_gpus is None else queue.nominal_gpus),
        }
        if queue.borrowing_limit_gpus is not None:
            resource["borrowingLimit"] = str(queue.borrowing_limit_gpus)
        return [{"coveredResources": [GPU], "flavors": [{"name": FLAVOR, "resources": [resource]}]}]
    groups = []
    for group in queue.resource_groups:
        flavors = []
        for flavor in group.flavors:
            resources = []
            for r in flavor.resources:
                entry: dict[str, Any] = {
                    "name": K8S_RESOURCES[r.name],
                    "nominalQuota": _quota_quantity(r.name, r.nominal_quota),
                }
                for key, value in (
                    ("borrowingLimit", r.borrowing_limit),
                    ("lendingLimit", r.lending_limit),
                ):
                    if value is not None:
                        entry[key] = _quota_quantity(r.name, value)
                resources.append(entry)
            flavors.append({"name": flavor.name, "resources": resources})
        groups.append(
            {
                "coveredResources": [K8S_RESOURCES[r] for r in group.covered_resources],
                "flavors": flavors,
            }
        )
    return groups


def cluster_queue(queue: AdmissionQueue, cluster_gpus: int) -> Manifest:
    """A Kueue ClusterQueue with the queue's quota. What Kueue cannot say (a cap on
    admitted workloads, ordering by queuePriority, no GPU cap at all) is annotated; a queue
    without a GPU cap gets the whole cluster as its nominal quota."""
    preemption: dict[str, Any] = {
        "withinClusterQueue": queue.preemption.within_cluster_queue,
        "reclaimWithinCohort": queue.preemption.reclaim_within_cohort,
    }
    bwc = queue.preemption.borrow_within_cohort
    if bwc is not None:
        preemption["borrowWithinCohort"] = {"policy": bwc.policy}
        if bwc.max_priority_threshold is not None:
            preemption["borrowWithinCohort"]["maxPriorityThreshold"] = bwc.max_priority_threshold
    spec: dict[str, Any] = {
        "namespaceSelector": {},
        "queueingStrategy": queue.queueing_strategy,
        "resourceGroups": resource_groups(queue, cluster_gpus),
        "preemption": preemption,
    }
    fungibility = queue.flavor_fungibility
    if (fungibility.when_can_borrow, fungibility.when_can_preempt) != (
        "MayStopSearch",
        "TryNextFlavor",
    ):
        spec["flavorFungibility"] = {
            "whenCanBorrow": fungibility.when_can_borrow,
            "whenCanPreempt": fungibility.when_can_preempt,
        }
    if queue.fair_sharing.weight != 1:
        spec["fairSharing"] = {"weight": _number(queue.fair_sharing.weight)}
    if queue.cohort:
        spec["cohortName"] = queue.cohort
    annotations: dict[str, str] = {PREFIX + "order-by": queue.order_by}
    if queue.concurrency is not None:
        annotations[PREFIX + "concurrency"] = str(queue.concurrency)
    if queue.nominal_gpus is None and not queue.resource_groups:
        annotations[PREFIX + "nominal-gpus"] = "none"
    return {
        "apiVersion": KUEUE_API,
        "kind": "ClusterQueue",
        "metadata": {"name": queue.name, "annotations": annotations},
        "spec": spec,
    }


def node(name: str, shape: NodeShape, heartbeat: str, pool: str | None = None) -> Manifest:
    """A Node as ``kubectl get node -o yaml`` shows it: allocatable, labels, taints, and
    a Ready condition whose heartbeat is the snapshot time (t = 0)."""
    resources = {
        "cpu": cpu_quantity(shape.cpu),
        "memory": memory_quantity(shape.memory),
        "pods": str(shape.max_pods),
    }
    if shape.gpus:
        resources[GPU] = str(shape.gpus)
    for profile, count in sorted(shape.mig.items()):
        resources[MIG + profile] = str(count)
    annotations = {}
    if pool is not None:
        annotations[POOL_ANNOTATION] = pool
    if shape.spot:
        annotations[SPOT_ANNOTATION] = "true"
    meta: dict[str, Any] = {"name": name}
    labels = dict(shape.labels)
    if shape.gpu_model:
        labels[GPU_PRODUCT] = shape.gpu_model
    if labels:
        meta["labels"] = labels
    if annotations:
        meta["annotations"] = annotations
    manifest: Manifest = {"apiVersion": "v1", "kind": "Node", "metadata": meta}
    if shape.taints:
        manifest["spec"] = {"taints": [_taint(t) for t in shape.taints]}
    manifest["status"] = {
        "capacity": dict(resources),
        "allocatable": resources,
        "conditions": [
            {
                "type": "Ready",
                "status": "True",
                "reason": "KubeletReady",
                "lastHeartbeatTime": heartbeat,
                "lastTransitionTime": heartbeat,
            }
        ],
    }
    return manifest


def _taint(taint: Any) -> dict[str, str]:
    entry = {"key": taint.key}
    if taint.value:
        entry["value"] = taint.value
    entry["effect"] = taint.effect
    return entry


def pod_spec(w: Workload, restart: str) -> dict[str, Any]:
    requests = {"cpu": cpu_quantity(w.cpu), "memory": memory_quantity(w.memory)}
    limits: dict[str, str] = {}
    if w.gpus:
        requests[GPU] = limits[GPU] = str(w.gpus)  # extended resources: limit == request
    for profile, count in sorted(w.mig.items()):
        requests[MIG + profile] = limits[MIG + profile] = str(count)  # the device plugin's
    container: dict[str, Any] = {
        "name": "main",
        "image": PAUSE_IMAGE,
        "resources": {"requests": requests},
    }
    if limits:
        container["resources"]["limits"] = limits
    spec: dict[str, Any] = {"restartPolicy": restart}
    if w.priority_class_name:
        spec["priorityClassName"] = w.priority_class_name
    spec["terminationGracePeriodSeconds"] = math.ceil(w.termination_grace_period_seconds)
    selector = dict(w.node_selector)
    if len(w.gpu_models) == 1:
        selector[GPU_PRODUCT] = w.gpu_models[0]  # more than one: the annotation alone
    if selector:
        spec["nodeSelector"] = selector
    if w.tolerations:
        spec["tolerations"] = [t.model_dump(exclude_defaults=True) for t in w.tolerations]
    if w.pod_group is not None:
        spec["schedulingGroup"] = {"podGroupName": w.name}
    spec["containers"] = [container]
    return spec


def workload_annotations(w: Workload) -> dict[str, str]:
    """Every application-model field, written out even at its default: the reader fills
    a missing one from the per-kind defaults, which need not be the spec's."""
    a = {
        "kind": w.kind.value,
        "arrival": duration(w.arrival),
        "duration-seconds": optional_duration(w.duration_seconds),
        "startup-seconds": duration(w.startup_seconds),
        "stop-seconds": duration(w.stop_seconds),
        "checkpoint-interval": optional_duration(w.checkpoint.interval_seconds),
        "checkpoint-write-seconds": duration(w.checkpoint.write_seconds),
        "checkpoint-on-sigterm": _bool(w.checkpoint.on_sigterm),
        "recovery-model": w.recovery.model.value,
        "urgent": _bool(w.urgent),
        "queue-priority": str(w.queue_priority),
    }
    if w.recovery.min_members is not None:
        a["recovery-min-members"] = str(w.recovery.min_members)
    if w.gpu_milli is not None:
        a["gpu-milli"] = str(w.gpu_milli)
    if w.gpu_models:
        a["gpu-models"] = "|".join(w.gpu_models)
    if w.controller.kind.value == "jobset":
        a["controller-restart"] = w.controller.restart
    if not float(w.termination_grace_period_seconds).is_integer():
        a["termination-grace-period-seconds"] = duration(w.termination_grace_period_seconds)
    if w.pod_group is not None and w.pod_group.topology is not None:
        a["topology"] = topology_annotation(w.pod_group.topology)
    return {PREFIX + key: value for key, value in a.items()}


def topology_annotation(topology: Any) -> str:
    """``LEVEL,LEVEL[;required=L|preferred=L];algorithm=A`` (docs/kubernetes.md)."""
    parts = [",".join(topology.levels)]
    if topology.required:
        parts.append(f"required={topology.required}")
    elif topology.preferred:
        parts.append(f"preferred={topology.preferred}")
    parts.append(f"algorithm={topology.algorithm}")
    return ";".join(parts)


def pod_name(w: Workload, member: int) -> str:
    return w.name if w.members == 1 else f"{w.name}-{member}"


# ============================================================================ values
def duration(seconds: float) -> str:
    """The spec's duration syntax, in the largest whole unit: ``2h``, ``30m``, ``90s``;
    a fraction keeps its digits (``1.5s``); a negative value is plain seconds."""
    if seconds < 0:
        return _number(seconds)
    for unit, size in (("h", 3600), ("m", 60)):
        if seconds >= size and float(seconds / size).is_integer():
            return f"{int(seconds // size)}{unit}"
    return f"{_number(seconds)}s"


def optional_duration(seconds: float | None) -> str:
    return "none" if seconds is None else duration(seconds)


def _number(value: float) -> str:
    return str(int(value)) if float(value).is_integer() else repr(float(value))


def _bool(value: bool) -> str:
    return "true" if value else "false"


def cpu_quantity(cores: float) -> str:
    """Cores as a quantity: ``96``, ``500m``; finer than a millicore keeps its digits."""
    if float(cores).is_integer():
        return str(int(cores))
    millis = cores * 1000
    return f"{round(millis)}m" if abs(millis - round(millis)) < 1e-9 else repr(float(cores))


def memory_quantity(gib: float) -> str:
    """GiB as the largest binary unit that keeps it whole: ``1024Gi``, ``512Mi``."""
    for unit, scale in (("Gi", 1), ("Mi", 1024), ("Ki", 1024**2)):
        value = gib * scale
        if abs(value - round(value)) < 1e-9:
            return f"{round(value)}{unit}"
    return str(round(gib * 2**30))


def timestamp(moment: datetime) -> str:
    """RFC 3339 in UTC; fractions of a second only when there are some."""
    text = moment.astimezone(UTC).strftime("%Y-%m-%dT%H:%M:%S")
    if moment.microsecond:
        text += f".{moment.microsecond:06d}".rstrip("0")
    return text + "Z"


def _digest(text: str) -> str:
    """A stable, pod-template-hash-like lowercase string."""
    return hashlib.sha256(text.encode()).hexdigest()
