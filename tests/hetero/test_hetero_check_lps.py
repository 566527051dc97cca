"""The hetero checks solve their LPs as the methods do: the interior point method from the
kind's size (``interior_pays``), where the dual simplex takes 10-25 times longer."""

from __future__ import annotations

import pytest

import fairalloc
import fairalloc.validators.hetero as checks
from fairalloc.studies.hetero import random_spec

JOBS = 700       # x 3 types: more LP columns than ``models.hetero.INTERIOR_FROM``


@pytest.mark.parametrize("check", ["max_min", "pareto_efficiency"])
def test_a_large_check_lp_goes_to_the_interior_point_method(check, monkeypatch):
    spec = fairalloc.load_spec(random_spec(7, jobs=JOBS, workers=60))
    result = fairalloc.solve(spec, validate=False)
    asked = []

    def solve_matrix(*parts, **options):
        asked.append(options.get("interior", False))
        return real(*parts, **options)

    real = checks.solve_matrix
    monkeypatch.setattr(checks, "solve_matrix", solve_matrix)
    assert getattr(checks, check)(spec.problem, result.allocation).verdict == "holds"
    assert asked and all(asked)
