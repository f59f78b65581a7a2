"""The cost model's eviction cost (``App.eviction_cost``) as numpy arrays (issue #14).

checkpoint-aware weighs every lower-priority pod of the nodes a decision looks at; one
Python ``eviction_cost`` call per pod was most of its decision. Here the same cost is
computed for all of them at once, from two tables kept by the engine's run:

- per unit of work (a :class:`~scheduler_core.app.Progress`), its segment state
  (progress, durable checkpoint, segment start, rate, running) written through by the
  unit itself whenever it changes (start, stop, rollback, a checkpoint on SIGTERM), and
  its checkpoint interval and write time;
- per pod (by ``seq``), what never changes while it lives: its application kind, its
  unit, GPUs, the recovery and stranded-capacity terms, whether a SIGTERM checkpoint
  fits its grace period, its workload (filled the first time a decision weighs the
  pod); and whether it is STARTING, written by the engine where a bound pod's state
  changes. Its start time is the node arrays' (``NodeArrays.pack``, ``bound_at``).

Each float is the one the Python cost model computes: the same operations in the same
order (``Progress.at``, ``durable_at``, ``_unsaved``, ``eviction_cost``, and the weighted
sums of ``CheckpointAwarePreemption._costs``), selected with ``np.where`` where Python
branches; ``tests/core/test_fast_checkpoint.py`` checks them bit for bit. A pod of an
application class this module does not know is weighed by the Python cost model.
"""

from __future__ import annotations

from typing import TYPE_CHECKING

import numpy as np

from scheduler_core.spec import RecoveryModel

if TYPE_CHECKING:
    from collections.abc import Callable, Mapping

    from scheduler_core.app import Progress
    from scheduler_core.model import Pod

UNKNOWN = 0
"""Kind of a pod not described yet."""
PER_MEMBER = 1
"""Independent shards and interactive sessions: the pod's own unit of work."""
SERVING = 2
"""Inference replicas: nothing lost but the recovery."""
GROUP = 3
"""Synchronous and elastic training: the group's shared unit of work."""
PYTHON = 4
"""An application class of its own: weighed by the Python cost model."""

EPS = 1e-9  # app.EPS (not imported: app imports this module)


class CostTable:
    """The run's units of work and pods as arrays (see the module's docstring)."""

    __slots__ = (
        "fits",
        "gpu_amount",
        "interactive",
        "interval",
        "kind",
        "loss_gpus",
        "recovery",
        "segment",
        "starting",
        "stranded",
        "sync_group",
        "timed",
        "unit",
        "units",
        "workload",
        "write",
    )

    def __init__(self) -> None:
        self.units = 0
        size = 64
        self.segment = np.zeros((size, 5))
        """Per unit: p0, durable, seg_start, rate, running (1.0 or 0.0)."""
        self.interval = np.ones(size)
        """Per unit: the checkpoint interval (1.0 where there is none: never used)."""
        self.write = np.zeros(size)
        self.timed = np.zeros(size, dtype=bool)
        """Per unit: it has a checkpoint interval."""
        self.kind = np.zeros(size, dtype=np.int8)
        self.unit = np.zeros(size, dtype=np.int64)
        self.gpu_amount = np.zeros(size)
        self.recovery = np.zeros(size)
        """Per pod: ``startup_seconds * gpu_amount``, the recovery term."""
        self.loss_gpus = np.zeros(size)
        """Per pod: the GPUs its unit's unsaved progress is multiplied by."""
        self.stranded = np.zeros(size)
        """Per pod of a synchronous group: the survivors' GPUs times the startup."""
        self.fits = np.zeros(size, dtype=bool)
        """Per pod: a SIGTERM checkpoint fits its grace period (nothing unsaved is lost)."""
        self.interactive = np.zeros(size, dtype=bool)
        self.sync_group = np.zeros(size, dtype=bool)
        self.workload = np.zeros(size, dtype=np.int64)
        self.starting = np.zeros(size, dtype=bool)
        """Per pod: it is STARTING (bound, not Ready yet), written by the engine on every
        change of a bound pod's state (:meth:`started`, then False when it leaves)."""

    # ------------------------------------------------------------------ units
    def register(self, progress: Progress) -> None:
        """Give ``progress`` a row and write its state; it writes through from then on."""
        index = self.units
        if index == len(self.interval):
            grow = index
            self.segment = np.concatenate([self.segment, np.zeros((grow, 5))])
            self.interval = np.concatenate([self.interval, np.ones(grow)])
            self.write = np.concatenate([self.write, np.zeros(grow)])
            self.timed = np.concatenate([self.timed, np.zeros(grow, dtype=bool)])
        self.units = index + 1
        progress.table, progress.index = self, index
        if progress.interval is not None:
            self.interval[index] = progress.interval
            self.timed[index] = True
        self.write[index] = progress.write
        self.sync(progress)

    def sync(self, progress: Progress) -> None:
        """The unit's segment state changed: write it (called by the unit)."""
        self.segment[progress.index] = (
            progress.p0,
            progress.durable,
            progress.seg_start,
            progress.rate,
            1.0 if progress.running else 0.0,
        )

    # ------------------------------------------------------------------ pods
    def started(self, pod: Pod) -> None:
        """``pod`` was bound: STARTING until the engine says it is not."""
        if pod.seq >= len(self.starting):
            self._fit(pod.seq + 1)
        self.starting[pod.seq] = True

    def _fit(self, top: int) -> None:
        """Room for the pods ``seq < top`` in the per-pod rows (doubling)."""
        if top > len(self.kind):
            size = max(top, 2 * len(self.kind))
            for name in (
                "kind",
                "unit",
                "gpu_amount",
                "recovery",
                "loss_gpus",
                "stranded",
                "fits",
                "interactive",
                "sync_group",
                "workload",
                "starting",
            ):
                old = getattr(self, name)
                wider = np.zeros(size, dtype=old.dtype)
                wider[: len(old)] = old
                setattr(self, name, wider)

    def _describe(self, pods: np.ndarray, seqs: np.ndarray) -> None:
        """Fill the per-pod rows of ``pods`` not described yet (once per pod)."""
        from scheduler_core.app import GroupApp, PerMemberApp, ServingApp

        self._fit(int(seqs.max()) + 1)
        for i in np.flatnonzero(self.kind[seqs] == UNKNOWN).tolist():
            pod: Pod = pods[i]
            seq = pod.seq
            workload = pod.workload
            app = workload.app
            spec = app.spec
            gpus = pod.gpu_amount
            self.gpu_amount[seq] = gpus
            self.recovery[seq] = spec.startup_seconds * pod.gpu_amount
            self.workload[seq] = workload.idx
            self.interactive[seq] = spec.recovery.model is RecoveryModel.INTERACTIVE
            self.fits[seq] = app._sigterm_checkpoint_fits(spec.termination_grace_period_seconds)
            kind = type(app)
            progress: Progress | None = None
            if kind is PerMemberApp and isinstance(app, PerMemberApp):
                self.kind[seq] = PER_MEMBER
                progress = app.units[pod.member]
                self.loss_gpus[seq] = gpus
            elif kind is GroupApp and isinstance(app, GroupApp):
                self.kind[seq] = GROUP
                progress = app.unit
                self.loss_gpus[seq] = workload.gpu_amount_total
                self.sync_group[seq] = not app.elastic
                survivors = workload.gpu_amount_total - pod.gpu_amount
                self.stranded[seq] = survivors * spec.startup_seconds
            elif kind is ServingApp:
                self.kind[seq] = SERVING
            else:
                self.kind[seq] = PYTHON
            if progress is not None:
                if progress.table is not self:
                    self.kind[seq] = PYTHON  # a unit the table does not follow
                else:
                    self.unit[seq] = progress.index

    # ------------------------------------------------------------------ costs
    def costs(
        self,
        pods: Callable[[], np.ndarray],
        seqs: np.ndarray,
        start: np.ndarray,
        now: float,
        weights: Mapping[str, float],
        python: Callable[[Pod], tuple[float, float]],
    ) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
        """For each of the pods ``pods()`` gives (an object array of bound pods, only
        gathered for pods not described yet or weighed in Python; their ``seq`` in
        ``seqs``, their ``bound_at`` in ``start``): the weighted cost with and without
        its group's loss, as ``CheckpointAwarePreemption._costs`` computes them
        (``python``: that function, for the pods of an application class of its own),
        and each pod's workload index."""
        n = len(seqs)
        if n == 0:
            return np.zeros(0), np.zeros(0), np.zeros(0, dtype=np.int64)
        if int(seqs.max()) >= len(self.kind) or not self.kind[seqs].all():
            self._describe(pods(), seqs)
        kind = self.kind[seqs]
        starting = self.starting[seqs]
        gpus = self.gpu_amount[seqs]
        recovery = self.recovery[seqs]
        w_lost, w_stranded = weights["lostWork"], weights["strandedCapacity"]
        w_startup, w_recovery = weights["startup"], weights["recovery"]
        w_session = weights["session"]

        # Progress.at / durable_at of each pod's unit at ``now`` (a Serving pod reads row
        # 0, whatever it holds: its loss is 0.0 below)
        unit = self.unit[seqs]
        segment = self.segment[unit]
        p0, durable, seg_start, rate = segment[:, 0], segment[:, 1], segment[:, 2], segment[:, 3]
        running = segment[:, 4] != 0.0
        interval, write, timed = self.interval[unit], self.write[unit], self.timed[unit]
        x = now - seg_start
        if timed.any():
            cycle = interval + write
            with np.errstate(divide="ignore", invalid="ignore"):
                k = np.floor(x / cycle + EPS)
            k = np.where(timed, k, 0.0)
            work = np.where(timed, k * interval + np.minimum(x - k * cycle, interval), x)
            at = np.where(running, p0 + rate * work, p0)
            held = np.where(running & (k != 0.0), p0 + rate * k * interval, durable)
        else:  # no checkpoints: k is 0, the work is x, the durable checkpoint as it is
            at = np.where(running, p0 + rate * x, p0)
            held = durable
        unsaved = at - held
        lost = np.where(unsaved > 0.0, unsaved, 0.0) * self.loss_gpus[seqs]  # max(0.0, .)
        fits = self.fits[seqs]
        if fits.any():
            lost = np.where(fits, 0.0, lost)
        group = kind == GROUP
        lost = np.where((kind == SERVING) | (group & ~running), 0.0, lost)

        # the weighted sums, in the order of the parts' dict (eviction_cost); a term no
        # pod has is not computed
        # running: lostWork, recovery, session (interactive), strandedCapacity (a
        # synchronous group's running unit)
        full = (0.0 + w_lost * lost) + w_recovery * recovery
        rest = (0.0 + w_lost * 0.0) + w_recovery * recovery
        interactive = self.interactive[seqs]
        if interactive.any():
            full = np.where(interactive, full + w_session * 1.0, full)
            rest = np.where(interactive, rest + w_session * 1.0, rest)
        strands = group & self.sync_group[seqs] & running
        if strands.any():
            full = np.where(strands, full + w_stranded * self.stranded[seqs], full)
        rest = rest + w_stranded * 0.0
        if starting.any():  # STARTING: startup, recovery
            startup = (now - start) * gpus
            s_full = (0.0 + w_startup * startup) + w_recovery * recovery
            s_rest = ((0.0 + w_startup * startup) + w_recovery * recovery + w_lost * 0.0) + (
                w_stranded * 0.0
            )
            full = np.where(starting, s_full, full)
            rest = np.where(starting, s_rest, rest)
        by_python = np.flatnonzero(kind == PYTHON)
        if len(by_python):
            weighed = pods()
            for i in by_python.tolist():
                full[i], rest[i] = python(weighed[i])
        return full, rest, self.workload[seqs]
