"""A formulation as matrices, built by a model and solved by ``solvers.highs.solve_program``:
``max cost·x  s.t.  row_lower <= rows @ x <= row_upper,  col_lower <= x <= col_upper``, the
columns flagged in ``integer`` whole. Infinite bounds are ``numpy.inf``."""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np


@dataclass(frozen=True)
class MatrixProgram:
    cost: np.ndarray
    rows: np.ndarray | SparseRows
    row_lower: np.ndarray
    row_upper: np.ndarray
    col_lower: np.ndarray
    col_upper: np.ndarray
    integer: np.ndarray | None = None


@dataclass(frozen=True)
class SparseRows:
    """A constraint matrix by its nonzeros: entry (row[i], col[i]) is value[i], each entry at
    most once, for models whose dense matrix would not fit (jobs x types at 10,000 jobs)."""

    shape: tuple[int, int]
    row: np.ndarray
    col: np.ndarray
    value: np.ndarray
