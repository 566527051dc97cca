"""A method's ``time_limit`` covers the whole method: every HiGHS run of it gets the limit less
what the method has spent so far (its heuristics, searches, model building and earlier rounds),
so that its own ``time_s`` stays within the limit plus one last run's overshoot.

Checked on the values passed, under a fake clock that moves only when the test says a step
took time: no timed assert on a loaded machine."""

from __future__ import annotations

import time

import pytest
from clitools import ROOT

from fairalloc import api
from fairalloc.solvers import accelos, drf, emrf, etf, highs, moldable

SPECS = ROOT / "specs"
LIMIT = 10.0


class Clock:
    """``time.perf_counter`` standing still until a step is said to take time."""

    def __init__(self) -> None:
        self.now = 1000.0

    def __call__(self) -> float:
        return self.now


@pytest.fixture
def clock(monkeypatch) -> Clock:
    fake = Clock()
    monkeypatch.setattr(time, "perf_counter", fake)
    return fake


def taking(clock: Clock, seconds: float, run, passed: list | None = None):
    """``run`` as a step that takes ``seconds``; ``passed`` collects its ``time_limit``."""
    def step(*args, **kwargs):
        if passed is not None:
            passed.append(kwargs.get("time_limit"))
        clock.now += seconds
        return run(*args, **kwargs)
    return step


def problem(path: str):
    return api.load_spec(str(SPECS / path)).problem


def test_moldable_exact_gives_the_milp_what_its_search_and_model_left(clock, monkeypatch):
    passed = []
    monkeypatch.setattr(moldable, "tail_search", lambda p, bound, best, until: (bound, best, 0))
    monkeypatch.setattr(moldable, "exact_model", taking(clock, 1.5, moldable.exact_model))
    monkeypatch.setattr(moldable, "solve_pyomo", taking(
        clock, 0, lambda model, **_: highs.Report("time_limit", None, 0.0), passed))
    solution = moldable.exact(problem("moldable/gpu-mix.json"), time_limit=LIMIT)
    assert passed == [LIMIT - 1.5]        # building the model counts
    assert solution.status == "time_limit"


def test_accelos_ilp_gives_round_two_what_round_one_left(clock, monkeypatch):
    passed = []
    monkeypatch.setattr(accelos, "max_min_level", taking(clock, 2, accelos.max_min_level))
    monkeypatch.setattr(accelos, "solve_program", taking(clock, 0, accelos.solve_program,
                                                         passed))
    accelos.ilp(problem("accelos/figure3.json"), time_limit=LIMIT)
    assert passed == [LIMIT - 2]


def test_emrf_lp_gives_each_lp_what_the_ones_before_left(clock, monkeypatch):
    passed = []
    monkeypatch.setattr(emrf, "solve_pyomo", taking(clock, 1, emrf.solve_pyomo, passed))
    monkeypatch.setattr(emrf, "solve_wide", taking(clock, 1, emrf.solve_wide, passed))
    emrf.knob_policy(problem("emrf/example1-knob0.5.json"), time_limit=LIMIT)
    assert len(passed) >= 2 and passed == [LIMIT - i for i in range(len(passed))]


def test_etf_milp_gives_each_round_what_the_rounds_before_left(clock, monkeypatch):
    passed = []
    monkeypatch.setattr(etf, "solve_matrix", taking(clock, 1, etf.solve_matrix, passed))
    etf.leximin_milp(problem("etf/example.json"), time_limit=LIMIT)
    assert len(passed) >= 2 and passed == [LIMIT - i for i in range(len(passed))]


def test_drf_lp_counts_building_its_model(clock, monkeypatch):
    passed = []
    built = drf.MatrixRounds.__init__
    monkeypatch.setattr(drf.MatrixRounds, "__init__", taking(clock, 3, built))
    monkeypatch.setattr(drf, "run_loaded", taking(clock, 0, drf.run_loaded, passed))
    drf.leximin_lp(problem("drf/classic.json"), time_limit=LIMIT)
    assert passed and passed[0] == LIMIT - 3


def test_a_passed_deadline_leaves_nothing(clock):
    until = highs.deadline(2.0)
    clock.now += 5
    assert highs.seconds_left(until) == 0.0 and highs.seconds_left(None) is None
