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

    def spec(self) -> ExperimentSpec:
        return parse_spec(self.text)


@cache
def list_presets() -> tuple[Preset, ...]:
    """Every preset, in scenario order (s2 before s10)."""
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
                )
            )
    return tuple(sorted(presets, key=_scenario_order))


def _scenario_order(preset: Preset) -> tuple[int, str]:
    code = preset.id.split("-", 1)[0].lstrip("s")
    return (int(code) if code.isdigit() else 999, preset.id)


def get_preset(preset_id: str) -> Preset:
    for preset in list_presets():
        if preset.id == preset_id:
            return preset
    known = ", ".join(p.id for p in list_presets())
    raise SpecError([{"path": "preset", "message": f"no preset '{preset_id}' (known: {known})"}])
