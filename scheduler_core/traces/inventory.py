"""Node inventories without workloads: PAI v2020 machine list, spot GPU v2026 node list.

They give a real cluster's shape (which GPU models, how many per node) to combine with
workloads from elsewhere: our own CSV, a synthetic mix, or the DLRM trace (``--nodes``).
"""

from __future__ import annotations

import itertools
from collections.abc import Sequence

from scheduler_core.traces.build import GPU_MODEL_LABEL, Origin
from scheduler_core.traces.errors import ErrorLog
from scheduler_core.traces.options import Draft, ImportOptions
from scheduler_core.traces.source import CsvTable, TraceFile

PAI_COLUMNS = ["machine", "gpu_type", "cap_cpu", "cap_mem", "cap_gpu"]
SPOT_COLUMNS = ("gpu_model", "gpu_capacity_num", "cpu_num", "node_name")
PAI_ATTRIBUTION = (
    "Alibaba cluster-trace-gpu-v2020, (c) Alibaba Group, CC BY 4.0, "
    "https://github.com/alibaba/clusterdata (machine list, unchanged)."
)
SPOT_ATTRIBUTION = (
    "Alibaba cluster-trace-v2026-spot-gpu node list; research/study use, no "
    "redistribution licence. Cite: Duan et al., 'GFS', ASPLOS '26."
)


def read_pai(files: Sequence[TraceFile], options: ImportOptions, log: ErrorLog) -> Draft:
    """The machine list has no header line; the header comes as its own file (or, when
    absent, the published column order is used and said so)."""
    draft = Draft(name=options.name or "pai-cluster", description=PAI_ATTRIBUTION)
    header, data = _pai_header(files, log)
    if header is None:
        header = PAI_COLUMNS
        draft.notes.append("no header file given: columns read as " + ",".join(PAI_COLUMNS))
    for file in data:
        with file.lines() as lines:
            first = next(lines, "")
            has_header = first.split(",")[0].strip() == header[0]
            table = CsvTable(
                file.name,
                itertools.chain([first], lines),
                log,
                header=None if has_header else header,
            )
            if table.require(*PAI_COLUMNS):
                _pai_rows(table, draft)
    draft.counts["nodes"] = draft.nodes.node_count
    return draft


def _pai_header(
    files: Sequence[TraceFile], log: ErrorLog
) -> tuple[list[str] | None, list[TraceFile]]:
    """A one-line file naming the columns is the header; every other file is data."""
    header: list[str] | None = None
    data = []
    for file in files:
        with file.lines() as lines:
            head = [next(lines, ""), next(lines, "")]
        fields = [f.strip() for f in head[0].split(",")]
        if not head[1].strip() and set(fields) >= set(PAI_COLUMNS):
            header = fields
        else:
            data.append(file)
    if not data:
        log.add(files[0].name if files else "", 0, 0, "no machine list among the files")
    return header, data


def _pai_rows(table: CsvTable, draft: Draft) -> None:
    for row in table.rows():
        name, model = row.text("machine"), row.text("gpu_type")
        cpu, memory, gpus = row.number("cap_cpu"), row.number("cap_mem"), row.integer("cap_gpu")
        if (
            not row.ok
            or name is None
            or model is None
            or cpu is None
            or memory is None
            or gpus is None
        ):
            continue
        labels = {GPU_MODEL_LABEL: model} if gpus else {}
        base = f"{model}-{gpus}gpu" if gpus else "cpu"
        draft.nodes.add(
            name,
            base,
            {"gpus": gpus, "cpu": cpu, "memory": memory, "labels": labels},
            Origin(row.file, row.line),
        )


def read_spot(files: Sequence[TraceFile], options: ImportOptions, log: ErrorLog) -> Draft:
    """GPU model, GPUs and vCPUs per node (no memory: the spec's default applies)."""
    draft = Draft(name=options.name or "spot-gpu-cluster", description=SPOT_ATTRIBUTION)
    for file in files:
        with file.lines() as lines:
            table = CsvTable(file.name, lines, log)
            if table.require(*SPOT_COLUMNS):
                _spot_rows(table, draft)
    draft.counts["nodes"] = draft.nodes.node_count
    draft.notes.append(
        "the node list has no memory column: each node gets the spec's default memory"
    )
    return draft


def _spot_rows(table: CsvTable, draft: Draft) -> None:
    for row in table.rows():
        model, gpus = row.text("gpu_model"), row.integer("gpu_capacity_num")
        cpu, node = row.number("cpu_num"), row.text("node_name")
        if not row.ok or model is None or gpus is None or cpu is None or node is None:
            continue
        draft.nodes.add(
            f"spot-node-{node}",
            f"{model}-{gpus}gpu",
            {"gpus": gpus, "cpu": cpu, "labels": {GPU_MODEL_LABEL: model}},
            Origin(row.file, row.line),
        )
