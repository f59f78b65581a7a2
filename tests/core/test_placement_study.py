"""The placement-study mode: per-device accounting, sampling, the allocation curve,
determinism per seed, and bad input naming the file, row and field."""

from __future__ import annotations

from pathlib import Path

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from scheduler_core.placement_study import (
    MILLI,
    DeviceCluster,
    Study,
    StudyInputError,
    StudyNode,
    StudyPod,
    StudyRun,
    allocation_curve,
    read_openb_nodes,
    read_openb_pods,
    run_study,
    sample_workload,
)
from scheduler_core.plugins.gpu_scoring import POLICIES, make_policy

NODES = [
    StudyNode("a", 32_000, 256_000, 8, "G2"),
    StudyNode("b", 16_000, 64_000, 2, "T4"),
    StudyNode("c", 8_000, 64_000, 1, "T4"),
]
PODS = [
    StudyPod(2000, 4000, 1, 300),
    StudyPod(4000, 8000, 1, 1000),
    StudyPod(1000, 1000, 1, 650),
    StudyPod(6000, 8000, 2, 1000),
    StudyPod(2000, 2000, 0, 0),
    StudyPod(1000, 1000, 1, 500, ("T4",)),
]


def small_study(load: float = 130.0) -> Study:
    return Study(nodes=list(NODES), pods=list(PODS), load_percent=load)


pod_st = st.one_of(
    st.builds(
        StudyPod,
        st.integers(0, 12_000),
        st.integers(0, 30_000),
        st.just(1),
        st.integers(1, 999),
        st.sampled_from([(), ("T4",), ("G2", "T4")]),
    ),
    st.builds(
        StudyPod,
        st.integers(0, 12_000),
        st.integers(0, 30_000),
        st.sampled_from([1, 2, 4]),
        st.just(1000),
    ),
    st.builds(StudyPod, st.integers(1, 12_000), st.integers(0, 30_000), st.just(0), st.just(0)),
)


@settings(max_examples=40, deadline=None)
@given(
    pods=st.lists(pod_st, min_size=1, max_size=60),
    policy=st.sampled_from(sorted(POLICIES)),
    seed=st.integers(0, 2**16),
)
def test_no_device_ever_holds_more_than_1000_milli(
    pods: list[StudyPod], policy: str, seed: int
) -> None:
    """A ledger of every bind, kept outside the cluster: each device's shares add up to at
    most 1,000, the cluster's free milli is exactly the ledger's complement, and a share
    never spans two devices."""
    cluster = DeviceCluster(NODES)
    rng = np.random.default_rng(seed)
    scorer = make_policy(policy)
    scorer.prepare(cluster, pods, rng)
    ledger = np.zeros_like(cluster.dev)
    for pod in pods:
        nodes = cluster.feasible(pod)
        if not len(nodes):
            continue
        node = int(nodes[np.argmax(scorer.score(cluster, pod, nodes))])
        devices = scorer.devices(cluster, pod, node)
        assert len(devices) == pod.gpus
        assert len(set(devices)) == pod.gpus
        cluster.bind(node, pod, devices)
        ledger[node, list(devices)] += pod.milli
        assert (ledger <= MILLI).all()
        assert ((MILLI * (np.arange(8) < cluster.gpus[:, None]) - ledger) == cluster.dev).all()
        assert (cluster.free == cluster.dev.sum(axis=1)).all()
        assert (cluster.cpu_left >= 0).all()
        assert (cluster.mem_left >= 0).all()
    assert cluster.used_milli == int(ledger.sum())


def test_filter_respects_cpu_memory_devices_and_gpu_model() -> None:
    cluster = DeviceCluster(NODES)
    assert cluster.feasible(StudyPod(1000, 0, 1, 500, ("T4",))).tolist() == [1, 2]
    assert cluster.feasible(StudyPod(1000, 0, 4, 1000)).tolist() == [0]
    assert cluster.feasible(StudyPod(20_000, 0, 1, 100)).tolist() == [0]
    assert cluster.feasible(StudyPod(1000, 100_000, 0, 0)).tolist() == [0]
    cluster.bind(2, StudyPod(1000, 0, 1, 600), (0,))
    assert cluster.feasible(StudyPod(1000, 0, 1, 500, ("T4",))).tolist() == [1]
    assert cluster.feasible(StudyPod(1000, 0, 1, 400, ("T4",))).tolist() == [1, 2]


def test_a_bind_that_overfills_a_device_is_refused() -> None:
    cluster = DeviceCluster(NODES)
    cluster.bind(2, StudyPod(0, 0, 1, 700), (0,))
    with pytest.raises(AssertionError, match="cannot take 400m"):
        cluster.bind(2, StudyPod(0, 0, 1, 400), (0,))


def test_sampling_tops_up_to_the_load_without_exceeding_it() -> None:
    pods = [StudyPod(1000, 0, 1, 500)] * 4
    arriving = sample_workload(pods, 4 * MILLI, 130.0, np.random.default_rng(1))
    assert sum(p.total_milli for p in arriving) == 5000  # 130 % of 4 GPUs is 5,200m
    thinned = sample_workload(
        [StudyPod(1000, 0, 1, 1000)] * 10, 4 * MILLI, 50.0, np.random.default_rng(1)
    )
    assert len(thinned) == 2


def test_the_trace_arrives_shuffled_before_the_extra_draws() -> None:
    pods = [StudyPod(1000 + i, 0, 1, 100) for i in range(20)]
    arriving = sample_workload(pods, 10 * MILLI, 100.0, np.random.default_rng(3))
    assert sorted(arriving[:20], key=lambda p: p.cpu) == pods
    assert arriving[:20] != pods
    assert len(arriving) == 100


def test_allocation_curve_averages_the_records_of_each_percent() -> None:
    arrived = [0, 500, 1000, 1500, 2000]
    allocated = [0, 500, 1000, 1000, 1500]
    # capacity 2000: arrived 0, 25, 50, 75, 100 %; every whole percent between borrows
    # from its neighbours (k-1..k+1) or is left out.
    curve = allocation_curve(arrived, allocated, 2000, 100)
    assert curve[0] == 0.0
    assert curve[25] == 25.0
    assert curve[75] == 50.0
    assert curve[100] == 75.0
    assert curve[26] == 25.0
    assert 40 not in curve


def test_same_seed_same_run_and_another_seed_another_one() -> None:
    study = small_study()
    for policy in POLICIES:
        first, again = run_study(study, policy, 7), run_study(study, policy, 7)
        assert first == again, policy
    runs = {run_study(study, "Random", seed).arrived_milli for seed in range(6)}
    assert len(runs) > 1


def test_the_run_records_every_arrival_and_counts_failures() -> None:
    run = run_study(small_study(), "FGD", 1)
    assert len(run.arrived_milli) == run.pods + 1 == len(run.allocated_milli)
    assert run.arrived_milli[-1] <= 1.3 * run.capacity_milli
    assert all(a <= b for a, b in zip(run.allocated_milli, run.arrived_milli, strict=True))
    assert 0 <= run.failed <= run.pods
    assert run.final_allocation == 100.0 * run.allocated_milli[-1] / 11_000


# ------------------------------------------------------------------------------- input

NODE_CSV = "sn,cpu_milli,memory_mib,gpu,model\nn1,96000,393216,8,G2\nn2,64000,262144,0,\n"
POD_CSV = (
    "name,cpu_milli,memory_mib,num_gpu,gpu_milli,gpu_spec\n"
    "p1,6000,12288,1,460,\np2,8000,100,2,1000,V100M16|V100M32\np3,1000,10,0,0,\n"
)


def test_the_openb_reader_keeps_fractional_gpus_and_model_lists() -> None:
    assert read_openb_nodes(NODE_CSV) == [
        StudyNode("n1", 96000, 393216, 8, "G2"),
        StudyNode("n2", 64000, 262144, 0, ""),
    ]
    pods = read_openb_pods(POD_CSV)
    assert pods[0] == StudyPod(6000, 12288, 1, 460)
    assert pods[0].shared
    assert pods[1].models == ("V100M16", "V100M32")
    assert pods[1].total_milli == 2000
    assert pods[2].gpus == 0
    assert pods[2].milli == 0


@pytest.mark.parametrize(
    ("text", "message"),
    [
        ("name,cpu_milli,memory_mib,num_gpu\np,1,1,1\n", r"pods: missing column\(s\) gpu_milli"),
        (
            "name,cpu_milli,memory_mib,num_gpu,gpu_milli\np,abc,1,1,500\n",
            "pods: row 2: cpu_milli: 'abc' is not a number",
        ),
        (
            "name,cpu_milli,memory_mib,num_gpu,gpu_milli\np,1,1,9,1000\n",
            r"pods: row 2: num_gpu: 9 is not a whole number in \[0, 8\]",
        ),
        (
            "name,cpu_milli,memory_mib,num_gpu,gpu_milli\np,1,1,2,500\n",
            "pods: row 2: gpu_milli: a share \\(500\\) of more than one GPU",
        ),
        (
            "name,cpu_milli,memory_mib,num_gpu,gpu_milli\np,1,1,1,0\n",
            "pods: row 2: gpu_milli: 0 with num_gpu 1",
        ),
        (
            "name,cpu_milli,memory_mib,num_gpu,gpu_milli\np,1.5,1,1,500\n",
            "pods: row 2: cpu_milli: 1.5 is not a whole number",
        ),
    ],
    ids=[
        "missing-column",
        "not-a-number",
        "too-many-gpus",
        "multi-gpu-share",
        "zero-share",
        "fraction",
    ],
)
def test_bad_pod_rows_name_the_row_and_field(text: str, message: str) -> None:
    with pytest.raises(StudyInputError, match=message):
        read_openb_pods(text)


@pytest.mark.parametrize(
    ("change", "message"),
    [
        ({"nodes": []}, "nodes: the node list is empty"),
        ({"pods": []}, "pods: the pod list is empty"),
        ({"nodes": [StudyNode("x", 1000, 1000, 0, "")]}, "nodes: no node has a GPU"),
        ({"pods": [StudyPod(1000, 0, 0, 0)]}, "pods: no pod requests a GPU"),
        ({"load_percent": 0}, r"load_percent: must be in \(0, 400\]"),
        ({"load_percent": 401}, r"load_percent: must be in \(0, 400\]"),
    ],
    ids=["no-nodes", "no-pods", "no-gpus", "no-gpu-pods", "zero-load", "huge-load"],
)
def test_a_study_that_cannot_measure_anything_is_refused(
    change: dict[str, object], message: str
) -> None:
    fields: dict[str, object] = {"nodes": list(NODES), "pods": list(PODS), "load_percent": 130.0}
    fields.update(change)
    with pytest.raises(StudyInputError, match=message):
        Study(**fields)  # type: ignore[arg-type]


TRACE = next(
    (
        p / "shared" / "traces" / "alibaba-gpu-v2023"
        for p in Path(__file__).parents
        if (p / "shared" / "traces").is_dir()
    ),
    Path("/nonexistent"),
)


def test_the_curve_reads_the_records_after_each_arrival_only() -> None:
    """The simulator logs one record per arriving pod and none before the first, so the
    starting (0, 0) does not count: here the two records at 0 % average 0.15, not 0.1."""
    run = StudyRun(
        policy="BestFit",
        seed=1,
        load_percent=2,
        capacity_milli=100_000,
        arrived_milli=(0, 100, 300, 1_000, 2_000),
        allocated_milli=(0, 100, 200, 1_000, 1_500),
        pods=4,
        failed=1,
    )
    assert run.curve() == {0: 0.15, 1: 1.0, 2: 1.5}


SIMULATOR_SEED_42 = {
    "DotProduct": (90.34, 90.54),
    "GpuClustering": (91.33, 91.53),
    "GpuPacking": (91.37, 91.57),
    "BestFit": (92.94, 93.13),
    "FGD": (95.14, 95.29),
}
"""The FGD simulator's own run of openb ``default`` with seed 42: allocation (%) at 100 %
and 130 % arrived load, from hkust-adsl/kubernetes-scheduler-simulator
experiments/analysis/expected_results/analysis_allo_discrete.csv (commit 8f3d641)."""


@pytest.mark.slow
def test_openb_default_seed_42_is_the_simulators_run() -> None:
    """With the Go stream a seed's run is the simulator's run for that seed (skipped
    without ../shared/traces): the same sample, the same tie order, so the same curve for
    every policy that draws nothing while placing. This is the end-to-end check of the
    Go shuffle, Intn and Perm and of the order of the simulator's draws
    (``simulator_stream``). Random also draws per pod, in goroutine order in the
    simulator, so only its distribution is the simulator's."""
    from scheduler_core.placement_study import load_openb_study

    if not (TRACE / "openb_pod_list_default.csv").exists():
        pytest.skip("openb trace not available (see shared/traces/README.md)")
    study = load_openb_study(
        TRACE / "openb_node_list_gpu_node.csv", TRACE / "openb_pod_list_default.csv"
    )
    for policy, expected in SIMULATOR_SEED_42.items():
        curve = run_study(study, policy, 42).curve()
        assert (curve[100], curve[130]) == expected, policy
    rand = run_study(study, "Random", 42)
    assert rand.pods == 10866
    assert 86.5 < rand.curve()[130] < 88.5
    numpy_run = run_study(study, "FGD", 42, stream="numpy")
    assert (numpy_run.pods, numpy_run.curve()[130]) == (10825, 95.49)


# --------------------------------------------------------------------------------- CLI


def _files(tmp_path: Path) -> tuple[str, str]:
    nodes, pods = tmp_path / "nodes.csv", tmp_path / "pods.csv"
    nodes.write_text(NODE_CSV)
    pods.write_text(POD_CSV)
    return str(nodes), str(pods)


def test_cli_prints_the_mean_allocation_per_policy(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    from scheduler_core.cli import main

    nodes, pods = _files(tmp_path)
    args = [
        "placement-study",
        "--nodes",
        nodes,
        "--pods",
        pods,
        "--policy",
        "FGD,Random",
        "--seeds",
        "1-3",
    ]
    assert main(args) == 0
    lines = capsys.readouterr().out.splitlines()
    assert lines[0] == "GPU allocation ratio (%) at 130 % arrived load"
    assert [line.split("\t")[0] for line in lines[2:]] == ["FGD", "Random"]
    assert all(len(line.split("\t")[3].split()) == 3 for line in lines[2:])


def test_cli_json_has_every_runs_curve(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    import json

    from scheduler_core.cli import main

    nodes, pods = _files(tmp_path)
    assert (
        main(["placement-study", "--nodes", nodes, "--pods", pods, "--policy", "BestFit", "--json"])
        == 0
    )
    (run,) = json.loads(capsys.readouterr().out)["runs"]
    assert run["policy"] == "BestFit"
    assert run["seed"] == 42
    assert run["curve"]["0"] == 0.0


@pytest.mark.parametrize(
    ("extra", "message"),
    [
        (["--policy", "Tetris"], "error: policy: unknown placement policy 'Tetris'"),
        (["--seeds", "a-b"], "error: --seeds: 'a-b' is not 42, 42,43 or 42-51"),
        (["--seeds", "1-500"], "error: --seeds: give 1 to 100 seeds"),
        (["--load", "0"], "error: load_percent: must be in (0, 400]"),
    ],
    ids=["policy", "seeds", "too-many-seeds", "load"],
)
def test_cli_bad_input_is_one_line_and_status_2(
    tmp_path: Path, capsys: pytest.CaptureFixture[str], extra: list[str], message: str
) -> None:
    from scheduler_core.cli import main

    nodes, pods = _files(tmp_path)
    assert main(["placement-study", "--nodes", nodes, "--pods", pods, *extra]) == 2
    err = capsys.readouterr().err
    assert err.startswith(message)
    assert err.count("\n") == 1


# ----------------------------------------------------------------------- the Go stream


def test_the_go_stream_draws_in_the_simulators_order() -> None:
    """``simulator_stream`` (pkg/simulator/core.go ``Simulate`` and simulator.go): Seed,
    one ``rand.Int()`` spent in a log argument, ``Shuffle`` of the pods, the tuning
    draws, the informers' draws, then ``Perm`` of the nodes for the tie order."""
    from scheduler_core.gorand import GoRand
    from scheduler_core.placement_study import INFORMER_DRAWS, simulator_stream

    pods = [StudyPod(1000, 0, 1, 1000), StudyPod(1000, 0, 1, 500), StudyPod(0, 0, 0, 0)]
    study = Study(nodes=NODES, pods=pods, load_percent=10)  # target 1,100 milli: tune down
    arriving, rank = simulator_stream(study, 5)
    go = GoRand(5)
    go.int_()
    order = list(pods)
    go.shuffle(order)
    total = 1500
    while total > 1100:
        total -= order.pop(go.intn(len(order))).total_milli
    for _ in range(INFORMER_DRAWS):
        go.float64()
    assert arriving == order
    assert rank.tolist() == go.perm(len(NODES))
    assert sum(p.total_milli for p in arriving) <= 1100


def test_the_go_stream_tunes_up_with_the_per_device_milli_as_the_simulator() -> None:
    """``tuneUpPods`` stops when the total plus the pod's ``MilliGpu`` (per device, not
    times its GPU count) would pass the target: an 8-GPU pod passes that test at 8,000
    of 10,800 milli and the load ends above the target. The numpy stream's sampling
    never passes the target."""
    from scheduler_core.placement_study import simulator_stream

    nodes = [StudyNode(f"n{i}", 96_000, 10**6, 8, "G2") for i in range(2)]
    study = Study(nodes=nodes, pods=[StudyPod(1000, 0, 8, 1000)], load_percent=67.5)
    arriving, _ = simulator_stream(study, 42)
    assert sum(p.total_milli for p in arriving) == 16_000 > 10_800
    run = run_study(study, "BestFit", 42)
    assert run.arrived_milli[-1] == 16_000
    assert run_study(study, "BestFit", 42, stream="numpy").arrived_milli[-1] == 8_000


def test_an_unknown_stream_is_refused() -> None:
    with pytest.raises(StudyInputError, match="stream: 'mt' is not one of go, numpy"):
        run_study(small_study(), "FGD", 1, stream="mt")
