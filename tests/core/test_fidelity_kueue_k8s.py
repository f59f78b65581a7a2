"""The Kueue fields of a queue through the Kubernetes reader and exporter
(docs/kubernetes-rules.md "Quota per flavor and resource", "Flavor fungibility", "Fair
sharing"): ResourceFlavors, ClusterQueue resourceGroups with several resources and
flavors, flavorFungibility, queueingStrategy, borrowWithinCohort, fairSharing weights and
Kueue's own fairSharing configuration. Export then import gives the spec back."""

from __future__ import annotations

from typing import Any

import pytest
import yaml

import scheduler_core as sc
from scheduler_core.k8s import read_manifest_texts
from scheduler_core.k8s.export import export_manifests, export_spec
from scheduler_core.k8s.roundtrip import normalised
from scheduler_core.traces import TraceError

KUEUE = """
apiVersion: kueue.x-k8s.io/v1beta2
kind: ResourceFlavor
metadata: {name: on-demand}
---
apiVersion: kueue.x-k8s.io/v1beta2
kind: ResourceFlavor
metadata: {name: spot}
spec: {nodeLabels: {instance-type: spot}}
---
apiVersion: kueue.x-k8s.io/v1beta2
kind: ClusterQueue
metadata: {name: team-a}
spec:
  cohortName: research
  queueingStrategy: BestEffortFIFO
  namespaceSelector: {}
  flavorFungibility: {whenCanBorrow: TryNextFlavor, whenCanPreempt: Preempt}
  fairSharing: {weight: "2"}
  preemption:
    withinClusterQueue: LowerPriority
    reclaimWithinCohort: Any
    borrowWithinCohort: {policy: LowerPriority, maxPriorityThreshold: 100}
  resourceGroups:
  - coveredResources: [cpu, memory, nvidia.com/gpu]
    flavors:
    - name: on-demand
      resources:
      - {name: cpu, nominalQuota: "1500m"}
      - {name: memory, nominalQuota: 64Gi, lendingLimit: 32Gi}
      - {name: nvidia.com/gpu, nominalQuota: 8, borrowingLimit: 4}
    - name: spot
      resources:
      - {name: cpu, nominalQuota: 16}
      - {name: memory, nominalQuota: 128Gi}
      - {name: nvidia.com/gpu, nominalQuota: 16}
  - coveredResources: [example.com/fpga]
    flavors:
    - name: on-demand
      resources: [{name: example.com/fpga, nominalQuota: 2}]
---
apiVersion: kueue.x-k8s.io/v1beta2
kind: LocalQueue
metadata: {name: team-a, namespace: ml}
spec: {clusterQueue: team-a}
---
apiVersion: v1
kind: ConfigMap
metadata: {name: kueue-manager-config, namespace: kueue-system}
data:
  controller_manager_config.yaml: |
    apiVersion: config.kueue.x-k8s.io/v1beta1
    kind: Configuration
    fairSharing:
      enable: true
      preemptionStrategies: [LessThanInitialShare]
---
apiVersion: v1
kind: Node
metadata: {name: n1}
status: {allocatable: {cpu: "64", memory: 512Gi, nvidia.com/gpu: "8"}}
"""


def imported(text: str = KUEUE) -> Any:
    return read_manifest_texts([(text, "kueue.yaml")])


def test_the_reader_takes_every_kueue_field_of_a_cluster_queue() -> None:
    result = imported()
    (queue,) = result.mapping["queues"]
    assert queue["resourceGroups"] == [
        {
            "coveredResources": ["cpu", "memory", "gpus"],
            "flavors": [
                {
                    "name": "on-demand",
                    "resources": [
                        {"name": "cpu", "nominalQuota": 1.5},
                        {"name": "memory", "nominalQuota": 64.0, "lendingLimit": 32.0},
                        {"name": "gpus", "nominalQuota": 8, "borrowingLimit": 4},
                    ],
                },
                {
                    "name": "spot",
                    "resources": [
                        {"name": "cpu", "nominalQuota": 16.0},
                        {"name": "memory", "nominalQuota": 128.0},
                        {"name": "gpus", "nominalQuota": 16},
                    ],
                },
            ],
        }
    ]
    assert queue["queueingStrategy"] == "BestEffortFIFO"
    assert queue["flavorFungibility"] == {
        "whenCanBorrow": "TryNextFlavor",
        "whenCanPreempt": "Preempt",
    }
    assert queue["fairSharing"] == {"weight": 2.0}
    assert queue["preemption"]["borrowWithinCohort"] == {
        "policy": "LowerPriority",
        "maxPriorityThreshold": 100,
    }
    assert result.mapping["fairSharing"] == {"preemptionStrategies": ["LessThanInitialShare"]}
    spec = result.spec
    assert spec.queues[0].flavor_fungibility.when_can_preempt == "MayStopSearch"
    assert spec.fair_sharing is not None
    notes = " ".join(result.notes)
    assert "example.com/fpga is not modelled" in notes
    assert "node labels, taints and topology are not applied" in notes


def test_a_bad_quota_quantity_is_an_error_naming_the_field() -> None:
    text = KUEUE.replace('nominalQuota: "1500m"', 'nominalQuota: "lots"')
    with pytest.raises(TraceError) as caught:
        imported(text)
    messages = [e["message"] if isinstance(e, dict) else str(e) for e in caught.value.errors]
    assert any(
        "spec.resourceGroups[0].flavors[0].resources[0]" in m and "'lots'" in m for m in messages
    ), messages


def test_a_fractional_gpu_quota_is_an_error() -> None:
    text = KUEUE.replace(
        "{name: nvidia.com/gpu, nominalQuota: 8,", "{name: nvidia.com/gpu, nominalQuota: 7.5,"
    )
    with pytest.raises(TraceError) as caught:
        imported(text)
    assert "not a whole number" in str(caught.value.errors)


FULL = """
cluster: {nodePools: [{name: gpu, count: 4, gpus: 8}]}
priorityClasses: [{name: low, value: 10}]
fairSharing: {preemptionStrategies: [LessThanOrEqualToFinalShare]}
queues:
  - name: team-a
    cohort: research
    orderBy: priority
    queueingStrategy: BestEffortFIFO
    flavorFungibility: {whenCanBorrow: TryNextFlavor, whenCanPreempt: MayStopSearch}
    fairSharing: {weight: 0.5}
    preemption:
      withinClusterQueue: LowerPriority
      reclaimWithinCohort: Any
      borrowWithinCohort: {policy: LowerPriority, maxPriorityThreshold: 5}
    resourceGroups:
      - coveredResources: [gpus, cpu]
        flavors:
          - name: on-demand
            resources:
              - {name: gpus, nominalQuota: 8, borrowingLimit: 4}
              - {name: cpu, nominalQuota: 32.5, lendingLimit: 8}
          - name: spot
            resources: [{name: gpus, nominalQuota: 16}, {name: cpu, nominalQuota: 64}]
      - coveredResources: [memory]
        flavors: [{name: on-demand, resources: [{name: memory, nominalQuota: 256}]}]
  - {name: team-b, cohort: research, nominalGpus: 8}
workloads:
  - {name: a, gpus: 2, queue: team-a}
  - {name: b, gpus: 2, queue: team-b}
"""


def test_every_kueue_field_survives_export_and_import() -> None:
    spec = sc.parse_spec(FULL)
    text = export_manifests(spec)
    back = imported(text).spec
    assert normalised(back) == normalised(spec)


def test_the_export_writes_the_flavors_fungibility_weight_and_configuration() -> None:
    objects = [d for d in yaml.safe_load_all(export_manifests(sc.parse_spec(FULL))) if d]
    flavors = [o["metadata"]["name"] for o in objects if o["kind"] == "ResourceFlavor"]
    assert flavors == ["on-demand", "spot", "default-flavor"]
    team = next(
        o for o in objects if o["kind"] == "ClusterQueue" and o["metadata"]["name"] == "team-a"
    )["spec"]
    assert team["queueingStrategy"] == "BestEffortFIFO"
    assert team["flavorFungibility"] == {
        "whenCanBorrow": "TryNextFlavor",
        "whenCanPreempt": "MayStopSearch",
    }
    assert team["fairSharing"] == {"weight": "0.5"}
    assert team["resourceGroups"][0]["flavors"][0]["resources"][1] == {
        "name": "cpu",
        "nominalQuota": "32500m",
        "lendingLimit": "8",
    }
    config = next(
        o
        for o in objects
        if o["kind"] == "ConfigMap" and o["metadata"]["name"] == "kueue-manager-config"
    )
    loaded = yaml.safe_load(config["data"]["controller_manager_config.yaml"])
    assert loaded["fairSharing"] == {
        "enable": True,
        "preemptionStrategies": ["LessThanOrEqualToFinalShare"],
    }


def test_the_fair_sharing_preset_round_trips_with_its_variant_applied() -> None:
    exported = export_spec(sc.get_preset("s15-fair-sharing").spec(), "fair-sharing")
    back = imported(export_manifests(exported)).spec
    assert back.fair_sharing is not None
    assert normalised(back) == normalised(exported)
