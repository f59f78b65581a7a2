"""Seeded synthetic clusters for the benchmarks: the sizes issue #2 names.

Kept here (not in scheduler_core) because it exists to size benchmarks, not for users;
the user-facing generator is the spec's ``synthetic`` section.
"""

from __future__ import annotations

import math
import random
from typing import Any

GPU_MIX = ((1, 0.45), (2, 0.2), (4, 0.2), (8, 0.15))
CLASSES = ((("batch", 100), 0.6), (("training", 500), 0.3), (("interactive", 1000), 0.1))
KINDS = {
    "batch": ("batch", "independent"),
    "training": ("training", "independent"),
    "interactive": ("notebook", "interactive"),
}


def _pick(rng: random.Random, table: tuple) -> Any:
    roll, acc = rng.random(), 0.0
    for value, share in table:
        acc += share
        if roll < acc:
            return value
    return table[-1][0]


def cluster_spec(
    *,
    nodes: int,
    pods: int,
    horizon: float,
    seed: int = 1,
    load: float = 1.3,
    preemption: str = "pod",
) -> dict[str, Any]:
    """``nodes`` 8-GPU nodes; ``pods`` single-member workloads with Poisson arrivals over the
    first 80 % of the horizon and lognormal durations, sized to offer ``load`` times the
    cluster's GPU-seconds so the queue and preemption are exercised."""
    rng = random.Random(seed)
    mean_gpus = sum(g * s for g, s in GPU_MIX)
    mean_duration = load * nodes * 8 * horizon / (pods * mean_gpus)
    sigma = 1.0
    mu = math.log(mean_duration) - sigma**2 / 2
    workloads = []
    t = 0.0
    rate = pods / (0.8 * horizon)
    for i in range(pods):
        t += rng.expovariate(rate)
        name, _ = _pick(rng, CLASSES)
        kind, model = KINDS[name]
        workloads.append(
            {
                "name": f"w{i}",
                "kind": kind,
                "gpus": _pick(rng, GPU_MIX),
                "priorityClassName": name,
                "arrival": round(t, 3),
                "durationSeconds": round(min(rng.lognormvariate(mu, sigma), 20 * mean_duration), 1),
                "startupSeconds": rng.choice((0, 30, 60, 120)),
                "terminationGracePeriodSeconds": 30,
                "stopSeconds": rng.choice((5, 10, 30)),
                "checkpoint": {
                    "intervalSeconds": rng.choice((None, 600, 1800)),
                    "writeSeconds": 10,
                },
                "recovery": {"model": model},
                "controller": {"kind": "job" if name != "interactive" else "none"},
            }
        )
    return {
        "name": f"bench-{nodes}x8-{pods}",
        "horizonSeconds": horizon,
        "seed": seed,
        "cluster": {
            "nodePools": [{"name": "gpu", "count": nodes, "gpus": 8, "cpu": 128, "memory": 2048}]
        },
        "priorityClasses": [
            {"name": n, "value": v, "globalDefault": n == "batch"} for (n, v), _ in CLASSES
        ],
        "workloads": workloads,
        "policy": {"preemption": preemption},
    }
