"""The command line (``fairalloc.cli.main`` in-process for most cases, a subprocess where the
exit code, the absence of a traceback or the installed entry point is the point) and the Python
API that mirrors it."""

from __future__ import annotations

import json
import re
import subprocess
import sys
from pathlib import Path

import numpy as np
import pytest
from clitools import CONTRACT, ROOT, cli, run, write

import fairalloc
from fairalloc.allocation import Allocation
from fairalloc.cli import main
from fairalloc.errors import Violations
from fairalloc.models.emrf import EmrfProblem, delta_bound, knob_for_delta
from fairalloc.result import STATUSES
from fairalloc.spec import load_spec

EMRF1 = str(ROOT / "specs" / "emrf" / "example1-knob0.5.json")
EMRF_BUDGET = str(ROOT / "specs" / "emrf" / "example2-max-unfairness.json")
DRF_CLASSIC = str(ROOT / "specs" / "drf" / "classic.json")
DRF_WHOLE = str(ROOT / "specs" / "drf" / "whole-tasks.json")


# No knob reaches delta <= 0.01 here: at knob 1 the GPU saturates, but user "a" runs on the CPU
# alone, so the residual CPU still lets "a" run ahead of its fair share (delta(1) > 0). Every
# user touches a device another user also uses, so the strategy-proofness probes never leave a
# device without users.
INFEASIBLE = {
    "problem": "emrf",
    "name": "unreachable fairness budget",
    "capacity": {"cpu": 100, "gpu": 800},
    "users": [{"id": "a", "split": {"cpu": 1}},
              {"id": "b", "split": {"cpu": 0.5, "gpu": 0.5}},
              {"id": "c", "split": {"gpu": 1}}],
    "max_unfairness": 0.01,
}








# ---------------------------------------------------------------- solve


@pytest.mark.parametrize("spec, method, ids", [
    (EMRF1, None, {"user1", "user2"}),
    (DRF_CLASSIC, "lp", {"A", "B"}),
    (DRF_WHOLE, None, {"A", "B", "C"}),
])
def test_solve_json_has_the_contract_keys(capsys, spec, method, ids):
    argv = ["solve", spec, "--format", "json"] + (["--method", method] if method else [])
    code, out, err = cli(capsys, *argv)
    assert code == 0, err
    result = json.loads(out)
    assert CONTRACT <= set(result)
    assert result["status"] in STATUSES
    assert isinstance(result["objective"], (int, float))
    assert set(result["allocation"]) == ids
    assert result["solver"]["name"]
    assert result["solver"]["time_s"] >= 0
    assert all(isinstance(v, (int, float)) or v is None for v in result["metrics"].values())
    for finding in result["validation"]:
        assert {"check", "verdict", "holds", "detail", "witness"} <= set(finding)
        assert finding["holds"] == {"holds": True, "fails": False}.get(finding["verdict"])
        assert finding["detail"]
        if finding["verdict"] == "fails":
            assert finding["witness"], finding
    if method:
        assert result["method"] == method


def test_solve_json_per_kind_allocation_shape(capsys):
    _, out, _ = cli(capsys, "solve", EMRF1, "--format", "json")
    emrf = json.loads(out)
    assert emrf["problem"] == "emrf" and emrf["method"] == "lp"
    for entry in emrf["allocation"].values():
        assert set(entry["devices"]) == {"cpu", "gpu"}
        assert entry["total"] == pytest.approx(sum(entry["devices"].values()))
    assert {"utilization.cpu", "utilization.gpu", "delta_bound", "delta_observed", "knob"} \
        <= set(emrf["metrics"])
    assert emrf["metrics"]["knob"] == 0.5
    checks = [f["check"] for f in emrf["validation"]]
    assert checks == ["feasibility", "sharing_incentive", "envy_freeness", "pareto_efficiency",
                      "strategy_proofness", "delta_fairness"]

    _, out, _ = cli(capsys, "solve", DRF_CLASSIC, "--format", "json")
    drf = json.loads(out)
    assert drf["allocation"]["A"]["tasks"] == pytest.approx(3)
    assert drf["allocation"]["B"]["tasks"] == pytest.approx(2)
    assert set(drf["allocation"]["A"]) == {"tasks", "dominant_share", "resources"}


def test_solve_json_through_the_installed_entry_point():
    script = Path(sys.executable).with_name("fairalloc")
    if not script.exists():
        pytest.skip("no fairalloc console script next to this interpreter")
    done = subprocess.run([str(script), "solve", DRF_CLASSIC, "--format", "json"],
                          capture_output=True, text=True, timeout=120)
    assert done.returncode == 0, done.stderr
    assert json.loads(done.stdout)["problem"] == "drf"


@pytest.mark.parametrize("fmt", ["table", "markdown"])
def test_solve_human_formats_show_the_ids(capsys, fmt):
    code, out, _ = cli(capsys, "solve", EMRF1, "--format", fmt)
    assert code == 0
    assert "user1" in out and "user2" in out
    assert "optimal" in out
    code, out, _ = cli(capsys, "solve", DRF_WHOLE, "--format", fmt)
    assert code == 0
    for uid in "ABC":
        assert re.search(rf"^\s*\|?\s*{uid}\s", out, re.MULTILINE), out
    if fmt == "markdown":
        assert out.startswith("## ")
        assert "| id | tasks |" in out


def test_solve_rows_limits_the_table(capsys):
    code, out, _ = cli(capsys, "solve", DRF_WHOLE, "--rows", "1")
    assert code == 0
    assert "2 more" in out


def test_solve_unknown_method_exits_2():
    done = run("solve", EMRF1, "--method", "nosuch")
    assert done.returncode == 2
    assert done.stdout == ""
    assert "Traceback" not in done.stderr
    assert "options.method: unknown method 'nosuch' for emrf (known: lp, wfq, drf)" in done.stderr


@pytest.mark.slow
def test_solve_infeasible_budget_exits_1(capsys, tmp_path):
    problem = EmrfProblem.from_spec(INFEASIBLE, Violations())
    assert delta_bound(problem.market, 1.0) > 0.01        # even DRF (knob 1) is not that fair
    assert knob_for_delta(problem.market, 0.01) > 1
    path = write(tmp_path, INFEASIBLE)

    code, out, err = cli(capsys, "solve", path, "--format", "json")
    assert code == 1
    result = json.loads(out)
    assert result["status"] == "infeasible"
    assert result["objective"] is None
    assert result["metrics"]["knob"] is None
    assert "status infeasible" in err and "0.01" in err

    done = run("solve", path)
    assert done.returncode == 1
    assert "infeasible" in done.stdout
    assert "fairalloc: status infeasible" in done.stderr
    assert "Traceback" not in done.stderr


def test_solve_max_unfairness_finds_a_knob(capsys):
    code, out, _ = cli(capsys, "solve", EMRF_BUDGET, "--format", "json")
    assert code == 0
    result = json.loads(out)
    assert result["status"] == "optimal"
    assert 0 <= result["metrics"]["knob"] <= 1
    assert result["metrics"]["delta_bound"] <= 0.5 + 1e-9
    assert result["metrics"]["delta_observed"] <= 0.5 + 1e-9


def test_emrf_device_nobody_uses(capsys, tmp_path):
    spec = {"problem": "emrf", "capacity": {"cpu": 100, "gpu": 800},
            "users": [{"id": "a", "split": {"gpu": 1}}, {"id": "b", "split": {"gpu": 1}}],
            "knob": 0.5}
    code, out, _ = cli(capsys, "solve", write(tmp_path, spec), "--format", "json",
                       "--no-validate")
    assert code == 0
    assert json.loads(out)["metrics"]["utilization.cpu"] == 0


# ---------------------------------------------------------------- compare


def test_compare_emrf_lists_every_method(capsys):
    code, out, _ = cli(capsys, "compare", EMRF1)
    assert code == 0
    rows = {line.split()[0]: line for line in out.splitlines() if line.strip()}
    for method in ("lp", "wfq", "drf"):
        assert method in rows, out
    assert "optimal" in rows["lp"]
    assert "heuristic" in rows["wfq"] and "heuristic" in rows["drf"]


def test_compare_drf_lists_every_method(capsys):
    code, out, _ = cli(capsys, "compare", DRF_CLASSIC, "--format", "markdown")
    assert code == 0
    assert "| lp | optimal |" in out
    assert "| progressive-filling | optimal |" in out


def test_compare_drf_whole_tasks_shows_lp_as_na(capsys):
    code, out, _ = cli(capsys, "compare", DRF_WHOLE)
    assert code == 0
    lp = next(line for line in out.splitlines() if line.split()[:1] == ["lp"])
    assert "n/a" in lp
    assert "divisible" in out                      # the reason is shown, not swallowed
    assert any(line.split()[:1] == ["progressive-filling"] for line in out.splitlines())

    code, out, _ = cli(capsys, "compare", DRF_WHOLE, "--format", "json")
    assert code == 0
    rows = json.loads(out)
    assert rows[0]["method"] == "lp" and "divisible" in rows[0]["error"]
    assert rows[1]["method"] == "progressive-filling" and CONTRACT <= set(rows[1])


def test_compare_unknown_method_exits_2(capsys):
    code, out, err = cli(capsys, "compare", EMRF1, "--methods", "lp,nosuch")
    assert code == 2 and out == ""
    assert "options.method: unknown method 'nosuch'" in err


# ---------------------------------------------------------------- validate, schema, new, list


def test_validate_without_allocation_solves_and_checks(capsys):
    code, out, _ = cli(capsys, "validate", DRF_CLASSIC, "--format", "json")
    assert code == 0
    result = json.loads(out)
    assert result["method"] == "progressive-filling"
    assert {f["check"] for f in result["validation"]} == {
        "feasibility", "sharing_incentive", "envy_freeness", "pareto_efficiency",
        "strategy_proofness"}


@pytest.mark.parametrize("kind", ["drf", "emrf"])
def test_schema_prints_a_json_schema(capsys, kind):
    code, out, _ = cli(capsys, "schema", kind)
    assert code == 0
    schema = json.loads(out)
    assert schema["$schema"] == "https://json-schema.org/draft/2020-12/schema"
    assert schema["properties"]["problem"] == {"const": kind}
    assert schema["additionalProperties"] is False
    assert {"problem", "capacity", "users"} <= set(schema["required"])


def test_schema_unknown_kind_is_a_usage_error(capsys):
    assert main(["schema", "nosuch"]) == 2
    assert "invalid choice: 'nosuch'" in capsys.readouterr().err


@pytest.mark.parametrize("kind", ["drf", "emrf"])
def test_new_template_is_commented_and_solves(capsys, tmp_path, kind):
    path = str(tmp_path / f"{kind}.jsonc")
    code, out, err = cli(capsys, "new", kind, "-o", path)
    assert code == 0 and out == ""
    assert f"wrote {path}" in err
    text = Path(path).read_text()
    assert any(line.lstrip().startswith("//") for line in text.splitlines())
    assert load_spec(path).kind == kind

    code, printed, _ = cli(capsys, "new", kind)
    assert code == 0 and printed == text

    code, out, err = cli(capsys, "solve", path, "--format", "json")
    assert code == 0, err
    assert json.loads(out)["problem"] == kind


def test_list_shows_both_kinds_and_their_methods(capsys):
    code, out, _ = cli(capsys, "list")
    assert code == 0
    kinds = {line.split()[0] for line in out.splitlines() if line.strip()}
    assert {"drf", "emrf"} <= kinds
    for method in ("progressive-filling", "lp", "wfq"):
        assert method in out


# ---------------------------------------------------------------- sweep


@pytest.mark.slow
def test_sweep_knob_table_and_png(capsys, tmp_path):
    png = tmp_path / "sweep.png"
    code, out, err = cli(capsys, "sweep", EMRF1, "--set", "knob=0:1:0.25", "--plot", str(png))
    assert code == 0, err
    rows = [line.split() for line in out.splitlines()]
    values = [r[0] for r in rows if r and r[0] in {"0", "0.25", "0.5", "0.75", "1"}
              and len(r) > 1 and r[1] == "optimal"]
    assert values == ["0", "0.25", "0.5", "0.75", "1"], out
    assert png.read_bytes()[:8] == b"\x89PNG\r\n\x1a\n"
    assert f"plot written to {png}" in err


def test_sweep_json_other_key(capsys):
    code, out, _ = cli(capsys, "sweep", DRF_CLASSIC, "--set", "users[0].weight=1:3:1",
                       "--format", "json", "--metrics", "utilization.*")
    assert code == 0
    points = json.loads(out)
    assert [p["value"] for p in points] == [1, 2, 3]
    assert all(CONTRACT <= set(p) for p in points)
    tasks_a = [p["allocation"]["A"]["tasks"] for p in points]
    assert tasks_a == sorted(tasks_a) and tasks_a[0] < tasks_a[-1]


@pytest.mark.parametrize("setting, path, rule", [
    ("knob=0:1", "--set", "expected KEY=START:STOP:STEP"),
    ("knob", "--set", "expected KEY=START:STOP:STEP"),
    ("=0:1:0.5", "--set", "expected KEY=START:STOP:STEP"),
    ("knob=0:1:0", "--set", "step must be non-zero"),
    ("knob=1:0:0.5", "--set", "step must be non-zero"),
    ("knob=a:b:c", "--set", "could not convert"),
    ("knob=2:2:1", "knob", "must be <= 1"),
    ("knob=-1:0:1", "knob", "must be >= 0"),
    ("users[7].weight=1:2:1", "users[7]", "no such key"),
])
def test_sweep_bad_set_exits_2(capsys, setting, path, rule):
    code, out, err = cli(capsys, "sweep", EMRF1, "--set", setting)
    assert code == 2
    assert "Traceback" not in err
    assert f"{path}: " in err and rule in err, err


@pytest.mark.slow
def test_sweep_bad_set_subprocess_names_knob():
    done = run("sweep", EMRF1, "--set", "knob=2:2:1")
    assert done.returncode == 2
    assert done.stdout == ""
    assert "Traceback" not in done.stderr
    assert "sweep of knob: invalid spec" in done.stderr
    assert "  grid: at knob=2 the spec breaks knob: must be <= 1" in done.stderr
    done = run("sweep", EMRF1, "--set", "knob=0:1")
    assert done.returncode == 2 and "Traceback" not in done.stderr


def test_sweep_infinite_range_exits_2(capsys):
    code, _, err = cli(capsys, "sweep", EMRF1, "--set", "knob=0:inf:1")
    assert code == 2
    assert "--set" in err


# ---------------------------------------------------------------- the Python API


def test_api_solve_mirrors_cli(capsys):
    _, out, _ = cli(capsys, "solve", EMRF1, "--format", "json")
    from_cli = json.loads(out)
    result = fairalloc.solve(EMRF1)
    assert isinstance(result, fairalloc.Result)
    as_dict = json.loads(result.to_json())
    for key in ("problem", "method", "status", "allocation", "name"):
        assert as_dict[key] == from_cli[key], key
    assert as_dict["objective"] == pytest.approx(from_cli["objective"])
    assert [(f.check, f.holds) for f in result.validation] == \
        [(f["check"], f["holds"]) for f in from_cli["validation"]]
    assert result.finding("delta_fairness").holds


def test_json_output_takes_columns_that_are_views_of_other_arrays():
    """A method may hand over a strided view (a column of a 2-D array): the JSON writer must
    not depend on the memory layout."""
    table = np.arange(6, dtype=float).reshape(3, 2)
    allocation = Allocation(("a", "b", "c"), {("x",): table[:, 1], ("y",): table[::-1, 0]})
    result = fairalloc.Result("drf", "m", "heuristic", None, allocation, {}, [], {})
    assert json.loads(result.to_json())["allocation"] == {
        "a": {"x": 1, "y": 4}, "b": {"x": 3, "y": 2}, "c": {"x": 5, "y": 0}}


def test_api_solve_accepts_spec_dict_and_method():
    spec = load_spec(DRF_CLASSIC)
    by_spec = fairalloc.solve(spec, "lp", validate=False)
    by_dict = fairalloc.solve(dict(spec.raw), "lp", validate=False)
    assert by_spec.validation == [] and by_spec.method == "lp"
    assert by_spec.allocation.to_dict() == by_dict.allocation.to_dict()
    with pytest.raises(fairalloc.SpecError) as info:
        fairalloc.solve(spec, "nosuch")
    assert info.value.violations[0].path == "options.method"


def test_api_compare_and_validate(tmp_path):
    rows = fairalloc.compare(DRF_WHOLE)
    assert [m for m, _ in rows] == ["lp", "progressive-filling"]
    assert isinstance(rows[0][1], str) and "divisible" in rows[0][1]
    assert isinstance(rows[1][1], fairalloc.Result)

    rows = dict(fairalloc.compare(EMRF1, ["wfq", "drf"]))
    assert list(rows) == ["wfq", "drf"]
    drf = rows["drf"]
    checked = fairalloc.validate(EMRF1, drf.allocation.to_dict())
    assert checked.method == "external" and checked.status == "feasible"
    assert checked.finding("envy_freeness").holds == drf.finding("envy_freeness").holds
    path = tmp_path / "result.json"
    path.write_text(drf.to_json())
    from_file = fairalloc.validate(EMRF1, str(path))
    assert from_file.allocation.to_dict() == checked.allocation.to_dict()


def test_api_sweep():
    points = fairalloc.sweep(EMRF1, "knob", [0.0, 1.0])
    assert [v for v, _ in points] == [0.0, 1.0]
    assert [r.metrics["knob"] for _, r in points] == [0.0, 1.0]
    assert points[0][1].objective >= points[1][1].objective     # knob 0 is the most efficient
    seen = []
    fairalloc.sweep(DRF_CLASSIC, "users[1].weight", [1, 2], on_step=lambda v, r: seen.append(v))
    assert seen == [1, 2]
    with pytest.raises(fairalloc.SpecError) as info:     # as fairalloc sweep says it
        fairalloc.sweep(EMRF1, "knob", [0.5, 2])
    assert "sweep of knob" in str(info.value)
    assert [(v.path, v.rule) for v in info.value.violations] == [
        ("grid", "at knob=2 the spec breaks knob: must be <= 1")]
