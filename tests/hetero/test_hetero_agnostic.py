"""``agnostic-max-min`` by progressive filling gives every job the level that water filling by
LPs gives it (the leximin of t_j / (w_j t_j^iso) is unique), meets the max-min fairness
certificate of fixed routes (each job capped or on a full type where no job is higher), and
solves no LP: many identical jobs tied at a level freeze in one phase."""

from __future__ import annotations

import numpy as np
import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from fairalloc.errors import Violations
from fairalloc.models.hetero import HeteroProblem, agnostic_program, isolated_share, time_of
from fairalloc.solvers import hetero as solvers
from fairalloc.studies.hetero import random_spec

TYPES = ("k80", "p100", "v100")
LP_RTOL = 1e-6          # the LPs meet their rows to HiGHS's 1e-7, in shares
CLOSE = 1e-9


@st.composite
def tied_specs(draw) -> dict:
    """1 to 4 kinds of job, each repeated 1 to 15 times (identical jobs tie at every level):
    throughput 0 on some types (each kind runs on the first type), scale factors 1..8, weights
    1..3; 1 to 3 types of 0 to 40 GPUs (the first at least 8, so every job fits)."""
    types = TYPES[:draw(st.integers(1, 3))]
    workers = {t: draw(st.integers(0, 40)) for t in types}
    workers[types[0]] = draw(st.integers(8, 40))
    jobs = []
    for kind in range(draw(st.integers(1, 4))):
        row = {t: draw(st.sampled_from([0, 1, 7])) for t in types}
        row[types[0]] = draw(st.integers(1, 9))
        job = {"throughput": row, "scale_factor": draw(st.sampled_from([1, 2, 4, 8])),
               "weight": draw(st.integers(1, 3))}
        jobs += [{"id": f"k{kind}-{i}", **job} for i in range(draw(st.integers(1, 15)))]
    return {"problem": "hetero", "workers": workers, "jobs": jobs}


def problem_of(spec: dict) -> HeteroProblem:
    found = Violations()
    p = HeteroProblem.from_spec(spec, found)
    assert p is not None, found.items
    return p


def reference_of(p: HeteroProblem) -> np.ndarray:
    return p.weights * isolated_share(p).sum(axis=1)


def filled_levels(p: HeteroProblem) -> np.ndarray:
    """Each job's t_j / (w_j t_j^iso) under ``agnostic-max-min``."""
    t = time_of(p, solvers.agnostic_max_min(p).allocation).sum(axis=1)
    return t / reference_of(p)


def lp_levels(p: HeteroProblem) -> np.ndarray:
    """The same by water filling with one max-min LP a round (the LP reference)."""
    t, _ = solvers.water_fill(p, agnostic_program(p), reference_of(p))
    return t / reference_of(p)


def bottleneck_refuted(p: HeteroProblem) -> list[str]:
    """Jobs that break max-min fairness with fixed routes (Bertsekas and Gallager): each job
    must be at its cap t_j = 1 or use a full type on which no job has a higher level; and no
    type may be over-full."""
    x = time_of(p, solvers.agnostic_max_min(p).allocation)
    t, level = x.sum(axis=1), filled_levels(p)
    used = (p.scale[:, None] * x).sum(axis=0)
    problems = [f"type {p.types[k]} over-full" for k in range(p.k)
                if used[k] > p.workers[k] * (1 + CLOSE)]
    full = used >= p.workers * (1 - CLOSE)
    for j in range(p.n):
        on = (x[j] > 0) & full
        highest = [level[j] >= level[x[:, k] > 0].max() * (1 - CLOSE)
                   for k in np.flatnonzero(on)]
        if t[j] < 1 - CLOSE and not any(highest):
            problems.append(f"job {p.ids[j]} has no bottleneck")
    return problems


@settings(max_examples=60, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(tied_specs())
def test_progressive_filling_reaches_the_water_filling_levels(spec):
    p = problem_of(spec)
    np.testing.assert_allclose(filled_levels(p), lp_levels(p), rtol=LP_RTOL)
    assert bottleneck_refuted(p) == []


@pytest.mark.parametrize("seed", range(4))
@pytest.mark.parametrize("jobs,workers", [(60, 12), (60, 60), (150, 30)])
def test_random_mixes_of_gavels_jobs_match_water_filling(seed, jobs, workers):
    """Gavel's measured jobs at scale factors 1-8: few GPUs (every job under its cap), as
    many as jobs (every job capped at t_j = 1, all tied) and between."""
    p = problem_of(random_spec(seed, jobs=jobs, workers=workers))
    np.testing.assert_allclose(filled_levels(p), lp_levels(p), rtol=LP_RTOL)
    assert bottleneck_refuted(p) == []


def test_identical_jobs_need_no_lp(monkeypatch):
    """300 identical jobs tied at the cap (water filling by LPs froze one a round: 300 LPs)
    and 300 tied on a full type: no LP at all."""
    def no_lp(*_args, **_kwargs):
        raise AssertionError("agnostic-max-min solved an LP")

    monkeypatch.setattr(solvers, "solve_matrix", no_lp)
    for workers in (400, 100):
        p = problem_of({"problem": "hetero", "workers": {"k80": workers, "v100": workers},
                        "jobs": [{"id": f"j{i}", "throughput": {"k80": 1, "v100": 3}}
                                 for i in range(300)]})
        t = time_of(p, solvers.agnostic_max_min(p).allocation).sum(axis=1)
        np.testing.assert_allclose(t, min(1.0, 2 * workers / 300), rtol=CLOSE)
