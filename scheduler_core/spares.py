"""Spare and standby pools (docs/failures.md, "Spare and standby pools").

A node pool with ``standby:`` holds spares out of service: they are in the cluster but
cordoned, so nothing schedules there. When a serving node fails or is taken back (a
node failure, a spot reclaim), one idle spare whose ``replaces`` matches the node's pool
is called in; after its activation delay (``activationSeconds``: warm 60 s, cold 900 s
by default) it is uncordoned and takes pods in the failed node's place. When the failed
node is repaired it does not return to service: it joins the spare pool, cordoned, with
the settings of the spare that replaced it, so the serving fleet keeps its size (the
repair-and-spare cycle AIReSim models). A failure with no idle spare waits, oldest
first, for the next node to join the pool.

A spare that fails while idle or while being called in is simply down: a call in
progress is given to the next idle spare. A drain (planned, the node stays up) calls no
spare. Without standby pools nothing here runs, and a run is exactly what it was.
"""

from __future__ import annotations

from typing import TYPE_CHECKING

from scheduler_core import events as ev
from scheduler_core.model import Node
from scheduler_core.spec import ExperimentSpec, Standby

if TYPE_CHECKING:
    from scheduler_core.engine import Engine


class Spares:
    """Which nodes are spares, which are being called in, and which failures wait."""

    def __init__(self, engine: Engine, spec: ExperimentSpec) -> None:
        self.engine = engine
        self.pool_of: dict[Node, str] = {}
        self.settings: dict[Node, Standby] = {}
        """Every node that is (or was made) a spare: its standby settings."""
        self.idle: list[Node] = []
        self.calling: dict[Node, Node] = {}
        """Spare being called in -> the failed node it will replace."""
        self.covered: dict[Node, Node] = {}
        """Failed node -> the spare called in for it (serving or on its way)."""
        self.waiting: list[Node] = []
        """Failed serving nodes no idle spare could cover yet, oldest first."""
        self.enabled = any(p.standby is not None for p in spec.cluster.node_pools)
        if self.enabled:
            self._build(spec)

    def _build(self, spec: ExperimentSpec) -> None:
        by_name = self.engine.cluster.by_name
        for pool in spec.cluster.node_pools:
            for i in range(pool.count):
                node = by_name[f"{pool.name}-{i}"]
                self.pool_of[node] = pool.name
                if pool.standby is not None:
                    self.settings[node] = pool.standby
                    self.idle.append(node)

    def hold_out(self) -> None:
        """t=0: every spare is cordoned (a spare in service would be just another node)."""
        for node in self.idle:
            self.engine.cordon(node, "standby spare: out of service until called in")

    # ----------------------------------------------------------------- failures
    def node_down(self, node: Node) -> None:
        """A node left (failed or reclaimed): call a spare for a serving node; a spare
        that fails is taken off the idle list (a call in progress goes to another)."""
        if not self.enabled:
            return
        if node in self.idle:
            self.idle.remove(node)
            return
        failed = self.calling.pop(node, None)
        if failed is not None:
            del self.covered[failed]
            self._cover(failed)
            return
        if node not in self.settings or node in self.covered.values():
            self._cover(node)

    def _cover(self, failed: Node) -> None:
        spare = self._idle_spare_for(failed)
        if spare is None:
            self.waiting.append(failed)
            return
        self.idle.remove(spare)
        self.calling[spare] = failed
        self.covered[failed] = spare
        engine = self.engine
        delay = self.settings[spare].delay
        engine.emit(
            ev.STANDBY_CALLED,
            None,
            node=spare,
            value=delay,
            related=failed.name,
            message=f"{self.settings[spare].mode} spare called in for {failed.name}",
        )
        engine.at(engine.now + delay, self._in_service, spare)

    def _idle_spare_for(self, failed: Node) -> Node | None:
        pool = self.pool_of.get(failed)
        for spare in self.idle:
            wanted = self.settings[spare].replaces
            if spare.alive and (wanted is None or wanted == pool):
                return spare
        return None

    def _in_service(self, spare: Node) -> None:
        failed = self.calling.pop(spare, None)
        if failed is None or not spare.alive:
            return
        engine = self.engine
        engine.cluster.set_schedulable(spare, alive=True, cordoned=False)
        engine.emit(
            ev.STANDBY_IN_SERVICE,
            None,
            node=spare,
            value=spare.capacity,
            related=failed.name,
            message=f"serving in place of {failed.name}",
        )
        engine.queue.wake(engine.now, spare.free_gpus)

    # ----------------------------------------------------------------- repairs
    def node_back(self, node: Node) -> bool:
        """A node is repaired. True: it becomes (or is again) an idle spare, cordoned, and
        does not serve; False: it serves again as before (no spare took its place)."""
        if not self.enabled:
            return False
        if node in self.idle:
            return True  # an idle spare's drain ended: it stays cordoned, in the pool
        spare = self.covered.pop(node, None)
        if spare is not None:
            self.settings.setdefault(node, self.settings[spare])
        elif node not in self.settings or node in self.covered.values():
            return False
        self._to_standby(node)
        return True

    def _to_standby(self, node: Node) -> None:
        engine = self.engine
        engine.cluster.set_schedulable(node, alive=True, cordoned=True)
        engine.emit(ev.NODE_BACK, None, node=node, value=node.capacity, message="repaired")
        engine.emit(ev.TO_STANDBY, None, node=node, message="repaired: joins the spare pool")
        self.idle.append(node)
        self.idle.sort(key=lambda n: n.idx)
        waiting = [n for n in self.waiting if not n.alive]
        self.waiting = []
        for failed in waiting:
            if failed not in self.covered:
                self._cover(failed)
