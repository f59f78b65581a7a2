"""The pieces every importer shares: streaming, names, defaults, the QoS mapping, YAML."""

from __future__ import annotations

import io

import pytest
import yaml
from hypothesis import assume, given, settings
from hypothesis import strategies as st

from scheduler_core.traces import import_uploads
from scheduler_core.traces import source as source_module
from scheduler_core.traces.build import NodeGrouper, Origin, Provenance, dns_name
from scheduler_core.traces.defaults import DefaultsError, KindDefaults
from scheduler_core.traces.qos import OPENB_QOS, MappingError, load_mapping
from scheduler_core.traces.source import TraceFile
from scheduler_core.traces.yamlout import dump_spec


@pytest.mark.parametrize(
    ("text", "name"),
    [
        ("openb-pod-0001", "openb-pod-0001"),
        ("Instance_3", "instance-3"),
        ("a.b/c", "a-b-c"),
        ("--x--", "x"),
        ("___", "w"),
        ("x" * 80, "x" * 63),
    ],
)
def test_dns_names_are_what_the_spec_and_override_paths_accept(text, name):
    assert dns_name(text) == name


def test_lines_are_decoded_across_chunk_boundaries_and_a_bom_is_dropped(monkeypatch):
    monkeypatch.setattr(source_module, "CHUNK_BYTES", 3)
    data = "\ufeffname,gpus\nnœud,8\r\nlast,1".encode()
    with TraceFile.from_stream(io.BytesIO(data), "n.csv").lines() as lines:
        assert list(lines) == ["name,gpus\n", "nœud,8\r\n", "last,1"]


@settings(max_examples=200, deadline=None)
@given(
    text=st.text(
        alphabet=st.sampled_from(["a", "\n", "\r", "œ", "\u20ac", "\U0001f600", "\ufeff"])
    ),
    chunk=st.integers(min_value=1, max_value=7),
    bom=st.booleans(),
)
def test_a_whole_document_is_its_lines_joined(text, chunk, bom):
    """read_text decodes the file in one piece, without cutting it into lines: the same
    string as the lines joined, whatever size of chunk they were decoded in (multi-byte
    characters split across chunks, a leading byte-order mark dropped, later ones kept;
    marks right after the first are dropped as the lines' chunks happen to fall)."""
    assume(not text.startswith("\ufeff"))
    data = (("\ufeff" if bom else "") + text).encode()
    with pytest.MonkeyPatch.context() as patch:
        patch.setattr(source_module, "CHUNK_BYTES", chunk)
        with TraceFile.from_stream(io.BytesIO(data), "d.json").lines() as lines:
            joined = "".join(lines)
    assert source_module.read_text(TraceFile.from_stream(io.BytesIO(data), "d.json")) == joined
    assert joined == text


def test_a_byte_that_is_not_utf8_deep_in_an_indented_dump_is_an_error_at_its_line():
    """Far past the line reader's first chunks (64 KiB each): the line is counted from
    the bytes before the bad one."""
    pods = ",\n".join(f'    {{"kind": "Pod", "metadata": {{"name": "p{i}"}}}}' for i in range(9000))
    data = ('{"items": [\n' + pods + "\n").encode() + b'    {"name": "\xff"}\n]}'
    assert len(data) > 4 * source_module.CHUNK_BYTES
    errors = import_uploads("kubectl", [(io.BytesIO(data), "dump.json")])
    assert errors == [
        {
            "file": "dump.json",
            "line": 9002,
            "column": 0,
            "message": "not UTF-8 text (invalid start byte)",
        }
    ]


def test_an_upload_is_read_from_its_start_each_time():
    stream = io.BytesIO(b"name,gpus\nn,8\n")
    stream.read()
    result = import_uploads("csv", [(stream, "nodes.csv")])
    assert result.counts["nodes"] == 1


def test_identical_node_shapes_group_even_when_they_arrive_apart():
    grouper = NodeGrouper()
    for name, gpus in (("a", 8), ("b", 4), ("c", 8)):
        grouper.add(name, "gpu", {"gpus": gpus, "labels": {}}, Origin("f", 1))
    provenance = Provenance()
    assert grouper.cluster(provenance) == {
        "nodePools": [{"name": "gpu", "count": 2, "gpus": 8}],
        "nodes": [{"name": "b", "gpus": 4}],
    }
    assert provenance.locate("cluster.nodes[0].gpus") == Origin("f", 1)


def test_defaults_overrides_are_checked():
    table = KindDefaults.builtin().with_overrides({"training.checkpointIntervalSeconds": "null"})
    assert table.for_kind("training").checkpoint_interval_seconds is None
    assert table.for_kind("training").workload_fields()["checkpoint"] == {"intervalSeconds": None}
    for key, value, message in [
        ("gpu.startupSeconds", 1, "unknown kind 'gpu'"),
        ("batch.checkpointIntervalSeconds", 0, "must be positive"),
        ("batch.recovery", "magic", "'magic' is not one of"),
        ("batch.checkpointOnSigterm", "maybe", "'maybe' is not true or false"),
        ("batch.stopSeconds", "-1", "must be at least 0"),
    ]:
        with pytest.raises(DefaultsError, match=message):
            KindDefaults.builtin().with_overrides({key: value})


def test_the_stop_time_never_exceeds_the_grace_period():
    table = KindDefaults.builtin().with_overrides({"training.terminationGracePeriodSeconds": 3})
    assert table.for_kind("training").workload_fields()["stopSeconds"] == 3


def test_a_mapping_document_is_validated():
    with pytest.raises(MappingError, match="maps to 'gold', which is not in 'classes'"):
        load_mapping(
            "classes: [{name: x, value: 1}]\nqos: {LS: {priorityClass: gold}}\n", OPENB_QOS
        )
    with pytest.raises(MappingError, match="less than or equal to 1000000000"):
        OPENB_QOS.with_assignments("LS=top:2000000000")
    with pytest.raises(MappingError, match="is not QOS=CLASS"):
        OPENB_QOS.with_assignments("LS")


def test_a_fallback_maps_labels_the_mapping_does_not_list():
    document = OPENB_QOS.to_document() | {"fallback": "BE"}
    mapping = load_mapping(yaml.safe_dump(document), OPENB_QOS)
    assert mapping.entry("Mystery").priority_class == "best-effort"
    assert OPENB_QOS.entry("Mystery") is None


SCALARS = st.one_of(
    st.none(),
    st.booleans(),
    st.integers(min_value=-(10**12), max_value=10**12),
    st.floats(allow_nan=False, allow_infinity=False, min_value=-1e15, max_value=1e15),
    st.text(st.characters(blacklist_categories=("Cs", "Cc")), max_size=12),
)
VALUES = st.recursive(
    SCALARS,
    lambda inner: st.one_of(
        st.lists(inner, max_size=3),
        st.dictionaries(
            st.text(st.characters(whitelist_categories=("L", "N")), min_size=1, max_size=8),
            inner,
            max_size=3,
        ),
    ),
    max_leaves=8,
)


@settings(max_examples=200, deadline=None)
@given(
    document=st.dictionaries(
        st.sampled_from(["name", "cluster", "workloads", "yes", "on"]), VALUES, max_size=4
    )
)
def test_the_compact_yaml_reads_back_as_the_same_mapping(document):
    assert yaml.safe_load(dump_spec(document, ["a note"])) == (document or None)


def test_an_import_is_deterministic_down_to_the_bytes():
    from pathlib import Path

    from scheduler_core.traces import import_trace

    fixtures = Path(__file__).parent / "fixtures" / "traces"
    files = [fixtures / "openb_nodes.csv", fixtures / "openb_pods.csv"]
    first, second = import_trace("openb", files), import_trace("openb", files)
    assert dump_spec(first.mapping, first.notes) == dump_spec(second.mapping, second.notes)


@pytest.mark.parametrize(
    ("fmt", "data", "line"),
    [
        ("csv", b"name,gpus\nn1,8\nn\xff2,8\n", 3),
        ("jsonl", b'{"node": {"name": "n", "gpus": 8}}\n{"node": {"name": "\xff"}}\n', 2),
        ("pai", b"a1,CPU,96,512,0\n\xfe,CPU,96,512,0\n", 2),
        ("kubectl", b'{"items": [\n\xff]}', 2),
    ],
    ids=["csv", "jsonl", "pai-headerless", "kubectl"],
)
def test_bytes_that_are_not_utf8_are_an_error_at_their_line(fmt, data, line):
    errors = import_uploads(fmt, [(io.BytesIO(data), "upload")])
    assert errors == [
        {
            "file": "upload",
            "line": line,
            "column": 0,
            "message": "not UTF-8 text (invalid start byte)",
        }
    ]
