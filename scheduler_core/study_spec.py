"""The placement-study mode of an experiment spec (``placementStudy:``, issue #18 §3).

A spec with ``placementStudy`` is not replayed in time: its cluster and workloads become a
:class:`~scheduler_core.placement_study.Study` (the nodes, and a pod population where a
workload counts ``members`` times), each variant's ``placement`` names a GPU scoring
policy (``scheduler_core.plugins.gpu_scoring``), and replication ``r`` is the study run
with seed ``seed + r``. So ``seed: 42, replications: 10`` are the paper's seeds 42-51.

Why a spec and not a separate document: the form, the API, the CLI's ``run`` and the
workers already carry specs, their validation (errors named by field) and their limits.
The rules here refuse what a time-less packing run cannot mean (queues, timeline events,
failures, MIG), so a study spec never silently ignores a field.

The core computes every number the web app shows: :func:`study_record` (one
replication's curve and counts) and :func:`study_summary` (per variant, the spread across
seeds at every 1 % of arrived load and at the asked load).
"""

from __future__ import annotations

import json
import statistics
from collections import Counter
from collections.abc import Callable, Iterable, Mapping, Sequence
from functools import cache
from pathlib import Path
from typing import Any

from scheduler_core.placement_study import (
    MAX_DEVICES,
    MAX_STUDY_NODES,
    MAX_STUDY_PODS,
    MILLI,
    Study,
    StudyNode,
    StudyPod,
    StudyRun,
    run_study,
)
from scheduler_core.spec import ExperimentSpec, NodeShape, resolve_variant
from scheduler_core.stats import mean_interval

PUBLISHED = Path(__file__).with_name("fgd_published.json")
"""The FGD paper's published allocation at 130 % arrived load per openb workload and
policy (the simulator repository's ``analysis_allo_discrete.csv``, commit 8f3d641)."""
SECONDS_PER_POD_NODE = 1.2e-7
"""Cost model of one run: about 1 s for 9,000 arriving pods on openb's 1,213 nodes
(bench/bench_placement.py); the worker-seconds budget is checked against it."""
UNUSED_IN_STUDY = (
    ("queues", "queues"),
    ("resource_quotas", "resourceQuotas"),
    ("events", "events"),
    ("failures", "failures"),
    ("initial_state", "initialState"),
    ("grid", "grid"),
)
"""Spec parts a time-less packing run has no use for: refused rather than ignored."""


def study_seed(spec: ExperimentSpec, replication: int) -> int:
    """Replication ``r`` of a study runs with seed ``seed + r`` (not the replay's stride):
    the paper's seeds 42-51 are ``seed: 42, replications: 10``."""
    return spec.seed + replication


def _policies() -> list[str]:
    from scheduler_core.plugins.gpu_scoring import policy_names  # late: it imports us

    return policy_names()


@cache
def published() -> dict[str, dict[str, dict[str, float]]]:
    """``{workload: {policy: {mean, sd, n}}}`` from the paper's published results."""
    data = json.loads(PUBLISHED.read_text(encoding="utf-8"))
    results: dict[str, dict[str, dict[str, float]]] = data["results"]
    return results


def published_points(spec: ExperimentSpec) -> dict[str, dict[str, float]]:
    """The paper's mean and spread at 130 % per policy for the spec's ``paperWorkload``,
    or nothing when it names none."""
    study = spec.placement_study
    if study is None or study.paper_workload is None:
        return {}
    return published().get(study.paper_workload, {})


# ----------------------------------------------------------------------------- validation


def study_errors(spec: ExperimentSpec) -> Iterable[dict[str, str]]:
    """What a placement study cannot run, each error naming its field."""
    study = spec.placement_study
    assert study is not None
    for attribute, name in UNUSED_IN_STUDY:
        if getattr(spec, attribute):
            yield {
                "path": name,
                "message": "not used in a placement study (no time, no deletions); "
                "remove it or remove placementStudy",
            }
    if study.paper_workload is not None and study.paper_workload not in published():
        yield {
            "path": "placementStudy.paperWorkload",
            "message": f"no published results for '{study.paper_workload}' "
            f"(known: {', '.join(sorted(published()))})",
        }
    yield from _node_errors(spec)
    yield from _workload_errors(spec)
    yield from _order_errors(spec)
    known = _policies()
    policies = [("policy.placement", spec.policy.placement)]
    for i, variant in enumerate(spec.variants):
        if variant.placement is not None:
            policies.append((f"variants[{i}].placement", variant.placement))
        if variant.preemption is not None:
            yield {
                "path": f"variants[{i}].preemption",
                "message": "a placement study never preempts; leave preemption out",
            }
    for path, name in policies:
        if name not in known:
            yield {
                "path": path,
                "message": f"unknown GPU placement policy '{name}' (known: {', '.join(known)})",
            }
    names = [v.name for v in spec.variants]
    for name in sorted({n for n in names if names.count(n) > 1}):
        yield {"path": "variants", "message": f"duplicate variant name '{name}'"}


def _node_errors(spec: ExperimentSpec) -> Iterable[dict[str, str]]:
    shapes: list[tuple[str, NodeShape]] = [
        (f"cluster.nodePools[{i}]", p) for i, p in enumerate(spec.cluster.node_pools)
    ]
    shapes += [(f"cluster.nodes[{i}]", n) for i, n in enumerate(spec.cluster.nodes)]
    for path, shape in shapes:
        if shape.gpus > MAX_DEVICES:
            yield {
                "path": f"{path}.gpus",
                "message": f"{shape.gpus} GPUs: a placement study tracks at most "
                f"{MAX_DEVICES} devices per node",
            }
        if shape.mig:
            yield {"path": f"{path}.mig", "message": "MIG profiles are not placement-studied"}
    count = sum(p.count for p in spec.cluster.node_pools) + len(spec.cluster.nodes)
    if count > MAX_STUDY_NODES:
        yield {"path": "cluster", "message": f"{count:,} nodes, at most {MAX_STUDY_NODES:,}"}
    if not any(shape.gpus for _, shape in shapes):
        yield {"path": "cluster", "message": "no node has a GPU, so there is no GPU capacity"}


def _workload_errors(spec: ExperimentSpec) -> Iterable[dict[str, str]]:
    if not spec.workloads:
        yield {"path": "workloads", "message": "a placement study samples from the workloads"}
        return
    for i, wl in enumerate(spec.workloads):
        if wl.mig:
            yield {
                "path": f"workloads[{i}].mig",
                "message": "MIG profiles are not placement-studied",
            }
        if wl.gpus > MAX_DEVICES:
            yield {
                "path": f"workloads[{i}].gpus",
                "message": f"{wl.gpus} GPUs per pod: no study node has more than {MAX_DEVICES}",
            }
    pods = sum(wl.members for wl in spec.workloads)
    if pods > MAX_STUDY_PODS:
        yield {
            "path": "workloads",
            "message": f"{pods:,} pods (members of all workloads), at most {MAX_STUDY_PODS:,}",
        }
    if not any(wl.gpu_milli or wl.gpus for wl in spec.workloads):
        yield {"path": "workloads", "message": "no workload requests a GPU, so load never grows"}


def _order_errors(spec: ExperimentSpec) -> Iterable[dict[str, str]]:
    """``podOrder`` lists each workload exactly ``members`` times and ``nodeOrder`` is a
    permutation of the expanded nodes: an order that drops or repeats a pod or a node
    would change the population, not only its order (so a variant's ``set:`` of
    ``members`` or ``count`` must come without the order, or with a matching one)."""
    study = spec.placement_study
    assert study is not None
    if study.pod_order is not None:
        path = "placementStudy.podOrder"
        workloads = len(spec.workloads)
        outside = sorted({i for i in study.pod_order if not 0 <= i < workloads})
        if outside:
            yield {
                "path": path,
                "message": f"index {outside[0]} is not a workload (0 to {workloads - 1})",
            }
        else:
            listed = Counter(study.pod_order)
            wrong = [(i, wl) for i, wl in enumerate(spec.workloads) if listed[i] != wl.members]
            if wrong:
                i, wl = wrong[0]
                yield {
                    "path": path,
                    "message": f"lists workload {i} ('{wl.name}') {listed[i]} time(s), but "
                    f"it has {wl.members} members ({len(wrong)} workload(s) differ)",
                }
    if study.node_order is not None:
        count = sum(p.count for p in spec.cluster.node_pools) + len(spec.cluster.nodes)
        if sorted(study.node_order) != list(range(count)):
            yield {
                "path": "placementStudy.nodeOrder",
                "message": f"must list each of the {count} nodes (0 to {count - 1}) once",
            }


def study_seconds(spec: ExperimentSpec, runs: int) -> float:
    """Expected worker seconds of ``runs`` study runs of ``spec`` (the cost model above):
    the pods that arrive (the GPU capacity times the load over the mean GPU request,
    at most MAX_STUDY_PODS) times the nodes."""
    study = spec.placement_study
    assert study is not None
    nodes = sum(p.count for p in spec.cluster.node_pools) + len(spec.cluster.nodes)
    capacity = MILLI * (
        sum(p.gpus * p.count for p in spec.cluster.node_pools)
        + sum(n.gpus for n in spec.cluster.nodes)
    )
    members = sum(wl.members for wl in spec.workloads) or 1
    requested = sum(wl.members * _milli(wl.gpus, wl.gpu_milli) for wl in spec.workloads)
    per_pod = requested / members or 1.0
    arriving = min(MAX_STUDY_PODS, capacity * study.arrived_load_percent / 100 / per_pod)
    return runs * arriving * nodes * SECONDS_PER_POD_NODE


def _milli(gpus: int, gpu_milli: int | None) -> int:
    return gpu_milli if gpu_milli is not None else gpus * MILLI


# ----------------------------------------------------------------------------- running


def study_of(spec: ExperimentSpec) -> Study:
    """The study a (resolved) spec describes: node pools expanded in order, then the
    named nodes, rearranged by ``nodeOrder`` when given; then each workload's
    ``members`` pods in the workloads' order, or in ``podOrder`` when given (the order
    the seeded shuffle starts from, and the nodes' order ties go by: with both, an
    imported openb study runs exactly what ``placement-study`` runs on the files).
    CPU and memory in the study's milli-cores and MiB."""
    study = spec.placement_study
    assert study is not None, "not a placement-study spec"
    shapes = [(pool, pool.count, pool.name) for pool in spec.cluster.node_pools]
    nodes = [
        StudyNode(
            name=f"{name}-{i}",
            cpu=round(shape.cpu * 1000),
            memory=round(shape.memory * 1024),
            gpus=shape.gpus,
            model=shape.gpu_model if shape.gpus else "",
        )
        for shape, count, name in shapes
        for i in range(count)
    ]
    nodes += [
        StudyNode(
            name=n.name,
            cpu=round(n.cpu * 1000),
            memory=round(n.memory * 1024),
            gpus=n.gpus,
            model=n.gpu_model if n.gpus else "",
        )
        for n in spec.cluster.nodes
    ]
    if study.node_order is not None:
        nodes = [nodes[i] for i in study.node_order]
    shapes_of = [
        StudyPod(
            cpu=round(wl.cpu * 1000),
            memory=round(wl.memory * 1024),
            gpus=1 if wl.gpu_milli is not None else wl.gpus,
            milli=wl.gpu_milli if wl.gpu_milli is not None else (MILLI if wl.gpus else 0),
            models=tuple(wl.gpu_models),
        )
        for wl in spec.workloads
    ]
    if study.pod_order is not None:
        pods = [shapes_of[i] for i in study.pod_order]
    else:
        pods = [
            pod
            for pod, wl in zip(shapes_of, spec.workloads, strict=True)
            for _ in range(wl.members)
        ]
    return Study(nodes=nodes, pods=pods, load_percent=study.arrived_load_percent, name=spec.name)


def run_variant_study(
    spec: ExperimentSpec,
    variant: str,
    replications: Sequence[int],
    *,
    each: Callable[[int, StudyRun], None] | None = None,
) -> list[StudyRun]:
    """The runs of one variant for the given replications, the study built once (a
    worker's chunk of seeds). ``each(replication, run)`` is called as each one ends, so
    a caller can store it and report progress before the chunk is done."""
    resolved = resolve_variant(spec, variant)
    study = study_of(resolved.spec)
    stream = resolved.spec.placement_study.random_stream if resolved.spec.placement_study else "go"
    runs = []
    for replication in replications:
        run = run_study(study, resolved.placement, study_seed(spec, replication), stream=stream)
        if each is not None:
            each(replication, run)
        runs.append(run)
    return runs


def study_record(run: StudyRun) -> dict[str, Any]:
    """One replication's result as it is stored and served: the allocation ratio (%) at
    every 1 % of arrived load (``load``, ``allocation``: two lists), the allocation at the
    asked load, and the pods that arrived and found no node."""
    curve = run.curve()
    at = int(run.load_percent)
    return {
        "policy": run.policy,
        "seed": run.seed,
        "pods": run.pods,
        "failed": run.failed,
        "capacityMilli": run.capacity_milli,
        "arrivedLoadPercent": run.load_percent,
        "allocationAtLoad": curve.get(at, round(run.final_allocation, 2)),
        "load": list(curve),
        "allocation": list(curve.values()),
    }


def study_summary(records: Sequence[Mapping[str, Any]]) -> dict[str, Any]:
    """Per variant, across its seeds: at every whole percent of arrived load the mean,
    min and max allocation ratio (the band the chart draws), and at the asked load the
    mean with its 95 % interval, min, max, the population SD and n (what the paper's
    table reports)."""
    by_load: dict[int, list[float]] = {}
    for record in records:
        for load, value in zip(record["load"], record["allocation"], strict=True):
            by_load.setdefault(int(load), []).append(float(value))
    loads = sorted(by_load)
    final = [float(r["allocationAtLoad"]) for r in records]
    mean, half = mean_interval(final) if final else (None, None)
    return {
        "load": loads,
        "mean": [round(statistics.fmean(by_load[k]), 3) for k in loads],
        "min": [min(by_load[k]) for k in loads],
        "max": [max(by_load[k]) for k in loads],
        "atLoad": {
            "load": records[0]["arrivedLoadPercent"] if records else None,
            "mean": None if mean is None else round(mean, 3),
            "ci95": None if half is None else round(half, 3),
            "min": min(final) if final else None,
            "max": max(final) if final else None,
            "sd": round(statistics.pstdev(final), 3) if len(final) > 1 else 0.0,
            "n": len(final),
        },
        "failed": sum(int(r["failed"]) for r in records),
    }


def paper_delta(summary: Mapping[str, Any], paper: Mapping[str, float] | None) -> float | None:
    """Ours minus the paper's mean allocation at the asked load, in percentage points
    (the ±0.5 pp of issue #18 §4), or None without a published point."""
    mean = summary["atLoad"]["mean"]
    if paper is None or mean is None:
        return None
    return round(float(mean) - paper["mean"], 3)


def policy_order(summaries: Mapping[str, Mapping[str, Any]]) -> list[str]:
    """Variants from the highest mean allocation at the asked load to the lowest: the
    order the paper's claim is about."""
    return sorted(summaries, key=lambda name: -(summaries[name]["atLoad"]["mean"] or 0.0))
