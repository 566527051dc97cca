"""A point of the weighted central path of an LP, max c.v s.t. A v <= b: for mu > 0 the one
v that maximises c.v + mu sum_i w_i log(b_i - a_i v). It is a function of the LP as written
and of mu only (no solver, no starting point, no order of the rows), which is why fairalloc
uses it where an LP's optimum is a face rather than a point: as mu tends to 0 it tends to the
analytic centre of the optimal face (the point interior point solvers approach), and its gap
to the optimum is exactly mu sum_i w_i. With c = 0 it is the polytope's weighted analytic
centre.

Found by a primal-dual path-following method (slacks s = b - A v > 0, duals y > 0 with
A^T y = c, centred when y_i s_i = mu w_i). The slacks are iterates of their own, moved by
each step as v is: recomputed from v, a slack of 1e-9 beside a v of 1 would carry a rounding
error of 1e-7 of itself, and no point could be centred to better than that. Each
Newton step solves (A^T diag(y / s) A) dv = r, by a solve the caller gives: the LP's own
structure makes it far cheaper than a dense factorisation (and keeps small matrices away from
a threaded BLAS, which on a busy 2-core machine made the same solve 100 times slower).
"""

from __future__ import annotations

from collections.abc import Callable

import numpy as np

from fairalloc.errors import SolverError

Newton = Callable[[np.ndarray, np.ndarray], np.ndarray]

MOST_STEPS = 200
CENTRED = 1e-10       # relative deviation of y_i s_i from mu w_i at which the point is taken
SHRINK = 0.1          # each step aims at this fraction of the present mu, down to the target
INSIDE = 0.99         # fraction of the way to the boundary that a step may go
RESIDUAL = 1e-8       # relative residual of a Newton solve beyond which it is not trusted


def _step_length(values: np.ndarray, change: np.ndarray) -> float:
    falling = change < 0
    if not falling.any():
        return 1.0
    return min(1.0, INSIDE * float((-values[falling] / change[falling]).min()))


def _pairs_in_rows(row: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """Every ordered pair (i, j) of positions of ``row`` (sorted) with row[i] == row[j]."""
    per_row = np.bincount(row)[row]              # each position's row's size
    first = np.repeat(np.arange(row.size), per_row)
    start = np.repeat(np.searchsorted(row, row), per_row)
    within = np.arange(first.size) - np.repeat(np.cumsum(per_row) - per_row, per_row)
    return first, start + within


def dense_newton(a: np.ndarray) -> Newton:
    """The Newton solve for any ``a``: (A^T diag(d) A) dv = r on the assembled matrix, by
    LU, or by least squares where the LU breaks down or its residual says it lost its digits
    (near the optimum the condition reaches 1e22). The matrix is summed from ``a``'s
    nonzeros (an LP's rows touch few columns), not by a dense product, unless the rows'
    pairs of nonzeros outnumber ``a``'s cells (dense rows); a column that no row touches (a
    variable held at 0) gets a unit diagonal, so it stays at 0."""
    n = a.shape[1]
    row, col = np.nonzero(a)                    # row by row
    untouched = np.setdiff1d(np.arange(n), col)
    if int((np.bincount(row) ** 2).sum()) > a.size:
        def assemble(d: np.ndarray) -> np.ndarray:
            return (a.T * d) @ a
    else:
        first, second = _pairs_in_rows(row)
        cell = col[first] * n + col[second]
        product = a[row[first], col[first]] * a[row[second], col[second]]
        owner = row[first]

        def assemble(d: np.ndarray) -> np.ndarray:
            return np.bincount(cell, product * d[owner], n * n).reshape(n, n)

    def solve(d: np.ndarray, r: np.ndarray) -> np.ndarray:
        matrix = assemble(d)
        matrix[untouched, untouched] = 1.0
        try:
            dv = np.linalg.solve(matrix, r)
            if _trusted(matrix @ dv - r, r):
                return dv
        except np.linalg.LinAlgError:
            pass
        return np.linalg.lstsq(matrix, r, rcond=None)[0]
    return solve


def _trusted(residual: np.ndarray, r: np.ndarray) -> bool:
    return bool(np.isfinite(residual).all()) and (
        np.linalg.norm(residual) <= RESIDUAL * max(np.linalg.norm(r), 1e-300))


def _direction(a: np.ndarray, d: np.ndarray, r: np.ndarray, newton: Newton
               ) -> np.ndarray | None:
    """``newton``'s dv, or None where its residual says it is not to be trusted: a
    structured solve that divides by a block near singularity (a class at the level with its
    other rows nearly slack: that block alone is rank one to rounding, though the whole
    system is not) fails or loses its digits."""
    try:
        dv = newton(d, r)
    except np.linalg.LinAlgError:
        return None
    return dv if _trusted(a.T @ (d * (a @ dv)) - r, r) else None


def central_point(a: np.ndarray, b: np.ndarray, weights: np.ndarray, mu: float,
                  start: np.ndarray, duals: np.ndarray, newton: Newton
                  ) -> tuple[np.ndarray, int]:
    """The central path's point at ``mu`` of max c.v s.t. ``a`` v <= ``b``, c = ``a``^T
    ``duals`` (duals > 0: a strictly feasible dual start; ``start``: a strictly feasible
    primal one, every b_i - a_i v > 0; ``newton(d, r)``: the dv with (A^T diag(d) A) dv =
    r). Returns the point and the Newton steps taken;
    SolverError if a start is not strictly feasible or the steps do not converge.

    >>> simplex = np.vstack([-np.eye(2), np.ones((1, 2))])      # v >= 0, v1 + v2 <= 1
    >>> v, _ = central_point(simplex, np.array([0.0, 0.0, 1.0]), np.array([1.0, 2.0, 1.0]),
    ...                      1.0, np.array([0.2, 0.2]), np.ones(3),    # c = 0: the centre
    ...                      dense_newton(simplex))
    >>> np.round(v, 12).tolist()
    [0.25, 0.5]
    """
    v, y = start.astype(float), duals.astype(float)
    s = b - a @ v
    dense = None
    if not (s > 0).all() or not (y > 0).all():
        raise SolverError("central point: the start is not strictly feasible")
    for step in range(1, MOST_STEPS + 1):
        present = float(y @ s / weights.sum())
        if present <= mu * (1 + CENTRED) and np.abs(y * s / (mu * weights) - 1).max() <= CENTRED:
            return v, step - 1
        aim = max(SHRINK * present, mu)
        g = (aim * weights - y * s) / s          # y ds + s dy = aim w - y s, ds = -A dv
        rhs = -(a.T @ g)
        dv = _direction(a, y / s, rhs, newton)
        if dv is None:      # the dense solve, here and (the steps only get stiffer) after
            newton = dense = dense or dense_newton(a)
            dv = dense(y / s, rhs)
        ds = -(a @ dv)
        dy = g - (y / s) * ds                     # A^T dy = 0: the duals stay feasible
        primal = _step_length(s, ds)
        v, s = v + primal * dv, s + primal * ds
        y = y + _step_length(y, dy) * dy
    raise SolverError(f"central point: no convergence in {MOST_STEPS} steps")
