"""The command line on moldable specs: solve (JSON contract), compare, new, validate with a
hand-made schedule, list, schema and a small experiment. ``fairalloc.cli.main`` runs in-process
where only the output matters; a subprocess where the exit code, the absence of a traceback or
the installed entry point is the point."""

from __future__ import annotations

import json
from pathlib import Path

import pytest
from clitools import CONTRACT, ROOT, cli, expand_cpuset, run, write

from fairalloc.registry import KINDS

EXAMPLE1 = str(ROOT / "specs" / "moldable" / "example1.json")
CASE = str(ROOT / "specs" / "moldable" / "case-study.json")
MIX = str(ROOT / "specs" / "moldable" / "gpu-mix.json")

KEYS = {"offload_start", "offload_end", "start", "end", "processors"}
KIND = KINDS["moldable"]
EXACT = KIND.exact or ("exact" if "exact" in KIND.methods else None)
HEURISTICS = [m for m in KIND.methods if m != EXACT]

# Example 1 with m = 8, L = 10, the schedule that waits for tau1 (makespan L + 3 = 13)
FEASIBLE = {"tau1": {"offload_start": 0, "offload_end": 1, "start": 1, "end": 3, "processors": 7},
            "tau2": {"offload_start": 1, "offload_end": 2, "start": 3, "end": 13,
                     "processors": 8}}
# the same with tau2 started at 2, on all 8 processors while tau1 still holds 7
CROWDED = {**FEASIBLE, "tau2": {**FEASIBLE["tau2"], "start": 2, "end": 12}}








def checks(result: dict) -> dict[str, bool]:
    return {f["check"]: f["holds"] for f in result["validation"]}


# ---------------------------------------------------------------- solve


def test_solve_example1_json_contract(capsys):
    code, out, err = cli(capsys, "solve", EXAMPLE1, "--format", "json")
    assert code == 0, err
    result = json.loads(out)
    assert CONTRACT <= set(result)
    assert result["problem"] == "moldable" and result["method"] == "gpusched1-star"
    assert result["status"] == "heuristic"
    assert result["objective"] == 14                                # L + 4 without look-ahead
    assert list(result["allocation"]) == ["tau1", "tau2"]
    for row in result["allocation"].values():
        assert set(row) == KEYS | {"processor_ids"}
        held = expand_cpuset(row["processor_ids"])
        assert len(set(held)) == len(held) == row["processors"]
        assert all(0 <= q < 8 for q in held)
    assert result["allocation"]["tau2"] == {"offload_start": 0, "offload_end": 1, "start": 1,
                                            "end": 11, "processors": 8,
                                            "processor_ids": "0-7"}
    m = result["metrics"]
    assert {"makespan", "lower_bound", "ratio", "bound:theorem2"} <= set(m)
    assert m["makespan"] == 14 and m["lower_bound"] == pytest.approx(12.75)
    assert m["ratio"] == pytest.approx(14 / 12.75)
    assert checks(result) == {"feasibility": True, "no_unforced_idle": True,
                              "bound:theorem2": True}
    for finding in result["validation"]:
        assert {"check", "holds", "detail", "witness"} <= set(finding)
    assert result["solver"]["time_s"] >= 0


@pytest.mark.parametrize("method", HEURISTICS)
def test_solve_every_method_on_the_mix(capsys, method):
    code, out, err = cli(capsys, "solve", MIX, "--method", method, "--format", "json")
    assert code == 0, err
    result = json.loads(out)
    assert result["method"] == method
    assert checks(result)["feasibility"] is True
    assert result["objective"] >= result["metrics"]["lower_bound"]
    assert set(result["allocation"]) == {"resnet-batch", "bert-batch", "fft", "stencil", "spmv",
                                         "reduce", "sort", "conv-small", "gemm", "hist"}


def test_solve_lookahead_option_from_the_spec(capsys, tmp_path):
    spec = json.loads(Path(EXAMPLE1).read_text())
    spec["options"] = {"method": "gpusched1", "lookahead": True}
    code, out, err = cli(capsys, "solve", write(tmp_path, spec, "la.json"), "--format", "json")
    assert code == 0, err
    assert json.loads(out)["objective"] == 13                       # L + 3


def test_solve_case_study_table(capsys):
    code, out, err = cli(capsys, "solve", CASE, "--method", "gpusched2")
    assert code == 0, err
    assert "objective 3600" in out and "bound:theorem5" in out and "tau8" in out


def test_solve_through_the_installed_entry_point():
    done = run("solve", "specs/moldable/example1.json", "--format", "json", cwd=str(ROOT))
    assert done.returncode == 0, done.stderr
    assert "Traceback" not in done.stderr
    assert json.loads(done.stdout)["metrics"]["makespan"] == 14


# ---------------------------------------------------------------- compare, list, schema


def test_compare_lists_every_method(capsys):
    code, out, err = cli(capsys, "compare", EXAMPLE1)
    assert code == 0, err
    for method in KIND.methods:
        assert method in out
    assert "theorem1" in out and "theorem2" in out and "theorem5" in out


def test_compare_json(capsys):
    code, out, err = cli(capsys, "compare", EXAMPLE1, "--format", "json")
    assert code == 0, err
    rows = json.loads(out)
    assert {r["method"] for r in rows} == set(KIND.methods)
    by = {r["method"]: r for r in rows}
    assert by["work-conserving"]["objective"] == 82                # mL + 2
    assert by["gpusched2"]["objective"] == 13                      # L + 3
    for r in rows:
        if "error" in r:                       # a method that does not apply (say, exact)
            assert r["method"] == EXACT, r
            continue
        assert checks(r)["feasibility"] is True
        assert all(v for c, v in checks(r).items() if c.startswith("bound:"))


def test_compare_subset(capsys):
    code, out, _ = cli(capsys, "compare", CASE, "--methods", "gpusched2,gpusched1",
                       "--format", "json")
    assert code == 0
    assert [r["method"] for r in json.loads(out)] == ["gpusched2", "gpusched1"]


def test_list_and_schema(capsys):
    code, out, _ = cli(capsys, "list")
    assert code == 0 and "moldable" in out and "gpusched1-star*" in out
    code, out, _ = cli(capsys, "schema", "moldable")
    schema = json.loads(out)
    assert code == 0 and schema["properties"]["problem"]["const"] == "moldable"
    job = schema["properties"]["jobs"]["items"]
    assert set(job["required"]) == {"id", "offload", "max_parallelism", "work"}
    assert job["additionalProperties"] is False


# ---------------------------------------------------------------- new


def test_new_moldable_then_solve(capsys, tmp_path):
    path = tmp_path / "mine.jsonc"
    code, _, err = cli(capsys, "new", "moldable", "-o", str(path))
    assert code == 0 and "fairalloc solve" in err
    text = path.read_text()
    assert text.lstrip().startswith("//")                           # a commented template
    code, out, err = cli(capsys, "solve", str(path), "--format", "json")
    assert code == 0, err
    result = json.loads(out)
    assert result["problem"] == "moldable"
    assert set(result["allocation"]) == {"a", "b", "c"}
    assert checks(result)["feasibility"] is True
    for method in HEURISTICS:
        code, out, err = cli(capsys, "solve", str(path), "--method", method, "--format", "json")
        assert code == 0, (method, err)


# ---------------------------------------------------------------- validate


def test_validate_hand_made_feasible_schedule(capsys, tmp_path):
    path = write(tmp_path, FEASIBLE, "alloc.json")
    code, out, err = cli(capsys, "validate", EXAMPLE1, "--allocation", path, "--format", "json")
    assert code == 0, err
    result = json.loads(out)
    assert result["method"] == "external"
    assert result["metrics"]["makespan"] == 13
    # no processor ids: who waits for whom is unknown; no method: no bound claimed
    assert {f["check"]: f["verdict"] for f in result["validation"]} == {
        "feasibility": "holds", "no_unforced_idle": "unchecked", "bound": "unchecked"}


def test_validate_hand_made_infeasible_schedule_is_a_finding(capsys, tmp_path):
    path = write(tmp_path, {"allocation": CROWDED}, "crowded.json")  # a whole result works too
    code, out, err = cli(capsys, "validate", EXAMPLE1, "--allocation", path, "--format", "json")
    assert code == 1, err                  # an infeasible allocation: the status says so
    assert json.loads(out)["status"] == "infeasible"
    finding = json.loads(out)["validation"][0]
    assert finding["check"] == "feasibility" and finding["holds"] is False
    assert "15 processors busy at t=2, m = 8" in finding["witness"]["problems"]


@pytest.mark.parametrize("change,path,rule", [
    ({"tau2": {k: v for k, v in FEASIBLE["tau2"].items() if k != "end"}}, "tau2.end",
     "required number is missing"),
    ({"tau3": FEASIBLE["tau1"]}, "tau3", "id is not in the spec"),
    ({"tau1": {**FEASIBLE["tau1"], "gpu": 1}}, "tau1.gpu", "unknown key"),
    ({"tau1": {**FEASIBLE["tau1"], "processor_ids": "0-x"}}, "tau1.processor_ids",
     "'0-x' is not an id or a range lo-hi"),
    ({"tau1": {**FEASIBLE["tau1"], "processor_ids": "0-6"}}, "tau2.processor_ids",
     "given for other ids, so needed here too"),
])
def test_validate_bad_allocation_exits_2(capsys, tmp_path, change, path, rule):
    file = write(tmp_path, {**FEASIBLE, **change}, "bad.json")
    code, out, err = cli(capsys, "validate", EXAMPLE1, "--allocation", file)
    assert code == 2 and out == ""
    assert f"  {path}: {rule}" in err, err


def test_validate_accepts_a_moldable_result_of_solve(capsys, tmp_path):
    code, out, _ = cli(capsys, "solve", EXAMPLE1, "--format", "json")
    path = tmp_path / "result.json"
    path.write_text(out)
    code, out, err = cli(capsys, "validate", EXAMPLE1, "--allocation", str(path),
                         "--format", "json")
    assert code == 0, err
    assert checks(json.loads(out))["feasibility"] is True


# ---------------------------------------------------------------- specs without processors


ZERO_M = {"problem": "moldable", "processors": 0, "jobs": [
    {"id": "a", "offload": 1, "max_parallelism": 1, "work": 2},
    {"id": "b", "offload": 1, "max_parallelism": 1, "work": 2}]}


def test_zero_processors_exits_2_naming_processors(capsys, tmp_path):
    """Kept out of tests/bad_specs/ (whose files must report exactly one problem): see the
    xfail test below."""
    code, out, err = cli(capsys, "solve", write(tmp_path, ZERO_M, "zero.json"))
    assert code == 2 and out == ""
    assert "  processors: must be >= 1" in err, err


def test_runs_below_the_time_precision_are_refused(capsys, tmp_path):
    """A run 1e-15 of the horizon is below the precision at which times are compared: a bad
    spec naming the job (exit 2), where one of 1e-10 is fine."""
    jobs = [{"id": "big", "offload": 100.0, "max_parallelism": 1, "work": 1e12},
            {"id": "tiny", "offload": 0.0, "max_parallelism": 1, "work": 1e-3}]
    spec = {"problem": "moldable", "processors": 2, "jobs": jobs}
    code, out, err = cli(capsys, "solve", write(tmp_path, spec, "tiny.json"))
    assert code == 2 and out == ""
    assert "jobs[1].work: w(chi)/chi = 0.001 is below 1e-11 of the horizon" in err, err
    jobs[1]["work"] = 1e2
    code, out, err = cli(capsys, "solve", write(tmp_path, spec, "fine.json"))
    assert code == 0, err


def test_zero_processors_is_one_problem(capsys, tmp_path):
    code, _, err = cli(capsys, "solve", write(tmp_path, ZERO_M, "zero.json"))
    assert code == 2 and "invalid spec (1 problem)" in err, err


# ---------------------------------------------------------------- experiment


def test_experiment_small_run(capsys):
    code, out, err = cli(capsys, "experiment", "moldable", "--jobs", "6", "--processors", "4",
                         "--instances", "4", "--workers", "1", "--speedup", "two-phase",
                         "--methods", ",".join(HEURISTICS), "--format", "json")
    assert code == 0, err
    data = json.loads(out)
    assert set(data["summary"]["ratio"]) == set(HEURISTICS)
    for name, ratios in data["values"]["ratio"].items():
        assert len(ratios) == 4 and min(ratios) >= 1 - 1e-12, name


def test_a_time_limited_exact_run_says_its_gap_and_bound(capsys):
    """An exact run stopped by its limit exits 1, prints the best schedule labelled
    time_limit, and says on stderr how far from proven it is (never 'None')."""
    code, out, err = cli(capsys, "solve", str(ROOT / "specs/moldable/gpu-mix.json"),
                         "--method", "exact", "--time-limit", "1", "--format", "json")
    result = json.loads(out)
    assert code == 1 and result["status"] == "time_limit"
    gap, bound = result["solver"]["gap"], result["solver"]["bound"]
    assert 0 < gap and bound < result["objective"]
    assert f"fairalloc: status time_limit: gap {gap:.6g}, bound {bound:.6g}" in err
    assert "None" not in err


def test_compare_marks_ratios_to_an_unproven_exact_result(capsys):
    """A ratio to an exact run stopped at its limit is a lower bound on the ratio to the
    optimum: it is written ``≥ r`` with a note, and the solver's columns say which bound."""
    code, out, _ = cli(capsys, "compare", str(ROOT / "specs/moldable/gpu-mix.json"),
                       "--methods", "gpusched1,exact", "--time-limit", "1",
                       "--format", "markdown")
    assert "| MIP gap | solver bound |" in out
    row = next(line for line in out.splitlines() if line.startswith("| gpusched1 "))
    assert "≥ " in row.split("|")[5]
    assert "not proven optimal" in out
