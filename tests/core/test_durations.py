"""Durations as people write them (issue 16 §1: "24h", "1d", "1h30m" everywhere)."""

from __future__ import annotations

import pytest
from hypothesis import given
from hypothesis import strategies as st

import scheduler_core as sc


@pytest.mark.parametrize(
    ("text", "seconds"),
    [
        ("90", 90.0),
        ("90s", 90.0),
        ("30m", 1800.0),
        ("24h", 86400.0),
        ("1d", 86400.0),
        ("1h30m", 5400.0),
        ("1h 30m", 5400.0),
        ("1d2h3m4s", 93784.0),
        ("250ms", 0.25),
        ("-1h", -3600.0),
        (" 2.5h ", 9000.0),
        ("1m 30.5s", 90.5),
    ],
)
def test_a_duration_reads_as_people_write_it(text: str, seconds: float) -> None:
    assert sc.parse_duration(text) == seconds


@pytest.mark.parametrize("text", ["", "h", "1x", "1h-30m", "1.h", "one hour", "1h30"])
def test_a_non_duration_is_refused_with_the_accepted_forms(text: str) -> None:
    with pytest.raises(ValueError, match=r"is not a duration .*1h30m"):
        sc.parse_duration(text)


@pytest.mark.parametrize(
    ("seconds", "text"),
    [
        (0, "0s"),
        (7, "7s"),
        (90, "1m 30s"),
        (1800, "30m"),
        (5400, "1h 30m"),
        (86400, "1d"),
        (93784, "1d 2h 3m 4s"),
        (0.25, "0.25s"),
        (-3600, "-1h"),
    ],
)
def test_a_duration_is_shown_in_its_largest_whole_units(seconds: float, text: str) -> None:
    assert sc.format_duration(seconds) == text


@given(
    st.one_of(
        st.integers(-(10**9), 10**9),
        st.floats(-1e6, 1e6, allow_nan=False).map(lambda x: round(x, 3)),
    )
)
def test_what_is_shown_reads_back_to_the_same_number(seconds: float) -> None:
    assert sc.parse_duration(sc.format_duration(seconds)) == pytest.approx(seconds, abs=1e-6)


def test_the_spec_accepts_compound_durations() -> None:
    spec = sc.parse_spec(
        {
            "horizonSeconds": "1d",
            "cluster": {"nodePools": [{"name": "p", "count": 1, "gpus": 8}]},
            "workloads": [{"name": "w", "gpus": 1, "durationSeconds": "1h30m", "arrival": "-10m"}],
        }
    )
    assert spec.horizon_seconds == 86400
    assert spec.workloads[0].duration_seconds == 5400
    assert spec.workloads[0].arrival == -600
