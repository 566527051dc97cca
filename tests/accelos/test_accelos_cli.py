"""The command line on accelos specs: solve (JSON contract), compare, validate with an external
allocation, new / schema, and ``fairalloc experiment accelos`` (table, JSON, plot).
``fairalloc.cli.main`` runs in-process where only the output matters; a subprocess where the
exit code or the absence of a traceback is the point."""

from __future__ import annotations

import json
import re

import pytest
from clitools import CONTRACT, ROOT, cli, run, write

FIGURE3 = str(ROOT / "specs" / "accelos" / "figure3.json")
MIX = str(ROOT / "specs" / "accelos" / "parboil-mix4.json")
METHODS = ["ilp", "accelos", "fcfs", "equal-threads"]
CHECKS = ["feasibility", "all_resident", "pareto_efficiency", "envy_freeness", "max_min"]
METRICS = {"utilization.threads", "utilization.local_memory", "utilization.registers",
           "thread_spread", "jain_index", "min_weighted_dominant_share", "unfairness",
           "fairness_improvement", "throughput_speedup", "overlap", "makespan", "antt", "stp",
           "max_slowdown", "min_slowdown"}


def test_solve_figure3_json_contract(capsys):
    code, out, err = cli(capsys, "solve", FIGURE3, "--format", "json")
    assert code == 0, err
    result = json.loads(out)
    assert CONTRACT <= set(result)
    assert result["problem"] == "accelos" and result["method"] == "accelos"
    assert result["status"] == "heuristic"
    assert result["objective"] == pytest.approx(0.5)        # 2 of 4 units each
    assert result["allocation"] == {
        "A": {"work_groups": 2, "threads": 512, "local_memory": 32768, "registers": 16384},
        "B": {"work_groups": 2, "threads": 512, "local_memory": 16384, "registers": 16384}}
    assert METRICS <= set(result["metrics"])
    assert [f["check"] for f in result["validation"]] == CHECKS
    assert all(f["holds"] for f in result["validation"])


@pytest.mark.parametrize("method", METHODS)
def test_solve_every_method_on_the_mix(capsys, method):
    code, out, err = cli(capsys, "solve", MIX, "--method", method, "--format", "json")
    # the thread-only rule breaks local memory on this mix: an infeasible result, exit 1
    assert code == (1 if method == "equal-threads" else 0), err
    result = json.loads(out)
    assert result["method"] == method
    assert result["status"] == {"ilp": "optimal", "equal-threads": "infeasible"}.get(method,
                                                                                     "heuristic")
    alloc = result["allocation"]
    assert list(alloc) == ["bfs", "cutcp", "stencil", "tpacf"]
    device = json.loads((ROOT / "specs" / "accelos" / "parboil-mix4.json").read_text())["device"]
    checks = {f["check"]: f["holds"] for f in result["validation"]}
    if method != "equal-threads":          # threads only: may break local memory (and does)
        for resource, total in device.items():
            assert sum(a[resource] for a in alloc.values()) <= total
        assert checks["pareto_efficiency"]
    assert checks["feasibility"] == (method != "equal-threads")
    assert checks["all_resident"] == (method != "fcfs")
    assert checks["max_min"] == (method in ("ilp", "accelos"))


def test_compare_puts_ilp_first_and_rates_everyone_against_it(capsys):
    code, out, err = cli(capsys, "compare", FIGURE3, "--format", "json")
    assert code == 0, err           # FCFS leaves B waiting: a finding, not an infeasibility
    results = {r["method"]: r for r in json.loads(out)}
    assert list(results) == METHODS
    assert results["ilp"]["objective"] == pytest.approx(0.5)
    assert results["fcfs"]["objective"] == 0
    code, out, _ = cli(capsys, "compare", MIX)
    assert code == 1                # equal-threads breaks local memory there: infeasible
    assert "infeasible" in out
    assert "ilp ÷" in out            # a max objective: ilp ÷ objective, 1 is optimal


def test_validate_external_allocation(capsys, tmp_path):
    """3 / 1 groups on figure 3: feasible and saturated, but not max-min and B envies A."""
    path = write(tmp_path, {"A": {"work_groups": 3}, "B": {"work_groups": 1}}, "a.json")
    code, out, err = cli(capsys, "validate", FIGURE3, "--allocation", path, "--format", "json")
    assert code == 0, err
    result = json.loads(out)
    verdict = {f["check"]: f for f in result["validation"]}
    assert verdict["feasibility"]["holds"] and verdict["pareto_efficiency"]["holds"]
    assert not verdict["max_min"]["holds"]
    assert verdict["envy_freeness"]["witness"]["kernel"] == "B"
    assert verdict["envy_freeness"]["witness"]["envies"] == "A"
    assert result["metrics"]["utilization.threads"] == 1


def test_validate_wrong_resource_column_is_a_finding(capsys, tmp_path):
    path = write(tmp_path, {"A": {"work_groups": 2, "threads": 100},
                            "B": {"work_groups": 2, "threads": 512}}, "b.json")
    code, out, _ = cli(capsys, "validate", FIGURE3, "--allocation", path, "--format", "json")
    assert code == 1
    assert json.loads(out)["status"] == "infeasible"
    feasibility = json.loads(out)["validation"][0]
    assert not feasibility["holds"] and "A's threads" in feasibility["detail"]


def test_validate_bad_allocation_file_exits_2(tmp_path):
    path = write(tmp_path, {"A": {"groups": 2}, "B": {"work_groups": 2}}, "c.json")
    done = run("validate", FIGURE3, "--allocation", path)
    assert done.returncode == 2 and "Traceback" not in done.stderr
    assert "  A.groups: unknown key" in done.stderr


def test_new_then_solve_and_schema(capsys, tmp_path):
    path = tmp_path / "mine.jsonc"
    code, _, _ = cli(capsys, "new", "accelos", "-o", str(path))
    assert code == 0
    code, out, err = cli(capsys, "solve", str(path), "--format", "json")
    assert code == 0, err
    assert set(json.loads(out)["allocation"]) == {"stencil", "sgemm", "histo"}
    code, out, _ = cli(capsys, "schema", "accelos")
    assert set(json.loads(out)["required"]) == {"problem", "device", "kernels"}


@pytest.mark.slow
def test_experiment_json_and_plot(capsys, tmp_path):
    png = tmp_path / "accelos.png"
    code, out, err = cli(capsys, "experiment", "accelos", "--kernels", "2", "--mixes", "3",
                         "--seed", "5", "--workers", "1", "--format", "json", "--plot", str(png))
    assert code == 0, err
    assert png.read_bytes()[:8] == b"\x89PNG\r\n\x1a\n"
    data = json.loads(out)
    labels = {"kepler accelos", "kepler ilp", "gcn accelos", "gcn ilp"}
    for metric in ("fairness_improvement", "throughput_speedup"):
        assert set(data["summary"][metric]) == labels
        assert all(len(v) == 3 for v in data["values"][metric].values())
    # every improvement is a positive, finite ratio of two makespans or two unfairnesses
    values = [x for by in data["values"].values() for v in by.values() for x in v]
    assert all(0 < x < float("inf") for x in values)


def test_experiment_table_and_bad_options(capsys):
    code, out, err = cli(capsys, "experiment", "accelos", "--kernels", "2", "--mixes", "2",
                         "--devices", "gcn", "--methods", "accelos", "--workers", "1")
    assert code == 0, err
    assert re.search(r"gcn\s+accelos", out) and "kepler" not in out
    done = run("experiment", "accelos", "--devices", "fermi", "--mixes", "1")
    assert done.returncode == 2 and "--devices: unknown device(s) fermi" in done.stderr
