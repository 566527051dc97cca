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

import math
import re
import time
from collections.abc import Iterable
from dataclasses import dataclass
from functools import cached_property
from typing import NamedTuple

import numpy as np

from fairalloc import startup
from fairalloc.allocation import Allocation, read_allocation
from fairalloc.errors import Violations
from fairalloc.preconditions import check_unique_ids

KEYS = ("offload_start", "offload_end", "start", "end", "processors")

# The kind's tolerances: its solvers and checks import them from here.
# relative to the scale of the times compared (a schedule's: ``checks.schedule.time_scale``; a
# method's target or bound; a work table's largest entry): two times this close are one (float
# sums and products, JSON round trips)
TIME_TOL = 1e-12
# relative to the times compared, beside TIME_TOL of the schedule's scale: a duration written
# out (an offload, a run) agrees with x or w(k)/k to this (np.isclose's rtol)
TIME_RTOL = 1e-9
# processors: a float count of free processors within this of the count asked for is enough
COUNT_SLACK = 1e-9
# relative: what the exact method's ``optimal`` promises (its makespan within this of its
# bound), at any scale of the times; also its MILP's horizon above the best schedule's
EXACT_GAP = 1e-9
# relative to the horizon: an offload this short counts as none in the exact model's
# ordering cuts
NO_OFFLOAD = 1e-6


class WorkTables(NamedTuple):
    """The jobs with a work table (more than one entry), their tables flattened: for entry e,
    ``owner[e]`` is its job's place in ``tabled``, ``works[e]`` = w_i(k) and ``lengths[e]`` =
    w_i(k)/k; job ``tabled[j]``'s table starts at ``first[j]``."""

    tabled: np.ndarray
    owner: np.ndarray
    lengths: np.ndarray
    works: np.ndarray
    first: np.ndarray


@dataclass(frozen=True, eq=False)
class MoldableProblem:
    """m processors; jobs with offload time x_i, maximum parallelism chi_i and work table
    ``work[i][k-1] = w_i(k)`` for k = 1..chi_i — or, for a job given with linear speedup, the
    one value W_i (w_i(k) = W_i for every k), so that 1e5 jobs on 1024 processors do not hold
    1e8 copies of their work."""

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
                if np.any(np.diff(table / k) > TIME_TOL * table.max()):
                    found.add(["jobs", i, "work"], "execution length w(k)/k must be "
                              "non-increasing in k")
            else:
                table = np.array([float(work)])
            tables.append(table)
        if found:
            return None
        problem = cls(
            ids=tuple(j["id"] for j in jobs),
            processors=m,
            offload=np.array([j["offload"] for j in jobs], dtype=float),
            chi=np.array([j["max_parallelism"] for j in jobs], dtype=np.int64),
            work=tuple(tables),
            linear=all(t[0] == t[-1] for t in tables),
        )
        check_time_scale(problem, found)
        return None if found else problem

    def scaled(self, factor: float) -> MoldableProblem:
        """The same problem with every time (offloads and work) multiplied by ``factor``: a
        solver with absolute tolerances sees it at a scale it was tuned for."""
        return MoldableProblem(self.ids, self.processors, self.offload * factor, self.chi,
                               tuple(table * factor for table in self.work), self.linear)

    @cached_property
    def horizon(self) -> float:
        """sum_i x_i + sum_i w_i(1): every job offloaded and run on one processor, one after
        another; the scale of the schedule's times."""
        return float(self.offload.sum() + self.first_work.sum())

    def total_work(self, i: int, k: int) -> float:
        """w_i(k), job i's processor time on k processors."""
        table = self.work[i]
        return float(table[k - 1] if len(table) > 1 else table[0])

    def duration(self, i: int, k: int) -> float:
        """w_i(k) / k: how long job i runs on k processors."""
        return self.total_work(i, k) / k

    @cached_property
    def full_work(self) -> np.ndarray:
        """W_i = w_i(chi_i)."""
        return np.array([t[-1] for t in self.work])

    @cached_property
    def first_work(self) -> np.ndarray:
        """w_i(1), the least processor time job i can take (total work does not decrease)."""
        return np.array([t[0] for t in self.work])

    @cached_property
    def full_length(self) -> np.ndarray:
        """y_i = W_i / chi_i, the running time at full parallelism."""
        return self.full_work / self.chi

    @cached_property
    def tables(self) -> WorkTables:
        """The jobs with a work table, their w_i(k)/k and w_i(k) flattened."""
        tabled = np.array([i for i in range(self.n) if len(self.work[i]) > 1], dtype=np.int64)
        sizes = np.array([len(self.work[i]) for i in tabled], dtype=np.int64)
        works = (np.concatenate([self.work[i] for i in tabled]) if tabled.size
                 else np.zeros(0))
        owner = np.repeat(np.arange(tabled.size), sizes)
        first = np.cumsum(sizes) - sizes
        lengths = works / (np.arange(works.size) - first[owner] + 1)
        return WorkTables(tabled, owner, lengths, works, first)

    def fewest_processors(self, h: float) -> np.ndarray:
        """gamma_i(h): the fewest processors (at most chi_i) that run job i within h, chi_i + 1
        where none does (Mounie, Rapine and Trystram's gamma)."""
        t = self.tables
        slack = h * (1 + TIME_TOL)
        with np.errstate(divide="ignore"):
            k = np.maximum(np.ceil(self.full_work / slack), 1.0)
        k = np.where(self.full_length <= slack, np.minimum(k, self.chi), self.chi + 1)
        k = k.astype(np.int64)
        k[t.tabled] = np.bincount(t.owner[t.lengths > slack], minlength=t.tabled.size) + 1
        return k

    @cached_property
    def dual(self) -> tuple[float, float]:
        """(rejected, accepted): the dual approximation's target lengths (``dual_search``)."""
        return dual_search(self)

    @property
    def processor_bound(self) -> float:
        """A proven lower bound on the processors' part alone: the largest rejected target."""
        return self.dual[0]

    def work_on(self, k: np.ndarray) -> np.ndarray:
        """w_i(k_i) for every job (k_i in 1..chi_i)."""
        t = self.tables
        out = self.full_work.copy()
        out[t.tabled] = t.works[t.first + k[t.tabled] - 1]
        return out

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
                   processor_ranges: Iterable[Iterable[tuple[int, int]]]) -> Allocation:
        """The result's allocation; each job's processors as a cpuset list (``cpuset``)."""
        columns = {(key,): np.asarray(v, dtype=float) for key, v in zip(
            KEYS, (offload_start, offload_end, start, end, processors))}
        ids = np.empty(self.n, dtype=object)
        ids[:] = [cpuset(r) for r in processor_ranges]
        columns[("processor_ids",)] = ids
        return Allocation(self.ids, columns)

    def read_allocation(self, data) -> Allocation:
        return read_allocation(data, self.ids, [(k,) for k in KEYS],
                               parsed={("processor_ids",): lambda t: cpuset(id_ranges(t))})


CPUSET_PART = re.compile(r"(\d+)(?:-(\d+))?")


# of the horizon: the shortest positive offload or run a spec may have, ten times the tolerance
# at which the checks compare times (TIME_TOL, 1e-12 of a schedule's scale, which
# is at most the horizon). At 1e-9 it refused section V's own instances at 1e5 jobs on m = 1024
# (runs of 5e-4 against a serial horizon of 5e6).
SHORTEST = 10 * TIME_TOL


def check_time_scale(p: MoldableProblem, found: Violations) -> None:
    """Every positive offload x_i and every run length w_i(k)/k (shortest: w_i(chi_i)/chi_i) is
    at least ``SHORTEST`` of the horizon: shorter ones are below the float precision at which
    a schedule's times are compared (``TIME_TOL``)."""
    least = SHORTEST * p.horizon
    for i in np.flatnonzero((p.offload > 0) & (p.offload < least)).tolist():
        found.add(["jobs", i, "offload"], f"{p.offload[i]:g} is below {SHORTEST:g} of the "
                  f"horizon sum(x) + sum(w(1)) = {p.horizon:g} (times that short are lost in "
                  "the float precision of the schedule)")
    for i in np.flatnonzero(p.full_length < least).tolist():
        found.add(["jobs", i, "work"], f"w(chi)/chi = {p.full_length[i]:g} is below "
                  f"{SHORTEST:g} of the horizon sum(x) + sum(w(1)) = {p.horizon:g} (times that "
                  "short are lost in the float precision of the schedule)")


def cpuset(ranges: Iterable[tuple[int, int]]) -> str:
    """Processor ids written as a Linux cpuset list, from half-open ranges [lo, hi).

    >>> cpuset([(0, 4), (8, 9), (10, 12)])
    '0-3,8,10-11'
    """
    return ",".join(str(lo) if hi - lo == 1 else f"{lo}-{hi - 1}" for lo, hi in ranges)


def id_ranges(text: str) -> list[tuple[int, int]]:
    """The half-open ranges [lo, hi) of a cpuset list; ValueError when it is not one.

    >>> id_ranges("0-3,8,10-11")
    [(0, 4), (8, 9), (10, 12)]
    """
    if not isinstance(text, str):
        raise ValueError("must be a cpuset list such as \"0-3,8\"")
    ranges = []
    for part in text.split(",") if text else []:
        match = CPUSET_PART.fullmatch(part.strip())
        if match is None or (match[2] is not None and int(match[2]) < int(match[1])):
            raise ValueError(f"{part!r} is not an id or a range lo-hi (cpuset list, "
                             "e.g. \"0-3,8\")")
        lo = int(match[1])
        ranges.append((lo, int(match[2] or lo) + 1))
    return ranges


def lower_bound(p: MoldableProblem) -> float:
    """The best of the lower bounds on the optimal makespan that need no search: the bus alone
    (``bus_lower_bound``; never below X + min y nor max_i (x_i + y_i)), and the processors
    alone after the first offload, min x + ``processor_lower_bound`` (never below
    min x + sum w_i(1) / m). This is eq. (30) of the paper done soundly: the paper takes 2/3 of
    Impl-B's processor time, which is a lower bound only if Impl-B is a 3/2-approximation
    (it is 3/2 + eps), where the rejected targets of the dual approximation are proofs."""
    if not p.n:
        return 0.0
    return max(bus_lower_bound(p), float(p.offload.min()) + p.processor_bound)


def two_shelves(p: MoldableProblem, target: float) -> tuple[np.ndarray, np.ndarray] | None:
    """Mounie, Rapine and Trystram's test of a target length lambda for the processors alone
    (their section 3): every job runs on gamma_i(lambda) processors in shelf S1 or on
    gamma_i(lambda / 2) in shelf S2; the S1 jobs may use at most m processors in all, and the
    choice minimises the total work (a 0/1 knapsack, solved exactly by dynamic programming over
    the processors). Returns (in S1, allotment), or None when lambda is rejected — a proof that
    no schedule of the processors takes lambda or less: in one, the jobs longer than lambda / 2
    all run at time lambda / 2 (so fit in m processors as S1), the others fit S2, and each
    job's work is at least its shelf's, so the knapsack's minimum would be at most m lambda."""
    m = p.processors
    k1, k2 = p.fewest_processors(target), p.fewest_processors(target / 2)
    if (k1 > p.chi).any():
        return None
    forced = k2 > p.chi                               # too long for S2
    room = m - int(k1[forced].sum())
    if room < 0:
        return None
    w1 = p.work_on(k1)
    w2 = p.work_on(np.minimum(k2, p.chi))
    gain = np.where(forced, 0.0, w2 - w1)             # work saved by moving a job up to S1
    items = np.flatnonzero(~forced & (gain > 0) & (k1 <= room))
    s1 = forced.copy()
    s1[items[knapsack(k1[items], gain[items], room)]] = True
    if np.where(s1, w1, w2).sum() > m * target * (1 + TIME_TOL):
        return None
    return s1, np.where(s1, k1, k2)


def knapsack(size: np.ndarray, value: np.ndarray, capacity: int) -> np.ndarray:
    """The 0/1 knapsack's best choice (indices), by dynamic programming over the capacity (at
    most the items' total size: beyond it every item fits)."""
    capacity = int(min(capacity, size.sum()))
    best = np.zeros(capacity + 1)
    took = np.zeros((len(size), capacity + 1), dtype=bool)
    for j, (c, v) in enumerate(zip(size.tolist(), value.tolist())):
        candidate = np.full(capacity + 1, -np.inf)
        candidate[c:] = best[:capacity + 1 - c] + v
        took[j] = candidate > best
        best = np.maximum(best, candidate)
    chosen, left = [], capacity
    for j in range(len(size) - 1, -1, -1):
        if took[j, left]:
            chosen.append(j)
            left -= int(size[j])
    return np.array(chosen[::-1], dtype=np.int64)


DUAL_PRECISION = 1e-9    # relative width of the final bisection interval


def dual_search(p: MoldableProblem, epsilon: float = DUAL_PRECISION) -> tuple[float, float]:
    """Bisection on the target length with ``two_shelves`` as the test (Mounie, Rapine and
    Trystram's binary search), until hi <= (1 + epsilon) lo or the floats between them run out:
    (lo, hi) with lo rejected — or max(y_max, sum w_i(1) / m), a bound itself — and hi accepted,
    starting from sum y_i (jobs one after another at full parallelism: always accepted). The
    processors alone need more than lo, so hi <= (1 + epsilon) times their optimum."""
    lo = max(float(p.full_length.max(initial=0.0)),
             float(p.first_work.sum()) / p.processors)
    hi = float(p.full_length.sum())
    if two_shelves(p, lo) is not None:
        return lo, lo
    while hi - lo > epsilon * lo:
        mid = (lo + hi) / 2
        if not lo < mid < hi:                       # adjacent floats: nothing left to halve
            break
        if two_shelves(p, mid) is None:
            lo = mid
        else:
            hi = mid
    return lo, hi


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


def bus_lower_bound(p: MoldableProblem) -> float:
    """The bus alone, with unlimited processors: each job runs right after its offload at full
    parallelism (y_i), so the makespan is at least the optimum of one machine with delivery
    times, max_j (x_1 + ... + x_j + y_j) over the jobs by decreasing y (Jackson's rule). It is
    never below X + min y nor max_i (x_i + y_i), and often above both.

    >>> p = MoldableProblem.from_spec({"processors": 4, "jobs": [
    ...     {"id": "a", "offload": 2, "max_parallelism": 1, "work": 6},
    ...     {"id": "b", "offload": 2, "max_parallelism": 1, "work": 5},
    ...     {"id": "c", "offload": 2, "max_parallelism": 1, "work": 1}]}, Violations())
    >>> x_then_y, longest = p.total_offload + p.full_length.min(), (p.offload + p.full_length).max()
    >>> bus_lower_bound(p), float(x_then_y), float(longest)
    (9.0, 7.0, 8.0)
    """
    return bus_bound_among(p, np.ones(p.n, dtype=bool))


def bus_bound_among(p: MoldableProblem, among: np.ndarray) -> float:
    """``bus_lower_bound`` of the jobs where ``among`` is true alone (Jackson's rule on them):
    no schedule of them ends earlier, nor any schedule that holds them and more."""
    order = np.argsort(-p.full_length, kind="stable")
    order = order[among[order]]
    return float((np.cumsum(p.offload[order]) + p.full_length[order]).max(initial=0.0))


class Tail(NamedTuple):
    """The last jobs of a schedule in start order (``jobs``), the allotments ``k`` that end
    them first, and the lower bound ``value`` they give (``tail_bound``)."""

    value: float
    jobs: tuple[int, ...]
    k: tuple[int, ...]


class OutOfTime(Exception):
    """A search passed its deadline before it finished."""


def tail_bound(p: MoldableProblem, upper: float, depth: int,
               deadline: float = math.inf) -> tuple[float, list[Tail]]:
    """A lower bound on the optimal makespan from the bus and the processors together, at most
    ``upper`` (the makespan of a known schedule), and the tails that give it.

    Some optimal schedule offloads in start order (``exact_model``'s fact 1). Let T = (t_1,
    ..., t_d) be its last d = ``depth`` jobs in that order. Its makespan is at least (a) the
    bus alone on the other jobs, ``bus_bound_among``, and (b) ``tail_makespan``: T alone on
    the m processors, each t_q starting no earlier than the previous one nor than its release
    X - (the offloads of the T jobs after it), since the offloads before it cover the rest of
    the bus; the jobs before T only take processors away. So the least of max(a, b) over
    every ordered T bounds the optimum, and each suffix of T bounds it too. The search builds
    T from the last job back, depth first, and drops a suffix once the largest of its
    suffixes' values reaches the least complete tail found (or ``upper``): the result is
    min(upper, that least), with the tails that improved on it, best last. At depth n, T is
    the whole order and (b) is the makespan of the best schedule: the bound is the optimum.
    Raises ``OutOfTime`` once ``time.perf_counter()`` passes ``deadline``."""
    x = p.offload
    by_length = [int(i) for i in np.argsort(p.full_length, kind="stable")]
    outside = np.ones(p.n, dtype=bool)
    best = [upper]
    tails: list[Tail] = []

    def visit(suffix: list[int], value: float) -> None:
        for i in by_length:
            if not outside[i]:
                continue
            if time.perf_counter() > deadline:
                raise OutOfTime
            outside[i] = False
            jobs = [i, *suffix]
            here = max(value, bus_bound_among(p, outside))
            if here < best[0]:
                after = np.concatenate([np.cumsum(x[jobs][::-1])[::-1][1:], [0.0]])
                span, k = tail_makespan(p, jobs, p.total_offload - after, best[0], deadline)
                here = max(here, span)
                if here < best[0] and (len(jobs) == depth or not outside.any()):
                    best[0] = here
                    tails.append(Tail(here, tuple(jobs), k))
                elif here < best[0]:
                    visit(jobs, here)
            outside[i] = True

    visit([], 0.0)
    return best[0], tails


def tail_makespan(p: MoldableProblem, jobs: list[int], release, cutoff: float,
                  deadline: float = math.inf) -> tuple[float, tuple[int, ...]]:
    """The shortest schedule of ``jobs`` alone on the m processors, started in that order (each
    no earlier than the previous start and its ``release``, at the first moment its allotment
    is free: the earliest schedule of an order and allotments), over every allotment; with
    the allotments. (``cutoff``, ()) when none ends before ``cutoff``. Depth first over the
    allotments, the widest first; a partial choice is dropped once its ends, or a later job's
    start plus its shortest run y, reach the best found."""
    m, count = p.processors, len(jobs)
    shortest = [float(p.full_length[j]) for j in jobs]
    best: list = [cutoff, ()]
    chosen = [0] * count

    def place(q: int, previous: float, running: list[tuple[float, int]], last: float) -> None:
        if q == count:
            best[0], best[1] = last, tuple(chosen)
            return
        if time.perf_counter() > deadline:
            raise OutOfTime
        j = jobs[q]
        ready = max(float(release[q]), previous)
        for k in range(int(p.chi[j]), 0, -1):
            at, free = ready, m - sum(kk for end, kk in running if end > ready)
            for end, kk in sorted(r for r in running if r[0] > ready):
                if free >= k:
                    break
                at, free = end, free + kk
            end = at + p.duration(j, k)
            later = max((max(float(release[r]), at) + shortest[r] for r in range(q + 1, count)),
                        default=0.0)
            if max(last, end, later) < best[0]:
                chosen[q] = k
                place(q + 1, at, [r for r in running if r[0] > at] + [(end, k)],
                      max(last, end))

    place(0, 0.0, [], 0.0)
    return best[0], best[1]


def exact_model(p: MoldableProblem, horizon: float, lower: float = 0.0):
    """The optimal makespan as a continuous-time MILP (Pyomo): exact, nothing discretised.

    Two facts keep it small. (1) Some optimal schedule offloads in the order the jobs start:
    if j offloads right before i but i starts first, swapping the two offloads ends i's
    earlier and j's at the old end of i's, still no later than s_i <= s_j; so one order serves
    the bus and the processors. (2) With identical processors a schedule is feasible iff at
    each job's start the jobs running then (itself included) hold at most m processors: taken
    in start order, each job then finds enough free ids (lowest first). H = ``horizon``, the
    makespan of a known schedule, is every big-M and every time's upper bound; ``lower`` is a
    known lower bound on the makespan.

    Data: x_i, chi_i, w_i(k); d_ik = w_i(k)/k. Variables:
        a_ik in {0,1}    job i runs on k processors, k = 1..chi_i
        y_ij in {0,1}    (i < j) i offloads and starts before j;  y_ji := 1 - y_ij
        r_ijk in {0,1}   i runs on k processors and is still running when j starts;
                         rho_ij := sum_k r_ijk
        o_i, s_i         offload start and run start, in [0, H];  C in [lower, H]
    with d_i = sum_k d_ik a_ik (run length) and A_i = sum_k w_i(k) a_ik (processor time):

    min C subject to, for every job i and every pair i != j,
        sum_k a_ik = 1                                   one allotment
        s_i >= o_i + x_i,   C >= s_i + d_i               run after the offload; makespan
        o_j >= o_i + x_i - H (1 - y_ij)                  the bus serves one job at a time
        s_j >= s_i - H (1 - y_ij)                        starts follow the same order
        s_i + d_i <= s_j + H (1 - y_ij + rho_ij)         i ends by s_j unless it is counted
        r_ijk <= a_ik,   rho_ij <= y_ij                  counted on its own allotment
        sum_k k a_jk + sum_{i != j} sum_k k r_ijk <= m   processors at s_j
        0 <= y_ij + y_jl - y_il <= 1   (i < j < l)       no 3-cycle, only among jobs with
                                                         x ~ 0 (offloads order the rest)
    and valid inequalities that tighten the relaxation:
        o_j >= sum_{i != j} x_i y_ij                     the bus was busy before j's offload
        m (C - s_j) >= A_j + sum_{i != j} w_i(1) y_ji    work that starts at s_j or later
        m (C - min_i x_i) >= sum_i A_i                   all the work
    Jobs with identical data go in index order (y_ij fixed to 1 for such i < j).
    """
    pyo = startup.pyomo()

    n, m, H = p.n, p.processors, float(horizon)
    x = [float(v) for v in p.offload]
    chi = [int(c) for c in p.chi]
    ks = [range(1, c + 1) for c in chi]
    model = pyo.ConcreteModel(name="moldable-exact-makespan")
    model.J = pyo.Set(initialize=range(n))
    model.A = pyo.Set(dimen=2, initialize=[(i, k) for i in range(n) for k in ks[i]])
    model.P = pyo.Set(dimen=2, initialize=[(i, j) for i in range(n) for j in range(i + 1, n)])
    model.Q = pyo.Set(dimen=2, initialize=[(i, j) for i in range(n) for j in range(n) if i != j])
    model.R = pyo.Set(dimen=3, initialize=[(i, j, k) for i, j in model.Q for k in ks[i]])
    model.a = pyo.Var(model.A, domain=pyo.Binary)
    model.y = pyo.Var(model.P, domain=pyo.Binary)
    model.r = pyo.Var(model.R, domain=pyo.Binary)
    shortest = [p.duration(i, chi[i]) for i in range(n)]
    model.o = pyo.Var(model.J, bounds=lambda _, i: (0.0, max(0.0, H - x[i] - shortest[i])))
    model.s = pyo.Var(model.J, bounds=lambda _, i: (x[i], max(x[i], H - shortest[i])))
    model.C = pyo.Var(bounds=(min(float(lower), H), H))
    model.makespan = pyo.Objective(expr=model.C, sense=pyo.minimize,
                                   doc="minimise the makespan C")

    def before(i, j):
        return model.y[i, j] if i < j else 1 - model.y[j, i]

    def d(i):
        return sum(p.duration(i, k) * model.a[i, k] for k in ks[i])

    def area(i):
        return sum(p.total_work(i, k) * model.a[i, k] for k in ks[i])

    def rho(i, j):
        return sum(model.r[i, j, k] for k in ks[i])

    model.one_allotment = pyo.Constraint(
        model.J, doc="sum_k a_jk = 1: one allotment per job",
        rule=lambda _, i: sum(model.a[i, k] for k in ks[i]) == 1)
    model.offload_first = pyo.Constraint(
        model.J, doc="s_j >= o_j + x_j: a job runs after its offload",
        rule=lambda _, i: model.s[i] >= model.o[i] + x[i])
    model.ends = pyo.Constraint(
        model.J, doc="C >= s_j + d_j(a)", rule=lambda _, i: model.C >= model.s[i] + d(i))
    model.bus = pyo.Constraint(
        model.Q, doc="one offload at a time on the bus, in the start order",
        rule=lambda _, i, j: model.o[j] >= model.o[i] + x[i] - H * (1 - before(i, j)))
    model.start_order = pyo.Constraint(
        model.Q, doc="y orders the starts: s_j >= s_i when i is before j",
        rule=lambda _, i, j: model.s[j] >= model.s[i] - H * (1 - before(i, j)))
    model.finished = pyo.Constraint(
        model.Q, doc="i ends by s_j unless counted on j's processors",
        rule=lambda _, i, j: model.s[i] + d(i)
        <= model.s[j] + H * (1 - before(i, j) + rho(i, j)))
    model.counted_allotment = pyo.Constraint(
        model.R, doc="r_ijk <= a_ik: counted on its own allotment",
        rule=lambda _, i, j, k: model.r[i, j, k] <= model.a[i, k])
    model.counted_before = pyo.Constraint(
        model.Q, doc="rho_ij <= y_ij: only a job started before is counted",
        rule=lambda _, i, j: rho(i, j) <= before(i, j))
    model.capacity = pyo.Constraint(
        model.J, doc="at most m processors busy at s_j",
        rule=lambda _, j: sum(k * model.a[j, k] for k in ks[j]) + sum(
            k * model.r[i, j, k] for i in range(n) if i != j for k in ks[i]) <= m)
    free = [i for i in range(n) if x[i] <= NO_OFFLOAD * H]
    model.T = pyo.Set(dimen=3, initialize=[(i, j, k) for i in free for j in free for k in free
                                           if i < j < k])
    model.acyclic = pyo.Constraint(
        model.T, doc="0 <= y_ij + y_jl - y_il <= 1: no 3-cycle",
        rule=lambda _, i, j, k: pyo.inequality(
            0, model.y[i, j] + model.y[j, k] - model.y[i, k], 1))
    model.bus_prefix = pyo.Constraint(
        model.J, doc="valid: the bus was busy before j's offload",
        rule=lambda _, j: model.o[j] >= sum(x[i] * before(i, j) for i in range(n) if i != j))
    model.tail_work = pyo.Constraint(
        model.J, doc="valid: work that starts at s_j or later",
        rule=lambda _, j: m * (model.C - model.s[j])
        >= area(j) + sum(float(p.first_work[i]) * before(j, i) for i in range(n) if i != j))
    model.all_work = pyo.Constraint(
        doc="valid: all the work fits after the first offload",
        expr=m * (model.C - min(x)) >= sum(area(i) for i in range(n)))
    for i, j in model.P:
        if x[i] == x[j] and chi[i] == chi[j] and np.array_equal(p.work[i], p.work[j]):
            model.y[i, j].fix(1)
    return model


def metrics(p: MoldableProblem, allocation) -> dict:
    """Makespan, the lower bound and their ratio, processor utilisation, bus busy fraction."""
    end = np.asarray(allocation.column("end"), dtype=float)
    start = np.asarray(allocation.column("start"), dtype=float)
    k = np.asarray(allocation.column("processors"), dtype=float)
    makespan = float(end.max())
    lb = lower_bound(p)
    return {
        "makespan": makespan,
        "lower_bound": lb,
        "makespan_over_bound": makespan / lb if lb > 0 else None,
        "utilization": float(((end - start) * k).sum() / (p.processors * makespan))
        if makespan > 0 else 0.0,
        "bus_utilization": p.total_offload / makespan if makespan > 0 else 0.0,
    }
