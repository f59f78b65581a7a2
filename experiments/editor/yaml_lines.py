"""Where in the YAML text an error's path points, so the YAML tab can show each error
beside its line (and jump there)."""

from __future__ import annotations

import re

import yaml

_TOKEN = re.compile(r"([^.\[\]]+)|\[(\d+)\]")


def path_tokens(path: str) -> list[str | int]:
    """``variants[0].set: workloads[1].gpus`` → ["variants", 0, "set"] (the part before
    ": " is where the value sits; what follows names a field of the *resolved* spec)."""
    head = path.split(": ", 1)[0]
    return [int(index) if index else name for name, index in _TOKEN.findall(head)]


def line_of(text: str, path: str) -> int | None:
    """1-based line of the deepest node of ``path`` found in ``text``, or None."""
    try:
        node = yaml.compose(text)
    except yaml.YAMLError:
        return None
    if node is None:
        return None
    line = None
    tokens = path_tokens(path)
    while tokens and node is not None:
        node, key_line, tokens = _step(node, tokens)
        line = key_line if key_line is not None else line
    return None if line is None else line + 1


def _step(
    node: yaml.Node, tokens: list[str | int]
) -> tuple[yaml.Node | None, int | None, list[str | int]]:
    head = tokens[0]
    if isinstance(node, yaml.SequenceNode) and isinstance(head, int):
        if head < len(node.value):
            child = node.value[head]
            return child, child.start_mark.line, tokens[1:]
        return None, None, []
    if isinstance(node, yaml.MappingNode):
        # Override paths are keys with dots in them: try the longest dotted key first.
        for size in range(len(tokens), 0, -1):
            parts = tokens[:size]
            if not all(isinstance(p, str) for p in parts):
                continue
            key = ".".join(str(p) for p in parts)
            for key_node, value_node in node.value:
                if key_node.value == key:
                    return value_node, key_node.start_mark.line, tokens[size:]
    return None, None, []
