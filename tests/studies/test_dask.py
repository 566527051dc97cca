"""Studies on a real Dask cluster on loopback (``LocalCluster(processes=True)``): a study runs
to completion through the command line, tasks travel in chunks, and a worker process killed
mid-run (mid-chunk) loses no row and stores none twice."""

from __future__ import annotations

import json
import logging
import os
import signal

import duckdb
import pytest

from fairalloc.cli import main
from fairalloc.studies import run
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


@pytest.mark.slow
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


@pytest.mark.slow
def test_a_killed_worker_loses_no_row(tmp_path):
    """Kill one worker process after the first rows arrive: the scheduler runs its tasks
    again on the other (or on the worker its nanny restarts), and every row arrives once."""
    cluster = distributed.LocalCluster(n_workers=2, threads_per_worker=1, processes=True,
                                       dashboard_address="127.0.0.1:0", silence_logs=logging.ERROR)
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


TINY = {"study": "tiny", "kind": "drf", "seed": 1, "checks": [], "metrics": [],
        "instances": {"generate": {"users": 2}, "count": 300},
        "methods": ["progressive-filling"]}


@pytest.fixture(scope="module")
def cluster():
    """Two single-threaded worker processes on loopback."""
    local = distributed.LocalCluster(n_workers=2, threads_per_worker=1, processes=True,
                                     dashboard_address="127.0.0.1:0", silence_logs=logging.ERROR)
    yield local
    local.close()


@pytest.mark.slow
def test_tiny_tasks_travel_in_chunks_and_each_row_is_stored_once(tmp_path, cluster,
                                                                 monkeypatch):
    """300 tasks of a fraction of a millisecond: a few dozen futures carry them all (a
    future a task costs the scheduler's round trip each), and every row is stored once. The
    chunks are sized from a task time of 0.5 ms as measured on an idle machine: on a loaded
    one a descheduled worker measures tiny tasks as slow ones, and the count of futures
    would then say more of the load than of the chunking (ChunkSize's doctest has its
    arithmetic)."""
    submitted = []
    submit = distributed.Client.submit
    measured = run.ChunkSize.measured
    monkeypatch.setattr(run.ChunkSize, "measured",
                        lambda self, tasks, seconds: measured(self, tasks, 5e-4 * tasks))

    def counting(self, function, *args, **kwargs):
        submitted.append(function)
        return submit(self, function, *args, **kwargs)

    monkeypatch.setattr(distributed.Client, "submit", counting)
    with Store(tmp_path / "s.duckdb") as store:
        progress = run_study(load_study(TINY), store,
                             cluster=("address", cluster.scheduler_address))
    assert (progress.stored, progress.errors, progress.lost) == (300, 0, 0)
    rows = keys(tmp_path / "s.duckdb")
    assert len(rows) == len(set(rows)) == 300
    assert len(submitted) <= 40, f"{len(submitted)} futures for 300 tasks"


@pytest.mark.slow
def test_a_worker_killed_mid_chunk_loses_no_row(tmp_path, cluster, monkeypatch):
    """Chunks of four tasks of about 0.1 s each; once the first rows arrive, kill a worker
    that is running a chunk: the scheduler runs the chunk again whole elsewhere, and every
    row is stored once, none as an error and none lost."""
    monkeypatch.setattr(run.ChunkSize, "next", lambda self: 4)
    with distributed.Client(cluster) as client:
        pids = client.run(os.getpid)
    killed = []

    def kill_a_busy_worker(row):
        if killed:
            return
        with distributed.Client(cluster.scheduler_address) as client:
            busy = [address for address, keys in client.processing().items() if keys]
        if busy:
            os.kill(pids[busy[0]], signal.SIGKILL)
            killed.append(busy[0])

    study = load_study({"study": "mid-chunk", "kind": "drf", "seed": 2, "checks": [],
                        "metrics": [], "instances": {"generate": {"users": 15000},
                                                     "count": 24}, "methods": ["lp"]})
    with Store(tmp_path / "s.duckdb") as store:
        progress = run_study(study, store, cluster=("address", cluster.scheduler_address),
                             on_row=kill_a_busy_worker)
    assert killed and not progress.interrupted
    assert (progress.stored, progress.errors, progress.lost) == (24, 0, 0)
    rows = keys(tmp_path / "s.duckdb")
    assert len(rows) == len({r[:3] for r in rows}) == 24
    assert {status for *_, status in rows} == {"optimal"}


@pytest.mark.slow
def test_a_chunk_that_fails_whole_is_run_again_task_by_task(tmp_path, monkeypatch):
    """A chunk that fails as a whole (as when its task keeps killing workers) is split: only
    the task to blame is an error row, the others of its chunk are stored as they are."""
    real = run.run_chunk

    def fails_with_instance_3(tasks):
        if any(task.instance.id == 3 for task in tasks):
            raise RuntimeError("worker killed")
        return real(tasks)

    monkeypatch.setattr(run, "run_chunk", fails_with_instance_3)
    monkeypatch.setattr(run.ChunkSize, "next", lambda self: 3)
    local = distributed.LocalCluster(n_workers=1, threads_per_worker=1, processes=False,
                                     dashboard_address="127.0.0.1:0", silence_logs=logging.ERROR)
    try:
        study = load_study({**TINY, "instances": {**TINY["instances"], "count": 9}})
        with Store(tmp_path / "s.duckdb") as store:
            progress = run_study(study, store, cluster=("address", local.scheduler_address))
    finally:
        local.close()
    assert (progress.stored, progress.errors, progress.lost) == (9, 1, 0)
    errors = [r for r in keys(tmp_path / "s.duckdb") if r[3] == "error"]
    assert [r[0] for r in errors] == [3]
