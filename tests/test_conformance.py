"""The conformance battery (tests/conformance.py) over every kind, and the battery refuting
records broken the ways a kind's author breaks them."""

from __future__ import annotations

import dataclasses
from pathlib import Path

import pytest
from conformance import CHECKS, check_kind

import fairalloc
from fairalloc.allocation import Allocation
from fairalloc.registry import KINDS, shipped_kinds
from fairalloc.result import Solution

ROOT = Path(__file__).resolve().parents[1]

# (kind, check) -> why it fails: defects the battery found in a shipped kind, left to the
# kind's owner; strict, so a fixed kind makes its entry fail until it is removed
KNOWN_DEFECTS: dict[tuple[str, str], str] = {}

CASES = [pytest.param(kind, name, check, id=f"{kind}-{name}",
                      marks=[pytest.mark.xfail(strict=True, raises=AssertionError,
                                               reason=KNOWN_DEFECTS[kind, name])]
                      if (kind, name) in KNOWN_DEFECTS else [])
         for kind in KINDS for name, check in check_kind(kind)]


@pytest.mark.parametrize("kind, name, check", CASES)
def test_kind_conforms(kind, name, check):
    check()


def test_every_shipped_check_runs_on_every_kind():
    """A kind cannot drop out: the table above is every shipped kind times every check."""
    assert [kind for kind, _, _ in (c.values for c in CASES)] == [
        kind for kind in shipped_kinds() for _ in CHECKS]


def _check(kind, name: str):
    return dict(check_kind(kind.name, kind))[name]


DRF = KINDS["drf"]


def test_the_battery_refutes_a_method_with_hidden_options():
    def sloppy(problem, **_):
        return DRF.methods["progressive-filling"](problem)

    broken = dataclasses.replace(DRF, methods={**DRF.methods, "progressive-filling": sloppy})
    with pytest.raises(AssertionError, match="takes \\*\\*kwargs"):
        _check(broken, "check_methods_declare_documented_options")()


def test_the_battery_refutes_a_schema_that_disagrees_with_the_record():
    etf = KINDS["etf"]
    broken = dataclasses.replace(etf, methods={k: v for k, v in etf.methods.items()
                                               if k != "greedy"})
    with pytest.raises(AssertionError):
        _check(broken, "check_schema_methods_equal_the_record")()


def test_the_battery_refutes_a_sweep_metric_that_never_exists():
    broken = dataclasses.replace(DRF, sweep_metrics=(*DRF.sweep_metrics, "no_such_metric"))
    with pytest.raises(AssertionError, match="no_such_metric"):
        _check(broken, "check_sweep_metrics_are_metrics")()


def test_the_battery_refutes_an_objective_without_a_unit():
    broken = dataclasses.replace(DRF, units={k: v for k, v in DRF.units.items()
                                             if k != "objective"})
    with pytest.raises(AssertionError, match="no entry for the objective"):
        _check(broken, "check_units_label_the_objective_and_sweep_metrics")()


def test_the_battery_refutes_an_exact_method_that_is_never_optimal():
    def lp(problem: object) -> Solution:
        solution = DRF.methods["lp"](problem)
        return Solution(solution.allocation, "infeasible", None, solver=solution.solver)

    broken = dataclasses.replace(DRF, methods={**DRF.methods, "lp": lp})
    with pytest.raises(AssertionError, match="lp is infeasible, not optimal, on the template"):
        _check(broken, "check_the_exact_method_is_optimal")()


def test_the_battery_refutes_an_optimising_kind_without_an_exact_method():
    broken = dataclasses.replace(DRF, exact=None)
    for name in ("check_the_exact_method_is_optimal", "check_no_method_beats_the_exact_one"):
        with pytest.raises(AssertionError, match="no exact method"):
            _check(broken, name)()


@pytest.mark.slow
def test_the_battery_refutes_an_equilibrium_kind_naming_an_exact_method():
    """token computes an equilibrium: a method of it called exact would have no optimum to
    reach, and one claiming optimal claims what nothing optimised."""
    token = KINDS["token"]
    named = dataclasses.replace(token, exact="mean-field-lp")
    with pytest.raises(AssertionError, match="computes an equilibrium, yet names an exact"):
        _check(named, "check_the_exact_method_is_optimal")()

    def optimal(problem: object) -> Solution:
        solution = token.methods["mean-field-lp"](problem)
        return Solution(solution.allocation, "optimal", solution.objective, solution.metrics,
                        solution.solver)

    claims = dataclasses.replace(token, methods={**token.methods, "mean-field-lp": optimal})
    with pytest.raises(AssertionError, match="mean-field-lp claims optimal on the template"):
        _check(claims, "check_the_exact_method_is_optimal")()


def test_the_battery_refutes_a_heuristic_that_over_allocates():
    """Its allocation fails feasibility, so solve raises SolverError: a failure, not n/a."""
    def progressive_filling(problem: object) -> Solution:
        fair = DRF.methods["progressive-filling"](problem).allocation
        doubled = Allocation(fair.ids, {key: 2 * col for key, col in fair.columns.items()})
        return Solution(doubled, "heuristic", 1.0)

    broken = dataclasses.replace(
        DRF, methods={**DRF.methods, "progressive-filling": progressive_filling})
    with pytest.raises(AssertionError, match="progressive-filling raised SolverError"):
        _check(broken, "check_every_method_answers_on_the_template")()


def test_the_battery_refutes_a_kind_without_a_feasibility_check():
    broken = dataclasses.replace(DRF, checks=tuple(
        v for v in DRF.checks if v.__name__ != "feasibility"))
    with pytest.raises(AssertionError, match="no feasibility check"):
        _check(broken, "check_a_feasibility_check_exists")()


def test_the_battery_solves_each_spec_once(monkeypatch):
    """The checks read one cached solution per (spec, method): run again, the battery solves
    only what two checks solve on purpose (a spec refused before solving, the example)."""
    record = dataclasses.replace(DRF)                       # a fresh record: a fresh cache
    for _, check in check_kind("drf", record):
        check()
    solve, calls = fairalloc.solve, []
    monkeypatch.setattr(fairalloc, "solve", lambda *a, **k: calls.append(a) or solve(*a, **k))
    for _, check in check_kind("drf", record):
        check()
    assert len(calls) == 2, calls


def test_models_never_import_solvers():
    """Layers: models build data and formulations; solving is the solvers' job."""
    import ast
    from pathlib import Path

    import fairalloc.models

    for path in Path(fairalloc.models.__file__).parent.glob("*.py"):
        tree = ast.parse(path.read_text())
        imported = {node.module for node in ast.walk(tree)
                    if isinstance(node, ast.ImportFrom) and node.module}
        assert not any(m.startswith("fairalloc.solvers") for m in imported), path.name


def test_pyomo_formulations_say_their_math():
    """Every constraint and objective of the Pyomo models carries a doc (the equation it
    is), so ``model.pprint()`` shows the math."""
    import pyomo.environ as pyo

    from fairalloc.models.drf import leximin_model
    from fairalloc.models.emrf import efficiency_model
    from fairalloc.models.hetero import max_min_model
    from fairalloc.models.moldable import exact_model

    drf = fairalloc.load_spec(str(ROOT / "specs" / "drf" / "classic.json")).problem
    emrf = fairalloc.load_spec(str(ROOT / "specs" / "emrf" / "example1-knob0.5.json")).problem
    moldable = fairalloc.load_spec(str(ROOT / "specs" / "moldable" / "example1.json")).problem
    hetero = fairalloc.load_spec(str(ROOT / "specs" / "hetero" / "gavel-mix.json")).problem
    models = [leximin_model(drf), efficiency_model(emrf.market, emrf.market.capacity),
              exact_model(moldable, horizon=100.0), max_min_model(hetero)]
    for model in models:
        parts = list(model.component_objects((pyo.Constraint, pyo.Objective)))
        assert parts, model.name
        undocumented = [c.name for c in parts if not c.doc]
        assert not undocumented, (model.name, undocumented)


def test_the_battery_refutes_a_replay_policy_that_fails():
    def broken(problem):
        raise RuntimeError("no allocation today")

    replay = dataclasses.replace(DRF.replay, policies={**DRF.replay.policies, "broken": broken})
    with pytest.raises(AssertionError, match="broken.*no allocation today"):
        _check(dataclasses.replace(DRF, replay=replay), "check_every_policy_replays")()


def test_the_battery_refutes_a_replay_record_without_a_static_trace():
    replay = dataclasses.replace(DRF.replay, generators={"poisson": DRF.replay.generators[
        "poisson"]})
    with pytest.raises(AssertionError, match="no 'static' generator"):
        _check(dataclasses.replace(DRF, replay=replay),
               "check_a_static_trace_replays_and_finishes_every_job")()
