"""Real simulator output for the chart tests: presets simulated once per test session,
and the shapes the builders take made from them."""

from __future__ import annotations

import functools
from dataclasses import dataclass
from typing import Any

import plotly.graph_objects as go

import scheduler_core as sc
from experiments.charts.data import VariantCosts, VariantResults
from experiments.specs import spec_document
from scheduler_core import timeline as core_timeline


@dataclass(frozen=True)
class Simulated:
    document: dict[str, Any]
    results: dict[str, sc.ReplicationResult]

    @property
    def horizon(self) -> float:
        return float(self.document["horizonSeconds"])

    def variants(self) -> list[VariantResults]:
        return [
            VariantResults(
                name,
                r.preemption,
                r.placement,
                sc.aggregate([r]),
                {m: [r.summary[m]] for m in sc.SUMMARY_NAMES},
            )
            for name, r in self.results.items()
        ]

    def variant_costs(self) -> list[VariantCosts]:
        return [costs_of(name, [r.events]) for name, r in self.results.items()]


def costs_of(label: str, replications: list) -> VariantCosts:
    """What the cost charts of a variant draw, derived by the core from its logs."""
    return VariantCosts(
        label,
        [core_timeline.cost_increments(e) for e in replications],
        [core_timeline.recoveries(e) for e in replications],
    )


@functools.cache
def simulated(preset: str) -> Simulated:
    spec = sc.get_preset(preset).spec()
    return Simulated(
        spec_document(spec), {name: sc.simulate(spec, name, 0) for name in sc.variant_names(spec)}
    )


def variant(label: str, **means: float | None) -> VariantResults:
    """A variant with one replication per metric given."""
    return VariantResults(
        label,
        "pod",
        "MostAllocated",
        {m: {"mean": v, "ci95": None, "n": 1} for m, v in means.items()},
        {m: [v] for m, v in means.items()},
    )


def replicated(label: str, metric: str, values: list[float]) -> VariantResults:
    mean = sum(values) / len(values)
    return VariantResults(
        label,
        "pod",
        "MostAllocated",
        {metric: {"mean": mean, "ci95": 1.5, "n": len(values)}},
        {metric: values},
    )


def validated(figure: dict[str, Any]) -> go.Figure:
    """A builder's figure through plotly's own validation: an unknown or misspelt
    property raises here, so every builder test also checks the figure is valid Plotly."""
    return go.Figure(figure)


def big_cluster_spec() -> dict:
    """80 eight-GPU nodes in two pools, all full; an urgent 4-node group preempts."""
    return spec_document(
        sc.parse_spec(
            {
                "name": "two pools",
                "horizonSeconds": 1800,
                "cluster": {
                    "nodePools": [
                        {"name": "a", "count": 40, "gpus": 8},
                        {"name": "b", "count": 40, "gpus": 8},
                    ]
                },
                "priorityClasses": [
                    {"name": "low", "value": 100, "globalDefault": True},
                    {"name": "high", "value": 1000},
                ],
                "workloads": [
                    {
                        "name": "fill",
                        "kind": "batch",
                        "members": 80,
                        "gpus": 8,
                        "durationSeconds": 36000,
                        "checkpoint": {"intervalSeconds": 600, "writeSeconds": 10},
                    },
                    {
                        "name": "urgent",
                        "kind": "training",
                        "members": 4,
                        "gpus": 8,
                        "arrival": 120,
                        "priorityClassName": "high",
                        "urgent": True,
                        "durationSeconds": 600,
                        "startupSeconds": 30,
                        "podGroup": {"minCount": 4},
                    },
                ],
            }
        )
    )
