"""Spare and standby pools (issue #17 §1, docs/failures.md "Spare and standby pools"):
spares are out of service until a failure calls one in, serve after their activation
delay, and a repaired node joins the spare pool; the events and the summary show when a
spare was used."""

from __future__ import annotations

from typing import Any

import pytest

import scheduler_core as sc
from scheduler_core import events as ev
from scheduler_core.spec import STANDBY_ACTIVATION_SECONDS


def fleet(standby: dict[str, Any] | None, *, events: list[dict[str, Any]], **extra: Any):
    pools: list[dict[str, Any]] = [{"name": "gpu", "count": 2, "gpus": 8}]
    if standby is not None:
        pools.append({"name": "spare", "count": 1, "gpus": 8, "standby": standby})
    return {
        "horizonSeconds": extra.pop("horizonSeconds", 3000),
        "cluster": {"nodePools": pools},
        "workloads": [
            {
                "name": "train",
                "members": extra.pop("members", 2),
                "gpus": 8,
                "controller": {"kind": "job"},
            }
        ],
        "events": [dict(e) for e in events],
        **extra,
    }


FAIL_GPU0 = [{"at": 100, "type": "node-failure", "nodes": ["gpu-0"], "recoverAfterSeconds": 1000}]


def run(doc: dict[str, Any], lab) -> Any:
    return lab.run_doc(doc)


def test_a_spare_takes_no_pod_before_a_failure_calls_it_in(lab) -> None:
    out = run(fleet({"mode": "warm"}, events=[], members=3), lab)
    assert {e.node for e in out.of(ev.SCHEDULED)} == {"gpu-0", "gpu-1"}
    assert ("spare-0", 0.0) in {(e.node, e.time) for e in out.of(ev.NODE_CORDONED)}
    assert not out.of(ev.STANDBY_CALLED)


def test_a_warm_spare_replaces_a_failed_node_after_its_activation_delay(lab) -> None:
    out = run(fleet({"mode": "warm", "activationSeconds": 60}, events=FAIL_GPU0), lab)
    (called,) = out.of(ev.STANDBY_CALLED)
    assert (called.time, called.node, called.related, called.value) == (
        100.0,
        "spare-0",
        "gpu-0",
        60,
    )
    (serving,) = out.of(ev.STANDBY_IN_SERVICE)
    assert (serving.time, serving.node, serving.related) == (160.0, "spare-0", "gpu-0")
    replacement = [e for e in out.of(ev.SCHEDULED) if e.time > 100]
    assert [(e.time, e.node) for e in replacement] == [(160.0, "spare-0")]


def test_a_cold_spare_takes_its_default_provisioning_time(lab) -> None:
    out = run(fleet({"mode": "cold"}, events=FAIL_GPU0), lab)
    (serving,) = out.of(ev.STANDBY_IN_SERVICE)
    assert serving.time == 100.0 + STANDBY_ACTIVATION_SECONDS["cold"] == 1000.0


def test_the_repaired_node_joins_the_spare_pool_instead_of_serving(lab) -> None:
    out = run(fleet({"activationSeconds": 60}, events=FAIL_GPU0, members=3), lab)
    (joined,) = out.of(ev.TO_STANDBY)
    assert (joined.time, joined.node) == (1100.0, "gpu-0")
    # the third member stays Pending: the fleet in service is still two nodes
    assert not [e for e in out.of(ev.SCHEDULED) if e.node == "gpu-0" and e.time > 100]


def test_the_repaired_node_is_the_next_spare(lab) -> None:
    events = [
        *FAIL_GPU0,
        {"at": 1500, "type": "node-failure", "nodes": ["gpu-1"], "recoverAfterSeconds": 1000},
    ]
    out = run(fleet({"activationSeconds": 60}, events=events), lab)
    called = [(e.time, e.node, e.related) for e in out.of(ev.STANDBY_CALLED)]
    assert called == [(100.0, "spare-0", "gpu-0"), (1500.0, "gpu-0", "gpu-1")]
    assert [e.time for e in out.of(ev.STANDBY_IN_SERVICE)] == [160.0, 1560.0]


def test_a_failure_with_no_idle_spare_waits_for_the_next_repaired_node(lab) -> None:
    events = [
        {"at": 100, "type": "node-failure", "nodes": ["gpu-0"], "recoverAfterSeconds": 500},
        {"at": 200, "type": "node-failure", "nodes": ["gpu-1"], "recoverAfterSeconds": 2000},
    ]
    out = run(fleet({"activationSeconds": 60}, events=events), lab)
    called = [(e.time, e.node, e.related) for e in out.of(ev.STANDBY_CALLED)]
    assert called == [(100.0, "spare-0", "gpu-0"), (600.0, "gpu-0", "gpu-1")]


def test_without_a_standby_pool_the_repaired_node_serves_again(lab) -> None:
    out = run(fleet(None, events=FAIL_GPU0), lab)
    assert not out.of(ev.STANDBY_CALLED)
    assert not out.of(ev.TO_STANDBY)
    assert [(e.time, e.node) for e in out.of(ev.SCHEDULED) if e.time > 100] == [(1100.0, "gpu-0")]


def test_replaces_limits_which_failures_a_spare_covers(lab) -> None:
    doc = fleet({"replaces": "gpu"}, events=FAIL_GPU0)
    doc["cluster"]["nodePools"].insert(0, {"name": "cpu", "count": 1, "gpus": 0})
    doc["events"].append({"at": 50, "type": "node-failure", "nodes": ["cpu-0"]})
    out = run(doc, lab)
    assert [e.related for e in out.of(ev.STANDBY_CALLED)] == ["gpu-0"]


def test_spare_use_is_a_summary_metric() -> None:
    spec = sc.parse_spec(fleet({"activationSeconds": 60}, events=FAIL_GPU0))
    assert sc.simulate(spec, "default", seed=0).summary["standby_activations"] == 1.0


def test_random_failures_call_spares_deterministically() -> None:
    doc = fleet(
        {"activationSeconds": 120},
        events=[],
        horizonSeconds=30 * 86400,
        failures=[
            {
                "pool": "gpu",
                "interArrival": {"distribution": "exponential", "meanSeconds": "5d"},
                "repair": {"distribution": "constant", "meanSeconds": "1d"},
            }
        ],
    )
    spec = sc.parse_spec(doc)
    one = sc.simulate(spec, "default", seed=3)
    two = sc.simulate(spec, "default", seed=3)
    assert one.events == two.events
    assert one.summary["standby_activations"] >= 1


@pytest.mark.parametrize(
    ("change", "path", "words"),
    [
        (
            lambda d: d["cluster"]["nodePools"][1]["standby"].update(replaces="gpus"),
            "cluster.nodePools[1].standby.replaces",
            "pool 'gpus' not found",
        ),
        (
            lambda d: d["cluster"]["nodePools"][1]["standby"].update(replaces="spare"),
            "cluster.nodePools[1].standby.replaces",
            "is a standby pool itself",
        ),
        (
            lambda d: d["cluster"]["nodePools"][0].update(standby={}),
            "cluster.nodePools",
            "no node would ever serve",
        ),
        (
            lambda d: d["cluster"]["nodePools"][1]["standby"].update(activationSeconds=-1),
            "cluster.nodePools[1].standby.activationSeconds",
            "",
        ),
        (
            lambda d: d["cluster"]["nodePools"][1]["standby"].update(mode="lukewarm"),
            "cluster.nodePools[1].standby.mode",
            "",
        ),
        (
            lambda d: d.update(initialState=[{"workload": "train", "node": "spare-0"}]),
            "initialState[0].node",
            "'spare-0' is a standby node",
        ),
    ],
    ids=["unknown-pool", "replaces-a-spare-pool", "all-standby", "negative", "mode", "initial"],
)
def test_bad_standby_settings_name_their_field(change: Any, path: str, words: str) -> None:
    doc = fleet({"mode": "warm"}, events=[])
    change(doc)
    with pytest.raises(sc.SpecError) as caught:
        sc.parse_spec(doc)
    found = {e["path"]: e["message"] for e in caught.value.errors}
    assert path in found, found
    assert words in found[path]
