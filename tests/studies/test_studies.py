"""Studies: the study spec and its errors, seeds, the runner (in process and on a local pool),
the DuckDB store read back with ``duckdb`` itself, resume, references and ratios, summaries,
exports and re-made instances. Dask runs are in ``test_dask.py``."""

from __future__ import annotations

import json
import os
import signal
import time
from pathlib import Path

import duckdb
import numpy as np
import pytest

from fairalloc import api
from fairalloc.cli import main
from fairalloc.errors import SpecError
from fairalloc.models.moldable import lower_bound
from fairalloc.registry import KINDS
from fairalloc.spec import parse_text, template
from fairalloc.studies import accelos as accelos_study
from fairalloc.studies import moldable as moldable_study
from fairalloc.studies.plan import instance_seeds, load_study
from fairalloc.studies.run import run_study
from fairalloc.studies.store import Store, StoreError
from fairalloc.studies.summary import summarise

ROOT = Path(__file__).resolve().parents[2]

SMALL = {"study": "small", "kind": "moldable",
         "instances": {"generate": {"processors": 3}, "count": 3},
         "grid": {"jobs": [3, 4]},
         "methods": ["exact", "gpusched1-star", "offload-then-list"], "seed": 7}


def rows_of(path: Path, query: str = "SELECT * FROM results ORDER BY instance, method"):
    """Rows of a store as dicts, read with duckdb itself (not through fairalloc)."""
    with duckdb.connect(str(path), read_only=True) as con:
        cursor = con.execute(query)
        names = [d[0] for d in cursor.description]
        return [dict(zip(names, row)) for row in cursor.fetchall()]


def run(study: dict, path: Path | None, **kwargs):
    with Store(path) as store:
        return run_study(load_study(study), store, **kwargs)


# ---------------------------------------------------------------- the study spec


@pytest.mark.parametrize("change, path, rule", [
    ({"colour": 1}, "colour", "unknown key"),
    ({"instances": {"generate": {}}}, "instances", 'needs "count" beside "generate"'),
    ({"instances": {"count": 2}}, "instances", "exactly one of generate, specs, base"),
    ({"instances": {"generate": {"size": 3}, "count": 2}}, "instances.generate.size",
     "not a parameter of moldable's random_spec (its parameters: jobs, processors, beta"),
    ({"methods": ["exact", "fastest"]}, "methods[1]", "unknown method for moldable"),
    ({"methods": ["exact", "exact"]}, "methods", "must not list an item twice"),
    ({"reference": "upper_bound"}, "reference", "its bound on the optimum is lower bound"),
    ({"reference": "exact", "methods": ["gpusched2"]}, "reference",
     "the exact method exact must be among the methods"),
    ({"checks": ["envy_freeness"]}, "checks[0]", "unknown check for moldable"),
    ({"grid": {"status": [1]}}, "grid.status", "names a column of the results"),
    ({"grid": {"processors": [2]}}, "grid.processors", "also given in instances.generate"),
    ({"grid": {"jobs": {"start": 1, "stop": 5, "step": -1}}}, "grid.jobs",
     "step must be non-zero and lead from start to stop"),
    ({"grid": {"processors_": [1]}}, "grid", "at processors_=1 the spec breaks processors_"),
    ({"grid": {"jobs": [0]}}, "grid", "at jobs=0 the spec breaks jobs"),
    ({"seed": -1}, "seed", "must be >= 0"),
    ({"time_limit": 0}, "time_limit", "must be > 0"),
    ({"kind": "chess"}, "kind", "unknown problem kind"),
])
def test_a_bad_study_names_the_path_and_rule(change, path, rule):
    with pytest.raises(SpecError) as caught:
        load_study({**SMALL, **change})
    report = caught.value.report()
    assert report.startswith("invalid study"), report
    assert any(v.path == path and rule in v.rule for v in caught.value.violations), report


def test_a_problem_spec_given_as_a_study_says_so_in_one_line():
    with pytest.raises(SpecError) as caught:
        load_study(ROOT / "specs/drf/classic.json")
    [violation] = caught.value.violations
    assert violation.rule.startswith('a spec (key "problem"), not a study: run "fairalloc '
                                     'solve '), violation.rule


def test_a_bad_study_exits_2_with_its_paths(tmp_path, capsys):
    (tmp_path / "s.json").write_text(json.dumps({**SMALL, "repeat": 0, "methods": ["x"]}))
    assert main(["study", "run", str(tmp_path / "s.json"), "--store",
                 str(tmp_path / "s.duckdb")]) == 2
    err = capsys.readouterr().err
    assert "invalid study (2 problems)" in err and "repeat: must be >= 1" in err
    assert "Traceback" not in err and not (tmp_path / "s.duckdb").exists()


def test_spec_files_and_globs_are_checked(tmp_path):
    study = {"study": "files", "kind": "drf", "instances": {"specs": ["nothing-*.json"]}}
    with pytest.raises(SpecError, match="matches no file"):
        load_study(study, tmp_path)
    emrf = ROOT / "specs" / "emrf" / "example1-knob0.5.json"
    with pytest.raises(SpecError, match="is a emrf spec, not drf"):
        load_study({**study, "instances": {"specs": [str(emrf)]}})
    found = load_study({**study, "instances": {"specs": [str(ROOT / "specs/drf/*.json")]}})
    assert len(found.files) == len(list((ROOT / "specs" / "drf").glob("*.json")))


def test_the_template_is_a_valid_study():
    study = load_study(parse_text(template("study"), "study.jsonc", "study"))
    assert study.kind == "moldable" and study.task_count == 2 * 10 * 4


def test_the_preset_files_are_the_experiments_defaults():
    for name, mod in (("moldable-section-v", moldable_study), ("accelos-section-7",
                                                               accelos_study)):
        defaults = {p.name: p.default for p in mod.EXPERIMENT.parameters}
        preset = json.loads((ROOT / "specs" / "studies" / f"{name}.json").read_text())
        assert preset == mod.EXPERIMENT.study(1, **defaults)
        assert load_study(preset).task_count > 0


# ---------------------------------------------------------------- seeds and instances


def test_two_seeds_share_no_instance_and_grid_points_share_theirs():
    a = load_study({**SMALL, "seed": 1})
    b = load_study({**SMALL, "seed": 2})
    specs_a = [json.dumps(a.instance_spec(i)) for i in a.instances()]
    specs_b = [json.dumps(b.instance_spec(i)) for i in b.instances()]
    assert not set(specs_a) & set(specs_b)
    seeds_a = [i.seed for i in a.instances()]
    assert seeds_a[:3] == seeds_a[3:] == instance_seeds(1, 3)   # common random numbers
    assert len(set(seeds_a[:3]) | {i.seed for i in b.instances()}) == 6


# ---------------------------------------------------------------- running and the store


def test_a_study_stores_one_row_per_task_and_ratios_are_right(tmp_path):
    path = tmp_path / "s.duckdb"
    progress = run(SMALL, path, workers=1)
    assert (progress.stored, progress.errors, progress.interrupted) == (18, 0, False)
    rows = rows_of(path)
    assert len(rows) == 18
    assert len({(r["instance"], r["method"], r["repeat"]) for r in rows}) == 18
    study = load_study(SMALL)
    by_instance = {i.id: i for i in study.instances()}
    for r in rows:
        instance = by_instance[r["instance"]]
        assert r["seed"] == instance.seed and r["jobs"] == dict(instance.point)["jobs"]
        exact = next(q for q in rows if q["instance"] == r["instance"] and
                     q["method"] == "exact")
        assert exact["status"] == "optimal" and r["reference"] == exact["objective"]
        assert r["ratio"] == pytest.approx(r["objective"] / exact["objective"])
        assert r["ratio"] >= 1 - 1e-9 and r["check.feasibility"] == "holds"
        # the stored metric is the makespan, recomputed here from the re-made instance
        spec = api.load_spec(study.instance_spec(instance))
        if r["method"] != "exact":     # the exact method reports its MIP bound instead
            assert r["metric.lower_bound"] == pytest.approx(lower_bound(spec.problem))
    assert {r["metric.makespan"] == r["objective"] for r in rows} == {True}


def test_best_and_bound_references(tmp_path):
    path = tmp_path / "s.duckdb"
    run({**SMALL, "study": "best", "reference": "best", "methods": ["gpusched1-star",
                                                                     "offload-then-list"]},
        path, workers=1)
    run({**SMALL, "study": "bound", "reference": "lower_bound", "checks": []}, path, workers=1)
    best = rows_of(path, "SELECT * FROM results WHERE study = 'best'")
    for r in best:
        objectives = [q["objective"] for q in best if q["instance"] == r["instance"]]
        assert r["reference"] == min(objectives) and r["reference_status"] == "best"
    assert min(r["ratio"] for r in best) == pytest.approx(1.0)
    bound = rows_of(path, "SELECT * FROM results WHERE study = 'bound'")
    assert all(r["reference"] == r["reference_bound"] and r["ratio"] >= 1 - 1e-9
               for r in bound)
    assert not any(k.startswith("check.") and r[k] for r in bound for k in r)


def test_a_max_kind_ratio_is_reference_over_objective(tmp_path):
    path = tmp_path / "s.duckdb"
    run({"study": "drf", "kind": "drf", "instances": {"generate": {"users": 4}, "count": 2},
         "reference": "exact"}, path, workers=1)
    rows = rows_of(path)
    for r in rows:
        assert r["reference_status"] == "optimal"
        assert r["ratio"] == pytest.approx(r["reference"] / r["objective"])


def test_time_limited_rows_are_stored_with_gap_and_counted_apart(tmp_path):
    """Instances 0 and 3 of seed 3 (14 jobs, two-phase) are not proven in 10 ms (instances
    1 and 2 are, by the list schedule meeting the bound); however the machine times them,
    each row is labelled by what happened."""
    path = tmp_path / "s.duckdb"
    study = {"study": "hard", "kind": "moldable", "seed": 3, "time_limit": 0.01,
             "instances": {"generate": {"jobs": 14, "processors": 8, "speedup": "two-phase"},
                           "count": 4},
             "methods": ["exact", "gpusched1-star"], "checks": []}
    run(study, path, workers=1)
    rows = rows_of(path)
    exact = {r["instance"]: r for r in rows if r["method"] == "exact"}
    limited = {i for i, r in exact.items() if r["status"] == "time_limit"}
    assert limited, "no exact run hit its limit: the test proves nothing"
    for r in rows:
        if r["instance"] in limited:
            e = exact[r["instance"]]
            assert e["gap"] > 0 and e["bound"] < e["objective"]
            # no ratio pretends to be one to the optimum
            assert r["reference_status"] == "exact time_limit" and r["ratio"] is None
        else:
            assert r["reference_status"] == "optimal" and r["ratio"] >= 1 - 1e-9
    with Store(path) as store:
        records = summarise(store.rows("hard"), ["method"], ["ratio"])
    assert records[0]["ratio apart"] == {"time_limit": len(limited)}
    assert records[1]["ratio apart"] == {"exact time_limit": len(limited)}
    assert records[1]["ratio"]["n"] == 4 - len(limited)


def test_a_failing_method_is_an_error_row_and_the_study_goes_on(tmp_path, monkeypatch):
    def broken(problem):
        raise RuntimeError("the method fell over")

    monkeypatch.setitem(KINDS["moldable"].methods, "broken", broken)
    path = tmp_path / "s.duckdb"
    progress = run({**SMALL, "methods": ["gpusched2", "broken"]}, path, workers=1)
    assert progress.errors == 6 and progress.stored == 12
    rows = rows_of(path)
    errors = [r for r in rows if r["method"] == "broken"]
    assert {r["status"] for r in errors} == {"error"}
    assert errors[0]["error"] == "RuntimeError: the method fell over"
    assert {r["status"] for r in rows if r["method"] == "gpusched2"} == {"heuristic"}


def test_resume_adds_nothing_and_an_interrupted_run_completes(tmp_path):
    path = tmp_path / "s.duckdb"
    seen = []

    def interrupt(row):
        seen.append(row)
        if len(seen) == 5:
            raise KeyboardInterrupt

    progress = run(SMALL, path, workers=1, on_row=interrupt)
    assert progress.interrupted and progress.stored == 5
    assert len(rows_of(path)) == 5
    with pytest.raises(StoreError, match="already holds 5 rows .* --resume continues it"):
        run(SMALL, path, workers=1)
    progress = run(SMALL, path, workers=1, resume=True)
    assert (progress.skipped, progress.stored) == (5, 13)
    keys = [(r["instance"], r["method"], r["repeat"]) for r in rows_of(path)]
    assert len(keys) == len(set(keys)) == 18
    progress = run(SMALL, path, workers=1, resume=True)
    assert progress.stored == 0 and len(rows_of(path)) == 18
    with pytest.raises(StoreError, match="different spec"):
        run({**SMALL, "seed": 8}, path, resume=True)


@pytest.mark.slow
@pytest.mark.parametrize("settle", [0, 1.0])
def test_the_local_pool_survives_a_killed_worker(tmp_path, settle):
    """A worker process killed mid-run breaks the pool: a new pool runs the tasks in flight
    again, and every row arrives exactly once. With ``settle`` the pool has noticed the death
    before the driver submits again, so the break surfaces at submit, not at a result."""
    import multiprocessing

    killed = []

    def kill_one(row):
        children = multiprocessing.active_children()
        if not killed and children:
            os.kill(children[0].pid, signal.SIGKILL)
            killed.append(children[0].pid)
            time.sleep(settle)

    study = {**SMALL, "grid": {"jobs": [5, 6, 7]}, "instances": {
        "generate": {"processors": 3}, "count": 4}, "methods": ["exact", "gpusched2"]}
    progress = run(study, tmp_path / "s.duckdb", workers=2, on_row=kill_one)
    assert killed and progress.errors == 0
    keys = [(r["instance"], r["method"]) for r in rows_of(tmp_path / "s.duckdb")]
    assert len(keys) == len(set(keys)) == 24


def test_repeat_makes_one_row_per_repeat(tmp_path):
    run({**SMALL, "repeat": 2, "methods": ["gpusched2"]}, tmp_path / "s.duckdb", workers=1)
    rows = rows_of(tmp_path / "s.duckdb")
    assert sorted({r["repeat"] for r in rows}) == [0, 1] and len(rows) == 12
    first = {r["instance"]: r["objective"] for r in rows if r["repeat"] == 0}
    assert all(first[r["instance"]] == r["objective"] for r in rows)


# ---------------------------------------------------------------- command line


@pytest.fixture
def stored(tmp_path):
    (tmp_path / "small.json").write_text(json.dumps(SMALL))
    path = tmp_path / "small.duckdb"
    assert main(["study", "run", str(tmp_path / "small.json"), "--store", str(path),
                 "--workers", "1", "-q"]) == 0
    return path


def test_summary_formats(stored, capsys):
    capsys.readouterr()
    assert main(["study", "summary", str(stored), "--format", "json"]) == 0
    data = json.loads(capsys.readouterr().out)
    assert data["by"] == ["jobs", "method"] and len(data["groups"]) == 6
    first = data["groups"][0]
    assert (first["jobs"], first["method"], first["count"]) == (3, "exact", 3)
    assert first["ratio"]["mean"] == 1 and first["checks"]["feasibility"]["holds"] == 1
    heuristic = data["groups"][1]["ratio"]
    assert heuristic["ci_low"] <= heuristic["mean"] <= heuristic["ci_high"]
    assert main(["study", "summary", str(stored), "--format", "csv", "--by", "method"]) == 0
    lines = capsys.readouterr().out.splitlines()
    assert lines[0].startswith("method,count,statuses.") and len(lines) == 4
    assert main(["study", "summary", str(stored), "--format", "markdown",
                 "--values", "ratio,time_s"]) == 0
    assert "| value | jobs | method |" in capsys.readouterr().out
    assert main(["study", "summary", str(stored), "--by", "colour"]) == 2
    assert "--by: no column 'colour'" in capsys.readouterr().err


@pytest.mark.slow
def test_summary_plot(stored, tmp_path, capsys):
    png = tmp_path / "s.png"
    assert main(["study", "summary", str(stored), "--plot", str(png)]) == 0
    assert png.read_bytes()[:8] == b"\x89PNG\r\n\x1a\n"


def test_export_parquet_and_csv_read_back(stored, tmp_path, capsys):
    for name in ("rows.parquet", "rows.csv"):
        out = tmp_path / name
        assert main(["study", "export", str(stored), "-o", str(out)]) == 0
        reader = "read_parquet" if name.endswith("parquet") else "read_csv_auto"
        count, ratios = duckdb.sql(f"SELECT count(*), count(ratio) FROM {reader}('{out}')"
                                   ).fetchall()[0]
        assert (count, ratios) == (18, 18)
    assert main(["study", "export", str(stored), "-o", str(tmp_path / "rows.xlsx")]) == 2


def test_instance_remakes_the_spec(stored, tmp_path, capsys):
    spec_file = tmp_path / "i4.json"
    assert main(["study", "instance", str(stored), "4", "-o", str(spec_file)]) == 0
    row = rows_of(stored, "SELECT * FROM results WHERE instance = 4 AND method = 'exact'")[0]
    remade = json.loads(spec_file.read_text())
    assert remade == moldable_study.random_spec(row["seed"], jobs=4, processors=3)
    assert api.solve(remade, "exact").objective == pytest.approx(row["objective"])
    assert main(["study", "instance", str(stored), "99"]) == 2
    assert "instances 0 to 5, not 99" in capsys.readouterr().err


def test_a_store_that_is_not_one(tmp_path, capsys):
    (tmp_path / "x.duckdb").write_text("not a database")
    assert main(["study", "summary", str(tmp_path / "x.duckdb")]) == 2
    assert "cannot open as a DuckDB store" in capsys.readouterr().err
    assert main(["study", "summary", str(tmp_path / "none.duckdb")]) == 2
    assert "no such store" in capsys.readouterr().err


def test_new_study_prints_the_template(capsys):
    assert main(["new", "study"]) == 0
    assert capsys.readouterr().out == template("study")


# ---------------------------------------------------------------- experiments are studies


def test_the_moldable_experiment_reproduces_direct_solves(capsys):
    """The experiment's ratios are the study rows': each is a heuristic's makespan on the
    re-made instance over its lower bound, computed here without the study layer."""
    assert main(["experiment", "moldable", "--jobs", "5", "--processors", "3", "--instances",
                 "3", "--workers", "1", "--methods", "gpusched2", "--format", "json",
                 "--seed", "4"]) == 0
    data = json.loads(capsys.readouterr().out)
    study = load_study(data["study"])
    expected = []
    for instance in study.instances():
        spec = api.load_spec(study.instance_spec(instance))
        expected.append(api.solve(spec, "gpusched2").objective / lower_bound(spec.problem))
    assert data["values"]["ratio"]["gpusched2"] == pytest.approx(expected)
    assert data["summary"]["ratio"]["gpusched2"]["mean"] == pytest.approx(np.mean(expected))


# ---------------------------------------------------------------- sweep and simulate are studies

EMRF1 = str(ROOT / "specs" / "emrf" / "example1-knob0.5.json")
TOKEN = str(ROOT / "specs" / "token" / "kmeans-pagerank.json")


def test_a_sweep_is_a_study_whose_rows_hold_each_points_result(tmp_path, capsys):
    """``sweep --store`` keeps the study: one row per value, its grid column the value, its
    result the solve contract of the spec with that value set (solved here directly)."""
    path = tmp_path / "sweep.duckdb"
    assert main(["sweep", EMRF1, "--set", "knob=0:1:0.5", "--store", str(path), "--format",
                 "json"]) == 0
    points = json.loads(capsys.readouterr().out)
    rows = rows_of(path, "SELECT * FROM results ORDER BY instance")
    assert [r["knob"] for r in rows] == [p["value"] for p in points] == [0, 0.5, 1]
    base = api.load_spec(EMRF1).raw
    for row, point in zip(rows, points):
        direct = api.solve({**base, "knob": row["knob"]}).to_dict()
        assert json.loads(row["result"])["allocation"] == point["allocation"]
        assert point["allocation"] == direct["allocation"]
        assert row["objective"] == pytest.approx(direct["objective"])
        assert row["metric.utilization.gpu"] == pytest.approx(
            direct["metrics"]["utilization.gpu"])
    assert main(["study", "summary", str(path), "--values", "objective", "--format",
                 "json"]) == 0
    summary = json.loads(capsys.readouterr().out)
    assert [g["knob"] for g in summary["groups"]] == [0, 0.5, 1]


@pytest.mark.parametrize("fmt", ["markdown", "csv"])
def test_sweep_formats_are_the_formats_asked_for(fmt, capsys):
    assert main(["sweep", EMRF1, "--set", "knob=0:1:0.5", "--format", fmt]) == 0
    out = capsys.readouterr().out
    lines = [line for line in out.splitlines() if line.strip()]
    if fmt == "markdown":
        assert lines[0].startswith("## ") and lines[1].startswith("| knob | status |")
        assert sum(line.startswith("|") for line in lines) == 5       # header, rule, 3 rows
    else:
        import csv
        import io

        table = list(csv.reader(io.StringIO(out)))
        assert table[0][:3] == ["knob", "status", "objective"] and len(table) == 4


def test_simulate_is_a_one_row_study_and_its_table_is_the_rows(tmp_path, capsys):
    path = tmp_path / "sim.duckdb"
    assert main(["simulate", TOKEN, "--rounds", "200", "--mechanisms", "lottery,mean-field",
                 "--store", str(path), "--format", "json"]) == 0
    report = json.loads(capsys.readouterr().out)["simulation"]
    (row,) = rows_of(path)
    assert json.loads(row["simulation"]) == {"rounds": 200, "seed": 1,
                                             "mechanisms": ["lottery", "mean-field"]}
    for mechanism in ("lottery", "mean-field"):
        for key in ("performance", "share_uniformity", "envy_free_index"):
            assert row[f"metric.simulation.{mechanism}.{key}"] == pytest.approx(
                report[mechanism][key])
    # the study re-makes the instance with the simulation set, and solving it gives the report
    assert main(["study", "instance", str(path), "0"]) == 0
    remade = json.loads(capsys.readouterr().out)
    assert remade["simulation"]["rounds"] == 200
    assert json.loads(api.solve(remade).to_json())["metrics"]["simulation"] == report


@pytest.mark.slow
def test_the_default_executor_starts_serial_and_moves_to_a_pool(tmp_path, monkeypatch):
    """Without ``workers``: a short study runs in this process (no pool start-up); once
    ``SERIAL_SECONDS`` have passed, the tasks left go to a pool of other processes."""
    import fairalloc.studies.run as runner

    study = {**SMALL, "methods": ["gpusched2"]}
    run(study, tmp_path / "a.duckdb")
    here = runner.worker_name()
    assert {r["worker"] for r in rows_of(tmp_path / "a.duckdb")} == {here}
    monkeypatch.setattr(runner, "SERIAL_SECONDS", 0.0)
    progress = run(study, tmp_path / "b.duckdb")
    workers = [r["worker"] for r in rows_of(tmp_path / "b.duckdb",
                                            "SELECT worker FROM runs ORDER BY finished")]
    assert progress.stored == 6 and workers[0] == here
    assert here not in workers[1:]
