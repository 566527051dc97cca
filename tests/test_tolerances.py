"""One home per tolerance: a kind's tolerances live in its model module (``models/<kind>.py``;
drf and emrf share ``models/leontief.py``), named, and its solvers and checks import them.
Shared modules (``solvers/highs.py``, ``checks/__init__.py``, ``checks/bounds.py``) keep their
own generic ones, named. So no float of tolerance size is written out anywhere else in the
models, solvers and checks, and no solver or check of a kind defines one of its own."""

from __future__ import annotations

import ast
from pathlib import Path

import pytest

PACKAGE = Path(__file__).resolve().parents[1] / "fairalloc"
LAYERS = ("models", "solvers", "checks")
SHARED = {"solvers/highs.py", "solvers/centre.py", "checks/__init__.py", "checks/bounds.py"}
# tolerance-sized: 1e-15 .. 1e-5 (the floors 1e-300 against division by zero are not
# tolerances; 1e-3 and up are sizes, limits and defaults)
SMALLEST, LARGEST = 1e-15, 1e-5


def tolerance_sized(node: ast.AST) -> bool:
    return (isinstance(node, ast.Constant) and isinstance(node.value, float)
            and SMALLEST <= node.value <= LARGEST)


def module_constants(tree: ast.Module) -> set[int]:
    """ids of the literal nodes that are the value of a module-level UPPER_CASE name."""
    named = set()
    for stmt in tree.body:
        if isinstance(stmt, ast.Assign) and all(
                isinstance(t, ast.Name) and t.id.isupper() for t in stmt.targets):
            named.update(id(n) for n in ast.walk(stmt.value))
    return named


def files() -> list[str]:
    return sorted(str(path.relative_to(PACKAGE)) for layer in LAYERS
                  for path in (PACKAGE / layer).glob("*.py"))


def literals(relative: str) -> tuple[list[int], list[str]]:
    """(lines of bare tolerance-sized literals, names of tolerance-sized constants defined)."""
    tree = ast.parse((PACKAGE / relative).read_text())
    named = module_constants(tree)
    bare = [n.lineno for n in ast.walk(tree) if tolerance_sized(n) and id(n) not in named]
    defined = [t.id for stmt in tree.body if isinstance(stmt, ast.Assign)
               and any(tolerance_sized(n) for n in ast.walk(stmt.value))
               for t in stmt.targets if isinstance(t, ast.Name)]
    return bare, defined


@pytest.mark.parametrize("relative", files())
def test_no_bare_tolerance(relative):
    bare, _ = literals(relative)
    assert not bare, (f"fairalloc/{relative}, lines {bare}: a tolerance written out; name it "
                      "in the kind's model module (or, in a shared module, in that module)")


@pytest.mark.parametrize("relative", [f for f in files()
                                      if not f.startswith("models/") and f not in SHARED])
def test_solvers_and_checks_import_their_kinds_tolerances(relative):
    _, defined = literals(relative)
    assert not defined, (f"fairalloc/{relative} defines {defined}: a kind's tolerances live "
                         "in its model module, which its solvers and checks import")
