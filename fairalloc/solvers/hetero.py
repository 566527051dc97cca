"""The hetero kind's methods: Gavel's policies as LPs through HiGHS, and two baselines.

* ``max-min`` (exact LP, Gavel's ``max_min_fairness_perf``): maximise min_j s_j E_j / (w_j
  P_j), P_j under Gavel's proportional share, then (fairalloc's second stage) the total
  normalised throughput with every job kept at that level;
* ``max-min-isolated`` (exact LP): the same on the kind's normalised throughput, min_j E_j /
  (w_j E_j^iso);
* ``leximin`` (exact): water filling — repeat the max-min, freezing the jobs that cannot rise;
* ``agnostic-max-min``: the same on time, as if every GPU were the same (leximin on t_j, each
  job's time spread over the types in proportion to their GPUs), by progressive filling;
* ``max-throughput`` (exact LP): maximise sum_j E_j / E_j^iso;
* ``finish-time`` (exact to a certified tolerance): minimise max_j rho_j (Themis) by
  bisection on rho, each step an LP;
* ``agnostic-finish-time``: the same ratios as if every type were as fast (Gavel's
  ``finish_time_fairness``), their leximin on time by progressive filling;
* ``isolated`` and ``proportional`` baselines.
"""

from __future__ import annotations

from dataclasses import replace

import numpy as np

from fairalloc.contract import does_not_apply
from fairalloc.errors import SolverError
from fairalloc.levels import fill_divisible
from fairalloc.models.hetero import (
    DUAL_TOLERANCE,
    FINISH_TOLERANCE,
    GAVEL_LEVEL,
    LEVEL_SLACK,
    TIE,
    HeteroProblem,
    Program,
    agnostic_program,
    effective,
    eligible,
    gavel_reference,
    identical_jobs_averaged,
    interior_pays,
    isolated_program,
    isolated_share,
    isolated_throughput,
    largest_finish_time_ratio,
    level_program,
    max_min_lp,
    max_min_model,
    normalized,
    relative_weights,
    sum_lp,
    unfinished,
    weight_unit,
)
from fairalloc.models.leontief import Leontief
from fairalloc.result import Solution
from fairalloc.solvers.highs import solve_matrix, solve_pyomo

MAX_BISECTIONS = 200


def _solve(parts, maximize: bool = True):
    cost, rows, row_lower, row_upper, col_lower, col_upper = parts
    report = solve_matrix(cost, rows, row_lower, row_upper, col_lower, col_upper,
                          maximize=maximize, interior=interior_pays(cost))
    if report.status != "optimal":
        raise SolverError(f"hetero LP: HiGHS says {report.status}")
    return report


def smallest_level(p: HeteroProblem, x: np.ndarray) -> float:
    """Every method's objective: min_j E_j / (w_j E_j^iso)."""
    return float((normalized(p, x) / p.weights).min())


def max_min_value(p: HeteroProblem, program: Program, reference: np.ndarray
                  ) -> tuple[float, np.ndarray, np.ndarray]:
    """The max-min LP once: (z*, the program's variables, the utility rows' duals)."""
    report = _solve(max_min_lp(program, reference, {}))
    m = program.rows.shape[0]
    return report.objective, report.x[:-1], report.row_dual[m:]


def water_fill(p: HeteroProblem, program: Program, reference: np.ndarray
               ) -> tuple[np.ndarray, int]:
    """Leximin by water filling: solve the max-min, freeze every job whose utility row has a
    nonzero dual (it cannot rise above the level without another job falling below it: weak
    duality with that dual), repeat on the others with the frozen ones held at their level.
    Each round freezes at least one job. Returns the variables and the rounds."""
    frozen: dict[int, float] = {}
    rounds = 0
    m = program.rows.shape[0]
    while len(frozen) < p.n:
        rounds += 1
        report = _solve(max_min_lp(program, reference, frozen))
        level, duals = report.objective, np.abs(report.row_dual[m:])
        live = [j for j in range(p.n) if j not in frozen]
        stuck = [j for j in live if duals[j] > DUAL_TOLERANCE]
        if not stuck:       # a degenerate dual: the job at the level with the largest dual
            stuck = [max(live, key=lambda j: duals[j])]
        for j in stuck:
            frozen[j] = level
    return report.x[:-1], rounds


def above_level(p: HeteroProblem, program: Program, z: float) -> np.ndarray:
    """The second stage after the max-min level z (fairalloc's, not Gavel's: its LP stops at
    the level), on a ``level_program`` (utilities in units of w_j R_j / max w): maximise the
    total normalised throughput sum_j E_j / R_j with every job kept at E_j >= z w_j R_j (to
    ``LEVEL_SLACK``). The max-min LP alone stops at any allocation that reaches z, leaving
    idle whatever no job's minimum needs (the K80s of gavel-mix); here a job that can use it
    gets it. With every weight of the sum positive, the result is Pareto efficient: a gain for
    one job with no loss for another would raise the sum. Returns the (n, k) time
    fractions."""
    floor = np.full(p.n, z * weight_unit(p) * (1 - LEVEL_SLACK))
    return program.to_time(_solve(sum_lp(program, relative_weights(p), floor)).x, p.k)


def _max_min(p: HeteroProblem, reference: np.ndarray, formulation: str
             ) -> tuple[np.ndarray, float]:
    """max z s.t. E_j(x) >= z w_j R_j (R: ``reference``), then ``above_level``, identical jobs
    then given the same time (``identical_jobs_averaged``: the point is not the solver's
    vertex, which moved a job's throughput up to 10x between the dual simplex and the
    interior point method, or with the jobs' order): the (n, k) time fractions and z. The
    level by the sparse matrix LP or (``formulation: "pyomo"``) the same LP written out in
    Pyomo (``models.hetero.max_min_model``; tests check both reach the same optimum)."""
    program = level_program(p, reference)
    if formulation == "pyomo":
        report = solve_pyomo(max_min_model(p, reference))
        if report.status != "optimal":
            raise SolverError(f"hetero LP: HiGHS says {report.status}")
        z = report.objective / weight_unit(p)
    else:
        level, _, _ = max_min_value(p, program, np.ones(p.n))
        z = level / weight_unit(p)
    return identical_jobs_averaged(p, above_level(p, program, z)), z


def max_min(p: HeteroProblem, formulation: str = "matrix") -> Solution:
    """Gavel's heterogeneity-aware max-min fairness (``max_min_fairness_perf``): max z s.t.
    s_j E_j(x) >= z w_j P_j, P_j the job's throughput under Gavel's proportional share
    (``gavel_reference``), then the most total normalised throughput at that level. Its
    objective, as every method's, is the kind's (``smallest_level``); the level it reached
    is its metric ``gavel_level``."""
    x, z = _max_min(p, gavel_reference(p), formulation)
    return Solution(p.allocation(x), "optimal", smallest_level(p, x),
                    metrics={GAVEL_LEVEL: z},
                    solver={"name": f"HiGHS LPs (Gavel's max-min, {formulation}; then "
                            "max-sum at its level)", "level": z})


def max_min_isolated(p: HeteroProblem, formulation: str = "matrix") -> Solution:
    """Max-min fairness on the kind's normalised throughput: max z s.t. E_j(x) >= z w_j
    E_j^iso (each job's isolated share, the reference of sharing incentive), then the most
    total normalised throughput at that level: the kind's objective exactly."""
    x, z = _max_min(p, isolated_throughput(p), formulation)
    return Solution(p.allocation(x), "optimal", z,
                    solver={"name": f"HiGHS LPs (max-min on isolated shares, {formulation}; "
                            "then max-sum at its level)", "bound": z, "gap": 0.0})


def leximin(p: HeteroProblem) -> Solution:
    """Leximin of the weighted normalised throughputs E_j / (w_j E_j^iso) (water filling)."""
    program = level_program(p)
    v, rounds = water_fill(p, program, np.ones(p.n))
    x = program.to_time(v, p.k)
    return Solution(p.allocation(x), "optimal", smallest_level(p, x),
                    solver={"name": "HiGHS LPs (water filling)", "rounds": rounds})


def time_market(p: HeteroProblem, program: Program, reference: np.ndarray) -> Leontief:
    """The agnostic program as a Leontief market: job j's unit is its whole time t_j, needing
    the program's row entries (s_j W_k / W of the types j can run on) of each type k with GPUs;
    capped at t_j <= 1 and weighted w_j = reference_j x its dominant share, so that its level
    (weighted dominant share) is t_j / reference_j. Each job's utility is its own variable and
    every row is a packing row: the leximin of the levels is max-min fairness with fixed
    routes (Bertsekas and Gallager), which progressive filling reaches exactly."""
    rows = program.rows
    demand = np.zeros((p.n, p.k))
    demand[rows.col, rows.row] = rows.value
    used = p.workers > 0                  # a type without GPUs is in no job's program
    market = Leontief(p.ids, tuple(np.array(p.types)[used]), p.workers[used], demand[:, used],
                      np.ones(p.n), program.upper)
    return replace(market, weights=reference * market.dominant())


def agnostic_max_min(p: HeteroProblem) -> Solution:
    """Max-min fairness on time as if every GPU were the same (the baseline Gavel improves on):
    leximin of t_j / (w_j t_j^iso), where t_j is job j's total time fraction, spread over the
    types it can run on in proportion to their GPU counts. Progressive filling on
    ``time_market``: no LP, at most (types + 1) phases however many jobs tie at a level (water
    filling by LPs needed up to one LP per job there, where Gavel solves one). Objective: the
    smallest weighted normalised *throughput* it leads to."""
    program = agnostic_program(p)
    reference = p.weights * isolated_share(p).sum(axis=1)
    t = fill_divisible(time_market(p, program, reference))
    x = program.to_time(t, p.k)
    return Solution(p.allocation(x), "heuristic", smallest_level(p, x),
                    solver={"name": "progressive filling on time (no LP)"})


def max_throughput(p: HeteroProblem) -> Solution:
    """Maximise the total normalised throughput sum_j E_j / E_j^iso (Gavel's max-sum; the
    total is the metric total_normalized_throughput, the objective as for every method the
    smallest weighted normalised throughput)."""
    program = isolated_program(p)
    report = _solve(sum_lp(program, np.ones(p.n)))
    x = program.to_time(report.x, p.k)
    return Solution(p.allocation(x), "optimal", smallest_level(p, x),
                    solver={"name": "HiGHS LP (max-sum)", "total": report.objective})


def finish_time(p: HeteroProblem, tolerance: float = FINISH_TOLERANCE) -> Solution:
    """Finish-time fairness (Themis): minimise max_j rho_j, rho_j = (t_j + S_j / E_j) /
    (t_j + S_j / E_j^iso). For a fixed rho each job needs E_j >= S_j / (rho D_j - t_j)
    (D_j: its denominator), linear in x; so bisect on rho, each step the LP max z s.t. E_j >=
    z S_j / (rho D_j - t_j) (feasible iff z >= 1). The bracket [proven lower bound, achieved
    rho] is narrowed until its relative width is at most ``tolerance``: the result is optimal
    to that tolerance, and its bound is the largest rho proven infeasible.

    A finished job (steps_remaining 0) has no ratio (its finish time no longer depends on the
    allocation): the largest ratio is over the others; it still counts in the isolated share,
    as in every method. With every job finished there is nothing to share: does not apply."""
    if np.isnan(p.steps).any() or np.isnan(p.elapsed).any():
        missing = int(np.flatnonzero(np.isnan(p.steps) | np.isnan(p.elapsed))[0])
        raise does_not_apply(f"jobs[{missing}]", "finish-time needs steps_remaining and "
                             "time_elapsed for every job (other methods do not)")
    done = ~unfinished(p)
    if done.all():
        raise does_not_apply("jobs", "finish-time: every job has steps_remaining 0 (finished); "
                             "no finish time is left to share")
    program = isolated_program(p)       # E_j in units of E_j^iso: need_j too
    alone = p.steps / isolated_throughput(p)      # S_j / E_j^iso: seconds at the isolated share
    denominator = p.elapsed + alone
    best_x = isolated_share(p)
    hi = largest_finish_time_ratio(p, effective(p, best_x))          # the isolated share: 1
    lo = float(np.max(p.elapsed[~done] / denominator[~done]))       # no throughput beats it
    steps = 0
    while hi - lo > tolerance * hi and steps < MAX_BISECTIONS:
        steps += 1
        rho = (lo + hi) / 2
        slack = rho * denominator - p.elapsed
        if np.any((slack <= 0) & ~done):      # a job cannot finish by rho at any speed
            lo = rho
            continue
        need = np.where(done, 0.0, alone / np.where(done, 1.0, slack))
        report = _solve(max_min_lp(program, need, {}))
        if report.objective >= 1.0:           # every E_j >= need_j: every rho_j <= rho
            x = program.to_time(report.x[:-1], p.k)
            achieved = largest_finish_time_ratio(p, effective(p, x))
            if achieved < hi:
                best_x, hi = x, achieved
            else:                             # within the LP's tolerance of rho
                hi = max(lo, min(hi, rho * (1 + TIE)))
        else:
            lo = rho
    gap = (hi - lo) / hi if hi > 0 else 0.0
    return Solution(p.allocation(best_x), "optimal" if gap <= tolerance else "feasible",
                    smallest_level(p, best_x),
                    metrics={"finish_time_bound": lo, "finish_time_gap": gap},
                    solver={"name": "bisection on rho, HiGHS LPs", "steps": steps,
                            "rho": hi, "rho_bound": lo})


def alike_throughput(p: HeteroProblem, reference_type: str | None = None) -> np.ndarray:
    """(n, k): each job's throughput as if every type it can run on were as fast as one: its
    ``reference_type`` (Gavel's ``FinishTimeFairnessPolicy`` sets every type to the job's
    V100 throughput, ``scheduler/policies/finish_time_fairness.py`` lines 28-36), its fastest
    type when it has no reference type or cannot run there (where Gavel's throughput 0 would
    leave the job no finish time)."""
    ok = eligible(p)
    speed = np.where(ok, p.throughput, 0.0).max(axis=1)
    if reference_type is not None:
        if reference_type not in p.types:
            raise does_not_apply("options.reference_type", f"no worker type "
                                 f"{reference_type!r} (workers: {', '.join(p.types)})")
        k = p.types.index(reference_type)
        speed = np.where(ok[:, k], p.throughput[:, k], speed)
    return np.where(ok, speed[:, None], 0.0)


def _times_at(excess: float, slope: np.ndarray, inv_iso: np.ndarray) -> np.ndarray:
    """t_j at which job j's finish-time ratio is 1 + ``excess``: (e_j + a_j / t_j) / D_j with
    D_j = e_j + a_j / t_j^iso gives 1 / t_j = excess D_j / a_j + 1 / t_j^iso (``slope`` =
    D_j / a_j, ``inv_iso`` = 1 / t_j^iso). Counted from 1, not as L D_j - e_j, which lost
    every digit when e_j >> a_j (a job 1e9 s in with 1e-6 s to go)."""
    with np.errstate(divide="ignore", over="ignore"):
        return 1.0 / (excess * slope + inv_iso)


def _row_stop(need: np.ndarray, left: float, start: float, jobs: tuple) -> float:
    """The smallest excess >= ``start`` at which the jobs' GPUs of one type, sum_j need_j
    t_j, fit in ``left`` (t_j falls as the excess rises), from above, to ``TIE`` of the
    excess or of the finest job's unit 1 / slope_j."""
    lo, width = start, max(abs(start), 1e-300)
    while (need * _times_at(lo + width, *jobs)).sum() > left and width < 1e300:
        lo, width = lo + width, 2 * width
    hi = lo + width
    unit = 1.0 / float(jobs[0].max())
    while hi - lo > TIE * max(abs(hi), unit):
        mid = (lo + hi) / 2
        if mid in (lo, hi):
            break
        lo, hi = (lo, mid) if (need * _times_at(mid, *jobs)).sum() <= left else (mid, hi)
    return hi


def _ratio_filled(slope: np.ndarray, inv_iso: np.ndarray, use: np.ndarray,
                  workers: np.ndarray, live: np.ndarray) -> np.ndarray:
    """Progressive filling of total times t_j on fixed routes toward the leximin of the
    finish-time ratios (``_times_at``), each job using ``use[j, k]`` GPUs of type k per unit
    of t_j: every ``live`` job at a common ratio takes its t_j there, and the ratio falls
    until a job reaches its whole time (t_j = 1) or a type's GPUs are all used; those jobs
    freeze, and the others go on. Each t_j falls as the ratio rises, so every row is a
    packing row and the first stop is the smallest largest ratio (Bertsekas and Gallager's
    max-min with fixed routes, on ratios). Each phase freezes at least one job. Returns t
    (0 for the jobs not live)."""
    t = np.zeros(slope.size)
    live = live.copy()
    while live.any():
        left = np.maximum(workers - (use[~live] * t[~live, None]).sum(axis=0), 0.0)
        jobs, u = (slope[live], inv_iso[live]), use[live]
        at_whole = (1.0 - jobs[1]) / jobs[0]       # each job's excess at its whole time
        whole = float(at_whole.max())              # below it some job would need t_j > 1
        stops = {int(k): _row_stop(u[:, k], left[k], whole, jobs)
                 for k in np.flatnonzero((u > 0).any(axis=0))
                 if (u[:, k] * _times_at(whole, *jobs)).sum() > left[k]}
        level = max([whole, *stops.values()])
        took = np.minimum(_times_at(level, *jobs), 1.0)
        done = took >= 1.0 - TIE
        if level > whole:       # a type's GPUs are all used: its jobs freeze
            for k, stop in stops.items():
                if stop >= level:
                    done |= u[:, k] > 0
        else:                   # the job whose whole time sets the level
            done[int(at_whole.argmax())] = True
            took[done] = 1.0
        index = np.flatnonzero(live)
        t[index] = took
        live[index[done]] = False
    return t


def agnostic_finish_time(p: HeteroProblem, reference_type: str | None = None) -> Solution:
    """Finish-time fairness agnostic of heterogeneity (Gavel's ``finish_time_fairness``,
    ``FinishTimeFairnessPolicy``): ``finish-time``'s ratios rho_j = (t_j + S_j / E_j) /
    (t_j + S_j / E_j^iso) with every type as fast as the job's ``reference_type``
    (``alike_throughput``), so that only a job's total time x_j counts; that time is spread
    over the types it can run on in proportion to their GPUs, as in ``agnostic-max-min``
    (Gavel's LP leaves the split to its solver: any split gives the same ratios). The point:
    the leximin of those ratios (``_ratio_filled``, no LP), whose largest is the smallest
    Gavel's minimax reaches, and beyond it no GPU left idle that a job below its whole time
    could use (Gavel's interior point stops anywhere on that face). Weights are
    not used (Gavel's are not either). Objective: the smallest weighted normalised
    throughput it leads to."""
    if np.isnan(p.steps).any() or np.isnan(p.elapsed).any():
        missing = int(np.flatnonzero(np.isnan(p.steps) | np.isnan(p.elapsed))[0])
        raise does_not_apply(f"jobs[{missing}]", "agnostic-finish-time needs steps_remaining "
                             "and time_elapsed for every job (other methods do not)")
    live = unfinished(p)
    if not live.any():
        raise does_not_apply("jobs", "agnostic-finish-time: every job has steps_remaining 0 "
                             "(finished); no finish time is left to share")
    speed = alike_throughput(p, reference_type).max(axis=1)
    # a job that can run nowhere (a strategy-proofness probe's misreport of 0) gets nothing
    # and fills nothing: its ratio would be inf / inf
    live &= speed > 0
    spread = np.where(eligible(p), agnostic_program(p).spread, 0.0)
    iso = isolated_share(p).sum(axis=1)
    with np.errstate(divide="ignore", invalid="ignore"):
        alone = np.where(live, p.steps / speed, 0.0)      # s at the whole time, any type
        denominator = np.where(live, p.elapsed + alone / iso, 1.0)
        slope = np.where(live, denominator / alone, 1.0)
        inv_iso = np.where(live, 1.0 / iso, 1.0)
    t = _ratio_filled(slope, inv_iso, p.scale[:, None] * spread, p.workers, live)
    x = t[:, None] * spread
    with np.errstate(divide="ignore"):      # a job given no time: ratio inf
        ratios = (p.elapsed[live] + alone[live] / t[live]) / denominator[live]
    rho = float(ratios.max()) if ratios.size else float("nan")
    return Solution(p.allocation(x), "heuristic", smallest_level(p, x),
                    metrics={"agnostic_finish_time_ratio": rho},
                    solver={"name": "progressive filling on finish-time ratios as if every "
                            "type were as fast (no LP)", "rho": rho})


def isolated(p: HeteroProblem) -> Solution:
    """The isolated share: 1/n of every type a job can run on (the reference)."""
    x = isolated_share(p)
    return Solution(p.allocation(x), "heuristic", smallest_level(p, x),
                    solver={"name": "isolated share"})


def proportional(p: HeteroProblem) -> Solution:
    """Weight-proportional shares of every type: x_jk = (w_j / sum w) W_k / s_j on the types j
    can run on, each row scaled down to sum to at most 1."""
    share = p.weights / p.weights.sum()
    x = np.where(eligible(p), share[:, None] * p.workers[None, :] / p.scale[:, None], 0.0)
    x = x / np.maximum(x.sum(axis=1, keepdims=True), 1.0)
    return Solution(p.allocation(x), "heuristic", smallest_level(p, x),
                    solver={"name": "weight-proportional shares"})

