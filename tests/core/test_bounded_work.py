"""A spec that passes validation has a bounded cost (issue #10 §1).

The memory-bomb cases run in a child process under ``RLIMIT_AS``: a regression fails
the test (MemoryError, or the time limit) instead of taking the machine down.
"""

from __future__ import annotations

import json
import resource
import subprocess
import sys
import textwrap
from typing import Any

import pytest

import scheduler_core as sc
from scheduler_core.app import Progress, Written
from scheduler_core.cluster import Cluster
from scheduler_core.engine import Engine
from scheduler_core.spec import resolve_variant

DEPLOYMENT = sc.Limits()  # the web app's and the CLI's defaults


def capped(code: str, *, memory_mb: int = 1500, seconds: float = 30) -> dict[str, Any]:
    """Run ``code`` (which prints one JSON value) in a child limited to ``memory_mb`` of
    address space and ``seconds`` of wall time; returns what it printed."""
    limit = memory_mb * 2**20

    def _cap() -> None:
        resource.setrlimit(resource.RLIMIT_AS, (limit, limit))

    result = subprocess.run(
        [sys.executable, "-c", textwrap.dedent(code)],
        capture_output=True,
        text=True,
        timeout=seconds,
        preexec_fn=_cap,
        check=False,
    )
    assert result.returncode == 0, result.stderr[-2000:]
    return json.loads(result.stdout)  # type: ignore[no-any-return]


REFUSE = """
    import json, time
    import scheduler_core as sc
    started = time.process_time()  # CPU seconds: the cost, not the load
    try:
        sc.parse_spec({spec!r}, limits=sc.Limits())
        errors = []
    except sc.SpecError as exc:
        errors = exc.errors
    print(json.dumps({{"errors": errors, "seconds": time.process_time() - started}}))
"""


def refused_capped(spec: Any, memory_mb: int = 1500) -> tuple[list[dict[str, str]], float]:
    out = capped(REFUSE.format(spec=spec), memory_mb=memory_mb)
    return out["errors"], out["seconds"]


def base(**extra: Any) -> dict[str, Any]:
    spec: dict[str, Any] = {
        "horizonSeconds": 3600,
        "cluster": {"nodePools": [{"name": "p", "count": 2, "gpus": 8}]},
        "workloads": [{"name": "w", "gpus": 1}],
    }
    spec.update(extra)
    return spec


def errors_of(document: Any, limits: sc.Limits | None = DEPLOYMENT) -> list[dict[str, str]]:
    with pytest.raises(sc.SpecError) as caught:
        sc.parse_spec(document, limits=limits)
    return caught.value.errors


# ---------------------------------------------------------------- checkpoints
def test_checkpoint_interval_below_one_second_is_refused_naming_the_field() -> None:
    spec = base(workloads=[{"name": "w", "checkpoint": {"intervalSeconds": 0.001}}])
    [error] = errors_of(spec)
    assert error["path"] == "workloads[0].checkpoint.intervalSeconds"
    assert "at least 1 s" in error["message"]


def test_closing_a_segment_allocates_nothing_per_checkpoint() -> None:
    out = capped(
        """
        import json
        from scheduler_core.app import Progress
        p = Progress(None, 1.0, 0.0)
        p.start(0.0, 1.0)
        written = p.stop(1e9)   # a billion checkpoints: a list of them would need ~100 GB
        print(json.dumps({"durable": p.durable, "written": list(written)}))
    """,
        memory_mb=600,
    )
    # One closed-form row for the whole series (count, last write, its progress, cycle).
    assert out == {"durable": 1e9, "written": [1_000_000_000, 1e9, 1e9, 1.0]}


def test_checkpoints_stop_before_the_work_completes() -> None:
    progress = Progress(10.0, 3.0, 0.0)
    progress.start(0.0, 1.0)
    written = progress.stop(20.0)
    # Three writes (at 3, 6 and 9), none at or past the completion at 10.
    assert written == Written(writes=3, last=9.0, progress=9.0, cycle=3.0)
    assert progress.durable == 9.0


# ---------------------------------------------------------------- per node
@pytest.mark.parametrize(
    ("field", "value"),
    [("gpus", 1_000_000_000), ("cpu", 1e9), ("memory", 1e12), ("maxPods", 10**9)],
)
def test_a_node_larger_than_any_machine_is_refused(field: str, value: float) -> None:
    spec = base(cluster={"nodes": [{"name": "n", field: value}]})
    paths = [e["path"] for e in errors_of(spec, limits=None)]
    assert f"cluster.nodes[0].{field}" in paths


def test_the_free_gpu_index_has_a_bucket_per_occupied_count_not_per_gpu() -> None:
    spec = sc.parse_spec(
        base(cluster={"nodes": [{"name": "n", "gpus": 1024}]}, workloads=[{"name": "w", "gpus": 1}])
    )
    cluster = Cluster(spec, [0])
    assert len(cluster.buckets[0].buckets) == 1
    assert len(cluster.reach_buckets[0].buckets) == 1
    assert list(cluster.candidates_by_free(0, 1000, descending=True)) == cluster.nodes


# ---------------------------------------------------------------- cheap counts
def test_a_billion_node_pool_is_refused_before_any_node_name_is_built() -> None:
    spec = base(cluster={"nodePools": [{"name": "p", "count": 1_000_000_000}]})
    errors, seconds = refused_capped(spec, memory_mb=800)
    assert errors == [
        {
            "path": "cluster.nodePools[0].count",
            "message": "1,000,000,000 nodes is above the limit of 5,000 (LAB_MAX_NODES)",
        }
    ]
    assert seconds < 2


def test_a_billion_members_are_refused_naming_the_workload_and_the_setting() -> None:
    spec = base(workloads=[{"name": "w", "members": 1_000_000_000}])
    errors, _ = refused_capped(spec, memory_mb=800)
    assert errors[0]["path"] == "workloads[0].members"
    assert "(LAB_MAX_PODS)" in errors[0]["message"]


def test_timeline_events_are_counted_against_their_limit() -> None:
    events = [{"at": i, "type": "node-failure", "nodes": ["p-0"]} for i in range(1001)]
    errors = errors_of(base(events=events))
    assert errors[0]["path"] == "events"
    assert "(LAB_MAX_TIMELINE_EVENTS)" in errors[0]["message"]


# ---------------------------------------------------------------- variants and grid
def test_a_variant_override_cannot_exceed_the_limits() -> None:
    spec = base(
        variants=[
            {
                "name": "huge",
                "set": {
                    "cluster.nodePools.p.count": 200_000,
                    "workloads.w.members": 2_000_000,
                    "horizonSeconds": 10 * 365 * 86400,
                },
            }
        ]
    )
    errors = errors_of(spec)
    settings = {e["message"].rsplit("(", 1)[-1] for e in errors}
    assert {"LAB_MAX_NODES)", "LAB_MAX_PODS)", "LAB_MAX_HORIZON_SECONDS)"} <= settings
    assert all(e["path"].startswith("variants[0].set.") for e in errors)


def test_every_grid_point_is_checked_against_the_limits() -> None:
    spec = base(grid={"workloads.w.members": [1, 60_000]})
    [error] = errors_of(spec)
    assert error["path"] == "variants[1].set.workloads[0].members"
    assert "(LAB_MAX_PODS)" in error["message"]


def test_a_huge_grid_is_refused_without_expanding_it() -> None:
    grid = {f"workloads.w.{k}": list(range(1, 101)) for k in ("members", "gpus", "cpu")}
    errors, seconds = refused_capped(base(grid=grid), memory_mb=800)
    assert errors == [
        {
            "path": "replications",
            "message": "1,000,000 simulations (variants x replications) is above "
            "the limit of 5,000 (LAB_MAX_TASKS)",
        }
    ]
    assert seconds < 2


def test_a_grid_value_must_be_a_single_value() -> None:
    [error] = errors_of(base(grid={"workloads.w.nodeSelector": [{"a": "b"}]}))
    assert error["path"] == "grid"
    assert "'workloads.w.nodeSelector'[0] must be a single value" in error["message"]


ANCHOR_BOMB = (
    "cluster: {nodes: [{name: n}]}\nlol:\n  a: &a [1,1,1,1,1,1,1,1,1]\n"
    + "".join(
        f"  {c}: &{c} [*{p},*{p},*{p},*{p},*{p},*{p},*{p},*{p},*{p}]\n"
        for p, c in zip("abcdefgh", "bcdefghi", strict=True)
    )
    + "grid: {workloads.w.gpus: *i}\n"
)


def test_a_yaml_anchor_bomb_fails_fast_with_a_clear_error() -> None:
    errors, seconds = refused_capped(ANCHOR_BOMB, memory_mb=800)
    assert len(ANCHOR_BOMB) < 600
    assert errors == [
        {
            "path": "",
            "message": "YAML aliases expand the document by more "
            "than 100,000 values; write the values out",
        }
    ]
    assert seconds < 2


def test_anchors_and_merge_keys_for_shared_defaults_still_load() -> None:
    data = sc.load_document(
        textwrap.dedent("""
        defaults: &defaults {gpus: 1, cpu: 2}
        workloads:
          - {<<: *defaults, name: a}
          - {<<: *defaults, name: b, gpus: 2}
    """)
    )
    assert data["workloads"][1] == {"gpus": 2, "cpu": 2, "name": "b"}


# ---------------------------------------------------------------- the event log
def test_a_drain_blocked_by_a_budget_gives_up_at_its_timeout() -> None:
    spec = sc.parse_spec(
        base(
            horizonSeconds=30 * 86400,
            cluster={"nodes": [{"name": "a", "gpus": 8}, {"name": "b", "gpus": 8}]},
            workloads=[{"name": "w", "members": 2, "pdb": {"maxUnavailable": 0}}],
            events=[{"at": 10, "type": "drain", "nodes": ["a", "b"], "timeoutSeconds": 600}],
        )
    )
    engine = Engine(resolve_variant(spec, "default"), seed=0)
    engine.run()
    assert engine.events_processed < 400  # 600 s / 5 s per node, not 30 days' worth


def test_a_replication_stops_at_its_event_limit() -> None:
    # 400 short pods: about 3,600 events (periodic checkpoints are one row per segment
    # now, so they no longer make a log long).
    spec = sc.parse_spec(
        base(
            workloads=[
                {"name": f"w{i}", "gpus": 1, "arrival": i, "durationSeconds": 10}
                for i in range(400)
            ]
        )
    )
    with pytest.raises(sc.SimulationLimitError, match="more than 1,000 events"):
        sc.simulate(spec, "default", max_events=1000)


# ---------------------------------------------------------------- cost estimate
def test_the_estimate_counts_a_checkpoint_row_per_segment_and_scales_with_replications() -> None:
    # app.py logs a running segment's periodic writes as one CheckpointWritten row, and
    # the writes are closed form (no engine event each): a shorter interval costs nothing.
    none = sc.estimate_cost(sc.parse_spec(base()))
    rare = sc.estimate_cost(
        sc.parse_spec(base(workloads=[{"name": "w", "checkpoint": {"intervalSeconds": 600}}]))
    )
    often = sc.estimate_cost(
        sc.parse_spec(
            base(replications=3, workloads=[{"name": "w", "checkpoint": {"intervalSeconds": 1}}])
        )
    )
    assert rare.events_per_replication - none.events_per_replication == 1
    assert often.events_per_replication == rare.events_per_replication
    assert often.replications == 3
    assert often.events == 3 * often.events_per_replication


def test_the_estimate_resolves_each_variant() -> None:
    spec = sc.parse_spec(
        base(variants=[{"name": "small"}, {"name": "big", "set": {"workloads.w.members": 100}}])
    )
    both, small = sc.estimate_cost(spec), sc.estimate_cost(spec, variants=["small"])
    assert both.events_per_replication > small.events_per_replication
    assert (both.replications, small.replications) == (2, 1)


def test_a_run_over_budget_is_refused_with_the_number_and_the_setting() -> None:
    spec = base(
        replications=100,
        workloads=[{"name": "w", "members": 2000, "checkpoint": {"intervalSeconds": 1}}],
    )
    errors = errors_of(spec, limits=sc.Limits(max_run_events=1_000_000))
    messages = {e["message"].rsplit("(", 1)[-1]: e["message"] for e in errors}
    assert messages["LAB_MAX_RUN_EVENTS)"] == (
        "this run is estimated at 1,600,500 events, above the budget of 1,000,000 "
        "(LAB_MAX_RUN_EVENTS)"
    )
    big = base(workloads=[{"name": "w", "members": 50_000}])
    memory = errors_of(big, limits=sc.Limits(max_replication_memory_mb=100))
    assert any(e["message"].endswith("(LAB_MAX_REPLICATION_MEMORY_MB)") for e in memory)


def test_every_preset_is_within_the_default_budget() -> None:
    for preset in sc.list_presets():
        spec = sc.parse_spec(preset.text, limits=DEPLOYMENT)
        assert sc.estimate_cost(spec).label().startswith("~")


def test_limits_come_from_the_lab_max_settings() -> None:
    limits = sc.Limits.from_env({"LAB_MAX_NODES": "10", "LAB_MAX_RUN_SECONDS": "0"})
    assert (limits.max_nodes, limits.max_run_seconds) == (10, None)
    with pytest.raises(ValueError, match="LAB_MAX_PODS"):
        sc.Limits.from_env({"LAB_MAX_PODS": "many"})
    assert sc.Limits.from_settings({"LAB_MAX_TASKS": 5}).max_tasks == 5
