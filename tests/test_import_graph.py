"""The direction of imports (DESIGN.md): no circle among fairalloc's modules, studies and the
engine below the API and the command line, result types that name no kind and no renderer,
and no fairalloc import hidden inside a function (the way a circle is dodged).

The graph is read from the source with ``ast``, every import statement counted wherever it
stands (module level, function, ``if``). ``from P import x`` is an edge to ``P.x`` when that is
a module and to ``P`` otherwise; importing a submodule also runs its parent package, but that
is not counted as an edge: ``fairalloc/__init__`` re-exports the API, so every module would
otherwise seem to import it.
"""

from __future__ import annotations

import ast
from pathlib import Path

import networkx as nx
import pytest

import fairalloc
from fairalloc.registry import KINDS

PACKAGE = Path(fairalloc.__file__).parent


def module_name(path: Path) -> str:
    parts = path.relative_to(PACKAGE.parent).with_suffix("").parts
    return ".".join(parts[:-1] if parts[-1] == "__init__" else parts)


MODULES = {module_name(p): p for p in sorted(PACKAGE.rglob("*.py"))}


def imported(module: str, node: ast.AST) -> list[str]:
    """The fairalloc modules an import statement names (its nearest enclosing module each)."""
    if isinstance(node, ast.Import):
        names = [alias.name for alias in node.names]
    elif isinstance(node, ast.ImportFrom):
        base = node.module or ""
        if node.level:                      # relative: from the module's own package up
            package = module if MODULES[module].name == "__init__.py" else \
                module.rpartition(".")[0]
            up = package.split(".")[:len(package.split(".")) - node.level + 1]
            base = ".".join([*up, base] if base else up)
        names = [f"{base}.{a.name}" if f"{base}.{a.name}" in MODULES else base
                 for a in node.names]
    else:
        return []
    out = []
    for name in names:
        while name and name not in MODULES:
            name = name.rpartition(".")[0]
        if name and name != module:
            out.append(name)
    return out


def statements(module: str) -> list[tuple[ast.AST, bool]]:
    """Every import statement of a module, with whether it stands inside a function."""
    tree = ast.parse(MODULES[module].read_text(encoding="utf-8"))
    out = []

    def visit(node: ast.AST, in_function: bool) -> None:
        for child in ast.iter_child_nodes(node):
            if isinstance(child, (ast.Import, ast.ImportFrom)):
                out.append((child, in_function))
            visit(child, in_function or isinstance(
                child, (ast.FunctionDef, ast.AsyncFunctionDef, ast.Lambda)))

    visit(tree, False)
    return out


def import_graph() -> nx.DiGraph:
    graph = nx.DiGraph()
    graph.add_nodes_from(MODULES)
    for module in MODULES:
        for node, _ in statements(module):
            graph.add_edges_from((module, target) for target in imported(module, node))
    return graph


GRAPH = import_graph()


def test_the_graph_sees_the_package():
    """A sanity check of the reader: the API imports the engine, the engine the registry."""
    assert len(MODULES) > 50
    assert GRAPH.has_edge("fairalloc.api", "fairalloc.engine")
    assert GRAPH.has_edge("fairalloc.engine", "fairalloc.registry")
    assert GRAPH.has_edge("fairalloc.studies.run", "fairalloc.engine")


def test_no_import_circle():
    cycles = sorted(nx.simple_cycles(GRAPH), key=len)
    assert not cycles, "import circles: " + "; ".join(" -> ".join([*c, c[0]])
                                                      for c in cycles[:10])


def below(module: str, forbidden: tuple[str, ...]) -> list[str]:
    """The forbidden modules ``module`` reaches through imports (directly or not)."""
    reached = nx.descendants(GRAPH, module)
    return sorted(m for m in reached if any(m == f or m.startswith(f + ".") for f in forbidden))


LOWER = [m for m in MODULES if m.startswith("fairalloc.studies")] + ["fairalloc.engine"]


@pytest.mark.parametrize("module", LOWER)
def test_studies_and_the_engine_never_reach_the_api_or_the_cli(module):
    assert below(module, ("fairalloc.api", "fairalloc.cli")) == []


@pytest.mark.parametrize("module", ["fairalloc.result", "fairalloc.contract"])
def test_the_result_types_import_no_kind_and_no_renderer(module):
    forbidden = ("fairalloc.registry", "fairalloc.render", "fairalloc.kinds", "fairalloc.report")
    assert below(module, forbidden) == []


CLI = [m for m in MODULES if m == "fairalloc.cli" or m.startswith("fairalloc.cli.")]


def test_nothing_in_the_core_imports_the_cli():
    """The command line is a package of its own: only its own modules import it."""
    importers = {m for cli in CLI for m in GRAPH.predecessors(cli)}
    assert sorted(importers - set(CLI)) == []


def test_no_fairalloc_import_hides_inside_a_function():
    """A fairalloc import inside a function is how a circle is dodged; a heavy third-party
    library (matplotlib, duckdb, ...) may still be imported lazily."""
    hidden = [f"{module}:{node.lineno}" for module in MODULES
              for node, in_function in statements(module)
              if in_function and imported(module, node)]
    assert hidden == []


PLOTS = [m for m in MODULES if m == "fairalloc.plots" or m.startswith("fairalloc.plots.")]


@pytest.mark.parametrize("module", PLOTS)
def test_plots_draw_results_and_reach_nothing_above_them(module):
    """Plots sit below the kinds (DESIGN.md): they draw results and data, never a study's
    store or summary (a study's picture is ``studies/plots.py``) nor anything that runs."""
    above = ("fairalloc.studies", "fairalloc.engine", "fairalloc.api", "fairalloc.cli",
             "fairalloc.report", "fairalloc.replay", "fairalloc.registry", "fairalloc.kinds")
    assert below(module, above) == []


MODELS = [m for m in MODULES if m.startswith("fairalloc.models.")]


@pytest.mark.parametrize("module", MODELS)
def test_models_are_the_bottom_of_a_kind(module):
    """A kind's model is what its solvers, checks, studies and plots build on (its tolerances
    and tie rule live there, the token game too): it reaches none of them."""
    forbidden = ("fairalloc.solvers", "fairalloc.checks", "fairalloc.studies", "fairalloc.plots",
                 "fairalloc.kinds", "fairalloc.registry")
    assert below(module, forbidden) == []


KIND_PARTS = ("fairalloc.models", "fairalloc.solvers", "fairalloc.checks")
KIND_MODULES = {f"{part}.{kind}": kind for part in KIND_PARTS for kind in KINDS
                if f"{part}.{kind}" in MODULES}


@pytest.mark.parametrize("module", sorted(KIND_MODULES))
def test_a_kinds_modules_import_no_other_kinds(module):
    """What two kinds share lives in a module that names no kind (``levels``, ``leontief``,
    ``highs``): a kind's model, solver or checks importing another kind's would tie the two
    (a change to one kind's solver silently changing the other's)."""
    others = sorted(target for target in GRAPH.successors(module)
                    if KIND_MODULES.get(target, KIND_MODULES[module]) != KIND_MODULES[module])
    assert others == []
