"""Kueue objects (``kueue.x-k8s.io`` v1beta2, v1beta1 also accepted) as admission queues.

A ClusterQueue becomes a queue: its ``resourceGroups`` (GPUs, CPU and memory, each flavor
in order, with nominal quota, borrowing and lending limits), ``flavorFungibility``,
cohort, ``queueingStrategy``, preemption settings (``borrowWithinCohort`` included) and
``fairSharing.weight``; a single GPU-only flavor named like the exporter's becomes the
short form ``nominalGpus``. A LocalQueue tells which ClusterQueue a workload labelled
``kueue.x-k8s.io/queue-name`` waits in; a WorkloadPriorityClass gives the workload's order
in its queue (Kueue orders by that value, else by the PriorityClass, then by creation).
Kueue's own Configuration (the ``kueue-manager-config`` ConfigMap, or the object itself)
gives ``fairSharing``. What the spec does not model (other resources, nested cohorts,
namespaceSelector) is named in the notes.
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

import yaml

from scheduler_core.spec import AdmissionQueue
from scheduler_core.traces.options import Draft
from scheduler_core.traces.quantity import GIB, QuantityError, parse_count, parse_quantity

if TYPE_CHECKING:
    from scheduler_core.k8s.reader import ManifestReader, Unit

GPU = "nvidia.com/gpu"
QUEUE_LABEL = "kueue.x-k8s.io/queue-name"
PRIORITY_LABEL = "kueue.x-k8s.io/priority-class"
KUEUE_GROUP = "kueue.x-k8s.io"
CONFIG_GROUP = "config.kueue.x-k8s.io"
CONFIG_MAP = "kueue-manager-config"
CONFIG_KEY = "controller_manager_config.yaml"
SHORT_FORM_FLAVOR = "default-flavor"
"""The flavor the exporter writes for ``nominalGpus``: read back as that short form."""
RESOURCES = {GPU: "gpus", "cpu": "cpu", "memory": "memory"}


class KueueReader:
    def __init__(self, reader: ManifestReader) -> None:
        self.reader = reader
        self.queues: list[dict[str, Any]] = []
        self.local: dict[tuple[str, str], str] = {}
        self.priorities: dict[str, int] = {}
        self.quotas: list[dict[str, Any]] = []
        self.queued: set[str] = set()
        self.fair_sharing: dict[str, Any] | None = None

    def _items(self, kind: str) -> list[Any]:
        items = self.reader.of(kind)
        return [i for i in items if i.api_group == KUEUE_GROUP]

    def read_classes_and_queues(self) -> None:
        notes = self.reader.notes
        for item in self._items("WorkloadPriorityClass"):
            value = item.data.get("value")
            if not isinstance(value, int) or isinstance(value, bool):
                self.reader.error(item, f"value: '{value}' is not an integer")
                continue
            self.priorities[item.name] = value
        for item in self._items("ClusterQueue"):
            self._cluster_queue(item)
        for item in self._items("LocalQueue"):
            target = item.spec.get("clusterQueue")
            if not target:
                self.reader.error(item, "spec.clusterQueue is missing")
                continue
            self.local[(item.namespace, item.name)] = str(target)
        for item in self._items("ResourceFlavor"):
            if (
                item.spec.get("nodeLabels")
                or item.spec.get("nodeTaints")
                or item.spec.get("topologyName")
            ):
                notes.add(
                    "Kueue ResourceFlavors: node labels, taints and topology are not "
                    "applied to the pods (a flavor is a quota bucket)",
                    item.label,
                )
        self._configuration()
        for item in self._items("Cohort"):
            if "cohort" in AdmissionQueue.model_fields and self._cohort_fields():
                continue
            notes.add(
                "Kueue Cohort objects: only the cohort name is modelled (no parent "
                "cohorts, no cohort quota, no fair-sharing weight)",
                item.label,
            )

    def _cohort_fields(self) -> bool:
        return False

    def _configuration(self) -> None:
        """fairSharing from Kueue's Configuration: the manager's ConfigMap, or the object."""
        configs = [
            (i, i.data) for i in self.reader.of("Configuration") if i.api_group == CONFIG_GROUP
        ]
        for item in self.reader.of("ConfigMap"):
            text = (item.data.get("data") or {}).get(CONFIG_KEY)
            if item.name != CONFIG_MAP or not isinstance(text, str):
                continue
            try:
                loaded = yaml.safe_load(text)
            except yaml.YAMLError as exc:
                self.reader.error(item, f"data.{CONFIG_KEY}: not YAML ({exc})")
                continue
            if isinstance(loaded, dict):
                configs.append((item, loaded))
        for item, config in configs:
            fair = config.get("fairSharing")
            if not isinstance(fair, dict) or not fair.get("enable"):
                continue
            chosen: dict[str, Any] = {}
            if fair.get("preemptionStrategies"):
                chosen["preemptionStrategies"] = fair["preemptionStrategies"]
            self.fair_sharing = chosen
            self.reader.draft.provenance.record("fairSharing", item.origin)

    def _cluster_queue(self, item: Any) -> None:
        spec = item.spec
        groups = self._resource_groups(item)
        if groups is None:
            return
        notes = self.reader.notes
        preemption = spec.get("preemption") or {}
        queue: dict[str, Any] = {"name": item.name, "orderBy": "queuePriority"}
        queue.update(_quota_fields(groups))
        cohort = spec.get("cohortName") or spec.get("cohort")
        if cohort:
            queue["cohort"] = str(cohort)
        chosen = {
            k: preemption[k]
            for k in ("withinClusterQueue", "reclaimWithinCohort", "borrowWithinCohort")
            if preemption.get(k)
        }
        if chosen:
            queue["preemption"] = chosen
        if spec.get("queueingStrategy"):
            queue["queueingStrategy"] = spec["queueingStrategy"]
        fungibility = spec.get("flavorFungibility") or {}
        picked = {
            k: fungibility[k] for k in ("whenCanBorrow", "whenCanPreempt") if fungibility.get(k)
        }
        if picked:
            queue["flavorFungibility"] = picked
        if fungibility.get("preference"):
            notes.add(
                "Kueue flavorFungibility.preference is not modelled (BorrowingOverPreemption)",
                item.label,
            )
        weight = (spec.get("fairSharing") or {}).get("weight")
        if weight is not None:
            try:
                queue["fairSharing"] = {"weight": parse_quantity(weight)}
            except QuantityError as exc:
                self.reader.error(item, f"spec.fairSharing.weight: {exc}")
                return
        if spec.get("namespaceSelector") not in (None, {}):
            notes.add("Kueue namespaceSelector is not modelled", item.label)
        self.reader.draft.provenance.record(f"queues[{len(self.queues)}]", item.origin)
        self.queues.append(queue)

    def _resource_groups(self, item: Any) -> list[dict[str, Any]] | None:
        """spec.resourceGroups in the spec's terms (gpus, cores, GiB); resources other than
        GPUs, CPU and memory are left out with a note. None after an error."""
        groups: list[dict[str, Any]] = []
        other: set[str] = set()
        for gi, group in enumerate(item.spec.get("resourceGroups") or []):
            covered = [
                RESOURCES[str(r)]
                for r in group.get("coveredResources") or []
                if str(r) in RESOURCES
            ]
            other |= {
                str(r) for r in group.get("coveredResources") or [] if str(r) not in RESOURCES
            }
            flavors = []
            for fi, flavor in enumerate(group.get("flavors") or []):
                resources = []
                for ri, resource in enumerate(flavor.get("resources") or []):
                    name = RESOURCES.get(str(resource.get("name")))
                    if name is None:
                        continue
                    where = f"spec.resourceGroups[{gi}].flavors[{fi}].resources[{ri}]"
                    try:
                        resources.append(_resource_quota(name, resource))
                    except QuantityError as exc:
                        self.reader.error(item, f"{where}: {exc}")
                        return None
                flavors.append({"name": str(flavor.get("name")), "resources": resources})
            if covered:
                groups.append({"coveredResources": covered, "flavors": flavors})
        if other:
            self.reader.notes.add(
                f"Kueue quota on {', '.join(sorted(other))} is not modelled "
                "(GPUs, CPU and memory are)",
                item.label,
            )
        return groups

    def queue_of(self, unit: Unit) -> str | None:
        """The ClusterQueue the workload waits in, from its queue-name label."""
        labels: dict[str, Any] = {}
        if unit.item is not None:
            labels.update(unit.item.meta.get("labels") or {})
        for pod in unit.pods[:1]:
            labels = {**pod.labels, **labels}
        name = labels.get(QUEUE_LABEL)
        if not name:
            return None
        return self.local.get((unit.namespace, str(name)))

    def workload_fields(
        self, unit: Unit, fields: dict[str, Any], own: dict[str, Any], template_meta: dict[str, Any]
    ) -> None:
        labels = {**(template_meta.get("labels") or {}), **(own.get("labels") or {})}
        name = labels.get(QUEUE_LABEL)
        if not name:
            return
        queue = self.local.get((unit.namespace, str(name)))
        label = unit.source.label
        if queue is None:
            self.reader.notes.add(
                "not queued: no Kueue LocalQueue of that name in the input "
                "(Kueue would keep them suspended)",
                label,
            )
            return
        if any(p.node for p in unit.pods):
            self.reader.notes.add(
                "already admitted (pods running): run outside the Kueue "
                "queue; their quota use is not counted",
                label,
            )
            return
        fields["queue"] = queue
        self.queued.add(queue)
        wpc = labels.get(PRIORITY_LABEL)
        if wpc and wpc not in self.priorities:
            self.reader.error(
                unit.source,
                f"metadata.labels.{PRIORITY_LABEL}: no WorkloadPriorityClass '{wpc}' in the input",
            )
            return
        if wpc:
            fields["queuePriority"] = self.priorities[str(wpc)]
        else:
            name_ = fields.get("priorityClassName")
            fields["queuePriority"] = (
                self.reader.classes.get(name_, self.reader.default_priority)
                if name_
                else self.reader.default_priority
            )

    def emit(self, draft: Draft) -> None:
        if self.queues:
            draft.extra["queues"] = self.queues
        if self.fair_sharing is not None:
            draft.extra["fairSharing"] = self.fair_sharing
        if self.quotas:
            draft.extra["resourceQuotas"] = self.quotas


def _resource_quota(name: str, resource: dict[str, Any]) -> dict[str, Any]:
    """One resource's quota in the spec's units: whole GPUs, cores, GiB."""

    def amount(value: Any) -> float | int:
        if name == "gpus":
            return parse_count(value)
        number = parse_quantity(value)
        if number < 0:
            raise QuantityError(f"'{value}' is negative")
        return number / GIB if name == "memory" else number

    quota: dict[str, Any] = {"name": name, "nominalQuota": amount(resource.get("nominalQuota", 0))}
    for key in ("borrowingLimit", "lendingLimit"):
        if resource.get(key) is not None:
            quota[key] = amount(resource[key])
    return quota


def _quota_fields(groups: list[dict[str, Any]]) -> dict[str, Any]:
    """The exporter's short form (one GPU-only flavor ``default-flavor`` without a lending
    limit) as nominalGpus; anything else as resourceGroups."""
    if not groups:
        return {"nominalGpus": 0}
    if (
        len(groups) == 1
        and groups[0]["coveredResources"] == ["gpus"]
        and len(groups[0]["flavors"]) == 1
        and groups[0]["flavors"][0]["name"] == SHORT_FORM_FLAVOR
        and len(groups[0]["flavors"][0]["resources"]) == 1
        and "lendingLimit" not in groups[0]["flavors"][0]["resources"][0]
    ):
        gpus = groups[0]["flavors"][0]["resources"][0]
        fields: dict[str, Any] = {"nominalGpus": gpus["nominalQuota"]}
        if "borrowingLimit" in gpus:
            fields["borrowingLimitGpus"] = gpus["borrowingLimit"]
        return fields
    return {"resourceGroups": groups}
