"""Spec validation: every bad input is one clear error naming the field (issue #2 §5)."""

from __future__ import annotations

import copy
from typing import Any

import pytest

import scheduler_core as sc
from scheduler_core.spec import SpecError, parse_spec, resolve_variant

BASE: dict[str, Any] = {
    "cluster": {"nodePools": [{"name": "gpu", "count": 2, "gpus": 8}]},
    "priorityClasses": [
        {"name": "batch", "value": 100, "globalDefault": True},
        {"name": "urgent", "value": 1000},
    ],
    "workloads": [{"name": "train", "members": 4, "gpus": 2, "priorityClassName": "batch"}],
}


def spec_with(path: str, value: Any) -> dict[str, Any]:
    data = copy.deepcopy(BASE)
    node: Any = data
    parts = path.split(".")
    for part in parts[:-1]:
        node = node[int(part)] if part.isdigit() else node[part]
    last = parts[-1]
    if last.isdigit():
        node[int(last)] = value
    else:
        node[last] = value
    return data


def errors_of(data: Any) -> list[dict[str, str]]:
    with pytest.raises(SpecError) as info:
        parse_spec(data)
    return info.value.errors


BAD_INPUTS = [
    (
        "negative-gpus",
        spec_with("workloads.0.gpus", -1),
        "workloads[0].gpus",
        "greater than or equal to 0",
    ),
    ("fractional-gpus", spec_with("workloads.0.gpus", 1.5), "workloads[0].gpus", "whole number"),
    (
        "unknown-class",
        spec_with("workloads.0.priorityClassName", "gold"),
        "workloads[0].priorityClassName",
        "no PriorityClass with name 'gold' was found",
    ),
    (
        "two-global-defaults",
        spec_with("priorityClasses.1", {"name": "urgent", "value": 1000, "globalDefault": True}),
        "priorityClasses[1].globalDefault",
        "only one PriorityClass may be globalDefault",
    ),
    (
        "class-above-1e9",
        spec_with("priorityClasses.1", {"name": "urgent", "value": 1_000_000_001}),
        "priorityClasses[1].value",
        "above 1,000,000,000",
    ),
    (
        "system-prefix",
        spec_with("priorityClasses.1", {"name": "system-gold", "value": 5}),
        "priorityClasses[1].name",
        "reserved",
    ),
    (
        "min-count-above-members",
        spec_with("workloads.0.podGroup", {"minCount": 5}),
        "workloads[0]",
        "minCount (5) is above members (4)",
    ),
    (
        "pod-larger-than-every-node",
        spec_with("workloads.0.gpus", 16),
        "workloads[0].gpus",
        "more than any node has",
    ),
    (
        "unknown-preemption",
        spec_with("policy", {"preemption": "aggressive"}),
        "policy.preemption",
        "unknown preemption policy 'aggressive'",
    ),
    (
        "unknown-placement",
        spec_with("variants", [{"name": "v", "placement": "Random"}]),
        "variants[0].placement",
        "unknown placement scoring 'Random'",
    ),
    ("unknown-field", spec_with("workloads.0.gpu", 1), "workloads[0].gpu", "unknown field"),
    ("bad-duration", spec_with("horizonSeconds", "soon"), "horizonSeconds", "not a duration"),
    (
        "unknown-disruption",
        spec_with("events", [{"at": 5, "type": "meteor", "nodes": ["gpu-0"]}]),
        "events[0].type",
        "unknown disruption source 'meteor'",
    ),
    (
        "unknown-node",
        spec_with("initialState", [{"workload": "train", "node": "gpu-9"}]),
        "initialState[0].node",
        "no node named 'gpu-9'",
    ),
    ("no-nodes", spec_with("cluster", {}), "cluster", "at least one node pool or node"),
    (
        "too-many-recorded-pods",
        spec_with("initialState", [{"workload": "train", "node": "gpu-0"}] * 5),
        "initialState[4].workload",
        "more recorded pods than the 4 member(s) of 'train'",
    ),
    (
        "member-recorded-twice",
        spec_with("initialState", [{"workload": "train", "node": "gpu-0", "member": 1}] * 2),
        "initialState[1].member",
        "member 1 of 'train' is recorded twice",
    ),
]


@pytest.mark.parametrize(
    ("data", "path", "fragment"), [b[1:] for b in BAD_INPUTS], ids=[b[0] for b in BAD_INPUTS]
)
def test_bad_input_names_the_field_and_the_problem(data: Any, path: str, fragment: str) -> None:
    errors = errors_of(data)
    assert any(e["path"] == path and fragment in e["message"] for e in errors), errors


def test_malformed_yaml_reports_the_line() -> None:
    errors = errors_of("cluster:\n  nodes: [\n")
    assert errors[0]["path"] == ""
    assert errors[0]["message"].startswith("malformed YAML: line 3")


def test_a_spec_must_be_a_mapping() -> None:
    assert errors_of("- 1\n- 2\n")[0]["message"] == "the spec must be a mapping (YAML object)"


def test_durations_accept_units() -> None:
    spec = parse_spec(spec_with("horizonSeconds", "2h"))
    assert spec.horizon_seconds == 7200


def test_variant_overrides_are_validated_like_the_spec() -> None:
    data = spec_with("variants", [{"name": "bad", "set": {"workloads.train.gpus": -2}}])
    errors = errors_of(data)
    assert errors[0]["path"] == "variants[0].set.workloads[0].gpus"


def test_variant_override_errors_use_the_spec_path_style() -> None:
    data = spec_with(
        "variants", [{"name": "bad", "set": {"workloads.train.priorityClassName": "gold"}}]
    )
    assert errors_of(data)[0]["path"] == "variants[0].set.workloads[0].priorityClassName"


def test_policy_names_list_every_extension_point() -> None:
    names = sc.policy_names()
    assert names["preemption"] == ["none", "pod", "workload-aware", "checkpoint-aware"]
    assert names["placement"] == ["MostAllocated", "LeastAllocated"]


def test_aggregate_takes_stored_summaries_or_rows_that_carry_one() -> None:
    result = sc.simulate(sc.get_preset("s3-grace-period").spec(), "grace-30s")

    class StoredRow:
        summary = dict(result.summary)

    expected = sc.aggregate([result, result])
    assert sc.aggregate([result.summary, dict(result.summary)]) == expected
    assert sc.aggregate([StoredRow(), StoredRow()]) == expected


def test_variants_can_be_left_to_the_simulation_that_resolves_them() -> None:
    """A run's frozen copy was validated whole; a task only resolves its own variant."""
    data = spec_with(
        "variants", [{"name": "bad", "set": {"workloads.train.gpus": -2}}, {"name": "good"}]
    )
    spec = parse_spec(data, check_variants=False)
    assert sc.simulate(spec, "good").variant == "good"
    with pytest.raises(SpecError):
        sc.simulate(spec, "bad")


def test_variant_override_of_an_unknown_path_is_refused() -> None:
    data = spec_with("variants", [{"name": "bad", "set": {"workloads.nope.gpus": 2}}])
    assert "'workloads.nope' not found" in errors_of(data)[0]["message"]


def test_override_can_fill_a_null_section() -> None:
    override = {"workloads.train.pdb": {"minAvailable": 3}}
    data = spec_with("variants", [{"name": "pdb", "set": override}])
    spec = parse_spec(data)
    resolved = resolve_variant(spec, "pdb")
    assert resolved.spec.workloads[0].pdb is not None
    assert resolved.spec.workloads[0].pdb.min_available == 3


def test_grid_expands_to_named_variants() -> None:
    data = spec_with(
        "grid",
        {"preemption": ["none", "pod"], "workloads.train.checkpoint.intervalSeconds": [30, 3600]},
    )
    names = sc.variant_names(parse_spec(data))
    assert names == [
        "preemption=none, intervalSeconds=30",
        "preemption=none, intervalSeconds=3600",
        "preemption=pod, intervalSeconds=30",
        "preemption=pod, intervalSeconds=3600",
    ]


def test_spec_round_trips_through_yaml() -> None:
    spec = sc.get_preset("s2-jump-the-queue").spec()
    assert parse_spec(sc.spec_to_yaml(spec)) == spec


def test_spec_yaml_is_the_same_text_from_libyaml_and_stops_at_a_budget() -> None:
    """spec_to_yaml writes with libyaml's emitter where PyYAML has it: the text must be
    the one PyYAML's own emitter writes, for every preset (the studies' flow lists too).
    spec_to_yaml_within gives that text up to its budget and None past it, having
    stopped writing there (a page shows a spec only up to a size)."""
    import yaml

    from scheduler_core import spec as spec_module
    from scheduler_core.presets import list_presets

    class PurePython(yaml.SafeDumper):
        pass

    PurePython.add_representer(
        spec_module._FlowList,
        lambda d, data: d.represent_sequence("tag:yaml.org,2002:seq", data, flow_style=True),
    )
    presets = list_presets(studies=True)
    assert any(p.study for p in presets)
    for preset in presets:
        spec = preset.spec()
        data = spec_module._yaml_data(spec)
        text = sc.spec_to_yaml(spec)
        assert text == yaml.dump(data, Dumper=PurePython, sort_keys=False, allow_unicode=True)
        assert parse_spec(text) == spec
        assert sc.spec_to_yaml_within(spec, len(text)) == text
        assert sc.spec_to_yaml_within(spec, len(text) - 1) is None
        assert spec_module._keys_length(data, 10**9) <= len(text)  # a lower bound
    written: list[int] = []
    bounded = spec_module._BoundedText(100)
    original = bounded.write

    def counting(part: str) -> None:
        written.append(len(part))
        original(part)

    bounded.write = counting  # type: ignore[method-assign]
    with pytest.raises(spec_module._TooLongError):
        yaml.dump(
            spec_module._yaml_data(sc.get_preset("s2-jump-the-queue").spec()),
            bounded,
            Dumper=spec_module._SpecDumper,
        )
    assert sum(written[:-1]) <= 100  # nothing written past the budget


def test_a_spec_far_past_the_budget_is_not_written_at_all(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    """Its keys alone pass the budget, so no YAML is built (PyYAML represents the whole
    document before writing: 2.8 s for a recorded cluster's spec)."""
    from scheduler_core import spec as spec_module

    data = copy.deepcopy(BASE)
    data["workloads"] = [
        {"name": f"w{i}", "members": 1, "gpus": 1, "priorityClassName": "batch"}
        for i in range(2000)
    ]
    spec = parse_spec(data)
    assert len(sc.spec_to_yaml(spec)) > 20_000

    def refused(*args: Any) -> None:
        raise AssertionError("the YAML was built")

    monkeypatch.setattr(spec_module, "_dump_yaml", refused)
    assert sc.spec_to_yaml_within(spec, 20_000) is None


def _three_mistakes() -> dict[str, Any]:
    """Issue 16 §1: a fractional GPU count, a misspelt class and two default classes."""
    data = copy.deepcopy(BASE)
    data["workloads"][0]["gpus"] = 1.5
    data["workloads"].append({"name": "notebook", "gpus": 1, "priorityClassName": "urgnet"})
    data["priorityClasses"][1]["globalDefault"] = True
    return data


def test_every_error_is_reported_at_once_shape_and_cross_field_together() -> None:
    paths = {error["path"]: error["message"] for error in errors_of(_three_mistakes())}

    assert "workloads[0].gpus" in paths
    assert (
        paths["workloads[1].priorityClassName"] == "no PriorityClass with name 'urgnet' was found"
    )
    assert paths["priorityClasses[1].globalDefault"].startswith(
        "only one PriorityClass may be globalDefault"
    )


def test_a_cross_field_rule_is_not_repeated_for_a_path_the_shape_check_named() -> None:
    data = copy.deepcopy(BASE)
    data["workloads"][0]["priorityClassName"] = 7  # not a string: one error, not two
    errors = errors_of(data)
    assert [e["path"] for e in errors].count("workloads[0].priorityClassName") == 1


def test_cross_field_rules_tolerate_a_document_of_any_shape() -> None:
    data = {
        "cluster": 3,
        "priorityClasses": ["x", {"name": 5}, {"name": "a"}],
        "workloads": [None, {"podGroup": "x", "priorityClassName": "missing"}],
    }
    paths = [error["path"] for error in errors_of(data)]
    assert "workloads[1].priorityClassName" in paths


def _resolved_by_round_trip(spec: sc.ExperimentSpec, name: str) -> sc.ExperimentSpec:
    """A variant resolved the plain way: the whole spec dumped, the overrides applied, the
    whole mapping validated again."""
    from scheduler_core.spec import ExperimentSpec, _apply_override, expand_variants

    variant = next(v for v in expand_variants(spec) if v.name == name)
    if not variant.set:
        return spec
    data = spec.model_dump(by_alias=True, exclude={"variants", "grid"})
    for path, value in variant.set.items():
        _apply_override(data, path, value, path)
    return ExperimentSpec.model_validate(data)


@pytest.mark.parametrize("preset", [p.id for p in sc.list_presets()])
def test_a_preset_variant_resolves_as_the_whole_spec_validated_again(preset: str) -> None:
    """Only the top-level fields an override reaches are dumped and validated again, the
    others kept as the models they are: the resolved spec is the plain way's."""
    spec = sc.get_preset(preset).spec()
    for name in sc.variant_names(spec):
        expected = _resolved_by_round_trip(spec, name).model_dump()
        assert resolve_variant(spec, name).spec.model_dump() == expected


@pytest.mark.parametrize(
    "override",
    [
        {"horizonSeconds": 7200},
        {"cluster.nodePools.gpu.count": 3},
        {"policy.preemption": "workload-aware", "policy.checkpointVictims": True},
        {"workloads.train.gpus": 4, "priorityClasses.batch.value": 50},
        {"workloads.train.checkpoint": {"intervalSeconds": 600}},
    ],
)
def test_overrides_anywhere_resolve_as_the_whole_spec_validated_again(
    override: dict[str, Any],
) -> None:
    spec = parse_spec(spec_with("variants", [{"name": "v", "set": override}]))
    resolved = resolve_variant(spec, "v").spec
    assert resolved.model_dump() == _resolved_by_round_trip(spec, "v").model_dump()
    assert resolved.model_dump() != spec.model_copy(update={"variants": []}).model_dump()


def test_an_override_still_meets_the_rules_across_the_spec() -> None:
    """The fields left as models are still checked with the override: a class renamed
    away from under its workloads is refused, naming the override."""
    data = spec_with("variants", [{"name": "v", "set": {"priorityClasses.batch.name": "gold"}}])
    errors = errors_of(data)
    assert errors[0]["path"].startswith("variants[0].set.")
    assert "batch" in errors[0]["message"]
