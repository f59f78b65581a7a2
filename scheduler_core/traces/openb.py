"""Alibaba cluster-trace-gpu-v2023 ("openb"): a node list and a pod list.

Choices (docs/traces.md): a pod becomes a one-member workload; arrival is its creation
time minus the start of the recorded window (the earliest deletion: a pod is in the
trace because it ended inside the window), pods created earlier arrive at 0 with their
remaining lifetime; its lifetime (scheduled -> deleted) is split into the kind's startup
time and work; a fractional GPU share (``gpu_milli`` < 1000) is rounded up to one whole
GPU, since the simulator, like ``nvidia.com/gpu``, never shares a device; pods never
bound in the recording (``Pending``) are left out unless ``pending="keep"``.
"""

from __future__ import annotations

from collections import Counter
from collections.abc import Iterator, Sequence
from dataclasses import dataclass
from functools import partial
from pathlib import PurePath
from typing import Any

from scheduler_core.placement_study import MAX_DEVICES, StudyPod
from scheduler_core.plugins.gpu_scoring import PAPER_POLICIES
from scheduler_core.study_spec import published
from scheduler_core.traces.build import GPU_MODEL_LABEL, Origin, dns_name
from scheduler_core.traces.errors import ErrorLog
from scheduler_core.traces.options import Draft, ImportOptions
from scheduler_core.traces.qos import OPENB_QOS, QosEntry, QosMapping
from scheduler_core.traces.source import CsvTable, Row, TraceFile

NODE_COLUMNS = ("sn", "cpu_milli", "memory_mib", "gpu", "model")
POD_COLUMNS = (
    "name",
    "cpu_milli",
    "memory_mib",
    "num_gpu",
    "gpu_milli",
    "qos",
    "creation_time",
    "deletion_time",
    "scheduled_time",
)
SPEC_LABEL_PREFIX = "disruption-lab.io/gpu-spec-"
ATTRIBUTION = (
    "Alibaba cluster-trace-gpu-v2023 (openb); research/study use, no "
    "redistribution licence. Cite: Weng et al., 'Beware of Fragmentation', "
    "USENIX ATC '23."
)


@dataclass(frozen=True, slots=True)
class PodRecord:
    name: str
    origin: Origin
    cpu: float
    memory: float
    gpus: int
    shared: bool
    models: tuple[str, ...]
    entry: QosEntry
    creation: float
    deletion: float
    scheduled: float | None


def read_openb(files: Sequence[TraceFile], options: ImportOptions, log: ErrorLog) -> Draft:
    """Read node and pod lists (told apart by their header) into a draft spec."""
    if options.placement_study is not None:
        return _read_study(files, options.placement_study, options.name, log)
    draft = Draft(name=options.name or "openb-replay", description=ATTRIBUTION)
    mapping = options.qos_map or OPENB_QOS
    pods: list[PodRecord] = []
    seen_nodes: set[str] = set()
    for file in files:
        with file.lines() as lines:
            table = CsvTable(file.name, lines, log)
            if "sn" in table.index:
                _read_nodes(table, draft, seen_nodes)
            elif "num_gpu" in table.index:
                pods.extend(_read_pods(table, mapping))
            elif table.columns:
                log.add(
                    file.name,
                    1,
                    0,
                    "not an openb node list (sn,cpu_milli,...) or pod "
                    "list (name,cpu_milli,memory_mib,num_gpu,...)",
                )
    draft.counts["nodes"] = draft.nodes.node_count
    draft.counts["pods"] = len(pods)
    if not log and pods:
        _label_gpu_specs(draft, pods)
        _add_workloads(draft, pods, options, log)
    draft.priority_classes = mapping.priority_classes()
    return draft


def _read_nodes(table: CsvTable, draft: Draft, seen: set[str]) -> None:
    for row, name, cpu, memory, gpus, model in _node_rows(table, seen):
        shape = {
            "gpus": gpus,
            "cpu": cpu / 1000,
            "memory": memory / 1024,
            "labels": {GPU_MODEL_LABEL: model} if model else {},
        }
        base = f"{model}-{gpus}gpu" if model else "cpu"
        draft.nodes.add(name, base, shape, Origin(row.file, row.line))


NodeRow = tuple[Row, str, float, float, int, str | None]


def _node_rows(table: CsvTable, seen: set[str], max_gpus: int | None = None) -> Iterator[NodeRow]:
    """The node list's valid rows, each name once (``seen`` collects them), errors
    recorded on the row: one reader for the replay and the placement study, which differ
    only in what they build from a row and in the study's device limit (``max_gpus``)."""
    if not table.require(*NODE_COLUMNS):
        return
    for row in table.rows():
        name, cpu, memory = row.text("sn"), row.number("cpu_milli"), row.number("memory_mib")
        gpus, model = row.integer("gpu"), row.text("model", required=False)
        if name in seen:
            row.error("sn", f"node '{name}' is listed twice")
        if max_gpus is not None and gpus is not None and gpus > max_gpus:
            row.error("gpu", f"{gpus} GPUs: a placement study tracks at most {max_gpus}")
        if not row.ok or name is None or cpu is None or memory is None or gpus is None:
            continue
        seen.add(name)
        yield row, name, cpu, memory, gpus, model


def _read_pods(table: CsvTable, mapping: QosMapping) -> list[PodRecord]:
    if "creation_time" not in table.index and "num_gpu" in table.index:
        table.log.add(
            table.name,
            1,
            0,
            "this pod list has no creation_time, deletion_time or "
            "qos (the multigpu* files carry resources only): it cannot be replayed",
        )
        return []
    if not table.require(*POD_COLUMNS):
        return []
    records = []
    for row in table.rows():
        record = _pod(row, mapping)
        if record is not None:
            records.append(record)
    return records


def _pod(row: Row, mapping: QosMapping) -> PodRecord | None:
    name = row.text("name")
    cpu, memory = row.number("cpu_milli"), row.number("memory_mib")
    gpus, milli = row.integer("num_gpu"), row.integer("gpu_milli")
    if milli is not None and milli > 1000:
        row.error("gpu_milli", f"{milli} is above 1000 (one whole GPU)")
    entry = _qos_entry(row, mapping)
    creation, deletion = row.number("creation_time"), row.number("deletion_time")
    scheduled = row.number("scheduled_time", required=False)
    _check_times(row, creation, deletion, scheduled)
    if (
        not row.ok
        or name is None
        or cpu is None
        or memory is None
        or gpus is None
        or milli is None
        or entry is None
        or creation is None
        or deletion is None
    ):
        return None
    models = tuple(
        sorted(set(filter(None, (row.text("gpu_spec", required=False) or "").split("|"))))
    )
    return PodRecord(
        name,
        Origin(row.file, row.line),
        cpu / 1000,
        memory / 1024,
        gpus,
        gpus == 1 and milli < 1000,
        models,
        entry,
        creation,
        deletion,
        scheduled,
    )


def _qos_entry(row: Row, mapping: QosMapping) -> QosEntry | None:
    label = row.text("qos", required=False) or ""
    entry = mapping.entry(label)
    if entry is None:
        known = ", ".join(mapping.qos)
        row.error(
            "qos", f"'{label}' is not in the QoS mapping (mapped: {known}); add it with --qos-map"
        )
    return entry


def _check_times(
    row: Row, creation: float | None, deletion: float | None, scheduled: float | None
) -> None:
    if creation is None or deletion is None:
        return
    if deletion < creation:
        row.error("deletion_time", f"{deletion:g} is before creation_time {creation:g}")
    elif scheduled is not None and not creation <= scheduled <= deletion:
        row.error(
            "scheduled_time",
            f"{scheduled:g} is outside creation_time..deletion_time ({creation:g}..{deletion:g})",
        )


def _label_gpu_specs(draft: Draft, pods: list[PodRecord]) -> None:
    """A pod allowed on several GPU models selects a label every such node carries
    (nodeSelector is an AND of equalities, so a set of models needs its own label)."""
    for models in sorted({p.models for p in pods if len(p.models) > 1}):
        allowed = set(models)
        draft.nodes.add_label(partial(_has_model, allowed), _spec_label(models), "true")


def _has_model(allowed: set[str], labels: dict[str, str]) -> bool:
    return labels.get(GPU_MODEL_LABEL) in allowed


def _spec_label(models: tuple[str, ...]) -> str:
    return SPEC_LABEL_PREFIX + dns_name("-".join(models))


def _add_workloads(
    draft: Draft, pods: list[PodRecord], options: ImportOptions, log: ErrorLog
) -> None:
    start = options.start if options.start is not None else min(p.deletion for p in pods)
    end = max(p.deletion for p in pods)
    draft.horizon_seconds = options.horizon_seconds or max(1.0, end - start)
    skipped = {"pending": 0, "ended before the start": 0, "after the horizon": 0}
    names: set[str] = set()
    shared = 0
    for pod in sorted(pods, key=lambda p: p.creation):
        reason = _skip_reason(pod, start, draft.horizon_seconds, options)
        if reason:
            skipped[reason] += 1
            continue
        name = dns_name(pod.name, "pod")
        if name in names:
            log.add(
                pod.origin.file,
                pod.origin.line,
                1,
                f"name: '{pod.name}' is a duplicate (as workload name '{name}')",
            )
            continue
        names.add(name)
        shared += pod.shared
        draft.add_workload(_workload(pod, name, start, options), pod.origin.file, pod.origin.line)
    draft.counts.update(
        workloads=len(draft.workloads),
        rounded_up_shares=shared,
        **{f"skipped_{k.replace(' ', '_')}": v for k, v in skipped.items()},
    )
    _notes(draft, start, shared, skipped)


def _skip_reason(pod: PodRecord, start: float, horizon: float, options: ImportOptions) -> str:
    if pod.scheduled is None and options.pending == "skip":
        return "pending"
    if pod.deletion <= start:
        return "ended before the start"
    if pod.creation - start > horizon:
        return "after the horizon"
    return ""


def _workload(pod: PodRecord, name: str, start: float, options: ImportOptions) -> dict[str, Any]:
    kind = pod.entry.kind.value
    defaults = options.defaults.for_kind(kind)
    began = pod.scheduled if pod.scheduled is not None else pod.creation
    lifetime = pod.deletion - max(began, start)
    startup = min(defaults.startup_seconds, lifetime)
    fields = {
        "name": name,
        "kind": kind,
        "gpus": pod.gpus,
        "cpu": pod.cpu,
        "memory": round(pod.memory, 6),
        "priorityClassName": pod.entry.priority_class,
        "arrival": max(0.0, pod.creation - start),
        "durationSeconds": lifetime - startup,
        **defaults.workload_fields(),
        "startupSeconds": startup,
    }
    if len(pod.models) == 1:
        fields["nodeSelector"] = {GPU_MODEL_LABEL: pod.models[0]}
    elif pod.models:
        fields["nodeSelector"] = {_spec_label(pod.models): "true"}
    return fields


def _notes(draft: Draft, start: float, shared: int, skipped: dict[str, int]) -> None:
    draft.notes.append(
        f"t = 0 is trace time {start:,.0f} s; the horizon is {draft.horizon_seconds:,.0f} s"
    )
    if shared:
        draft.notes.append(
            f"{shared} pod(s) asked for a fraction of a GPU (gpu_milli < 1000): "
            "each holds one whole GPU here"
        )
    for reason, count in skipped.items():
        if count:
            draft.notes.append(
                f"{count} pod(s) left out: {reason}"
                + (" (never bound in the recording)" if reason == "pending" else "")
            )


# ----------------------------------------------------------------------------- placement study


def _read_study(
    files: Sequence[TraceFile], load_percent: float, name: str | None, log: ErrorLog
) -> Draft:
    """The placement-study import: nodes as pools of one shape (``gpuModel`` set), and
    pods of one shape (CPU, memory, GPUs, ``gpu_milli``, ``gpu_spec``) as one workload of
    that many ``members``, in the order each shape first appears. Fractional requests
    stay fractions (``gpuMilli``): the study is about how they share devices. Times, QoS
    and phase are not read (the multigpu files have none), so every pod list works."""
    pods: Counter[StudyPod] = Counter()
    order: list[StudyPod] = []
    stem = ""
    draft = Draft(name=name or "openb-placement-study", description=ATTRIBUTION)
    node_names: list[str] = []
    for file in files:
        with file.lines() as lines:
            table = CsvTable(file.name, lines, log)
            if "sn" in table.index:
                _read_study_nodes(table, draft, node_names)
                continue
            if "num_gpu" not in table.index:
                if table.columns:
                    log.add(file.name, 1, 0, "not an openb node list or pod list")
                continue
            if not table.require("cpu_milli", "memory_mib", "num_gpu", "gpu_milli"):
                continue
            base = PurePath(file.name).name
            stem = stem or base.removeprefix("openb_pod_list_").removesuffix(".csv")
            for row in table.rows():
                pod = _study_pod(row)
                if pod is not None:
                    pods[pod] += 1
                    order.append(pod)
    draft.counts.update(nodes=draft.nodes.node_count, pods=sum(pods.values()), shapes=len(pods))
    for i, (pod, count) in enumerate(pods.items()):
        draft.add_workload(_study_workload(i, pod, count), "pods", 0)
    study: dict[str, Any] = {"arrivedLoadPercent": load_percent}
    if stem in published():
        study["paperWorkload"] = stem
    index = {pod: i for i, pod in enumerate(pods)}
    study["podOrder"] = [index[pod] for pod in order]
    study["nodeOrder"] = _node_order(draft, node_names)
    draft.extra.update(
        seed=42,
        replications=10,
        placementStudy=study,
        policy={"placement": "FGD"},
        variants=[{"name": p, "placement": p} for p in PAPER_POLICIES],
    )
    shared = sum(n for p, n in pods.items() if p.shared)
    draft.notes.append(
        f"placement study at {load_percent:g} % arrived load: {sum(pods.values())} pods in "
        f"{len(pods)} shapes; {shared} ask for a fraction of one GPU and keep it (gpuMilli)"
    )
    return draft


def _node_order(draft: Draft, names: list[str]) -> list[int]:
    """Where each node of the list (in its order) lands when the study expands the
    cluster: the pools in order (shapes seen more than once), then the named nodes (a
    shape seen once), as ``NodeGrouper.cluster`` writes them. Read back through
    ``nodeOrder``, the study sees the nodes in the file's order."""
    members = draft.nodes.shapes.values()
    expanded = [n for m in members if len(m) > 1 for n, _ in m]
    expanded += [m[0][0] for m in members if len(m) == 1]
    position = {name: i for i, name in enumerate(expanded)}
    return [position[name] for name in names]


def _read_study_nodes(table: CsvTable, draft: Draft, names: list[str]) -> None:
    """The node list, each node kept as the file lists it; ``names`` collects them in
    order (``_node_order``)."""
    for row, name, cpu, memory, gpus, model in _node_rows(table, set(names), MAX_DEVICES):
        names.append(name)
        shape: dict[str, Any] = {"gpus": gpus, "cpu": cpu / 1000, "memory": memory / 1024}
        if gpus and model:
            shape["gpuModel"] = model
        draft.nodes.add(
            name, f"{model}-{gpus}gpu" if model else "cpu", shape, Origin(row.file, row.line)
        )


def _study_pod(row: Row) -> StudyPod | None:
    cpu, memory = row.integer("cpu_milli"), row.integer("memory_mib")
    gpus, milli = row.integer("num_gpu"), row.integer("gpu_milli")
    if gpus is not None and not 0 <= gpus <= MAX_DEVICES:
        row.error("num_gpu", f"{gpus} is not 0 to {MAX_DEVICES}")
    if gpus and milli is not None and not 0 < milli <= 1000:
        row.error("gpu_milli", f"{milli} is not 1 to 1000 (one whole GPU)")
    elif gpus and gpus > 1 and milli is not None and milli < 1000:
        row.error("gpu_milli", f"a share ({milli}) of {gpus} GPUs: shares are of one GPU")
    if not row.ok or cpu is None or memory is None or gpus is None or milli is None:
        return None
    spec = (row.text("gpu_spec", required=False) or "") if gpus else ""
    return StudyPod(
        cpu=cpu,
        memory=memory,
        gpus=gpus,
        milli=min(milli, 1000) if gpus else 0,
        models=tuple(m for m in spec.split("|") if m),
    )


def _study_workload(index: int, pod: StudyPod, count: int) -> dict[str, Any]:
    fields: dict[str, Any] = {
        "name": f"shape-{index:03d}",
        "members": count,
        "cpu": pod.cpu / 1000,
        "memory": pod.memory / 1024,
    }
    if pod.shared:
        fields["gpuMilli"] = pod.milli
    else:
        fields["gpus"] = pod.gpus
    if pod.models:
        fields["gpuModels"] = list(pod.models)
    return fields
