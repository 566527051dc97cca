"""EMRF methods: the knob-based LP policy (default) and the paper's two baselines.

``lp`` solves the efficiency LP (15)-(17) over *ratio classes*: users with the same split move
together by (17), so one variable per class (its total F') carries the whole LP, whatever the
number of users. The literal per-user Pyomo model (``models/emrf.efficiency_model``) is used for
small inputs (``formulation: "auto"`` up to 100 users, or ``"literal"``); tests check that both
reach the same optimum. The checks' re-solves (strategy-proofness probes) take the class LP at
every size (the kind's ``probe_options``).

The LP usually has many optima (its objective only counts GFLOPS). fairalloc picks the fairest:
over the optimal face (total at the optimum, to HiGHS's tolerance) it lexicographically
maximises the smallest F_i / S_i, class by class. Each round maximises the common ratio t of the
classes still free; a class whose ratio row has a positive dual is tight in every optimum
(complementary slackness) and freezes. The choice is deterministic: it does not depend on the
vertex the solver happens to return.
"""

from __future__ import annotations

import numpy as np

from fairalloc.errors import SolverError
from fairalloc.models.emrf import (
    EmrfProblem,
    drf_ceiling,
    efficiency_model,
    fair_share,
    proportional_share,
    residual_capacity,
)
from fairalloc.models.leontief import DUAL, Leontief
from fairalloc.result import Solution
from fairalloc.solvers.highs import INF, deadline, seconds_left, solve_pyomo, solve_wide

LITERAL_UP_TO = 100


def fairest_optimum(
    split: np.ndarray, shares: np.ndarray, residual: np.ndarray, optimum: float,
    until: float | None = None,
) -> np.ndarray:
    """Class totals y_c on the LP's optimal face that lexicographically maximise y_c / S_c.

    ``split`` is (k, D) per class, ``shares`` S_c (sum of S_i in the class). Each round writes
    the free classes as y_c = t S_c + z_c (z_c >= 0) and maximises t subject to the devices (16)
    and the optimal face (sum y >= optimum), frozen classes moved to the right-hand sides: D + 1
    rows whatever k is. A z_c with a non-zero reduced cost is 0 in every optimum (complementary
    slackness), so its class cannot rise above t: it freezes at t S_c. t's own reduced cost is
    zero, so each round freezes at least one class; classes off the optimal face freeze at 0 in
    the first round, leaving few rounds. ``until``: the method's ``deadline``.
    """
    k, D = split.shape
    y = np.zeros(k)
    free = np.ones(k, dtype=bool)
    while free.any():
        idx = np.flatnonzero(free)
        held = y[~free] @ split[~free]                      # devices used by frozen classes
        rows = np.empty((D + 1, len(idx) + 1))
        rows[:D, :-1] = split[idx].T
        rows[:D, -1] = shares[idx] @ split[idx]
        rows[D, :-1] = 1.0
        rows[D, -1] = shares[idx].sum()
        lower = np.append(np.full(D, -INF), optimum - y[~free].sum())
        upper = np.append(np.maximum(residual - held, 0.0), INF)
        cost = np.zeros(len(idx) + 1)
        cost[-1] = 1.0
        report = solve_wide(cost, rows, lower, upper, np.full(len(idx) + 1, INF),
                            keep=np.array([len(idx)]), time_limit=seconds_left(until))
        if report.status != "optimal":
            raise SolverError(f"EMRF fairest-optimum round: HiGHS says {report.status}")
        t = max(report.x[-1], 0.0)          # t >= 0 is its bound: -1e-14 is HiGHS's noise
        reduced = np.abs(report.col_dual[:-1])
        blocked = idx[reduced > DUAL * max(reduced.max(initial=0.0), 1e-300)]
        if blocked.size == 0:
            raise SolverError("EMRF fairest-optimum round: no bottleneck in the reduced costs")
        y[blocked] = t * shares[blocked]
        free[blocked] = False
    return y


def efficiency_allocation(
    m: Leontief, residual: np.ndarray, formulation: str = "auto",
    until: float | None = None,
) -> tuple[np.ndarray, float, str]:
    """F'_i: the efficiency LP (15)-(17) on the residual capacity, fairest optimum chosen, by
    ``until`` (the method's ``deadline``).

    Returns (F', optimum of (15), formulation used). The LPs are solved in units of the
    largest capacity: HiGHS's tolerances are absolute (1e-7), so at capacities of 1e9 its
    rounds disagreed about the optimum and at 1e-6 its noise was the size of the answer.
    """
    classes = m.classes()
    S = fair_share(m)
    unit = float(m.capacity.max())
    room = residual / unit
    split = m.demand[classes.first]
    shares = np.bincount(classes.label, weights=S, minlength=classes.count) / unit
    literal = formulation == "literal" or (formulation == "auto" and m.n <= LITERAL_UP_TO)
    if literal:
        model = efficiency_model(m, room)
        report = solve_pyomo(model, time_limit=seconds_left(until))
        used = "literal (Pyomo, one variable per user)"
    else:
        report = solve_wide(np.ones(classes.count), split.T, np.full(len(room), -INF),
                            room, np.full(classes.count, INF), time_limit=seconds_left(until))
        used = "ratio classes (highspy, one variable per class)"
    if report.status != "optimal":
        raise SolverError(f"EMRF efficiency LP: HiGHS says {report.status}")
    y = fairest_optimum(split, shares, room, report.objective, until)
    extra = S * (y / shares)[classes.label]
    return extra, float(report.objective) * unit, used


def knob_policy(problem: EmrfProblem, formulation: str = "auto",
                time_limit: float | None = None) -> Solution:
    """EMRF: F_i = eta F_i^max + F'_i (eq. 10) with F' from the efficiency LP (15)-(17);
    ``time_limit`` covers the whole method (every LP of it)."""
    until = deadline(time_limit)
    m = problem.market
    knob = problem.effective_knob()
    metrics = {"knob": knob}
    if knob > 1:
        metrics["knob"] = None
        total = drf_ceiling(m)
        return Solution(
            problem.allocation(total), "infeasible", None, metrics,
            {"name": "closed form (Theorem 1)",
             "message": f"no knob in [0, 1] bounds the unfairness by {problem.max_unfairness}; "
                        "shown: DRF (knob 1), the fairest EMRF allocation"},
        )
    residual = residual_capacity(m, knob)
    extra, optimum, used = efficiency_allocation(m, residual, formulation, until)
    total = knob * drf_ceiling(m) + extra
    metrics["efficiency_lp_optimum"] = optimum
    for d, name in enumerate(m.resources):
        metrics[f"residual.{name}"] = residual[d]
    return Solution(problem.allocation(total), "optimal", float(total.sum()), metrics,
                    {"name": "HiGHS", "formulation": used})


def wfq(problem: EmrfProblem) -> Solution:
    """Baseline: weighted proportional sharing of total GFLOPS (WFQ, Fig. 2(a))."""
    total = proportional_share(problem.market)
    return Solution(problem.allocation(total), "heuristic", float(total.sum()),
                    solver={"name": "closed form"})


def drf(problem: EmrfProblem) -> Solution:
    """Baseline: DRF, i.e. EMRF with knob 1 and no efficiency part (eq. 8)."""
    total = drf_ceiling(problem.market)
    return Solution(problem.allocation(total), "heuristic", float(total.sum()), {"knob": 1.0},
                    {"name": "closed form (eq. 8)"})
