"""Moldable-job methods: the paper's list algorithms on one event-driven simulation core.

The core keeps the bus as a single server (offloads back to back, in the order they are
released) and the processors as a pool of ids (lowest free ids first), so every schedule names
the processors each job holds — for the Gantt chart and the feasibility check.
"""

from __future__ import annotations

import bisect
import heapq
import math
import time
from typing import NamedTuple

import numpy as np

from fairalloc.contract import does_not_apply
from fairalloc.errors import SolverError
from fairalloc.models.moldable import (
    COUNT_SLACK,
    DUAL_PRECISION,
    EXACT_GAP,
    TIME_TOL,
    MoldableProblem,
    OutOfTime,
    Tail,
    dual_search,
    exact_model,
    lower_bound,
    tail_bound,
    theorem1_bound,
    theorem2_bound,
    theorem5_bound,
    two_shelves,
)
from fairalloc.result import Solution
from fairalloc.solvers.highs import log_stream, relative_gap, seconds_left, solve_pyomo

DEFAULT_RHO = math.sqrt(2) - 1


class ProcessorPool:
    """The free processor ids as sorted, disjoint, half-open ranges [lo, hi): taking and
    returning k ids costs O(number of ranges), not O(k log m) as a heap of single ids would."""

    def __init__(self, m: int):
        self.ranges: list[tuple[int, int]] = [(0, m)] if m else []
        self.count = m

    def take(self, k: int) -> tuple[tuple[int, int], ...]:
        """The k lowest free ids, as ranges."""
        got = []
        while k:
            lo, hi = self.ranges[0]
            if hi - lo <= k:
                got.append(self.ranges.pop(0))
                k -= hi - lo
            else:
                got.append((lo, lo + k))
                self.ranges[0] = (lo + k, hi)
                k = 0
        self.count -= sum(hi - lo for lo, hi in got)
        return tuple(got)

    def give(self, ranges: tuple[tuple[int, int], ...]) -> None:
        """Return ids taken earlier, merging them with their free neighbours."""
        for lo, hi in ranges:
            self.count += hi - lo
            at = bisect.bisect_left(self.ranges, (lo, hi))
            if at < len(self.ranges) and self.ranges[at][0] == hi:
                hi = self.ranges.pop(at)[1]
            if at and self.ranges[at - 1][1] == lo:
                at -= 1
                lo = self.ranges.pop(at)[0]
            self.ranges.insert(at, (lo, hi))


class Platform:
    """The bus and the processor pool while a list algorithm runs."""

    def __init__(self, p: MoldableProblem):
        self.p = p
        self.pool = ProcessorPool(p.processors)
        self.running: list[tuple[float, int, int]] = []   # a heap of (end, job, k)
        self.bus_free = 0.0
        self.now = 0.0
        n = p.n
        self.offload_start, self.offload_end = np.zeros(n), np.zeros(n)
        self.start, self.end = np.zeros(n), np.zeros(n)
        self.width = np.zeros(n, dtype=np.int64)
        self.held: list[tuple[tuple[int, int], ...]] = [()] * n

    @property
    def idle(self) -> int:
        """How many processors are free now."""
        return self.pool.count

    def release_until(self, t: float) -> None:
        """Return the processors of every job that ends at or before t."""
        while self.running and self.running[0][0] <= t:
            self.pool.give(self.held[heapq.heappop(self.running)[1]])

    def wait_for(self, count: float) -> None:
        """Advance ``now`` until at least ``count`` processors are free."""
        while self.pool.count < count - COUNT_SLACK and self.running:
            self.now = max(self.now, self.running[0][0])
            self.release_until(self.now)

    def free_at(self, count: float) -> float:
        """The earliest time from now on at which at least ``count`` processors are free."""
        free = self.pool.count
        if free >= count - COUNT_SLACK:
            return self.now
        for end, _, k in sorted(self.running):
            free += k
            if free >= count - COUNT_SLACK:
                return max(self.now, end)
        return math.inf

    def offload(self, i: int, ready: float) -> float:
        """Put job i's data on the bus as soon as both it and the bus are ready."""
        self.offload_start[i] = max(ready, self.bus_free)
        self.offload_end[i] = self.bus_free = self.offload_start[i] + self.p.offload[i]
        return self.offload_end[i]

    def run(self, i: int, k: int, at: float) -> None:
        """Job i holds k free processors from now and runs on them from ``at``."""
        self.width[i], self.held[i] = k, self.pool.take(k)
        self.start[i] = at
        self.end[i] = at + self.p.duration(i, k)
        heapq.heappush(self.running, (self.end[i], i, k))

    def solution(self, name: str, **metrics) -> Solution:
        p = self.p
        makespan = float(self.end.max()) if p.n else 0.0
        alloc = p.allocation(self.offload_start, self.offload_end, self.start, self.end, self.width,
                             self.held)
        return Solution(alloc, "heuristic", makespan, metrics, {"name": name})


def gpusched1_schedule(p: MoldableProblem, order: np.ndarray, alpha: float,
                       lookahead: bool = False) -> Platform:
    """Algorithm 1, GPUSched1(alpha, Q): take the jobs in the order of Q; once at least alpha m
    processors are free, give the head job min(free, chi) of them, offload it (the bus in Q
    order) and run it as soon as its offload ends. Processors are held from assignment on.

    ``lookahead`` (section V): the head job starts offloading early, as soon as alpha m
    processors will be free when its offload ends; it takes its processors then."""
    plat = Platform(p)
    need = alpha * p.processors
    for i in map(int, order):
        if lookahead:
            ready = plat.free_at(need)
            begin = plat.offload(i, max(plat.now, ready - p.offload[i]))
            plat.now = max(plat.now, begin)
            plat.release_until(plat.now)
            plat.wait_for(need)
            plat.release_until(plat.now)
            k = min(plat.idle, int(p.chi[i]))
            plat.run(i, k, max(begin, plat.now))
            plat.now = plat.start[i]
        else:
            plat.wait_for(need)
            plat.release_until(plat.now)
            k = min(plat.idle, int(p.chi[i]))
            plat.run(i, k, plat.offload(i, plat.now))
    return plat


def impl1_order(p: MoldableProblem) -> np.ndarray:
    """Impl-I's queue: the spec's order with the job of largest W moved last (section III-A;
    the paper leaves the rest of Q open)."""
    top = int(np.argmax(p.full_work))
    return np.array([i for i in range(p.n) if i != top] + [top])


def impl1_star_order(p: MoldableProblem, alpha: float) -> np.ndarray:
    """Impl-I*'s queue: the job of largest W first, the rest by decreasing
    z_i = max(W_i / (alpha m), y_i) - W_i / ((1 - alpha) m) (eq. 20, Algorithm 2); ties in
    spec order."""
    m = p.processors
    W, y = p.full_work, p.full_length
    top = int(np.argmax(W))
    with np.errstate(divide="ignore", invalid="ignore"):
        z = np.maximum(W / (alpha * m), y) - W / ((1 - alpha) * m)
    rest = [i for i in np.argsort(-z, kind="stable") if i != top]
    return np.array([top] + rest)


def gpusched1(p: MoldableProblem, lookahead: bool = False) -> Solution:
    """Impl-I: alpha = W_max / W_sum (eq. 1), the largest job last in Q."""
    alpha = p.work_max / p.work_sum
    plat = gpusched1_schedule(p, impl1_order(p), alpha, lookahead)
    metrics = {"alpha": alpha}
    if p.linear:
        metrics["bound:theorem1"] = theorem1_bound(p)
    return plat.solution("GPUSched1 (Impl-I)", **metrics)


def gpusched1_star(p: MoldableProblem, lookahead: bool = False) -> Solution:
    """Impl-I*: alpha = W_sec / W_sum (eq. 10), the largest job first, the rest by Algorithm 2."""
    alpha = p.work_sec / p.work_sum if p.n > 1 else 1.0
    order = impl1_star_order(p, alpha)
    plat = gpusched1_schedule(p, order, alpha, lookahead)
    metrics = {"alpha": alpha}
    if p.linear and 0 < alpha < 1:
        metrics["bound:theorem2"] = theorem2_bound(p, order, alpha)
    return plat.solution("GPUSched1* (Impl-I*)", **metrics)


def work_conserving(p: MoldableProblem) -> Solution:
    """Baseline of Example 1: offload every job back to back in spec order and start each,
    in that order, as soon as it is offloaded and some processor is idle, on min(idle, chi)."""
    plat = Platform(p)
    for i in range(p.n):
        ready = plat.offload(i, 0.0)
        plat.now = max(plat.now, ready)
        plat.release_until(plat.now)
        plat.wait_for(1)
        plat.release_until(plat.now)
        plat.run(i, min(plat.idle, int(p.chi[i])), plat.now)
    return plat.solution("work-conserving")


def johnson_order(x: np.ndarray, y: np.ndarray) -> np.ndarray:
    """Johnson's rule for a two-stage flow shop: jobs with x <= y by increasing x, then the
    others by decreasing y (ties in spec order)."""
    first = np.flatnonzero(x <= y)
    last = np.flatnonzero(x > y)
    return np.concatenate([first[np.argsort(x[first], kind="stable")],
                           last[np.argsort(-y[last], kind="stable")]]).astype(np.int64)


def ffdh_shelves(p: MoldableProblem, jobs: np.ndarray) -> list[list[int]]:
    """First-fit decreasing height: jobs by decreasing y_i, each on the first shelf with
    chi_i processors left, else on a new shelf (Coffman et al.).

    First fit in O(log m) a job: a min-tree over room values 0..m holds, per value, the
    lowest shelf with exactly that room, so the first shelf with room >= chi is a range
    minimum over [chi, m]; a heap per room value keeps the shelves that share it."""
    m = p.processors
    size = 1 << m.bit_length()
    none = len(jobs)                                    # no shelf
    tree = [none] * (2 * size)
    same_room: list[list[int]] = [[] for _ in range(m + 1)]
    shelves: list[list[int]] = []
    room: list[int] = []

    def refresh(r: int) -> None:
        v = r + size
        tree[v] = same_room[r][0] if same_room[r] else none
        v >>= 1
        while v:
            tree[v] = min(tree[2 * v], tree[2 * v + 1])
            v >>= 1

    def first_fit(c: int) -> int:
        lo, hi, best = c + size, m + 1 + size, none
        while lo < hi:
            if lo & 1:
                best = min(best, tree[lo])
                lo += 1
            if hi & 1:
                hi -= 1
                best = min(best, tree[hi])
            lo >>= 1
            hi >>= 1
        return best

    for i in jobs[np.argsort(-p.full_length[jobs], kind="stable")].tolist():
        c = int(p.chi[i])
        s = first_fit(c)
        if s == none:
            s = len(shelves)
            shelves.append([])
            room.append(m)
        else:
            heapq.heappop(same_room[room[s]])
            refresh(room[s])
        shelves[s].append(i)
        room[s] -= c
        if room[s]:
            heapq.heappush(same_room[room[s]], s)
            refresh(room[s])
    return shelves


def gpusched2(p: MoldableProblem, rho: float = DEFAULT_RHO) -> Solution:
    """Impl-II, GPUSched2(rho) (Algorithm 3): jobs with chi_i >= rho m (T_GE) are offloaded first
    in Johnson's order and run rigidly on chi_i processors in that order, each once offloaded and
    chi_i processors are free; the others (T_LT) are offloaded next (in FFDH order) and run
    after every T_GE job ends, on FFDH shelves: a shelf starts when the previous one ends and its
    jobs' data is on the device."""
    plat = Platform(p)
    ge = np.flatnonzero(p.chi >= rho * p.processors)
    lt = np.flatnonzero(p.chi < rho * p.processors)
    ge_order = johnson_order(p.offload[ge], p.full_length[ge])
    ge = ge[ge_order]
    shelves = ffdh_shelves(p, lt)
    for i in ge:
        plat.offload(int(i), 0.0)
    for shelf in shelves:
        for i in shelf:
            plat.offload(i, 0.0)
    for i in ge:
        plat.now = max(plat.now, plat.offload_end[i])
        plat.release_until(plat.now)
        plat.wait_for(int(p.chi[i]))
        plat.release_until(plat.now)
        plat.run(int(i), int(p.chi[i]), plat.now)
    shelf_start = float(plat.end[ge].max()) if ge.size else 0.0
    for shelf in shelves:
        shelf_start = max(shelf_start, float(plat.offload_end[shelf].max()))
        plat.release_until(shelf_start)
        for i in shelf:
            plat.run(i, int(p.chi[i]), shelf_start)
        shelf_start = float(plat.end[shelf].max())
    metrics = {"rho": rho}
    if p.linear:
        metrics["bound:theorem5"] = theorem5_bound(p, rho)
    return plat.solution("GPUSched2 (Impl-II)", **metrics)


def ludwig_tiwari_allotment(p: MoldableProblem) -> np.ndarray:
    """Processors per job minimising max(sum_i w_i(k_i) / m, max_i w_i(k_i) / k_i) (Ludwig and
    Tiwari's allotment step): for a target length d every job takes the fewest processors that
    run it within d, which also minimises its work. The total work g(d) does not increase with
    d, so the best d is found by bisection over the lengths w_i(k) / k where g can change (only
    the tabled jobs': a linear job's work is the same on any k); ties go to the shorter d."""
    def work(d: float) -> float:
        return float(p.work_on(p.fewest_processors(d)).sum())

    d_min = float(p.full_length.max()) if p.n else 0.0     # every job within d on chi_i
    lengths = p.tables.lengths
    cands = np.unique(np.concatenate([[d_min], lengths[lengths >= d_min]]))
    m = p.processors
    crossing = _first(len(cands), lambda j: work(cands[j]) / m <= cands[j])
    best = crossing if crossing < len(cands) else len(cands) - 1
    if crossing > 0:
        below = work(cands[crossing - 1])
        if crossing == len(cands) or below / m <= cands[crossing]:
            best = _first(crossing, lambda j: work(cands[j]) <= below)
    return p.fewest_processors(float(cands[best]))


def _first(n: int, holds) -> int:
    """The first j in 0..n-1 where the monotone predicate ``holds`` is true (n if none)."""
    lo, hi = 0, n
    while lo < hi:
        mid = (lo + hi) // 2
        if holds(mid):
            hi = mid
        else:
            lo = mid + 1
    return lo


def after_all_offloads(p: MoldableProblem, k: np.ndarray, order) -> Platform:
    """Every offload first (spec order), then list scheduling of allotment ``k`` in ``order``:
    each job at the first moment k_i processors are free, none overtaking the one before."""
    plat = Platform(p)
    for i in range(p.n):
        plat.offload(i, 0.0)
    plat.now = float(plat.bus_free)                     # no overlap: all data first
    for i in map(int, order):
        plat.release_until(plat.now)
        plat.wait_for(int(k[i]))
        plat.release_until(plat.now)
        plat.run(i, int(k[i]), plat.now)
    return plat


def offload_then_list(p: MoldableProblem) -> Solution:
    """Baseline in the spirit of Impl-B (section V): offload every job first (spec order), then
    schedule the moldable jobs on the processors alone — allotments by Ludwig and Tiwari's rule,
    then list scheduling by decreasing running time. A simpler member of the family of the
    paper's Impl-B (Mounie, Rapine and Trystram's 3/2 + eps dual approximation)."""
    k = ludwig_tiwari_allotment(p)
    length = p.work_on(k) / k
    plat = after_all_offloads(p, k, np.argsort(-length, kind="stable"))
    return plat.solution("offload, then Ludwig-Tiwari allotment + list scheduling")


SMALL = 3       # MRT's small jobs (w_i(1) <= lambda / 2): one processor each, in the gaps


class ThreeShelves(NamedTuple):
    """Mounie, Rapine and Trystram's shelves for an accepted target lambda (times from the
    processors' start): shelf 0 runs [0, <= 3 lambda / 2] on its own processors, shelf 1 from 0
    for at most lambda, shelf 2 the last lambda / 2 on shelf 1's processors; ``SMALL`` jobs
    fill gaps. ``below[i]`` is the job under i when rule 2 stacked them on one processor
    (-1 otherwise); ``rules`` counts the applications of rules 1, 2 and 3."""

    target: float
    shelf: np.ndarray
    k: np.ndarray
    below: np.ndarray
    rules: tuple[int, int, int]


def mrt_shelves(p: MoldableProblem, target: float) -> ThreeShelves | None:
    """Mounie, Rapine and Trystram's partition for an accepted target lambda (SIAM J. Comput.
    37(2), 2007; the rules are numbered here, not as in their paper): the knapsack of
    ``two_shelves`` puts each big job (w_i(1) > lambda / 2) in S1 on gamma_i(lambda) or in S2
    on gamma_i(lambda / 2); small jobs take one processor. While S0
    and S2 together need more than m processors, a transformation rule applies (with
    q = m - |S0| - |S1| processors idle in S1):
      rule 3 — an S2 job that runs within 3 lambda / 2 on q processors moves to
        gamma_i(3 lambda / 2) processors: into S1 if it then runs within lambda, else S0
        (the one that narrows S0 + S2 most; spec order on ties);
      rule 1 — an S1 job on k >= 2 processors that runs within 3 lambda / 4 moves to S0 on
        k - 1 (monotone work: within 2 x 3 lambda / 4);
      rule 2 — two S1 jobs on one processor each, within 3 lambda / 4, stack on one processor
        in S0.
    Rule 3 is tried first (it narrows S2), rules 1 and 2 free S1 processors for it. None when
    no rule applies and S2 still does not fit (their theorem says this cannot happen for an
    accepted lambda; the tests check it), or when lambda is rejected."""
    found = two_shelves(p, target)
    if found is None:
        return None
    small = ~found[0] & (p.first_work <= target / 2 * (1 + TIME_TOL))
    s1, k = narrower_second_shelf(p, target, *found, small)
    shelf = np.where(s1, 1, np.where(small, SMALL, 2))
    k = np.where(small, 1, k)
    below = np.full(p.n, -1, dtype=np.int64)
    wide = p.fewest_processors(1.5 * target)              # gamma_i(3 lambda / 2)
    width = [0, int(k[s1].sum()), int(k[shelf == 2].sum())]
    rules = [0, 0, 0]
    m = p.processors
    while width[0] + width[2] > m:
        q = m - width[0] - width[1]
        movable = [i for i in np.flatnonzero(shelf == 2).tolist() if wide[i] <= q]
        if movable:
            def narrowing(i: int) -> int:
                return int(k[i]) - (wide[i] if p.duration(i, int(wide[i])) > target else 0)
            i = max(movable, key=lambda i: (narrowing(i), -i))
            to = 1 if p.duration(i, int(wide[i])) <= target * (1 + TIME_TOL) else 0
            width[2] -= int(k[i])
            shelf[i], k[i] = to, wide[i]
            width[to] += int(k[i])
            rules[2] += 1
            continue
        short = [i for i in np.flatnonzero(shelf == 1).tolist()
                 if p.duration(i, int(k[i])) <= 0.75 * target * (1 + TIME_TOL)]
        shrink = [i for i in short if k[i] >= 2]
        single = [i for i in short if k[i] == 1]
        if shrink:
            i = shrink[0]
            width[1] -= int(k[i])
            shelf[i], k[i] = 0, k[i] - 1
            width[0] += int(k[i])
            rules[0] += 1
        elif len(single) >= 2:
            a, b = single[:2]
            shelf[a] = shelf[b] = 0
            below[b] = a
            width[1] -= 2
            width[0] += 1
            rules[1] += 1
        else:
            return None
    return ThreeShelves(target, shelf, k, below, tuple(rules))


def narrower_second_shelf(p: MoldableProblem, target: float, s1: np.ndarray, k: np.ndarray,
                          small: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """One of the knapsack's optima with a narrower S2: big S2 jobs move up to S1 on
    gamma_i(lambda) while the processors S1 leaves hold them, the widest S2 share per S1
    processor first (spec order on ties). A move never adds work (monotone work: w(gamma(lambda))
    <= w(gamma(lambda / 2))), so the total stays the knapsack's least and MRT's argument holds;
    the knapsack's ties (with linear speedup every allotment has the same work) only decide how
    much the rules must repair. On the offload paper's case study S1 then holds every job
    (4600) where leaving the ties in S2 needs rule 3 and gives 5520."""
    k1 = p.fewest_processors(target)
    room = p.processors - int(k[s1].sum())
    up = np.flatnonzero(~s1 & ~small & (k1 <= room))
    s1, k = s1.copy(), k.copy()
    for i in up[np.lexsort((up, -k[up] / k1[up]))].tolist():
        if k1[i] <= room:
            s1[i], k[i] = True, k1[i]
            room -= int(k1[i])
    return s1, k


def shelf_schedule(p: MoldableProblem, sh: ThreeShelves) -> tuple[np.ndarray, list]:
    """The three shelves laid out on processor ids, times from the processors' start: S0 on
    the first ids (a stacked job after the one below it), S1 from 0 on the next ids, S2 ending
    at 3 lambda / 2 on the last ids (from id m - 1 down, so that S2 shares as few processors
    with S1 as the widths allow: a job on ids S1 leaves idle can start at once after the
    left shift), then every small job (longest first) on the processor with
    the largest gap between its S0/S1 job and its S2 job — one always fits, since each job
    is at most lambda / 2 and the knapsack left m lambda of work in all (MRT). Returns the
    starts and each job's processor range [lo, hi)."""
    top = 1.5 * sh.target
    m = p.processors
    start = np.zeros(p.n)
    held: list = [None] * p.n
    free_from = np.zeros(m)                    # the gap on each processor: [free_from, free_to)
    free_to = np.full(m, top)
    at = 0
    for i in np.flatnonzero((sh.shelf == 0) & (sh.below < 0)).tolist():
        held[i] = (at, at + int(sh.k[i]))
        free_from[at:at + int(sh.k[i])] = p.duration(i, int(sh.k[i]))
        at += int(sh.k[i])
    for i in np.flatnonzero(sh.below >= 0).tolist():
        lo = held[int(sh.below[i])][0]
        held[i] = (lo, lo + 1)
        start[i] = free_from[lo]
        free_from[lo] += p.duration(i, 1)
    q = at
    for i in np.flatnonzero(sh.shelf == 1).tolist():
        held[i] = (q, q + int(sh.k[i]))
        free_from[q:q + int(sh.k[i])] = p.duration(i, int(sh.k[i]))
        q += int(sh.k[i])
    q = m
    for i in np.flatnonzero(sh.shelf == 2).tolist():
        held[i] = (q - int(sh.k[i]), q)
        start[i] = top - p.duration(i, int(sh.k[i]))
        free_to[q - int(sh.k[i]):q] = start[i]
        q -= int(sh.k[i])
    gaps = [(-(free_to[q] - free_from[q]), q) for q in range(m)]
    heapq.heapify(gaps)
    small = np.flatnonzero(sh.shelf == SMALL)
    for i in small[np.argsort(-p.first_work[small], kind="stable")].tolist():
        _, q = heapq.heappop(gaps)
        start[i], held[i] = free_from[q], (q, q + 1)
        free_from[q] += p.duration(i, 1)
        heapq.heappush(gaps, (-(free_to[q] - free_from[q]), q))
    return start, held


def left_shift(p: MoldableProblem, k: np.ndarray, start: np.ndarray, held: list,
               origin: float) -> tuple[np.ndarray, np.ndarray]:
    """(starts, ends): each job as early as its own processors allow from ``origin`` on,
    keeping every processor's order of jobs: taken by their starts, a job starts when the last
    job before it on any of its processors ends (the very float that job ended at). By
    induction no job starts later than ``origin + start``, so every bound of the shelves
    holds."""
    free = np.full(p.processors, float(origin))
    shifted, ends = np.empty(p.n), np.empty(p.n)
    for i in np.argsort(start, kind="stable").tolist():
        lo, hi = held[i]
        shifted[i] = float(free[lo:hi].max())
        ends[i] = free[lo:hi] = shifted[i] + p.duration(i, int(k[i]))
    return shifted, ends


def impl_b(p: MoldableProblem, epsilon: float = DUAL_PRECISION) -> Solution:
    """Impl-B of section V: every offload first (spec order, back to back), then Mounie,
    Rapine and Trystram's 3/2 dual approximation on the processors alone: the bisection on
    lambda to a relative ``epsilon`` (``dual_search``), the knapsack's shelves and their
    transformation rules (``mrt_shelves``), small jobs in the gaps (``shelf_schedule``), and
    every job then started as early as its processors allow (``left_shift``). Everything runs
    within [X, X + 3 lambda / 2], claimed as ``bound:mrt``; lambda <= (1 + epsilon) times the
    processors' optimum (metrics ``lambda``, and ``processor_lower_bound``, the largest
    rejected target). Should the rules ever leave S2 too wide (MRT's theorem says they
    cannot), the allotment is list-scheduled instead and no bound is claimed."""
    rejected, accepted = p.dual if epsilon == DUAL_PRECISION else dual_search(p, epsilon)
    sh = mrt_shelves(p, accepted)
    metrics = {"lambda": accepted, "processor_lower_bound": rejected, "epsilon": epsilon}
    offload_end = np.cumsum(p.offload)
    X = float(offload_end[-1]) if p.n else 0.0    # the bus's end, as the schedule has it
    if sh is None:
        _, k = two_shelves(p, accepted)
        length = p.work_on(k) / k
        listed = after_all_offloads(p, k, np.argsort(-length, kind="stable"))
        return listed.solution("offload, then MRT's allotment list-scheduled (rules failed)",
                               **metrics)
    start, held = shelf_schedule(p, sh)
    start, end = left_shift(p, sh.k, start, held, X)
    offload_start = np.concatenate([[0.0], offload_end[:-1]])     # back to back
    alloc = p.allocation(offload_start, offload_end, start, end, sh.k,
                         [[r] for r in held])
    metrics.update({"bound:mrt": X + 1.5 * accepted,
                    **{f"rule{r}": count for r, count in enumerate(sh.rules, 1)},
                    **{f"shelf{s}": int((sh.shelf == s).sum()) for s in (0, 1, 2)},
                    "small": int((sh.shelf == SMALL).sum())})
    makespan = float(end.max()) if p.n else 0.0
    return Solution(alloc, "heuristic", makespan, metrics,
                    {"name": "Impl-B: offload, then Mounie-Rapine-Trystram (3/2 + eps)"})


EXACT_TIME_LIMIT = 60.0     # seconds, when the spec sets no options.time_limit
EXACT_MAX_BINARIES = 50_000  # about n = 100 at m = 8: 3 s to build, no hope of a proof beyond
TAIL_SHARE = 0.1            # of the time limit, at most, for ``tail_search`` before the MILP
TAILS_TRIED = 8             # of each depth's best tails, completed into schedules


def ordered_schedule(p: MoldableProblem, k, order, finished) -> Platform | None:
    """The earliest schedule on allotments ``k`` in which the jobs offload and start in
    ``order`` and job i ends before job j starts wherever ``finished[i, j]`` (i before j): the
    bus back to back, and s_j = max(j's offload end, the previous start, the ends of the jobs
    j waits for). Processors go in start order, lowest free ids first. None if a job then
    finds fewer than k_j free (``finished`` leaves too many jobs running at its start)."""
    plat = Platform(p)
    previous = 0.0
    for j in map(int, order):
        waits = plat.end[np.flatnonzero(finished[:, j])]
        at = max(plat.offload(j, 0.0), previous, float(waits.max(initial=0.0)))
        plat.now = previous = at
        plat.release_until(at)
        if plat.idle < k[j]:
            return None
        plat.run(j, int(k[j]), at)
    return plat


def in_start_order(p: MoldableProblem, allocation) -> Platform | None:
    """A schedule redone with the bus in its start order (ties by offload start) and every job
    as early as that order and the same 'who ended before whom' allow: job by job no later
    than the original (the form ``exact_model`` searches)."""
    col = allocation.column
    start, end = col("start").astype(float), col("end").astype(float)
    order = np.lexsort((col("offload_start").astype(float), start))
    pos = np.empty(p.n, dtype=np.int64)
    pos[order] = np.arange(p.n)
    finished = (pos[:, None] < pos[None, :]) & (end[:, None] <= start[None, :])
    return ordered_schedule(p, col("processors").astype(np.int64), order, finished)


def earliest_finish(p: MoldableProblem, order, fixed: dict[int, int] | None = None) -> Platform:
    """A list schedule with one order for the bus and the starts: offloads back to back in
    ``order``; each job, no earlier than the previous start, takes the number of processors
    that ends it first (the fewest on ties; ``fixed[j]`` if given), at the first moment that
    many are free."""
    plat = Platform(p)
    previous = 0.0
    fixed = fixed or {}
    for j in map(int, order):
        plat.now = max(plat.offload(j, 0.0), previous)
        plat.release_until(plat.now)
        at, k = plat.now, 0
        for kk in [fixed[j]] if j in fixed else range(1, int(p.chi[j]) + 1):
            t = plat.free_at(kk)
            if k == 0 or t + p.duration(j, kk) < at + p.duration(j, k):
                at, k = t, kk
        plat.now = previous = at
        plat.release_until(at)
        plat.run(j, k, at)
    return plat


def _milp_schedule(p: MoldableProblem, model) -> Platform | None:
    """The schedule of a solved ``exact_model``: its allotments, its order (a job's rank is
    its number of predecessors) and the pairs it does not count as running at the later
    start, re-timed by ``ordered_schedule``."""
    k = np.array([max(range(1, int(p.chi[i]) + 1), key=lambda kk, i=i: model.a[i, kk].value)
                  for i in range(p.n)])
    ahead = np.zeros((p.n, p.n), dtype=bool)
    for (i, j), var in model.y.items():
        ahead[i, j] = var.value > 0.5
        ahead[j, i] = not ahead[i, j]
    counted = np.zeros((p.n, p.n), dtype=bool)
    for (i, j, _), var in model.r.items():
        counted[i, j] |= var.value > 0.5
    order = np.argsort(ahead.sum(axis=0), kind="stable")
    return ordered_schedule(p, k, order, ahead & ~counted)


def meets(upper: float, bound: float) -> bool:
    """Whether a makespan is proven optimal by a lower bound (to ``EXACT_GAP``, relative: the
    spec's times may be in any unit, so no absolute slack)."""
    return upper <= bound * (1 + EXACT_GAP)


def completed(p: MoldableProblem, tail: Tail) -> Platform:
    """A schedule that ends with ``tail``: the other jobs first, by decreasing y (the bus
    order of ``bus_lower_bound``), then the tail's jobs on its allotments
    (``earliest_finish``)."""
    first = [int(i) for i in np.argsort(-p.full_length, kind="stable") if i not in tail.jobs]
    return earliest_finish(p, first + list(tail.jobs), dict(zip(tail.jobs, tail.k)))


def tail_search(p: MoldableProblem, bound: float, best: Solution,
                deadline: float) -> tuple[float, Solution, int]:
    """``tail_bound`` at depth 2, 3, ... until the best schedule meets the bound, the depth
    reaches n (the bound is then the optimum) or ``deadline`` passes; each depth's best tails
    are completed into schedules (``completed``) that replace ``best`` when shorter. A depth is
    not started when the last one's growth (its time over the one before's) predicts it would
    not end by the deadline (each depth takes about 5 times the last on processor-bound
    instances: the time goes to the MILP instead). Returns the bound, the best schedule and
    the last depth searched to the end; each depth's bound, incumbent and gap go to the
    solver log (``highs.log_stream``)."""
    log = log_stream()
    upper, searched, took = float(best.objective), 0, []
    for depth in range(2, p.n + 1):
        began = time.perf_counter()
        if len(took) > 1 and took[-2] > 0 and began + took[-1] ** 2 / took[-2] > deadline:
            break                       # the next depth, growing as the last did, would not end
        try:
            value, tails = tail_bound(p, upper, depth, deadline)
        except OutOfTime:
            break
        took.append(time.perf_counter() - began)
        searched, bound = depth, max(bound, value)
        for tail in tails[-TAILS_TRIED:]:
            plat = completed(p, tail)
            if float(plat.end.max()) < upper:
                upper = float(plat.end.max())
                best = plat.solution("tail search")
        if log is not None:
            log.write(f"moldable exact: last {depth} jobs searched: bound {bound:.10g}, "
                      f"incumbent {upper:.10g}, gap {relative_gap(upper, bound):.3g}\n")
        if meets(upper, bound):
            break
    return bound, best, searched


def exact(p: MoldableProblem, time_limit: float | None = None) -> Solution:
    """The optimal makespan, proven by the last jobs' bound (``tail_search``) or by HiGHS on
    ``exact_model`` (meant for small instances).

    The list algorithms run first (the paper's, and ``earliest_finish`` over a few orders);
    the best schedule, redone in start order, is the incumbent. If it meets the lower bound
    (``lower_bound``) it is optimal and nothing else runs. Otherwise ``tail_search`` (at most
    ``TAIL_SHARE`` of the time) raises the bound by the bus and the processors together and
    completes its best tails into schedules; when one meets the bound no MILP is built. Else
    the best schedule is the MILP's horizon H (its big-M), the bound its floor on C, and the
    answer if the time limit hits before HiGHS finds better. The MILP's allotments, order
    and 'ended before' relation are re-timed exactly (``ordered_schedule``), so HiGHS's
    tolerances never reach the schedule. Status ``optimal`` when proven (the schedule within
    ``EXACT_GAP`` of the bound, relative), ``feasible`` when HiGHS stopped without that,
    ``time_limit`` otherwise; metric ``mip_bound`` is the proven lower bound (also reported as
    ``lower_bound``), and the solver reports the relative gap and ``tail_depth`` (the last
    depth searched to the end). ``time_limit`` (default 60 s) covers the whole method.
    Beyond ``EXACT_MAX_BINARIES`` binaries (n^2 chi / 2 roughly) the MILP does not apply:
    without a proof by then, a SpecError on ``options.method``, as for any method that does
    not apply."""
    begin = time.perf_counter()
    limit = EXACT_TIME_LIMIT if time_limit is None else float(time_limit)
    until = begin + limit
    bound = lower_bound(p)
    lists = [gpusched1_star(p), gpusched1_star(p, lookahead=True), gpusched1(p),
             gpusched1(p, lookahead=True), gpusched2(p), work_conserving(p)]
    alpha = p.work_sec / p.work_sum if p.n > 1 else 1.0
    for order in (np.argsort(-p.full_length, kind="stable"),
                  np.argsort(-p.full_work, kind="stable"), impl1_star_order(p, alpha)):
        lists.append(earliest_finish(p, order).solution("earliest finish"))
    redone = (in_start_order(p, s.allocation) for s in lists)
    best = min([plat.solution("") for plat in redone if plat is not None] + lists,
               key=lambda s: s.objective)
    listed = float(best.objective)
    report, depth = None, 0
    if meets(listed, bound):
        status, name = "optimal", "list schedule at the lower bound (no MILP)"
    else:
        bound, best, depth = tail_search(p, bound, best, begin + TAIL_SHARE * limit)
        if meets(float(best.objective), bound):
            status, name = "optimal", f"last {depth} jobs' bound met (no MILP)"
        elif not seconds_left(until):
            status, name = "time_limit", "best schedule (time limit before the MILP)"
        else:
            name = "HiGHS MILP, continuous time (exact_model)"
            report, best, bound = milp(p, best, bound, until)
            status = report.status
    upper = float(best.objective)
    if status == "optimal" and not meets(upper, bound):
        status = "feasible"     # the re-timed schedule is not proven within EXACT_GAP
    if status == "optimal":
        bound = min(bound, upper)
    metrics = {"mip_bound": bound, "lower_bound": bound,
               "makespan_over_bound": upper / bound if bound > 0 else None, "list_makespan": listed}
    solver = {"name": name, "gap": relative_gap(upper, bound), "bound": bound,
              "time_limit": limit, "tail_depth": depth}
    if report is not None:
        solver["highs"] = report.raw
    return Solution(best.allocation, status, upper, metrics, solver)


def milp(p: MoldableProblem, best: Solution, bound: float, until: float):
    """HiGHS on ``exact_model`` until ``until`` (``deadline``: the model built first), from
    the best schedule (its makespan is
    the horizon) and the bound (C's floor): the report, the best schedule (the MILP's, re-timed
    by ``_milp_schedule``, if shorter) and the bound, raised to HiGHS's. HiGHS sees the times
    divided by that makespan (its feasibility tolerances are absolute: at times of 1e-9 every
    schedule would fit within them); the schedule is re-timed in the spec's units. Beyond
    ``EXACT_MAX_BINARIES`` binaries, a SpecError on ``options.method`` (does not apply)."""
    binaries = int(p.chi.sum()) * p.n + p.n * (p.n - 1) // 2
    if binaries > EXACT_MAX_BINARIES:
        raise does_not_apply("options.method", f"exact: {p.n} jobs need a MILP with "
                             f"{binaries} binaries (at most {EXACT_MAX_BINARIES}) and neither "
                             "a list schedule nor the last jobs' search meets the lower bound; "
                             "use a list algorithm")
    upper = float(best.objective)
    unit = upper
    model = exact_model(p.scaled(1 / unit), 1 + EXACT_GAP, bound / unit)   # the best schedule fits
    # feasibility as fine as the gap proven: at HiGHS's default (1e-6) a binary may be 1e-6
    # fractional, which the big-M turns into 1e-6 of the horizon, and the schedule re-timed
    # exactly then sits that far above HiGHS's bound, never proven to EXACT_GAP
    report = solve_pyomo(model, time_limit=seconds_left(until), mip_gap=EXACT_GAP,
                         tolerance=EXACT_GAP)
    if report.status == "infeasible":
        raise SolverError("moldable exact: HiGHS finds no schedule as good as a known one "
                          "(numerical trouble)")
    if report.objective is not None:
        found = _milp_schedule(p, model)
        if found is None:
            raise SolverError("moldable exact: the MILP's schedule needs more than m "
                              "processors once re-timed (numerical trouble)")
        if float(found.end.max()) < upper:
            best = found.solution("HiGHS MILP, continuous time (exact_model)")
    if report.bound is not None and np.isfinite(report.bound):
        bound = max(bound, float(report.bound) * unit)
    return report, best, bound
