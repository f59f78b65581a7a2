"""Shared GPUs (#18 §1): devices tracked one by one, shares, MIG, and preemption on them.

The preemption rules are kubernetes-preemption.md §4.3 (SelectVictimsOnNode: remove every
lower-priority pod, then reprieve) with the fit checked per device (docs/shared-gpus.md).
"""

from __future__ import annotations

from typing import Any

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

import scheduler_core as sc
from scheduler_core import devices
from scheduler_core import events as ev
from scheduler_core.cluster import Cluster
from scheduler_core.decisions import DEVICES_SPLIT, SHARES_SPLIT
from scheduler_core.k8s import read_manifest_texts
from scheduler_core.k8s.export import export_manifests
from scheduler_core.k8s.roundtrip import normalised
from scheduler_core.model import Pod, Workload
from scheduler_core.plugins.default_preemption import DefaultPreemption

CLASSES = [
    {"name": "low", "value": 10, "globalDefault": True},
    {"name": "high", "value": 1000},
    {"name": "system", "value": 5000, "preemptionPolicy": "Never"},
]


def spec_of(nodes: list[dict[str, Any]], workloads: list[dict[str, Any]], **extra: Any) -> Any:
    return sc.parse_spec(
        {
            "horizonSeconds": 600,
            "cluster": {"nodes": nodes},
            "priorityClasses": CLASSES,
            "workloads": workloads,
            **extra,
        }
    )


def scheduled(result: Any, pod: str) -> list[Any]:
    return [e for e in result.events if e.reason == ev.SCHEDULED and e.pod == pod]


def preempted(result: Any) -> list[str]:
    return sorted(e.pod for e in result.events if e.reason == ev.PREEMPTED)


# ----------------------------------------------------------------------- accounting
REQUESTS = st.lists(
    st.tuples(st.sampled_from(["whole", "share"]), st.integers(1, 999), st.integers(0, 3)),
    min_size=1,
    max_size=40,
)


@settings(max_examples=60, deadline=None)
@given(REQUESTS, st.randoms(use_true_random=False))
def test_no_device_ever_holds_more_than_1000_milli_and_release_gives_back_the_share(
    requests: list[tuple[str, int, int]], rnd: Any
) -> None:
    """Random binds and releases of whole-GPU and shared pods on one 4-GPU node: every
    device stays within [0, 1000] free, free_gpus counts the empty devices, and a pod that
    leaves frees exactly its share on its own device."""
    workloads = [{"name": "w-share", "gpuMilli": 500}, {"name": "w-whole", "gpus": 1}]
    spec = spec_of([{"name": "n", "gpus": 4}], workloads)
    cluster = Cluster(spec, [0])
    node = cluster.nodes[0]
    shared = Workload(0, spec.workloads[0], 0, "", False)
    whole = Workload(1, spec.workloads[1], 0, "", False)
    bound: list[Pod] = []
    for seq, (kind, milli, gpus) in enumerate(requests):
        pod = Pod(seq, f"p{seq}", shared if kind == "share" else whole, 0, 0.0)
        pod.milli, pod.gpus = (milli, 0) if kind == "share" else (0, gpus)
        if cluster.holds(pod, node):
            cluster.assign(pod, node)
            bound.append(pod)
        elif bound:
            leaving = bound.pop(rnd.randrange(len(bound)))
            before = list(node.dev_free or [])
            held = leaving.devices
            cluster.release(leaving)
            after = node.dev_free or []
            freed = [a - b for a, b in zip(after, before, strict=True)]
            expected = [0] * 4
            for i in held:
                expected[i] = leaving.milli or devices.FULL
            assert freed == expected
        assert node.dev_free is not None
        assert all(0 <= left <= devices.FULL for left in node.dev_free)
        assert node.free_gpus == sum(1 for left in node.dev_free if left == devices.FULL)
        used = [0] * 4
        for p in bound:
            for i in p.devices:
                used[i] += p.milli or devices.FULL
        assert [devices.FULL - u for u in used] == node.dev_free


@settings(max_examples=25, deadline=None)
@given(
    st.lists(st.integers(100, 900), min_size=2, max_size=8),
    st.integers(100, 999),
    st.integers(0, 10),
)
def test_a_victim_frees_exactly_its_share_in_a_run(
    shares: list[int], urgent: int, seed: int
) -> None:
    """Low-priority shares fill a 2-GPU node; a high-priority share preempts. Every
    eviction frees exactly the victim's share (the RELEASED value is it), no device goes
    over 1,000 on the way (the engine asserts it), and the preemptor binds once the
    victims are gone when it was nominated."""
    workloads = [
        {"name": f"low-{i}", "gpuMilli": m, "arrival": i, "controller": {"kind": "none"}}
        for i, m in enumerate(shares)
    ]
    workloads.append(
        {"name": "urgent", "gpuMilli": urgent, "arrival": 50, "priorityClassName": "high"}
    )
    spec = spec_of([{"name": "n", "gpus": 2}], workloads, seed=seed)
    result = sc.simulate(spec, "default")
    milli = {f"low-{i}-0": m / 1000 for i, m in enumerate(shares)}
    for e in result.events:
        if e.reason == ev.RELEASED and e.pod in milli:
            assert e.value == pytest.approx(milli[e.pod])
    if preempted(result):
        assert scheduled(result, "urgent-0")


# ----------------------------------------------------------------------- preemption
def test_a_whole_gpu_preemptor_takes_the_shares_of_one_device_only() -> None:
    """§4.3 per device: a-0 and b-0 share device 0, a-1 and b-1 device 1; the reprieve keeps
    the older pods first (a-0, then b-0 still leaves device 1 empty), so the victims are
    the two pods of device 1."""
    workloads = [
        {"name": "a", "gpuMilli": 600, "members": 2, "controller": {"kind": "none"}},
        {"name": "b", "gpuMilli": 300, "members": 2, "arrival": 1, "controller": {"kind": "none"}},
        {"name": "u", "gpus": 1, "arrival": 10, "priorityClassName": "high", "urgent": True},
    ]
    result = sc.simulate(spec_of([{"name": "n", "gpus": 2}], workloads), "default")
    assert preempted(result) == ["a-1", "b-1"]
    assert scheduled(result, "u-0")


def test_mig_preemption_frees_the_profile_the_preemptor_asks_for() -> None:
    """A 3g.40gb preemptor evicts the low-priority 3g.40gb pod, not the 1g.10gb ones:
    MIG instances are counted per profile."""
    node = {"name": "n", "gpus": 0, "mig": {"1g.10gb": 2, "3g.40gb": 1}}
    workloads = [
        {"name": "small", "mig": {"1g.10gb": 1}, "members": 2, "controller": {"kind": "none"}},
        {"name": "big", "mig": {"3g.40gb": 1}, "arrival": 1, "controller": {"kind": "none"}},
        {
            "name": "u",
            "mig": {"3g.40gb": 1},
            "arrival": 10,
            "priorityClassName": "high",
            "urgent": True,
        },
    ]
    result = sc.simulate(spec_of([node], workloads), "default")
    assert preempted(result) == ["big-0"]
    assert scheduled(result, "u-0")[0].time > 10


def test_a_mig_profile_no_node_offers_is_refused() -> None:
    """A profile no node offers: refused when the spec is read, naming the request."""
    with pytest.raises(sc.SpecError, match=r"1 MIG 7g\.80gb"):
        spec_of([{"name": "n", "mig": {"1g.10gb": 7}}], [{"name": "x", "mig": {"7g.80gb": 1}}])


def test_gpu_models_act_as_a_node_selector() -> None:
    nodes = [
        {"name": "v100", "gpus": 1, "gpuModel": "V100M16"},
        {"name": "a100", "gpus": 1, "gpuModel": "A100"},
    ]
    workloads = [{"name": "x", "gpuMilli": 300, "gpuModels": ["A100", "T4"]}]
    result = sc.simulate(spec_of(nodes, workloads), "default")
    assert [e.node for e in scheduled(result, "x-0")] == ["a100"]


def test_the_preset_shows_a_1_gpu_pod_with_no_victim_set_despite_free_shares() -> None:
    """s16: 1,600 milli-GPU free (3,200 with every batch shard gone), no device whole."""
    spec = sc.get_preset("s16-shared-gpus").spec()
    one = sc.simulate(spec, "one-gpu")
    assert scheduled(one, "notebook-0") == []
    assert preempted(one) == []
    assert one.summary["preemption_not_helpful"] > 0
    assert DEVICES_SPLIT in one.diagnosis
    failure = next(e for e in one.events if e.reason == ev.FAILED_SCHEDULING)
    assert SHARES_SPLIT in failure.message
    share = sc.simulate(spec, "share-of-400")
    assert [e.time for e in scheduled(share, "notebook-0")] == [100.0]
    assert one.summary["gpu_fragmentation"] > share.summary["gpu_fragmentation"] > 0


def test_fragmentation_is_the_fgd_measure_worked_by_hand() -> None:
    """FGD §3.2 on s16 after t=10: free 400 on four devices (1,600 milli). Serving (8/17)
    fits no device: all 1,600 count; batch (8/17) fits every free part: 0; the notebook
    (1/17) has no whole device: 1,600. F = 9/17 x 1,600; before t=10 the free parts are
    400 on all 8 devices: F = 9/17 x 3,200."""
    spec = sc.get_preset("s16-shared-gpus").spec()
    result = sc.simulate(spec, "one-gpu")
    expected = (9 / 17 * 3200 * 10 + 9 / 17 * 1600 * 890) / (900 * 8 * 1000)
    assert result.summary["gpu_fragmentation"] == pytest.approx(expected)


def test_fragmentation_is_not_measured_on_whole_gpus() -> None:
    result = sc.simulate(sc.get_preset("s4-preemption-not-helpful").spec(), "spread")
    assert result.summary["gpu_fragmentation"] is None


# ----------------------------------------------------------------------- fast path
def _random_shared_spec(seed: int) -> Any:
    import random

    rnd = random.Random(seed)
    workloads: list[dict[str, Any]] = []
    for i in range(150):
        entry: dict[str, Any] = {
            "name": f"w{i}",
            "arrival": rnd.randrange(0, 300),
            "durationSeconds": rnd.randrange(60, 400),
            "priorityClassName": rnd.choice(["low", "high"]),
            "controller": {"kind": "none"},
        }
        if rnd.random() < 0.5:
            entry["gpuMilli"] = rnd.randrange(100, 1000, 100)
        else:
            entry["gpus"] = 1
        workloads.append(entry)
    nodes = [{"name": f"n{i}", "gpus": 1} for i in range(60)]
    return spec_of(nodes, workloads, seed=seed)


@pytest.mark.parametrize("seed", [1, 2, 3])
def test_the_numpy_path_gives_the_python_reference_on_shared_devices(
    seed: int, monkeypatch: pytest.MonkeyPatch
) -> None:
    """Differential: with shares in the cluster the array path steps aside, so a run with
    the arrays allowed and one with the Python steps only give the same log."""
    spec = _random_shared_spec(seed)
    with_arrays = sc.simulate(spec, "default", explain=False)
    monkeypatch.setattr(DefaultPreemption, "use_arrays", False)
    reference = sc.simulate(spec, "default", explain=False)
    assert with_arrays.events == reference.events
    assert any(e.reason == ev.PREEMPTED for e in reference.events)


# ----------------------------------------------------------------------- spec, k8s
@pytest.mark.parametrize(
    ("workload", "path", "words"),
    [
        ({"gpuMilli": 500, "gpus": 1}, "workloads[0]", "replaces gpus"),
        ({"gpuMilli": 1000}, "workloads[0].gpuMilli", "less than 1000"),
        ({"gpuMilli": 500, "mig": {"1g.10gb": 1}}, "workloads[0]", "set one of them"),
        ({"gpuMilli": 500, "queue": "q"}, "workloads[0].gpuMilli", "admission queue"),
    ],
    ids=["milli-and-gpus", "milli-too-big", "milli-and-mig", "milli-in-a-queue"],
)
def test_bad_shared_gpu_requests_name_the_field(
    workload: dict[str, Any], path: str, words: str
) -> None:
    extra = {"queues": [{"name": "q"}]} if "queue" in workload else {}
    with pytest.raises(sc.SpecError) as caught:
        spec_of([{"name": "n", "mig": {"1g.10gb": 1}}], [{"name": "x", **workload}], **extra)
    assert any(e["path"] == path and words in e["message"] for e in caught.value.errors)


def test_workload_aware_preemption_refuses_shared_gpus() -> None:
    with pytest.raises(sc.SpecError, match="workload-aware"):
        spec_of(
            [{"name": "n"}],
            [{"name": "x", "gpuMilli": 500}],
            policy={"preemption": "workload-aware"},
        )


def test_shared_gpus_mig_and_models_survive_the_kubernetes_round_trip() -> None:
    nodes = [
        {"name": "a", "gpus": 2, "gpuModel": "V100M16"},
        {"name": "b", "gpus": 0, "mig": {"1g.10gb": 7, "3g.40gb": 1}},
    ]
    workloads = [
        {"name": "share", "gpuMilli": 250, "gpuModels": ["V100M16", "V100M32"]},
        {"name": "one-model", "gpuMilli": 500, "gpuModels": ["V100M16"]},
        {"name": "sliced", "mig": {"1g.10gb": 2}},
    ]
    spec = spec_of(nodes, workloads)
    text = export_manifests(spec)
    assert "nvidia.com/mig-1g.10gb" in text
    assert "nvidia.com/gpu.product: V100M16" in text
    back = read_manifest_texts([(text, "export.yaml")]).spec
    assert normalised(back) == normalised(spec)


def test_the_per_device_victims_are_not_counted_as_over_eviction() -> None:
    """Two shares must go to empty device 1 (a-1 and b-1): both are the minimum, none over."""
    workloads = [
        {"name": "a", "gpuMilli": 600, "members": 2, "controller": {"kind": "none"}},
        {"name": "b", "gpuMilli": 300, "members": 2, "arrival": 1, "controller": {"kind": "none"}},
        {"name": "u", "gpus": 1, "arrival": 10, "priorityClassName": "high", "urgent": True},
    ]
    result = sc.simulate(spec_of([{"name": "n", "gpus": 2}], workloads), "default")
    assert preempted(result) == ["a-1", "b-1"]
    assert result.summary["over_evicted_pods"] == 0


def test_a_share_preemptor_evicts_one_victim_where_one_suffices() -> None:
    """A 500 milli preemptor: device 0 holds one 600 low share (evicting it frees enough),
    so the minimum is one victim and that is what the reprieve leaves."""
    workloads = [
        {"name": "a", "gpuMilli": 600, "members": 2, "controller": {"kind": "none"}},
        {"name": "u", "gpuMilli": 500, "arrival": 10, "priorityClassName": "high"},
    ]
    result = sc.simulate(spec_of([{"name": "n", "gpus": 2}], workloads), "default")
    assert preempted(result) == ["a-1"]
    assert result.summary["over_evicted_pods"] == 0


# ------------------------------------------------------------- GPU-seconds of shares


def test_s16_counts_each_share_as_its_fraction_of_a_gpu_second() -> None:
    """Eight 600-milli serving replicas for 900 s are 4,320 GPU-seconds of useful work,
    eight 200-milli batch shards from t=10 are 8 x 0.2 x 890 = 1,424; a share counted as
    0 GPUs would give 0 and no ETTR."""
    spec = sc.get_preset("s16-shared-gpus").spec()
    result = sc.simulate(spec, "share-of-400")
    by_name = {r.workload: r for r in result.workloads}
    assert by_name["serving"].useful_work == pytest.approx(4320.0)
    assert by_name["batch"].useful_work == pytest.approx(1424.0)
    # The 400-milli notebook starts at t=100 and loads for 10 s: 0.4 x 790 s.
    assert by_name["notebook"].useful_work == pytest.approx(316.0)
    assert by_name["serving"].ettr == pytest.approx(1.0)
    assert by_name["batch"].ettr == pytest.approx(1.0)
    timeline = sc.timeline.for_variant(spec, "share-of-400", result.events)
    held = sum(s.gpus * (s.end - s.start) for s in timeline.spans if s.workload == "batch")
    assert held == pytest.approx(1424.0)


def test_an_evicted_share_loses_its_fraction_of_the_unsaved_gpu_seconds() -> None:
    """A 500-milli job without checkpoints runs 100 s, then a high-priority 1-GPU pod
    evicts it from the only device: 0.5 GPU x 100 s = 50 GPU-seconds lost (0 if shares
    counted no GPU), also in the event log and the summary."""
    workloads = [
        {"name": "low", "gpuMilli": 500, "durationSeconds": 10_000},
        {"name": "u", "gpus": 1, "arrival": 100, "priorityClassName": "high", "urgent": True},
    ]
    result = sc.simulate(spec_of([{"name": "n", "gpus": 1}], workloads), "default")
    assert preempted(result) == ["low-0"]
    low = next(r for r in result.workloads if r.workload == "low")
    assert low.lost_work == pytest.approx(50.0)
    lost = [e.value for e in result.events if e.reason == ev.DISRUPTED and e.workload == "low"]
    assert sum(lost) == pytest.approx(50.0)
    assert result.summary["lost_work"] == pytest.approx(50.0)
