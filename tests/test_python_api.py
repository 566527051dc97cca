"""The Python API in a notebook: readable reprs, Markdown display, pandas frames, plain numbers
in witnesses, and studies run from Python."""

from __future__ import annotations

import json
import sys
from pathlib import Path

import numpy as np
import pytest
from clitools import slow_cases

import fairalloc
from fairalloc import api

ROOT = Path(__file__).resolve().parents[1]
EMRF1 = ROOT / "specs" / "emrf" / "example1-knob0.5.json"
TOKEN = ROOT / "specs" / "token" / "kmeans-pagerank.json"


@pytest.fixture(scope="module")
def result():
    return fairalloc.solve(str(EMRF1))


def test_repr_is_a_summary_not_an_object_dump(result):
    text = repr(result)
    assert " at 0x" not in text and "Allocation" not in text
    assert text.startswith("<Result EMRF paper, Example 1") and "emrf/lp optimal" in text
    assert "envy_freeness ✗" in text and "2 ids" in text


def test_markdown_display_is_the_markdown_report(result):
    from fairalloc.render import render_markdown

    assert result._repr_markdown_() == render_markdown(result)


def _numpy_inside(value) -> list:
    if isinstance(value, dict):
        return [x for v in value.values() for x in _numpy_inside(v)]
    if isinstance(value, (list, tuple)):
        return [x for v in value for x in _numpy_inside(v)]
    return [value] if isinstance(value, (np.generic, np.ndarray)) else []


@pytest.mark.parametrize("spec", slow_cases([EMRF1, TOKEN, ROOT / "specs" / "moldable" /
                                                "example1.json"], [TOKEN]))
def test_witnesses_hold_plain_python_values(spec):
    for method, r in fairalloc.compare(str(spec)):
        if isinstance(r, fairalloc.Result):
            for f in r.validation:
                assert _numpy_inside(f.witness) == [], (method, f.check, f.witness)


def test_to_pandas_frames_hold_the_result(result):
    frames = result.to_pandas()
    alloc = frames.allocation
    assert list(alloc.index) == ["user1", "user2"]
    assert alloc.loc["user1", "devices.gpu"] == pytest.approx(
        result.allocation["user1"]["devices"]["gpu"])
    assert frames.metrics.loc["utilization.gpu", "value"] == pytest.approx(
        result.metrics["utilization.gpu"])
    checks = frames.checks.set_index("check")
    assert checks.loc["envy_freeness", "verdict"] == "fails"
    assert checks.loc["envy_freeness", "witness"]["envious"] == "user2"


def test_to_pandas_without_pandas_says_how_to_get_it(result, monkeypatch):
    monkeypatch.setitem(sys.modules, "pandas", None)
    with pytest.raises(ImportError, match="needs pandas, which fairalloc does not require: "
                                          "pip install pandas"):
        result.to_pandas()


@pytest.mark.slow
def test_nested_metrics_become_dotted_rows():
    r = fairalloc.solve(str(TOKEN))
    metrics = r.to_pandas().metrics["value"]
    assert metrics["simulation.lottery.performance"] == pytest.approx(
        r.metrics["simulation"]["lottery"]["performance"])


def test_run_study_from_python(tmp_path):
    study = {"study": "py", "kind": "moldable", "seed": 2, "methods": ["exact", "gpusched2"],
             "instances": {"generate": {"jobs": 5, "processors": 3}, "count": 3}}
    rows = fairalloc.run_study(study, tmp_path / "py.duckdb", workers=1)
    assert len(rows["status"]) == 6
    exact = rows["method"] == "exact"
    assert np.all(rows["ratio"][exact] == 1.0) and np.all(rows["ratio"][~exact] >= 1.0)
    again = fairalloc.run_study(study, tmp_path / "py.duckdb", resume=True)
    assert len(again["status"]) == 6


def _untimed(value):
    """A result object without its timings (two runs differ only there)."""
    if isinstance(value, dict):
        return {k: _untimed(v) for k, v in value.items() if not k.endswith("_s")}
    if isinstance(value, list):
        return [_untimed(v) for v in value]
    return value


def test_sweep_from_python_is_the_command_line_sweep(capsys, tmp_path):
    """One implementation: the rows fairalloc sweep prints as JSON are the API's records, the
    store it keeps is the one the API keeps, and the pairs hold the same results."""
    from clitools import cli

    grid = {"knob": [0.0, 1.0], "users[0].weight": [1, 2]}
    code, out, _ = cli(capsys, "sweep", str(EMRF1), "--set", "knob=0,1", "--set",
                       "users[0].weight=1,2", "--methods", "lp,drf", "--format", "json",
                       "--workers", "1", "--store", str(tmp_path / "cli.duckdb"))
    swept = fairalloc.sweep(str(EMRF1), grid, methods=["lp", "drf"], workers=1,
                            store=tmp_path / "api.duckdb")
    assert code == 0 and _untimed(json.loads(out)) == _untimed(swept.records())
    assert swept.study.name == "EMRF paper, Example 1 (knob 0.5): sweep of knob × users[0].weight"
    assert len(swept) == 8 and swept[0][0] == {"knob": 0.0, "users[0].weight": 1}
    assert [r.to_dict() for _, r in swept] == swept.results
    from fairalloc.studies.store import Store

    with Store(tmp_path / "cli.duckdb") as cli_store, Store(tmp_path / "api.duckdb") as api_store:
        assert cli_store.study(None)["spec"] == api_store.study(None)["spec"]


def test_import_table_from_python_is_the_command_line_import(capsys):
    from clitools import cli

    table = str(ROOT / "specs" / "traces" / "emrf-devices.csv")
    code, out, _ = cli(capsys, "import", "emrf", table, "--normalize", "split", "--map",
                       "id=user", "--map", "split.cpu=cpu_gflops", "--map",
                       "split.gpu=gpu_gflops", "--set", "capacity.cpu=100", "--set",
                       "capacity.gpu=800", "--set", "knob=0.5")
    made = fairalloc.import_table("emrf", table, normalize="split", mapping={
        "id": "user", "split.cpu": "cpu_gflops", "split.gpu": "gpu_gflops"},
        sets={"capacity.cpu": 100, "capacity.gpu": 800, "knob": 0.5})
    assert code == 0 and made.text() == out
    assert fairalloc.solve(made.spec).status == "optimal"
    with pytest.raises(fairalloc.ArgumentError, match="^normalize: no key 'splits'"):
        fairalloc.import_table("emrf", table, normalize="splits", mapping={"id": "user"})


def test_simulate_from_python_is_the_command_line_simulation(capsys):
    from clitools import cli

    code, out, _ = cli(capsys, "simulate", str(TOKEN), "--rounds", "60", "--seed", "4",
                       "--mechanisms", "mean-field,round-robin", "--format", "json",
                       "--workers", "1")
    run = fairalloc.simulate(str(TOKEN), rounds=60, seed=4,
                             mechanisms=["mean-field", "round-robin"], workers=1)
    assert code == 0 and json.loads(out) == run.to_dict()
    assert list(run.played) == ["mean-field", "round-robin"] and run.method == "mean-field"
    with pytest.raises(fairalloc.ArgumentError, match="^mechanisms: unknown mechanism"):
        fairalloc.simulate(str(TOKEN), mechanisms=["lottery-ish"])
    with pytest.raises(fairalloc.SpecError, match="needs a spec of a kind with a simulation"):
        fairalloc.simulate(str(EMRF1))


def test_experiment_from_python_is_the_command_line_experiment(capsys):
    from clitools import cli

    code, out, _ = cli(capsys, "experiment", "moldable", "--jobs", "5", "--processors", "3",
                       "--instances", "2", "--methods", "exact,gpusched2", "--workers", "1",
                       "--format", "json")
    run = fairalloc.experiment("moldable", 1, ["exact", "gpusched2"], jobs=5, processors=3,
                               instances=2, workers=1)
    assert code == 0 and _untimed(json.loads(out)) == _untimed(run.to_dict())
    assert len(run.rows["status"]) == 4 and run.progress.stored == 4
    with pytest.raises(fairalloc.ArgumentError, match="^parameters: no parameter 'job'"):
        fairalloc.experiment("moldable", job=5)
    with pytest.raises(fairalloc.ArgumentError, match="^kind: drf has no experiment"):
        fairalloc.experiment("drf")


def test_summary_and_frame_of_a_store_from_python(tmp_path, capsys):
    from clitools import cli

    store = tmp_path / "s.duckdb"
    study = {"study": "sum", "kind": "drf", "seed": 1, "methods": ["lp", "progressive-filling"],
             "grid": {"divisible": [True, False]},
             "instances": {"generate": {"users": 3}, "count": 2}}
    fairalloc.run_study(study, store, workers=1)
    code, out, _ = cli(capsys, "study", "summary", str(store), "--format", "json")
    found = fairalloc.summary(store)
    assert code == 0 and json.loads(out)["groups"] == found.records
    assert found.by == ["divisible", "method"] and found.values == ["ratio"]
    frame = fairalloc.study_frame(store)
    assert len(frame) == 8 and sorted(set(frame["method"])) == ["lp", "progressive-filling"]
    with pytest.raises(fairalloc.ArgumentError, match="^values: 'method' is not a number"):
        fairalloc.summary(store, values=["method"])


def test_study_run_gives_the_summary_the_command_prints(tmp_path, capsys):
    """The closing summary of ``study run`` is the API's data, the summary of the store."""
    from clitools import cli

    study = {"study": "end", "kind": "drf", "seed": 1, "methods": ["lp", "progressive-filling"],
             "grid": {"divisible": [True, False]},
             "instances": {"generate": {"users": 3}, "count": 2}}
    done = api.study_run(study, tmp_path / "a.duckdb", workers=1)
    found, stored = done.summary(), fairalloc.summary(tmp_path / "a.duckdb")
    assert (found.title, found.by, found.values, found.labels) == \
        (stored.title, stored.by, stored.values, stored.labels)
    assert found.records == stored.records and found.by == ["divisible", "method"]
    path = tmp_path / "end.json"
    path.write_text(json.dumps(study))
    code, out, _ = cli(capsys, "study", "run", str(path), "--workers", "1",
                       "--store", str(tmp_path / "b.duckdb"))
    assert code == 0 and out.startswith(found.title)


def test_report_from_python_is_the_command_line_report(tmp_path, capsys):
    from clitools import cli

    study = {"study": "rep", "kind": "drf", "seed": 1, "methods": ["lp"],
             "instances": {"generate": {"users": 3}, "count": 2}}
    store = tmp_path / "s.duckdb"
    fairalloc.run_study(study, store, workers=1)
    code, _, _ = cli(capsys, "report", str(store), "-o", str(tmp_path / "cli.md"))
    written = api.write_report(api.report(store), tmp_path / "api.md")
    from_cli = (tmp_path / "cli.md").read_text().replace("cli_files/", "api_files/")
    assert code == 0 and written[0].read_text() == from_cli
    with pytest.raises(fairalloc.ArgumentError, match="^methods: a study's report"):
        api.report(store, methods=["lp"])
    with pytest.raises(fairalloc.ArgumentError, match="^study: names a study in a store"):
        api.report(str(EMRF1), study="rep")


def test_instance_and_export_from_python_are_the_command_line_ones(tmp_path, capsys):
    from clitools import cli

    study = {"study": "inst", "kind": "drf", "seed": 3, "methods": ["lp"],
             "instances": {"generate": {"users": 4}, "count": 2}}
    store = tmp_path / "s.duckdb"
    fairalloc.run_study(study, store, workers=1)
    code, out, _ = cli(capsys, "study", "instance", str(store), "1")
    spec, seed = api.instance_spec(store, 1)
    assert code == 0 and json.loads(out) == spec and isinstance(seed, int)
    assert api.export(store, tmp_path / "rows.csv") == ("inst", 2)
    assert (tmp_path / "rows.csv").read_text().count("\n") == 3
    with pytest.raises(fairalloc.StoreError, match="has instances 0 to 1, not 5"):
        api.instance_spec(store, 5)


def test_a_comparison_to_pandas_has_a_row_per_method():
    compared = fairalloc.compare(str(EMRF1))
    frame = compared.to_pandas()
    assert list(frame.index) == [m for m, _ in compared]
    lp, drf = dict(compared)["lp"], dict(compared)["drf"]
    assert frame.loc["lp", "ratio"] == 1 and frame.loc["lp", "reference_proven"]
    assert frame.loc["drf", "ratio"] == pytest.approx(lp.objective / drf.objective)  # max kind
    assert frame.loc["lp", "check.envy_freeness"] == "fails"
    assert frame.loc["drf", "metric.utilization.gpu"] == pytest.approx(
        drf.metrics["utilization.gpu"])


def test_a_sweep_to_pandas_has_a_column_per_key_and_a_row_per_point_and_method():
    swept = fairalloc.sweep(str(EMRF1), {"knob": [0, 1], "users[0].weight": [1, 2]},
                            methods=["lp", "drf"], workers=1)
    frame = swept.to_pandas()
    assert len(frame) == 8 and {"knob", "users[0].weight", "method", "status"} <= set(frame)
    for (value, result), (_, row) in zip(swept, frame.iterrows()):
        assert value == {"knob": row["knob"], "users[0].weight": row["users[0].weight"]}
        assert result.method == row["method"] and result.objective == row["objective"]
