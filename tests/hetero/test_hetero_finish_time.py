"""hetero ``finish-time`` with finished jobs (steps_remaining 0): they have no finish-time
ratio, the largest ratio is over the others, and a spec where every job has finished is
refused with its path; its LPs' duals narrow the bracket on rho to bisection's answer in a
few LPs."""

from __future__ import annotations

import dataclasses
import itertools

import numpy as np
import pytest
from clitools import cli, write
from hypothesis import given, settings
from hypothesis import strategies as st

import fairalloc
from fairalloc.models.hetero import (
    FINISH_TOLERANCE,
    effective,
    eligible,
    finish_time_ratio,
    isolated_program,
    isolated_share,
    isolated_throughput,
    largest_finish_time_ratio,
    max_min_lp,
    time_of,
    unfinished,
)
from fairalloc.solvers.hetero import _solve, finish_time
from fairalloc.studies.hetero import random_spec

TWO_JOBS = [{"id": "a", "throughput": {"k80": 2, "v100": 3},
             "steps_remaining": 500, "time_elapsed": 400},
            {"id": "b", "throughput": {"k80": 1, "v100": 5},
             "steps_remaining": 900, "time_elapsed": 50}]


def with_finished(elapsed: float) -> dict:
    """The two jobs and a third, finished one (it still counts in the isolated share)."""
    done = {"id": "c", "throughput": {"k80": 4, "v100": 4}, "steps_remaining": 0,
            "time_elapsed": elapsed}
    return {"problem": "hetero", "workers": {"k80": 1, "v100": 1}, "jobs": TWO_JOBS + [done]}


def grid_optimum(spec: dict) -> float:
    """The largest ratio of a and b minimised over a grid of a's split of both GPUs, b filling
    its best type first from what is left, c nothing (its ratio counts for nothing): within
    the grid's step above the optimum."""
    p = fairalloc.load_spec(spec).problem
    grid = np.linspace(0, 1, 401)
    order = np.argsort(-p.throughput[1])
    best = np.inf
    for a_k80, a_v100 in itertools.product(grid, grid):
        if a_k80 + a_v100 > 1:
            continue
        left, room, b = np.array([1 - a_k80, 1 - a_v100]), 1.0, np.zeros(2)
        for k in order:
            b[k] = min(left[k], room)
            room -= b[k]
        x = np.array([[a_k80, a_v100], b, [0.0, 0.0]])
        best = min(best, finish_time_ratio(p, (p.throughput * x).sum(axis=1))[:2].max())
    return best


@pytest.mark.slow
@pytest.mark.parametrize("elapsed", [0.0, 300.0])
def test_a_finished_job_counts_in_no_ratio(elapsed):
    """At t = 0 a finished job's ratio was 0/0, the bisection never ran and the isolated share
    came back optimal at 1; at t > 0 its ratio is 1 whatever the allocation, and the largest
    ratio could not go below it."""
    spec = with_finished(elapsed)
    result = fairalloc.solve(spec, "finish-time")
    rho = result.metrics["max_finish_time_ratio"]
    best = grid_optimum(spec)
    assert result.status == "optimal" and result.solver["extra"]["steps"] > 0
    assert best - 0.01 <= rho <= best + 1e-9 and rho < 0.99
    assert result.solver["extra"]["rho"] == pytest.approx(rho, rel=1e-9)
    assert result.metrics["finish_time_bound"] <= rho


def test_every_job_finished_is_refused(tmp_path, capsys):
    spec = with_finished(0.0)
    spec["jobs"] = [job | {"steps_remaining": 0} for job in spec["jobs"]]
    code, _, err = cli(capsys, "solve", write(tmp_path, spec), "--method", "finish-time")
    assert code == 2 and "jobs: finish-time: every job has steps_remaining 0" in err
    assert "max_finish_time_ratio" not in fairalloc.solve(spec, "max-min").metrics


def bisected(p, steps: int = 60) -> tuple[float, float]:
    """The optimal largest ratio bracketed by plain bisection on rho, one LP each step
    (finish-time's algorithm before its dual bounds): [rho proven infeasible, rho feasible]."""
    done = ~unfinished(p)
    program = isolated_program(p)
    alone = p.steps / isolated_throughput(p)
    denominator = p.elapsed + alone
    lo = float(np.max(p.elapsed[~done] / denominator[~done]))
    hi = largest_finish_time_ratio(p, effective(p, isolated_share(p)))
    for _ in range(steps):
        rho = (lo + hi) / 2
        slack = np.where(done, 1.0, rho * denominator - p.elapsed)
        if _solve(max_min_lp(program, alone / slack, {})).objective >= 1.0:
            hi = rho
        else:
            lo = rho
    return lo, hi


@st.composite
def finish_time_specs(draw) -> dict:
    """Gavel's jobs at random scale factors, steps and time elapsed (``random_spec``), some
    of them finished (steps_remaining 0), weighted or not, on 1 to 6 GPUs of each type."""
    spec = random_spec(draw(st.integers(0, 10_000)), jobs=draw(st.integers(1, 30)),
                       workers=draw(st.integers(1, 6)), weighted=draw(st.booleans()))
    finished = draw(st.sets(st.integers(0, len(spec["jobs"]) - 1),
                            max_size=len(spec["jobs"]) - 1))
    for i in finished:
        spec["jobs"][i]["steps_remaining"] = 0
    return spec


@settings(max_examples=25, deadline=None)
@given(finish_time_specs())
def test_dual_bounds_reach_bisections_rho_in_a_few_lps(spec):
    """Each LP's duals prove a lower end of the bracket (weak duality) and its point an upper
    one: the same rho as bisection's to the tolerance, its bound below bisection's feasible
    end, in a few LPs where bisection to 1e-9 took 23 on average (Gavel's figure-8 replay)."""
    p = fairalloc.load_spec(spec).problem
    result = finish_time(p)
    lo, hi = bisected(p)
    rho, bound = result.solver["rho"], result.metrics["finish_time_bound"]
    assert result.status == "optimal"
    assert bound <= hi * (1 + 1e-12) and rho >= lo * (1 - 1e-12)     # floats: 1e-16
    assert rho == pytest.approx(hi, rel=2 * FINISH_TOLERANCE)
    assert largest_finish_time_ratio(p, effective(p, time_of(p, result.allocation))) \
        == pytest.approx(rho, rel=1e-12)
    assert result.solver["steps"] <= 12


@pytest.mark.parametrize("seed", range(6))
def test_no_gpu_idles_that_a_job_below_its_whole_time_could_use(seed):
    """Beyond the largest ratio, the most total normalised throughput: a job short of its
    whole time runs only on types whose GPUs are all taken, also where a job that waited
    (isolated time 0 against hours elapsed, Gavel's denominator in a replay) sets the
    largest ratio far above the others' (the minimax's vertex gave the others only what
    they needed to reach it), and the largest ratio is the minimax's."""
    spec = random_spec(seed, jobs=6, workers=8)
    p = fairalloc.load_spec(spec).problem
    waited = np.where(np.arange(p.n) == 0, 0.0, p.elapsed)
    for problem in (p, dataclasses.replace(p, isolated_time=waited)):
        solution = finish_time(problem)
        x = time_of(problem, solution.allocation)
        full = (problem.scale[:, None] * x).sum(axis=0) >= problem.workers * (1 - 1e-7)
        for j in np.flatnonzero(x.sum(axis=1) < 1 - 1e-7):
            assert full[x[j] > 1e-9].all() and full[eligible(problem)[j]].all(), (seed, j)
        assert solution.status == "optimal"
        assert largest_finish_time_ratio(problem, effective(problem, x)) == pytest.approx(
            solution.solver["rho"], rel=1e-9)
