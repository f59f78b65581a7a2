"""Malformed trace objects get an error naming the object, its line and the field; never
a crash halfway through the import (issue #10 §2), and nothing larger than a machine
gets into a cluster (§1)."""

from __future__ import annotations

import io
import json
from typing import Any

import pytest

from scheduler_core.traces import TraceError, TraceFile, import_trace
from scheduler_core.traces.quantity import QuantityError, parse_quantity

NODE: dict[str, Any] = {
    "kind": "Node",
    "metadata": {"name": "n1"},
    "status": {"allocatable": {"nvidia.com/gpu": "8", "cpu": "96", "memory": "1Ti", "pods": "110"}},
}


def import_text(fmt: str, text: str, name: str) -> list[dict[str, Any]]:
    with pytest.raises(TraceError) as caught:
        import_trace(fmt, [TraceFile.from_stream(io.StringIO(text), name)])
    return caught.value.errors


def kubectl_errors(*items: dict[str, Any]) -> list[dict[str, Any]]:
    text = json.dumps({"kind": "List", "items": list(items)}, indent=1)
    return import_text("kubectl", text, "snapshot.json")


@pytest.mark.parametrize(
    ("field", "value", "message"),
    [
        ("metadata", 5, "metadata: must be an object, not 5"),
        ("spec", [], "spec: must be an object, not []"),
        ("status", "up", 'status: must be an object, not "up"'),
    ],
)
def test_a_kubectl_object_of_the_wrong_shape_is_an_error_naming_the_field(
    field: str, value: Any, message: str
) -> None:
    pod = {"kind": "Pod", "metadata": {"name": "p", "namespace": "d"}, field: value}
    [error] = kubectl_errors(NODE, pod)
    assert error["file"] == "snapshot.json"
    assert error["line"] > 1
    assert error["message"].endswith(message)
    assert error["message"].startswith("Pod ")


def test_a_huge_kubectl_quantity_is_refused_not_overflowed() -> None:
    for text in ("1e999999", "1e400", 1e300):
        with pytest.raises(QuantityError):
            parse_quantity(text)


def test_a_billion_gpu_node_from_a_kubectl_dump_is_refused_naming_it() -> None:
    node = json.loads(json.dumps(NODE))
    node["status"]["allocatable"]["nvidia.com/gpu"] = "1000000000"
    [error] = kubectl_errors(node)
    assert error["message"].startswith("cluster.nodes[0].gpus: Input should be less than")
    assert error["line"] > 1


def test_a_billion_gpu_csv_row_is_refused_with_its_line() -> None:
    errors = import_text("csv", "name,gpus\nsmall,8\nhuge,1000000000\n", "nodes.csv")
    assert [(e["file"], e["line"]) for e in errors] == [("nodes.csv", 3)]
    assert "gpus" in errors[0]["message"]


def test_a_deep_or_nan_jsonl_line_is_an_error_with_its_line() -> None:
    deep = '{"node": ' + "[" * 100_000 + "]" * 100_000 + "}"
    text = (
        '{"node": {"name": "a", "gpus": 8}}\n' + deep + '\n{"node": {"name": "b", "gpus": NaN}}\n'
    )
    errors = import_text("jsonl", text, "t.jsonl")
    assert [(e["line"], e["message"]) for e in errors] == [
        (2, "not a record: nested too deeply"),
        (3, "not JSON: NaN is not a JSON number"),
    ]


def test_a_nul_in_a_jsonl_name_is_refused() -> None:
    errors = import_text("jsonl", '{"node": {"name": "a\\u0000b", "gpus": 8}}\n', "t.jsonl")
    assert "NUL character" in errors[0]["message"]
