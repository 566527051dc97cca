"""DRF methods: vectorised progressive filling, whole-task filling (Mesos-style) and the exact LP.

All three return the allocation in the result format; ``progressive-filling`` and ``lp`` give
the same allocation for divisible tasks (a property test checks it on random instances).
"""

from __future__ import annotations

from operator import le, sub

import numpy as np

from fairalloc.contract import does_not_apply
from fairalloc.errors import SolverError
from fairalloc.levels import TiedQueue, fill_divisible
from fairalloc.models.drf import DrfProblem, leximin_model
from fairalloc.models.leontief import BINDING_DUAL, DUAL, TIE, Leontief
from fairalloc.models.program import SparseRows
from fairalloc.result import Solution
from fairalloc.solvers.highs import (
    INF,
    deadline,
    load_matrix,
    run_loaded,
    seconds_left,
    solve_pyomo,
)


def fill_whole_tasks(market: Leontief, stop: bool = False) -> np.ndarray:
    """Whole tasks, one at a time, to the user with the lowest weighted dominant share
    (Mesos-style DRF; ties to the user listed first) until no user's next task fits.

    A user whose next task does not fit is dropped: free capacity only shrinks. With ``stop``
    the filling ends at the first task that does not fit. Shares a relative ``TIE`` apart
    are one share (``levels.TiedQueue``).
    """
    step = (market.dominant() / market.weights).tolist()
    demand = market.demand.tolist()
    caps = market.caps.tolist()
    slack = (market.capacity * (1 + TIE)).tolist()
    tasks = [0] * market.n
    queue = TiedQueue(((i, 0.0) for i in range(market.n)), TIE)
    push = queue.push
    for i in queue:
        if tasks[i] + 1 > caps[i]:
            continue
        need = demand[i]
        # map with operator functions: C loops, a third of a generator's time per task
        if all(map(le, need, slack)):
            slack = list(map(sub, slack, need))
            tasks[i] += 1
            push(tasks[i] * step[i], i)
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


class PyomoRounds:
    """The leximin rounds on the readable Pyomo model (``models.drf.leximin_model``)."""

    def __init__(self, problem: DrfProblem) -> None:
        self.model = leximin_model(problem)
        self.n = problem.market.n

    def solve(self, time_limit: float | None):
        """(report, level t, |dual| of each user's level row, largest |dual| of a capacity)."""
        report = solve_pyomo(self.model, time_limit=time_limit, duals=True)
        if report.status != "optimal":
            return report, None, None, 0.0
        level = np.array([abs(report.duals.get(self.model.level[i], 0.0))
                          for i in range(self.n)])
        capacity = max((abs(report.duals.get(c, 0.0)) for c in self.model.capacity.values()),
                       default=0.0)
        return report, float(self.model.t.value), level, capacity

    def freeze(self, users: np.ndarray, tasks: np.ndarray) -> None:
        for i in users:
            self.model.x[i].fix(float(tasks[i]))
            self.model.level[i].deactivate()


class MatrixRounds:
    """The round LP as sparse rows in one HiGHS object, in the users' excess over the level:
    x_i = r_i (t + y_i) with y_i >= 0 and r_i = w_i / s_i, so each level row
    ``x_i s_i / w_i >= t`` becomes the bound ``y_i >= 0`` and only the capacity rows are left:
    ``sum_i (a_id r_i / C_d)(t + y_i) <= 1 - held_d / C_d`` over growing users (``held_d``: what
    the frozen users hold). The level row's dual is y_i's reduced cost; x_i >= 0 needs no row
    (t = 0 is feasible, so the optimal t is not negative). max_tasks is no row here
    (``leximin_lp`` passes the caps the level reaches). Freezing a user deletes its y_i (HiGHS's
    per-solve work grows with the columns: 0.19 ms at 1e3, 1.5 ms at 1e4 for a re-solve that
    changes nothing), moves its usage to the right-hand side and its share of t's column out;
    the next solve starts from the last basis, which has only one row per resource."""

    def __init__(self, problem: DrfProblem) -> None:
        m = problem.market
        used = np.flatnonzero((m.demand > 0).any(axis=0))
        rate = m.weights / m.dominant()
        self.share = m.demand[:, used] / m.capacity[used]       # of each capacity, per task
        self.per_level = self.share * rate[:, None]
        users, resources = np.nonzero(self.per_level)
        n, r = m.n, used.size
        rows = SparseRows(
            (r, n + 1),
            np.concatenate([resources, np.arange(r)]),
            np.concatenate([users, np.full(r, n)]),
            np.concatenate([self.per_level[users, resources], self.per_level.sum(0)]))
        cost = np.zeros(n + 1)
        cost[n] = 1.0
        self.h = load_matrix(cost, rows, np.full(r, -INF), np.ones(r),
                             np.concatenate([np.zeros(n), [-INF]]), np.full(n + 1, INF))
        self.h.setOptionValue("presolve", "off")   # cold start: 0.7 ms, not 1.6, at 1e3 users
        self.n, self.r = n, r
        self.growing = np.ones(n, dtype=bool)
        self.cols = np.arange(n)          # the user of each y column (t is the last column)

    def solve(self, time_limit: float | None):
        """(report, level t, |reduced cost| of each y_i, largest |dual| of a capacity row)."""
        report = run_loaded(self.h, time_limit=time_limit)
        if report.status != "optimal":
            return report, None, None, 0.0
        level = np.zeros(self.n)
        level[self.cols] = np.abs(report.col_dual[:-1])
        return (report, float(report.x[-1]), level,
                float(np.abs(report.row_dual).max(initial=0.0)))

    def freeze(self, users: np.ndarray, tasks: np.ndarray) -> None:
        rows = np.arange(self.r, dtype=np.int32)
        self.growing[users] = False
        gone = np.flatnonzero(~self.growing[self.cols]).astype(np.int32)
        self.h.deleteCols(gone.size, gone)
        self.cols = self.cols[self.growing[self.cols]]
        for d, coef in enumerate(self.per_level[self.growing].sum(0)):
            self.h.changeCoeff(d, self.cols.size, coef)
        held = tasks[~self.growing] @ self.share[~self.growing]
        self.h.changeRowsBounds(self.r, rows, np.full(self.r, -INF), 1.0 - held)


def leximin_lp(problem: DrfProblem, time_limit: float | None = None,
               formulation: str = "matrix") -> Solution:
    """Exact DRF with HiGHS: a sequence of LPs that raise the common weighted dominant share.

    Each round maximises the level t that every growing user reaches (``leximin_model``). A user
    whose level constraint has a positive dual is tight in *every* optimal solution
    (complementary slackness), so it cannot grow: it freezes at ``t * w_i / s_i``. The duals of
    one round sum to 1, so each round freezes someone; a saturated resource's positive dual
    makes every user that needs it blocked at once (its level dual is then positive too). In
    ``stop`` mode the rounds end as soon as a capacity constraint binds.

    max_tasks: a growing user whose cap level ``max_tasks_i / r_i`` is at most the LP's t
    freezes at its cap, and the LP is solved again before anyone else freezes. In the literal
    model (``pyomo``) the cap bounds x_i, so t never passes a cap level and such a user is the
    bottleneck of its round. The matrix model leaves the caps out: its t is then a lower bound
    on the round's level (users held at min(t r_i, max_tasks_i) use no more than at t r_i), so
    every cap it passes is passed by the round too, all of them freeze at once; when it passes
    none its optimum and duals are those of the literal round LP (the caps are slack there).
    ``formulation``: ``matrix`` (one HiGHS object, each solve warm-started from the last
    basis) or ``pyomo`` (the readable model; tests check both give the same allocation).
    """
    if not problem.divisible:
        raise does_not_apply("divisible", "method 'lp' needs divisible: true "
                                   "(for whole tasks use progressive-filling)")
    until = deadline(time_limit)      # the limit covers building the rounds' model too
    m = problem.market
    rate = m.weights / m.dominant()
    cap_level = m.caps / rate
    lp = MatrixRounds(problem) if formulation == "matrix" else PyomoRounds(problem)
    x = np.zeros(m.n)
    frozen = np.zeros(m.n, dtype=bool)
    solves, cap_solves, status, proven = 0, 0, "optimal", False
    while not frozen.all():
        report, t, level_dual, cap_dual = lp.solve(seconds_left(until))
        solves += 1
        if report.status != "optimal":
            if report.status == "time_limit":
                status = "time_limit"      # unfrozen users keep the last proven level
                break
            raise SolverError(f"DRF LP {solves}: HiGHS says {report.status}")
        proven = True
        x[~frozen] = np.minimum(t * rate[~frozen], m.caps[~frozen])
        passed = ~frozen & (cap_level <= t)
        if passed.any():
            cap_solves += 1
            blocked = passed
        else:
            level_dual = np.where(frozen, 0.0, level_dual)   # a fixed y_i has a reduced cost too
            blocked = level_dual > DUAL * max(level_dual.max(), 1e-300)
            if problem.saturation == "stop" and cap_dual > BINDING_DUAL:
                blocked = ~frozen
        if not blocked.any():
            raise SolverError(f"DRF LP {solves}: no bottleneck found in the duals")
        lp.freeze(np.flatnonzero(blocked), x)
        frozen |= blocked
    return Solution(
        problem.allocation(x),
        status,
        float(m.weighted_levels(x).min()) if proven else None,
        solver={"name": f"HiGHS leximin rounds ({formulation})", "rounds": solves - cap_solves,
                "cap_rounds": cap_solves},
    )
