"""The command line on token specs: solve (JSON contract), compare, simulate (table, JSON, plot),
new, and validate with an external allocation. In-process where only the output matters; a
subprocess where the exit code is the point."""

from __future__ import annotations

import json

import pytest
from clitools import CONTRACT, ROOT, cli, run, write

SPECS = ROOT / "specs" / "token"
PAIR = str(SPECS / "kmeans-pagerank.json")
FIVE = str(SPECS / "five-spark-types.json")
CHECKS = ["feasibility", "equilibrium", "stationarity", "token_supply",
          "monotone_thresholds"]
SIM_METRICS = {"performance", "relative_performance", "share_uniformity", "envy_free_index",
               "boost_share"}

SMALL = {"problem": "token", "agents": 200, "boosts": 20, "initial_tokens": 1, "max_tokens": 5,
         "discount": 0.99,
         "types": [{"id": "fast", "fraction": 0.5, "utility": {"uniform": [0.1, 0.5], "points": 9}},
                   {"id": "slow", "fraction": 0.5,
                    "utility": {"values": [0.0, 0.1, 0.2], "probabilities": [0.5, 0.3, 0.2]}}]}


@pytest.fixture(scope="module")
def small_json(tmp_path_factory):
    path = write(tmp_path_factory.mktemp("token"), SMALL)
    proc = run("solve", path, "--format", "json")
    assert proc.returncode == 0, proc.stderr
    return path, json.loads(proc.stdout)


@pytest.mark.slow
def test_solve_json_contract(small_json):
    _, result = small_json
    assert CONTRACT <= set(result)
    assert (result["problem"], result["method"], result["status"]) == \
        ("token", "mean-field", "feasible")
    assert set(result["allocation"]) == {"fast", "slow"}
    for row in result["allocation"].values():
        assert set(row) == {"thresholds", "token_distribution", "signal_probability",
                            "mean_tokens"}
        assert len(row["thresholds"]) == len(row["token_distribution"]) == 6
        assert row["thresholds"][0] is None and row["thresholds"][-1] is None
        assert row["signal_probability"][0] == 0 and row["signal_probability"][-1] == 1
    m = result["metrics"]
    assert {"iterations", "converged", "residual", "boost_probability"} <= set(m)
    assert m["converged"] is True and len(m["boost_probability"]) == 6
    assert "simulation" not in m                      # the spec asks for none
    assert [f["check"] for f in result["validation"]] == CHECKS
    assert all(f["holds"] for f in result["validation"])


def test_validate_round_trip_and_a_tampered_allocation(small_json, tmp_path, capsys):
    path, result = small_json
    code, out, err = cli(capsys, "validate", path, "--allocation",
                         write(tmp_path, result, "result.json"), "--format", "json")
    assert code == 0, err
    checked = json.loads(out)
    assert checked["method"] == "external"
    assert all(f["holds"] for f in checked["validation"])
    bad = json.loads(json.dumps(result["allocation"]))
    bad["fast"]["signal_probability"][1:-1] = [1.0] * 4       # signals whatever its utility
    code, out, _ = cli(capsys, "validate", path, "--allocation",
                       write(tmp_path, bad, "bad.json"), "--format", "json")
    checked = json.loads(out)                 # thresholds that say otherwise: no strategy
    assert code == 1 and checked["status"] == "infeasible"
    assert "does not describe" in checked["validation"][0]["detail"]
    bad["fast"]["thresholds"][1:-1] = [0.0] * 4               # below every utility: a strategy
    code, out, _ = cli(capsys, "validate", path, "--allocation",
                       write(tmp_path, bad, "bad.json"), "--format", "json")
    assert code == 0                                      # a failed check is a finding
    eq = next(f for f in json.loads(out)["validation"] if f["check"] == "equilibrium")
    assert not eq["holds"] and eq["witness"]["type"] == "fast"


def test_validate_rejects_a_malformed_allocation(small_json, tmp_path):
    path, result = small_json
    bad = json.loads(json.dumps(result["allocation"]))
    bad["slow"]["token_distribution"] = [0.5, 0.5]
    bad["ghost"] = {}
    proc = run("validate", path, "--allocation", write(tmp_path, bad, "bad.json"))
    assert proc.returncode == 2 and "Traceback" not in proc.stderr
    assert "slow.token_distribution: must be a list of 6 numbers" in proc.stderr
    assert "ghost: id is not in the spec" in proc.stderr


def test_non_convergence_exits_1(tmp_path):
    proc = run("solve", write(tmp_path, {**SMALL, "max_iterations": 1, "tolerance": 1e-12}))
    assert proc.returncode == 1 and "Traceback" not in proc.stderr
    assert "iteration_limit" in proc.stdout
    assert "did not converge in 1 iterations" in proc.stderr


def test_compare_both_methods(tmp_path, capsys):
    code, out, err = cli(capsys, "compare", write(tmp_path, SMALL), "--format", "json")
    assert code == 0, err
    rows = json.loads(out)
    assert [r["method"] for r in rows] == ["mean-field", "mean-field-lp"]
    vi, lp = (r["allocation"] for r in rows)
    for t in ("fast", "slow"):
        for a, b in zip(vi[t]["thresholds"][1:-1], lp[t]["thresholds"][1:-1]):
            assert a == pytest.approx(b, abs=1e-6)


@pytest.mark.slow
def test_simulate_table_json_and_plot(tmp_path, capsys):
    plot = tmp_path / "token.png"
    code, out, err = cli(capsys, "simulate", PAIR, "--rounds", "300", "--mechanisms",
                         "mean-field,round-robin,max-welfare", "--plot", str(plot))
    assert code == 0, err
    assert "mean-field" in out and "round-robin" in out and "share uniformity" in out
    assert plot.stat().st_size > 10_000
    code, out, err = cli(capsys, "simulate", PAIR, "--rounds", "300", "--seed", "5",
                         "--format", "json")
    assert code == 0, err
    data = json.loads(out)
    assert (data["rounds"], data["seed"], data["status"]) == (300, 5, "feasible")
    assert set(data["simulation"]) == {"mean-field", "round-robin", "lottery",
                                       "equal-progress", "equal-division", "max-welfare"}
    for row in data["simulation"].values():
        assert SIM_METRICS <= set(row)


@pytest.mark.slow
def test_solve_with_simulation_reports_every_mechanism(tmp_path):
    data = {**SMALL, "simulation": {"rounds": 200, "seed": 2,
                                    "mechanisms": ["mean-field", "lottery"]}}
    proc = run("solve", write(tmp_path, data), "--format", "json")
    assert proc.returncode == 0, proc.stderr
    sim = json.loads(proc.stdout)["metrics"]["simulation"]
    assert set(sim) == {"mean-field", "lottery"}
    assert 0 < sim["mean-field"]["relative_performance"] <= 1


@pytest.mark.parametrize("argv, message", [
    (["--mechanisms", "fifo"], "--mechanisms: unknown mechanism(s) fifo"),
    (["--rounds", "0"], "--rounds: 0 is out of range"),
    (["--rounds", "100000"], "--rounds: agents x rounds must be at most"),
    (["--method", "nash"], "--method: unknown method 'nash'"),
])
def test_simulate_bad_arguments_exit_2(capsys, argv, message):
    code, out, err = cli(capsys, "simulate", PAIR, *argv)
    assert code == 2 and out == "" and message in err


def test_simulate_needs_a_token_spec(capsys):
    code, _, err = cli(capsys, "simulate", str(ROOT / "specs" / "etf" / "example.json"))
    assert code == 2 and "needs a spec of a kind with a simulation (token), not etf" in err


def test_template_solves(tmp_path, capsys):
    code, out, _ = cli(capsys, "new", "token")
    assert code == 0 and '"problem": "token"' in out
    path = tmp_path / "t.jsonc"
    path.write_text(out.replace('"rounds": 3000', '"rounds": 50'))
    code, out, err = cli(capsys, "solve", str(path), "--format", "json")
    assert code == 0, err
    assert json.loads(out)["status"] == "feasible"


def test_list_and_schema(capsys):
    code, out, _ = cli(capsys, "list")
    assert code == 0 and "mean-field*" in out and "mean-field-lp" in out
    code, out, _ = cli(capsys, "schema", "token")
    assert code == 0 and json.loads(out)["properties"]["problem"]["const"] == "token"
