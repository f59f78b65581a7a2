"""Issue #12 §1: the web app never reads event names itself. What a reason means is the
core's (``scheduler_core.events.Reason`` and ``scheduler_core.timeline``); a string
literal equal to a reason in ``experiments/`` is simulation logic re-derived from event
names, so this test fails on one: in a comparison (``==``, ``!=``, ``in``), as a dict
key, in a collection of reasons, or as the value of a ``reason`` keyword argument. The
same holds in ``scheduler_core`` outside ``events.py``, which defines them."""

from __future__ import annotations

import ast
from collections.abc import Iterator
from pathlib import Path

import pytest

from scheduler_core.events import Reason

ROOT = Path(__file__).resolve().parents[2]
REASON_STRINGS = frozenset(r.value for r in Reason)


def _literal(node: ast.AST) -> str | None:
    if (
        isinstance(node, ast.Constant)
        and isinstance(node.value, str)
        and node.value in REASON_STRINGS
    ):
        return node.value
    return None


def _in_collection(node: ast.AST) -> list[str]:
    if isinstance(node, ast.Tuple | ast.List | ast.Set):
        return [found for item in node.elts if (found := _literal(item))]
    return []


def reason_literals(tree: ast.AST) -> Iterator[tuple[int, str]]:
    """(line, literal) of every use of a reason string as a reason."""
    for node in ast.walk(tree):
        if isinstance(node, ast.Compare):
            for side in (node.left, *node.comparators):
                for found in [_literal(side), *_in_collection(side)]:
                    if found:
                        yield node.lineno, found
        elif isinstance(node, ast.Dict):
            for key in node.keys:
                if key is not None and (found := _literal(key)):
                    yield key.lineno, found
        elif isinstance(node, ast.Tuple | ast.List | ast.Set):
            found_all = _in_collection(node)
            if len(found_all) >= 2:  # ("queued", "Queued") is a choice, not a reason list
                yield node.lineno, ", ".join(found_all)
        elif isinstance(node, ast.keyword) and node.arg and node.arg.startswith("reason"):
            for found in [_literal(node.value), *_in_collection(node.value)]:
                if found:
                    yield node.value.lineno, found


def offences(package: str, skip: tuple[str, ...] = ()) -> list[str]:
    out = []
    for path in sorted((ROOT / package).rglob("*.py")):
        relative = path.relative_to(ROOT).as_posix()
        if "/migrations/" in relative or relative in skip:
            continue
        tree = ast.parse(path.read_text(encoding="utf-8"), filename=relative)
        out += [f"{relative}:{line}: {text!r}" for line, text in reason_literals(tree)]
    return out


def test_nothing_in_experiments_compares_an_event_reason_with_a_string_literal():
    assert offences("experiments") == []


def test_the_core_names_reasons_by_the_enum_outside_the_registry():
    assert offences("scheduler_core", skip=("scheduler_core/events.py",)) == []


@pytest.mark.parametrize(
    "source",
    [
        'if e.reason == "Stranded": pass',
        'x = e.reason in ("Ready", "Killing")',
        'handlers = {"Scheduled": f}',
        'REASONS = ("Disrupted", "Stranded")',
        'RunEvent.objects.filter(reason__in=["Killing"])',
        'RunEvent.objects.filter(reason="Preempted")',
    ],
)
def test_the_check_finds_each_kind_of_use(source):
    assert list(reason_literals(ast.parse(source)))


def test_the_check_leaves_other_strings_and_labels_alone():
    source = 'QUEUED = "queued", "Queued"\nmessage = "Ready"\nstate = {"type": "Ready"}["type"]'
    assert list(reason_literals(ast.parse(source))) == []
