"""Bad Kubernetes input (issue 11 §3): a clear, line-numbered error, nothing imported."""

from __future__ import annotations

import pytest

from scheduler_core.k8s import read_manifest_texts
from scheduler_core.traces import TraceError

CLASSES = """\
apiVersion: scheduling.k8s.io/v1
kind: PriorityClass
metadata: {name: low}
value: 100
---
apiVersion: scheduling.k8s.io/v1
kind: PriorityClass
metadata: {name: high}
value: 1000
"""


def pod(name, *, klass=None, gpus="1", group=None):
    lines = [
        "---",
        "apiVersion: v1",
        "kind: Pod",
        f"metadata: {{name: {name}, namespace: ml}}",
        "spec:",
    ]
    if klass:
        lines.append(f"  priorityClassName: {klass}")
    if group:
        lines.append(f"  schedulingGroup: {{podGroupName: {group}}}")
    lines += [
        "  containers:",
        "  - name: c",
        f'    resources: {{limits: {{nvidia.com/gpu: "{gpus}"}}}}',
    ]
    return "\n".join(lines) + "\n"


def errors(text, name="m.yaml"):
    with pytest.raises(TraceError) as caught:
        read_manifest_texts([(text, name)])
    return [(e["file"], e["line"], e["column"], e["message"]) for e in caught.value.errors]


def test_malformed_yaml_names_file_line_and_column():
    text = CLASSES + "---\napiVersion: v1\nkind: Pod\nmetadata:\n  name: [unclosed\n"
    ((file, line, column, message),) = errors(text)
    assert (file, line) == ("m.yaml", 15)
    assert column > 0
    assert message.startswith("malformed YAML: ")


def test_a_pod_naming_a_missing_class_is_refused_by_name():
    assert errors(CLASSES + pod("p", klass="gold")) == [
        (
            "m.yaml",
            11,
            1,
            "Pod ml/p: spec.priorityClassName: no PriorityClass with name 'gold' was found",
        )
    ]


def test_a_controller_template_naming_a_missing_class_is_refused():
    text = (
        CLASSES
        + """---
apiVersion: batch/v1
kind: Job
metadata: {name: j, namespace: ml}
spec:
  template:
    spec:
      priorityClassName: silver
      containers: [{name: c}]
"""
    )
    ((_, line, _, message),) = errors(text)
    assert line == 11
    assert "Job ml/j" in message
    assert "no PriorityClass with name 'silver' was found" in message


def test_two_global_default_classes_are_refused_at_the_second():
    text = CLASSES.replace("value: 100", "value: 100\nglobalDefault: true").replace(
        "value: 1000", "value: 1000\nglobalDefault: true"
    )
    ((_, line, _, message),) = errors(text)
    assert line == 7
    assert message.startswith(
        "PriorityClass high: globalDefault: only one PriorityClass "
        "may be globalDefault ('low' is already"
    )


def test_podgroup_members_disagreeing_on_priority_are_refused():
    group = """---
apiVersion: scheduling.k8s.io/v1beta1
kind: PodGroup
metadata: {name: g, namespace: ml}
spec:
  priorityClassName: high
  schedulingPolicy: {gang: {minCount: 2}}
"""
    text = CLASSES + group + pod("a", klass="high", group="g") + pod("b", klass="low", group="g")
    ((_, line, _, message),) = errors(text)
    assert line == text.splitlines().index("metadata: {name: b, namespace: ml}") - 1
    assert message.startswith(
        "Pod ml/b: spec.priorityClassName: 'low' (priority 100) "
        "disagrees with its PodGroup ml/g ('high', priority 1000)"
    )


def test_members_of_a_classless_podgroup_must_agree_with_each_other():
    group = """---
apiVersion: scheduling.k8s.io/v1beta1
kind: PodGroup
metadata: {name: g, namespace: ml}
spec:
  schedulingPolicy: {gang: {minCount: 2}}
"""
    text = CLASSES + group + pod("a", klass="high", group="g") + pod("b", klass="low", group="g")
    ((_, _, _, message),) = errors(text)
    assert "Pod ml/b" in message
    assert "disagrees with Pod ml/a ('high', priority 1000)" in message


def test_fractional_gpus_are_refused():
    ((_, line, _, message),) = errors(CLASSES + pod("p", gpus="1.5"))
    assert line == 11
    assert message == (
        "Pod ml/p: spec.containers resources: nvidia.com/gpu '1.5' is not a "
        "whole number (a pod holds whole GPUs)"
    )


def test_an_unknown_disruption_lab_annotation_is_refused():
    text = (
        CLASSES
        + """---
apiVersion: apps/v1
kind: Deployment
metadata:
  name: d
  annotations: {disruption-lab.io/checkpoint-intervall: 5m}
spec:
  template:
    spec:
      containers: [{name: c}]
"""
    )
    ((_, _, _, message),) = errors(text)
    assert message.startswith(
        "Deployment d: metadata.annotations.disruption-lab.io/"
        "checkpoint-intervall: unknown annotation"
    )


def test_a_bad_annotation_value_names_the_annotation():
    text = (
        CLASSES
        + """---
apiVersion: apps/v1
kind: Deployment
metadata:
  name: d
  annotations: {disruption-lab.io/startup-seconds: soon}
spec:
  template:
    spec:
      containers: [{name: c}]
"""
    )
    ((_, _, _, message),) = errors(text)
    assert message == (
        "Deployment d: metadata.annotations.disruption-lab.io/startup-seconds: "
        "'soon' is not a duration (use seconds or e.g. '90s', '30m', '2h')"
    )


def test_every_error_is_reported_and_nothing_is_returned():
    text = CLASSES + pod("p", klass="gold") + pod("q", gpus="1.5")
    assert [line for _, line, _, _ in errors(text)] == [11, 20]


# ============================================================================ hostile input
def test_a_yaml_alias_bomb_is_refused_at_its_document_not_expanded():
    lines = [
        "apiVersion: v1",
        "kind: Pod",
        "metadata:",
        "  name: p",
        "  annotations:",
        "    a: &a [x, x, x, x, x, x, x, x, x, x]",
    ]
    previous = "a"
    for name in "bcdefghi":
        lines.append(f"    {name}: &{name} [{', '.join(['*' + previous] * 10)}]")
        previous = name
    lines.append("  labels: {x: *i}")
    assert errors(CLASSES + "---\n" + "\n".join(lines) + "\n") == [
        (
            "m.yaml",
            11,
            1,
            "YAML aliases expand the document by more than 100,000 values; write the values out",
        )
    ]


def test_json_nested_past_the_decoder_s_depth_is_an_error_not_a_traceback():
    text = (
        '{"kind": "List", "items": [{"kind": "Pod", "metadata": {"name": "p", '
        '"labels": ' + "[" * 100_000 + "]" * 100_000 + "}}]}"
    )
    assert errors(text, "deep.json") == [
        ("deep.json", 1, 1, "not JSON this reader accepts: nested too deeply")
    ]


def test_a_nul_escape_in_json_is_refused_at_its_object():
    text = (
        '{"kind": "List", "items": [\n {"apiVersion": "v1", "kind": "Node", '
        '"metadata": {"name": "n\\u0000x"}}]}'
    )
    assert errors(text, "nodes.json") == [
        ("nodes.json", 2, 2, "metadata.name: contains a NUL character, which text may not contain")
    ]


def test_resources_that_are_not_an_object_are_an_error_naming_the_field():
    text = (
        "apiVersion: v1\nkind: Pod\nmetadata: {name: p}\nspec:\n"
        "  containers: [{name: c, resources: {requests: [1, 2]}}]\n"
    )
    assert errors(text) == [
        ("m.yaml", 1, 1, "Pod p: spec.containers resources.requests: must be an object, not [1, 2]")
    ]
