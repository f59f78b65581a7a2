"""Placement-study results pinned: the fast paths may not move a single allocation.

``PINNED`` was recorded with the code before the incremental selection and FGD's state
cache (commit 323d7b9): for every policy and two seeds, the pod count, the failures,
the final allocated milli, the allocation at 100 % arrived load and a digest of the
whole (arrived, allocated) record. A speed-up that changes any placement changes the
digest. The study is synthetic (openb-like node kinds and pod shapes, shares, whole
GPUs, CPU-only pods and GPU-model selectors) so the test needs no trace.
"""

from __future__ import annotations

import hashlib

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from scheduler_core.placement_study import (
    Study,
    StudyNode,
    StudyPod,
    StudyRun,
    _run,
    run_study,
)
from scheduler_core.plugins.gpu_scoring import POLICIES, make_policy


def pinned_study() -> Study:
    rng = np.random.default_rng(2023)
    kinds = [
        (96_000, 8, "G2"),
        (64_000, 2, "T4"),
        (96_000, 8, "V100M32"),
        (32_000, 1, "P100"),
        (96_000, 4, "A10"),
    ]
    nodes = []
    for i in range(80):
        cpu, gpus, model = kinds[int(rng.integers(len(kinds)))]
        nodes.append(StudyNode(f"node-{i:03d}", cpu, cpu * 4, gpus, model))
    shapes = []
    for _ in range(40):
        r = rng.random()
        if r < 0.4:
            cpu, milli = rng.choice([2000, 4000, 6000, 8000]), rng.choice([100, 200, 250, 300])
            shapes.append(StudyPod(int(cpu), 8000, 1, int(milli) + 200 * int(r < 0.2)))
        elif r < 0.85:
            cpu, gpus = rng.choice([4000, 8000, 16000, 32000]), rng.choice([1, 1, 2, 4, 8])
            shapes.append(StudyPod(int(cpu), 16000, int(gpus), 1000))
        else:
            shapes.append(StudyPod(int(rng.choice([1000, 4000, 16000])), 4000, 0, 0))
    shapes.append(StudyPod(4000, 8000, 1, 500, ("T4",)))
    shapes.append(StudyPod(8000, 8000, 1, 1000, ("G2", "V100M32")))
    weights = rng.random(len(shapes)) ** 3
    picks = rng.choice(len(shapes), size=600, p=weights / weights.sum())
    return Study(nodes=nodes, pods=[shapes[int(i)] for i in picks], name="pinned")


def fingerprint(run: StudyRun) -> tuple[int, int, int, float | None, str]:
    digest = hashlib.sha256(repr((run.arrived_milli, run.allocated_milli)).encode())
    return (
        run.pods,
        run.failed,
        run.allocated_milli[-1],
        run.curve().get(100),
        digest.hexdigest()[:16],
    )


PINNED = {
    ("Random", 1): (449, 39, 345600, 84.84, "6027d853e930b182"),
    ("Random", 2): (464, 36, 345050, 84.39, "a73683423fb42765"),
    ("DotProduct", 1): (449, 95, 366150, 97.41, "773629140a5a75f6"),
    ("DotProduct", 2): (464, 102, 367800, 96.82, "0cb178ea0868d0a9"),
    ("GpuClustering", 1): (449, 89, 363350, 97.55, "b54c24dbe702d4b4"),
    ("GpuClustering", 2): (464, 88, 369200, 97.36, "20096c8885546608"),
    ("GpuPacking", 1): (449, 92, 362950, 97.55, "34656f7e73f31621"),
    ("GpuPacking", 2): (464, 97, 369200, 97.36, "7595d6f7ceb2a658"),
    ("BestFit", 1): (449, 83, 368950, 97.55, "fb557cba4cae5222"),
    ("BestFit", 2): (464, 102, 367800, 96.82, "0cb178ea0868d0a9"),
    ("FGD", 1): (449, 84, 369250, 97.55, "03eda4404c30a125"),
    ("FGD", 2): (464, 97, 369300, 97.09, "3b8eca272dec6380"),
    ("MostAllocated", 1): (449, 82, 369450, 97.55, "0db89d999426a2d4"),
    ("MostAllocated", 2): (464, 98, 369300, 96.82, "d30402c3ad8df415"),
    ("LeastAllocated", 1): (449, 26, 290100, 63.36, "e6973da92d63b16a"),
    ("LeastAllocated", 2): (464, 23, 329550, 75.74, "c0c3e5aa639b3bf3"),
}


@pytest.fixture(scope="module")
def study() -> Study:
    return pinned_study()


def test_every_policy_is_pinned() -> None:
    assert {policy for policy, _ in PINNED} == set(POLICIES)


@pytest.mark.parametrize(("policy", "seed"), sorted(PINNED))
def test_allocation_record_is_unchanged(study: Study, policy: str, seed: int) -> None:
    assert fingerprint(run_study(study, policy, seed, stream="numpy")) == PINNED[(policy, seed)]


@pytest.mark.parametrize("policy", sorted(POLICIES))
def test_the_reference_path_gives_the_pinned_record_too(study: Study, policy: str) -> None:
    """Filter and Score over every node for every pod (no reuse of earlier scores)."""
    assert (
        fingerprint(_run(study, policy, 1, incremental=False, stream="numpy"))
        == PINNED[(policy, 1)]
    )


def test_random_and_best_fit_never_reuse_scores() -> None:
    """Random draws at each Score call and BestFit normalises over all scored nodes: a
    score kept from an earlier pod would be wrong for both."""
    per_node = {name for name in POLICIES if make_policy(name).per_node}
    assert per_node == set(POLICIES) - {"Random", "BestFit"}


pod_st = st.one_of(
    st.builds(
        StudyPod,
        st.integers(0, 24_000),
        st.integers(0, 20_000),
        st.just(1),
        st.sampled_from([100, 250, 300, 500, 600, 999]),
        st.sampled_from([(), (), ("T4",), ("G2", "T4")]),
    ),
    st.builds(
        StudyPod,
        st.integers(0, 24_000),
        st.integers(0, 20_000),
        st.sampled_from([1, 2, 4, 8]),
        st.just(1000),
    ),
    st.builds(StudyPod, st.integers(1, 24_000), st.integers(0, 20_000), st.just(0), st.just(0)),
)
node_st = st.builds(
    StudyNode,
    st.just("n"),
    st.sampled_from([16_000, 32_000, 96_000]),
    st.sampled_from([64_000, 400_000]),
    st.integers(1, 8),
    st.sampled_from(["G2", "T4", "V100"]),
)


@settings(max_examples=40, deadline=None)
@given(
    nodes=st.lists(node_st, min_size=2, max_size=12),
    pods=st.lists(pod_st, min_size=1, max_size=25),
    policy=st.sampled_from(sorted(POLICIES)),
    seed=st.integers(0, 2**16),
    load=st.sampled_from([60.0, 130.0, 250.0]),
)
def test_incremental_selection_places_every_pod_as_the_reference(
    nodes: list[StudyNode], pods: list[StudyPod], policy: str, seed: int, load: float
) -> None:
    """On random clusters and traces, the run that re-scores only the nodes bound since
    (and FGD's per-state cache) records exactly what the full Filter and Score records."""
    if not any(p.gpus for p in pods):
        pods = [*pods, StudyPod(1000, 1000, 1, 500)]
    named = [StudyNode(f"n{i}", n.cpu, n.memory, n.gpus, n.model) for i, n in enumerate(nodes)]
    study = Study(nodes=named, pods=pods, load_percent=load)
    fast = _run(study, policy, seed, incremental=True)
    reference = _run(study, policy, seed, incremental=False)
    assert fast == reference
