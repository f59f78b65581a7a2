"""Kueue objects (``kueue.x-k8s.io`` v1beta2, v1beta1 also accepted) as admission queues.

A ClusterQueue becomes a queue with its GPU quota (summed over flavors), cohort and
preemption settings; a LocalQueue tells which ClusterQueue a workload labelled
``kueue.x-k8s.io/queue-name`` waits in; a WorkloadPriorityClass gives the workload's
order in its queue (Kueue orders by that value, else by the PriorityClass, then by
creation). What the spec does not model (several flavors, other resources, fair sharing,
``borrowWithinCohort``) is named in the notes.
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

from scheduler_core.spec import AdmissionQueue
from scheduler_core.traces.options import Draft
from scheduler_core.traces.quantity import QuantityError, parse_count

if TYPE_CHECKING:
    from scheduler_core.k8s.reader import ManifestReader, Unit

GPU = "nvidia.com/gpu"
QUEUE_LABEL = "kueue.x-k8s.io/queue-name"
PRIORITY_LABEL = "kueue.x-k8s.io/priority-class"
KUEUE_GROUP = "kueue.x-k8s.io"


class KueueReader:
    def __init__(self, reader: ManifestReader) -> None:
        self.reader = reader
        self.queues: list[dict[str, Any]] = []
        self.local: dict[tuple[str, str], str] = {}
        self.priorities: dict[str, int] = {}
        self.quotas: list[dict[str, Any]] = []
        self.queued: set[str] = set()

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
            notes.add("Kueue ResourceFlavors: quota is summed over flavors (one flavor "
                      "modelled)", item.label)
        for item in self._items("Cohort"):
            if "cohort" in AdmissionQueue.model_fields and self._cohort_fields():
                continue
            notes.add("Kueue Cohort objects: only the cohort name is modelled (no parent "
                      "cohorts, no cohort quota, no fair-sharing weight)", item.label)

    def _cohort_fields(self) -> bool:
        return False

    def _cluster_queue(self, item: Any) -> None:
        spec = item.spec
        nominal, limit, other = 0, None, set()
        flavors = 0
        for group in spec.get("resourceGroups") or []:
            for flavor in group.get("flavors") or []:
                flavors += 1
                for resource in flavor.get("resources") or []:
                    if resource.get("name") != GPU:
                        other.add(str(resource.get("name")))
                        continue
                    try:
                        nominal += parse_count(resource.get("nominalQuota", 0))
                        if resource.get("borrowingLimit") is not None:
                            limit = (limit or 0) + parse_count(resource["borrowingLimit"])
                    except QuantityError as exc:
                        self.reader.error(item, f"spec.resourceGroups: {GPU}: {exc}")
                        return
        notes = self.reader.notes
        if other:
            notes.add(f"Kueue quota on {', '.join(sorted(other))} is not modelled (GPUs only)",
                      item.label)
        if flavors > 1:
            notes.add("Kueue ClusterQueues with several flavors: GPU quota summed", item.label)
        preemption = spec.get("preemption") or {}
        queue: dict[str, Any] = {"name": item.name, "nominalGpus": nominal,
                                 "orderBy": "queuePriority"}
        cohort = spec.get("cohortName") or spec.get("cohort")
        if cohort:
            queue["cohort"] = str(cohort)
        if limit is not None:
            queue["borrowingLimitGpus"] = limit
        chosen = {k: preemption[k] for k in ("withinClusterQueue", "reclaimWithinCohort")
                  if preemption.get(k)}
        if chosen:
            queue["preemption"] = chosen
        if preemption.get("borrowWithinCohort"):
            notes.add("Kueue borrowWithinCohort is not modelled", item.label)
        if spec.get("fairSharing"):
            notes.add("Kueue fair sharing is not modelled", item.label)
        if spec.get("queueingStrategy") == "BestEffortFIFO":
            notes.add("Kueue BestEffortFIFO is modelled as StrictFIFO (the head blocks)",
                      item.label)
        if spec.get("namespaceSelector") not in (None, {}):
            notes.add("Kueue namespaceSelector is not modelled", item.label)
        self.reader.draft.provenance.record(f"queues[{len(self.queues)}]", item.origin)
        self.queues.append(queue)

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

    def workload_fields(self, unit: Unit, fields: dict[str, Any], own: dict[str, Any],
                        template_meta: dict[str, Any]) -> None:
        labels = {**(template_meta.get("labels") or {}), **(own.get("labels") or {})}
        name = labels.get(QUEUE_LABEL)
        if not name:
            return
        queue = self.local.get((unit.namespace, str(name)))
        label = unit.source.label
        if queue is None:
            self.reader.notes.add("not queued: no Kueue LocalQueue of that name in the input "
                                  "(Kueue would keep them suspended)", label)
            return
        if any(p.node for p in unit.pods):
            self.reader.notes.add("already admitted (pods running): run outside the Kueue "
                                  "queue; their quota use is not counted", label)
            return
        fields["queue"] = queue
        self.queued.add(queue)
        wpc = labels.get(PRIORITY_LABEL)
        if wpc and wpc not in self.priorities:
            self.reader.error(unit.source, f"metadata.labels.{PRIORITY_LABEL}: no "
                                           f"WorkloadPriorityClass '{wpc}' in the input")
            return
        if wpc:
            fields["queuePriority"] = self.priorities[str(wpc)]
        else:
            name_ = fields.get("priorityClassName")
            fields["queuePriority"] = self.reader.classes.get(name_, self.reader.default_priority) \
                if name_ else self.reader.default_priority

    def emit(self, draft: Draft) -> None:
        if self.queues:
            draft.extra["queues"] = self.queues
        if self.quotas:
            draft.extra["resourceQuotas"] = self.quotas
