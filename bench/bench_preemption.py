"""Preemption-heavy benchmarks (issue #14). Not tests: run by hand.

    python bench/bench_preemption.py growth [--nodes 100] [--pods 1000,3000,10000]
                                            [--policies none,pod,...] [--repeats 3]
                                            [--prefilled]
    python bench/bench_preemption.py decision [--nodes 10000] [--repeats 3]
    python bench/bench_preemption.py ratio [--nodes 10000] [--repeats 100] [--distinct]
    ... [--record]

Full clusters: 8-GPU nodes offered 1.3 times their GPU-seconds, so every GPU is busy, a
backlog builds and higher-priority arrivals preempt. The horizon grows with the pod count
(the arrival rate and the durations stay the same), so the growth exponent between two pod counts at
a fixed node count says how the cost per pod grows. Figures are simulate CPU seconds
(``time.process_time``, parse excluded), the minimum of ``--repeats`` runs.

``decision`` and ``ratio`` fill every GPU with low- and mid-priority pods whose start
times repeat every 7 and 5 nodes, so the nodes fall into 35 kinds (one job's members
started in a few waves). ``--distinct`` starts every pod at a second of its own instead:
no two nodes' pods then cost the same to checkpoint-aware, whose arrays must reprieve
every node (``pod`` and ``workload-aware`` read no start time in their reprieve and stay
alike).
"""

from __future__ import annotations

import argparse
import json
import math
import platform
import statistics
import sys
import time
from functools import partial
from pathlib import Path
from typing import Any

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

import scheduler_core as sc
from bench.workloads import cluster_spec
from scheduler_core.engine import Engine
from scheduler_core.spec import resolve_variant

BASELINES = Path(__file__).with_name("baselines.json")
POLICIES = ("none", "pod", "workload-aware", "checkpoint-aware")
SECONDS_PER_POD = 3.6
"""Horizon per arriving pod: 1,000 pods arrive over the first 80 % of an hour."""
LOAD = 1.3
LARGE = 3000
"""Runs with more pods than this are measured once (minutes each on a shared machine)."""


def full_cluster(nodes: int, pods: int, policy: str, prefilled: bool = False) -> sc.ExperimentSpec:
    """The growth cluster. ``prefilled`` also starts it with every GPU held by a 1-GPU pod
    of a class below every arrival's, for the whole horizon: at 10,000 nodes, 10,000
    arrivals never fill 80,000 GPUs on their own (no preemption at all), while the
    issue's 10,000 x 10k row is a full cluster where every arrival preempts."""
    document = cluster_spec(
        nodes=nodes, pods=pods, horizon=pods * SECONDS_PER_POD, load=LOAD, preemption=policy
    )
    if prefilled:
        gpus = nodes * 8
        document["priorityClasses"].append({"name": "filler", "value": 1})
        document["workloads"].append(
            {
                "name": "filler",
                "members": gpus,
                "gpus": 1,
                "priorityClassName": "filler",
                "durationSeconds": 2 * document["horizonSeconds"],
                "controller": {"kind": "none"},
            }
        )
        document["initialState"] = [
            {"workload": "filler", "node": f"gpu-{i // 8}", "member": i, "startedAt": -60.0}
            for i in range(gpus)
        ]
        document["name"] += "-prefilled"
    return sc.parse_spec(document)


def simulate_cpu(
    nodes: int, pods: int, policy: str, repeats: int, prefilled: bool = False
) -> dict[str, Any]:
    spec = full_cluster(nodes, pods, policy, prefilled)
    best = math.inf
    result = None
    for _ in range(repeats):
        started = time.process_time()
        result = sc.simulate(spec, "default")
        best = min(best, time.process_time() - started)
    assert result is not None
    return {
        "cpu_s": round(best, 3),
        "engine_events": result.events_processed,
        "log_events": len(result.events),
        "preemptions": sum(1 for e in result.events if e.reason == "VictimsSelected"),
    }


def growth(
    nodes: int,
    pod_counts: list[int],
    policies: list[str],
    repeats: int,
    prefilled: bool = False,
) -> dict[str, Any]:
    out: dict[str, Any] = {}
    for policy in policies:
        runs = {}
        for pods in pod_counts:
            once = pods > LARGE  # measured once on a shared machine (noted in the figures)
            runs[str(pods)] = {
                **simulate_cpu(nodes, pods, policy, 1 if once else repeats, prefilled),
                "repeats": 1 if once else repeats,
            }
            print(policy, nodes, pods, json.dumps(runs[str(pods)]), flush=True)
        lo, hi = str(pod_counts[0]), str(pod_counts[-1])
        exponent = (
            (
                math.log(runs[hi]["cpu_s"] / runs[lo]["cpu_s"])
                / math.log(pod_counts[-1] / pod_counts[0])
            )
            if len(pod_counts) > 1
            else None
        )
        out[policy] = {"runs": runs, "exponent": round(exponent, 3) if exponent else None}
        print(policy, "exponent", out[policy]["exponent"], flush=True)
    return {"nodes": nodes, "repeats": repeats, "prefilled": prefilled, "policies": out}


def full_spec(
    nodes: int, policy: str, distinct: bool = False, low_extra: dict[str, Any] | None = None
) -> dict[str, Any]:
    """Every node full: four 1-GPU pods of a low-priority job (``low_extra``: more of its
    fields, a checkpoint say) and two 2-GPU pods of a mid-priority one; a 4-GPU urgent pod
    arrives later. Pods start in a few alike rounds, or with ``distinct`` each a
    millisecond apart (so no two nodes cost alike), in the same order on every node. The
    tests build the decision benchmark's cluster from here so they check what it times."""
    # distinct: a millisecond apart, all within the first minutes of their hours of work
    step, low_start, mid_start = (1, 7, 5) if not distinct else (0.001, nodes * 4, nodes * 2)
    return {
        "horizonSeconds": 10,
        "cluster": {"nodePools": [{"name": "gpu", "count": nodes, "gpus": 8}]},
        "priorityClasses": [
            {"name": "low", "value": 1, "globalDefault": True},
            {"name": "mid", "value": 500},
            {"name": "high", "value": 1000},
        ],
        "workloads": [
            {
                "name": "bg1",
                "members": nodes * 4,
                "gpus": 1,
                "durationSeconds": 36000,
                **(low_extra or {}),
            },
            {
                "name": "bg2",
                "members": nodes * 2,
                "gpus": 2,
                "durationSeconds": 36000,
                "priorityClassName": "mid",
            },
            {
                "name": "urgent",
                "members": 1,
                "gpus": 4,
                "arrival": 20,
                "priorityClassName": "high",
            },
        ],
        "initialState": [
            *(
                {
                    "workload": "bg1",
                    "node": f"gpu-{i // 4}",
                    "member": i,
                    "startedAt": -100 - (i % low_start) * step,
                }
                for i in range(nodes * 4)
            ),
            *(
                {
                    "workload": "bg2",
                    "node": f"gpu-{i // 2}",
                    "member": i,
                    "startedAt": -50 - (i % mid_start) * step,
                }
                for i in range(nodes * 2)
            ),
        ],
        "policy": {"preemption": policy},
    }


def decision(
    nodes: int, policies: list[str], repeats: int, distinct: bool = False
) -> dict[str, Any]:
    """One preemption decision (candidates and node choice, no actuation, so each repeat
    sees the same state) on a cluster where every GPU is held by a low-priority pod
    (``distinct``: each pod started at a second of its own)."""
    out: dict[str, Any] = {}
    for policy in policies:
        if policy == "none":
            continue
        spec = sc.parse_spec(full_spec(nodes, policy, distinct))
        engine = Engine(resolve_variant(spec, "default"), seed=1)
        engine.run()
        preemptor = engine._new_pod(engine.by_name["urgent"], 0)
        decide = partial(engine.preemption.find_candidates, engine, preemptor)
        best = _best_of(repeats, decide)
        found = decide()
        out[policy] = {"python_decision_ms": round(best * 1000, 3), "candidates": len(found)}
        if policy != "none":  # the array path, as post_filter uses it
            fast = _best_of(repeats, partial(engine.preemption.array_choice, engine, preemptor))
            out[policy]["decision_ms"] = round(fast * 1000, 3)
            # with a decision recorder (explain, the default): every candidate listed
            recorded = _best_of(repeats, partial(_recorded_decision, engine, preemptor))
            out[policy]["explained_decision_ms"] = round(recorded * 1000, 3)
        print(policy, nodes, json.dumps(out[policy]), flush=True)
    return {"nodes": nodes, "repeats": repeats, "policies": out}


def ratio(nodes: int, policies: list[str], rounds: int, distinct: bool = False) -> dict[str, Any]:
    """The group policies' decisions against `pod`'s, in one process: the decisions of
    :func:`decision` for every policy, called in turn (pod, workload-aware,
    checkpoint-aware, pod, ...) ``rounds`` times after a warm-up, so a drift of the
    machine's speed moves all alike; medians and their ratio to `pod`, records off
    (the array choice) and on (every candidate listed and recorded)."""
    decide: dict[str, dict[str, Any]] = {}
    for policy in policies:
        engine, preemptor = _decision_engine(nodes, policy, distinct)
        decide[policy] = {
            "off": partial(engine.preemption.array_choice, engine, preemptor),
            "on": partial(_recorded_decision, engine, preemptor),
        }
    out: dict[str, Any] = {}
    for mode in ("off", "on"):
        times: dict[str, list[float]] = {policy: [] for policy in policies}
        for counted in (False, True):
            for _ in range(rounds if counted else max(3, rounds // 10)):
                for policy in policies:
                    started = time.process_time()
                    decide[policy][mode]()
                    if counted:
                        times[policy].append(time.process_time() - started)
        medians = {policy: statistics.median(t) * 1000 for policy, t in times.items()}
        out[mode] = {
            policy: {
                "median_ms": round(medians[policy], 3),
                "min_ms": round(min(times[policy]) * 1000, 3),
                "to_pod": round(medians[policy] / medians["pod"], 2),
            }
            for policy in policies
        }
        print(f"records {mode}", json.dumps(out[mode]), flush=True)
    return {"nodes": nodes, "rounds": rounds, "distinct": distinct, "modes": out}


def _decision_engine(nodes: int, policy: str, distinct: bool = False) -> tuple[Engine, Any]:
    """An engine run to just before :func:`decision`'s preemptor arrives, and the
    preemptor."""
    captured: list[Any] = []

    def keep(repeats: int, call: Any) -> float:
        captured.append(call)
        return 0.0

    global _best_of
    timed, _best_of = _best_of, keep
    try:
        decision(nodes, [policy], 1, distinct)
    finally:
        _best_of = timed
    engine, preemptor = captured[0].args
    return engine, preemptor


def _recorded_decision(engine: Engine, preemptor: Any) -> None:
    """One decision as a recording run makes it: the array path listing every candidate,
    then the record (names are built later, once, when the run's records are)."""
    policy = engine.preemption
    decided = policy.array_decision(engine, preemptor, listing=True)
    assert decided is not None
    assert engine.recorder is not None
    best, candidates, rule = decided
    engine.recorder.preemption(engine.now, preemptor, candidates, best, rule)
    engine.recorder._raw.pop()


def _best_of(repeats: int, call: Any) -> float:
    best = math.inf
    for _ in range(repeats):
        started = time.process_time()
        call()
        best = min(best, time.process_time() - started)
    return best


def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("case", choices=["growth", "decision", "ratio"])
    parser.add_argument("--nodes", type=int, default=None)
    parser.add_argument("--pods", default="1000,3000,10000")
    parser.add_argument("--policies", default=",".join(POLICIES))
    parser.add_argument("--repeats", type=int, default=3)
    parser.add_argument("--record", action="store_true")
    parser.add_argument(
        "--distinct",
        action="store_true",
        help="decision, ratio: every pod started at a second of its own (no two nodes alike)",
    )
    parser.add_argument(
        "--prefilled",
        action="store_true",
        help="growth: start with every GPU held by a lower-priority pod",
    )
    args = parser.parse_args()
    policies = args.policies.split(",")
    if args.case == "growth":
        nodes = args.nodes or 100
        figures = growth(
            nodes, [int(p) for p in args.pods.split(",")], policies, args.repeats, args.prefilled
        )
        key = f"preemption_growth_{nodes}" + ("_prefilled" if args.prefilled else "")
    elif args.case == "ratio":
        nodes = args.nodes or 10_000
        figures = ratio(
            nodes,
            ["pod", *(p for p in policies if p not in ("none", "pod"))],
            max(args.repeats, 100),
            args.distinct,
        )
        key = f"preemption_decision_ratio_{nodes}" + ("_distinct" if args.distinct else "")
        if args.record:
            baselines = json.loads(BASELINES.read_text()) if BASELINES.exists() else {}
            baselines[key] = {
                **figures,
                "python": platform.python_version(),
                "recorded": time.strftime("%Y-%m-%d"),
            }
            BASELINES.write_text(json.dumps(baselines, indent=2, sort_keys=True) + "\n")
        return
    else:
        nodes = args.nodes or 10_000
        figures = decision(nodes, policies, max(args.repeats, 20), args.distinct)
        key = f"preemption_decision_{nodes}" + ("_distinct" if args.distinct else "")
    if args.record:
        baselines = json.loads(BASELINES.read_text()) if BASELINES.exists() else {}
        kept = baselines.get(key, {}).get("policies", {})
        figures["policies"] = {**kept, **figures["policies"]}  # a rerun of some policies
        what = "simulate CPU seconds" if args.case == "growth" else "decision CPU ms"
        before = baselines.get(key, {}).get("before_issue14")
        baselines[key] = {
            **figures,
            "python": platform.python_version(),
            "recorded": time.strftime("%Y-%m-%d"),
            "note": f"{what}, minimum of repeats, shared 2-core machine (noisy)",
            **({"before_issue14": before} if before else {}),
        }
        BASELINES.write_text(json.dumps(baselines, indent=2, sort_keys=True) + "\n")


if __name__ == "__main__":
    main()
