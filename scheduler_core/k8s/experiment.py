"""What the exporter (``scheduler_core.k8s.export``) writes beyond plain Kubernetes, read
back so that export → import gives the same spec:

* the ConfigMap ``disruption-lab-experiment`` (label ``disruption-lab.io/experiment``):
  the experiment's own settings (name, description, horizon, seed, replications,
  policy, timeline events, variants, grid), which no Kubernetes object holds;
* Nodes annotated ``disruption-lab.io/node-pool: POOL`` and named ``POOL-0``,
  ``POOL-1``...: the node pool again (a timeline event may name the pool);
* ``disruption-lab.io/spot: "true"`` on a Node: a spot node without a cloud's label;
* ``disruption-lab.io/nominal-gpus: none``, ``.../concurrency`` and ``.../order-by`` on
  a Kueue ClusterQueue: the admission-queue fields Kueue has no field for.

A manifest set without these reads exactly as before. An explicit ``--name`` or
``--horizon`` of the import still wins over the ConfigMap.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping, Sequence
from typing import Any

from scheduler_core.k8s.documents import Item
from scheduler_core.spec import SpecError, load_document
from scheduler_core.traces.build import Origin
from scheduler_core.traces.errors import ErrorLog
from scheduler_core.traces.options import Draft, ImportOptions

PREFIX = "disruption-lab.io/"
EXPERIMENT_CONFIGMAP = "disruption-lab-experiment"
EXPERIMENT_KEY = "experiment.yaml"
EXPERIMENT_LABEL = PREFIX + "experiment"
POOL_ANNOTATION = PREFIX + "node-pool"
SPOT_ANNOTATION = PREFIX + "spot"
SETTINGS = (
    "name",
    "description",
    "horizonSeconds",
    "seed",
    "replications",
    "policy",
    "events",
    "failures",
    "variants",
    "grid",
)
POOL_FIELDS = ("gpus", "cpu", "memory", "maxPods", "labels", "taints", "spot", "gpuModel", "mig")

ItemsOf = Callable[[str], Sequence[Item]]


def restore_experiment(
    draft: Draft, items_of: ItemsOf, options: ImportOptions, log: ErrorLog
) -> None:
    """Apply the exporter's settings, pools, spot marks and queue fields to ``draft``."""
    found = _experiment_config(items_of("ConfigMap"), log)
    if found is not None:
        item, config = found
        _apply_settings(draft, config, options)
        _drop_note(draft, item)
        _input_order(draft)
        _initial_state_order(draft)
    _spot_and_pools(draft, items_of("Node"))
    _queue_fields(draft, items_of("ClusterQueue"))


# ============================================================================ settings
def _experiment_config(
    config_maps: Sequence[Item], log: ErrorLog
) -> tuple[Item, dict[str, Any]] | None:
    for item in config_maps:
        labels = item.meta.get("labels") or {}
        if item.name != EXPERIMENT_CONFIGMAP and labels.get(EXPERIMENT_LABEL) != "true":
            continue
        text = (item.data.get("data") or {}).get(EXPERIMENT_KEY)
        try:
            settings = load_document(text) if isinstance(text, str) else None
        except SpecError as exc:
            settings = None
            log.add(
                item.origin.file,
                item.origin.line,
                item.origin.column,
                f"{item.label}: data.{EXPERIMENT_KEY}: {exc}",
            )
        if not isinstance(settings, Mapping):
            log.add(
                item.origin.file,
                item.origin.line,
                item.origin.column,
                f"{item.label}: data.{EXPERIMENT_KEY} must be a YAML mapping",
            )
            return None
        unknown = sorted(set(settings) - set(SETTINGS))
        if unknown:
            log.add(
                item.origin.file,
                item.origin.line,
                item.origin.column,
                f"{item.label}: data.{EXPERIMENT_KEY}: unknown field(s) "
                f"{', '.join(unknown)} (known: {', '.join(SETTINGS)})",
            )
            return None
        return item, dict(settings)
    return None


def _apply_settings(draft: Draft, settings: dict[str, Any], options: ImportOptions) -> None:
    if "name" in settings and not options.name:
        draft.name = str(settings["name"])
    if "description" in settings:
        draft.description = str(settings["description"])
    if "horizonSeconds" in settings and not options.horizon_seconds:
        draft.horizon_seconds = settings["horizonSeconds"]
    for key in ("seed", "replications", "policy", "events", "failures", "variants", "grid"):
        if key in settings:
            draft.extra[key] = settings[key]


def _drop_note(draft: Draft, used: Item) -> None:
    """The reader lists the ConfigMap among the objects it left out; it is used now."""
    kept = []
    for note in draft.notes:
        head, colon, listed = note.partition(": ")
        if colon and head.startswith("left out") and used.label in listed.split(", "):
            rest = [entry for entry in listed.split(", ") if entry != used.label]
            if not rest:
                continue
            note = f"{head}: {', '.join(rest)}"
        kept.append(note)
    draft.notes[:] = kept


def _input_order(draft: Draft) -> None:
    """Workloads in the order their objects appear in the input (the exporter writes them
    in the spec's order; the reader groups them by controller kind)."""
    origins = {
        i: draft.provenance.items.get(f"workloads[{i}]") for i in range(len(draft.workloads))
    }
    order = sorted(origins, key=lambda i: _position(origins[i]))
    if order == list(range(len(order))):
        return
    draft.workloads[:] = [draft.workloads[i] for i in order]
    for new, old in enumerate(order):
        origin = origins[old]
        if origin is not None:
            draft.provenance.record(f"workloads[{new}]", origin)


def _initial_state_order(draft: Draft) -> None:
    """Initial pods by workload (in workload order), then member: the reader lists them
    controller by controller; the order has no meaning to the simulation."""
    rank = {w["name"]: i for i, w in enumerate(draft.workloads)}
    indexed = list(enumerate(draft.initial_state))
    indexed.sort(key=lambda e: (rank.get(e[1]["workload"], len(rank)), e[1].get("member") or 0))
    origins = [draft.provenance.items.get(f"initialState[{old}]") for old, _ in indexed]
    draft.initial_state[:] = [entry for _, entry in indexed]
    for new, origin in enumerate(origins):
        if origin is not None:
            draft.provenance.record(f"initialState[{new}]", origin)


def _position(origin: Origin | None) -> tuple[str, int]:
    return ("", 0) if origin is None else (origin.file, origin.line)


# ============================================================================ nodes
def _spot_and_pools(draft: Draft, nodes: Sequence[Item]) -> None:
    if draft.cluster is None or "nodes" not in draft.cluster:
        return
    annotations = {item.name: item.meta.get("annotations") or {} for item in nodes}
    named: list[dict[str, Any]] = list(draft.cluster["nodes"])
    for node in named:
        if annotations.get(node["name"], {}).get(SPOT_ANNOTATION) == "true":
            node["spot"] = True
    pools = {n["name"]: annotations.get(n["name"], {}).get(POOL_ANNOTATION) for n in named}
    if not any(pools.values()):
        return
    draft.cluster = _regroup(named, pools)


def _regroup(named: list[dict[str, Any]], pools: Mapping[str, str | None]) -> dict[str, Any]:
    """Nodes ``POOL-0..POOL-n`` of one shape, annotated with POOL, become that pool; any
    node that breaks the pattern stays a named node."""
    members: dict[str, list[dict[str, Any]]] = {}
    for node in named:
        pool = pools.get(node["name"])
        if pool:
            members.setdefault(pool, []).append(node)
    node_pools, pooled = [], set()
    for pool, nodes in members.items():
        shape = [{k: n.get(k) for k in POOL_FIELDS} for n in nodes]
        names = [n["name"] for n in nodes]
        if names == [f"{pool}-{i}" for i in range(len(nodes))] and all(
            s == shape[0] for s in shape
        ):
            node_pools.append({"name": pool, "count": len(nodes), **shape[0]})
            pooled.update(names)
    return {"nodePools": node_pools, "nodes": [n for n in named if n["name"] not in pooled]}


# ============================================================================ queues
def _queue_fields(draft: Draft, cluster_queues: Sequence[Item]) -> None:
    queues = {q.get("name"): q for q in draft.extra.get("queues") or []}
    for item in cluster_queues:
        queue = queues.get(item.name)
        if queue is None:
            continue
        annotations = item.meta.get("annotations") or {}
        if annotations.get(PREFIX + "nominal-gpus") == "none":
            queue.pop("nominalGpus", None)
        if PREFIX + "concurrency" in annotations:
            queue["concurrency"] = _whole(annotations[PREFIX + "concurrency"])
        if PREFIX + "order-by" in annotations:
            queue["orderBy"] = str(annotations[PREFIX + "order-by"])


def _whole(value: Any) -> Any:
    text = str(value).strip()
    return int(text) if text.isdigit() else text  # anything else: the spec's error
