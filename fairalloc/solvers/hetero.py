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
* ``finish-time`` (exact to a certified tolerance): minimise max_j rho_j (Themis) by LPs
  on rho, each narrowing a proven bracket from both ends (dual bounds, bisection);
* ``agnostic-finish-time``: the same ratios as if every type were as fast (Gavel's
  ``finish_time_fairness``), their leximin on time by progressive filling;
* ``max-min-packed`` (exact LP, Gavel's ``max_min_fairness_packed``): ``max-min`` over
  allocations in which two jobs may share a GPU at their co-located throughputs (the spec's
  ``colocated``), over classes of jobs and pairs of classes, then either point;
* ``isolated`` and ``proportional`` baselines.
"""

from __future__ import annotations

from dataclasses import dataclass, replace

import numpy as np

from fairalloc.contract import does_not_apply
from fairalloc.errors import SolverError
from fairalloc.levels import fill_divisible
from fairalloc.models.hetero import (
    CENTRE_GAP,
    DUAL_TOLERANCE,
    FINISH_TOLERANCE,
    GAVEL_LEVEL,
    LEVEL_SLACK,
    TIE,
    HeteroProblem,
    Merged,
    MergedPacked,
    Program,
    agnostic_program,
    effective,
    eligible,
    gavel_reference,
    interior_pays,
    isolated_program,
    isolated_share,
    isolated_throughput,
    largest_finish_time_ratio,
    level_program,
    max_min_lp,
    max_min_model,
    merged_jobs,
    merged_packed,
    normalized,
    pair_throughput,
    relative_weights,
    sum_lp,
    time_isolated,
    unfinished,
    weight_unit,
    with_job_rows,
)
from fairalloc.models.leontief import Leontief
from fairalloc.models.program import SparseRows
from fairalloc.result import Solution
from fairalloc.solvers.centre import RESIDUAL, central_point
from fairalloc.solvers.highs import load_matrix, run_loaded, solve_matrix, solve_pyomo

MOST_LPS = 200           # finish-time's LPs at most (each narrows its bracket; bisection halves it)


def _solve(parts, maximize: bool = True):
    cost, rows, row_lower, row_upper, col_lower, col_upper = parts
    report = solve_matrix(cost, rows, row_lower, row_upper, col_lower, col_upper,
                          maximize=maximize, interior=interior_pays(cost))
    if report.status != "optimal":
        raise SolverError(f"hetero LP: HiGHS says {report.status}")
    return report


def _loaded(parts):
    """A max-min LP (``max_min_lp``'s parts) loaded into HiGHS as the LPs solved once an
    allocation are best run: from ``INTERIOR_FROM`` columns by the interior point method,
    below it without presolve by the primal simplex (figure 8's replay, CPU per allocation:
    finish-time's first LP 14 against 20 ms, the merged level LP 1.0 against 1.45 ms, the
    same optima)."""
    interior = interior_pays(parts[0])
    highs = load_matrix(*parts, interior=interior)
    if not interior:
        highs.setOptionValue("presolve", "off")
        highs.setOptionValue("simplex_strategy", 4)      # the primal simplex
    return highs


def _optimal(highs):
    """Run a loaded LP: its report, SolverError unless optimal."""
    report = run_loaded(highs)
    if report.status != "optimal":
        raise SolverError(f"hetero LP: HiGHS says {report.status}")
    return report


def smallest_level(p: HeteroProblem, x: np.ndarray, shared: np.ndarray | None = None
                   ) -> float:
    """Every method's objective: min_j E_j / (w_j E_j^iso) (E_j with the ``shared`` time's
    co-located throughputs)."""
    if shared is not None:
        return float(((normalized(p, x) + pair_throughput(p, shared) / isolated_throughput(p))
                      / p.weights).min())
    return float((normalized(p, x) / p.weights).min())


def _merged_level(merged: Merged, reference: np.ndarray):
    """The max-min LP over ``merged``'s classes: HiGHS's report (variables: the classes', then
    the level)."""
    return _optimal(_loaded(max_min_lp(merged.program, reference[merged.first], {})))


def max_min_value(p: HeteroProblem, program: Program, reference: np.ndarray,
                  merged: Merged | None = None) -> tuple[float, np.ndarray, np.ndarray]:
    """The max-min LP once on a throughput ``program``: (z*, the program's variables, the
    utility rows' duals), solved with identical jobs merged (``merged_jobs``: the same z*,
    an LP of at most as many jobs as configurations; ``merged``: the program's jobs merged
    already, by classes within which ``reference`` is equal, else by ``reference``). The
    variables give each job its class's; each job's dual is its class's over the class's
    jobs (with the job rows' duals so divided and the type rows' kept, a dual solution of the
    full LP of the same value)."""
    if merged is None:
        merged = merged_jobs(program, reference)
    report = _merged_level(merged, reference)
    m = merged.program.rows.shape[0]
    duals = report.row_dual[m:][merged.group] / merged.counts[merged.group]
    return report.objective, merged.variables(report.x[:-1], p.k), duals


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


def above_level(p: HeteroProblem, program: Program, z: float, merged: Merged) -> np.ndarray:
    """The second stage after the max-min level z (fairalloc's, not Gavel's: its LP stops at
    the level), on a ``level_program`` (utilities in units of w_j R_j / max w): maximise the
    total normalised throughput sum_j E_j / R_j with every job kept at E_j >= z w_j R_j (to
    ``LEVEL_SLACK``). The max-min LP alone stops at any allocation that reaches z, leaving
    idle whatever no job's minimum needs (the K80s of gavel-mix); here a job that can use it
    gets it. With every weight of the sum positive, the result is Pareto efficient: a gain for
    one job with no loss for another would raise the sum. Solved over ``merged``, the
    program's jobs merged by their weights too (``merged_jobs``; each class's weight its count
    times a job's): the LP is convex and symmetric in such jobs, so the optimum is the full
    LP's, and identical jobs get the same time whatever vertex the solver returns, or the
    jobs' order. Returns the (n, k) time fractions."""
    weights = relative_weights(p)
    floor = np.full(merged.first.size, z * weight_unit(p) * (1 - LEVEL_SLACK))
    parts = sum_lp(merged.program, weights[merged.first] * merged.counts, floor)
    return program.to_time(merged.variables(_solve(parts).x, p.k), p.k)


def dense(rows: SparseRows) -> np.ndarray:
    a = np.zeros(rows.shape)
    a[rows.row, rows.col] = rows.value
    return a


def centre_at_level(p: HeteroProblem, program: Program, z: float, merged: Merged
                    ) -> np.ndarray:
    """Gavel's point at the max-min level z: the point of the max-min LP's central path
    whose gap is ``CENTRE_GAP`` of the level (``solvers.centre``), on a ``level_program``,
    with the LP's own inequalities as Gavel writes them (x >= 0, each job's time at most 1,
    each type's GPUs; ``policies/policy.py``, ``get_base_constraints``) and one log term per
    job for its own rows. Gavel's LP stops at the level, and its interior point solver (ECOS)
    returns a point inside the optimal face, not a vertex: a job above the level gets part of
    the time it could use. As the gap tends to 0 this point tends to the face's analytic
    centre; it depends on no solver, and identical jobs get the same time (the point is
    unique, so symmetric). Computed over ``merged`` (a class's log terms: its count times one
    job's). Returns the (n, k) time fractions."""
    return program.to_time(merged.variables(_centre(merged, z * weight_unit(p)), p.k), p.k)


def _centre(merged: Merged, level: float) -> np.ndarray:
    """The point of the central path of max t s.t. t <= gains_c . x_c over ``merged``'s
    classes (``CentreLP``) whose gap is ``CENTRE_GAP`` of its optimal ``level`` (in the
    program's units): the merged program's variables."""
    lp = CentreLP.of(merged, level > 0)
    x = np.where(lp.free, 0.5 * float((lp.rhs / lp.rows.sum(axis=1)).min()), 0.0)
    start = np.append(x, 0.5 * float((lp.gains @ x).min())) if lp.level else x
    mu = CENTRE_GAP * level / lp.weights.sum() if lp.level else 1.0
    v, _ = central_point(lp.a, lp.b, lp.weights, mu, start, lp.dual_start(), lp.newton)
    return v[:lp.free.size]


def centre_at_ratio(p: HeteroProblem, program: Program, needs: np.ndarray,
                    live: np.ndarray) -> np.ndarray:
    """``finish-time``'s point ``centre`` at its largest ratio rho, on an
    ``isolated_program`` (``needs``: need_j(rho) in units of E_j^iso): the point of the
    central path of max t s.t. E_j >= t need_j over the ``live`` jobs whose gap is
    ``CENTRE_GAP`` of its level, 1 at the optimal rho (as ``centre_at_level`` for max-min).
    Gavel's ``FinishTimeFairnessPolicyWithPerf`` minimises the largest ratio with ECOS, an
    interior point method: a point inside the optimal face, where a job below rho gets part
    of what it could use, not the most total throughput (``above_ratio``). Each job is its
    own class unless jobs share their rows and needs. The program may instead have one
    variable a job (``with_job_rows`` of ``agnostic_program``: needs in units of time, for
    ``agnostic-finish-time``). Returns the (n, k) time fractions."""
    at = program.per_unit(np.where(live, needs, np.inf))   # a finished job: no level row
    k = at.gains.shape[1] // p.n        # variables a job: a type's each, or its total time
    merged = merged_jobs(at, np.zeros(p.n))
    return at.to_time(merged.variables(_centre(merged, 1.0), k), p.k)


@dataclass(frozen=True)
class CentreLP:
    """``centre_at_level``'s LP over a merged program's classes, as ``a v <= b``: columns
    class c's k types (c*k..c*k+k-1; those its jobs cannot use held at 0), then the level t
    when there is one; rows x_i >= 0 for the usable ones, the program's job and type rows,
    then t <= gains_c . x_c for each class that can run; ``weights`` each row's jobs. The
    rest is the structure ``newton`` reads, fixed with the LP."""

    a: np.ndarray
    b: np.ndarray
    weights: np.ndarray
    free: np.ndarray         # (C k,): usable variables
    rows: np.ndarray         # the program's used rows on the variables
    rhs: np.ndarray
    gains: np.ndarray        # (classes that can run, C k)
    runs: np.ndarray         # the classes that can run
    k: int
    job: np.ndarray          # per used row: a class's job row (else a type row)
    job_class: np.ndarray    # the class of each job row
    job_coef: np.ndarray     # (C, k): each class's job row on its own variables
    class_gain: np.ndarray   # (C, k): each class's level row (0 where it cannot run)
    type_coef: np.ndarray    # (C, k, type rows): the type rows on each class's variables

    @property
    def level(self) -> bool:
        return self.runs.size > 0

    @classmethod
    def of(cls, merged: Merged, level: bool) -> CentreLP:
        counts = merged.counts
        classes, size = counts.size, merged.program.rows.shape[1]
        k = size // classes
        free = merged.program.upper > 0
        rows = dense(merged.program.rows) * free
        used = np.flatnonzero((rows != 0).any(axis=1))
        job = used < classes
        gains = dense(merged.program.gains) * free
        runs = np.flatnonzero((gains > 0).any(axis=1)) if level else np.zeros(0, np.intp)
        bounds = -np.eye(size)[free]
        a = np.vstack([bounds, rows[used], -gains[runs]])
        if level:
            a = np.column_stack([a, np.r_[np.zeros(bounds.shape[0] + used.size),
                                          np.ones(runs.size)]])
        b = np.concatenate([np.zeros(bounds.shape[0]), merged.program.rhs[used],
                            np.zeros(runs.size)])
        weights = np.concatenate([counts[np.arange(size) // k][free],
                                  np.where(job, counts[np.minimum(used, classes - 1)], 1.0),
                                  counts[runs]])
        coef = rows[used].reshape(used.size, classes, k)
        class_gain = np.zeros((classes, k))
        class_gain[runs] = gains[runs].reshape(-1, classes, k)[np.arange(runs.size), runs]
        return cls(a, b, weights, free, rows[used], merged.program.rhs[used], gains[runs],
                   runs, k, job, used[job], coef[job].sum(axis=0), class_gain,
                   coef[~job].transpose(1, 2, 0))

    def dual_start(self) -> np.ndarray:
        """Duals y > 0 with a^T y = (0, ..., 0, 1): the level rows share 1, the program's
        rows priced so that every x_i >= 0 row's dual comes out positive."""
        share = np.full(self.runs.size, 1.0 / max(self.runs.size, 1))
        need = self.gains.T @ share
        column = self.rows.sum(axis=0)
        price = 1.0 + 2.0 * float((need[self.free] / column[self.free]).max())
        return np.concatenate([(price * column - need)[self.free],
                               np.full(self.rows.shape[0], price), share])

    def newton(self, d: np.ndarray, r: np.ndarray) -> np.ndarray:
        """(a^T diag(d) a) dv = r by its structure: a k x k block per class (its x >= 0, job
        and level rows), the type rows a rank-k term (Woodbury), the level t one more
        column (a Schur complement), so O(classes k^3) with no dense factorisation."""
        k, size = self.k, self.free.size
        classes = size // k
        nb, nr = int(self.free.sum()), self.rows.shape[0]
        bound = np.zeros(size)
        bound[self.free] = d[:nb]
        rows_d, level_d = d[nb:nb + nr], d[nb + nr:]
        # per-class blocks: x >= 0, the job row, the level row; unusable variables held by 1
        block = np.zeros((classes, k, k))
        block[:, np.arange(k), np.arange(k)] = np.where(self.free, bound, 1.0).reshape(
            classes, k)
        jd = np.zeros(classes)
        jd[self.job_class] = rows_d[self.job]
        jc, g = self.job_coef, self.class_gain
        block += jd[:, None, None] * jc[:, :, None] * jc[:, None, :]
        ld = np.zeros(classes)
        ld[self.runs] = level_d
        block += ld[:, None, None] * g[:, :, None] * g[:, None, :]
        u = self.type_coef                                # (classes, k, types used)
        h = -(ld[:, None] * g)                            # x-t coupling
        rx = r[:size].reshape(classes, k)
        solved = np.linalg.solve(block, np.concatenate(
            [rx[:, :, None], h[:, :, None], u], axis=2))  # K^-1 [r, h, u]
        ut = np.einsum("ckt,ckm->tm", u, solved)          # u^T K^-1 [r, h, u]
        small = np.diag(1.0 / rows_d[~self.job]) + ut[:, 2:]
        fix = np.linalg.solve(small, ut[:, :2])
        both = solved[:, :, :2] - np.einsum("ckt,tm->ckm", solved[:, :, 2:], fix)
        gr, gh = both[:, :, 0], both[:, :, 1]
        if not self.level:
            return gr.ravel()
        dt = (r[size] - (h * gr).sum()) / (ld.sum() - (h * gh).sum())
        return np.append((gr - gh * dt).ravel(), dt)


def _max_min(p: HeteroProblem, reference: np.ndarray, formulation: str, point: str
             ) -> tuple[np.ndarray, float]:
    """max z s.t. E_j(x) >= z w_j R_j (R: ``reference``), then the ``point`` at that level:
    ``above_level`` (``efficient``) or ``centre_at_level`` (``centre``, Gavel's); either gives
    identical jobs the same time, not the solver's vertex, which moved a job's throughput up
    to 10x between the dual simplex and the interior point method, or with the jobs' order.
    Returns the (n, k) time fractions and z. The level by the sparse matrix LP or
    (``formulation: "pyomo"``) the same LP written out in Pyomo (``models.hetero.
    max_min_model``; tests check both reach the same optimum)."""
    check_point(point)
    program = level_program(p, reference)
    merged = merged_jobs(program, relative_weights(p))      # both LPs' classes
    if formulation == "pyomo":
        report = solve_pyomo(max_min_model(p, reference))
        if report.status != "optimal":
            raise SolverError(f"hetero LP: HiGHS says {report.status}")
        z = report.objective / weight_unit(p)
    else:
        z = _merged_level(merged, np.ones(p.n)).objective / weight_unit(p)
    if point == "efficient":
        return above_level(p, program, z, merged), z
    return centre_at_level(p, program, z, merged), z


POINTS = ("efficient", "centre")
POINT_NAMES = {"efficient": "then max-sum at its level",
               "centre": "then the centre of its optimal face (Newton)"}


def check_point(point: str) -> None:
    """Refuse a ``point`` option that names none of ``POINTS``."""
    if point not in POINTS:
        raise does_not_apply("options.point", f"no point {point!r} (one of: "
                             f"{', '.join(POINTS)})")


def max_min(p: HeteroProblem, formulation: str = "matrix", point: str = "efficient"
            ) -> Solution:
    """Gavel's heterogeneity-aware max-min fairness (``max_min_fairness_perf``): max z s.t.
    s_j E_j(x) >= z w_j P_j, P_j the job's throughput under Gavel's proportional share
    (``gavel_reference``), then at that level the most total normalised throughput
    (``point: "efficient"``) or the centre of the optimal face (``"centre"``, the point
    Gavel's interior point solver approaches). Its objective, as every method's, is the
    kind's (``smallest_level``); the level it reached is its metric ``gavel_level``."""
    x, z = _max_min(p, gavel_reference(p), formulation, point)
    return Solution(p.allocation(x), "optimal", smallest_level(p, x),
                    metrics={GAVEL_LEVEL: z},
                    solver={"name": f"HiGHS LPs (Gavel's max-min, {formulation}; "
                            f"{POINT_NAMES[point]})", "level": z})


def max_min_isolated(p: HeteroProblem, formulation: str = "matrix", point: str = "efficient"
                     ) -> Solution:
    """Max-min fairness on the kind's normalised throughput: max z s.t. E_j(x) >= z w_j
    E_j^iso (each job's isolated share, the reference of sharing incentive), then the
    ``point`` at that level (as ``max_min``): the kind's objective exactly."""
    x, z = _max_min(p, isolated_throughput(p), formulation, point)
    return Solution(p.allocation(x), "optimal", z,
                    solver={"name": f"HiGHS LPs (max-min on isolated shares, {formulation}; "
                            f"{POINT_NAMES[point]})", "bound": z, "gap": 0.0})


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


def finish_time(p: HeteroProblem, tolerance: float = FINISH_TOLERANCE,
                point: str = "efficient") -> Solution:
    """Finish-time fairness (Themis; Gavel's ``finish_time_fairness_perf``,
    ``FinishTimeFairnessPolicyWithPerf``): minimise max_j rho_j, rho_j = (t_j + S_j / E_j) /
    (I_j + S_j / E_j^iso) (``finish_time_ratio``; I_j the time job j's progress so far would
    have taken at its isolated throughput: Gavel's cumulative isolated time in a replay, else
    t_j). For a fixed rho each job needs E_j >= need_j(rho) = S_j / (rho D_j - t_j) (D_j: its
    denominator), linear in x; the LP max z s.t. E_j >= z need_j(rho) is feasible
    iff z >= 1. The bracket [proven lower bound, achieved rho] is narrowed until its relative
    width is at most ``tolerance``: the result is optimal to that tolerance, and its bound is
    the largest rho proven below the optimum.

    Each LP narrows the bracket from both ends: its point x is an allocation (its largest
    rho an upper end when lower), and its duals prove a lower end (``rho_lower_bound``: a
    Newton, Dinkelbach-like step, where bisection only learned which side of rho the optimum
    is). The next LP is at the new lower end while that halves the bracket, else at its middle
    (the duals are as exact as HiGHS's tolerances, 1e-7, so the last digits may need
    bisection). On figure 8's replay (``figure_8_document``, 5.6 jobs/h) it takes 3.2 LPs an
    allocation where bisection took 22.8, to the same rho within the tolerance. The point:
    then the most total normalised throughput with every ratio held at most rho
    (``above_ratio``, ``point: "efficient"``), not the LP's vertex, which held only the jobs
    at the largest rho and left GPUs idle that the others could use; or the centre of that
    optimal face (``centre_at_ratio``, ``point: "centre"``), the point Gavel's interior point
    solver approaches.

    A finished job (steps_remaining 0) has no ratio (its finish time no longer depends on the
    allocation): the largest ratio is over the others; it still counts in the isolated share,
    as in every method. With every job finished there is nothing to share: does not apply."""
    check_point(point)
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
    denominator = time_isolated(p) + alone
    best_x = isolated_share(p)
    hi = largest_finish_time_ratio(p, effective(p, best_x))          # the isolated share: 1
    pole = float(np.max(p.elapsed[~done] / denominator[~done]))     # no throughput beats it
    lo, rho, steps = pole, hi, 0        # the first LP at the isolated share's rho: feasible
    m = program.rows.shape[0]
    lp = NeedsLP(program)

    def needs_at(rho: float) -> np.ndarray:
        """need_j(rho) / E_j^iso of every unfinished job (0 for a finished one)."""
        return np.where(done, 0.0, alone / np.where(done, 1.0, rho * denominator - p.elapsed))

    while hi - lo > tolerance * hi and steps < MOST_LPS:
        steps += 1
        width = hi - lo
        report = lp.solve(needs_at(rho))
        x = program.to_time(report.x[:-1], p.k)
        achieved = largest_finish_time_ratio(p, effective(p, x))
        if achieved < hi:
            best_x, hi = x, achieved
        elif report.objective >= 1.0:         # within the LP's tolerance of rho
            hi = max(lo, min(hi, rho * (1 + TIE)))
        if report.objective < 1.0:            # some E_j < need_j: rho is below the optimum
            lo = max(lo, rho)
        weights = np.where(done, 0.0, np.maximum(-report.row_dual[m:], 0.0))
        prices = np.maximum(report.row_dual[:m], 0.0)
        lo = max(lo, rho_lower_bound(lo, weights, alone, denominator, p.elapsed,
                                     program.utility_bound(weights, prices)))
        rho = lo if hi - lo <= width / 2 and lo > pole else (lo + hi) / 2
    if point == "centre":       # strictly inside the face: its ratios below rho
        x = centre_at_ratio(p, program, needs_at(hi), ~done)
    else:
        x = above_ratio(lp, needs_at(hi), ~done, p.k)
    def recorded(x: np.ndarray) -> tuple[np.ndarray, float]:
        """x as the allocation records it (tiny entries zeroed), and its largest ratio: the
        one reported."""
        x = np.where(np.abs(x) < TIE, 0.0, x)
        return x, largest_finish_time_ratio(p, effective(p, x))

    x, achieved = recorded(x)
    if achieved <= hi * (1 + tolerance) or point == "centre":
        # else the floors held only to HiGHS's 1e-7; the centre is the point asked for,
        # its ratios within CENTRE_GAP of rho
        best_x, hi = x, achieved
    else:
        best_x, hi = recorded(best_x)
    gap = (hi - lo) / hi if hi > 0 else 0.0
    return Solution(p.allocation(best_x), "optimal" if gap <= tolerance else "feasible",
                    smallest_level(p, best_x),
                    metrics={"finish_time_bound": lo, "finish_time_gap": gap},
                    solver={"name": "LPs on rho (dual bounds, bisection), HiGHS",
                            "steps": steps, "rho": hi, "rho_bound": lo})


def above_ratio(lp: NeedsLP, needs: np.ndarray, live: np.ndarray, k: int) -> np.ndarray:
    """``finish-time``'s second stage at its largest ratio rho: the most total normalised
    throughput sum_j E_j / E_j^iso of the ``live`` jobs with every job held at E_j >= need_j
    (rho) (``needs``, in units of E_j^iso), so that every ratio stays at most rho. The
    minimax alone stops at any point of its optimal face; its LP's vertex gives each job no
    more than it needs to reach rho, so where one job's ratio sets rho far above the others'
    (in a replay, a job that waited: Gavel's denominator), the others get little and GPUs
    idle (figure 8 at 5.6 jobs/hour: 41.0 h against Gavel's 30.47). As ``max-min``'s
    ``above_level``, the result is Pareto efficient among the live jobs. Returns the (n, k)
    time fractions. Solved on the bracket's loaded LP (``NeedsLP.most_at``), else afresh
    (HiGHS's warm start said "Unknown" on throughputs of 1e10 beside weights of 1e6)."""
    try:
        v = lp.most_at(needs, live.astype(float)).x[:-1]
    except SolverError:
        v = _solve(sum_lp(lp.program, live.astype(float), needs)).x
    return lp.program.to_time(v, k)


class NeedsLP:
    """max z s.t. gains_j . v >= z need_j over ``program`` (``max_min_lp``), for needs that
    change from solve to solve: loaded into HiGHS once, each later solve changes z's column and
    starts from the last basis, which often stays optimal as the needs move a little
    (finish-time's LPs: 26 simplex iterations where a fresh LP took 169)."""

    def __init__(self, program: Program):
        self.program = program
        self.highs = None

    def solve(self, needs: np.ndarray):
        """The LP's report for these needs (SolverError unless optimal)."""
        self._set(needs)
        return _optimal(self.highs)

    def most_at(self, needs: np.ndarray, weights: np.ndarray):
        """``sum_lp``'s report (max sum_j weights_j gains_j . v with gains_j . v >= needs_j)
        on the loaded LP: z held at 1 and the objective the sum, from the last basis (the
        same LP as a fresh ``sum_lp``; figure 8's replay, profiled: 3.1 against 4.0 ms an
        allocation)."""
        self._set(needs)
        g, size = self.program.gains, self.program.rows.shape[1]
        cost = np.bincount(g.col, weights=g.value * weights[g.row], minlength=size)
        self.highs.changeColsCost(size + 1, np.arange(size + 1, dtype=np.int32),
                                  np.append(cost, 0.0))
        self.highs.changeColBounds(size, 1.0, 1.0)
        return _optimal(self.highs)

    def _set(self, needs: np.ndarray) -> None:
        """The LP loaded with these needs: at the first call built, then z's column changed."""
        if self.highs is None:
            self.highs = _loaded(max_min_lp(self.program, needs, {}))
        else:
            self._change(needs)

    def _change(self, needs: np.ndarray) -> None:
        m, size = self.program.rows.shape
        # from the last basis, also after a first solve by the interior point method
        self.highs.setOptionValue("solver", "simplex")
        basis = self.highs.getBasis()
        self.highs.deleteCols(1, np.array([size], dtype=np.int32))
        rows = np.flatnonzero(needs)
        self.highs.addCol(1.0, 0.0, np.inf, rows.size, (m + rows).astype(np.int32),
                          -needs[rows])
        self.highs.setBasis(basis)


NEWTON_STEPS = 100      # rho_lower_bound's Newton steps (it stops sooner: at the bound's digits)


def rho_lower_bound(lo: float, weights: np.ndarray, alone: np.ndarray,
                    denominator: np.ndarray, elapsed: np.ndarray, bound: float) -> float:
    """A lower bound of the optimal largest finish-time ratio rho*, at least ``lo``, from an
    LP's duals: ``weights`` y_j >= 0 on the jobs' rows and ``bound`` U >= sum_j y_j E_j over
    every allocation (``Program.utility_bound``, E_j in units of E_j^iso). At the optimum
    E_j >= need_j(rho*) = alone_j / (rho* D_j - t_j), so h(rho*) = sum_j y_j need_j(rho*) <= U;
    h is convex and decreasing in rho, so rho* >= the root of h = U. Newton's steps from the
    left stay left of a convex decreasing function's root: every iterate is a proven bound.
    Each job alone gives one too, the root of its own term (y_j alone_j / U + t_j) / D_j:
    the largest of them is where Newton starts."""
    live = (weights > 0) & (alone > 0)
    if bound <= 0 or not live.any():
        return lo
    c, d, t = weights[live] * alone[live], denominator[live], elapsed[live]
    rho = max(lo, float(np.max((c / bound + t) / d)))
    for _ in range(NEWTON_STEPS):
        slack = rho * d - t
        # a job whose own root is at its pole (slack 0 to rounding: a job that waited, with
        # little left) makes h and its slope inf, the step NaN: no step is taken
        with np.errstate(divide="ignore", invalid="ignore"):
            h = float(np.sum(c / slack))
            slope = float(np.sum(c * d / slack ** 2))
            step = (h - bound) / slope
        if not step > TIE * rho:
            break
        ahead = rho + step
        if float(np.sum(c / (ahead * d - t))) < bound:      # rounding: past the root
            break
        rho = ahead
    return rho


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


def agnostic_isolated_throughput(p: HeteroProblem, reference_type: str | None = None
                                 ) -> np.ndarray:
    """(n,): E_j^iso as ``agnostic-finish-time`` counts it: the job's throughput with every
    type as fast (``alike_throughput``) over its isolated share's total time (Gavel's
    ``FinishTimeFairnessPolicy`` hands the V100-for-every-type throughputs to the policy
    whose ``IsolatedPolicy`` computes it, ``finish_time_fairness.py`` lines 27-40, 78-79)."""
    return alike_throughput(p, reference_type).max(axis=1) * isolated_share(p).sum(axis=1)


def _times_at(excess: float, slope: np.ndarray, at_one: np.ndarray) -> np.ndarray:
    """t_j at which job j's finish-time ratio is 1 + ``excess``: (e_j + a_j / t_j) / D_j with
    D_j = I_j + a_j / t_j^iso gives 1 / t_j = excess D_j / a_j + 1 / t_j^iso + (I_j - e_j) /
    a_j (``slope`` = D_j / a_j, ``at_one`` = the last two terms, 1 / t_j at ratio 1).
    Counted from 1, not as L D_j - e_j, which lost every digit when e_j >> a_j (a job 1e9 s
    in with 1e-6 s to go)."""
    with np.errstate(divide="ignore", over="ignore"):
        return 1.0 / (excess * slope + at_one)


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


def _ratio_filled(slope: np.ndarray, at_one: np.ndarray, use: np.ndarray,
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
        jobs, u = (slope[live], at_one[live]), use[live]
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


def agnostic_finish_time(p: HeteroProblem, reference_type: str | None = None,
                         point: str = "efficient") -> Solution:
    """Finish-time fairness agnostic of heterogeneity (Gavel's ``finish_time_fairness``,
    ``FinishTimeFairnessPolicy``): ``finish-time``'s ratios rho_j = (t_j + S_j / E_j) /
    (I_j + S_j / E_j^iso) with every type as fast as the job's ``reference_type``
    (``alike_throughput``; E_j^iso: ``agnostic_isolated_throughput``, I_j as in
    ``finish-time``, counted at that E_j^iso in a replay), so that only a job's total time
    x_j counts; that time is spread over the types it can run on in proportion to their
    GPUs, as in ``agnostic-max-min``
    (Gavel's LP leaves the split to its solver: any split gives the same ratios). The point:
    the leximin of those ratios (``_ratio_filled``, no LP), whose largest is the smallest
    Gavel's minimax reaches, and beyond it no GPU left idle that a job below its whole time
    could use (``point: "efficient"``); or the centre of the face of times that hold every
    ratio at most that largest (``centre_at_ratio`` on ``agnostic_program``, ``"centre"``),
    the point Gavel's interior point solver approaches, where a job below the largest ratio
    gets part of what it could use. Weights are not used (Gavel's are not either).
    Objective: the smallest weighted normalised throughput it leads to."""
    check_point(point)
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
    program = agnostic_program(p)
    spread = program.spread
    iso = isolated_share(p).sum(axis=1)
    with np.errstate(divide="ignore", invalid="ignore"):
        alone = np.where(live, p.steps / speed, 0.0)      # s at the whole time, any type
        ahead = time_isolated(p) - p.elapsed      # I_j - e_j: 0 without a replay's history
        denominator = np.where(live, time_isolated(p) + alone / iso, 1.0)
        slope = np.where(live, denominator / alone, 1.0)
        at_one = np.where(live, 1.0 / iso + ahead / alone, 1.0)

    def largest_ratio(times: np.ndarray) -> float:
        """The live jobs' largest ratio at these total times (NaN with none live)."""
        if not live.any():
            return float("nan")
        with np.errstate(divide="ignore"):      # a job given no time: ratio inf
            return float(((p.elapsed[live] + alone[live] / times[live])
                          / denominator[live]).max())

    t = _ratio_filled(slope, at_one, p.scale[:, None] * spread, p.workers, live)
    x = t[:, None] * spread
    rho = largest_ratio(t)
    if point == "centre" and live.any():
        # t_j >= alone_j / (rho D_j - e_j) holds job j's ratio at most rho
        needs = np.where(live, alone / np.where(live, rho * denominator - p.elapsed, 1.0), 0.0)
        x = centre_at_ratio(p, with_job_rows(program), needs, live)
        x = np.where(np.abs(x) < TIE, 0.0, x)
        rho = largest_ratio(x.sum(axis=1))
    return Solution(p.allocation(x), "heuristic", smallest_level(p, x),
                    metrics={"agnostic_finish_time_ratio": rho},
                    solver={"name": "progressive filling on finish-time ratios as if every "
                            "type were as fast (no LP)" + (", then the centre of its face"
                                                           if point == "centre" else ""),
                            "rho": rho})


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



def max_min_packed(p: HeteroProblem, point: str = "efficient") -> Solution:
    """Gavel's max-min fairness with space sharing (``max_min_fairness_packed``,
    ``MaxMinFairnessPolicyWithPacking.get_allocation``, ``scheduler/policies/
    max_min_fairness.py`` lines 274-358): max z s.t. s_j E_j >= z w_j P_j over Gavel's packing
    polytope (``packed_program``), E_j counting the job's time alone and its time sharing a GPU
    with each other job at its co-located throughput, P_j its throughput under the
    proportional share of the GPUs alone (lines 290-298); then, as ``max-min`` does, the
    ``point`` at that level: the most total normalised throughput (``efficient``) or the
    centre of the LP's optimal face (``centre``, ``packed_centre``). Both LPs over the jobs
    and pairs of jobs merged into classes (``merged_packed``: the same optimum), so that
    neither the solver's vertex nor the jobs' order moves a job's time. Without co-located
    throughputs (no ``colocated`` in the spec) no two jobs share and the LP is ``max-min``'s.
    The objective is the kind's, with shared time counted; the level is the metric
    ``gavel_level``."""
    check_point(point)
    unit = gavel_reference(p) * relative_weights(p)
    merged = merged_packed(p, np.column_stack([unit, relative_weights(p)]))
    program = merged.program.per_unit(unit[merged.first])
    level = _solve(max_min_lp(program, np.ones(merged.first.size), {})).objective
    if point == "efficient":
        floor = np.full(merged.first.size, level * (1 - LEVEL_SLACK))
        weights = relative_weights(p)[merged.first] * merged.counts
        v = _solve(sum_lp(program, weights, floor)).x
    else:
        v = packed_centre(replace(merged, program=program), level)
    x, shared = merged.unpack(p, v)
    objective = smallest_level(p, x, shared)
    z = level / weight_unit(p)
    what = (f"{merged.pairs.shape[0]} pairs of classes of jobs that can share"
            if merged.pairs.size else "no two jobs can share a GPU (colocated)")
    return Solution(p.allocation(x, shared if merged.pairs.size else None), "optimal",
                    objective, metrics={GAVEL_LEVEL: z},
                    solver={"name": f"HiGHS LPs (Gavel's max-min with packing, {what}; "
                            f"{POINT_NAMES[point]})", "level": z})


def packed_centre(merged: MergedPacked, level: float) -> np.ndarray:
    """Gavel's point at the packing LP's level (``level``, in the program's units): the
    point of its central path whose gap is ``CENTRE_GAP`` of the level
    (``solvers.centre``), on the LP's own inequalities as Gavel writes them (every variable
    >= 0, each job's time alone and in pairs at most 1, each type's GPUs: ``policies/
    policy.py``, ``PolicyWithPacking.get_base_constraints``) and one log term per job, or
    pair of jobs, for its own rows (``PackedCentreLP``), as ``centre_at_level`` takes
    ``max-min``'s. Returns the merged program's variables."""
    lp = PackedCentreLP.of(merged, level > 0)
    n_free = lp.index.size
    x = np.full(n_free, 0.5 * float((lp.b[n_free:n_free + lp.held] /
                                      np.maximum(lp.rows[:lp.held, :n_free].sum(axis=1),
                                                 1e-300)).min()))
    start = np.append(x, 0.5 * float((lp.gains @ x).min())) if lp.level else x
    mu = CENTRE_GAP * level / lp.weights.sum() if lp.level else 1.0
    v, _ = central_point(lp.a, lp.b, lp.weights, mu, start, lp.dual_start(), lp.newton)
    out = np.zeros(merged.program.upper.size)
    out[lp.index] = v[:n_free]
    return out


@dataclass(frozen=True)
class PackedCentreLP:
    """``packed_centre``'s LP as ``a v <= b``: columns the merged packing program's usable
    variables (``index``), then the level t when there is one; rows v_i >= 0 for each, the
    program's rows that hold any (``held`` of them), then t <= gains_c . v for each class
    that can run; ``weights``: the jobs, or pairs of jobs, each row stands for. ``rows``:
    ``a`` without its v_i >= 0 rows (few: two a class and one a type)."""

    a: np.ndarray
    b: np.ndarray
    weights: np.ndarray
    index: np.ndarray
    rows: np.ndarray
    held: int
    gains: np.ndarray
    level: bool

    @classmethod
    def of(cls, merged: MergedPacked, level: bool) -> PackedCentreLP:
        program, counts = merged.program, merged.counts
        classes = counts.size
        k = program.rhs.size - classes          # the rows: one a class, then one a type
        index = np.flatnonzero(program.upper > 0)
        rows = dense(program.rows)[:, index]
        used = np.flatnonzero((rows != 0).any(axis=1))
        gains = dense(program.gains)[:, index]
        runs = np.flatnonzero((gains > 0).any(axis=1)) if level else np.zeros(0, np.intp)
        per_variable = np.concatenate([np.repeat(counts, k),
                                       np.repeat(merged.together, k)])[index]
        weights = np.concatenate([per_variable,
                                  np.where(used < classes, counts[np.minimum(used, classes - 1)],
                                           1.0), counts[runs]])
        others = np.vstack([rows[used], -gains[runs]])
        if level:
            others = np.column_stack([others, np.r_[np.zeros(used.size), np.ones(runs.size)]])
        bounds = -np.eye(index.size, others.shape[1])
        b = np.concatenate([np.zeros(index.size), program.rhs[used], np.zeros(runs.size)])
        return cls(np.vstack([bounds, others]), b, weights, index, others, used.size,
                   gains[runs], level)

    def dual_start(self) -> np.ndarray:
        """Duals y > 0 with a^T y = (0, ..., 0, 1): the level rows share 1, the program's
        rows priced so that every v_i >= 0 row's dual comes out positive."""
        share = np.full(self.gains.shape[0], 1.0 / max(self.gains.shape[0], 1))
        need = self.gains.T @ share
        column = self.rows[:self.held, :self.index.size].sum(axis=0)
        price = 1.0 + 2.0 * float((need / column).max())
        return np.concatenate([price * column - need, np.full(self.held, price), share])

    def newton(self, d: np.ndarray, r: np.ndarray) -> np.ndarray:
        """(a^T diag(d) a) dv = r by its structure: the v_i >= 0 rows a diagonal, the few
        others (two a class, one a type) a low-rank term, solved by Woodbury with one round
        of iterative refinement, O(variables x rows^2). Near the face Woodbury divides by
        the diagonal of a variable the face does not pin (1e-13 beside 1e10) and keeps too
        few digits; then the matrix is formed from the same structure (O(variables^2 x
        rows), not ``dense_newton``'s product of ``a``) and solved densely."""
        dv = self._woodbury(d, r)
        # kept at the residual the path checks (``solvers.centre``), else formed and solved
        dv = dv + self._woodbury(d, r - self.a.T @ (d * (self.a @ dv)))
        residual = self.a.T @ (d * (self.a @ dv)) - r
        if np.isfinite(dv).all() and np.linalg.norm(residual) <= RESIDUAL * np.linalg.norm(r):
            return dv
        size = self.index.size
        matrix = (self.rows.T * d[size:]) @ self.rows
        matrix[np.arange(size), np.arange(size)] += d[:size]
        return np.linalg.solve(matrix, r)

    def _woodbury(self, d: np.ndarray, r: np.ndarray) -> np.ndarray:
        """``newton``'s solve by Woodbury over the rows other than v_i >= 0 and a Schur
        complement for the level t."""
        size = self.index.size
        bound, dr = d[:size], d[size:]
        rx = self.rows[:, :size]
        inverse = 1.0 / bound
        capacity = np.diag(1.0 / dr) + (rx * inverse) @ rx.T

        def solve(right: np.ndarray) -> np.ndarray:
            scaled = inverse[:, None] * right
            return scaled - inverse[:, None] * (rx.T @ np.linalg.solve(capacity, rx @ scaled))

        if not self.level:
            return solve(r[:, None])[:, 0]
        rt = self.rows[:, size]
        h = rx.T @ (dr * rt)
        both = solve(np.column_stack([r[:size], h]))
        gr, gh = both[:, 0], both[:, 1]
        dt = (r[size] - h @ gr) / ((dr * rt) @ rt - h @ gh)
        return np.append(gr - gh * dt, dt)
