"""The conformance battery (tests/conformance.py) over every kind."""

from __future__ import annotations

import dataclasses
from pathlib import Path

import pytest
from conformance import check_kind

import fairalloc
from fairalloc.registry import KINDS

ROOT = Path(__file__).resolve().parents[1]

CASES = [(kind, name, check) for kind in KINDS for name, check in check_kind(kind)]


@pytest.mark.parametrize("kind, name, check", CASES,
                         ids=[f"{kind}-{name}" for kind, name, _ in CASES])
def test_kind_conforms(kind, name, check):
    check()


def _check(kind, name: str):
    return dict(check_kind(kind.name, kind))[name]


def test_the_battery_refutes_a_method_with_hidden_options():
    drf = KINDS["drf"]

    def sloppy(problem, **_):
        return drf.methods["progressive-filling"](problem)

    broken = dataclasses.replace(drf, methods={**drf.methods, "progressive-filling": sloppy})
    with pytest.raises(AssertionError, match="takes \\*\\*kwargs"):
        _check(broken, "methods_declare_documented_options")()


def test_the_battery_refutes_a_schema_that_disagrees_with_the_record():
    etf = KINDS["etf"]
    broken = dataclasses.replace(etf, methods={k: v for k, v in etf.methods.items()
                                               if k != "greedy"})
    with pytest.raises(AssertionError):
        _check(broken, "schema_methods_equal_the_record")()


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
