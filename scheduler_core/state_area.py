"""The whole cluster's GPUs by pod state over time, on a fixed grid of time slices.

The timeline's pod spans are capped (a store keeps at most so many per replication), but
the question "how much of the cluster was making progress, and how much was loading,
terminating, checkpointing or stranded" has an answer of fixed size whatever the run:
mean GPUs per state per slice. :class:`AreaAccumulator` gathers it while the timeline's
reader follows the pods, span by span (O(1) each: a difference array carries the slices a
span covers whole) and, for a segment's periodic checkpoint writes past the span budget,
comb by comb in closed form (O(slices), not O(writes): the fleet preset's 5-minute
checkpoints are 24 million writes). So the chart draws for every run, spans or not.
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping, Sequence
from typing import Any, NamedTuple, Protocol

import numpy as np

BASE_STATES = ("loading", "running", "terminating")
OVERLAY_STATES = ("checkpointing", "stranded")
STATES = ("loading", "running", "checkpointing", "terminating", "stranded")
SLICES = 120
"""Time slices of a stored area: as many as the run page's heatmaps draw."""


class StateArea(NamedTuple):
    """Mean GPUs held per pod state in each of ``len(gpus[state])`` equal slices of
    ``[0, end]``. An overlay's GPUs (a checkpoint write, stranded capacity) are counted in
    its own state and moved out of the state it covers, so the states stack to the GPUs
    held."""

    end: float
    gpus: dict[str, list[float]]
    groups: list[list[float]] = []
    """Mean GPUs held (any state) per slice by row of nodes, as the caller grouped them
    (:func:`timeline.build`'s ``node_rows``): kept only where the spans were left out,
    for the heatmap of node groups they would otherwise be drawn from."""

    def edges(self) -> list[float]:
        """The slices' edges, ``len + 1`` of them, from 0 to ``end``."""
        slices = len(next(iter(self.gpus.values()), ()))
        width = self.end / slices if slices else self.end
        return [i * width for i in range(slices)] + [self.end]

    def to_json(self) -> dict[str, Any]:
        return {
            "end": self.end,
            "gpus": self.gpus,
            **({"groups": self.groups} if self.groups else {}),
        }

    @classmethod
    def from_json(cls, data: Mapping[str, Any]) -> StateArea:
        gpus = data["gpus"]
        return cls(
            float(data["end"]),
            {state: list(gpus[state]) for state in STATES},
            [list(row) for row in data.get("groups", ())],
        )


class SpanLike(Protocol):
    """What :func:`from_spans` reads of a span (``timeline.Span``)."""

    @property
    def node(self) -> str: ...
    @property
    def state(self) -> str: ...
    @property
    def under(self) -> str: ...
    @property
    def start(self) -> float: ...
    @property
    def end(self) -> float: ...
    @property
    def gpus(self) -> float: ...


class AreaAccumulator:
    """GPU-seconds per state per slice of ``[0, end]`` (``end`` at least a second), and
    held per row of nodes (``rows``: node name to row) per slice."""

    def __init__(
        self, end: float, slices: int = SLICES, rows: Mapping[str, int] | None = None
    ) -> None:
        self.end = max(float(end), 1.0)
        self.slices = slices
        self.width = self.end / slices
        self._totals = {state: [0.0] * slices for state in STATES}
        self._covered = {state: [0.0] * slices for state in BASE_STATES}
        self._carry = {name: [0.0] * (slices + 1) for name in (*STATES, *_COVER.values())}
        self._rows = dict(rows or {})
        n_rows = max(self._rows.values(), default=-1) + 1
        self._held = [[0.0] * slices for _ in range(n_rows)]
        self._held_carry = [[0.0] * (slices + 1) for _ in range(n_rows)]

    def add(self, state: str, under: str, start: float, end: float, gpus: float) -> None:
        """One span: ``state`` from ``start`` to ``end`` on ``gpus`` GPUs; an overlay
        names the base state it covers in ``under`` (empty for a base span)."""
        self._integrate(self._totals[state], self._carry[state], start, end, gpus)
        if under:
            cover = _COVER[under]
            self._integrate(self._covered[under], self._carry[cover], start, end, gpus)

    def hold(self, node: str, start: float, end: float, gpus: float) -> None:
        """A base span's GPUs held on ``node`` (in its row, if it has one)."""
        row = self._rows.get(node)
        if row is not None:
            self._integrate(self._held[row], self._held_carry[row], start, end, gpus)

    def add_comb(
        self,
        state: str,
        under: str,
        first: float,
        cycle: float,
        length: float,
        count: int,
        gpus: float,
    ) -> None:
        """``count`` overlays of ``length`` seconds starting at ``first``, one every
        ``cycle`` seconds (a segment's periodic checkpoint writes), in O(slices):
        the GPU-seconds each slice gets is the difference of the comb's running
        integral at its edges, computed for every edge at once."""
        if count <= 0 or length <= 0:
            return
        if count == 1 or cycle < length:  # a single write, or writes that overlap
            for k in range(count):
                self.add(state, under, first + k * cycle, first + k * cycle + length, gpus)
            return
        edges = np.arange(self.slices + 1, dtype=np.float64) * self.width
        edges[-1] = self.end
        done = np.clip(np.floor((edges - first) / cycle), -1, count - 1)  # the write under way
        inside = np.clip(edges - (first + done * cycle), 0.0, length)
        running = np.where(done < 0, 0.0, done * length + inside)
        per_slice = (np.diff(running) * gpus).tolist()
        lo = max(0, min(self.slices - 1, int(first // self.width)))
        hi = min(self.slices, int((first + (count - 1) * cycle + length) // self.width) + 1)
        targets = [self._totals[state]]
        if under:
            targets.append(self._covered[under])
        for totals in targets:
            for i in range(lo, hi):
                totals[i] += per_slice[i]

    def _integrate(
        self, totals: list[float], carry: list[float], start: float, end: float, gpus: float
    ) -> None:
        width, slices = self.width, self.slices
        a = max(start, 0.0)
        b = min(end, self.end)
        if b <= a:
            return
        first = min(slices - 1, int(a / width))
        last = min(slices - 1, int(b / width))
        if first == last:
            totals[first] += (b - a) * gpus
            return
        totals[first] += ((first + 1) * width - a) * gpus
        totals[last] += (b - last * width) * gpus
        if last > first + 1:
            carry[first + 1] += width * gpus
            carry[last] -= width * gpus

    def area(self, *, groups: bool = False) -> StateArea:
        """The mean GPUs per state per slice, to two decimals; ``groups``: per row of
        nodes too."""
        held = {state: _settled(self._totals[state], self._carry[state]) for state in STATES}
        for under in BASE_STATES:
            covered = _settled(self._covered[under], self._carry[_COVER[under]])
            held[under] = [a - b for a, b in zip(held[under], covered, strict=True)]
        width = self.width

        def mean(values: Sequence[float]) -> list[float]:
            return [round(max(0.0, v) / width, 2) for v in values]

        rows = zip(self._held, self._held_carry, strict=True) if groups else ()
        return StateArea(
            self.end,
            {state: mean(held[state]) for state in STATES},
            [mean(_settled(totals, carry)) for totals, carry in rows],
        )


class NoArea(AreaAccumulator):
    """An accumulator that gathers nothing, for a reader asked for spans or stranded
    intervals alone (the preset tests' 1 million stranded overlays on the fleet preset
    would otherwise each be binned for no one)."""

    def __init__(self) -> None:
        super().__init__(1.0, 1)

    def add(self, *args: Any, **kwargs: Any) -> None:
        return None

    hold = add_comb = add


def _settled(totals: Sequence[float], carry: Sequence[float]) -> list[float]:
    """Slice totals with what the difference array carries into each added."""
    out, running = [], 0.0
    for value, carried in zip(totals, carry, strict=False):
        running += carried
        out.append(value + running)
    return out


_COVER = {state: "under " + state for state in BASE_STATES}
"""The carry arrays of what overlays cover, apart from the states' own."""


def from_spans(
    spans: Iterable[SpanLike],
    *,
    end: float,
    slices: int = SLICES,
    rows: Mapping[str, int] | None = None,
) -> StateArea:
    """The area of a list of spans (a whole timeline's), as the reader gathers it;
    with ``rows``, per row of nodes too."""
    gathered = AreaAccumulator(end, slices, rows)
    for span in spans:
        gathered.add(span.state, span.under, span.start, span.end, span.gpus)
        if not span.under:
            gathered.hold(span.node, span.start, span.end, span.gpus)
    return gathered.area(groups=rows is not None)
