"""Each Kubernetes kind and field issue 11 names is read, or named in the import notes
with its reason: JobSet, the Workload API, PodDisruptionBudget selectors, percentages and
status, ResourceQuota scoped to a PriorityClass, terminating and nominated pods,
placement (tolerations, nodeSelector, required node affinity), and the Job fields that
decide what happens to an evicted pod.

Rules cited: the design's kubernetes-preemption.md (§1 priority admission, §4.3 PDB
selection, §5 Workload API, §7.6 podReplacementPolicy) and docs/kubernetes-rules.md
(terminating and nominated pods, PDB status disruptedPods).
"""

from __future__ import annotations

from typing import Any

import pytest

import scheduler_core as sc
from scheduler_core.k8s import read_manifest_texts
from scheduler_core.traces import ImportOptions, ImportResult, TraceError

NODES = """\
apiVersion: v1
kind: Node
metadata: {name: gpu-0, labels: {zone: a, pool: h100}}
spec:
  taints: [{key: nvidia.com/gpu, value: present, effect: NoSchedule}]
status: {allocatable: {cpu: "96", memory: 1024Gi, nvidia.com/gpu: "8", pods: "110"}}
---
apiVersion: v1
kind: Node
metadata: {name: gpu-1, labels: {zone: b, pool: h100}}
status: {allocatable: {cpu: "96", memory: 1024Gi, nvidia.com/gpu: "8", pods: "110"}}
---
apiVersion: scheduling.k8s.io/v1
kind: PriorityClass
metadata: {name: high}
value: 1000
---
apiVersion: scheduling.k8s.io/v1
kind: PriorityClass
metadata: {name: low}
value: 10
"""


def read(text: str, *, nodes: bool = True, **options: Any) -> ImportResult:
    return read_manifest_texts(
        [((NODES + "---\n" if nodes else "") + text, "m.yaml")], ImportOptions(**options)
    )


def workload(result: ImportResult, name: str) -> dict[str, Any]:
    return next(w for w in result.mapping["workloads"] if w["name"] == name)


def spec_workload(result: ImportResult, name: str) -> Any:
    return next(w for w in result.spec.workloads if w.name == name)


def note_about(result: ImportResult, label: str) -> list[str]:
    return [n for n in result.notes if label in n]


def errors_of(text: str, **options: Any) -> list[str]:
    with pytest.raises(TraceError) as caught:
        read(text, **options)
    return [e["message"] for e in caught.value.errors]


def job(
    name: str,
    *,
    gpus: int = 1,
    parallelism: int = 2,
    extra: str = "",
    template: str = "",
    meta: str = "",
) -> str:
    return f"""\
apiVersion: batch/v1
kind: Job
metadata: {{name: {name}{meta}}}
spec:
  parallelism: {parallelism}
{extra}  template:
    spec:
{template}      containers:
      - name: c
        resources: {{limits: {{nvidia.com/gpu: "{gpus}"}}}}
"""


# ============================================================================ JobSet
JOBSET = """\
apiVersion: jobset.x-k8s.io/v1alpha2
kind: JobSet
metadata: {name: llm-pretrain}
spec:
  failurePolicy: {maxRestarts: 3, restartStrategy: Recreate, rules: [{action: FailJobSet}]}
  replicatedJobs:
  - name: leader
    replicas: 1
    template:
      spec:
        parallelism: 1
        backoffLimit: 0
        template:
          spec:
            priorityClassName: high
            containers: [{name: c, resources: {limits: {nvidia.com/gpu: "1"}}}]
  - name: workers
    replicas: 2
    template:
      spec:
        parallelism: 2
        podReplacementPolicy: Failed
        template:
          spec:
            priorityClassName: high
            containers: [{name: c, resources: {limits: {nvidia.com/gpu: "4"}}}]
"""


def test_a_jobset_is_a_workload_per_replicated_job_of_replicas_times_parallelism():
    result = read(JOBSET)

    leader, workers = (
        spec_workload(result, "llm-pretrain-leader"),
        spec_workload(result, "llm-pretrain-workers"),
    )
    assert (leader.members, leader.gpus, workers.members, workers.gpus) == (1, 1, 4, 4)
    assert workers.controller.kind.value == "jobset"
    assert workers.controller.pod_replacement_policy == "Failed"  # §7.6


def test_jobset_restart_follows_the_job_backoff_limit_and_failure_policy():
    """A Job with retries left replaces its own evicted pod (member); with backoffLimit 0
    the eviction fails the Job and failurePolicy recreates every Job (group)."""
    result = read(JOBSET)

    assert spec_workload(result, "llm-pretrain-leader").controller.restart == "group"
    assert spec_workload(result, "llm-pretrain-workers").controller.restart == "member"
    assert note_about(result, "JobSet failurePolicy.rules are not modelled: JobSet llm-pretrain")
    assert note_about(result, "JobSet failurePolicy.maxRestarts is not counted")


def test_a_jobset_without_failure_policy_and_no_retries_is_noted():
    text = JOBSET.replace(
        "  failurePolicy: {maxRestarts: 3, restartStrategy: Recreate, "
        "rules: [{action: FailJobSet}]}\n",
        "",
    )
    result = read(text)

    assert spec_workload(result, "llm-pretrain-leader").controller.restart == "group"
    assert note_about(result, "JobSets without failurePolicy fail when a member fails")


def test_jobset_pods_join_their_replicated_job_as_its_initial_state():
    pods = "".join(
        f"""\
---
apiVersion: v1
kind: Pod
metadata:
  name: llm-pretrain-workers-0-{i}
  labels: {{jobset.sigs.k8s.io/jobset-name: llm-pretrain,
            jobset.sigs.k8s.io/replicatedjob-name: workers}}
spec:
  nodeName: gpu-1
  priorityClassName: high
  containers: [{{name: c, resources: {{limits: {{nvidia.com/gpu: "4"}}}}}}]
status: {{phase: Running}}
"""
        for i in range(2)
    )
    result = read(JOBSET + pods)

    assert [(e["workload"], e["node"]) for e in result.mapping["initialState"]] == [
        ("llm-pretrain-workers", "gpu-1"),
        ("llm-pretrain-workers", "gpu-1"),
    ]


# ============================================================================ Workload API
WORKLOAD_API = """\
apiVersion: scheduling.k8s.io/v1alpha2
kind: Workload
metadata: {name: trainer, namespace: ml}
spec:
  podGroupTemplates:
  - name: workers
    schedulingPolicy: {gang: {minCount: 3}}
    disruptionMode: PodGroup
    priorityClassName: high
---
apiVersion: scheduling.k8s.io/v1alpha2
kind: PodGroup
metadata: {name: trainer-workers, namespace: ml}
spec:
  podGroupTemplateRef: {workload: {workloadName: trainer, podGroupTemplateName: workers}}
"""


def test_a_podgroup_takes_its_workload_template_gang_and_disruption_mode():
    """§5: PodGroup fields come from its Workload's podGroupTemplate; PodGroup = All."""
    pods = "".join(
        f"""\
---
apiVersion: v1
kind: Pod
metadata: {{name: w-{i}, namespace: ml}}
spec:
  priorityClassName: high
  schedulingGroup: {{podGroupName: trainer-workers}}
  containers: [{{name: c, resources: {{limits: {{nvidia.com/gpu: "2"}}}}}}]
"""
        for i in range(3)
    )
    result = read(WORKLOAD_API + pods)

    [group] = result.spec.workloads
    assert (group.members, group.gpus, group.priority_class_name) == (3, 2, "high")
    assert (group.pod_group.min_count, group.pod_group.disruption_mode) == (3, "All")


def test_a_podgroup_naming_a_missing_workload_template_is_noted():
    text = WORKLOAD_API.split("---\n", 1)[1].replace(
        "  podGroupTemplateRef", "  schedulingPolicy: {gang: {minCount: 2}}\n  podGroupTemplateRef"
    )
    result = read(text)

    assert note_about(
        result,
        "PodGroups naming a Workload template not in the input (their "
        "own fields are used): PodGroup ml/trainer-workers",
    )


def test_a_kueue_workload_is_not_the_scheduling_workload_and_is_listed():
    text = "apiVersion: kueue.x-k8s.io/v1beta2\nkind: Workload\nmetadata: {name: job-x-1a2b}\n"
    result = read(text)

    assert "left out, a kind this model does not read: Workload job-x-1a2b" in result.notes


# ============================================================================ PDBs
def pdb(spec: str, status: str = "") -> str:
    return f"""\
---
apiVersion: policy/v1
kind: PodDisruptionBudget
metadata: {{name: budget}}
spec:
{spec}{status}"""


DEPLOYMENT = """\
apiVersion: apps/v1
kind: Deployment
metadata: {name: serve}
spec:
  replicas: 4
  template:
    metadata: {labels: {app: serve, tier: web}}
    spec:
      priorityClassName: high
      containers: [{name: c, resources: {limits: {nvidia.com/gpu: "1"}}}]
"""


@pytest.mark.parametrize(
    ("field", "expected"),
    [
        ("minAvailable: 50%", {"minAvailable": 2}),  # ceil(50% of 4)
        ("minAvailable: 60%", {"minAvailable": 3}),  # rounded up, as the disruption controller
        ("maxUnavailable: 25%", {"maxUnavailable": 1}),
        ("maxUnavailable: 1", {"maxUnavailable": 1}),
        ('minAvailable: "3"', {"minAvailable": 3}),
    ],
)
def test_pdb_integers_and_percentages_of_the_workload(field: str, expected: dict[str, int]):
    selector = "  selector: {matchLabels: {app: serve}}\n"
    result = read(DEPLOYMENT + pdb(f"  {field}\n" + selector))

    assert workload(result, "serve")["pdb"] == expected


def test_pdb_match_expressions_select_as_the_api_defines():
    """§4.3: a selector is matchLabels AND every matchExpression."""
    selector = (
        "  maxUnavailable: 1\n  selector:\n    matchExpressions:\n"
        "    - {key: app, operator: In, values: [serve, other]}\n"
        "    - {key: tier, operator: Exists}\n"
        "    - {key: canary, operator: DoesNotExist}\n"
    )
    selected = read(DEPLOYMENT + pdb(selector))
    missed = read(DEPLOYMENT + pdb(selector.replace("DoesNotExist", "Exists")))

    assert workload(selected, "serve")["pdb"] == {"maxUnavailable": 1}
    assert "pdb" not in workload(missed, "serve")
    assert note_about(missed, "budgets not applied: each selects no pod")


def test_a_pdb_with_an_unknown_operator_is_an_error_naming_the_field():
    selector = (
        "  maxUnavailable: 1\n  selector:\n    matchExpressions:\n"
        "    - {key: app, operator: Like, values: [serve]}\n"
    )
    assert errors_of(DEPLOYMENT + pdb(selector)) == [
        "PodDisruptionBudget budget: spec.selector.matchExpressions: 'Like' is not In, NotIn, "
        "Exists or DoesNotExist"
    ]


def test_pdb_status_disrupted_pods_are_kept_and_disruptions_allowed_is_recomputed():
    """docs/kubernetes-rules.md "PDB status disruptedPods"."""
    status = (
        "status:\n  disruptionsAllowed: 0\n  disruptedPods:\n"
        '    serve-abc: "2026-11-30T10:00:00Z"\n    serve-def: "2026-11-30T10:00:01Z"\n'
    )
    result = read(
        DEPLOYMENT + pdb("  minAvailable: 2\n  selector: {matchLabels: {app: serve}}\n", status)
    )

    assert workload(result, "serve")["pdb"] == {"minAvailable": 2, "disruptedPods": 2}
    assert note_about(
        result,
        "PDB status.disruptionsAllowed is recomputed by the simulation: PodDisruptionBudget budget",
    )


# ============================================================================ quotas
QUOTA = """\
---
apiVersion: v1
kind: ResourceQuota
metadata: {{name: {name}, namespace: serving}}
spec:
  hard: {{{hard}}}
  scopeSelector:
    matchExpressions:
    - {{scopeName: PriorityClass, operator: In, values: [{klass}]}}
"""


def test_a_gpu_quota_scoped_to_a_priority_class_is_read():
    text = DEPLOYMENT + QUOTA.format(
        name="q", hard='requests.nvidia.com/gpu: "2", pods: "10"', klass="high"
    )
    result = read(text)

    assert result.mapping["resourceQuotas"] == [{"priorityClassName": "high", "gpus": 2}]
    assert note_about(
        result, "quota limits other than GPUs are not modelled (pods): ResourceQuota serving/q"
    )
    assert note_about(result, "ResourceQuota serving/q: applies cluster-wide here")


def test_a_quota_without_a_gpu_limit_or_scope_is_noted_not_applied():
    text = DEPLOYMENT + QUOTA.format(name="cpu-only", hard='requests.cpu: "64"', klass="high")
    result = read(text)

    assert "resourceQuotas" not in result.mapping
    assert note_about(
        result,
        "quotas not modelled (only a GPU quota scoped to one "
        "PriorityClass with In is): ResourceQuota serving/cpu-only",
    )


def test_a_quota_scoped_to_a_missing_class_is_refused_by_name():
    """§1: the API server knows no class of that name."""
    text = QUOTA.format(name="q", hard='requests.nvidia.com/gpu: "2"', klass="gold")
    assert errors_of(text) == [
        "ResourceQuota serving/q: spec.scopeSelector: no PriorityClass with name 'gold' was found"
    ]


# ============================================================================ pod states
def pod(name: str, body: str, meta: str = "") -> str:
    return f"""\
---
apiVersion: v1
kind: Pod
metadata: {{name: {name}{meta}}}
spec:
  priorityClassName: low
  containers: [{{name: c, resources: {{limits: {{nvidia.com/gpu: "4"}}}}}}]
{body}"""


def test_a_terminating_pod_holds_its_node_until_its_deletion_time():
    """docs/kubernetes-rules.md "Terminating pods in a snapshot"."""
    text = pod(
        "old",
        '  nodeName: gpu-1\nstatus: {phase: Running, startTime: "2026-11-30T09:00:00Z"}\n',
        meta=', deletionTimestamp: "2026-11-30T10:00:30Z"',
    )
    result = read(text, snapshot_time="2026-11-30T10:00:00Z")

    [entry] = result.mapping["initialState"]
    assert entry["terminatingUntil"] == 30.0
    assert entry["startedAt"] == -3600.0
    assert result.spec.initial_state[0].terminating_until == 30.0


def test_a_nominated_pending_pod_keeps_its_nomination():
    """docs/kubernetes-rules.md "Nominated pods in a snapshot"."""
    text = pod("waiting", "status: {phase: Pending, nominatedNodeName: gpu-1}\n")
    result = read(text)

    assert result.mapping["initialState"] == [
        {"workload": "waiting", "node": "gpu-1", "member": 0, "nominated": True}
    ]


def test_a_nomination_to_a_node_not_in_the_input_is_noted():
    text = pod("waiting", "status: {phase: Pending, nominatedNodeName: gpu-9}\n")
    result = read(text)

    assert "initialState" not in result.mapping
    assert note_about(
        result, "status.nominatedNodeName not kept (the pod is plainly pending): Pod waiting"
    )


def test_finished_pods_are_listed_not_imported():
    text = pod("done", "  nodeName: gpu-1\nstatus: {phase: Succeeded}\n")
    result = read(text)

    assert note_about(result, "left out, finished pods (Succeeded/Failed): Pod done")


# ============================================================================ placement
PLACED = """\
      nodeSelector: {pool: h100}
      tolerations:
      - {key: nvidia.com/gpu, operator: Exists, effect: NoSchedule}
      - {key: node.kubernetes.io/not-ready, operator: Exists, effect: NoExecute,
         tolerationSeconds: 300}
      affinity:
        nodeAffinity:
          requiredDuringSchedulingIgnoredDuringExecution:
            nodeSelectorTerms:
            - matchExpressions:
              - {key: zone, operator: In, values: [a]}
"""


def test_tolerations_node_selector_and_required_affinity_are_kept():
    result = read(job("placed", template=PLACED))

    fields = workload(result, "placed")
    assert fields["nodeSelector"] == {"pool": "h100", "zone": "a"}
    assert fields["tolerations"] == [
        {"key": "nvidia.com/gpu", "effect": "NoSchedule", "operator": "Exists"}
    ]


def test_a_placed_job_runs_only_on_the_node_its_rules_allow():
    result = read(job("placed", parallelism=1, template=PLACED))

    log = sc.run_experiment(result.spec)[0].replications[0].events
    [bound] = [e for e in log if e.reason == "Scheduled"]
    assert bound.node == "gpu-0"  # zone a, and its taint tolerated


@pytest.mark.parametrize(
    ("affinity", "note"),
    [
        (
            "- matchExpressions:\n              - {key: zone, operator: NotIn, values: [b]}\n",
            "required node affinity 'zone NotIn ['b']' is not modelled",
        ),
        (
            "- matchExpressions:\n              - {key: zone, operator: In, values: [a]}\n"
            "            - matchExpressions:\n"
            "              - {key: zone, operator: In, values: [b]}\n",
            "required node affinity with several terms (any of) is not modelled",
        ),
    ],
)
def test_affinity_the_model_cannot_express_is_named_in_the_notes(affinity: str, note: str):
    template = (
        "      affinity:\n        nodeAffinity:\n"
        "          requiredDuringSchedulingIgnoredDuringExecution:\n"
        "            nodeSelectorTerms:\n            " + affinity
    )
    result = read(job("aff", template=template))

    assert f"{note}: Job aff" in result.notes


def test_pod_anti_affinity_and_spread_are_named_in_the_notes():
    template = (
        "      affinity:\n        podAntiAffinity:\n"
        "          requiredDuringSchedulingIgnoredDuringExecution:\n"
        "          - {topologyKey: kubernetes.io/hostname}\n"
        "      topologySpreadConstraints: [{maxSkew: 1, topologyKey: zone, "
        "whenUnsatisfiable: DoNotSchedule}]\n"
    )
    result = read(job("spread", template=template))

    assert "podAntiAffinity is not modelled: Job spread" in result.notes
    assert "topologySpreadConstraints are not modelled: Job spread" in result.notes


# ============================================================================ Job fields
def test_job_pod_replacement_policy_is_read():
    """§7.6: Failed waits for the old pod to be gone."""
    result = read(job("wait", extra="  podReplacementPolicy: Failed\n"))

    assert workload(result, "wait")["controller"]["podReplacementPolicy"] == "Failed"


def test_a_suspended_job_without_a_queue_is_left_out_and_named():
    result = read(job("parked", extra="  suspend: true\n") + "---\n" + job("runs"))

    assert [w["name"] for w in result.mapping["workloads"]] == ["runs"]
    assert note_about(result, "left out, suspended without a Kueue queue (no pods): Job parked")


def test_job_backoff_limit_and_failure_policies_are_named_in_the_notes():
    extra = (
        "  backoffLimit: 2\n  activeDeadlineSeconds: 3600\n"
        "  podFailurePolicy: {rules: [{action: Ignore, onPodConditions: "
        "[{type: DisruptionTarget}]}]}\n"
    )
    result = read(job("retry", extra=extra))

    assert note_about(
        result, "Job backoffLimit is not counted (an evicted member is always replaced"
    )
    assert "Job podFailurePolicy is not modelled: Job retry" in result.notes
    assert "Job activeDeadlineSeconds is not modelled: Job retry" in result.notes


def test_job_completions_beyond_parallelism_are_named():
    result = read(job("many", extra="  completions: 10\n"))

    assert note_about(result, "Job completions beyond parallelism are not modelled")
