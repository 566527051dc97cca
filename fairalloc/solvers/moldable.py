"""Moldable-job methods: the paper's list algorithms on one event-driven simulation core.

The core keeps the bus as a single server (offloads back to back, in the order they are
released) and the processors as a pool of ids (lowest free ids first), so every schedule names
the processors each job holds — for the Gantt chart and the feasibility check.
"""

from __future__ import annotations

import bisect
import heapq
import math

import numpy as np

from fairalloc.contract import does_not_apply
from fairalloc.models.moldable import (
    MoldableProblem,
    lower_bound,
    theorem1_bound,
    theorem2_bound,
    theorem5_bound,
    two_shelves,
)
from fairalloc.result import Solution

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
        while self.pool.count < count - 1e-9 and self.running:
            self.now = max(self.now, self.running[0][0])
            self.release_until(self.now)

    def free_at(self, count: float) -> float:
        """The earliest time from now on at which at least ``count`` processors are free."""
        free = self.pool.count
        if free >= count - 1e-9:
            return self.now
        for end, _, k in sorted(self.running):
            free += k
            if free >= count - 1e-9:
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


def offload_then_shelves(p: MoldableProblem) -> Solution:
    """Impl-B's family with Mounie, Rapine and Trystram's dual approximation: every offload
    first, then the smallest target length lambda their two-shelf test accepts (bisection,
    ``models.moldable.dual_search``) and its allotment — S1 jobs on gamma(lambda) processors,
    S2 jobs on gamma(lambda / 2). When the S2 jobs fit in m processors together, the two shelves
    themselves (S1 from X, S2 once S1 is done) are a schedule within X + 3 lambda / 2, claimed
    as ``bound:two_shelves``; otherwise MRT repairs the shelves with rules we do not implement,
    and no bound is claimed. Either way the allotment is also list-scheduled (S1 first, then
    by decreasing length) and the shorter schedule is kept. Metric ``lambda`` is the accepted
    target, ``processor_lower_bound`` the largest rejected one."""
    rejected, accepted = p.dual
    s1, k = two_shelves(p, accepted)
    length = p.work_on(k) / k
    listed = after_all_offloads(p, k, np.lexsort((-length, ~s1)))
    metrics = {"lambda": accepted, "processor_lower_bound": rejected}
    best = listed
    if k[~s1].sum() <= p.processors:
        metrics["bound:two_shelves"] = p.total_offload + 1.5 * accepted
        shelves = after_all_offloads(p, k, np.flatnonzero(s1))
        second = float(shelves.end.max(initial=shelves.bus_free))
        shelves.now = second
        shelves.release_until(second)
        for i in np.flatnonzero(~s1).tolist():
            shelves.run(i, int(k[i]), second)
        if shelves.end.max() < listed.end.max():
            best = shelves
    return best.solution("offload, then MRT's two-shelf allotment (dual approximation)",
                         **metrics)


EXACT_TIME_LIMIT = 60.0     # seconds, when the spec sets no options.time_limit
EXACT_GAP = 1e-9            # relative MIP gap (HiGHS's absolute gap, 1e-6, applies as well)
EXACT_MAX_BINARIES = 50_000  # about n = 100 at m = 8: 3 s to build, no hope of a proof beyond


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


def earliest_finish(p: MoldableProblem, order) -> Platform:
    """A list schedule with one order for the bus and the starts: offloads back to back in
    ``order``; each job, no earlier than the previous start, takes the number of processors
    that ends it first (the fewest on ties), at the first moment that many are free."""
    plat = Platform(p)
    previous = 0.0
    for j in map(int, order):
        plat.now = max(plat.offload(j, 0.0), previous)
        plat.release_until(plat.now)
        at, k = plat.now, 0
        for kk in range(1, int(p.chi[j]) + 1):
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


def exact(p: MoldableProblem, time_limit: float | None = None) -> Solution:
    """The optimal makespan, proven by HiGHS on ``exact_model`` (meant for small instances).

    The list algorithms run first (the paper's, and ``earliest_finish`` over a few orders);
    the best schedule, redone in start order, is the MILP's horizon H (its big-M) and the
    answer if the time limit hits before HiGHS finds better. If it meets the lower bound
    (``lower_bound``) it is optimal and no MILP is built. The MILP's
    allotments, order and 'ended before' relation are re-timed exactly (``ordered_schedule``),
    so HiGHS's tolerances never reach the schedule. Status ``optimal`` when proven,
    ``time_limit`` otherwise; metric ``mip_bound`` is the proven lower bound (also reported as
    ``lower_bound``), and the solver reports the relative gap. ``time_limit`` (default 60 s)
    covers the whole method. Beyond ``EXACT_MAX_BINARIES`` binaries (n^2 chi / 2 roughly) the
    method does not apply unless a list schedule meets the bound (a SpecError on
    ``options.method``, as for any method that does not apply)."""
    import time

    from fairalloc.errors import SolverError
    from fairalloc.models.moldable import exact_model
    from fairalloc.solvers.highs import relative_gap, solve_pyomo

    begin = time.perf_counter()
    limit = EXACT_TIME_LIMIT if time_limit is None else float(time_limit)
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
    upper = listed = float(best.objective)
    left = limit - (time.perf_counter() - begin)
    report = None
    if upper <= bound * (1 + EXACT_GAP) + EXACT_GAP:
        status, name = "optimal", "list schedule at the lower bound (no MILP)"
    elif left <= 0:
        status, name = "time_limit", "list schedule (time limit before the MILP)"
    else:
        binaries = int(p.chi.sum()) * p.n + p.n * (p.n - 1) // 2
        if binaries > EXACT_MAX_BINARIES:
            raise does_not_apply("options.method", f"exact: {p.n} jobs need a MILP with "
                                       f"{binaries} binaries (at most {EXACT_MAX_BINARIES}) and "
                                       "no list schedule meets the lower bound; use a list "
                                       "algorithm")
        name = "HiGHS MILP, continuous time (exact_model)"
        model = exact_model(p, upper * (1 + 1e-9) + 1e-9, bound)   # the best list schedule fits
        left = limit - (time.perf_counter() - begin)
        report = solve_pyomo(model, time_limit=max(left, 1e-3), mip_gap=EXACT_GAP)
        if report.status == "infeasible":
            raise SolverError("moldable exact: HiGHS finds no schedule as good as a known one "
                              "(numerical trouble)")
        if report.objective is not None:
            found = _milp_schedule(p, model)
            if found is None:
                raise SolverError("moldable exact: the MILP's schedule needs more than m "
                                  "processors once re-timed (numerical trouble)")
            if float(found.end.max()) < upper:
                best, upper = found.solution(name), float(found.end.max())
        if report.bound is not None and np.isfinite(report.bound):
            bound = max(bound, float(report.bound))
        status = report.status
    if status == "optimal":
        bound = min(bound, upper)
    metrics = {"mip_bound": bound, "lower_bound": bound,
               "ratio": upper / bound if bound > 0 else None, "list_makespan": listed}
    solver = {"name": name, "gap": relative_gap(upper, bound), "bound": bound,
              "time_limit": limit}
    if report is not None:
        solver["highs"] = report.raw
    return Solution(best.allocation, status, upper, metrics, solver)
