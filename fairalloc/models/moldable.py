"""Moldable jobs with serial offload (Sun et al., paper 003): data, checks, bounds.

One host, one non-preemptive bus, m identical processors. Job i offloads its data for x_i on
the bus, then runs non-preemptively on k <= chi_i processors chosen when it starts, for
w_i(k) / k. Notation (section II): W_i = w_i(chi_i), y_i = W_i / chi_i, X = sum x_i,
W_sum = sum W_i, W_max and W_sec the largest and second largest W_i, y_max = max y_i.

Example 1 of the paper (m = 4, L = 10): the work-conserving trap.

>>> p = MoldableProblem.from_spec({"processors": 4, "jobs": [
...     {"id": "t1", "offload": 1, "max_parallelism": 3, "work": 6},
...     {"id": "t2", "offload": 1, "max_parallelism": 4, "work": 40}]}, Violations())
>>> p.total_offload, p.work_sum, p.work_max, lower_bound(p)
(2.0, 46.0, 40.0, 12.5)
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np

from fairalloc.errors import Violations, check_unique_ids
from fairalloc.result import Allocation

KEYS = ("offload_start", "offload_end", "start", "end", "processors")


@dataclass(frozen=True, eq=False)
class MoldableProblem:
    """m processors; jobs with offload time x_i, maximum parallelism chi_i and work table
    ``work[i][k-1] = w_i(k)`` for k = 1..chi_i."""

    ids: tuple[str, ...]
    processors: int
    offload: np.ndarray
    chi: np.ndarray
    work: tuple[np.ndarray, ...]
    linear: bool

    @property
    def n(self) -> int:
        return len(self.ids)

    @classmethod
    def from_spec(cls, data: dict, found: Violations) -> MoldableProblem | None:
        """Build from a schema-valid spec; checks chi <= m, the table's length and the two
        monotonicity assumptions of section II (total work non-decreasing, w(k)/k
        non-increasing)."""
        m = int(data["processors"])
        jobs = data["jobs"]
        check_unique_ids(jobs, "jobs", found)
        tables = []
        for i, job in enumerate(jobs):
            chi = job["max_parallelism"]
            if chi > m >= 1:
                found.add(["jobs", i, "max_parallelism"],
                          f"must be at most the number of processors ({m})")
            work = job["work"]
            if isinstance(work, list):
                table = np.array(work, dtype=float)
                if len(table) != chi:
                    found.add(["jobs", i, "work"], f"must list w(1)..w(chi): {chi} values, "
                              f"not {len(table)}")
                    continue
                k = np.arange(1, len(table) + 1)
                if np.any(np.diff(table) < 0):
                    found.add(["jobs", i, "work"], "total work w(k) must be non-decreasing in k")
                if np.any(np.diff(table / k) > 1e-12 * table.max()):
                    found.add(["jobs", i, "work"], "execution length w(k)/k must be "
                              "non-increasing in k")
            else:
                table = np.full(chi, float(work))
            tables.append(table)
        if found:
            return None
        return cls(
            ids=tuple(j["id"] for j in jobs),
            processors=m,
            offload=np.array([j["offload"] for j in jobs], dtype=float),
            chi=np.array([j["max_parallelism"] for j in jobs], dtype=np.int64),
            work=tuple(tables),
            linear=all(np.all(t == t[0]) for t in tables),
        )

    def duration(self, i: int, k: int) -> float:
        """w_i(k) / k: how long job i runs on k processors."""
        return float(self.work[i][k - 1] / k)

    @property
    def full_work(self) -> np.ndarray:
        """W_i = w_i(chi_i)."""
        return np.array([t[-1] for t in self.work])

    @property
    def full_length(self) -> np.ndarray:
        """y_i = W_i / chi_i, the running time at full parallelism."""
        return self.full_work / self.chi

    @property
    def total_offload(self) -> float:
        return float(self.offload.sum())

    @property
    def work_sum(self) -> float:
        return float(self.full_work.sum())

    @property
    def work_max(self) -> float:
        return float(self.full_work.max())

    @property
    def work_sec(self) -> float:
        """W_sec, the second largest W_i (eq. 11); W_max again when it occurs twice."""
        return float(np.sort(self.full_work)[-2]) if self.n > 1 else 0.0

    def allocation(self, offload_start, offload_end, start, end, processors,
                   processor_ids) -> Allocation:
        columns = {(key,): np.asarray(v, dtype=float) for key, v in zip(
            KEYS, (offload_start, offload_end, start, end, processors))}
        ids = np.empty(self.n, dtype=object)
        ids[:] = [list(map(int, p)) for p in processor_ids]
        columns[("processor_ids",)] = ids
        return Allocation(self.ids, columns)

    def read_allocation(self, data) -> Allocation:
        from fairalloc.result import read_allocation

        return read_allocation(data, self.ids, [(k,) for k in KEYS],
                               lists=[("processor_ids",)])


def lower_bound(p: MoldableProblem) -> float:
    """The best of three lower bounds on the optimal makespan: X + min y (every offload, then
    at least the shortest job at full parallelism), max_i (x_i + y_i), and min x + sum w_i(1) / m
    (no processor starts before the first offload ends, and job i needs at least w_i(1) of
    processor time since total work does not decrease with k)."""
    first_work = np.array([t[0] for t in p.work])
    return float(max(
        p.total_offload + p.full_length.min(),
        (p.offload + p.full_length).max(),
        p.offload.min() + first_work.sum() / p.processors,
    ))


def theorem1_bound(p: MoldableProblem) -> float:
    """Theorem 1 (eq. 2), for Impl-I on linear-speedup jobs: W_sum/m + X + max(y_max, W_sum/m)."""
    m = p.processors
    return p.work_sum / m + p.total_offload + max(p.full_length.max(), p.work_sum / m)


def theorem2_bound(p: MoldableProblem, order: np.ndarray, alpha: float) -> float:
    """Theorem 2 (eq. 12), for Impl-I* with queue ``order`` (the W_max job first):
    max(x_1 + y_1, max_{k>=2} F(k)) with F(k) = X - sum_{j>k} x_j
    + (W_sum - sum_{j>=k} W_j) / ((1 - alpha) m) + max(W_k / (alpha m), y_k)."""
    m = p.processors
    x, W, y = p.offload[order], p.full_work[order], p.full_length[order]
    after = np.concatenate([np.cumsum(x[::-1])[::-1][1:], [0.0]])         # sum_{j>k} x_j
    from_k = np.cumsum(W[::-1])[::-1]                                        # sum_{j>=k} W_j
    with np.errstate(divide="ignore"):
        F = (p.total_offload - after + (p.work_sum - from_k) / ((1 - alpha) * m)
             + np.maximum(W / (alpha * m), y))
    return float(max(x[0] + y[0], F[1:].max(initial=-np.inf)))


def theorem5_bound(p: MoldableProblem, rho: float) -> float:
    """Theorem 5 (eq. 23), for Impl-II with parameter rho."""
    m = p.processors
    ge = p.chi >= rho * m
    lt = ~ge
    head = p.total_offload          # t_a >= X (eq. 24): the T_LT jobs start after every offload
    if ge.any():
        head = max(p.total_offload + p.offload[ge].max(),
                   p.full_length[ge].max() + p.full_length[ge].sum())
    tail = 0.0
    if lt.any():
        tail = p.full_length[lt].max() + (1 + rho) / m * p.full_work[lt].sum()
    return float(head + tail)
