"""Placement-study policies: the simulator's formulas on hand-made nodes, and the numpy
policies against the plain-Python transliteration (``gpu_scoring.reference``) of the Go
code in hkust-adsl/kubernetes-scheduler-simulator (``pkg/simulator/plugin/*_score.go``)."""

from __future__ import annotations

import math

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from scheduler_core.placement_study import DeviceCluster, StudyInputError, StudyNode, StudyPod
from scheduler_core.plugins.gpu_scoring import POLICIES, make_policy, reference
from scheduler_core.plugins.gpu_scoring.best_fit import normalize
from scheduler_core.plugins.gpu_scoring.fgd import FGDScore, TypicalPod, typical_pods


def cluster_of(*nodes: tuple[int, list[int]], model: str = "G2") -> DeviceCluster:
    """Nodes given as (free CPU, free milli per device); capacity is 96 cores."""
    cluster = DeviceCluster(
        [StudyNode(f"n{i}", 96_000, 10**6, len(devs), model) for i, (_, devs) in enumerate(nodes)]
    )
    for i, (cpu, devs) in enumerate(nodes):
        cluster.cpu_left[i] = cpu
        cluster.dev[i, : len(devs)] = devs
        cluster.free[i] = sum(devs)
        cluster.largest[i] = max(devs, default=0)
        cluster.idle[i] = sum(d == 1000 for d in devs)
    return cluster


def scores(policy: str, cluster: DeviceCluster, pod: StudyPod) -> list[int]:
    scorer = make_policy(policy)
    scorer.prepare(cluster, [pod], np.random.default_rng(0))
    return scorer.score(cluster, pod, np.arange(len(cluster))).tolist()


SHARE = StudyPod(cpu=8_000, memory=0, gpus=1, milli=300)
WHOLE = StudyPod(cpu=8_000, memory=0, gpus=1, milli=1000)


def test_dot_product_is_one_minus_half_the_normalised_product() -> None:
    # (64/128 * 8/128 + 2/8 * 1/8) / 2 = 0.03125 -> int(100 * 0.96875)
    assert scores("DotProduct", cluster_of((64_000, [1000, 1000])), WHOLE) == [96]


def test_dot_product_prefers_the_fuller_node() -> None:
    fuller, emptier = scores(
        "DotProduct", cluster_of((16_000, [1000]), (96_000, [1000] * 8)), WHOLE
    )
    assert fuller > emptier


@pytest.mark.parametrize(
    ("devices", "bound", "pod", "expected"),
    [
        ([1000] * 8, {}, SHARE, 25),  # idle node: (25, 50] band, nothing used
        ([700, 1000, 1000, 1000, 1000, 1000, 1000, 1000], {0: 1}, SHARE, 75),  # 25*300//8000 = 0
        ([400] + [1000] * 7, {0: 2}, SHARE, 76),  # only shares: 75 + 25*600//8000 (= 1)
        ([400] + [0] + [1000] * 6, {0: 2, 1: 1}, SHARE, 55),  # among others: 50 + 25*1600//8000
        ([0, 0] + [1000] * 6, {2: 1}, SHARE, 6),  # only other kinds: 25*2000//8000
        ([1000] * 8, {}, StudyPod(1000, 0, 0, 0), 0),  # CPU-only pods: 0 everywhere
    ],
    ids=["idle", "one-share", "only-shares", "mixed", "other-kinds", "cpu-pod"],
)
def test_gpu_clustering_bands(
    devices: list[int], bound: dict[int, int], pod: StudyPod, expected: int
) -> None:
    cluster = cluster_of((96_000, devices))
    for kind, count in bound.items():
        cluster.affinity[0, kind] = count
    assert scores("GpuClustering", cluster, pod) == [expected]


@pytest.mark.parametrize(
    ("devices", "pod", "expected"),
    [
        ([1000, 400, 1000, 1000], SHARE, 96),  # case 1: 100 - (400*100/1000)/10
        ([1000, 200], SHARE, 49),  # case 2: the share needs a free GPU on a used node
        ([1000] * 8, SHARE, 25),  # case 3: max(33 - 8, 8)
        ([1000, 1000], SHARE, 31),  # case 3: 33 - 2
        ([0, 1000, 1000, 1000], StudyPod(1000, 0, 2, 1000), 48),  # case 2: 50 - 2
        ([1000, 1000], StudyPod(1000, 0, 0, 0), 0),  # CPU-only: 0
    ],
    ids=["shared-gpu", "free-gpu-used-node", "idle-8", "idle-2", "two-gpus", "cpu-pod"],
)
def test_gpu_packing_cases(devices: list[int], pod: StudyPod, expected: int) -> None:
    assert scores("GpuPacking", cluster_of((96_000, devices)), pod) == [expected]


def test_best_fit_is_normalised_min_max_over_the_scored_nodes() -> None:
    cluster = cluster_of((96_000, [1000] * 8), (16_000, [1000]), (40_000, [1000, 1000]))
    raw = [
        reference.best_fit(reference.RefNode(c, d), WHOLE)
        for c, d in [(96_000, [1000] * 8), (16_000, [1000]), (40_000, [1000, 1000])]
    ]
    # 1 - (88/128 + 7/8) / 2 = 0.21875; 1 - 8/128 / 2 = 0.96875; 1 - (32/128 + 1/8) / 2
    assert raw == [21, 96, 81]
    assert scores("BestFit", cluster, WHOLE) == [0, 100, (81 - 21) * 100 // (96 - 21)]
    assert normalize(np.array([5, 5])).tolist() == [0, 0]


def test_most_and_least_allocated_score_gpu_milli_after_placement() -> None:
    cluster = cluster_of((96_000, [400, 1000]), (96_000, [1000] * 4))
    assert scores("MostAllocated", cluster, SHARE) == [(600 + 300) * 100 // 2000, 300 * 100 // 4000]
    assert scores("LeastAllocated", cluster, SHARE) == [100 - 45, 100 - 7]


def fgd_scores(cluster: DeviceCluster, pod: StudyPod, typical: list[TypicalPod]) -> list[int]:
    scorer = FGDScore()
    workload = [
        StudyPod(t.cpu, 0, t.gpus, t.milli, tuple(t.models.split("|")) if t.models else ())
        for t in typical
    ]
    scorer.prepare(cluster, workload, np.random.default_rng(0))
    return scorer.score(cluster, pod, np.arange(len(cluster))).tolist()


def test_fgd_is_the_sigmoid_of_the_fragmentation_drop() -> None:
    # One typical pod: 1 core, half a GPU. Node 0 keeps a usable 700m (no change: 50);
    # node 1 is left with 300m the typical pod cannot use (-300: int(100 sigmoid(-0.3))).
    typical = [TypicalPod(1000, 500, 1, "", 1.0)]
    cluster = cluster_of((96_000, [1000]), (96_000, [600]))
    assert fgd_scores(cluster, SHARE, typical) == [50, int(100 / (1 + math.exp(0.3)))]


def test_fgd_rewards_filling_a_device_nobody_else_could_use() -> None:
    # 300m left on a device is a fragment for a 500m pod; a 300m share removes it.
    typical = [TypicalPod(1000, 500, 1, "", 1.0)]
    cluster = cluster_of((96_000, [300, 1000]))
    assert fgd_scores(cluster, SHARE, typical) == [int(100 / (1 + math.exp(-0.3)))]
    scorer = FGDScore()
    scorer.prepare(cluster, [StudyPod(1000, 0, 1, 500)], np.random.default_rng(0))
    assert scorer.devices(cluster, SHARE, 0) == (0,)


def test_fgd_counts_all_free_gpu_as_fragment_for_cpu_pods_and_other_models() -> None:
    typical = [TypicalPod(1000, 0, 0, "", 0.5), TypicalPod(1000, 1000, 1, "T4", 0.5)]
    node = reference.RefNode(8_000, [1000, 1000], "G2")
    assert reference.frag_amount(node, typical) == 2000.0
    assert fgd_scores(cluster_of((8_000, [1000, 1000])), WHOLE, typical) == [
        int(100 / (1 + math.exp(-1.0)))  # 1000m less free GPU, all of it was fragment
    ]


def test_typical_pods_cover_95_percent_by_decreasing_count() -> None:
    big, small = StudyPod(4000, 0, 1, 1000), StudyPod(2000, 0, 1, 500)
    workload = [big] * 60 + [small] * 36 + [StudyPod(1000, 0, 0, 0)] * 4
    chosen = typical_pods(workload)
    assert [(t.cpu, t.milli, t.frequency) for t in chosen] == [
        (4000, 1000, 60 / 96),
        (2000, 500, 36 / 96),
    ]


def test_typical_pod_ties_go_to_the_larger_shape_first() -> None:
    workload = [StudyPod(2000, 0, 1, 500), StudyPod(4000, 0, 1, 500)]
    assert [t.cpu for t in typical_pods(workload, popularity=0.5)] == [4000]


def test_unknown_policy_names_the_field() -> None:
    with pytest.raises(StudyInputError, match="policy: unknown placement policy 'Tetris'"):
        make_policy("Tetris")


# --------------------------------------------------------------------- numpy vs reference

devices_st = st.lists(st.integers(0, 1000), min_size=1, max_size=8)
node_st = st.tuples(st.integers(0, 96_000), devices_st, st.sampled_from(["G2", "T4"]))
pod_st = st.one_of(
    st.builds(StudyPod, st.integers(0, 32_000), st.just(0), st.just(1), st.integers(1, 999)),
    st.builds(
        StudyPod, st.integers(0, 32_000), st.just(0), st.sampled_from([1, 2, 4, 8]), st.just(1000)
    ),
    st.builds(StudyPod, st.integers(0, 32_000), st.just(0), st.just(0), st.just(0)),
)


def _cluster(nodes: list[tuple[int, list[int], str]]) -> DeviceCluster:
    cluster = DeviceCluster(
        [StudyNode(f"n{i}", 96_000, 10**6, len(d), m) for i, (_, d, m) in enumerate(nodes)]
    )
    for i, (cpu, devs, _) in enumerate(nodes):
        cluster.cpu_left[i] = cpu
        cluster.dev[i, : len(devs)] = devs
        cluster.free[i], cluster.largest[i] = sum(devs), max(devs)
        cluster.idle[i] = sum(d == 1000 for d in devs)
    return cluster


@settings(max_examples=60, deadline=None)
@given(
    nodes=st.lists(node_st, min_size=1, max_size=6),
    pod=pod_st,
    workload=st.lists(pod_st, min_size=1, max_size=12),
)
def test_numpy_policies_match_the_reference(
    nodes: list[tuple[int, list[int], str]], pod: StudyPod, workload: list[StudyPod]
) -> None:
    cluster = _cluster(nodes)
    feasible = cluster.feasible(pod)
    if not len(feasible):
        return
    refs = [reference.RefNode(c, d, m) for c, d, m in nodes]
    typical = typical_pods(workload)
    expected = {
        "DotProduct": reference.dot_product,
        "GpuClustering": reference.gpu_clustering,
        "GpuPacking": reference.gpu_packing,
        "FGD": lambda node, p: reference.fgd(node, p, typical)[0],
    }
    for name, formula in expected.items():
        scorer = make_policy(name)
        scorer.prepare(cluster, workload, np.random.default_rng(0))
        got = scorer.score(cluster, pod, feasible).tolist()
        assert got == [formula(refs[i], pod) for i in feasible], name
    best_fit = make_policy("BestFit").score(cluster, pod, feasible).tolist()
    assert (
        best_fit
        == normalize(np.array([reference.best_fit(refs[i], pod) for i in feasible])).tolist()
    )


@settings(max_examples=25, deadline=None)
@given(
    nodes=st.lists(node_st, min_size=40, max_size=48),
    pod=pod_st,
    workload=st.lists(pod_st, min_size=1, max_size=8),
)
def test_fgd_large_batches_score_per_distinct_state_exactly(
    nodes: list[tuple[int, list[int], str]], pod: StudyPod, workload: list[StudyPod]
) -> None:
    cluster = _cluster(nodes)
    scorer = FGDScore()
    scorer.prepare(cluster, workload, np.random.default_rng(0))
    everything = np.arange(len(cluster))
    batched = scorer.node_scores(cluster, pod, everything)
    one_by_one = np.vstack([scorer.node_scores(cluster, pod, np.array([i])) for i in everything])
    assert batched.tolist() == one_by_one.tolist()


def test_every_registered_policy_scores_integers_in_range() -> None:
    cluster = cluster_of((96_000, [1000] * 8), (10_000, [300, 1000]), (50_000, [0, 700]))
    for name in POLICIES:
        got = scores(name, cluster, SHARE)
        assert all(isinstance(s, int) and 0 <= s <= 100 for s in got), name
