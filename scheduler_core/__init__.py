"""Disruption Lab's simulator: Kubernetes pod priority and preemption on a GPU cluster.

A plain library (no Django): parse a spec, simulate each variant, read the results.

    spec = parse_spec(open("spec.yaml").read())
    for variant in run_experiment(spec):
        print(variant.name, variant.aggregate["lost_work"]["mean"])
"""

from scheduler_core.durations import format_duration, parse_duration
from scheduler_core.engine import SimulationLimitError
from scheduler_core.estimate import CostEstimate, estimate_cost
from scheduler_core.experiment import (
    ReplicationResult,
    VariantResult,
    aggregate,
    run_experiment,
    simulate,
)
from scheduler_core.limits import LIBRARY_LIMITS, Limits
from scheduler_core.metric_registry import (
    NEVER,
    REGISTRY,
    MetricInfo,
    best_indexes,
    is_unserved,
    metric_info,
    registry_document,
)
from scheduler_core.metrics import ACCOUNTING_NAMES, METRIC_NAMES, SUMMARY_NAMES
from scheduler_core.plugins import policy_names
from scheduler_core.presets import Preset, get_preset, list_presets
from scheduler_core.spec import (
    ExperimentSpec,
    SpecError,
    expand_variants,
    load_document,
    parse_spec,
    resolve_variant,
    spec_to_yaml,
    spec_to_yaml_within,
    spec_warnings,
    variant_names,
)

__version__ = "0.1.0"

__all__ = [
    "ACCOUNTING_NAMES",
    "LIBRARY_LIMITS",
    "METRIC_NAMES",
    "NEVER",
    "REGISTRY",
    "SUMMARY_NAMES",
    "CostEstimate",
    "ExperimentSpec",
    "Limits",
    "MetricInfo",
    "Preset",
    "ReplicationResult",
    "SimulationLimitError",
    "SpecError",
    "VariantResult",
    "aggregate",
    "best_indexes",
    "estimate_cost",
    "expand_variants",
    "format_duration",
    "get_preset",
    "is_unserved",
    "list_presets",
    "load_document",
    "metric_info",
    "parse_duration",
    "parse_spec",
    "policy_names",
    "registry_document",
    "resolve_variant",
    "run_experiment",
    "simulate",
    "spec_to_yaml",
    "spec_to_yaml_within",
    "spec_warnings",
    "variant_names",
]
