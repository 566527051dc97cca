"""The central path's point (``fairalloc.solvers.centre``) on LPs whose point is known in
closed form."""

from __future__ import annotations

import numpy as np
import pytest

from fairalloc.errors import SolverError
from fairalloc.solvers.centre import central_point, dense_newton

# the simplex {v >= 0, v1 + v2 + v3 <= 1}: rows -v_i <= 0, then the sum
SIMPLEX = np.vstack([-np.eye(3), np.ones((1, 3))])
SIMPLEX_B = np.array([0.0, 0.0, 0.0, 1.0])


@pytest.mark.parametrize("weights", [[1, 1, 1, 1], [1, 2, 3, 4], [5, 1, 1, 100]])
def test_with_no_objective_it_is_the_weighted_analytic_centre(weights):
    """c = 0 (duals with A^T y = 0): maximising sum_i w_i log v_i + w_0 log(1 - sum v) gives
    v_i = w_i / sum w (each partial derivative 0), whatever the start and mu."""
    w = np.array(weights, dtype=float)
    for start, mu in (([0.1, 0.1, 0.1], 1.0), ([0.01, 0.9, 0.05], 1e-3), ([0.3] * 3, 7.0)):
        point, _ = central_point(SIMPLEX, SIMPLEX_B, w, mu, np.array(start), np.ones(4),
                                 dense_newton(SIMPLEX))
        np.testing.assert_allclose(point, w[:3] / w.sum(), rtol=1e-9)


@pytest.mark.parametrize("mu", [1.0, 1e-3, 1e-9])
def test_the_path_of_max_v1_on_the_interval(mu):
    """max v s.t. 0 <= v <= 1 (rows -v <= 0, v <= 1; c = 1 = -y_1 + y_2): the path's point
    maximises v + mu (log v + log(1 - v)), 1 + mu/v - mu/(1 - v) = 0, so
    v^2 - (1 - 2 mu) v - mu = 0, v = (1 - 2 mu + sqrt(1 + 4 mu^2)) / 2: within 2 mu of the
    optimum 1, as the gap says."""
    a = np.array([[-1.0], [1.0]])
    point, _ = central_point(a, np.array([0.0, 1.0]), np.ones(2), mu, np.array([0.5]),
                             np.array([1.0, 2.0]), dense_newton(a))
    exact = (1 - 2 * mu + np.sqrt(1 + 4 * mu * mu)) / 2
    assert point[0] == pytest.approx(exact, rel=1e-9)
    assert 1 - point[0] <= 2 * mu


def test_a_start_outside_is_refused():
    with pytest.raises(SolverError, match="not strictly feasible"):
        central_point(SIMPLEX, SIMPLEX_B, np.ones(4), 1.0, np.array([0.5, 0.5, 0.0]),
                      np.ones(4), dense_newton(SIMPLEX))


@pytest.mark.parametrize("broken", ["raises", "wrong", "nan"])
def test_a_structured_solve_that_fails_or_loses_its_digits_is_replaced(broken):
    """A structured Newton solve that divides by a block singular to rounding (seen on
    figure 9 at 2.8-3.0 jobs/hour: a class at its level, its other rows nearly slack) raises,
    or returns a direction whose residual shows it wrong: the dense solve stands in, and the
    point is the same."""
    def newton(d, r):
        if broken == "raises":
            raise np.linalg.LinAlgError("Singular matrix")
        return np.full(r.shape, np.nan) if broken == "nan" else r * 1e3

    w = np.array([1.0, 2.0, 3.0, 4.0])
    point, _ = central_point(SIMPLEX, SIMPLEX_B, w, 1.0, np.array([0.2, 0.2, 0.2]),
                             np.ones(4), newton)
    np.testing.assert_allclose(point, w[:3] / w.sum(), rtol=1e-9)


def test_after_a_failed_structured_solve_the_dense_one_takes_every_later_step():
    """The steps only get stiffer towards the optimum: once the structured solve is not
    trusted, it is not asked again within the same point (each failure cost a solve and a
    residual, and on figure 9 at 2.8 jobs/hour most steps of a late allocation failed)."""
    calls = []

    def newton(d, r):
        calls.append(1)
        raise np.linalg.LinAlgError("Singular matrix")

    central_point(SIMPLEX, SIMPLEX_B, np.ones(4), 1e-6, np.array([0.2, 0.2, 0.2]),
                  np.ones(4), newton)
    assert len(calls) == 1


@pytest.mark.parametrize("density", [0.15, 0.6], ids=["sparse-rows", "dense-rows"])
def test_the_dense_solve_is_exact_on_a_system_scaled_as_at_the_optimum(density):
    """Rows at their bound weigh up to 1e18 more than slack ones near the optimum; the
    assembled matrix (summed from the rows' nonzeros, or a dense product where the rows'
    pairs of nonzeros outnumber the cells) is solved to the residual that the structured
    solve is held to, and a column no row touches stays at 0."""
    rng = np.random.default_rng(3)
    a = rng.normal(size=(30, 8)) * (rng.random((30, 8)) < density)
    a[:, 5] = 0.0                                          # a variable held at 0
    d = 10.0 ** rng.uniform(-10, 8, 30)
    r = rng.normal(size=8)
    r[5] = 0.0
    dv = dense_newton(a)(d, r)
    matrix = a.T @ (a * d[:, None])
    kept = np.arange(8) != 5
    assert np.linalg.norm(matrix @ dv - r) <= 1e-8 * np.linalg.norm(r)
    assert dv[5] == 0.0
    np.testing.assert_allclose(matrix[np.ix_(kept, kept)] @ dv[kept], r[kept],
                               rtol=0, atol=1e-8 * np.linalg.norm(r))
