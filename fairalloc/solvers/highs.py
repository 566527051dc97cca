"""Solve LPs and MILPs with HiGHS and translate what happened into fairalloc's statuses.

Two doors to the same solver:

* :func:`solve_pyomo` for the readable Pyomo formulations in ``models/`` (they mirror the papers);
* :func:`solve_matrix` for models built directly as sparse matrices, where Pyomo's model building
  would dominate at scale (DESIGN.md: add a matrix path and test that both give the same optimum).

Statuses: ``optimal``; ``feasible`` (a MILP stopped with an incumbent before proving it);
``time_limit`` (the time limit hit; the best solution, if any, is kept and labelled);
``infeasible``. Anything else (unbounded, numerical trouble, ...) raises :class:`SolverError`
with HiGHS's own words — never swallowed.
"""

from __future__ import annotations

import ctypes
import math
import os
import sys
import time
from dataclasses import dataclass, field

import highspy
import numpy as np

from fairalloc.errors import SolverError
from fairalloc.models.program import MatrixProgram


def _swallow_banner() -> None:
    """highspy 1.16 prints its banner on standard output once per process, when the first
    ``Highs`` object starts its callbacks, before any option can be set; a JSON result on
    standard output must stay JSON. The first object is made here, with file descriptor 1
    pointed at the null device (C's buffer flushed before it is put back)."""
    sys.stdout.flush()
    saved = os.dup(1)
    try:
        with open(os.devnull, "w") as null:
            os.dup2(null.fileno(), 1)
            highspy.Highs()
            ctypes.CDLL(None).fflush(None)
    finally:
        os.dup2(saved, 1)
        os.close(saved)


_swallow_banner()
INF = highspy.kHighsInf
WIDE = 50  # columns per row beyond which an LP goes to the primal simplex


@dataclass
class Report:
    """What a solve produced: status, objective, proven bound, gap, time and (for LPs) duals."""

    status: str
    objective: float | None
    time_s: float
    bound: float | None = None
    gap: float | None = None
    x: np.ndarray | None = None
    row_dual: np.ndarray | None = None
    col_dual: np.ndarray | None = None
    duals: dict = field(default_factory=dict)
    raw: str = ""


def relative_gap(objective: float | None, bound: float | None) -> float | None:
    """|objective - bound| / max(|objective|, 1e-10), the MIP gap HiGHS reports."""
    if objective is None or bound is None or not math.isfinite(bound):
        return None
    return abs(objective - bound) / max(abs(objective), 1e-10)


_MODEL_STATUS = {
    highspy.HighsModelStatus.kOptimal: "optimal",
    highspy.HighsModelStatus.kInfeasible: "infeasible",
    highspy.HighsModelStatus.kTimeLimit: "time_limit",
}


def solve_matrix(
    cost: np.ndarray,
    rows: np.ndarray,
    row_lower: np.ndarray,
    row_upper: np.ndarray,
    col_lower: np.ndarray,
    col_upper: np.ndarray,
    *,
    maximize: bool = True,
    integer: np.ndarray | None = None,
    time_limit: float | None = None,
    mip_gap: float | None = None,
    tolerance: float | None = None,
) -> Report:
    """Solve ``max/min cost·x  s.t.  row_lower <= rows @ x <= row_upper, col bounds`` with HiGHS.
    ``tolerance`` tightens HiGHS's primal and MIP feasibility tolerances (1e-7 and 1e-6), for
    models whose optimum differs from a near-optimum by less than those.

    ``rows`` is a dense (m, n) array (models solved this way are small: one column per class of
    users). Returns primal values, row duals and reduced costs (LPs); raises SolverError on
    other outcomes.

    >>> r = solve_matrix(np.array([1.0, 1.0]), np.array([[1.0, 2.0], [3.0, 1.0]]),
    ...                  np.full(2, -INF), np.array([4.0, 6.0]), np.zeros(2), np.full(2, INF))
    >>> r.status, round(r.objective, 9)
    ('optimal', 2.8)
    """
    rows = np.atleast_2d(np.asarray(rows, dtype=float))
    m, n = rows.shape
    lp = highspy.HighsLp()
    lp.num_col_, lp.num_row_ = n, m
    lp.col_cost_ = np.asarray(cost, dtype=float)
    lp.col_lower_ = np.asarray(col_lower, dtype=float)
    lp.col_upper_ = np.asarray(col_upper, dtype=float)
    lp.row_lower_ = np.asarray(row_lower, dtype=float)
    lp.row_upper_ = np.asarray(row_upper, dtype=float)
    r, c = np.nonzero(rows)
    lp.a_matrix_.format_ = highspy.MatrixFormat.kRowwise
    starts = np.concatenate([[0], np.cumsum(np.bincount(r, minlength=m))])
    lp.a_matrix_.start_ = starts.astype(np.int32)
    lp.a_matrix_.index_ = c.astype(np.int32)
    lp.a_matrix_.value_ = rows[r, c]
    lp.sense_ = highspy.ObjSense.kMaximize if maximize else highspy.ObjSense.kMinimize
    if integer is not None and np.any(integer):
        lp.integrality_ = [
            highspy.HighsVarType.kInteger if flag else highspy.HighsVarType.kContinuous
            for flag in integer
        ]
    h = highspy.Highs()
    h.setOptionValue("output_flag", False)
    if time_limit is not None:
        h.setOptionValue("time_limit", float(max(time_limit, 1e-3)))
    if mip_gap is not None:
        h.setOptionValue("mip_rel_gap", float(mip_gap))
        if mip_gap == 0:        # "prove optimal": HiGHS also stops at an absolute gap of 1e-6
            h.setOptionValue("mip_abs_gap", 0.0)
    if tolerance is not None:
        h.setOptionValue("primal_feasibility_tolerance", tolerance)
        h.setOptionValue("mip_feasibility_tolerance", tolerance)
    if n > WIDE * max(m, 1) and not (integer is not None and np.any(integer)):
        h.setOptionValue("simplex_strategy", 4)  # primal: 0.6 s where dual takes 15 s (2 x 1e5)
    h.passModel(lp)
    start = time.perf_counter()
    h.run()
    elapsed = time.perf_counter() - start
    model_status = h.getModelStatus()
    status = _MODEL_STATUS.get(model_status)
    if status is None:
        raise SolverError(f"HiGHS: {h.modelStatusToString(model_status)}")
    info = h.getInfo()
    has_x = info.primal_solution_status == 2  # kSolutionStatusFeasible
    objective = info.objective_function_value if has_x else None
    is_mip = integer is not None and np.any(integer)
    bound = info.mip_dual_bound if is_mip else objective
    sol = h.getSolution()
    return Report(
        status=status,
        objective=objective,
        time_s=elapsed,
        bound=bound,
        gap=relative_gap(objective, bound) if is_mip else None,
        x=np.array(sol.col_value) if has_x else None,
        row_dual=np.array(sol.row_dual) if has_x and not is_mip else None,
        col_dual=np.array(sol.col_dual) if has_x and not is_mip else None,
        raw=h.modelStatusToString(model_status),
    )


def solve_pyomo(
    model,
    *,
    time_limit: float | None = None,
    mip_gap: float | None = None,
    duals: bool = False,
) -> Report:
    """Solve a Pyomo model with HiGHS (``pyomo.contrib.solver``'s ``highs``) and load the solution.

    Honours ``time_limit`` (seconds) and ``mip_gap`` (relative). With ``duals=True`` the report's
    ``duals`` maps each constraint data object to its dual value (LPs only).
    """
    from pyomo.contrib.solver.common.factory import SolverFactory
    from pyomo.contrib.solver.common.results import SolutionStatus, TerminationCondition

    solver = SolverFactory("highs")
    if not solver.available():
        raise SolverError("HiGHS is not available to Pyomo (is highspy installed?)")
    config: dict = {"load_solutions": False, "raise_exception_on_nonoptimal_result": False}
    if time_limit is not None:
        config["time_limit"] = float(max(time_limit, 1e-3))
    if mip_gap is not None:
        config["rel_gap"] = float(mip_gap)
        if mip_gap == 0:
            config["abs_gap"] = 0.0
    start = time.perf_counter()
    res = solver.solve(model, **config)
    elapsed = time.perf_counter() - start
    tc = res.termination_condition
    has_x = res.solution_status in (SolutionStatus.optimal, SolutionStatus.feasible)
    if tc == TerminationCondition.convergenceCriteriaSatisfied:
        status = "optimal" if res.solution_status == SolutionStatus.optimal else "feasible"
    elif tc == TerminationCondition.maxTimeLimit:
        status = "time_limit"
    elif tc in (
        TerminationCondition.provenInfeasible,
        TerminationCondition.locallyInfeasible,
    ):
        status = "infeasible"
    else:
        raise SolverError(f"HiGHS via Pyomo: {tc.name}")
    report = Report(
        status=status,
        objective=res.incumbent_objective if has_x else None,
        time_s=elapsed,
        bound=res.objective_bound,
        raw=tc.name,
    )
    if has_x:
        res.solution_loader.load_vars()
        if duals:
            report.duals = res.solution_loader.get_duals()
    report.gap = relative_gap(report.objective, report.bound)
    return report


def solve_wide(
    cost: np.ndarray,
    rows: np.ndarray,
    row_lower: np.ndarray,
    row_upper: np.ndarray,
    col_upper: np.ndarray,
    *,
    keep: np.ndarray | None = None,
    time_limit: float | None = None,
    batch: int = 64,
) -> Report:
    """Maximise an LP with few rows and very many columns (all with lower bound 0) by column
    generation: solve on a working set of columns, price every column with the row duals
    (reduced cost cost_c - rows[:, c] . y, numpy), add the best improving ones, repeat until
    none improves. Exact; the report covers all columns (x is 0 outside the working set, and
    ``col_dual`` holds every column's reduced cost). ``keep`` columns are always in the set.

    At 2 rows x 1e5 columns this takes milliseconds where one HiGHS solve takes 0.5-15 s.
    """
    m, n = rows.shape
    work = np.zeros(n, dtype=bool)
    for r in range(m):
        work[np.argmax(rows[r])] = work[np.argmin(rows[r])] = True
    work[np.argsort(-cost, kind="stable")[:batch]] = True
    if keep is not None:
        work[keep] = True
    deadline = None if time_limit is None else time.perf_counter() + time_limit
    elapsed = 0.0
    while True:
        idx = np.flatnonzero(work)
        left = None if deadline is None else deadline - time.perf_counter()
        part = solve_matrix(cost[idx], rows[:, idx], row_lower, row_upper, np.zeros(len(idx)),
                            col_upper[idx], time_limit=left)
        elapsed += part.time_s
        if part.status != "optimal":
            return part
        reduced = cost - rows.T @ part.row_dual
        scale = max(1.0, float(np.abs(cost).max()))
        improving = np.flatnonzero(~work & (reduced > 1e-9 * scale))
        if improving.size == 0:
            x = np.zeros(n)
            x[idx] = part.x
            reduced[idx] = part.col_dual
            return Report("optimal", part.objective, elapsed, part.bound, None, x,
                          part.row_dual, reduced, raw=part.raw)
        work[improving[np.argsort(-reduced[improving], kind="stable")[:batch]]] = True


def solve_program(program: MatrixProgram, **options) -> Report:
    """``solve_matrix`` on a model's formulation (``models.program.MatrixProgram``)."""
    return solve_matrix(program.cost, program.rows, program.row_lower, program.row_upper,
                        program.col_lower, program.col_upper, integer=program.integer, **options)
