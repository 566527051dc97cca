"""Issue 10, section 4: every entry point answers bad input with a clear error, never a
traceback; command-line mistakes are usage errors (exit 2) naming the option, checked before
any work is done."""

from __future__ import annotations

import json
import subprocess
import sys

import numpy as np
import pytest
from clitools import ROOT, cli, run

import fairalloc
from fairalloc import SpecError

CLASSIC = str(ROOT / "specs" / "drf" / "classic.json")
EMRF1 = str(ROOT / "specs" / "emrf" / "example1-knob0.5.json")
DRF = json.loads((ROOT / "specs" / "drf" / "classic.json").read_text())


def error_lines(err: str) -> list[str]:
    return [line for line in err.splitlines() if line.startswith("  ")]


# --- spec text ----------------------------------------------------------------------------------

@pytest.mark.parametrize("depth", [100, 1000, 100_000])
def test_deep_nesting_is_a_bad_spec(tmp_path, depth):
    spec = dict(DRF, description=None)
    text = json.dumps(spec).replace("null", "[" * depth + "]" * depth)
    path = tmp_path / "deep.json"
    path.write_text(text)
    done = run("solve", str(path))
    assert done.returncode == 2 and "Traceback" not in done.stderr
    assert "nested deeper than 64 levels" in done.stderr


def test_a_lone_surrogate_is_a_bad_spec_and_printable(tmp_path):
    path = tmp_path / "s.json"
    path.write_text(json.dumps(DRF).replace('"A"', '"\\ud800"'))
    done = run("solve", str(path))
    assert done.returncode == 2 and "Traceback" not in done.stderr
    assert "users[0].id: text is not valid Unicode" in done.stderr


def test_a_huge_id_is_cut_in_messages(capsys, tmp_path):
    spec = json.loads(json.dumps(DRF))
    long_id = "x" * 100_000
    for user in spec["users"]:
        user["id"] = long_id                     # a duplicate: the rule quotes the id
    path = tmp_path / "long.json"
    path.write_text(json.dumps(spec))
    code, out, err = cli(capsys, "solve", str(path))
    assert code == 2 and out == ""
    assert error_lines(err) and max(len(line) for line in error_lines(err)) < 400


@pytest.mark.parametrize("brk", ["\x85", "\u2028", "\r", "\x1e"])
def test_a_line_break_in_a_key_or_a_value_stays_in_its_line(capsys, tmp_path, brk):
    """A key or an id holding a character that ends a line (U+0085 and U+2028 too, as
    ``str.splitlines`` reads them) is escaped: each problem is one line under its count."""
    spec = json.loads(json.dumps(DRF))
    spec["users"][0][f"x{brk}y"] = 1                     # an unknown key, named in its path
    spec["users"][1]["id"] = spec["users"][0]["id"] = f"a{brk}b"    # a duplicate id, quoted
    path = tmp_path / "breaks.json"
    path.write_text(json.dumps(spec, ensure_ascii=False), encoding="utf-8")
    code, out, err = cli(capsys, "solve", str(path))
    lines = err.strip().splitlines()
    assert code == 2 and out == ""
    assert len(lines) == 1 + int(lines[0].rsplit("(", 1)[1].split()[0]), err
    assert brk not in err


def test_a_oneof_rule_is_said_in_words(capsys, tmp_path):
    spec = json.loads((ROOT / "specs" / "moldable" / "example1.json").read_text())
    spec["jobs"][0]["work"] = "lots"
    path = tmp_path / "m.json"
    path.write_text(json.dumps(spec))
    code, _, err = cli(capsys, "solve", str(path))
    assert code == 2
    assert "jobs[0].work: must be a number > 0" in err and "or a non-empty list" in err
    assert "{" not in err                        # no schema JSON echoed


# --- options ------------------------------------------------------------------------------------

@pytest.mark.parametrize("argv, option", [
    (["experiment", "moldable", "--instances", "0"], "--instances"),
    (["experiment", "moldable", "--jobs", "-1"], "--jobs"),
    (["experiment", "moldable", "--processors", "0"], "--processors"),
    (["experiment", "moldable", "--beta", "nan"], "--beta"),
    (["experiment", "moldable", "--seed", "-1"], "--seed"),
    (["compare", CLASSIC, "--methods", ","], "--methods"),
    (["solve", CLASSIC, "--method", ""], "--method"),
    (["solve", CLASSIC, "--plot", "/no/such/folder/g.png"], "--plot"),
    (["solve", CLASSIC, "--plot", "gantt.nosuchformat"], "--plot"),
    (["sweep", EMRF1, "--set", "knob=0:1:0.5", "--plot", str(ROOT)], "--plot"),
    (["new", "drf", "-o", str(ROOT)], "--output"),
    (["sweep", EMRF1, "--set", "knob=0:1:1e-320"], "--set"),
    (["sweep", EMRF1, "--set", "[0]=1:2:1"], "--set"),
])
def test_command_line_mistakes_are_usage_errors(capsys, argv, option):
    code, out, err = cli(capsys, *argv)
    assert code == 2 and out == ""
    assert option in err and "invalid spec" not in err and "Traceback" not in err


def test_stdin_is_not_read_twice(capsys):
    code, _, err = cli(capsys, "validate", "-", "--allocation", "-")
    assert code == 2 and "standard input can be read only once" in err


def test_a_reader_that_leaves_early_is_not_an_error():
    done = subprocess.run(f"{sys.executable} -m fairalloc.cli solve {CLASSIC} | head -1; "
                          "exit ${PIPESTATUS[0]}", shell=True, executable="/bin/bash",
                          capture_output=True, text=True, timeout=120)
    assert done.returncode == 0 and done.stderr == ""


# --- the Python API -----------------------------------------------------------------------------

def test_api_dict_specs_are_checked_as_json():
    with pytest.raises(SpecError, match=r"\$: key 3 is not a string"):
        fairalloc.load_spec({**DRF, 3: "x"})
    with pytest.raises(SpecError, match="capacity.cpu: a number beyond 1.8e308"):
        fairalloc.load_spec({**DRF, "capacity": {"cpu": 10**400, "mem": 18}})
    numpy_spec = {**DRF, "capacity": {"cpu": np.int64(9), "mem": np.float32(18)}}
    assert fairalloc.solve(numpy_spec).allocation["A"]["tasks"] == pytest.approx(3)


@pytest.mark.parametrize("call", [
    lambda: fairalloc.solve(CLASSIC, ["lp"]),
    lambda: fairalloc.compare(CLASSIC, "lp"),
    lambda: fairalloc.load_spec(None),
])
def test_api_arguments_of_the_wrong_type_are_type_errors(call):
    with pytest.raises(TypeError):
        call()


@pytest.mark.parametrize("path, value, rule", [
    (("capacity", "cpu"), 1e-9, "capacity.cpu: must be >= 1e-06"),
    (("capacity", "cpu"), 8e14, "capacity.cpu: must be <= 1000000000000"),
    (("users", 0, "weight"), 1e308, "users[0].weight: must be <= 1000000"),
    (("users", 0, "weight"), 1e-7, "users[0].weight: must be >= 1e-06"),
    (("users", 0, "demand", "mem"), 5e-324, "users[0].demand.mem: a positive demand must be at"),
])
def test_numbers_the_solvers_cannot_represent_are_refused_with_the_range(path, value, rule):
    spec = json.loads(json.dumps(DRF))
    node = spec
    for key in path[:-1]:
        node = node[key]
    node[path[-1]] = value
    with pytest.raises(SpecError, match=rule.replace("[", r"\[").replace("]", r"\]")):
        fairalloc.load_spec(spec)
