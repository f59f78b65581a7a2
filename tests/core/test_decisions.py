"""Decision records (scheduler_core/decisions.py, docs/decisions.md): kube-scheduler's
message formats, the PostFilter's candidates, deciding rule and reprieved pods, and the
run-level diagnosis of every preset."""

from __future__ import annotations

from pathlib import Path

import pytest

from bench.workloads import cluster_spec
from scheduler_core import events as ev
from scheduler_core import parse_spec, simulate
from scheduler_core.cli import main
from scheduler_core.decisions import RULES, Recorder, Tally, _nonzero, fit_error
from scheduler_core.presets import get_preset
from scheduler_core.traces import import_trace
from scheduler_core.traces.scenarios import add_policy_variants, inject_urgent

FIXTURES = Path(__file__).parent / "fixtures" / "traces"
BARE = {"controller": {"kind": "none"}, "cpu": 1, "memory": 1}


def tainted_cluster() -> dict:
    """8 one-GPU nodes full of pods the preemptor may not evict, 4 tainted ones."""
    prod = [
        {"name": f"prod-{i}", "gpus": 1, "priorityClassName": "prod", "arrival": 0, **BARE}
        for i in range(8)
    ]
    return {
        "name": "taints",
        "horizonSeconds": 60,
        "cluster": {
            "nodePools": [
                {"name": "gpu", "count": 8, "gpus": 1, "cpu": 8, "memory": 64},
                {
                    "name": "infer",
                    "count": 4,
                    "gpus": 1,
                    "cpu": 8,
                    "memory": 64,
                    "taints": [{"key": "dedicated", "value": "infer", "effect": "NoSchedule"}],
                },
            ]
        },
        "priorityClasses": [{"name": "prod", "value": 1000}, {"name": "low", "value": 10}],
        "workloads": [
            *prod,
            {
                "name": "filler",
                "gpus": 1,
                "members": 4,
                "priorityClassName": "prod",
                "arrival": 0,
                "tolerations": [{"key": "dedicated", "operator": "Exists"}],
                **BARE,
            },
            {
                "name": "p",
                "gpus": 1,
                "priorityClassName": "low",
                "arrival": 5,
                "urgent": True,
                **BARE,
            },
        ],
    }


def test_fit_error_sorts_the_histogram_as_strings_like_upstream():
    """framework/types.go FitError.Error: "count reason" strings through sort.Strings."""
    text = fit_error(
        12,
        {"Insufficient nvidia.com/gpu": 8, "node(s) had untolerated taint {dedicated: infer}": 4},
    )
    assert text == (
        "0/12 nodes are available: 4 node(s) had untolerated taint "
        "{dedicated: infer}, 8 Insufficient nvidia.com/gpu."
    )
    assert fit_error(
        12,
        {
            "No preemption victims found for incoming pod": 2,
            "Preemption is not helpful for scheduling": 10,
        },
    ).endswith(
        ": 10 Preemption is not helpful for scheduling, 2 No preemption victims found for "
        "incoming pod."
    )


def test_filter_and_preemption_failure_in_kube_scheduler_wording():
    """§4.1 step 3: tainted nodes are unresolvable ("not helpful"); the full nodes hold
    only higher-priority pods ("No preemption victims found for incoming pod")."""
    result = simulate(parse_spec(tainted_cluster()), "default")
    failed = next(e for e in result.events if e.reason == ev.FAILED_SCHEDULING and e.pod == "p-0")
    assert failed.message == (
        "0/12 nodes are available: 4 node(s) had untolerated taint {dedicated: infer}, "
        "8 Insufficient nvidia.com/gpu. preemption: 0/12 nodes are available: 4 Preemption "
        "is not helpful for scheduling, 8 No preemption victims found for incoming pod."
    )
    decision = next(d for d in result.decisions if d.pod == "p-0")
    assert decision.message == failed.message
    assert decision.cause == "no lower-priority pods on any node that could fit it"
    assert result.diagnosis == "p: no lower-priority pods on any node that could fit it."


def test_a_victim_event_names_the_preemptor_as_upstream():
    """executor.go: "Preempted by <namespace>/<name> on node <node>"."""
    result = simulate(get_preset("s3-grace-period").spec(), "grace-30s")
    preempted = [e for e in result.events if e.reason == ev.PREEMPTED]
    assert preempted
    assert (
        preempted[0].message
        == f"Preempted by default/{preempted[0].related} on node {preempted[0].node}"
    )


# (preset, variant, kind, preemptor, victims, rule, diagnosis) of the key decision: the
# first decision that evicted anyone, or the diagnosis when none did.
KEY_DECISIONS = [
    ("s1-training-vs-shards", "pod", "Preemption", "urgent-0", ("train-3",), RULES[5], ""),
    (
        "s1-training-vs-shards",
        "workload-aware-all",
        "WorkloadPreemption",
        "urgent-0",
        tuple(f"eval-{i}" for i in range(8)),
        None,
        "",
    ),
    (
        "s2-jump-the-queue",
        "never",
        None,
        None,
        None,
        None,
        "evaluation: its class has preemptionPolicy: Never; it waited instead of preempting.",
    ),
    (
        "s2-jump-the-queue",
        "preempt-lower-priority",
        "Preemption",
        "evaluation-0",
        ("train-d-0",),
        RULES[5],
        "",
    ),
    (
        "s3-grace-period",
        "grace-30s",
        "Preemption",
        "notebook-0",
        ("batch-job-0",),
        "only candidate",
        "",
    ),
    (
        "s4-preemption-not-helpful",
        "spread",
        None,
        None,
        None,
        None,
        "interactive: the GPUs it needs are spread one per node (preemption cannot help).",
    ),
    (
        "s4-preemption-not-helpful",
        "bin-pack",
        "Preemption",
        "interactive-0",
        ("batch-2-0", "batch-3-0"),
        "only candidate",
        "",
    ),
    (
        "s5-loading-treadmill",
        "aggressive",
        "Preemption",
        "notebook-0-0",
        ("llm-inference-0", "llm-inference-1", "llm-inference-2", "llm-inference-3"),
        RULES[1],
        "",
    ),
    ("s5-loading-treadmill", "pdb", "Preemption", "notebook-0-0", ("batch-0",), RULES[0], ""),
    (
        "s6-checkpoint-frequency",
        "intervalSeconds=30",
        "Preemption",
        "urgent-1-0",
        ("batch-train-0",),
        "only candidate",
        "",
    ),
    (
        "s7-three-class-setup",
        "three-class",
        "Preemption",
        "notebook-0-0",
        ("batch-7-0",),
        RULES[5],
        "",
    ),
    (
        "s8-gang-at-scale",
        "none",
        None,
        None,
        None,
        None,
        "big-training: preemption is disabled in this variant (policy none).",
    ),
    ("s8-gang-at-scale", "workload-aware", "WorkloadPreemption", "big-training-0", None, None, ""),
    ("s9-spot-reclaim", "checkpoint-on-notice", None, None, None, None, ""),
    (
        "s10-queue-priority",
        "priority-class-only",
        None,
        None,
        None,
        None,
        "urgent-op: it waited in its admission queue, where it has no pods yet, so its priority "
        "could not preempt anyone.",
    ),
    (
        "s10-queue-priority",
        "kueue-priority-and-preemption",
        "QueuePreemption",
        "",
        (),
        "Kueue classic preemption (§7.3)",
        "",
    ),
    # Node failures and checkpoint intervals, one priority: nothing to preempt, no diagnosis.
    ("s13-fleet-reliability", "checkpoint-every-30m", None, None, None, None, ""),
    ("s14-checkpoint-planner", "intervalSeconds=1800", None, None, None, None, ""),
    (
        "s15-fair-sharing",
        "classic-cohort-borrowing",
        "QueuePreemption",
        "",
        (),
        "Kueue classic preemption (§7.3)",
        "",
    ),
    (
        "s15-fair-sharing",
        "fair-sharing",
        "QueuePreemption",
        "",
        (),
        "Kueue fair sharing (§7.4)",
        "",
    ),
    (
        "s11-pod-replacement-policy",
        "failed",
        "Preemption",
        "urgent-0",
        ("job-0", "filler-0"),
        "only candidate",
        "",
    ),
    (
        "s12-topology-placement",
        "rack-best-fit",
        "Preemption",
        "urgent-0",
        ("batch-16", "batch-17", "batch-18", "batch-19"),
        RULES[5],
        "",
    ),
]


@pytest.mark.parametrize(
    ("preset", "variant", "kind", "pod", "victims", "rule", "diagnosis"),
    KEY_DECISIONS,
    ids=[f"{k[0]}:{k[1]}" for k in KEY_DECISIONS],
)
def test_every_presets_key_decision_reads_right(
    preset, variant, kind, pod, victims, rule, diagnosis
):
    result = simulate(get_preset(preset).spec(), variant)
    assert result.diagnosis == diagnosis
    key = next((d for d in result.decisions if d.kind != "FailedScheduling"), None)
    if kind is None:
        assert key is None
        return
    assert (key.kind, key.pod) == (kind, pod)
    if victims is not None:
        assert key.victims == victims
    if rule is not None:
        assert key.rule == rule
    # The victims' events link back to this decision; they are the Preempted events.
    preempted = {e.pod for e in result.events if e.reason == ev.PREEMPTED and e.time == key.time}
    assert set(key.victims) <= preempted
    assert all(any(k == (key.time, ev.PREEMPTED, v) for k in key.events) for v in key.victims)


def test_candidates_and_reprieved_pods_of_a_postfilter():
    """§4.3/§4.4: every candidate node with its victims; the reprieved pods on the chosen
    node are the lower-priority pods that were put back."""
    result = simulate(get_preset("s1-training-vs-shards").spec(), "pod")
    second = [d for d in result.decisions if d.kind == "Preemption"][1]
    assert {c.node: c.victims for c in second.candidates} == {
        "node-b": ("train-2", "train-3"),
        "node-a": ("train-1",),
    }
    assert second.rule == RULES[2]  # smallest sum of victim priorities
    assert second.node == "node-a"
    assert second.victims == ("train-1",)
    assert {r.pod for r in second.reprieved} >= {"eval-0", "eval-1", "eval-2"}


def test_workload_aware_units_include_whole_all_groups_and_checkpoint_costs():
    result = simulate(get_preset("s1-training-vs-shards").spec(), "checkpoint-aware")
    decision = next(d for d in result.decisions if d.kind == "WorkloadPreemption")
    assert decision.units
    evicted = [u for u in decision.units if u.evicted]
    assert {p for u in evicted for p in u.pods} == set(decision.victims)
    assert all(u.cost_terms for u in decision.units)
    assert {name for u in decision.units for name, _ in u.cost_terms} >= {"lostWork"}
    wa = simulate(get_preset("s1-training-vs-shards").spec(), "workload-aware-all")
    groups = [u for d in wa.decisions for u in d.units if u.whole_group]
    assert groups
    assert all(len(u.pods) > 1 for u in groups)


def test_kueue_targets_have_reasons_and_the_others_say_why_not():
    result = simulate(get_preset("s10-queue-priority").spec(), "kueue-priority-and-preemption")
    decision = next(d for d in result.decisions if d.kind == "QueuePreemption")
    taken = [t for t in decision.targets if t.taken]
    assert [(t.workload, t.reason) for t in taken] == [("op-b", "InClusterQueue")]
    assert all(t.why for t in decision.targets if not t.taken)


def test_records_are_deterministic_and_do_not_move_the_event_log():
    spec = get_preset("s5-loading-treadmill").spec()
    a, b = simulate(spec, "pdb"), simulate(spec, "pdb")
    off = simulate(spec, "pdb", explain=False)
    assert a.decisions == b.decisions
    assert off.decisions == ()
    assert [(e.time, e.reason, e.pod, e.value) for e in a.events] == [
        (e.time, e.reason, e.pod, e.value) for e in off.events
    ]


def test_the_imported_openb_cluster_says_why_nothing_helps_the_urgent_group():
    mapping = import_trace(
        "openb", [FIXTURES / "openb_nodes.csv", FIXTURES / "openb_pods.csv"]
    ).mapping
    spec = parse_spec(
        add_policy_variants(
            inject_urgent(mapping, members=4, gpus=8, arrival=60),
            ["pod", "workload-aware", "checkpoint-aware"],
        )
    )
    for variant in ("preemption-pod", "preemption-workload-aware", "preemption-checkpoint-aware"):
        result = simulate(spec, variant)
        assert result.diagnosis == (
            "urgent: the group can never fit (preemption cannot help): minCount 4 members of "
            "8 GPU(s), but the whole cluster, empty, holds 3."
        ), variant


def test_cli_explain_prints_the_decisions_of_a_pod(capsys):
    assert main(["run", "s4-preemption-not-helpful", "--explain", "interactive", "--quiet"]) == 0
    out = capsys.readouterr().out
    assert "diagnosis: interactive: the GPUs it needs are spread one per node" in out
    assert "candidate gpu-0: victims batch-2-0, batch-3-0; 0 PDB violation(s)" in out
    assert "reprieved batch-0-0" in out


def _busy_spec(preset: str):
    """A preset's spec, or ("synthetic") a small cluster offered 3x its GPUs, where
    failures come in thousands."""
    if preset == "synthetic":
        return parse_spec(cluster_spec(nodes=60, pods=500, horizon=4 * 3600, load=3.0))
    return get_preset(preset).spec()


@pytest.mark.parametrize(
    ("preset", "variant"),
    [
        ("s8-gang-at-scale", "pod"),
        ("s9-spot-reclaim", "checkpoint-on-notice"),
        ("s5-loading-treadmill", "pdb"),
        ("s12-topology-placement", "spread"),
        ("s7-three-class-setup", "three-class"),
        ("synthetic", "default"),
    ],
)
def test_kept_up_node_verdicts_equal_a_fresh_count(monkeypatch, preset, variant):
    """The recorder redoes only the nodes that changed since a kind of pod last failed;
    at every failure its counts must equal counting every node afresh."""
    checked = []
    kept = Recorder._tally

    def check(self, pod):
        tally = kept(self, pod)
        fresh = Tally(self.cluster, pod, self.changed.count)
        assert (
            _nonzero(tally.filter),
            _nonzero(tally.preemption),
            tally.reach,
            tally.lower,
            tally.total,
        ) == (
            _nonzero(fresh.filter),
            _nonzero(fresh.preemption),
            fresh.reach,
            fresh.lower,
            fresh.total,
        )
        checked.append(pod.name)
        return tally

    monkeypatch.setattr(Recorder, "_tally", check)
    simulate(_busy_spec(preset), variant)
    assert checked


@pytest.mark.parametrize(
    ("preset", "variant"),
    [
        ("synthetic", "default"),
        ("s12-topology-placement", "spread"),
        ("s7-three-class-setup", "three-class"),
    ],
)
def test_a_remembered_verdict_is_the_verdict_worked_out_afresh(monkeypatch, preset, variant):
    """A tally remembers node verdicts by the node's resources alone (capacity, free
    resources, GPU reach below the pod's priority, how many pods are below it): every
    verdict it hands out from its memo must be the one the node's full test gives now,
    and the memo must be used."""
    from scheduler_core import decisions

    plain = decisions.node_verdict
    hits = []

    def both(cluster, pod, node, memo=None):
        if memo is None:
            return plain(cluster, pod, node)
        size = len(memo)
        remembered = plain(cluster, pod, node, memo)
        hits.append(len(memo) == size)
        assert remembered == plain(cluster, pod, node), (pod.name, node.name)
        return remembered

    monkeypatch.setattr(decisions, "node_verdict", both)
    simulate(_busy_spec(preset), variant)
    assert sum(hits) > len(hits) // 2  # most changed nodes repeat a state already seen


def test_the_count_of_pods_below_a_priority_is_the_nodes_own(monkeypatch):
    """The verdicts read how many pods a node holds below the preemptor's priority from
    the cluster's reach index (free slots plus the slots those pods hold) instead of
    walking the node's pods: at every failure, on every node and at every threshold,
    that count is the walk's."""
    from scheduler_core import decisions

    plain = decisions.node_verdict
    checked = []

    def counted(cluster, pod, node, memo=None):
        for k, threshold in enumerate(cluster.thresholds):
            walked = sum(1 for p in node.pods if p.priority < threshold)
            slots = node.max_pods - node.npods
            assert int(cluster.reach_pods[k, node.idx]) - slots == walked, (node.name, k)
        checked.append(node)
        return plain(cluster, pod, node, memo)

    monkeypatch.setattr(decisions, "node_verdict", counted)
    simulate(_busy_spec("synthetic"), "default")
    assert len(checked) > 1000


def test_a_gpu_less_pod_below_the_preemptor_is_not_remembered_away():
    """Two nodes alike in capacity, free resources and GPU reach; one holds a CPU-only
    pod below the preemptor, the other one above it. The first is worth trying (evicting
    that pod frees CPU, not the GPU the preemptor lacks); the second has no victims. A
    tally's memo, shared by the two, must give each its own verdict, in either order."""
    from scheduler_core import decisions
    from scheduler_core.engine import Engine
    from scheduler_core.spec import resolve_variant

    spec = parse_spec(
        {
            "horizonSeconds": 10,
            "cluster": {"nodePools": [{"name": "gpu", "count": 2, "gpus": 8, "cpu": 32}]},
            "priorityClasses": [
                {"name": "low", "value": 1, "globalDefault": True},
                {"name": "mid", "value": 500},
                {"name": "high", "value": 1000},
            ],
            "workloads": [
                {
                    "name": "big",
                    "members": 2,
                    "gpus": 8,
                    "cpu": 8,
                    "durationSeconds": 99,
                    "priorityClassName": "high",
                },
                {"name": "side-low", "gpus": 0, "cpu": 4, "durationSeconds": 99},
                {
                    "name": "side-high",
                    "gpus": 0,
                    "cpu": 4,
                    "durationSeconds": 99,
                    "priorityClassName": "high",
                },
                {"name": "ask", "gpus": 1, "cpu": 1, "arrival": 5, "priorityClassName": "mid"},
            ],
            "initialState": [
                {"workload": "big", "node": "gpu-0", "member": 0, "startedAt": -1},
                {"workload": "big", "node": "gpu-1", "member": 1, "startedAt": -1},
                {"workload": "side-low", "node": "gpu-0", "member": 0, "startedAt": -1},
                {"workload": "side-high", "node": "gpu-1", "member": 0, "startedAt": -1},
            ],
        }
    )
    engine = Engine(resolve_variant(spec, "default"), seed=1)
    engine.run()
    cluster = engine.cluster
    pod = engine._new_pod(engine.by_name["ask"], 0)
    first, second = cluster.nodes
    fresh = {node: decisions.node_verdict(cluster, pod, node) for node in (first, second)}
    assert fresh[first] != fresh[second]
    for order in ((first, second), (second, first)):
        memo: dict = {}
        for node in order:
            assert decisions.node_verdict(cluster, pod, node, memo) == fresh[node], node.name
