"""Form fields that hand values to the spec instead of judging them.

The spec (``scheduler_core.parse_spec``) is the one validator, so these fields only turn
text into the types a YAML author would have written: ``"8"`` → 8, ``"30m"`` stays a
duration string, a blank field is left out so the spec's default applies. Whatever
cannot be converted goes through as typed, and the spec's error lands beside the field.
"""

from __future__ import annotations

import re
from typing import Any

import yaml
from django import forms

import scheduler_core as sc

_NUMBER = re.compile(r"^[+-]?(\d+(\.\d*)?|\.\d+)([eE][+-]?\d+)?$")


def format_number(value: Any) -> str:
    """8.0 → "8", 0.25 → "0.25": how people write numbers in a form."""
    if isinstance(value, bool) or not isinstance(value, (int, float)):
        return "" if value is None else str(value)
    if isinstance(value, float) and value.is_integer() and abs(value) < 1e15:
        return str(int(value))
    return str(value)


class SpecField(forms.CharField):
    """Text for the spec; blank means "leave it out" (``None``)."""

    def __init__(self, **kwargs: Any) -> None:
        kwargs.setdefault("required", False)
        kwargs.setdefault("strip", True)
        super().__init__(**kwargs)

    def to_python(self, value: Any) -> Any:
        text = super().to_python(value)
        if isinstance(text, str):
            text = text.replace("\r\n", "\n")  # browsers send CRLF from a textarea
        return text if text is not None and text.strip() != "" else None

    def format(self, value: Any) -> str:
        """A spec value as the text this field shows."""
        return "" if value is None else str(value)


class SpecNumberField(SpecField):
    """A number (or a duration such as "30m"); non-numbers go through as text."""

    def to_python(self, value: Any) -> Any:
        text = super().to_python(value)
        if text is None or not _NUMBER.match(text):
            return text
        number = float(text)
        return (
            int(number)
            if number.is_integer() and "." not in text and "e" not in text.lower()
            else number
        )

    def format(self, value: Any) -> str:
        return format_number(value)


class SpecDurationField(SpecNumberField):
    """A duration: shown as people write it (``1800`` reads ``30m``), typed either way."""

    def format(self, value: Any) -> str:
        if isinstance(value, (int, float)) and not isinstance(value, bool):
            return sc.format_duration(value)
        return super().format(value)


class SpecListField(SpecField):
    """Comma-separated names: "n1, n2" → ["n1", "n2"]."""

    def to_python(self, value: Any) -> Any:
        text = super().to_python(value)
        return None if text is None else [item.strip() for item in text.split(",") if item.strip()]

    def format(self, value: Any) -> str:
        return ", ".join(map(str, value)) if isinstance(value, list) else super().format(value)


class SpecMapField(SpecField):
    """Comma-separated ``key=value`` pairs (labels); anything else goes through as text,
    for the spec to refuse beside this field."""

    def to_python(self, value: Any) -> Any:
        text = super().to_python(value)
        if text is None:
            return None
        pairs = [item.partition("=") for item in text.split(",") if item.strip()]
        if not all(sep and key.strip() for key, sep, _ in pairs):
            return text
        return {key.strip(): val.strip() for key, _, val in pairs}

    def format(self, value: Any) -> str:
        if isinstance(value, dict):
            return ", ".join(f"{k}={v}" for k, v in value.items())
        return super().format(value)


_EFFECTS = ("NoSchedule", "NoExecute", "PreferNoSchedule")


class SpecTaintsField(SpecField):
    """Taints as ``kubectl taint`` writes them: ``key=value:Effect`` or ``key:Effect``,
    comma-separated (the effect defaults to NoSchedule)."""

    def to_python(self, value: Any) -> Any:
        text = super().to_python(value)
        if text is None:
            return None
        taints = []
        for item in (part.strip() for part in text.split(",") if part.strip()):
            key_value, _, effect = item.partition(":")
            key, _, val = key_value.partition("=")
            if not key.strip() or (effect and effect not in _EFFECTS):
                raise forms.ValidationError(
                    f"'{item}' is not a taint: write key=value:Effect, Effect one of "
                    f"{', '.join(_EFFECTS)}",
                    code="taint",
                )
            taints.append(
                {"key": key.strip(), "value": val.strip(), "effect": effect or "NoSchedule"}
            )
        return taints

    def format(self, value: Any) -> str:
        if not isinstance(value, list):
            return super().format(value)
        return ", ".join(
            f"{t.get('key', '')}{'=' + t['value'] if t.get('value') else ''}"
            f":{t.get('effect') or 'NoSchedule'}"
            if isinstance(t, dict)
            else str(t)
            for t in value
        )


class SpecTolerationsField(SpecField):
    """Tolerations, comma-separated: ``key=value:Effect`` (operator Equal), ``key:Effect``
    or ``key`` (operator Exists), ``*`` (tolerates every taint); no effect means any."""

    def to_python(self, value: Any) -> Any:
        text = super().to_python(value)
        if text is None:
            return None
        return [self._one(item) for item in (p.strip() for p in text.split(",")) if item]

    @staticmethod
    def _one(item: str) -> dict[str, str]:
        if item == "*":
            return {"operator": "Exists"}
        key_value, _, effect = item.partition(":")
        key, equal, val = key_value.partition("=")
        if key.strip() == "*" and not equal and (not effect or effect in _EFFECTS):
            return {"operator": "Exists", **({"effect": effect} if effect else {})}
        if not key.strip() or (effect and effect not in _EFFECTS):
            raise forms.ValidationError(
                f"'{item}' is not a toleration: write key=value:Effect, key:Effect, key or *",
                code="toleration",
            )
        toleration = {"key": key.strip(), "operator": "Equal" if equal else "Exists"}
        if equal:
            toleration["value"] = val.strip()
        if effect:
            toleration["effect"] = effect
        return toleration

    def format(self, value: Any) -> str:
        if not isinstance(value, list):
            return super().format(value)
        items = []
        for t in value:
            if not isinstance(t, dict):
                items.append(str(t))
                continue
            if t.get("operator") == "Exists" and not t.get("key"):
                items.append("*" + (f":{t['effect']}" if t.get("effect") else ""))
                continue
            equal = t.get("operator", "Equal") == "Equal"
            text = t.get("key", "") + (f"={t.get('value', '')}" if equal else "")
            items.append(text + (f":{t['effect']}" if t.get("effect") else ""))
        return ", ".join(items)


class _SpecYAMLField(SpecField):
    """A small YAML value of one type (``KIND``) in a text area."""

    KIND: type = dict
    FLOW: bool | None = False
    HOW = "write one 'path: value' per line"
    widget = forms.Textarea(attrs={"rows": 2, "spellcheck": "false"})

    def to_python(self, value: Any) -> Any:
        text = super().to_python(value)
        if text is None:
            return None
        try:
            data = yaml.safe_load(text)
        except yaml.YAMLError:
            raise forms.ValidationError(f"not valid YAML: {self.HOW}", code="yaml") from None
        if not isinstance(data, self.KIND):
            raise forms.ValidationError(self.HOW, code="type")
        return data

    def format(self, value: Any) -> str:
        if isinstance(value, self.KIND):
            return (
                ""
                if not value
                else yaml.safe_dump(value, sort_keys=False, default_flow_style=self.FLOW).strip()
            )
        return super().format(value)


class SpecYAMLMapField(_SpecYAMLField):
    """A small YAML mapping, one ``path: value`` per line (a variant's overrides)."""


class SpecYAMLListField(_SpecYAMLField):
    """A small YAML list of objects (a queue's resourceGroups), shown in flow style."""

    KIND = list
    FLOW = None
    HOW = "write a YAML list, e.g. - {coveredResources: [gpus], flavors: [...]}"
    widget = forms.Textarea(attrs={"rows": 3, "spellcheck": "false"})


class SpecChoiceField(forms.ChoiceField):
    """A select; the blank choice means "leave it out". A value the document holds that
    is not a choice (typed in the YAML tab) is kept, so the spec can name the problem."""

    def __init__(self, *, choices: list[tuple[str, str]], blank: str = "", **kwargs: Any) -> None:
        super().__init__(choices=[("", blank), *choices], required=False, **kwargs)

    def valid_value(self, value: Any) -> bool:
        return True

    def to_python(self, value: Any) -> Any:
        return super().to_python(value) or None

    def format(self, value: Any) -> str:
        return "" if value is None else str(value)


class SpecBooleanField(forms.BooleanField):
    """A checkbox: always a value (true or false), never left out."""

    def __init__(self, **kwargs: Any) -> None:
        super().__init__(required=False, **kwargs)

    def format(self, value: Any) -> Any:
        return bool(value)
