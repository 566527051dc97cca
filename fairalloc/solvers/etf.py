"""ETF methods: Algorithm 1 as printed, its closed form, the exact leximin in closed form and as
a MILP, two baselines.

Every method returns whole slices. ``greedy`` and ``waterfill`` return the same allocation on
every instance, ties included (property-tested): both hand the slices left after the guarantees
to the apps in increasing order of (weighted energy before the slice, position in the spec).
"""

from __future__ import annotations

import numpy as np

from fairalloc.contract import does_not_apply
from fairalloc.errors import SolverError
from fairalloc.levels import TiedQueue, fewest_reaching, highest_level
from fairalloc.models.etf import (
    LEVEL_SLACK,
    MILP_TOLERANCE,
    ROUNDING_SLACK,
    TIE,
    EtfProblem,
    energy_fair_time,
    energy_key,
    guarantee,
    water_level,
)
from fairalloc.result import Solution
from fairalloc.solvers.highs import INF, deadline, seconds_left, solve_matrix


def _solution(p: EtfProblem, t: np.ndarray, status: str, name: str, **extra) -> Solution:
    weighted_energy = energy_key(np.asarray(t, dtype=float), p.power, p.weights)
    return Solution(p.allocation(t), status, float(weighted_energy.min()),
                    solver={"name": name, **extra})


def greedy_slices(p: EtfProblem) -> np.ndarray:
    """Algorithm 1: the guarantees (line 1), then one slice at a time to the app with the least
    weighted energy among those below their demand (lines 4-8); ties to the app listed first.
    A heap makes each slice O(log n); the loop runs once per leftover slice, so it grows with T.
    Energies a relative ``TIE`` apart are one energy (``levels.TiedQueue``).
    """
    t = guarantee(p).tolist()
    power, weights, demand = p.power.tolist(), p.weights.tolist(), p.demand.tolist()
    left = p.quantum - sum(t)
    queue = TiedQueue(((i, energy_key(t[i], power[i], weights[i])) for i in range(p.n)
                       if t[i] < demand[i]), TIE)
    push = queue.push
    for i in queue if left > 0 else ():
        t[i] += 1
        left -= 1
        if t[i] < demand[i]:
            push(energy_key(t[i], power[i], weights[i]), i)
        if left == 0:
            break
    return np.array(t, dtype=np.int64)


def whole_total(t: np.ndarray) -> int:
    """The exact sum of whole slice counts held as floats (each at most 2^53)."""
    return int(t.astype(np.int64).sum())


def level_slices(p: EtfProblem) -> tuple[np.ndarray, float]:
    """The whole-slice water level z* and need(z*).

    With need_i(z) = min(h_i, max(g_i, fewest t with e_i(t) >= z)) (h_i = min(d_i, T), g the
    guarantees of eq. 7, e_i(t) = t P_i / w_i as ``energy_key`` computes it), the level is
    z* = max {z : sum_i need_i(z) <= T}, found by bisection on the float level (``levels``;
    at most 64 vectorised counts, whatever T).
    """
    g = guarantee(p).astype(float)
    cap = np.minimum(p.demand, float(p.quantum))          # no app can use more than T

    def need(level: float) -> np.ndarray:
        return np.minimum(cap, np.maximum(g, fewest_reaching(level, p.power, p.weights, cap)))

    def fits(level: float) -> bool:
        t = need(level)
        # whole slices added as int64: in floats 2^53 + 1 slices round to 2^53 and fit
        # T = 2^53; the float total first keeps the int64 one far from overflow
        return bool(t.sum() <= 2.0 * p.quantum and whole_total(t) <= p.quantum)

    level = highest_level(fits, float(energy_key(g, p.power, p.weights).min()),
                          float(energy_key(cap, p.power, p.weights).max()))
    return need(level), level


def tied_slices(p: EtfProblem) -> tuple[np.ndarray, np.ndarray, int]:
    """The slices below the water level, the apps at it and the slices left for them, with
    energies a relative ``TIE`` apart taken for one energy (the kind's tie rule).

    Starting from need(z*) of ``level_slices``: an app whose slice before its last already
    reached z* within ``TIE`` took the last slice only to clear an ulp, so it steps back to
    the level (its slice is left over); the apps at the level are those below their cap
    within ``TIE`` of z*, in spec order. Returns those slices, the apps at the level and the
    s = T - sum of the slices left. By the maximality of z*, s is less than the number of
    apps at the level unless every app is at its cap.
    """
    t, level = level_slices(p)
    back = (t > guarantee(p)) & (energy_key(t - 1, p.power, p.weights) >= level * (1 - TIE))
    t = t - back
    cap = np.minimum(p.demand, float(p.quantum))
    at_level = np.flatnonzero((t < cap) & (energy_key(t, p.power, p.weights)
                                           <= level * (1 + TIE)))
    return t, at_level, p.quantum - whole_total(t)


def waterfill_slices(p: EtfProblem) -> np.ndarray:
    """The greedy's allocation in closed form, at a cost that does not grow with T.

    The greedy gives app i its (t+1)-th slice when its key e_i(t) is the smallest of all apps'
    current keys (within ``TIE``), and each app's keys increase with t: so it hands out the R
    smallest (key, index) pairs among t = g_i .. h_i - 1 (R = min(T - sum g, sum (h - g))).
    Those are every slice with a key below the level z* (at most R of them, as
    sum need(z*) <= T) and, as the s slices left are fewer than the apps at z* (each has one
    key at z*), the first s of those in spec order (the greedy's tie-break) and no key
    above z* (``tied_slices``).
    """
    t, at_level, left = tied_slices(p)
    t[at_level[:left]] += 1
    return t.astype(np.int64)


def leximin_slices(p: EtfProblem) -> np.ndarray:
    """The exact leximin of weighted energy e_i = t_i P_i / w_i over whole slices with
    g_i <= t_i <= h_i = min(d_i, T) and sum t_i <= T (g: the guarantees of eq. 7), in closed
    form: every app gets need_i(z*) at the level z* of ``level_slices``, and the s slices left
    go one each to the s apps sitting exactly at z* below their cap (set A) whose next slice
    lifts them highest (largest e_i(t_i + 1); ties in spec order). Energies a relative
    ``TIE`` apart are one energy: the spec's numbers are decimals (1/3 is written
    0.3333333333333333, so 3 slices of it are exactly a hair below 1) and float keys round t P / w
    twice (9 x P / 3 and 3 x P land an ulp apart). Read literally, either hair decides which
    app stays at the level; the MILP, at its own tolerance, and the user take them for ties.

    Why this is the leximin (sorted energies lexicographically largest). Compare any
    feasible y through N(v) = #{i : e_i <= v}: the sorted vector is lexicographically larger
    where N is smaller at the first v where the two differ. (1) Below z* the allocation has
    only apps at their caps with e_i(h_i) < z*; y has them at or below their caps, so
    N_y(v) >= N(v) there, with equality for every v < z* only if y gives those apps their
    caps and every other app at least z*. (2) Then y gives each other app at least
    need_i(z*), and an app of A one more to lift it above z* (an app at its cap at z* cannot
    rise): within T it lifts at most s of them, so N_y(z*) >= N(z*), with equality only if
    y lifts exactly s apps of A by one slice each and gives everyone else exactly need_i(z*)
    (the slices add up to T). (3) Such a y differs only in which s apps of A it lifts, to
    e_i(need_i + 1); the s largest of those values dominate any other s of them rank by
    rank. So no y is leximin-better. Algorithm 1's greedy (``waterfill_slices``) reaches the
    same z* but lifts the apps at z* in spec order: the same max-min (Theorem 3), not always
    the leximin.

    >>> from fairalloc.errors import Violations
    >>> p = EtfProblem.from_spec({"quantum": 1, "phi": 0, "apps": [
    ...     {"id": "A", "power": 1}, {"id": "B", "power": 100}]}, Violations())
    >>> leximin_slices(p).tolist(), waterfill_slices(p).tolist()   # energies (0, 100), (1, 0)
    ([0, 1], [1, 0])
    """
    t, at_level, left = tied_slices(p)
    lifted_to = energy_key(t + 1, p.power, p.weights)[at_level]
    t[at_level[np.argsort(-lifted_to, kind="stable")[:left]]] += 1
    return t.astype(np.int64)


GREEDY_MAX_SLICES = 10**7     # slices the heap walks one by one (about 10 s)
MILP_MAX_QUANTUM = 10**9      # beyond, HiGHS's integrality tolerance blurs whole slices


def greedy(p: EtfProblem) -> Solution:
    """Algorithm 1 as printed (a heap; cost grows with T: at most ``GREEDY_MAX_SLICES``
    slices past the guarantees, else waterfill computes the same allocation)."""
    left = p.quantum - int(guarantee(p).sum())
    if left > GREEDY_MAX_SLICES:
        raise does_not_apply("quantum", f"greedy hands out slices one at a time: at most "
                                   f"{GREEDY_MAX_SLICES:.0e} past the guarantees (here {left}); "
                                   "waterfill gives the same allocation at any T")
    return _solution(p, greedy_slices(p), "heuristic", "Algorithm 1 (heap)")


def waterfill(p: EtfProblem) -> Solution:
    """Algorithm 1's allocation in closed form (default; cost independent of T)."""
    return _solution(p, waterfill_slices(p), "heuristic", "water-filling (closed form)")


def leximin(p: EtfProblem) -> Solution:
    """The exact leximin of weighted energy in closed form (``leximin_slices``; any T)."""
    return _solution(p, leximin_slices(p), "optimal", "leximin (level + lift the largest)")


def largest_remainder(p: EtfProblem, shares: np.ndarray) -> np.ndarray:
    """Whole slices from continuous ones: round down, then one more slice each to the largest
    remainders (ties: spec order) while slices are left and the app can use one."""
    whole = np.floor(shares + ROUNDING_SLACK)
    left = int(min(p.quantum, np.minimum(p.demand, p.quantum).sum()) - whole.sum())
    remainder = np.where(whole < p.demand, shares - whole, -np.inf)
    order = np.argsort(-remainder, kind="stable")[:max(left, 0)]
    whole[order[np.isfinite(remainder[order])]] += 1
    return whole.astype(np.int64)


def time_fair(p: EtfProblem) -> Solution:
    """Baseline: time-fair shares (eq. 5), capped by demands, time nobody can use given to those
    who can (water-filling on time / weight), whole slices by largest remainder."""
    shares = water_level(p.weights.copy(), p.demand, p.quantum)
    return _solution(p, largest_remainder(p, shares), "heuristic", "time-fair (eq. 5)")


def energy_fair(p: EtfProblem) -> Solution:
    """Baseline: energy-fair time, proportional to w_i / P_i (eq. 3; not eq. 2), capped by
    demands and work-conserving, whole slices by largest remainder.

    It ignores phi: it is ETF at phi = 0 (section 3.3). Where its slices leave an app below
    the spec's guarantee (eq. 7), a constraint of the problem the other methods solve
    (Theorem 3), its allocation is not feasible for the spec: status ``infeasible``, no
    objective (its smallest weighted energy, in the metrics, is that of another problem and
    is never set against the optimum), and a message naming the app."""
    t = largest_remainder(p, energy_fair_time(p))
    name = "energy-fair (t proportional to w/P)"
    g = guarantee(p)
    short = np.flatnonzero(t < g)
    if not short.size:
        return _solution(p, t, "heuristic", name)
    i = int(short[0])
    return Solution(p.allocation(t), "infeasible", None, solver={
        "name": name, "message": f"energy-fair ignores phi's time guarantee: {p.ids[i]} gets "
        f"{t[i]} of its {g[i]} guaranteed slices (phi = {p.phi:g}; {short.size} apps short)"})


def ordered_start(c: np.ndarray, t: np.ndarray, k: int) -> np.ndarray:
    """The k-th ordered-outcomes MILP's columns at slices t: t, then for each j <= k the
    j-th smallest weighted energy r_j and d_ij = max(0, r_j - e_i), so theta_j is the sum of
    the j smallest (a feasible point: the last round's optimum keeps theta_1..theta_{k-1})."""
    e = c * t
    ranked = np.sort(e)
    parts = [t]
    for j in range(1, k + 1):
        parts += [[ranked[j - 1]], np.maximum(0.0, ranked[j - 1] - e)]
    return np.concatenate(parts)


def slice_gap(objective: float | None, bound: float | None) -> float:
    """A round's gap on its objective (weighted energies scaled so the largest per slice is
    1): |bound - objective| / max(|objective|, 1), relative to the objective or, below it, to
    one slice's largest weighted energy. A relative gap alone calls a round at level 0 open
    on HiGHS's rounding (3.6e-18 over a floor of 1e-10), and the rounds would stop there.

    >>> slice_gap(0.0, 3.6e-18), slice_gap(4.0, 5.0), slice_gap(None, 1.0)
    (3.6e-18, 0.25, 0.0)
    """
    if objective is None or bound is None or not np.isfinite(bound):
        return 0.0
    return abs(bound - objective) / max(abs(objective), 1.0)


def leximin_milp(p: EtfProblem, time_limit: float | None = None) -> Solution:
    """Exact leximin of weighted energy under the guarantees, demands and the quantum.

    Ogryczak's ordered outcomes: the k-th MILP maximises theta_k, the sum of the k smallest
    weighted energies, written as k r_k - sum_i d_ik with d_ik >= r_k - e_i, d_ik >= 0, while
    theta_1..theta_{k-1} keep their optima. n MILPs; the first one is the max-min (Theorem 3).
    Meant for small instances (O(n^2) variables): the HiGHS cross-check of ``leximin_slices``.
    ``time_limit`` covers all n MILPs: each gets what the rounds before it left.
    """
    until = deadline(time_limit)
    if p.quantum > MILP_MAX_QUANTUM:
        raise does_not_apply("quantum", f"milp takes at most {MILP_MAX_QUANTUM:.0e} "
                                   "slices: beyond, HiGHS's integrality tolerance cannot tell "
                                   "whole slices apart (leximin computes the same leximin at "
                                   "any T)")
    n, T = p.n, p.quantum
    unit = float((p.power / p.weights).max())
    c = p.power / p.weights / unit                    # weighted energy per slice, scaled to 1
    g = guarantee(p)
    hi = np.minimum(p.demand, T)
    thetas: list[float] = []
    t = waterfill_slices(p).astype(float)   # round 1's first incumbent; later, the last optimum
    status = "optimal"
    gap = 0.0
    for k in range(1, n + 1):
        # columns: t (n, integer), then for each j <= k: r_j, d_1j..d_nj
        cols = n + k * (n + 1)
        rows, lo_r, hi_r = [], [], []
        total = np.zeros(cols)
        total[:n] = 1
        rows.append(total), lo_r.append(-INF), hi_r.append(T)
        for j in range(1, k + 1):
            base = n + (j - 1) * (n + 1)
            for i in range(n):                         # d_ij - r_j + c_i t_i >= 0
                row = np.zeros(cols)
                row[base + 1 + i], row[base], row[i] = 1.0, -1.0, c[i]
                rows.append(row), lo_r.append(0.0), hi_r.append(INF)
            if j < k:                                  # theta_j >= its optimum
                row = np.zeros(cols)
                row[base], row[base + 1: base + 1 + n] = j, -1.0
                rows.append(row)
                lo_r.append(thetas[j - 1] - LEVEL_SLACK * max(1, abs(thetas[j - 1])))
                hi_r.append(INF)
        cost = np.zeros(cols)
        base = n + (k - 1) * (n + 1)
        cost[base], cost[base + 1: base + 1 + n] = k, -1.0
        col_lo = np.concatenate([g, np.tile(np.concatenate([[-INF], np.zeros(n)]), k)])
        col_hi = np.concatenate([hi, np.tile(np.full(n + 1, INF), k)])
        integer = np.concatenate([np.ones(n, bool), np.zeros(k * (n + 1), bool)])
        report = solve_matrix(cost, np.array(rows), np.array(lo_r), np.array(hi_r), col_lo,
                              col_hi, integer=integer, time_limit=seconds_left(until),
                              mip_gap=0.0,
                              tolerance=MILP_TOLERANCE, start=ordered_start(c, t, k))
        if report.status == "infeasible":
            raise SolverError("ETF leximin MILP infeasible (guarantees exceed the quantum?)")
        if report.x is None:
            status = report.status
            break
        # whole slices, and theta_k recomputed from them: HiGHS's integrality tolerance must
        # not carry a theta no whole-slice allocation reaches into the next round (+ 0.0: no -0)
        t = np.round(report.x[:n]) + 0.0
        thetas.append(float(np.sort(c * t)[:k].sum()))
        round_gap = slice_gap(report.objective, report.bound)
        gap = max(gap, round_gap)
        if report.status != "optimal" and not (report.status == "feasible"
                                               and round_gap <= LEVEL_SLACK):
            status = report.status
            break
    sol = _solution(p, t, status, "HiGHS MILP (ordered outcomes)", gap=gap, rounds=len(thetas))
    sol.metrics["leximin"] = [theta * unit for theta in thetas]
    return sol
