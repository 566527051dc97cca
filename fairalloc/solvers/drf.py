"""DRF methods: vectorised progressive filling, whole-task filling (Mesos-style) and the exact LP.

All three return the allocation in the result format; ``progressive-filling`` and ``lp`` give
the same allocation for divisible tasks (a property test checks it on random instances).
"""

from __future__ import annotations

import heapq
import time

import numpy as np

from fairalloc.contract import does_not_apply
from fairalloc.errors import SolverError
from fairalloc.models.drf import DrfProblem, leximin_model
from fairalloc.models.leontief import Leontief
from fairalloc.result import Solution
from fairalloc.solvers.highs import solve_pyomo


def fill_divisible(market: Leontief, stop: bool = False) -> np.ndarray:
    """Progressive filling of divisible tasks; returns tasks per user.

    Every growing user sits at the common level t (tasks ``t * w_i / s_i``). Within one phase the
    usage of resource d is ``base_d + sum_i c_id * min(t, tau_i)``, piecewise linear in t with
    breaks at the users' cap levels ``tau_i``; cumulative sums over users sorted by ``tau`` give the
    first level where a resource saturates in O(n log n + nD). Its users then freeze (``stop``:
    everybody freezes) and the next phase begins, so there are at most D + 1 phases.

    >>> from fairalloc.models.leontief import Leontief
    >>> m = Leontief(("A", "B"), ("cpu", "mem"), np.array([9.0, 18.0]),
    ...              np.array([[1.0, 4.0], [3.0, 1.0]]), np.ones(2), np.full(2, np.inf))
    >>> fill_divisible(m).round(9).tolist()       # Ghodsi et al.'s example: 3 and 2 tasks
    [3.0, 2.0]
    """
    n, _ = market.demand.shape
    rate = market.weights / market.dominant()        # tasks per unit of level
    tau = market.caps / rate                         # level at which a user reaches its cap
    per_level = market.demand * rate[:, None]        # usage per unit of level, (n, D)
    capacity = market.capacity
    x = np.zeros(n)
    active = np.ones(n, dtype=bool)
    level = 0.0
    while active.any():
        base = market.usage(np.where(active, 0.0, x))
        order = np.flatnonzero(active)
        order = order[np.argsort(tau[order], kind="stable")]
        tau_s, c = tau[order], per_level[order]
        k = int(np.isfinite(tau_s).sum())
        capped_use = np.vstack([np.zeros_like(capacity), np.cumsum(c[:k] * tau_s[:k, None], 0)])
        growing = c.sum(0) - np.vstack([np.zeros_like(capacity), np.cumsum(c[:k], 0)])
        at_breaks = base + capped_use[:k] + growing[:k] * tau_s[:k, None]
        # only resources still growing can saturate next: a saturated one may sit a rounding
        # error above its capacity and must not end the phase at its first break
        over = ((at_breaks >= capacity) & (growing[:k] > 0)).any(axis=1)
        j = int(np.argmax(over)) if over.any() else k
        with np.errstate(divide="ignore", invalid="ignore"):
            t_d = np.where(growing[j] > 0, (capacity - base - capped_use[j]) / growing[j], np.inf)
        t_sat = max(float(t_d.min()), level)
        if not np.isfinite(t_sat):                   # nothing saturates: all reach their caps
            x[order] = market.caps[order]
            break
        capped = order[tau_s <= t_sat]
        rest = order[tau_s > t_sat]
        x[capped] = market.caps[capped]
        if stop:
            x[rest] = t_sat * rate[rest]
            break
        hit = t_d <= t_sat * (1 + 1e-12)
        frozen = rest[(market.demand[rest][:, hit] > 0).any(axis=1)]
        x[frozen] = t_sat * rate[frozen]
        active[capped] = False
        active[frozen] = False
        level = t_sat
    return x


def fill_whole_tasks(market: Leontief, stop: bool = False) -> np.ndarray:
    """Whole tasks, one at a time, to the user with the lowest weighted dominant share
    (Mesos-style DRF; ties to the user listed first) until no user's next task fits.

    A user whose next task does not fit is dropped: free capacity only shrinks. With ``stop``
    the filling ends at the first task that does not fit.
    """
    step = (market.dominant() / market.weights).tolist()
    demand = market.demand.tolist()
    caps = market.caps.tolist()
    slack = (market.capacity * (1 + 1e-12)).tolist()
    tasks = [0] * market.n
    heap = [(0.0, i) for i in range(market.n)]
    heapq.heapify(heap)
    while heap:
        _, i = heapq.heappop(heap)
        if tasks[i] + 1 > caps[i]:
            continue
        need = demand[i]
        if all(a <= s for a, s in zip(need, slack)):
            slack = [s - a for a, s in zip(need, slack)]
            tasks[i] += 1
            heapq.heappush(heap, (tasks[i] * step[i], i))
        elif stop:
            break
    return np.array(tasks, dtype=float)


def progressive_filling(problem: DrfProblem) -> Solution:
    """DRF by progressive filling (default): exact for divisible tasks, a greedy for whole ones."""
    stop = problem.saturation == "stop"
    m = problem.market
    if problem.divisible:
        x, status, name = fill_divisible(m, stop), "optimal", "progressive filling (numpy)"
    else:
        x, status, name = fill_whole_tasks(m, stop), "heuristic", "whole-task filling (heap)"
    return Solution(
        problem.allocation(x), status, float(m.weighted_levels(x).min()), solver={"name": name}
    )


def leximin_lp(problem: DrfProblem, time_limit: float | None = None) -> Solution:
    """Exact DRF with HiGHS: a sequence of LPs that raise the common weighted dominant share.

    Each round maximises the level t that every growing user reaches (``leximin_model``). A user
    whose level constraint has a positive dual is tight in *every* optimal solution
    (complementary slackness), so it cannot grow: it freezes at ``t * w_i / s_i``. The duals of
    one round sum to 1, so each round freezes someone. In ``stop`` mode the rounds end as soon as
    a capacity constraint binds (the first saturated resource); until then only caps bind.
    """
    if not problem.divisible:
        raise does_not_apply("divisible", "method 'lp' needs divisible: true "
                                   "(for whole tasks use progressive-filling)")
    m = problem.market
    rate = m.weights / m.dominant()
    model = leximin_model(problem)
    x = np.zeros(m.n)
    frozen = np.zeros(m.n, dtype=bool)
    deadline = None if time_limit is None else time.perf_counter() + time_limit
    rounds, objective, status = 0, None, "optimal"
    while not frozen.all():
        left = None if deadline is None else deadline - time.perf_counter()
        report = solve_pyomo(model, time_limit=left, duals=True)
        rounds += 1
        if report.status != "optimal":
            if report.status == "time_limit":
                status = "time_limit"      # unfrozen users keep the last proven level
                break
            raise SolverError(f"DRF round {rounds}: HiGHS says {report.status}")
        t = float(model.t.value)
        objective = t if objective is None else objective
        x[~frozen] = np.minimum(t * rate[~frozen], m.caps[~frozen])
        level_dual = np.array([abs(report.duals.get(model.level[i], 0.0)) for i in range(m.n)])
        cap_dual = max((abs(report.duals.get(con, 0.0)) for con in model.capacity.values()),
                       default=0.0)
        blocked = ~frozen & (level_dual > 1e-9 * max(level_dual.max(), 1e-300))
        if problem.saturation == "stop" and cap_dual > 1e-12:
            blocked = ~frozen
        if not blocked.any():
            raise SolverError(f"DRF round {rounds}: no bottleneck found in the duals")
        for i in np.flatnonzero(blocked):
            model.x[i].fix(float(x[i]))
            model.level[i].deactivate()
        frozen |= blocked
    return Solution(
        problem.allocation(x),
        status,
        objective,
        solver={"name": "HiGHS via Pyomo (leximin rounds)", "rounds": rounds},
    )
