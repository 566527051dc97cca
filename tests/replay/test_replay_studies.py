"""A replay is a study task: a study of a replay document sweeps its keys and policies on the
local pool (or Dask), resumable, storing a row per run and a row per job per run; a policy that
fails mid-run is an error row with the simulated time; the same seeds give the same rows."""

from __future__ import annotations

import json

import duckdb
import numpy as np
import pytest
from clitools import cli

from fairalloc.errors import SpecError
from fairalloc.registry import KINDS
from fairalloc.replay import document as replays
from fairalloc.replay.run import play
from fairalloc.solvers import hetero as solvers
from fairalloc.studies.plan import load_study
from fairalloc.studies.replays import run_fields
from fairalloc.studies.run import run_study
from fairalloc.studies.store import Store

JOBS = 16
DOCUMENT = {"replay": "tiny", "kind": "hetero",
            "cluster": {"workers": {"v100": 1, "p100": 1, "k80": 1}},
            "trace": {"generator": "gavel", "seed": 0, "jobs": JOBS, "rate": 4.0},
            "policy": {"method": "max-min"}, "mechanism": {"name": "rounds"},
            "measure": {"checks": {"every": 4, "names": ["feasibility"]}}}
STUDY = {"study": "tiny-replays", "kind": "hetero", "instances": {"base": "tiny.json"},
         "grid": {"trace.rate": [2.0, 4.0], "policy.method": ["max-min", "agnostic-max-min"],
                  "trace.seed": [0, 1]}}
RUNS = 2 * 2 * 2


def written(tmp_path, study: dict | None = None, document: dict | None = None) -> str:
    (tmp_path / "tiny.json").write_text(json.dumps(document or DOCUMENT))
    path = tmp_path / "study.json"
    path.write_text(json.dumps(study or STUDY))
    return str(path)


def table(store, query: str) -> list[tuple]:
    with duckdb.connect(str(store), read_only=True) as con:
        return con.execute(query).fetchall()


JOB_ROWS = ('SELECT instance, method, job, position, arrival, start, finish, jct, queueing, '
            'rho FROM replay_jobs ORDER BY instance, method, position')
RUN_ROWS = ('SELECT instance, method, status, "trace.rate", "trace.seed", '
            '"metric.average_jct_s", "metric.p99_jct_s", "metric.makespan_s", '
            '"metric.worst_rho", "check.feasibility", "check.finish_time_fairness" FROM runs '
            'ORDER BY instance, method')


def test_the_policies_are_the_methods_and_the_grid_sets_replay_keys(tmp_path):
    study = load_study(written(tmp_path))
    assert study.replay and study.methods == ("max-min", "agnostic-max-min")
    assert [k for k, _ in study.grid] == ["trace.rate", "trace.seed"]
    task = next(t for t in study.tasks() if t.instance.point == (("trace.rate", 4.0),
                                                                  ("trace.seed", 1)))
    assert task.edits == (("trace.rate", 4.0), ("trace.seed", 1))


@pytest.mark.slow
@pytest.mark.parametrize("workers", [1, 2])
def test_a_replay_study_stores_a_row_per_run_and_per_job(tmp_path, workers):
    store = tmp_path / "s.duckdb"
    with Store(store) as db:
        progress = run_study(load_study(written(tmp_path)), db, workers=workers)
    assert progress.stored == RUNS and not progress.errors
    runs = table(store, RUN_ROWS)
    assert {r[2] for r in runs} == {"done"} and len(runs) == RUNS
    assert all(r[5] > 0 and r[6] >= r[5] and r[7] > 0 for r in runs)
    assert {r[9] for r in runs} == {"holds"}
    jobs = table(store, JOB_ROWS)
    assert len(jobs) == RUNS * JOBS
    for _, _, _, _, arrival, start, finish, jct, queueing, rho in jobs:
        assert start >= arrival and finish > start and rho > 0
        assert jct == pytest.approx(finish - arrival) and queueing == pytest.approx(
            start - arrival)
    # the run's average JCT and rho are its jobs' (no window: every job)
    by_run = table(store, 'SELECT r."metric.average_jct_s", avg(j.jct), r."metric.average_rho", '
                          'avg(j.rho) FROM runs r JOIN replay_jobs j USING (study, instance, '
                          'method, "repeat") GROUP BY ALL')
    assert all(a == pytest.approx(b) and c == pytest.approx(d) for a, b, c, d in by_run)
    shares = table(store, "SELECT min(share), max(share), count(DISTINCT resource) "
                          "FROM replay_utilization")
    assert shares[0][0] >= 0 and shares[0][1] <= 1 + 1e-9 and shares[0][2] == 3


@pytest.mark.slow
def test_the_same_seeds_give_the_same_rows(tmp_path):
    stores = []
    for name in ("a", "b"):
        store = tmp_path / f"{name}.duckdb"
        with Store(store) as db:
            run_study(load_study(written(tmp_path)), db, workers=1)
        stores.append(store)
    assert table(stores[0], JOB_ROWS) == table(stores[1], JOB_ROWS)
    assert table(stores[0], RUN_ROWS) == table(stores[1], RUN_ROWS)
    seeds = table(stores[0], 'SELECT "trace.seed", avg(arrival) FROM replay_jobs JOIN runs '
                             'USING (study, instance, method, "repeat") GROUP BY ALL')
    assert len({round(mean, 6) for _, mean in seeds}) == 2    # the seed changes the trace


@pytest.mark.slow
def test_a_partial_run_is_resumed_without_a_row_twice(tmp_path):
    store = tmp_path / "s.duckdb"
    seen = []

    def stop_after_three(row):
        seen.append(row)
        if len(seen) == 3:
            raise KeyboardInterrupt

    with Store(store) as db:
        first = run_study(load_study(written(tmp_path)), db, workers=1,
                          on_row=stop_after_three)
    assert first.interrupted and first.stored == 3
    assert table(store, "SELECT count(*) FROM replay_jobs") == [(3 * JOBS,)]
    with Store(store) as db:
        rest = run_study(load_study(written(tmp_path)), db, workers=1, resume=True)
    assert rest.skipped == 3 and rest.stored == RUNS - 3
    assert table(store, "SELECT count(*), count(DISTINCT (instance, method, position)) "
                        "FROM replay_jobs") == [(RUNS * JOBS, RUNS * JOBS)]


@pytest.mark.slow
def test_a_policy_failing_mid_run_is_an_error_row_with_the_simulated_time(tmp_path,
                                                                          monkeypatch):
    def flaky(problem, memory):
        memory["calls"] = memory.get("calls", 0) + 1
        if memory["calls"] > 3:
            raise RuntimeError("the solver is gone")
        return solvers.max_min(problem)

    monkeypatch.setitem(KINDS["hetero"].replay.policies, "flaky", flaky)
    study = {**STUDY, "grid": {"trace.seed": [0]}, "methods": ["flaky", "max-min"]}
    store = tmp_path / "s.duckdb"
    with Store(store) as db:
        progress = run_study(load_study(written(tmp_path, study)), db, workers=1)
    assert progress.errors == 1
    rows = dict((r[0], r[1:]) for r in table(
        store, 'SELECT method, status, error, "metric.end_s", result FROM runs'))
    status, error, end, result = rows["flaky"]
    assert status == "error" and "the solver is gone" in error and error.startswith("at ")
    assert float(error.split()[1]) == pytest.approx(end, abs=0.1) and end > 0
    assert json.loads(result)["summary"]["status"] == "error"
    assert rows["max-min"][0] == "done"
    unfinished = table(store, "SELECT count(*) - count(finish) FROM replay_jobs "
                              "WHERE method = 'flaky'")
    assert unfinished[0][0] > 0        # the jobs the run did not finish have no finish


@pytest.mark.parametrize("edit, path, rule", [
    ({"grid": {"trace.rate": [-1.0]}}, "grid", "trace.rate"),
    ({"grid": {"trace.seed": [0]}, "methods": ["max-min", "lottery"]}, "methods[1]",
     "unknown policy"),
    ({"checks": ["feasibility"]}, "checks", "set it in the replay document"),
    ({"methods": ["max-min"]}, 'grid["policy.method"]', "give them once"),
    # a whole policy varied would run agnostic-max-min in rows labelled max-min
    ({"grid": {"policy": [{"method": "max-min", "point": "centre"},
                          {"method": "agnostic-max-min"}]}}, "grid.policy", "policy.method"),
])
def test_a_bad_replay_study_is_refused_with_its_path(tmp_path, edit, path, rule):
    with pytest.raises(SpecError) as caught:
        load_study(written(tmp_path, {**STUDY, **edit}))
    assert any(v.path.startswith(path) and rule in str(v) for v in caught.value.violations), \
        caught.value.report()


def test_a_replay_study_with_a_bad_trace_file_exits_2(tmp_path, capsys):
    (tmp_path / "jobs.csv").write_text("id,arrival,model,scale_factor,steps\na,0,A3C,1,-4\n")
    study = written(tmp_path, {**STUDY, "grid": {"trace.jobs": [1]}},
                    {**DOCUMENT, "trace": {"table": "jobs.csv"}})
    code, out, err = cli(capsys, "study", "run", study, "--store",
                         str(tmp_path / "s.duckdb"))
    assert code == 2 and "Traceback" not in err
    assert "line 2, column 'steps'" in err


@pytest.mark.slow
def test_the_command_line_runs_and_summarises_a_replay_study(tmp_path, capsys):
    store = str(tmp_path / "s.duckdb")
    code, out, _ = cli(capsys, "study", "run", written(tmp_path), "--store", store,
                       "--workers", "1")
    assert code == 0 and "tiny-replays (hetero replays)" in out
    code, out, _ = cli(capsys, "study", "summary", store, "--by", "trace.rate,method",
                       "--format", "json")
    groups = json.loads(out)["groups"]
    assert code == 0 and len(groups) == 4
    assert all(g["metric.average_jct_s"]["n"] == 2 for g in groups)
    assert np.isfinite([g["metric.average_jct_s"]["mean"] for g in groups]).all()


@pytest.mark.slow
def test_a_store_made_before_the_replay_tables_gains_them_when_written(tmp_path):
    store = tmp_path / "old.duckdb"
    Store(store).close()
    with duckdb.connect(str(store)) as con:        # a format 2 store as made before replays
        con.execute("DROP TABLE replay_jobs; DROP TABLE replay_utilization")
    with Store(store, read_only=True) as db:
        assert not db.has_replays and db.studies() == []
    with Store(store) as db:
        run_study(load_study(written(tmp_path, {**STUDY, "grid": {"trace.seed": [0]}})), db,
                  workers=1)
    with Store(store, read_only=True) as db:
        assert db.has_replays and len(db.replay_rows("tiny-replays")["jct"]) == JOBS


@pytest.mark.slow
def test_study_instance_gives_the_document_a_row_ran_which_replays_to_that_row(tmp_path,
                                                                            capsys):
    store = str(tmp_path / "s.duckdb")
    assert cli(capsys, "study", "run", written(tmp_path), "--store", store,
               "--workers", "1", "-q")[0] == 0
    instance = 3                # its rows: the document's own policy and the study's second
    row = next(r for r in table(store, RUN_ROWS) if r[:2] == (instance, "agnostic-max-min"))
    code, out, _ = cli(capsys, "study", "instance", store, str(instance), "--method",
                       "agnostic-max-min")
    document = json.loads(out)
    assert code == 0 and document["policy"] == {"method": "agnostic-max-min"}
    assert document["trace"]["rate"] == row[3] and document["trace"]["seed"] == row[4]
    again = run_fields(play(replays.load(document, tmp_path)))
    assert (again["metric.average_jct_s"], again["metric.p99_jct_s"],
            again["metric.makespan_s"]) == row[5:8]
    stored = table(store, f"SELECT jct FROM replay_jobs WHERE instance = {instance} AND "
                          "method = 'agnostic-max-min' ORDER BY position")
    assert list(again["replay_jobs"]["jct"]) == [j for (j,) in stored]


@pytest.mark.slow
def test_study_instance_of_a_replay_study_of_several_policies_needs_one(tmp_path, capsys):
    store = str(tmp_path / "s.duckdb")
    assert cli(capsys, "study", "run", written(tmp_path), "--store", store,
               "--workers", "1", "-q")[0] == 0
    code, out, err = cli(capsys, "study", "instance", store, "0")
    assert code == 2 and not out and err.count("\n") == 1
    assert "--method" in err and "max-min, agnostic-max-min" in err
    code, _, err = cli(capsys, "study", "instance", store, "0", "--method", "fifo")
    assert code == 2 and "'fifo' is not a policy of study tiny-replays" in err


@pytest.mark.slow
def test_a_replay_study_summary_prints_durations_in_hours_and_stores_seconds(tmp_path,
                                                                            capsys):
    store = str(tmp_path / "s.duckdb")
    assert cli(capsys, "study", "run", written(tmp_path), "--store", store,
               "--workers", "1", "-q")[0] == 0
    by = ("--by", "trace.rate,method")
    groups = json.loads(cli(capsys, "study", "summary", store, *by, "--format", "json")[1])
    seconds = [g["metric.average_jct_s"]["mean"] for g in groups["groups"]]
    assert min(seconds) > 3600          # stored in seconds: the jobs take hours
    code, out, _ = cli(capsys, "study", "summary", store, *by, "--format", "markdown")
    lines = [line.split("|")[1:-1] for line in out.splitlines() if line.startswith("|")]
    header, rows = [c.strip() for c in lines[0]], lines[2:]
    assert code == 0 and "mean (h)" in header and "p90 (h)" in header
    assert "average JCT, window (h)" in out
    mean = header.index("mean (h)")
    assert [float(r[mean]) for r in rows] == pytest.approx([s / 3600 for s in seconds],
                                                          abs=0.005)
    code, out, _ = cli(capsys, "study", "summary", store, *by, "--format", "markdown",
                       "--values", "metric.makespan_s,metric.worst_rho")
    assert code == 0 and "| makespan (h) |" in out and "| worst_rho |" in out


@pytest.mark.slow
def test_a_table_trace_study_is_read_and_its_instances_replay_from_anywhere(tmp_path, capsys,
                                                                          monkeypatch):
    """A replay document's trace table is found beside the document; the study stores the
    document with that path made absolute, so that ``study instance`` (and ``--resume``) from
    another folder, and the instance written to a third, still find the table."""
    made, elsewhere, out_dir = (tmp_path / "made", tmp_path / "elsewhere", tmp_path / "out")
    for folder in (made, elsewhere, out_dir):
        folder.mkdir()
    (made / "jobs.csv").write_text("id,arrival,model,scale_factor,steps\n"
                                   "a,0,A3C,1,4000\nb,600,A3C,1,9000\n")
    monkeypatch.chdir(made)
    study = written(made, {**STUDY, "grid": {"policy.method": ["max-min", "isolated"]}},
                    {**DOCUMENT, "trace": {"table": "jobs.csv"}})
    store = str(made / "s.duckdb")
    assert cli(capsys, "study", "run", "study.json", "--store", store, "--workers", "1",
               "-q")[0] == 0
    monkeypatch.chdir(elsewhere)
    code, _, err = cli(capsys, "study", "instance", store, "0", "--method", "isolated",
                       "-o", str(out_dir / "row.json"))
    assert code == 0, err
    document = json.loads((out_dir / "row.json").read_text())
    assert document["trace"]["table"] == str(made / "jobs.csv")
    again = run_fields(play(replays.load(str(out_dir / "row.json"))))
    stored = table(store, "SELECT jct FROM replay_jobs WHERE method = 'isolated' "
                          "ORDER BY position")
    assert list(again["replay_jobs"]["jct"]) == [j for (j,) in stored]
    assert cli(capsys, "study", "run", study, "--store", store, "--resume", "-q")[0] == 0


def test_a_stored_run_says_whether_it_ran_dry(tmp_path):
    """A run whose window ended after its last arrival (a listed trace cannot be continued)
    is kept as such in its row, with the last arrival, so a study's summary shows the points
    whose window's last jobs ran on an emptying cluster."""
    def stored(gap: float) -> dict:
        jobs = [{"id": f"j{i}", "arrival": gap * i, "steps": 7200,
                 "throughput": {"v100": 2}} for i in range(4)]
        doc = {"replay": "dry", "kind": "hetero", "cluster": {"workers": {"v100": 1}},
               "trace": {"jobs": jobs}, "policy": {"method": "max-min"},
               "measure": {"window": [0, 1], "finish_time_fairness": False}}
        return run_fields(play(replays.load(doc, tmp_path)))

    dry = stored(100.0)
    assert dry["metric.arrivals_ended_first"] == 1.0 and dry["metric.last_arrival_s"] == 300.0
    assert stored(10_000.0)["metric.arrivals_ended_first"] == 0.0
