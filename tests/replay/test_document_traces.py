"""Traces from files in a replay document: a table mapped to the kind's columns, Gavel's trace
files and the shipped production trace; bad rows exit 2 naming file, line and column, and a
job that can run nowhere is refused by its id."""

from __future__ import annotations

import json

import numpy as np
import pytest
from clitools import cli
from test_trace_tables import JOBS_GAVEL, gavel_file

from fairalloc import api
from fairalloc.errors import SpecError
from fairalloc.replay import document
from fairalloc.replay.elasticflow import elasticflow

MODEL = "ResNet-50 (batch size 64)"
WORKERS = {"v100": 2, "p100": 2, "k80": 2}


def replay_doc(trace: dict, workers: dict | None = None) -> dict:
    return {"replay": "files", "kind": "hetero", "cluster": {"workers": workers or WORKERS},
            "trace": trace, "policy": {"method": "max-min"}, "mechanism": {"name": "ideal"},
            "measure": {"finish_time_fairness": False}}


def write_doc(tmp_path, trace: dict, name: str = "replay.json", **kw) -> str:
    path = tmp_path / name
    path.write_text(json.dumps(replay_doc(trace, **kw)))
    return str(path)


def test_a_table_trace_is_mapped_and_read_beside_the_document(tmp_path):
    (tmp_path / "jobs.csv").write_text(
        f"job,submitted,model,scale_factor,steps\nb,60,{MODEL},1,500\na,0,{MODEL},2,900\n")
    path = write_doc(tmp_path, {"table": "jobs.csv",
                                "map": {"id": "job", "arrival": "submitted"}})
    doc = document.load(path)
    assert doc.trace.ids == ("a", "b") and doc.trace.arrival.tolist() == [0, 60]
    run = api.replay(doc)
    assert run.status == "done" and np.isfinite(run.jobs["jct"]).all()


def test_a_gavel_trace_file_is_read_as_it_is(tmp_path):
    gavel_file(tmp_path, JOBS_GAVEL)
    doc = document.load(write_doc(tmp_path, {"table": "gavel.trace", "format": "gavel"},
                                  workers={"v100": 4, "p100": 4, "k80": 4}))
    assert doc.trace.ids == ("0", "2", "1")
    assert doc.trace.columns["steps"].tolist() == [775977, 36, 19178]


def test_a_gavel_files_priorities_weigh_in_the_replay(tmp_path):
    """Two jobs sharing one V100: at priorities 1 and 5 the second gets five times the first's
    share under weighted max-min and finishes sooner than when both are at 1 (the readers'
    column was once ``priority`` while the replay read ``weight``, so priorities were
    ignored)."""
    def jct(priorities: tuple[int, int]) -> dict[str, float]:
        gavel_file(tmp_path, [(MODEL, 20000, 1, p, 0) for p in priorities])
        doc = document.load(write_doc(tmp_path, {"table": "gavel.trace", "format": "gavel"},
                                      workers={"v100": 1}))
        run = api.replay(doc)
        assert run.status == "done"
        return dict(zip(run.jobs["id"].tolist(), run.jobs["jct"].tolist()))

    even, weighted = jct((1, 1)), jct((1, 5))
    assert even["0"] == pytest.approx(even["1"])
    assert weighted["1"] < 0.9 * even["1"] and weighted["0"] == pytest.approx(even["0"])


def test_the_shipped_trace_is_typed_and_starts_at_zero(tmp_path):
    trace = {"shipped": "elasticflow", "cluster": "cluster10", "types_seed": 3,
             "larger": "drop", "jobs": 40}
    doc = document.load(replay_doc(trace, {"v100": 36, "p100": 36, "k80": 36}))
    raw = elasticflow("cluster10")
    kept = [raw.ids.index(i) for i in doc.trace.ids]
    assert doc.trace.n == 40 and doc.trace.arrival[0] == 0
    assert np.allclose(doc.trace.arrival, raw.arrival[kept] - raw.arrival[kept[0]])
    again = document.load(replay_doc(trace, {"v100": 36, "p100": 36, "k80": 36}))
    assert again.trace.columns["model"].tolist() == doc.trace.columns["model"].tolist()
    other = document.load(replay_doc({**trace, "types_seed": 4},
                                     {"v100": 36, "p100": 36, "k80": 36}))
    assert other.trace.columns["model"].tolist() != doc.trace.columns["model"].tolist()


@pytest.mark.parametrize("trace, path, rule", [
    ({"table": "missing.csv"}, "trace.table", "no such file: missing.csv"),
    ({"table": "jobs.csv", "format": "slurm"}, "trace.format", "unknown trace format"),
    ({"table": "jobs.csv", "map": {"colour": "c"}}, "trace.map", "no trace column 'colour'"),
    ({"table": "jobs.csv", "seed": 1}, "trace.seed", "a table trace takes only"),
    ({"shipped": "philly", "types_seed": 1, "larger": "drop"}, "trace.shipped",
     "no shipped trace 'philly'"),
    ({"shipped": "elasticflow", "cluster": "cluster99", "types_seed": 1, "larger": "cap"},
     "trace.cluster", "no cluster 'cluster99'"),
    ({"shipped": "elasticflow", "cluster": "cluster10", "types_seed": 1}, "trace.larger",
     "needs 'larger'"),
])
def test_a_bad_file_trace_is_named_by_its_json_path(tmp_path, trace, path, rule):
    (tmp_path / "jobs.csv").write_text(f"id,arrival,model,scale_factor,steps\na,0,{MODEL},1,9\n")
    with pytest.raises(SpecError) as caught:
        document.load(write_doc(tmp_path, trace))
    assert any(v.path == path and rule in v.rule for v in caught.value.violations), \
        caught.value.report()


def test_bad_rows_exit_2_one_line_each_with_file_line_and_column(tmp_path, capsys):
    (tmp_path / "jobs.csv").write_text(
        f"id,arrival,model,scale_factor,steps\na,0,{MODEL},1,1000\nb,10,{MODEL},1,x\n"
        "c,-3,Nope,1,5\n")
    code, out, err = cli(capsys, "replay", write_doc(tmp_path, {"table": "jobs.csv"}))
    lines = err.strip().splitlines()
    assert code == 2 and out == "" and "Traceback" not in err
    assert lines[0].endswith("jobs.csv: invalid trace (3 problems)")
    assert lines[1:3] == [
        "  line 3, column 'steps': 'x' is not a number (steps is a number)",
        "  line 4, column 'arrival': -3 is below 0 (arrival is at least 0)"]
    assert lines[3].startswith("  line 4, column 'model': 'Nope' is not a known model")
    assert len(lines) == 4


def test_a_job_that_can_run_nowhere_is_refused_by_its_id(tmp_path, capsys):
    (tmp_path / "jobs.csv").write_text(
        f"id,arrival,model,scale_factor,steps\nsmall,0,{MODEL},1,1000\nhuge,5,{MODEL},8,9\n")
    code, _, err = cli(capsys, "replay", write_doc(tmp_path, {"table": "jobs.csv"}))
    assert code == 2 and "trace.jobs.huge: job huge can run nowhere" in err
    assert "small" not in err
