"""The command line on etf specs: solve (JSON contract), compare, sweep with a plot, new, and
validate with an external allocation. ``fairalloc.cli.main`` runs in-process where only the
output matters; a subprocess where the exit code, the absence of a traceback or the installed
entry point is the point."""

from __future__ import annotations

import json

import pytest
from clitools import CONTRACT, ROOT, cli, run, write

import fairalloc

EXAMPLE = str(ROOT / "specs" / "etf" / "example.json")
RESNET = str(ROOT / "specs" / "etf" / "resnet-mobilenet.json")
WEIGHTED = str(ROOT / "specs" / "etf" / "weighted.json")
MIX = str(ROOT / "specs" / "etf" / "datacenter-mix.json")

ETF_METRICS = {"time_fairness", "energy_fairness", "system_fairness", "utilization", "phi_fair"}
ETF_CHECKS = ["feasibility", "time_guarantee", "pareto_efficiency", "max_min",
              "strategy_proofness"]
METHODS = ["waterfill", "greedy", "leximin", "milp", "time-fair", "energy-fair"]








# ---------------------------------------------------------------- solve


def test_solve_example_json_contract(capsys):
    code, out, err = cli(capsys, "solve", EXAMPLE, "--format", "json")
    assert code == 0, err
    result = json.loads(out)
    assert CONTRACT <= set(result)
    assert result["problem"] == "etf" and result["method"] == "waterfill"
    assert result["status"] == "heuristic"
    assert result["objective"] == pytest.approx(27)
    assert result["allocation"] == {"A": {"time": 14, "energy": 28},
                                    "B": {"time": 9, "energy": 27},
                                    "C": {"time": 7, "energy": 56}}
    m = result["metrics"]
    assert ETF_METRICS <= set(m)
    assert m["time_fairness"] == pytest.approx(0.5)
    assert m["energy_fairness"] == pytest.approx(27 / 56)
    assert m["system_fairness"] == pytest.approx(27 / 56)
    assert m["utilization"] == pytest.approx(1.0)
    assert m["phi_fair"] == pytest.approx(9 / 23)
    assert [f["check"] for f in result["validation"]] == ETF_CHECKS
    for finding in result["validation"]:
        assert {"check", "holds", "detail", "witness"} <= set(finding)
        assert finding["holds"] == (finding["check"] != "strategy_proofness")
        if not finding["holds"]:
            assert finding["witness"]["app"] and finding["witness"]["misreport"]
    assert result["solver"]["time_s"] >= 0


@pytest.mark.parametrize("method", METHODS)
def test_solve_every_method_on_the_mix(capsys, method):
    # milp's checks re-run the MILP for every misreport the SP probe tries (about 8 s here):
    # its allocation is checked in-process instead
    extra = ["--no-validate"] if method == "milp" else []
    code, out, err = cli(capsys, "solve", MIX, "--method", method, "--format", "json", *extra)
    assert code == 0, err
    result = json.loads(out)
    assert result["method"] == method
    assert result["status"] == ("optimal" if method in ("leximin", "milp") else "heuristic")
    alloc = result["allocation"]
    assert len(alloc) == 7
    assert all(set(entry) == {"time", "energy"} for entry in alloc.values())
    assert sum(entry["time"] for entry in alloc.values()) == 1000
    assert alloc["whisper-small"]["time"] <= 80 and alloc["batch-etl"]["time"] <= 300
    if method == "milp":
        result = fairalloc.validate(MIX, result["allocation"]).to_dict()
    checks = {f["check"]: f["holds"] for f in result["validation"]}
    assert checks["feasibility"] and checks["pareto_efficiency"]
    if method != "energy-fair":
        assert checks["time_guarantee"]
    if method in ("waterfill", "greedy", "leximin", "milp"):
        assert checks["max_min"]


def test_solve_table_and_markdown(capsys):
    code, out, _ = cli(capsys, "solve", EXAMPLE)
    assert code == 0
    assert "time_fairness" in out and "phi_fair" in out and "strategy_proofness" in out
    code, out, _ = cli(capsys, "solve", EXAMPLE, "--format", "markdown")
    assert code == 0
    assert "| id | time | energy |" in out
    assert "| A | 14 | 28 |" in out and "| C | 7 | 56 |" in out
    assert "| strategy_proofness | ✗ fails |" in out


# ---------------------------------------------------------------- compare


def test_compare_lists_every_method(capsys):
    code, out, err = cli(capsys, "compare", EXAMPLE)
    assert code == 1, err                           # energy-fair's allocation is infeasible
    rows = {line.split()[0]: line.split() for line in out.splitlines() if line.split()}
    for method in METHODS:
        assert method in rows, out
    assert rows["leximin"][1] == rows["milp"][1] == "optimal"
    for method in ("leximin", "milp", "waterfill", "greedy"):
        status = "optimal" if method in ("leximin", "milp") else "heuristic"
        assert rows[method][1:3] == [status, "27"], rows[method]
    # energy-fair ignores phi's guarantee: no objective to beat the optimum with, and marked
    assert rows["energy-fair"][1:6] == ["infeasible", "—", rows["energy-fair"][3], "—", "—"]
    assert rows["energy-fair"][7] == "✗"                       # the feasibility column
    # the exact method comes first
    order = [line.split()[0] for line in out.splitlines()
             if line.split() and line.split()[0] in METHODS]
    assert order == ["leximin", "waterfill", "greedy", "milp", "time-fair", "energy-fair"]


def test_compare_json(capsys):
    code, out, _ = cli(capsys, "compare", EXAMPLE, "--format", "json")
    assert code == 1
    results = {r["method"]: r for r in json.loads(out)}
    assert list(results) == ["leximin", "waterfill", "greedy", "milp", "time-fair",
                             "energy-fair"]
    slices = {m: [r["allocation"][a]["time"] for a in "ABC"] for m, r in results.items()}
    assert slices["leximin"] == slices["milp"] == slices["waterfill"] == slices["greedy"] \
        == [14, 9, 7]
    assert slices["time-fair"] == [10, 10, 10]
    assert slices["energy-fair"] == [16, 10, 4]
    tg = {m: next(f["holds"] for f in r["validation"] if f["check"] == "time_guarantee")
          for m, r in results.items()}
    assert tg == {"leximin": True, "milp": True, "waterfill": True, "greedy": True,
                  "time-fair": True, "energy-fair": False}
    assert {m: (r["status"], r["objective"]) for m, r in results.items()
            if m in ("leximin", "energy-fair")} == {"leximin": ("optimal", 27),
                                                    "energy-fair": ("infeasible", None)}


# ---------------------------------------------------------------- sweep


@pytest.mark.slow
def test_sweep_phi_table_and_png(capsys, tmp_path):
    png = tmp_path / "phi.png"
    code, out, err = cli(capsys, "sweep", RESNET, "--set", "phi=0:1:0.05", "--plot", str(png))
    assert code == 0, err
    assert png.read_bytes()[:8] == b"\x89PNG\r\n\x1a\n"
    assert f"plot written to {png}" in err
    lines = out.splitlines()
    header = next(line for line in lines if line.split()[:1] == ["phi"])
    for column in ("time_fairness", "energy_fairness", "system_fairness"):
        assert column in header, header
    rows = [line.split() for line in lines if line.split() and line.split()[1:2] == ["heuristic"]]
    assert len(rows) == 21, out
    assert [float(r[0]) for r in rows] == pytest.approx([i / 20 for i in range(21)])
    names = header.split()
    f_t = [float(r[names.index("time_fairness")]) for r in rows]
    f_e = [float(r[names.index("energy_fairness")]) for r in rows]
    assert f_t[-1] == 1 and f_e[0] == 1
    assert f_t == sorted(f_t) and f_e == sorted(f_e, reverse=True)


def test_sweep_phi_json(capsys):
    code, out, _ = cli(capsys, "sweep", WEIGHTED, "--set", "phi=0:1:0.5", "--format", "json")
    assert code == 0
    points = json.loads(out)
    assert [p["value"] for p in points] == [0, 0.5, 1]
    assert all(CONTRACT <= set(p) for p in points)
    assert [p["allocation"]["A1"]["time"] for p in points] == [30, 30, 40]


@pytest.mark.slow
def test_sweep_phi_out_of_range_exits_2():
    done = run("sweep", EXAMPLE, "--set", "phi=0:2:1")
    assert done.returncode == 2
    assert done.stdout == "" and "Traceback" not in done.stderr
    assert "sweep of phi: invalid spec" in done.stderr
    assert "  grid: at phi=2 the spec breaks phi: must be <= 1" in done.stderr


# ---------------------------------------------------------------- new, validate


def test_new_etf_then_solve(capsys, tmp_path):
    path = tmp_path / "mine.jsonc"
    code, _, err = cli(capsys, "new", "etf", "-o", str(path))
    assert code == 0
    assert f"wrote {path}" in err
    assert path.read_text().startswith("//")
    code, out, err = cli(capsys, "solve", str(path), "--format", "json")
    assert code == 0, err
    result = json.loads(out)
    assert result["problem"] == "etf"
    assert set(result["allocation"]) == {"A", "B", "C"}
    assert sum(a["time"] for a in result["allocation"].values()) == 30


def test_new_etf_to_stdout(capsys):
    code, out, _ = cli(capsys, "new", "etf")
    assert code == 0
    assert '"problem": "etf"' in out and "phi" in out


def test_schema_etf(capsys):
    code, out, _ = cli(capsys, "schema", "etf")
    assert code == 0
    schema = json.loads(out)
    assert set(schema["required"]) == {"problem", "quantum", "phi", "apps"}


def test_validate_external_time_only_allocation(capsys, tmp_path):
    """{"A": {"time": 10}, ...}: time-fair slices checked from the definitions."""
    path = write(tmp_path, {"A": {"time": 10}, "B": {"time": 10}, "C": {"time": 10}}, "a.json")
    code, out, err = cli(capsys, "validate", EXAMPLE, "--allocation", path, "--format", "json")
    assert code == 0, err
    result = json.loads(out)
    assert result["method"] == "external" and result["objective"] is None
    assert result["metrics"]["time_fairness"] == pytest.approx(1.0)
    assert result["metrics"]["energy_fairness"] == pytest.approx(20 / 80)
    verdict = {f["check"]: f for f in result["validation"]}
    assert list(verdict) == ["feasibility", "time_guarantee", "pareto_efficiency", "max_min",
                             "strategy_proofness"]
    assert verdict["strategy_proofness"]["verdict"] == "unchecked"      # no mechanism named
    assert "--method" in verdict["strategy_proofness"]["detail"]
    assert verdict["feasibility"]["holds"] and verdict["time_guarantee"]["holds"]
    assert verdict["pareto_efficiency"]["holds"]
    assert verdict["max_min"]["holds"] is False
    assert verdict["max_min"]["witness"]["to"] == "A"           # A (2 W) is poorest: 20 J


def test_validate_external_whole_result(capsys, tmp_path):
    """A whole result (from solve --format json) is accepted, and it checks out."""
    code, out, _ = cli(capsys, "solve", EXAMPLE, "--format", "json")
    path = tmp_path / "result.json"
    path.write_text(out)
    code, out, err = cli(capsys, "validate", EXAMPLE, "--allocation", str(path),
                         "--format", "json")
    assert code == 0, err
    verdict = {f["check"]: f["verdict"] for f in json.loads(out)["validation"]}
    assert verdict.pop("strategy_proofness") == "unchecked"
    assert set(verdict.values()) == {"holds"}, verdict


def test_validate_external_broken_allocation(capsys, tmp_path):
    path = write(tmp_path, {"A": {"time": 5}, "B": {"time": 10}, "C": {"time": 4}}, "b.json")
    code, out, _ = cli(capsys, "validate", EXAMPLE, "--allocation", path, "--format", "json")
    assert code == 1                                 # 19 whole slices, but A and C below 7
    checked = json.loads(out)
    assert checked["status"] == "infeasible"
    verdict = {f["check"]: f for f in checked["validation"]}
    assert verdict["feasibility"]["detail"] == "A gets 5 < its guarantee 7 (phi = 0.7)"
    assert verdict["time_guarantee"]["holds"] is False
    assert verdict["time_guarantee"]["witness"]["app"] in ("A", "C")
    assert verdict["pareto_efficiency"]["holds"] is False
    assert verdict["pareto_efficiency"]["witness"]["idle"] == 11


@pytest.mark.parametrize("allocation, path, rule", [
    ({"A": {"time": 10}, "B": {"time": 10}}, "C", "missing"),
    ({"A": {"time": 10}, "B": {"time": 10}, "C": {"time": 10}, "D": {"time": 1}}, "D",
     "id is not in the spec"),
    ({"A": {"time": "10"}, "B": {"time": 10}, "C": {"time": 10}}, "A.time", "must be a number"),
    ({"A": {"slices": 10}, "B": {"time": 10}, "C": {"time": 10}}, "A.slices", "unknown key"),
])
def test_validate_bad_external_allocation_exits_2(capsys, tmp_path, allocation, path, rule):
    file = write(tmp_path, allocation, "bad.json")
    code, out, err = cli(capsys, "validate", EXAMPLE, "--allocation", file)
    assert code == 2
    assert out == "" and "Traceback" not in err
    assert "invalid allocation" in err
    assert f"  {path}: " in err and rule in err, err


# ---------------------------------------------------------------- bounds of the spec


def test_huge_quantum_is_rejected_or_exact(tmp_path):
    spec = {"problem": "etf", "quantum": 10**20, "phi": 0.5,
            "apps": [{"id": "A", "power": 2}, {"id": "B", "power": 3}]}
    path = write(tmp_path, spec, "huge.json")
    done = run("solve", path, "--format", "json", "--no-validate")
    assert "Traceback" not in done.stderr and "Warning" not in done.stderr, done.stderr
    if done.returncode == 2:
        assert "  quantum: " in done.stderr
    else:
        assert done.returncode == 0, done.stderr
        alloc = json.loads(done.stdout)["allocation"]
        assert sum(int(a["time"]) for a in alloc.values()) == 10**20
