"""A replay's trace: the jobs that arrive over time, one row a job, in arrival order.

Shared by every kind's replay: a trace holds ids, arrival times and the kind's own columns
(numpy arrays of one length); the kind's replay record says which columns it needs and what
they mean. Generators, table readers and the shipped production trace all build one.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass, field

import numpy as np


@dataclass(frozen=True, eq=False)
class Trace:
    """Jobs sorted by arrival (ties keep their given order): ``ids``, ``arrival`` in seconds
    from the trace's start, and ``columns``, the kind's per-job values by name; from a table,
    ``ignored`` names the table's columns that no trace column reads, and ``dropped`` the
    jobs of its source that it leaves out (typed jobs of more GPUs than measured).

    >>> t = Trace.of(["b", "a"], [5.0, 0.0], {"scale_factor": [1, 2]}, source="hand")
    >>> t.ids, t.arrival.tolist(), t.columns["scale_factor"].tolist()
    (('a', 'b'), [0.0, 5.0], [2, 1])
    """

    ids: tuple[str, ...]
    arrival: np.ndarray
    columns: Mapping[str, np.ndarray] = field(default_factory=dict)
    source: str = ""
    ignored: tuple[str, ...] = ()     # the columns of its table that no trace column reads
    dropped: tuple[str, ...] = ()     # the ids of its source's jobs left out (too large)

    @classmethod
    def of(cls, ids, arrival, columns: Mapping | None = None, source: str = "") -> Trace:
        """A trace from per-job sequences in any order, sorted stably by arrival."""
        arrival = np.asarray(arrival, dtype=float)
        order = np.argsort(arrival, kind="stable")
        ids = tuple(str(ids[i]) for i in order)
        cols = {name: np.asarray(values)[order] for name, values in (columns or {}).items()}
        return cls(ids, arrival[order], cols, source)

    def __post_init__(self) -> None:
        n = len(self.ids)
        if self.arrival.shape != (n,):
            raise ValueError(f"arrival has shape {self.arrival.shape}, expected ({n},)")
        for name, values in self.columns.items():
            if len(values) != n:
                raise ValueError(f"column {name!r} has {len(values)} values, expected {n}")
        if n and np.any(np.diff(self.arrival) < 0):
            raise ValueError("arrival times must be sorted (use Trace.of)")

    @property
    def n(self) -> int:
        return len(self.ids)

    def take(self, index) -> Trace:
        """The jobs at ``index`` (a slice, mask or sorted positions), in arrival order."""
        ids = np.asarray(self.ids, dtype=object)[index]
        return Trace(tuple(ids), self.arrival[index],
                     {k: v[index] for k, v in self.columns.items()}, self.source,
                     self.ignored, self.dropped)
