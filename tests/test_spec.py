"""fairalloc.spec (loading, strict parsing, paths, set_path, SpecError) and reading external
allocations (fairalloc.allocation.read_allocation, through ``fairalloc validate --allocation``)."""

from __future__ import annotations

import contextlib
import copy
import io
import json
import subprocess
import sys
from pathlib import Path

import pytest

import fairalloc
from fairalloc.allocation import read_allocation
from fairalloc.api import method_of
from fairalloc.cli import main
from fairalloc.errors import SpecError, Violation, json_path
from fairalloc.models.drf import DrfProblem
from fairalloc.models.emrf import EmrfProblem
from fairalloc.registry import KINDS
from fairalloc.spec import Spec, load_spec, parse_text, set_path, template

ROOT = Path(__file__).resolve().parents[1]
EMRF1 = ROOT / "specs" / "emrf" / "example1-knob0.5.json"
DRF_CLASSIC = ROOT / "specs" / "drf" / "classic.json"

DRF = {
    "problem": "drf",
    "name": "classic",
    "capacity": {"cpu": 9, "mem": 18},
    "users": [{"id": "A", "demand": {"cpu": 1, "mem": 4}},
              {"id": "B", "demand": {"cpu": 3, "mem": 1}}],
    "options": {"method": "lp"},
}
EMRF = {
    "problem": "emrf",
    "capacity": {"cpu": 100, "gpu": 800},
    "users": [{"id": "user1", "split": {"cpu": 0.1, "gpu": 0.9}},
              {"id": "user2", "split": {"cpu": 0.4, "gpu": 0.6}}],
    "knob": 0.5,
}


def violations(source) -> list[tuple[str, str]]:
    with pytest.raises(SpecError) as info:
        load_spec(source)
    return [(v.path, v.rule) for v in info.value.violations]


# ---------------------------------------------------------------- load_spec


def test_load_spec_from_dict_builds_the_problem_and_leaves_the_dict_unchanged():
    given = copy.deepcopy(DRF)
    spec = load_spec(given)
    assert given == DRF, "building must not mutate the caller's dict"
    assert isinstance(spec, Spec)
    assert spec.kind == "drf"
    assert spec.name == "classic"
    assert spec.options == {"method": "lp"}
    assert spec.source is None
    assert isinstance(spec.problem, DrfProblem)
    assert spec.problem.market.ids == ("A", "B")
    assert spec.problem.market.resources == ("cpu", "mem")
    assert spec.raw == DRF


def test_load_spec_from_dict_emrf():
    spec = load_spec(EMRF)
    assert spec.kind == "emrf"
    assert isinstance(spec.problem, EmrfProblem)
    assert spec.problem.knob == 0.5
    assert spec.problem.max_unfairness is None
    assert spec.options == {}


@pytest.mark.parametrize("as_path", [str, Path])
def test_load_spec_from_file(as_path):
    spec = load_spec(as_path(EMRF1))
    assert spec.kind == "emrf"
    assert spec.source == str(EMRF1)
    assert spec.name == "EMRF paper, Example 1 (knob 0.5)"
    assert spec.problem.market.ids == ("user1", "user2")


def test_load_spec_from_stdin(monkeypatch):
    monkeypatch.setattr(sys, "stdin", io.StringIO(json.dumps(DRF)))
    spec = load_spec("-")
    assert spec.kind == "drf"
    assert spec.source == "<stdin>"


@pytest.mark.slow
def test_stdin_through_the_cli_subprocess():
    ok = subprocess.run([sys.executable, "-m", "fairalloc.cli", "solve", "-", "--format", "json"],
                        input=DRF_CLASSIC.read_text(), capture_output=True, text=True, timeout=60)
    assert ok.returncode == 0, ok.stderr
    result = json.loads(ok.stdout)
    assert result["problem"] == "drf"
    assert set(result["allocation"]) == {"A", "B"}

    bad = subprocess.run([sys.executable, "-m", "fairalloc.cli", "solve", "-"],
                         input='{"problem": "drf", "capacity": {"cpu": NaN}, "users": []}',
                         capture_output=True, text=True, timeout=60)
    assert bad.returncode == 2
    assert bad.stdout == ""
    assert "Traceback" not in bad.stderr
    assert "<stdin>: invalid spec" in bad.stderr
    assert "capacity.cpu: NaN is not a finite number" in bad.stderr


def test_missing_file_is_a_spec_error(tmp_path):
    [(where, rule)] = violations(tmp_path / "nope.json")
    assert where == "$" and rule.startswith("cannot read file: ")


def test_non_utf8_file_is_a_spec_error(tmp_path):
    path = tmp_path / "latin1.json"
    path.write_bytes(b'{"problem": "drf", "name": "caf\xe9"}')
    assert violations(path) == [("$", "file is not UTF-8 text")]


# ---------------------------------------------------------------- comments and strict parsing

COMMENTED = """// a comment on the first line
{
  // an indented comment
  "problem": "emrf",
  "description": "a // inside a string is kept: http://example.org",
  "capacity": {"cpu": 100, "gpu": 800},
\t// a tab-indented comment
  "users": [
    {"id": "user1", "split": {"cpu": 0.1, "gpu": 0.9}},
    // between items
    {"id": "user2", "split": {"cpu": 0.4, "gpu": 0.6}}
  ],
  "knob": 0.5
}
// a trailing comment
"""


def test_comment_lines_are_accepted(tmp_path):
    path = tmp_path / "commented.jsonc"
    path.write_text(COMMENTED)
    spec = load_spec(path)
    assert spec.kind == "emrf"
    assert spec.raw["description"] == "a // inside a string is kept: http://example.org"
    assert spec.problem.market.ids == ("user1", "user2")


def test_comment_lines_keep_line_numbers_of_syntax_errors(tmp_path):
    path = tmp_path / "broken.jsonc"
    lines = COMMENTED.splitlines()
    assert lines[11] == "  ],"
    lines[11] = "  ]"          # line 12: the comma before "knob" is missing
    path.write_text("\n".join(lines) + "\n")
    [(where, rule)] = violations(path)
    assert where == "$"
    assert rule.startswith("invalid JSON at line 13 column 3")


def test_comments_anywhere_outside_strings(tmp_path):
    path = tmp_path / "inline.jsonc"
    text = json.dumps(EMRF, indent=1).replace('"knob": 0.5', '"knob": /* eta */ 0.5 // knob')
    path.write_text(text.replace('"users"', '/* the\n  users */ "users"'))
    spec = load_spec(path)
    assert spec.raw["knob"] == 0.5 and spec.kind == "emrf"


def test_block_comments_keep_line_numbers_and_must_end(tmp_path):
    path = tmp_path / "block.jsonc"
    path.write_text('{\n/* one\ntwo\nthree */\n"problem": "emrf",,\n}')
    [(where, rule)] = violations(path)
    assert where == "$" and rule.startswith("invalid JSON at line 5"), rule
    path.write_text('{"problem": "emrf" /* never closed }')
    [(where, rule)] = violations(path)
    assert where == "$" and rule.startswith("invalid JSON")


def test_a_schema_key_is_allowed_and_must_be_text(tmp_path):
    path = tmp_path / "with-schema.json"
    path.write_text(json.dumps({"$schema": "./emrf.schema.json", **EMRF}))
    assert load_spec(path).raw["$schema"] == "./emrf.schema.json"
    path.write_text(json.dumps({"$schema": 3, **EMRF}))
    assert violations(path) == [('["$schema"]', "must be a string (the JSON Schema's path or URL, "
                                            "for editors)")]


def test_every_parse_problem_is_reported_together(tmp_path):
    path = tmp_path / "many.json"
    path.write_text('{"problem": "emrf", "knob": NaN, "capacity": {"cpu": -Infinity, '
                    '"gpu": 1e400}, "users": [{"id": "a", "id": "b", "split": {"cpu": 1}}]}')
    assert sorted(violations(path)) == sorted([
        ("knob", "NaN is not a finite number (numbers must fit a 64-bit float)"),
        ("capacity.cpu", "-Infinity is not a finite number (numbers must fit a 64-bit float)"),
        ("capacity.gpu", "1e400 is not a finite number (numbers must fit a 64-bit float)"),
        ("users[0].id", "key appears more than once in this object"),
    ])


@pytest.mark.parametrize("bad", [float("nan"), float("inf"), -float("inf")])
def test_non_finite_numbers_in_a_dict_are_rejected(bad):
    # A dict skips the JSON parser: the schema stage must still refuse them.
    spec = copy.deepcopy(EMRF)
    spec["capacity"]["cpu"] = bad
    [(where, _)] = violations(spec)
    assert where == "capacity.cpu"


# ---------------------------------------------------------------- violations and SpecError


def test_spec_error_lists_every_violation_with_path_and_rule():
    spec = copy.deepcopy(DRF)
    spec["capacity"]["cpu"] = 0
    spec["users"][0]["weight"] = "heavy"
    spec["saturation"] = "never"
    with pytest.raises(SpecError) as info:
        load_spec(spec)
    err = info.value
    assert all(isinstance(v, Violation) for v in err.violations)
    assert sorted((v.path, v.rule) for v in err.violations) == sorted([
        ("capacity.cpu", "must be > 0"),
        ("users[0].weight", "must be of type number"),
        ("saturation", 'must be one of "continue", "stop"'),
    ])
    assert err.source is None
    report = err.report()
    assert report.splitlines()[0] == "invalid spec (3 problems)"
    assert "  capacity.cpu: must be > 0" in report.splitlines()
    assert str(err) == report


def test_spec_error_report_names_the_source():
    err = SpecError([Violation("knob", "must be <= 1")], "my.json")
    assert err.report() == "my.json: invalid spec (1 problem)\n  knob: must be <= 1"
    assert str(Violation("users[0].id", "must not be empty")) == "users[0].id: must not be empty"


def test_schema_and_model_problems_are_reported_together():
    spec = copy.deepcopy(EMRF)
    spec["users"][0]["split"] = {"cpu": 0.5, "gpu": 0.2}     # model rule: sums to 0.7
    spec["knob"] = 3                                          # schema rule
    assert violations(spec) == [("knob", "must be <= 1"),
                                ("users[0].split", "fractions must sum to 1 (they sum to 0.7)")]
    spec["knob"] = 1
    assert violations(spec) == [("users[0].split", "fractions must sum to 1 (they sum to 0.7)")]


def test_model_checks_are_skipped_quietly_where_the_structure_is_broken():
    spec = copy.deepcopy(EMRF)
    spec["users"][1] = {"id": "user2"}                        # no split at all
    spec["users"][0]["split"] = "cpu"                         # not an object
    assert sorted(violations(spec)) == [("users[0].split", "must be of type object"),
                                        ("users[1].split", "required key is missing")]


def test_split_tolerance():
    spec = copy.deepcopy(EMRF)
    spec["users"][0]["split"] = {"cpu": 0.1, "gpu": 0.9 + 1e-12}
    load_spec(spec)                                            # within 1e-9: fine
    spec["users"][0]["split"] = {"cpu": 0.1, "gpu": 0.9 + 1e-6}
    [(where, rule)] = violations(spec)
    assert where == "users[0].split" and "sum to 1" in rule


def test_each_missing_required_key_is_reported_once():
    assert violations({"problem": "drf"}) == [
        ("capacity", "required key is missing"),
        ("users", "required key is missing"),
    ]


def test_unknown_keys_each_reported_with_the_allowed_ones():
    spec = copy.deepcopy(DRF)
    spec["knobb"] = 1
    spec["users"][1]["weigth"] = 2
    found = violations(spec)
    assert [p for p, _ in found] == ["knobb", "users[1].weigth"]
    assert found[1][1] == "unknown key (allowed: demand, id, max_tasks, weight)"


def test_api_accepts_a_spec_or_raises_spec_error():
    with pytest.raises(SpecError):
        fairalloc.solve({"problem": "nosuch"})
    known = ", ".join(sorted(KINDS))
    assert violations({"problem": "nosuch"}) == [
        ("problem", f"unknown problem kind (known: {known})")]
    assert violations({}) == [("problem", "required key is missing")]


def test_a_study_given_as_a_spec_says_how_to_run_it():
    study = template("study")
    [(path, rule)] = violations(parse_text(study, "study.jsonc"))
    assert path == "$" and rule.startswith('a study (key "study"), not a spec: run '
                                           '"fairalloc study run FILE"')


# ---------------------------------------------------------------- json_path and set_path


@pytest.mark.parametrize("parts, text", [
    ([], "$"),
    (["knob"], "knob"),
    (["users", 1, "split", "cpu"], "users[1].split.cpu"),
    (["capacity", "gpu 0"], 'capacity["gpu 0"]'),
    (["capacity", "big-gpu_2"], "capacity.big-gpu_2"),
    (["capacity", "0"], 'capacity["0"]'),
    ([0, "id"], "[0].id"),
    (["users", 0, "demand", "mem.gb"], 'users[0].demand["mem.gb"]'),
])
def test_json_path(parts, text):
    assert json_path(parts) == text


def test_set_path_replaces_a_copy():
    data = copy.deepcopy(EMRF)
    out = set_path(data, "users[1].split.cpu", 0.25)
    assert out["users"][1]["split"]["cpu"] == 0.25
    assert data == EMRF, "set_path must not change its input"
    assert set_path(data, "knob", 1)["knob"] == 1
    assert set_path(data, "capacity.gpu", 5)["capacity"] == {"cpu": 100, "gpu": 5}
    assert set_path(data, "users[0]", {"id": "z"})["users"][0] == {"id": "z"}


def test_set_path_can_add_a_key_which_the_schema_then_judges():
    out = set_path(EMRF, "knobb", 0.5)
    assert out["knobb"] == 0.5
    assert violations(out)[0][0] == "knobb"


@pytest.mark.parametrize("path, where", [
    ("users[5].weight", "users[5]"),
    ("users[5]", "users[5]"),
    ("nosuch.key", "nosuch"),
    ("knob.deeper", "knob.deeper"),
    ("users.first", "users.first"),
    ("", "$"),
])
def test_set_path_errors_name_the_path(path, where):
    with pytest.raises(SpecError) as info:
        set_path(EMRF, path, 1)
    [v] = info.value.violations
    assert v.path == where
    assert v.rule in ("no such key in the spec", "empty key path")


# ---------------------------------------------------------------- external allocations


@pytest.fixture(scope="module")
def solved_json() -> dict:
    out = io.StringIO()
    with contextlib.redirect_stdout(out):
        assert main(["solve", str(EMRF1), "--format", "json", "--no-validate"]) == 0
    return json.loads(out.getvalue())


def _write(tmp_path, data) -> str:
    path = tmp_path / "alloc.json"
    path.write_text(data if isinstance(data, str) else json.dumps(data))
    return str(path)


@pytest.mark.parametrize("whole", [True, False], ids=["whole-result", "allocation-only"])
def test_validate_accepts_a_previous_solve_output(tmp_path, capsys, solved_json, whole):
    data = solved_json if whole else solved_json["allocation"]
    code = main(["validate", str(EMRF1), "--allocation", _write(tmp_path, data),
                 "--format", "json"])
    out = json.loads(capsys.readouterr().out)
    assert code == 0
    assert out["method"] == "external"
    assert out["status"] == "feasible"
    assert out["allocation"]["user1"]["total"] == pytest.approx(
        solved_json["allocation"]["user1"]["total"])
    checks = {f["check"]: f["verdict"] for f in out["validation"]}
    assert checks["feasibility"] == checks["delta_fairness"] == "holds"
    assert checks["strategy_proofness"] == "unchecked", "needs a mechanism to probe"
    assert out["metrics"]["utilization.cpu"] == pytest.approx(1.0)


def _mutate(solved: dict, how: str):
    data = copy.deepcopy(solved)
    alloc = data["allocation"]
    if how == "missing-id":
        del alloc["user2"]
        return data, "allocation.user2", "missing"
    if how == "unknown-id":
        alloc = copy.deepcopy(alloc)
        alloc["user3"] = alloc["user1"]
        return alloc, "user3", "id is not in the spec"
    if how == "nan":
        text = json.dumps(data).replace(json.dumps(alloc["user1"]["total"]), "NaN", 1)
        return text, "allocation.user1.total", "NaN is not a finite number"
    if how == "string":
        alloc["user2"]["devices"]["gpu"] = "39.7"
        return data, "allocation.user2.devices.gpu", "must be a number"
    if how == "missing-total":
        del alloc["user1"]["total"]
        return data, "allocation.user1.total", "required number is missing"
    if how == "unknown-key":
        alloc["user1"]["devices"]["fpga"] = 1.0
        return data, "allocation.user1.devices.fpga", "unknown key"
    if how == "bool":
        alloc["user1"]["total"] = True
        return data, "allocation.user1.total", "must be a number"
    if how == "not-an-object":
        return [1, 2], "$", "an allocation must be an object keyed by the spec's ids"
    raise AssertionError(how)


@pytest.mark.parametrize("how", ["missing-id", "unknown-id", "nan", "string", "missing-total",
                                 "unknown-key", "bool", "not-an-object"])
def test_validate_rejects_a_bad_allocation(tmp_path, capsys, solved_json, how):
    data, path, rule = _mutate(solved_json, how)
    code = main(["validate", str(EMRF1), "--allocation", _write(tmp_path, data)])
    captured = capsys.readouterr()
    assert code == 2
    assert captured.out == ""
    assert f"  {path}: {rule}" in captured.err, captured.err


def test_validate_bad_allocation_subprocess_has_no_traceback(tmp_path, solved_json):
    data, path, rule = _mutate(solved_json, "string")
    run = subprocess.run([sys.executable, "-m", "fairalloc.cli", "validate", str(EMRF1),
                          "--allocation", _write(tmp_path, data)],
                         capture_output=True, text=True, timeout=60)
    assert run.returncode == 2
    assert run.stdout == ""
    assert "Traceback" not in run.stderr
    assert f"{path}: {rule}" in run.stderr


def test_read_allocation_directly():
    ids = ["a", "b"]
    good = read_allocation({"a": {"x": 1}, "b": {"x": 3.5}}, ids, [("x",)])
    assert good.ids == ids
    assert good.column("x").tolist() == [1.0, 3.5]
    assert good["b"] == {"x": 3.5}
    # an optional key given for one id must be given for all
    with pytest.raises(SpecError) as info:
        read_allocation({"a": {"x": 1, "y": {"z": 2}}, "b": {"x": 3}}, ids, [("x",)], [("y", "z")])
    assert [(v.path, v.rule) for v in info.value.violations] == [
        ("b.y.z", "given for other ids, so needed here too")]
    # several problems are reported together, with the result's prefix
    with pytest.raises(SpecError) as info:
        read_allocation({"allocation": {"a": {"x": "1"}, "b": 7, "c": {}}}, ids, [("x",)])
    assert sorted((v.path, v.rule) for v in info.value.violations) == sorted([
        ("allocation.c", "id is not in the spec"),
        ("allocation.b", "must be an object"),
        ("allocation.a.x", "must be a number"),
    ])


@pytest.mark.parametrize("kind", sorted(KINDS))
def test_every_method_takes_the_common_options(kind):
    """``options.time_limit`` (and ``method``) are accepted for every method of every kind,
    as the command line's --time-limit is; a method that finishes without a limit ignores
    it."""
    data = parse_text(template(kind), None)
    for method in KINDS[kind].methods:
        given = {**data, "options": {"method": method, "time_limit": 50}}
        assert method_of(given) == method


def test_a_heuristic_ignores_the_specs_time_limit(tmp_path):
    spec = {**DRF, "options": {"method": "progressive-filling", "time_limit": 50}}
    plain = {**DRF, "options": {"method": "progressive-filling"}}
    assert fairalloc.solve(spec).to_dict()["allocation"] == \
        fairalloc.solve(plain).to_dict()["allocation"]
    path = tmp_path / "spec.json"
    path.write_text(json.dumps(spec))
    assert main(["solve", "-q", str(path)]) == 0
