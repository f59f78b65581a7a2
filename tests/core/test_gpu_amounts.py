"""GPU amounts of shares and MIG instances in the time-based replay (#18 §1).

A ``gpuMilli: 300`` member counts 0.3 of a GPU and a ``3g.40gb`` instance 3/7 (its compute
slices over the device's, docs/shared-gpus.md "GPU-seconds of a share"), in the records
(``gpus_per_member``, useful and lost work, ETTR), the summary (utilisation, lost work,
the GPU-weighted ETTR) and the timeline's recoveries. Every figure below is worked by hand
from the scenario: one node, a 2-member job without checkpoints, and a high-priority pod
at t=100 that evicts one member (grace 30 s, stop 5 s: the victim leaves at 105), runs
50 s, and lets the replacement start at 155.
"""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

import scheduler_core as sc
from scheduler_core import spec as spec_module
from scheduler_core import timeline
from scheduler_core.presets import list_presets

HORIZON = 600
CLASSES = [
    {"name": "low", "value": 10, "globalDefault": True},
    {"name": "high", "value": 1000},
]


def evicting_run(node: dict[str, Any], low: dict[str, Any], urgent: dict[str, Any]) -> Any:
    spec = sc.parse_spec(
        {
            "horizonSeconds": HORIZON,
            "cluster": {"nodes": [node]},
            "priorityClasses": CLASSES,
            "workloads": [
                {"name": "low", "members": 2, "durationSeconds": 10_000, **low},
                {
                    "name": "u",
                    "arrival": 100,
                    "durationSeconds": 50,
                    "priorityClassName": "high",
                    "urgent": True,
                    "controller": {"kind": "none"},
                    **urgent,
                },
            ],
        }
    )
    result = sc.simulate(spec, "default")
    return result, timeline.for_variant(spec, "default", result.events)


def check_by_hand(result: Any, recoveries: Any, low: float, urgent: float, capacity: float) -> None:
    """The figures of the scenario for members of ``low`` and ``urgent`` GPUs each."""
    records = {r.workload: r for r in result.workloads}
    assert records["low"].gpus_per_member == pytest.approx(low)
    assert records["u"].gpus_per_member == pytest.approx(urgent)
    # low-0 runs 0-600 s, the replacement 155-600 s; low-1's 100 s are lost.
    assert records["low"].useful_work == pytest.approx((600 + 445) * low)
    assert records["low"].lost_work == pytest.approx(100 * low)
    assert records["low"].wasted_gpu_seconds == pytest.approx(100 * low)
    assert records["u"].useful_work == pytest.approx(50 * urgent)
    assert records["low"].time_to_recover == pytest.approx(155.0)
    assert result.summary["lost_work"] == pytest.approx(100 * low)
    # Held: low-0 600 s, low-1 105 s, its replacement 445 s; u 50 s.
    held = (600 + 105 + 445) * low + 50 * urgent
    assert result.summary["gpu_utilization"] == pytest.approx(held / (capacity * HORIZON))
    # ETTR per workload, then weighted by the GPUs each workload holds.
    low_ettr, u_ettr = (600 + 445) / 2 / 600, 50 / 55
    assert records["low"].ettr == pytest.approx(low_ettr)
    assert records["u"].ettr == pytest.approx(u_ettr)
    weighted = (2 * low * low_ettr + urgent * u_ettr) / (2 * low + urgent)
    assert result.summary["ettr"] == pytest.approx(weighted)
    (recovery,) = recoveries
    assert (recovery.workload, recovery.time) == ("low", 100.0)
    assert recovery.lost == pytest.approx(100 * low)
    assert (recovery.resumed, recovery.recovered) == (155.0, 255.0)


def test_a_share_counts_its_milli_over_1000_of_a_gpu() -> None:
    """Two 300-milli members on one device; the 500-milli preemptor needs one of them
    gone. Counted as whole GPUs (0) the job had no GPU weight in the summary's ETTR."""
    result, line = evicting_run({"name": "n", "gpus": 1}, {"gpuMilli": 300}, {"gpuMilli": 500})
    check_by_hand(result, line.recoveries, low=0.3, urgent=0.5, capacity=1.0)


def test_a_mig_instance_counts_its_compute_slices_over_the_devices() -> None:
    """Two 3g.40gb instances and a 1g.10gb one: 3/7 + 3/7 + 1/7, one A100 of capacity.
    Before, a MIG pod counted 0 GPU-seconds: no useful or lost work, no ETTR."""
    node = {"name": "n", "gpus": 0, "mig": {"3g.40gb": 2, "1g.10gb": 1}}
    profile = {"mig": {"3g.40gb": 1}}
    result, line = evicting_run(node, profile, profile)
    check_by_hand(result, line.recoveries, low=3 / 7, urgent=3 / 7, capacity=1.0)


@pytest.mark.parametrize(
    ("profile", "fraction"),
    [
        ("1g.10gb", 1 / 7),
        ("1g.10gb+me", 1 / 7),
        ("3g.40gb", 3 / 7),
        ("4g.40gb", 4 / 7),  # half the memory, 4 of 7 compute slices
        ("7g.80gb", 1.0),
        ("1g.6gb", 1 / 4),  # A30: 4 compute slices
        ("2g.12gb", 1 / 2),
        ("4g.24gb", 1.0),
    ],
)
def test_mig_profiles_count_compute_slices_of_their_device(profile: str, fraction: float) -> None:
    assert spec_module.mig_gpu_fraction(profile) == pytest.approx(fraction)


@settings(max_examples=25, deadline=None)
@given(
    st.lists(
        st.tuples(st.integers(1, 3), st.integers(1, 4), st.integers(0, 300)),
        min_size=1,
        max_size=5,
    )
)
def test_a_7g_instance_counts_exactly_as_one_whole_gpu(
    workloads: list[tuple[int, int, int]],
) -> None:
    """The same node and workloads as whole GPUs and as full-device MIG instances
    (``7g.80gb``) give the same records and summary: a MIG pod counts its GPUs. One node
    and one priority, so only the accounting can differ (placement scoring and the
    over-eviction count of MIG pods are checked in test_mig_placement_scoring.py and
    test_mig_over_eviction.py)."""

    def spec(mig: bool) -> Any:
        node = {"name": "n", **({"gpus": 0, "mig": {"7g.80gb": 8}} if mig else {"gpus": 8})}
        return sc.parse_spec(
            {
                "horizonSeconds": 900,
                "cluster": {"nodes": [node]},
                "workloads": [
                    {
                        "name": f"w{i}",
                        "members": members,
                        "durationSeconds": 400,
                        "arrival": arrival,
                        **({"gpus": 0, "mig": {"7g.80gb": gpus}} if mig else {"gpus": gpus}),
                    }
                    for i, (members, gpus, arrival) in enumerate(workloads)
                ],
            }
        )

    whole, sliced = sc.simulate(spec(False), "default"), sc.simulate(spec(True), "default")
    assert sliced.summary == pytest.approx(whole.summary, nan_ok=True)
    assert sliced.workloads == whole.workloads


# ------------------------------------------------- whole GPUs: numbers unchanged
GOLDEN = Path(__file__).parent / "fixtures" / "whole_gpu_preset_numbers.json"
"""Every whole-GPU preset variant's summary and per-workload GPU figures (replication 0),
as main computed them before shares and MIG counted their fractions (commit 65824ef)."""
NUMBERS = json.loads(GOLDEN.read_text())


@pytest.mark.parametrize(
    "key",
    [
        pytest.param(k, marks=pytest.mark.slow) if k.startswith("s13-") else k
        for k in sorted(NUMBERS)
    ],
)
def test_whole_gpu_presets_keep_their_numbers(key: str) -> None:
    preset_id, variant = key.split("/", 1)
    spec = next(p for p in list_presets() if p.id == preset_id).spec()
    result = sc.simulate(spec, variant)
    expected = NUMBERS[key]
    assert result.summary == pytest.approx(expected["summary"], nan_ok=True)
    got = [
        [r.workload, r.gpus_per_member, r.lost_work, r.useful_work, r.wasted_gpu_seconds, r.ettr]
        for r in result.workloads
    ]
    assert len(got) == len(expected["records"])
    for row, want in zip(got, expected["records"], strict=True):
        assert row[0] == want[0]
        assert row[1:] == [v if v is None else pytest.approx(v) for v in want[1:]]
