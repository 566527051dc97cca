"""The fast paths of a replay give the answers of the plain ones: hetero's max-min level LP
with identical jobs merged (``merged_jobs``) against the LP over every job, and the rounds'
vectorised placement against the rule spelled out."""

from __future__ import annotations

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from fairalloc.errors import Violations
from fairalloc.models.hetero import (
    HeteroProblem,
    gavel_reference,
    isolated_throughput,
    level_program,
    max_min_lp,
    merged_jobs,
)
from fairalloc.replay.hetero import Cluster, Jobs, Rounds
from fairalloc.solvers import hetero as solvers

TYPES = ("k80", "p100", "v100")
LP_TOLERANCE = 1e-7         # HiGHS meets rows to 1e-7


@st.composite
def repeated_jobs(draw) -> HeteroProblem:
    """1 to 6 kinds of job, each repeated 1 to 12 times: throughputs 0..9 on some types,
    scale factors 1..4, weights 1..3, on 4 to 30 GPUs of each type."""
    workers = {t: draw(st.integers(4, 30)) for t in TYPES}
    jobs = []
    for kind in range(draw(st.integers(1, 6))):
        row = {t: draw(st.integers(0, 9)) for t in TYPES}
        row["v100"] = draw(st.integers(1, 9))
        job = {"throughput": row, "scale_factor": draw(st.sampled_from([1, 2, 4])),
               "weight": draw(st.integers(1, 3))}
        jobs += [{"id": f"k{kind}-{i}", **job} for i in range(draw(st.integers(1, 12)))]
    order = draw(st.permutations(range(len(jobs))))
    spec = {"workers": workers, "jobs": [jobs[i] for i in order]}
    return HeteroProblem.from_spec(spec, Violations())


def _twelve_jobs_of_three_kinds() -> HeteroProblem:
    kinds = [{"k80": 1, "p100": 2, "v100": 4}, {"k80": 1, "p100": 1, "v100": 1},
             {"k80": 0, "p100": 3, "v100": 9}]
    return HeteroProblem.from_spec({"workers": {"k80": 2, "p100": 2, "v100": 2}, "jobs": [
        {"id": f"j{i}", "throughput": kinds[i % 3]} for i in range(12)]}, Violations())


@settings(max_examples=40, deadline=None)
@given(repeated_jobs(), st.sampled_from(["gavel", "isolated"]))
def test_merged_level_lp_is_the_full_lps(p, reference):
    """The level of the LP over classes of identical jobs is the LP's over every job; its
    variables, each job its class's, meet the full LP's rows at that level; its duals on
    the level rows add up as the full LP's (sum_j ref_j y_j = -1 at a maximum)."""
    program = level_program(p, gavel_reference(p) if reference == "gavel" else None)
    ones = np.ones(p.n)
    full = solvers._solve(max_min_lp(program, ones, {}))
    z, v, duals = solvers.max_min_value(p, program, ones)
    assert z == pytest.approx(full.objective, rel=1e-9)
    rows = program.rows
    used = np.bincount(rows.row, weights=rows.value * v[rows.col], minlength=rows.shape[0])
    assert np.all(used <= program.rhs + LP_TOLERANCE)
    assert np.all((v >= -LP_TOLERANCE) & (v <= program.upper + LP_TOLERANCE))
    g = program.gains
    utility = np.bincount(g.row, weights=g.value * v[g.col], minlength=p.n)
    assert np.all(utility >= z * (1 - LP_TOLERANCE))
    assert duals.sum() == pytest.approx(full.row_dual[rows.shape[0]:].sum(), rel=1e-6)


def test_the_level_lp_has_one_job_per_class(monkeypatch):
    """12 jobs of 3 kinds: the level LP HiGHS sees has 3 jobs (3 x 3 + 1 columns), not 12
    (an LP of 100-300 jobs was 60% of the aware replay's time)."""
    p = _twelve_jobs_of_three_kinds()
    columns = []
    load = solvers.load_matrix
    monkeypatch.setattr(solvers, "load_matrix",
                        lambda cost, *a, **k: columns.append(cost.size) or load(cost, *a, **k))
    solvers.max_min_value(p, level_program(p), np.ones(p.n))
    assert columns == [3 * 3 + 1]
    merged = merged_jobs(level_program(p), np.ones(p.n))
    assert merged.counts.tolist() == [4, 4, 4] and merged.group.tolist() == [
        merged.group[i % 3] for i in range(12)]


def test_each_job_gets_its_class_variables():
    """Four identical jobs on three V100s, one class in the LP: each job 3/4 of a GPU, its
    isolated share (level 1)."""
    p = HeteroProblem.from_spec({"workers": {"v100": 3}, "jobs": [
        {"id": f"j{i}", "throughput": {"v100": 2.0}} for i in range(4)]}, Violations())
    z, v, _ = solvers.max_min_value(p, level_program(p), np.ones(p.n))
    assert z == pytest.approx(1.0) and v == pytest.approx(np.full(4, 0.75))
    assert isolated_throughput(p) == pytest.approx(np.full(4, 1.5))


def placed_by_sorting(r: Rounds, active: np.ndarray) -> list[int]:
    """Gavel's placement spelled out: per type in the policy's order, the unplaced jobs that
    run there sorted by (priority, deficit, x) highest first, then arrival, each taking its
    scale factor's workers while they last; a job outside the allocation placed nowhere."""
    placed = [-1] * active.size
    for k in r.order:
        left = r.c.workers[k]
        ranked = sorted((i for i in range(active.size) if placed[i] < 0
                         and r.j.throughput[active[i], k] > 0),
                        key=lambda i: (-priority(r, active[i], k), -r.deficit[active[i], k],
                                       -allotted(r, active[i], k), i))
        for i in ranked:
            if r.j.scale[active[i]] <= left:
                placed[i] = k
                left -= r.j.scale[active[i]]
    return [p if r.allocated[a] else -1 for p, a in zip(placed, active)]


def allotted(r: Rounds, job: int, k: int) -> float:
    return r.x[job, k] if r.allocated[job] else 0.0


def priority(r: Rounds, job: int, k: int) -> float:
    x = allotted(r, job, k)
    return x / r.time[job, k] if x > 0 and r.j.throughput[job, k] > 0 else 0.0


@settings(max_examples=60, deadline=None)
@given(st.data())
def test_rounds_place_jobs_as_sorting_does(data):
    """The rounds' vectorised placement (``Rounds._place``, aware order) against the rule
    spelled out with Python's sort, with ties everywhere (few distinct values): the same
    type for every job."""
    n = data.draw(st.integers(1, 25))
    small = st.sampled_from([0.0, 0.5, 1.0])
    cluster = Cluster(TYPES, np.array([data.draw(st.integers(0, 6)) for _ in TYPES], float))
    throughput = np.array([[data.draw(small) for _ in TYPES] for _ in range(n)])
    throughput[:, 2] += 1.0                      # every job runs on the V100
    scale = np.array([data.draw(st.sampled_from([1.0, 1.0, 2.0])) for _ in range(n)])
    jobs = Jobs(np.array([f"j{i}" for i in range(n)], dtype=object), throughput, scale,
                np.ones(n), np.ones(n))
    r = Rounds(cluster, jobs, None, aware=True)
    r.x = np.array([[data.draw(small) for _ in TYPES] for _ in range(n)])
    r.time = np.array([[data.draw(st.sampled_from([180.0, 360.0])) for _ in TYPES]
                       for _ in range(n)])
    r.deficit = np.array([[data.draw(small) for _ in TYPES] for _ in range(n)])
    r.allocated = np.array([data.draw(st.booleans()) for _ in range(n)])
    active = np.array(sorted(data.draw(st.sets(st.integers(0, n - 1), min_size=1))))
    placed, _ = r._place(active)
    assert placed.tolist() == placed_by_sorting(r, active)


def test_the_second_stage_lp_has_one_job_per_class(monkeypatch):
    """Gavel's max-min solves its level and then the max-sum at that level (``above_level``)
    over the same 3 classes, not 12 jobs (the max-sum was 45% of the aware replay's CPU),
    and the total equals the max-sum LP's over every job."""
    p = _twelve_jobs_of_three_kinds()
    columns = {"level": [], "sum": []}
    load, solve = solvers.load_matrix, solvers.solve_matrix
    monkeypatch.setattr(solvers, "load_matrix", lambda cost, *a, **k: columns["level"].append(
        cost.size) or load(cost, *a, **k))
    monkeypatch.setattr(solvers, "solve_matrix", lambda cost, *a, **k: columns["sum"].append(
        cost.size) or solve(cost, *a, **k))
    result = solvers.max_min(p)
    assert columns == {"level": [3 * 3 + 1], "sum": [3 * 3]}
    program = level_program(p, gavel_reference(p))
    z = result.metrics["gavel_level"] * solvers.weight_unit(p)
    weights = solvers.relative_weights(p)
    floor = np.full(p.n, z * (1 - solvers.LEVEL_SLACK))
    full = solvers._solve(solvers.sum_lp(program, weights, floor))
    x = np.column_stack([np.asarray(result.allocation.column("time", t), dtype=float)
                         for t in p.types])
    gains = program.gains
    got = np.bincount(gains.row, weights=gains.value * x.ravel()[gains.col], minlength=p.n)
    assert got @ weights == pytest.approx(full.objective, rel=1e-7)
    assert (got >= z * (1 - 1e-7)).all()
