"""The run page's charts and their JSON endpoints, through Django's test client: what
each persona sees, and that every figure the page promises is in its data."""

from __future__ import annotations

import gzip
import json
import re
from pathlib import Path

import plotly
import pytest
from django.core.cache import cache
from django.urls import reverse

import scheduler_core as sc
from experiments import services
from experiments.charts.metrics import HEADLINE_METRICS
from experiments.charts.style import BUNDLED_TRACES
from experiments.models import Replication, Status
from experiments.views import charts as chart_views
from tests.factories import (
    ExperimentFactory,
    ReplicationFactory,
    RunFactory,
    preset_document,
    stored_events,
)
from tests.web.charts_support import big_cluster_spec
from tests.web.pages import element_text

RUN_FIGURES = {f"headline-{m}" for m in HEADLINE_METRICS} | {
    "milestones",
    "tradeoff",
    "costs",
    "recovery",
}


@pytest.fixture(autouse=True)
def _fresh_cache():
    """Run ids restart with every test database; the charts cache must not remember."""
    cache.clear()


def _finished(experiment, user, capture) -> object:
    with capture(execute=True):
        run = services.run_enqueue(experiment=experiment, user=user)
    run.refresh_from_db()
    assert run.status == Status.SUCCEEDED
    return run


@pytest.fixture
def s1_run(alice, bob, django_capture_on_commit_callbacks):
    experiment = ExperimentFactory(
        owner=alice, shared_with=[bob], spec=preset_document("s1-training-vs-shards")
    )
    return _finished(experiment, alice, django_capture_on_commit_callbacks)


@pytest.fixture
def big_run(alice, django_capture_on_commit_callbacks):
    experiment = ExperimentFactory(owner=alice, spec=big_cluster_spec())
    return _finished(experiment, alice, django_capture_on_commit_callbacks)


def chart_data(html: str) -> dict:
    found = re.search(
        r'<script id="run-charts-data" type="application/json">(.*?)</script>', html, re.S
    )
    assert found, "no chart data on the page"
    return json.loads(found.group(1))


def _get(client, name, run, **params):
    return client.get(reverse(f"experiments:{name}", args=[run.pk]), params)


def test_a_finished_run_shows_every_chart_with_its_figure(alice_client, s1_run):
    html = _get(alice_client, "run", s1_run).content.decode()

    data = chart_data(html)
    containers = set(re.findall(r'data-chart="([^"]+)"', html))
    assert set(data["figures"]) == RUN_FIGURES
    assert containers == RUN_FIGURES | {"occupancy", "gantt", "states"}
    assert set(data["timeline"]["figures"]) == {"gantt", "states"}
    assert data["timeline"]["groups"] == []
    assert [v["label"] for v in data["variants"]] == sc.variant_names(sc.parse_spec(s1_run.spec))
    assert all(figure["data"] and figure["layout"] for figure in data["figures"].values())


def test_the_cost_curves_end_at_the_stored_totals(alice_client, s1_run):
    """The cost query reads a fraction of the log; the totals must not change."""
    costs = chart_data(_get(alice_client, "run", s1_run).content.decode())["figures"]["costs"]

    ends = {t["name"]: t["y"][-1] for t in costs["data"]}
    for variant in s1_run.aggregate:
        metrics = variant["metrics"]
        assert ends[f"{variant['variant']}: lost work"] == metrics["lost_work"]["mean"]
        assert ends[f"{variant['variant']}: wasted GPU·s"] == metrics["wasted_gpu_seconds"]["mean"]


def test_charts_come_before_the_summary_and_use_the_local_plotly(alice_client, s1_run):
    html = _get(alice_client, "run", s1_run).content.decode()

    assert html.index('id="charts-glance"') < html.index('id="summary"')
    sources = re.findall(r'<script src="([^"]+)"', html)
    assert sources == [
        f"/charts/plotly.min.js?v={chart_views.plotly_digest()}",
        "/static/js/charts.js",
        "/static/js/decisions.js",
    ]
    assert re.findall(r'(?:src|href)="(?:https?:)?//', html) == []


def test_the_assumptions_say_which_policies_are_ours(alice_client, s1_run):
    html = _get(alice_client, "run", s1_run).content.decode()

    rows = element_text(html, "id", "assumptions-policies")[0]
    assert "checkpoint-aware : ours, not a Kubernetes behaviour" in rows
    assert "pod pod : Kubernetes behaviour" in rows
    assert "workloads.train.podGroup.disruptionMode = All" in rows
    profiles = element_text(html, "id", "assumptions-workloads")[0]
    assert "every 1800s, 60s to write" in profiles


def test_a_run_that_is_not_finished_has_no_charts(alice_client, experiment):
    run = RunFactory(experiment=experiment, status=Status.RUNNING)
    ReplicationFactory(run=run, status=Status.RUNNING)

    html = _get(alice_client, "run", run).content.decode()

    assert "run-charts-data" not in html
    assert "plotly.min.js" not in html


def test_the_first_page_of_workloads_and_events_is_on_the_page(alice_client, s1_run):
    data = chart_data(_get(alice_client, "run", s1_run).content.decode())

    assert [r["workload"] for r in data["workloads"]["rows"]] == ["train", "eval", "urgent"]
    assert data["workloads"]["sort"] == "-lost_work"
    first = Replication.objects.get(run=s1_run, variant_index=0, replication=0)
    setup = sum(e.time <= 0 for e in stored_events(first))  # folded away at first (#16 §2)
    assert data["events"]["total"] == first.event_count - setup
    assert data["events"]["setup_hidden"] == setup
    # The first page: 100 rows, or all of them when the log is shorter (s1's is, now that
    # a segment's periodic checkpoint writes are one row).
    assert len(data["events"]["rows"]) == min(100, data["events"]["total"])
    assert data["events"]["total"] > 50
    assert "Preempted" in data["events"]["reasons"]


def test_the_timeline_endpoint_draws_any_variant_of_the_run(alice_client, s1_run):
    replication = Replication.objects.get(run=s1_run, variant="workload-aware-all")

    answer = _get(alice_client, "run-chart-timeline", s1_run, replication=replication.pk).json()

    victims = next(t for t in answer["figures"]["gantt"]["data"] if t["name"] == "victim")
    assert sorted(c[0] for c in victims["customdata"]) == [f"eval-{i}" for i in range(8)]
    assert answer["replication"] == replication.pk


def test_the_timeline_and_costs_are_drawn_over_each_variants_own_horizon_and_nodes(
    alice, alice_client, django_capture_on_commit_callbacks
):
    """A variant may override the horizon or a pool's size: its timeline runs to its own
    horizon and draws its own nodes (the base spec's cut a 2-hour variant at 1 hour and
    left a third node, with the pod scheduled there, undrawn), and the cost chart's
    lines each end at their variant's own horizon."""
    document = {
        "name": "variant-scopes",
        "horizonSeconds": 3600,
        "cluster": {"nodePools": [{"name": "gpu", "count": 2, "gpus": 8}]},
        "priorityClasses": [{"name": "batch", "value": 100, "globalDefault": True}],
        "workloads": [
            {"name": "train", "members": 2, "gpus": 8, "durationSeconds": 6000},
            {"name": "notebook", "members": 1, "gpus": 8, "arrival": 1200},
        ],
        "variants": [
            {"name": "base"},
            {"name": "two-hours", "set": {"horizonSeconds": 7200}},
            {"name": "three-nodes", "set": {"cluster.nodePools.gpu.count": 3}},
        ],
    }
    from experiments.specs import spec_document

    experiment = ExperimentFactory(owner=alice, spec=spec_document(sc.parse_spec(document)))
    run = _finished(experiment, alice, django_capture_on_commit_callbacks)

    def timeline_of(variant):
        replication = Replication.objects.get(run=run, variant=variant)
        return _get(alice_client, "run-chart-timeline", run, replication=replication.pk).json()

    def nodes_drawn(answer):
        return answer["figures"]["gantt"]["layout"]["yaxis"]["ticktext"]

    base, longer, larger = (timeline_of(v) for v in ("base", "two-hours", "three-nodes"))
    assert base["figures"]["gantt"]["layout"]["xaxis"]["range"] == [0.0, 3600.0]
    assert longer["figures"]["gantt"]["layout"]["xaxis"]["range"] == [0.0, 7200.0]
    assert longer["figures"]["states"]["layout"]["xaxis"]["range"] == [0.0, 7200.0]
    assert nodes_drawn(base) == ["gpu-0", "gpu-1"]
    assert nodes_drawn(larger) == ["gpu-0", "gpu-1", "gpu-2"]
    notebook = [t for t in larger["figures"]["gantt"]["data"] if "notebook" in str(t.get("name"))]
    assert notebook  # scheduled on the third node, and drawn there

    costs = chart_data(_get(alice_client, "run", run).content.decode())["figures"]["costs"]
    ends = {t["name"].split(":")[0]: t["x"][-1] for t in costs["data"]}
    assert ends == {"base": 3600.0, "two-hours": 7200.0, "three-nodes": 3600.0}


def test_a_large_cluster_gets_a_heatmap_and_a_gantt_of_one_group(alice_client, big_run):
    data = chart_data(_get(alice_client, "run", big_run).content.decode())

    timeline = data["timeline"]
    assert timeline["groups"] == ["a", "b"]
    assert set(timeline["figures"]) == {"occupancy", "gantt", "states"}
    heatmap = timeline["figures"]["occupancy"]["data"][0]
    assert heatmap["type"] == "heatmap"
    assert heatmap["y"] == ["a", "b"]
    busiest = timeline["group"]
    gantt = timeline["figures"]["gantt"]["layout"]
    assert gantt["title"]["text"] == f"GPU timeline: {timeline['groups'][busiest]}"
    assert len(gantt["yaxis"]["ticktext"]) == 40

    other = 1 - busiest
    answer = _get(
        alice_client,
        "run-chart-timeline",
        big_run,
        replication=timeline["replication"],
        group=other,
    ).json()
    assert answer["group"] == other
    assert answer["figures"]["gantt"]["layout"]["yaxis"]["ticktext"][0] == ("a-0", "b-0")[other]


def test_the_workload_endpoint_filters_sorts_and_pages(alice_client, s1_run):
    replication = Replication.objects.get(run=s1_run, variant="pod")

    answer = _get(
        alice_client,
        "run-chart-workloads",
        s1_run,
        replication=replication.pk,
        q="training",
        sort="workload",
    ).json()

    assert [r["workload"] for r in answer["rows"]] == ["train", "urgent"]
    assert [r["urgent"] for r in answer["rows"]] == [False, True]
    assert (answer["total"], answer["all"], answer["sort"]) == (2, 3, "workload")


def test_the_event_endpoint_filters_like_the_event_log(alice_client, s1_run):
    replication = Replication.objects.get(run=s1_run, variant="pod")

    answer = _get(
        alice_client,
        "run-chart-events",
        s1_run,
        replication=replication.pk,
        reason="Preempted",
        node="node-a",
    ).json()

    assert answer["total"] == 2
    assert [(r["type"], r["object"], r["message"]) for r in answer["rows"]] == [
        ("Warning", "pod/train-1", "Preempted by default/urgent-1 on node node-a"),
        ("Warning", "pod/train-0", "Preempted by default/urgent-2 on node node-a"),
    ]
    assert answer["filters"] == {"reason": "Preempted", "node": "node-a"}


def test_the_event_endpoint_pages(alice_client, s1_run):
    replication = Replication.objects.get(run=s1_run, variant="pod")

    last = _get(
        alice_client, "run-chart-events", s1_run, replication=replication.pk, page=999, setup=1
    ).json()

    assert last["page"] == last["pages"] == -(-replication.event_count // 100)
    assert len(last["rows"]) == replication.event_count - 100 * (last["pages"] - 1)
    assert last["rows"][-1]["reason"] == "ComputedWork"


@pytest.mark.parametrize("name", ["run-chart-timeline", "run-chart-workloads", "run-chart-events"])
def test_a_replication_of_another_run_is_not_found(alice_client, s1_run, big_run, name):
    foreign = Replication.objects.filter(run=big_run).first()

    assert _get(alice_client, name, s1_run, replication=foreign.pk).status_code == 404
    assert _get(alice_client, name, s1_run, replication="x").status_code == 404


@pytest.mark.parametrize(
    "name", ["run", "run-chart-timeline", "run-chart-workloads", "run-chart-events"]
)
def test_a_stranger_sees_nothing_of_the_run(charlie_client, bob_client, s1_run, name):
    replication = Replication.objects.filter(run=s1_run).first()

    assert _get(charlie_client, name, s1_run, replication=replication.pk).status_code == 404
    assert _get(bob_client, name, s1_run, replication=replication.pk).status_code == 200


def test_plotly_js_is_our_bundle_of_the_plotly_package_version(client):
    """The served bundle (tools/plotly/build.mjs) is the plotly.js the installed plotly
    package validates figures against, with exactly the trace types the builders use."""
    url = reverse("experiments:plotly-js")

    packed = client.get(url, HTTP_ACCEPT_ENCODING="gzip, br")
    plain = client.get(url)
    again = client.get(url, HTTP_IF_NONE_MATCH=packed["ETag"])

    assert packed.status_code == plain.status_code == 200
    assert packed["Content-Encoding"] == "gzip"
    assert gzip.decompress(packed.content) == plain.content
    package_js = Path(plotly.__file__).parent / "package_data" / "plotly.min.js"
    version = re.search(rb"plotly\.js (v[\d.]+)", package_js.read_bytes()[:200]).group(1)
    header = plain.content[:200].decode()
    assert header.startswith(f"/**\n* plotly.js {version.decode()} (Disruption Lab bundle: ")
    assert re.search(r"bundle: ([a-z, ]+)\)", header).group(1).split(", ") == list(BUNDLED_TRACES)
    assert len(plain.content) < 1_300_000  # the full plotly.min.js is 4.8 MB
    assert packed["Cache-Control"] == "public, max-age=31536000, immutable"
    assert packed["ETag"] == f'"plotly-{chart_views.plotly_digest()}"'
    assert again.status_code == 304


def test_the_run_page_draws_only_trace_types_the_bundle_holds(alice_client, s1_run):
    data = chart_data(_get(alice_client, "run", s1_run).content.decode())

    figures = [*data["figures"].values(), *data["timeline"]["figures"].values()]
    drawn = {trace["type"] for figure in figures for trace in figure["data"]}
    assert {"bar", "scatter"} <= drawn <= set(BUNDLED_TRACES)  # heatmap: large clusters


# ------------------------------------------------------------ precomputed by the worker
def _refuse(*args, **kwargs):
    raise AssertionError("built on the request path: the worker's cache entry was not read")


def test_the_worker_precomputes_the_run_page_so_a_view_builds_nothing(
    alice_client, s1_run, monkeypatch
):
    """Issue #16 §5: the page of a run the worker finished only reads the shared cache:
    with every builder of its charts and reads refused, it still answers in full, and so
    does the timeline of each variant's first replication (its variant menu)."""
    from experiments import selectors
    from experiments.views import chart_data as views_chart_data

    for name in ("_run_charts", "replication_timeline", "workload_table", "event_page"):
        monkeypatch.setattr(views_chart_data, name, _refuse)
    for name in ("run_status", "run_replication_count"):
        monkeypatch.setattr(selectors, name, _refuse)

    page = _get(alice_client, "run", s1_run)
    data = chart_data(page.content.decode())

    assert page.status_code == 200
    assert set(data["figures"]) == RUN_FIGURES
    firsts = {v["replication"] for v in data["variants"]}
    assert len(firsts) == len(s1_run.aggregate) > 1
    for replication in firsts:
        answer = _get(alice_client, "run-chart-timeline", s1_run, replication=replication)
        assert answer.status_code == 200
        assert answer.json()["replication"] == replication


def test_the_other_variants_timelines_are_built_once_the_run_is_published(
    alice, django_capture_on_commit_callbacks, monkeypatch
):
    """The page and the first variant's timeline are in the cache before the run is saved
    succeeded; the other variants' timelines (a menu loads them one at a time: 5.8 s of
    the openb sweep's 8 s tail) are built after, so they do not hold its success back."""
    from experiments import selectors_run_page
    from experiments.models import Run

    seen: list[str] = []
    original = selectors_run_page._timeline_read

    def noting(run, replication_id):
        seen.append(Run.objects.get(pk=run.pk).status)
        original(run, replication_id)

    monkeypatch.setattr(selectors_run_page, "_timeline_read", noting)
    experiment = ExperimentFactory(owner=alice, spec=preset_document("s1-training-vs-shards"))
    run = _finished(experiment, alice, django_capture_on_commit_callbacks)

    assert len(seen) == len(run.aggregate) > 1
    assert seen[0] != Status.SUCCEEDED  # built before the run was saved
    assert set(seen[1:]) == {Status.SUCCEEDED}


def test_a_failed_precompute_still_finishes_the_run_and_the_first_view_builds_it(
    alice, alice_client, django_capture_on_commit_callbacks, monkeypatch
):
    from experiments.views import chart_data as views_chart_data

    built = views_chart_data._run_charts
    monkeypatch.setattr(views_chart_data, "_run_charts", _refuse)
    experiment = ExperimentFactory(owner=alice, spec=preset_document("s1-training-vs-shards"))
    run = _finished(experiment, alice, django_capture_on_commit_callbacks)
    monkeypatch.setattr(views_chart_data, "_run_charts", built)

    data = chart_data(_get(alice_client, "run", run).content.decode())

    assert run.status == Status.SUCCEEDED
    assert run.aggregate
    assert set(data["figures"]) == RUN_FIGURES
