"""Every variant colour must read on the white plot background: WCAG 2.1's 3:1 minimum
for graphical objects (success criterion 1.4.11), which Okabe-Ito's yellow failed."""

from __future__ import annotations

import pytest

from experiments.charts.style import VARIANT_COLORS


def _luminance(hex_colour: str) -> float:
    """WCAG relative luminance of an sRGB colour."""
    channels = [int(hex_colour[i : i + 2], 16) / 255 for i in (1, 3, 5)]
    linear = [c / 12.92 if c <= 0.04045 else ((c + 0.055) / 1.055) ** 2.4 for c in channels]
    return 0.2126 * linear[0] + 0.7152 * linear[1] + 0.0722 * linear[2]


@pytest.mark.parametrize("colour", VARIANT_COLORS)
def test_every_variant_colour_has_3_to_1_contrast_on_white(colour: str) -> None:
    contrast = 1.05 / (_luminance(colour) + 0.05)
    assert contrast >= 3.0, f"{colour} has a contrast of {contrast:.2f}:1 on white"
