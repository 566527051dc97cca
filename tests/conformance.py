"""The kind contract's conformance battery, in the manner of scikit-learn's ``check_estimator``.

``check_kind(name)`` yields ``(check_name, check)`` pairs; each check takes no argument and
raises ``AssertionError`` when the kind breaks the contract (``fairalloc.contract``). The
battery runs over every kind in ``tests/test_conformance.py``; a new kind passes it before it
is done (CONTRIBUTING.md).
"""

from __future__ import annotations

import ast
import contextlib
import functools
import inspect
import io
import json
import tempfile
from collections.abc import Callable, Iterator
from importlib import resources
from pathlib import Path

import jsonschema

import fairalloc
from fairalloc.cli import main
from fairalloc.contract import SOLVER_FIELDS, Kind, method_options
from fairalloc.registry import KINDS
from fairalloc.result import STATUSES
from fairalloc.spec import parse_text, template


def template_spec(name: str) -> dict:
    """The kind's commented template (what ``fairalloc new KIND`` writes), parsed."""
    return parse_text(template(name), name)


def shipped_schema(name: str) -> dict:
    """The schema as the kind brings it (the file, or the record's own)."""
    record = KINDS[name]
    if record.schema is not None:
        return record.schema
    text = resources.files("fairalloc.schemas").joinpath(f"{name}.schema.json").read_text()
    return json.loads(text)


def check_kind(name: str, kind: Kind | None = None) -> Iterator[tuple[str, Callable[[], None]]]:
    """Every conformance check of kind ``name`` (its registered record, or ``kind``)."""
    def record() -> Kind:
        return kind or KINDS[name]

    @functools.cache
    def template_and_schema() -> tuple[dict, dict]:
        return template_spec(name), shipped_schema(name)

    def schema_is_draft_2020_12() -> None:
        _, schema = template_and_schema()
        assert schema.get("$schema", "").endswith("2020-12/schema"), schema.get("$schema")
        jsonschema.Draft202012Validator.check_schema(schema)

    def schema_methods_equal_the_record() -> None:
        kind, (_, schema) = record(), template_and_schema()
        enum = schema["properties"]["options"]["properties"]["method"]["enum"]
        assert enum == list(kind.methods), (enum, list(kind.methods))
        assert kind.default in kind.methods
        assert kind.exact is None or kind.exact in kind.methods
        assert kind.sense in ("max", "min")

    def methods_declare_documented_options() -> None:
        kind, (_, schema) = record(), template_and_schema()
        option_keys = set(schema["properties"]["options"]["properties"]) - {"method"}
        for method, function in kind.methods.items():
            params = inspect.signature(function).parameters.values()
            assert not any(p.kind is p.VAR_KEYWORD for p in params), \
                f"{method} takes **kwargs: its options must be named"
            undocumented = set(method_options(function)) - option_keys
            assert not undocumented, f"{method} takes {undocumented}, not in the schema"

    def template_loads_and_solves() -> None:
        kind, (spec, _) = record(), template_and_schema()
        result = fairalloc.solve(spec)
        assert result.status in STATUSES
        assert result.method == kind.default

    def every_method_answers_on_the_template() -> None:
        spec, _ = template_and_schema()
        problem = fairalloc.load_spec(spec).problem
        for method, result in fairalloc.compare(spec):    # each with the options it takes
            if isinstance(result, str):                   # does not apply: a reason
                assert result, method
                continue
            assert result.status in STATUSES, (method, result.status)
            assert set(result.solver) == {*SOLVER_FIELDS, "extra"}, (method, result.solver)
            assert list(result.allocation) == list(problem.ids), method
            assert all(f.verdict in ("holds", "fails", "unrefuted", "unchecked")
                       for f in result.validation)

    def validate_of_a_solved_json_gives_the_same_verdicts() -> None:
        spec, _ = template_and_schema()
        solved = fairalloc.solve(spec)
        again = fairalloc.validate(spec, json.loads(solved.to_json()), method=solved.method)
        assert [(f.check, f.verdict) for f in again.validation if f.check.split(":")[0]
                != "bound"] == [(f.check, f.verdict) for f in solved.validation
                                if f.check.split(":")[0] != "bound"]

    def an_undeclared_option_is_a_bad_spec() -> None:
        kind, (spec, _) = record(), template_and_schema()
        method = kind.default
        bad = {**spec, "options": {**spec.get("options", {}), "no_such_option": 1}}
        try:
            fairalloc.solve(bad, method)
        except fairalloc.SpecError as exc:
            assert any(v.path.startswith("options") for v in exc.violations), exc
        else:
            raise AssertionError("an unknown option was accepted")

    def checks_follow_the_contract() -> None:
        kind = record()
        for check in kind.validators:
            params = inspect.signature(check).parameters
            assert list(params)[:2] and "mechanism" in params or any(
                p.kind is p.VAR_KEYWORD for p in params.values()), check.__name__
            source = ast.parse(inspect.getsource(inspect.getmodule(check)))
            imported = {node.module for node in ast.walk(source)
                        if isinstance(node, ast.ImportFrom) and node.module}
            assert f"fairalloc.solvers.{name}" not in imported, \
                f"{check.__module__} imports the kind's solvers"

    def the_problem_has_ids_and_reads_allocations() -> None:
        spec, _ = template_and_schema()
        problem = fairalloc.load_spec(spec).problem
        assert len(problem.ids) == len(set(problem.ids)) > 0
        solved = fairalloc.solve(spec)
        alloc = problem.read_allocation(json.loads(solved.to_json())["allocation"])
        assert list(alloc) == list(problem.ids)

    def the_command_line_prints_the_api_result() -> None:
        spec, _ = template_and_schema()
        with tempfile.TemporaryDirectory() as folder:
            path = Path(folder) / f"{name}.json"
            path.write_text(json.dumps(spec))
            out = io.StringIO()
            with contextlib.redirect_stdout(out):
                code = main(["solve", str(path), "--format", "json"])
        printed, solved = json.loads(out.getvalue()), fairalloc.solve(spec)
        assert code in (0, 1), code
        assert (printed["problem"], printed["method"], printed["status"]) == (
            name, solved.method, solved.status)
        assert list(printed["allocation"]) == list(solved.allocation)
        assert [f["check"] for f in printed["validation"]] == [
            f.check for f in solved.validation]

    def random_specs_are_valid_and_solve() -> None:
        kind, (_, schema) = record(), template_and_schema()
        params = list(inspect.signature(kind.random_spec).parameters.values())
        assert params[0].name == "seed" and all(
            p.default is not p.empty for p in params[1:]), "random_spec(seed, **size) defaults"
        specs = [kind.random_spec(seed) for seed in (0, 1)]
        assert specs[0] == kind.random_spec(0), "random_spec is not a function of its seed"
        assert specs[0] != specs[1], "two seeds gave the same spec"
        for spec in specs:
            jsonschema.Draft202012Validator(schema).validate(spec)
            result = fairalloc.solve(spec)
            assert result.status in STATUSES
            assert list(result.allocation) == list(fairalloc.load_spec(spec).problem.ids)

    yield from ((f.__name__, f) for f in (
        schema_is_draft_2020_12, schema_methods_equal_the_record,
        methods_declare_documented_options, template_loads_and_solves,
        every_method_answers_on_the_template, validate_of_a_solved_json_gives_the_same_verdicts,
        an_undeclared_option_is_a_bad_spec, checks_follow_the_contract,
        the_problem_has_ids_and_reads_allocations, the_command_line_prints_the_api_result,
        random_specs_are_valid_and_solve))
