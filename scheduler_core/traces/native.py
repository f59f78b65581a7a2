"""Disruption Lab's own format for users' clusters, as CSV files or JSON Lines.

Three kinds of record, the same fields in both encodings (docs/traces.md has examples):

* node: ``name, gpus`` [``cpu, memory, count, maxPods, labels, taints, spot``];
  ``count`` > 1 makes a pool ``name-0 .. name-(count-1)``.
* job: ``name, arrival, gpus`` [``duration, cpu, memory, priorityClass, kind, members,
  group, groupSize, startupSeconds, checkpointIntervalSeconds,
  terminationGracePeriodSeconds, recovery``]. A row is a job of ``members`` identical
  pods; rows sharing a ``group`` id are the pods of one workload (a gang) and must agree
  on everything but ``name``/``members``; ``groupSize`` makes it all-or-nothing
  (``podGroup.minCount``). What a row leaves out comes from the kind's defaults.
* priorityClass: ``name, value`` [``preemptionPolicy, globalDefault, description``].

CSV: one file per kind of record, told apart by the header (``arrival`` -> jobs,
``value`` -> classes, else nodes); labels ``k=v;k2=v2``, taints ``key=value:Effect;...``.
JSON Lines: one object per line, ``{"node": {...}}``, ``{"job": {...}}`` or
``{"priorityClass": {...}}``: a line number for every error, and streamable.
"""

from __future__ import annotations

import json
import re
from collections.abc import Iterator, Sequence
from dataclasses import dataclass, field
from typing import Any

from scheduler_core.spec import SYSTEM_CLASSES, RecoveryModel, WorkloadKind
from scheduler_core.traces.build import Origin, dns_name
from scheduler_core.traces.errors import ErrorLog
from scheduler_core.traces.options import Draft, ImportOptions
from scheduler_core.traces.source import CsvTable, Record, TraceFile

KINDS = [k.value for k in WorkloadKind]
EFFECTS = ("NoSchedule", "NoExecute", "PreferNoSchedule")
GROUP_FIELDS = ("arrival", "duration", "gpus", "cpu", "memory", "priorityClass", "kind")
FIELDS = {
    "node": ("name", "gpus", "cpu", "memory", "count", "maxPods", "labels", "taints", "spot"),
    "job": (
        "name",
        "arrival",
        "duration",
        "gpus",
        "cpu",
        "memory",
        "priorityClass",
        "kind",
        "members",
        "group",
        "groupSize",
        "startupSeconds",
        "checkpointIntervalSeconds",
        "terminationGracePeriodSeconds",
        "recovery",
    ),
    "priorityClass": ("name", "value", "preemptionPolicy", "globalDefault", "description"),
}
"""Every field of each record: an unknown one (a typo) is an error, not silently dropped."""
_TAINT = re.compile(r"^([^=:]+)(?:=([^:]*))?(?::(\w+))?$")


class JsonRecord(Record):
    """One JSON Lines record; a field's column is where its key starts in the line."""

    __slots__ = ("fields", "source")

    def __init__(
        self, file: str, line: int, source: str, fields: dict[str, Any], log: ErrorLog
    ) -> None:
        super().__init__(file, line, log)
        self.source, self.fields = source, fields

    def raw(self, column: str) -> Any:
        return self.fields.get(column)

    def column_number(self, column: str) -> int:
        return self.source.find(f'"{column}"') + 1


@dataclass
class Builder:
    """Collects records from any number of files, then assembles the draft."""

    draft: Draft
    options: ImportOptions
    log: ErrorLog
    pools: list[dict[str, Any]] = field(default_factory=list)
    nodes: list[dict[str, Any]] = field(default_factory=list)
    groups: dict[str, tuple[dict[str, Any], Record]] = field(default_factory=dict)
    class_uses: dict[str, Origin] = field(default_factory=dict)
    node_names: set[str] = field(default_factory=set)

    # ---------------------------------------------------------------- nodes
    def node(self, record: Record) -> None:
        name, gpus = record.text("name"), record.integer("gpus")
        shape: dict[str, Any] = {"gpus": gpus}
        for column, key in (("cpu", "cpu"), ("memory", "memory")):
            value = record.number(column, required=False)
            if value is not None:
                shape[key] = value
        max_pods = record.integer("maxPods", required=False, minimum=1)
        if max_pods is not None:
            shape["maxPods"] = max_pods
        shape.update(labels=_labels(record), taints=_taints(record), spot=record.boolean("spot"))
        count = record.integer("count", required=False, minimum=1) or 1
        if name in self.node_names:
            record.error("name", f"node '{name}' is listed twice")
        if not record.ok or name is None:
            return
        self.node_names.add(name)
        shape = {k: v for k, v in shape.items() if k not in ("labels", "taints", "spot") or v}
        target = self.pools if count > 1 else self.nodes
        path = "nodePools" if count > 1 else "nodes"
        self.draft.provenance.record(
            f"cluster.{path}[{len(target)}]", Origin(record.file, record.line)
        )
        target.append({"name": name, **({"count": count} if count > 1 else {}), **shape})

    # ---------------------------------------------------------------- classes
    def priority_class(self, record: Record) -> None:
        name, value = record.text("name"), record.integer("value", minimum=-(2**31))
        policy = record.choice(
            "preemptionPolicy", ("PreemptLowerPriority", "Never"), required=False
        )
        item: dict[str, Any] = {
            "name": name,
            "value": value,
            "globalDefault": record.boolean("globalDefault"),
        }
        if policy:
            item["preemptionPolicy"] = policy
        description = record.text("description", required=False)
        if description:
            item["description"] = description
        if record.ok:
            self.draft.provenance.record(
                f"priorityClasses[{len(self.draft.priority_classes)}]",
                Origin(record.file, record.line),
            )
            self.draft.priority_classes.append(item)

    # ---------------------------------------------------------------- jobs
    def job(self, record: Record) -> None:
        fields = self._job_fields(record)
        if not record.ok:
            return
        group = record.text("group", required=False)
        members = record.integer("members", required=False, minimum=1) or 1
        key = f"group:{group}" if group else f"job:{fields['name']}"
        if group is None and key in self.groups:
            record.error("name", f"job '{fields['name']}' is listed twice")
            return
        if key in self.groups:
            self._join_group(key, fields, members, record)
            return
        fields["members"] = members
        if group:
            fields["name"] = dns_name(group, "group")
        self.groups[key] = (fields, record)

    def _job_fields(self, record: Record) -> dict[str, Any]:
        name = record.text("name")
        kind = record.choice("kind", KINDS, required=False) or "batch"
        fields: dict[str, Any] = {
            "name": dns_name(name or "", "job"),
            "kind": kind,
            "arrival": record.number("arrival"),
            "duration": record.number("duration", required=False),
            "gpus": record.integer("gpus"),
            "cpu": record.number("cpu", required=False),
            "memory": record.number("memory", required=False),
            "priorityClass": record.text("priorityClass", required=False),
            "groupSize": record.integer("groupSize", required=False, minimum=1),
        }
        for column in (
            "startupSeconds",
            "checkpointIntervalSeconds",
            "terminationGracePeriodSeconds",
        ):
            fields[column] = record.number(column, required=False)
        fields["recovery"] = record.choice(
            "recovery", [m.value for m in RecoveryModel], required=False
        )
        if fields["priorityClass"]:
            self.class_uses.setdefault(
                fields["priorityClass"],
                Origin(record.file, record.line, record.column_number("priorityClass")),
            )
        return fields

    def _join_group(self, key: str, fields: dict[str, Any], members: int, record: Record) -> None:
        first, first_record = self.groups[key]
        for column in GROUP_FIELDS:
            if fields[column] != first[column]:
                record.error(
                    column,
                    f"{fields[column]} disagrees with {first[column]} on "
                    f"line {first_record.line} of the same group",
                )
                return
        first["members"] += members

    def finish(self) -> None:
        """Workloads from the jobs, the cluster from the nodes; every class defined."""
        defined = {c["name"] for c in self.draft.priority_classes} | set(SYSTEM_CLASSES)
        for name, origin in self.class_uses.items():
            if name not in defined:
                self.log.add(
                    origin.file,
                    origin.line,
                    origin.column,
                    f"priorityClass: '{name}' is not defined (add a priorityClass "
                    "record or classes.csv row)",
                )
        for fields, record in self.groups.values():
            self._add(fields, record)
        self.draft.cluster = {"nodePools": self.pools, "nodes": self.nodes}
        if not self.pools and not self.nodes:
            self.draft.cluster = {}
        self.draft.counts.update(
            nodes=sum(p["count"] for p in self.pools) + len(self.nodes),
            workloads=len(self.draft.workloads),
        )
        ends = [f["arrival"] + (f["duration"] or 0) for f, _ in self.groups.values()]
        self.draft.horizon_seconds = self.options.horizon_seconds or max([3600.0, *ends])

    def _add(self, fields: dict[str, Any], record: Record) -> None:
        defaults = self.options.defaults.for_kind(fields["kind"])
        workload = {
            "name": fields["name"],
            "kind": fields["kind"],
            "members": fields["members"],
            "gpus": fields["gpus"],
            "priorityClassName": fields["priorityClass"],
            "arrival": fields["arrival"],
            "durationSeconds": fields["duration"],
            **defaults.workload_fields(),
        }
        for key in ("cpu", "memory"):
            if fields[key] is not None:
                workload[key] = fields[key]
        _apply_overrides(workload, fields)
        if fields["groupSize"]:
            workload["podGroup"] = {"minCount": fields["groupSize"]}
        self.draft.add_workload(workload, record.file, record.line)


def _apply_overrides(workload: dict[str, Any], fields: dict[str, Any]) -> None:
    """A row's own values win over the kind's defaults."""
    if fields["startupSeconds"] is not None:
        workload["startupSeconds"] = fields["startupSeconds"]
    if fields["terminationGracePeriodSeconds"] is not None:
        grace = fields["terminationGracePeriodSeconds"]
        workload["terminationGracePeriodSeconds"] = grace
        workload["stopSeconds"] = min(workload["stopSeconds"], grace)
    if fields["checkpointIntervalSeconds"] is not None:
        workload["checkpoint"] = {
            **workload["checkpoint"],
            "intervalSeconds": fields["checkpointIntervalSeconds"],
        }
    if fields["recovery"] is not None:
        workload["recovery"] = {"model": fields["recovery"]}


def _labels(record: Record) -> dict[str, str]:
    raw = record.raw("labels")
    if isinstance(raw, dict):
        return {str(k): str(v) for k, v in raw.items()}
    labels = {}
    for item in filter(None, (p.strip() for p in str(raw or "").split(";"))):
        key, sep, value = item.partition("=")
        if not sep or not key.strip():
            record.error("labels", f"'{item}' is not key=value")
            continue
        labels[key.strip()] = value.strip()
    return labels


def _taints(record: Record) -> list[dict[str, str]]:
    raw = record.raw("taints")
    items = raw if isinstance(raw, list) else str(raw or "").split(";")
    taints = []
    for item in items:
        taint = _taint(record, item)
        if taint is not None:
            taints.append(taint)
    return taints


def _taint(record: Record, item: Any) -> dict[str, str] | None:
    if isinstance(item, dict):
        item = f"{item.get('key', '')}={item.get('value', '')}:{item.get('effect', '')}"
    text = str(item).strip()
    if not text:
        return None
    match = _TAINT.match(text)
    effect = (match.group(3) or "NoSchedule") if match else ""
    if not match or effect not in EFFECTS:
        record.error("taints", f"'{text}' is not key[=value][:{'|'.join(EFFECTS)}]")
        return None
    return {
        "key": match.group(1).strip(),
        "value": (match.group(2) or "").strip(),
        "effect": effect,
    }


# ==================================================================== readers
def read_csv(files: Sequence[TraceFile], options: ImportOptions, log: ErrorLog) -> Draft:
    builder = Builder(Draft(name=options.name or "imported-cluster", description=""), options, log)
    for file in files:
        with file.lines() as lines:
            table = CsvTable(file.name, lines, log)
            handler = _csv_handler(builder, table)
            if handler is not None:
                for row in table.rows():
                    handler(row)
    builder.finish()
    return builder.draft


def _csv_handler(builder: Builder, table: CsvTable) -> Any:
    columns = set(table.columns)
    kind = (
        "job"
        if "arrival" in columns
        else "priorityClass"
        if "value" in columns
        else "node"
        if "gpus" in columns
        else None
    )
    if kind is None:
        if table.columns:
            table.log.add(
                table.name,
                1,
                0,
                "not a nodes (name,gpus,...), jobs (name,arrival,"
                "gpus,...) or priority classes (name,value,...) CSV",
            )
        return None
    for position, column in enumerate(table.columns, start=1):
        if column not in FIELDS[kind]:
            table.log.add(
                table.name,
                1,
                position,
                f"unknown column '{column}' for {kind} records (known: {', '.join(FIELDS[kind])})",
            )
    required = {
        "job": ("name", "arrival", "gpus"),
        "priorityClass": ("name", "value"),
        "node": ("name", "gpus"),
    }[kind]
    if not table.require(*required) or builder.log:
        return None
    return {"job": builder.job, "priorityClass": builder.priority_class, "node": builder.node}[kind]


def read_jsonl(files: Sequence[TraceFile], options: ImportOptions, log: ErrorLog) -> Draft:
    builder = Builder(Draft(name=options.name or "imported-cluster", description=""), options, log)
    handlers = {"node": builder.node, "job": builder.job, "priorityClass": builder.priority_class}
    for file in files:
        with file.lines() as lines:
            for record, kind in _json_records(file.name, lines, log):
                handlers[kind](record)
    builder.finish()
    return builder.draft


def _json_records(
    name: str, lines: Iterator[str], log: ErrorLog
) -> Iterator[tuple[JsonRecord, str]]:
    for number, line in enumerate(lines, start=1):
        if not line.strip():
            continue
        try:
            data = json.loads(line.rstrip("\r\n"), parse_constant=_no_constant)
        except json.JSONDecodeError as exc:
            log.add(name, number, exc.colno, f"not JSON: {exc.msg}")
            continue
        except RecursionError:
            log.add(name, number, 1, "not a record: nested too deeply")
            continue
        except ValueError as exc:  # NaN/Infinity, or an integer of over 4,300 digits
            log.add(name, number, 1, f"not JSON: {exc}")
            continue
        kind = next(iter(data), None) if isinstance(data, dict) and len(data) == 1 else None
        if kind not in ("node", "job", "priorityClass") or not isinstance(data[kind], dict):
            log.add(
                name,
                number,
                1,
                'expected one of {"node": {...}}, {"job": {...}}, {"priorityClass": {...}}',
            )
            continue
        record = JsonRecord(name, number, line, data[kind], log)
        for key in data[kind]:
            if key not in FIELDS[kind]:
                record.error(
                    key, f"unknown field for {kind} records (known: {', '.join(FIELDS[kind])})"
                )
        yield record, kind


def _no_constant(name: str) -> Any:
    raise ValueError(f"{name} is not a JSON number")
