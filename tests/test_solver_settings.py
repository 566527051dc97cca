"""Solver keywords (mip_gap, threads, log) in the API, their flags (--mip-gap, --threads,
-v) on the command line and in studies, and -q on every command."""

from __future__ import annotations

import io
import json

import highspy
import numpy as np
import pytest
from clitools import ROOT, cli, run, write

import fairalloc
from fairalloc.solvers import highs

MOLDABLE1 = str(ROOT / "specs" / "moldable" / "example1.json")
EMRF1 = str(ROOT / "specs" / "emrf" / "example1-knob0.5.json")
ACCELOS3 = str(ROOT / "specs" / "accelos" / "figure3.json")    # its `ilp` runs HiGHS's MIP


def knapsack(n: int = 60, seed: int = 3):
    """A 0/1 knapsack hard enough that HiGHS branches: (cost, row, capacity)."""
    rng = np.random.default_rng(seed)
    weight = rng.integers(20, 60, n).astype(float)
    value = weight + rng.integers(-5, 6, n)
    return value, weight[None, :], np.array([weight.sum() / 2 + 0.5])


def solve_knapsack(mip_gap: float | None):
    cost, rows, capacity = knapsack()
    n = cost.size
    return highs.solve_matrix(cost, rows, np.array([-highs.INF]), capacity, np.zeros(n),
                              np.ones(n), integer=np.ones(n, dtype=bool), mip_gap=mip_gap)


def test_a_looser_gap_than_the_methods_never_leaves_an_optimal_label():
    proven = solve_knapsack(0.0)
    assert proven.status == "optimal" and proven.gap == 0
    with highs.settings(mip_gap=0.5):
        loose = solve_knapsack(0.0)
    assert loose.objective <= proven.objective + 1e-9
    assert loose.gap is not None
    # optimal only when the run closed the gap the method asked for (0)
    assert (loose.status == "optimal") == (loose.gap <= 1e-12)
    assert loose.status in ("optimal", "feasible")


def solve_small_knapsack(mip_gap: float | None, scale: float):
    """The knapsack with its values in units of ``scale``."""
    cost, rows, capacity = knapsack()
    n = cost.size
    return highs.solve_matrix(cost * scale, rows, np.array([-highs.INF]), capacity,
                              np.zeros(n), np.ones(n), integer=np.ones(n, dtype=bool),
                              mip_gap=mip_gap)


@pytest.mark.parametrize("mip_gap", [1e-9, None])
@pytest.mark.parametrize("scale", [1e-6, 1e-7])
def test_optimal_never_comes_with_a_gap_above_the_methods(mip_gap, scale):
    """With values of 1e-7 HiGHS stops on its absolute tolerances and says optimal at a
    relative gap of 0.24%: the run is feasible, with that gap, where the method asked for
    less; with values of 1e-6 it proves the optimum."""
    run = solve_small_knapsack(mip_gap, scale)
    asked = highs.HIGHS_MIP_GAP if mip_gap is None else mip_gap
    assert run.status in ("optimal", "feasible") and run.gap is not None
    assert (run.status == "optimal") == (run.gap <= asked + 1e-12)
    if scale == 1e-6:
        assert run.status == "optimal"
        assert run.objective == pytest.approx(solve_knapsack(0.0).objective * scale, rel=1e-9)


def test_a_tighter_gap_keeps_the_methods_verdict():
    with highs.settings(mip_gap=0.0):
        assert solve_knapsack(None).status == "optimal"


def test_settings_nest_and_are_checked():
    with highs.settings(threads=1):
        with highs.settings(mip_gap=0.1) as inner:
            assert (inner.threads, inner.mip_gap, inner.log) == (1, 0.1, None)
    with pytest.raises(ValueError, match="threads must be a whole number"):
        with highs.settings(threads=0):
            pass
    with pytest.raises(ValueError, match=r"mip_gap must be a number in \[0, 1\)"):
        fairalloc.solve(MOLDABLE1, mip_gap=1.0)


def test_log_streams_the_highs_log_and_stdout_stays_clean(capfd):
    log = io.StringIO()
    result = fairalloc.solve(ACCELOS3, "ilp", log=log, threads=1)
    assert result.status == "optimal"
    assert "MIP has" in log.getvalue() and "Primal bound      1024" in log.getvalue()
    assert result.solver["extra"]["threads"] == 1
    out, err = capfd.readouterr()
    assert out == "" and err == ""
    fairalloc.solve(ACCELOS3, "ilp", threads=2)           # another pool size: no warning
    assert capfd.readouterr() == ("", "")


def test_log_takes_a_methods_own_search():
    """Moldable's `exact` proves Example 1 by its last jobs' search, without HiGHS: the log
    gets the search's bound, incumbent and gap."""
    log = io.StringIO()
    result = fairalloc.solve(MOLDABLE1, "exact", log=log)
    assert result.status == "optimal"
    assert "last 2 jobs searched: bound 13, incumbent 13, gap 0" in log.getvalue()


def test_compare_and_sweep_take_the_keywords():
    log = io.StringIO()
    rows = fairalloc.compare(EMRF1, ["lp", "drf"], log=log, threads=1)
    assert [name for name, _ in rows] == ["lp", "drf"] and "LP has" in log.getvalue()
    swept = fairalloc.sweep(EMRF1, "knob", [0.0, 1.0], "lp", mip_gap=0.01)
    assert [r.solver["extra"]["mip_gap"] for _, r in swept] == [0.01, 0.01]


@pytest.mark.slow
def test_verbose_sends_the_log_to_stderr_and_json_to_stdout():
    done = run("solve", ACCELOS3, "--method", "ilp", "-v", "--format", "json",
               "--threads", "1")
    assert done.returncode == 0
    assert json.loads(done.stdout)["status"] == "optimal"
    assert "MIP has" in done.stderr
    silent = run("solve", ACCELOS3, "--method", "ilp", "--format", "json")
    assert "MIP has" not in silent.stderr
    searched = run("solve", MOLDABLE1, "--method", "exact", "-v", "--format", "json")
    assert json.loads(searched.stdout)["status"] == "optimal"
    assert "jobs searched" in searched.stderr


@pytest.mark.slow
def test_verbose_reaches_study_tasks(tmp_path):
    done = run("sweep", EMRF1, "--set", "knob=0,1", "--method", "lp", "-v", "--workers", "1",
               "--format", "csv")
    assert done.returncode == 0 and "LP has" in done.stderr
    assert done.stdout.splitlines()[0].startswith("knob")


@pytest.mark.parametrize("argv, message", [
    (("--threads", "0"), "argument --threads"),
    (("--mip-gap", "1"), "a gap of 1 proves nothing"),
    (("--mip-gap", "nan"), "argument --mip-gap"),
])
def test_bad_solver_flags_exit_2(capsys, argv, message):
    code, out, err = cli(capsys, "solve", MOLDABLE1, *argv)
    assert code == 2 and out == "" and message in err


def test_a_study_carries_solver_settings(tmp_path, capsys):
    study = {"study": "settings", "kind": "moldable", "methods": ["exact"], "seed": 1,
             "instances": {"generate": {"jobs": 4, "processors": 4}, "count": 2},
             "solver": {"threads": 1, "mip_gap": 0.0}}
    store = tmp_path / "s.duckdb"
    code, _, _ = cli(capsys, "study", "run", write(tmp_path, study, "study.json"),
                     "--store", str(store), "--workers", "1", "-q")
    assert code == 0
    import duckdb

    with duckdb.connect(str(store), read_only=True) as db:
        assert db.execute("select count(*), min(status), max(status) from runs").fetchone() \
            == (2, "optimal", "optimal")
    bad = {**study, "solver": {"threads": 0, "gap": 1}}
    code, out, err = cli(capsys, "study", "run", write(tmp_path, bad, "bad.json"))
    assert code == 2 and out == ""
    assert "solver.threads" in err and "solver" in err and "gap" in err


def test_the_flags_override_the_study(tmp_path, capsys):
    from fairalloc import api
    from fairalloc.studies.store import Store

    study = write(tmp_path, {"study": "o", "kind": "drf", "methods": ["lp"],
                             "instances": {"generate": {"users": 3}, "count": 1},
                             "solver": {"threads": 2}}, "o.json")
    store = str(tmp_path / "o.duckdb")
    code, _, _ = cli(capsys, "study", "run", study, "--threads", "1", "--mip-gap", "0.1",
                     "--store", store, "--workers", "1")
    with Store(store, read_only=True) as db:
        assert code == 0 and db.study(None)["spec"]["solver"] == {"threads": 1, "mip_gap": 0.1}
    done = api.study_run(study, threads=1, mip_gap=0.1, workers=1)
    assert dict(done.study.solver) == {"threads": 1, "mip_gap": 0.1}


@pytest.mark.parametrize("argv", [("list",), ("schema", "drf"), ("new", "drf"),
                                  ("completion", "bash"), ("study", "run", "--help")])
def test_every_command_takes_v_and_q(capsys, argv):
    head, *rest = argv
    code, _, _ = cli(capsys, head, *rest[:1], "-q", "-v", *rest[1:])
    assert code == 0


def test_quiet_hides_the_notes(tmp_path, capsys):
    figure = str(tmp_path / "g.png")
    _, _, err = cli(capsys, "solve", MOLDABLE1, "--method", "gpusched2", "--plot", figure)
    assert "plot written to" in err
    _, _, err = cli(capsys, "solve", MOLDABLE1, "--method", "gpusched2", "--plot", figure, "-q")
    assert err == ""


def test_a_feasible_lp_presolve_calls_infeasible_is_solved():
    """max z over time fractions (two jobs, three types) with E_j >= z need_j: x = 0, z = 0 is
    feasible, yet HiGHS 1.16's presolve says infeasible (found by hetero's finish-time with its
    steps counted in half units); without presolve the LP solves."""
    from fairalloc.models.program import SparseRows

    row = [0, 0, 0, 1, 1, 1, 2, 3, 4, 2, 3, 4, 5, 5, 5, 6, 6, 6, 5, 6]
    col = [0, 1, 2, 3, 4, 5, 0, 1, 2, 3, 4, 5, 0, 1, 2, 3, 4, 5, 6, 6]
    value = [1.0] * 12 + [0.5, 0, 0, 0.5, 0, 0.5, -0.5000000019227305, -0.5000000596046519]
    rows = SparseRows((7, 7), np.array(row), np.array(col), np.array(value))
    cost = np.zeros(7)
    cost[6] = 1.0
    report = highs.solve_matrix(cost, rows, np.array([-highs.INF] * 5 + [0.0, 0.0]),
                                np.array([1.0, 1.0, 2.0, 2.0, 2.0, highs.INF, highs.INF]),
                                np.zeros(7), np.array([1.0, 0, 0, 1, 0, 1, highs.INF]))
    assert report.status == "optimal"
    assert report.objective == pytest.approx(0.5 / 0.5000000596046519, rel=1e-9)


class StopsOnce:
    """A loaded HiGHS LP whose first run, from a kept basis, ends in ``kUnknown`` (as HiGHS
    1.16's simplex did on finish-time's LP of figure 9 at 2.6 jobs/h) and whose runs after
    ``clearSolver`` are the real ones."""

    def __init__(self, h):
        self.h, self.cleared = h, False

    def __getattr__(self, name):
        return getattr(self.h, name)

    def clearSolver(self):      # noqa: N802 (highspy's name)
        self.cleared = True
        self.h.clearSolver()

    def getModelStatus(self):   # noqa: N802
        return self.h.getModelStatus() if self.cleared else highspy.HighsModelStatus.kUnknown


def test_an_lp_that_stops_without_a_verdict_from_its_basis_is_run_from_scratch():
    h = highspy.Highs()
    h.setOptionValue("output_flag", False)
    h.addVars(2, np.zeros(2), np.full(2, 1.0))
    h.changeColsCost(2, np.arange(2, dtype=np.int32), np.array([-1.0, -2.0]))
    h.addRow(-highs.INF, 1.5, 2, np.arange(2, dtype=np.int32), np.ones(2))
    stub = StopsOnce(h)
    report = highs.run_loaded(stub)
    assert stub.cleared and report.status == "optimal"
    assert report.objective == pytest.approx(-2.5)
