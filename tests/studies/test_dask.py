"""Studies on a real Dask cluster on loopback (``LocalCluster(processes=True)``): a study runs
to completion through the command line, and a worker process killed mid-run loses no row and
stores none twice."""

from __future__ import annotations

import json
import logging
import os
import signal

import duckdb
import pytest

from fairalloc.cli import main
from fairalloc.studies.plan import load_study
from fairalloc.studies.run import run_study
from fairalloc.studies.store import Store

distributed = pytest.importorskip("dask.distributed")

STUDY = {"study": "on-dask", "kind": "moldable", "seed": 11,
         "instances": {"generate": {"jobs": 6, "processors": 3}, "count": 8},
         "methods": ["exact", "gpusched1-star"], "checks": ["feasibility"]}


def keys(path) -> list[tuple]:
    with duckdb.connect(str(path), read_only=True) as con:
        return con.execute('SELECT instance, method, "repeat", status FROM results').fetchall()


def test_a_study_runs_on_a_local_dask_cluster(tmp_path, capsys):
    (tmp_path / "s.json").write_text(json.dumps(STUDY))
    store = tmp_path / "s.duckdb"
    assert main(["study", "run", str(tmp_path / "s.json"), "--store", str(store),
                 "--cluster", "local:2", "-q"]) == 0
    rows = keys(store)
    assert len(rows) == len(set(rows)) == 16
    assert {status for *_, status in rows} == {"optimal", "heuristic"}
    with duckdb.connect(str(store), read_only=True) as con:
        workers = con.execute("SELECT count(DISTINCT worker) FROM runs").fetchall()[0][0]
    assert workers >= 1
    assert main(["study", "run", str(tmp_path / "s.json"), "--store", str(store),
                 "--cluster", "local:2", "--resume", "-q"]) == 0
    assert len(keys(store)) == 16       # a resumed, complete study adds nothing


def test_cluster_option_mistakes(tmp_path, capsys):
    (tmp_path / "s.json").write_text(json.dumps(STUDY))
    assert main(["study", "run", str(tmp_path / "s.json"), "--cluster", "local:0"]) == 2
    assert "local:N takes N from 1" in capsys.readouterr().err
    assert main(["study", "run", str(tmp_path / "s.json"), "--cluster", "local:1",
                 "--workers", "2", "--store", str(tmp_path / "x.duckdb")]) == 2
    assert "--workers sizes the local pool" in capsys.readouterr().err


def test_a_killed_worker_loses_no_row(tmp_path):
    """Kill one worker process after the first rows arrive: the scheduler runs its tasks
    again on the other (or on the worker its nanny restarts), and every row arrives once."""
    cluster = distributed.LocalCluster(n_workers=2, threads_per_worker=1, processes=True,
                                       dashboard_address=None, silence_logs=logging.ERROR)
    try:
        with distributed.Client(cluster) as client:
            pids = list(client.run(os.getpid).values())
        killed = []

        def kill_one(row):
            if not killed:
                os.kill(pids[0], signal.SIGKILL)
                killed.append(pids[0])

        study = load_study({**STUDY, "instances": {"generate": {"jobs": 7, "processors": 3},
                                                   "count": 12}})
        with Store(tmp_path / "s.duckdb") as store:
            progress = run_study(study, store, cluster=("address", cluster.scheduler_address),
                                 on_row=kill_one)
        assert killed and not progress.interrupted
        rows = keys(tmp_path / "s.duckdb")
        assert len(rows) == len({r[:3] for r in rows}) == 24
        assert progress.errors == sum(status == "error" for *_, status in rows)
        assert progress.errors == 0
    finally:
        cluster.close()
