"""accelOS methods: section 3's split plus a greedy, the exact ILP, and two baselines.

The objective reported by every method is the smallest weighted dominant share
``min_i n_i max_r(d_ir / C_r) / s_i`` (the ILP's first objective), so ``fairalloc compare``'s
ratio to ``ilp`` reads as "how close to the max-min".

The paper's greedy ("incrementally increase the number of work-groups iteratively across the
kernel executions until resource saturation") does not fix an order. ``accelos`` (default) adds
each group to the kernel with the smallest weighted dominant share (ties: the kernel listed
first), raising the smallest share first (usually to the exact max-min, but not always: the
greedy only adds to the split); ``options.greedy =
"round-robin"`` walks the kernels in spec order instead, one group each per pass. Both stop
only when no kernel can take one more group (at N_i, or its next group does not fit), so both
are saturated.
"""

from __future__ import annotations

import heapq

import numpy as np

from fairalloc.errors import SolverError, SpecError, Violation
from fairalloc.models.accelos import (
    RESOURCES,
    AccelosProblem,
    dominant_per_group,
    equal_split,
    fcfs_counts,
    fewest_reaching,
    first_reaching,
    groups_that_fit,
    keep_level,
    max_min_level,
    most_groups,
    share_key,
    slowdown_metrics,
    standard_opencl,
    threads_program,
    used,
    weighted_dominant_share,
)
from fairalloc.result import Solution
from fairalloc.solvers.highs import deadline, seconds_left, solve_program

GREEDY_ORDERS = ("dominant-share", "round-robin")
BISECTIONS = 40       # on the level of the greedy's bulk first steps


def _solution(p: AccelosProblem, n: np.ndarray, status: str, name: str, **extra) -> Solution:
    objective = float(weighted_dominant_share(p, n).min())
    return Solution(p.allocation(n), status, objective, solver={"name": name, **extra})


def groups_below(p: AccelosProblem, level: float, n: np.ndarray) -> np.ndarray:
    """For each kernel, how many of its next groups t = n_i .. N_i - 1 have a weighted dominant
    share before them, share_key(t), below ``level``."""
    t = fewest_reaching(p, level)
    return np.clip(t - n, 0, p.groups - n)


def bulk_prefix(p: AccelosProblem, n: np.ndarray) -> np.ndarray:
    """The greedy's first steps at once: among the kernels whose next group fits, every group
    whose share before it is below a level lambda, for the largest lambda (bisection) at which
    all of them fit together. They are a prefix of the greedy's order (share, then spec
    order) and each fits when its turn comes, so the greedy hands them out exactly so."""
    free = p.capacity - used(p, n)
    active = (n < p.groups) & (most_groups(p.demand, free) >= 1)
    if not active.any():
        return n

    def fits_below(level: float) -> bool:
        extra = np.where(active, groups_below(p, level, n), 0)
        return bool(np.all(extra @ p.demand <= free))

    dom = dominant_per_group(p)
    lo = float(share_key(n, dom, p.share)[active].min())
    hi = float(share_key(p.groups, dom, p.share)[active].max())
    if fits_below(np.nextafter(hi, np.inf)):
        lo = float(np.nextafter(hi, np.inf))
    else:
        for _ in range(BISECTIONS):
            mid = (lo + hi) / 2
            if fits_below(mid):
                lo = mid
            else:
                hi = mid
    return n + np.where(active, groups_below(p, lo, n), 0).astype(np.int64)


def fill_by_dominant_share(p: AccelosProblem, start: np.ndarray) -> np.ndarray:
    """The greedy: one group at a time to the kernel with the smallest weighted dominant share
    (ties: spec order) among those that can take one more, until none can.

    Exactly that allocation, in batches: first ``bulk_prefix`` (everything below a level, while
    nothing is short), then a heap: the kernel popped takes every group it would get in a row —
    until its share passes the next kernel's (``first_reaching``), its next group does not
    fit, or it reaches N_i. A kernel whose next group does not fit never fits again (what is
    free only shrinks), so it leaves the heap for good.
    """
    start = bulk_prefix(p, start)
    n = start.astype(np.int64).tolist()
    dom, share = dominant_per_group(p).tolist(), p.share.tolist()
    demand, groups = p.demand.tolist(), p.groups.tolist()
    free = (p.capacity - used(p, start)).tolist()
    heap = [(share_key(n[i], dom[i], share[i]), i) for i in range(p.kernel_count)
            if n[i] < groups[i] and groups_that_fit(demand[i], free) >= 1]
    heapq.heapify(heap)
    while heap:
        _, i = heapq.heappop(heap)
        can = int(min(groups[i] - n[i], groups_that_fit(demand[i], free)))
        if can < 1:
            continue
        take = can
        if heap:
            level, j = heap[0]
            take = min(can, first_reaching(level, dom[i], share[i], n[i] + 1, i < j) - n[i])
        n[i] += take
        free = [f - take * d for f, d in zip(free, demand[i])]
        if take < can:
            heapq.heappush(heap, (share_key(n[i], dom[i], share[i]), i))
    return np.array(n, dtype=np.int64)


def fill_round_robin(p: AccelosProblem, start: np.ndarray) -> np.ndarray:
    """The greedy as passes over the kernels in spec order, one group each while it fits.

    Whole passes that every remaining kernel completes are done at once (as many as the free
    resources and the smallest N_i - n_i allow); then one pass is walked kernel by kernel,
    and a kernel whose group does not fit (or that reached N_i) leaves for good. Every walked
    pass drops a kernel, so the cost is O(K^2) at worst (0.4-0.7 s at 1e4 kernels).
    """
    n = start.astype(np.int64).copy()
    free = p.capacity - used(p, n)
    active = (n < p.groups) & (most_groups(p.demand, free) >= 1)
    while active.any():
        rounds = min(int((p.groups - n)[active].min()),
                     int(most_groups(p.demand[active].sum(axis=0), free)))
        n[active] += rounds
        free = free - rounds * p.demand[active].sum(axis=0)
        for i in np.flatnonzero(active):
            if n[i] < p.groups[i] and most_groups(p.demand[i], free) >= 1:
                n[i] += 1
                free = free - p.demand[i]
            if n[i] >= p.groups[i] or most_groups(p.demand[i], free) < 1:
                active[i] = False
    return n


def accelos(p: AccelosProblem, greedy: str = "dominant-share") -> Solution:
    """Section 3: n_i = min(x_i, y_i, z_i) (eq. 7-8 in the accelOS paper, weighted by share),
    then the greedy until no kernel can take one more group (``greedy``: "dominant-share" or
    "round-robin")."""
    if greedy not in GREEDY_ORDERS:
        raise SpecError([Violation("options.greedy", f"must be one of "
                                   f"{', '.join(GREEDY_ORDERS)} (not {greedy!r})")])
    start = equal_split(p)
    fill = fill_by_dominant_share if greedy == "dominant-share" else fill_round_robin
    n = fill(p, start)
    return _solution(p, n, "heuristic", f"accelOS split + greedy ({greedy})",
                     groups_from_split=int(start.sum()), groups_from_greedy=int((n - start).sum()))


def ilp(p: AccelosProblem, time_limit: float | None = None) -> Solution:
    """The exact optimum, lexicographically: round 1 finds the largest smallest weighted
    dominant share t* over whole-group allocations (``models.accelos.max_min_level``: an exact
    bisection on the level, tested against enumeration and against the max-min ILP
    ``max_min_program``, which HiGHS took 0.06-12 s to prove at 100-1,000 kernels where the
    bisection takes milliseconds); round 2 keeps every kernel at or above t* (``keep_level``:
    whole-group lower bounds, exact) and maximises the threads in use (a HiGHS ILP).
    ``time_limit`` covers both rounds: the ILP gets what round 1 left."""
    until = deadline(time_limit)
    level, _ = max_min_level(p)
    program = threads_program(p, keep_level(p, level))
    second = solve_program(program, time_limit=seconds_left(until), mip_gap=0.0)
    if second.x is None:
        raise SolverError(f"accelos threads ILP: HiGHS says {second.status} with no "
                          f"allocation")
    n = np.round(second.x).astype(np.int64)
    return _solution(p, n, second.status, "level bisection, then HiGHS ILP (threads)",
                     gap=second.gap or 0.0, rounds=2)


def fcfs(p: AccelosProblem) -> Solution:
    """Standard OpenCL: in spec order each kernel takes every group that still fits (figure
    3a); kernels left with none wait for the device (serialised, figure 1a). These are the
    counts at launch: the slowdown metrics are those of the hardware's dispatch, in which a
    kernel grows as earlier ones drain (``standard_opencl``), not of these counts held
    fixed."""
    sol = _solution(p, fcfs_counts(p), "heuristic", "standard OpenCL (FCFS)")
    baseline = standard_opencl(p)
    sol.metrics = slowdown_metrics(baseline, baseline)
    return sol


def equal_threads(p: AccelosProblem) -> Solution:
    """The paper's thread-only rule x_i = T / (K w_i) (weighted, capped at N_i, at least 1),
    no greedy: for comparison; it ignores local memory and registers, so it can break them, and
    then its status is ``infeasible``."""
    n = equal_split(p, (0,))
    over = [name for name, total, cap in zip(RESOURCES, used(p, n), p.capacity) if total > cap]
    if over:
        return _solution(p, n, "infeasible", "equal threads (x_i = T / (K w_i))",
                         message=f"the thread-only rule exceeds the device's {', '.join(over)}")
    return _solution(p, n, "heuristic", "equal threads (x_i = T / (K w_i))")
