"""The canonical scenarios (scenarios.md) as presets: one YAML file each, id first.

Ids begin with the scenario code (``s2-jump-the-queue``); the file name is the id.
"""

from __future__ import annotations

from dataclasses import dataclass
from functools import cache
from importlib import resources

from scheduler_core.spec import ExperimentSpec, SpecError, load_document, parse_spec


@dataclass(frozen=True, slots=True)
class Preset:
    id: str
    name: str
    description: str
    text: str
    study: bool = False
    """A placement study (``placementStudy``): no replay, so no event log, timeline or
    replay metrics; listed only when asked for (``list_presets(studies=True)``)."""

    def spec(self) -> ExperimentSpec:
        return parse_spec(self.text)


def list_presets(*, studies: bool = False) -> tuple[Preset, ...]:
    """Every replay preset, in scenario order (s2 before s10); with ``studies``, the
    placement-study presets too (what a user is offered). A caller that simulates every
    preset's event log gets only the replays it can simulate."""
    return tuple(p for p in _all_presets() if studies or not p.study)


@cache
def _all_presets() -> tuple[Preset, ...]:
    presets = []
    for entry in resources.files(__package__).iterdir():
        if entry.name.endswith(".yaml"):
            text = entry.read_text(encoding="utf-8")
            data = load_document(text)
            presets.append(
                Preset(
                    entry.name[:-5],
                    data.get("name", entry.name),
                    " ".join(str(data.get("description", "")).split()),
                    text,
                    data.get("placementStudy") is not None,
                )
            )
    return tuple(sorted(presets, key=_scenario_order))


def _scenario_order(preset: Preset) -> tuple[int, str]:
    code = preset.id.split("-", 1)[0].lstrip("s")
    return (int(code) if code.isdigit() else 999, preset.id)


def get_preset(preset_id: str) -> Preset:
    for preset in list_presets(studies=True):
        if preset.id == preset_id:
            return preset
    known = ", ".join(p.id for p in list_presets(studies=True))
    raise SpecError([{"path": "preset", "message": f"no preset '{preset_id}' (known: {known})"}])
