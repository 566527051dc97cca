"""The hetero checks at the cost of the solves they judge: their LPs solved as the methods
solve theirs (the interior point method from the kind's size, ``interior_pays``, where the
dual simplex takes 10-25 times longer), and a probe whose re-runs shrink with the size."""

from __future__ import annotations

import pytest

import fairalloc
import fairalloc.checks.hetero as checks
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


def test_the_probe_re_runs_fewer_times_on_a_large_spec():
    """Each re-run costs a solve: at 50 jobs the probe makes PROBE_WORK / 50 = 2 of them,
    not 24 (so that the checks stay within 3x the solve), and says so."""
    from fairalloc.solvers.hetero import max_min

    spec = fairalloc.load_spec(random_spec(3, jobs=50, workers=12))
    result = fairalloc.solve(spec, validate=False)
    runs = []

    def counted(problem):
        runs.append(problem)
        return max_min(problem)

    found = checks.strategy_proofness(spec.problem, result.allocation, mechanism=counted)
    assert len(runs) == 2
    assert "of 50 jobs" in found.detail and "at most 2 re-runs" in found.detail
