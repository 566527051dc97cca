"""Honest times: each row says whether its task ran warm (its worker had run a task before, so
the one-off imports and first model were paid), and time statistics leave the cold ones out,
saying so."""

from __future__ import annotations

import json

import duckdb
import numpy as np

from fairalloc.cli import main
from fairalloc.studies import run as runner
from fairalloc.studies.summary import TIME_NOTE, summarise, summary_cells

STUDY = {"study": "warmth", "kind": "drf", "seed": 1, "methods": ["lp", "progressive-filling"],
         "instances": {"generate": {"users": 3}, "count": 2}}


def test_a_workers_first_task_is_stored_cold(tmp_path, monkeypatch, capsys):
    monkeypatch.setattr(runner, "_TASKS_RUN", [0])      # a fresh worker: this process
    (tmp_path / "warmth.json").write_text(json.dumps(STUDY))
    store = tmp_path / "warmth.duckdb"
    assert main(["study", "run", str(tmp_path / "warmth.json"), "--store", str(store),
                 "--workers", "1", "-q"]) == 0
    assert TIME_NOTE in " ".join(capsys.readouterr().out.split())
    with duckdb.connect(str(store), read_only=True) as con:
        warm = [w for (w,) in con.execute("SELECT warm FROM results ORDER BY finished")
                .fetchall()]
    assert warm == [False, True, True, True]


def rows(times: list[float], warm: list[bool], method: str = "lp") -> dict:
    n = len(times)
    return {"method": np.array([method] * n, dtype=object),
            "status": np.array(["optimal"] * n, dtype=object),
            "time_s": np.array(times), "ratio": np.ones(n),
            "warm": np.array(warm, dtype=object)}


def test_time_statistics_leave_cold_tasks_out():
    (record,) = summarise(rows([3.0, 0.1, 0.3], [False, True, True]), ["method"],
                          ["ratio", "time_s"])
    assert record["mean_time_s"] == 0.2 and record["cold"] == 1 and not record["time_cold"]
    assert record["time_s"]["mean"] == 0.2 and record["time_s apart"] == {"cold start": 1}
    assert record["ratio apart"] == {}


def test_a_group_of_cold_tasks_only_says_so():
    (record,) = summarise(rows([3.0, 2.0], [False, False]), ["method"], ["ratio"])
    assert record["mean_time_s"] == 2.5 and record["time_cold"]
    header, body = summary_cells([record], ["method"], ["ratio"], None)
    assert body[0][header.index("time (s)")] == "2.5 (cold)"


def test_rows_stored_before_the_column_count_as_warm():
    data = rows([1.0, 3.0], [True, True])
    del data["warm"]
    (record,) = summarise(data, ["method"], ["ratio"])
    assert record["mean_time_s"] == 2.0 and record["cold"] == 0
