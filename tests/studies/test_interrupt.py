"""Studies under Ctrl-C and cluster faults: Ctrl-C stops a run within seconds with exit 130
and no traceback, stores only rows whose tasks ran to their end, never leaves a batch's
transaction open, and ``--resume`` then stores every row exactly once; a ``--cluster``
address that is not a Dask scheduler is one line and exit 1 (a bad one exit 2), never a hang.
Every server here binds 127.0.0.1."""

from __future__ import annotations

import json
import os
import random
import signal
import socket
import subprocess
import sys
import threading
import time
from pathlib import Path

import duckdb
import pytest

from fairalloc import api
from fairalloc.cli import main
from fairalloc.errors import SolverError
from fairalloc.registry import KINDS
from fairalloc.studies import store as store_module
from fairalloc.studies.plan import load_study
from fairalloc.studies.run import CTRL_C, _forkserver, run_study
from fairalloc.studies.store import Store

ROOT = Path(__file__).resolve().parents[2]

# Each "milp" task keeps HiGHS busy for about half a second (at most its time limit),
# "waterfill" is instant: about 12 s of work for two workers, so the second Ctrl-C (up to
# 4.5 s into a --resume) still finds tasks left, however late the first one came.
SLOW = {"study": "slow", "kind": "etf", "seed": 3,
        "instances": {"generate": {"apps": 20, "quantum": 100}, "count": 48},
        "methods": ["milp", "waterfill"], "checks": ["feasibility"], "solver": {"threads": 1},
        "time_limit": 1}
QUICK = {"study": "quick", "kind": "etf", "seed": 3,
         "instances": {"generate": {"apps": 5}, "count": 3}, "methods": ["waterfill"],
         "checks": ["feasibility"]}


def stored(path: Path) -> list[tuple]:
    with duckdb.connect(str(path), read_only=True) as con:
        return con.execute('SELECT instance, method, "repeat", status, error FROM runs').fetchall()


def cli(*args: str) -> list[str]:
    return [sys.executable, "-m", "fairalloc.cli", *args]


def ctrl_c_after(delay: float, command: list[str]) -> tuple[int, str, float]:
    """Run ``command`` in its own process group, send the group SIGINT (as a terminal's
    Ctrl-C does) after ``delay`` seconds: its exit code, standard error and the seconds it took
    to stop after the signal."""
    env = {**os.environ, "PYTHONPATH": str(ROOT)}
    process = subprocess.Popen(command, start_new_session=True, stderr=subprocess.PIPE,
                               stdout=subprocess.DEVNULL, text=True, env=env, cwd=ROOT)
    time.sleep(delay)
    os.killpg(process.pid, signal.SIGINT)
    sent = time.monotonic()
    try:
        _, err = process.communicate(timeout=30)
    except subprocess.TimeoutExpired:
        os.killpg(process.pid, signal.SIGKILL)
        _, err = process.communicate()
        pytest.fail(f"still running 30 s after Ctrl-C; stderr: {err[-2000:]}")
    return process.returncode, err, time.monotonic() - sent


@pytest.mark.slow
@pytest.mark.parametrize("mode", [[], ["--workers", "2"], ["--cluster", "local:2"]],
                         ids=["default", "pool", "dask"])
def test_ctrl_c_at_random_moments_then_resume_stores_every_row_once(tmp_path, mode):
    """Ctrl-C twice at seeded random moments, inside HiGHS or not, in the driver or a worker
    (the default mode moves from the driver to a pool after a second, and Ctrl-C may catch a
    worker mid-start): each run stops within seconds with exit 130 and no traceback; then
    ``--resume`` finishes, and every (instance, method, repeat) is stored once, none as an
    error."""
    if "--cluster" in mode:
        pytest.importorskip("dask.distributed")
    (tmp_path / "s.json").write_text(json.dumps(SLOW))
    store = tmp_path / "s.duckdb"
    command = cli("study", "run", str(tmp_path / "s.json"), "--store", str(store), "-q", *mode)
    draw = random.Random(f"interrupt {mode}")
    # a run starts Python and the workers (about 1.5 s, 3 s for Dask) before a task
    start = 3.0 if "--cluster" in mode else 1.5
    for attempt in range(2):
        code, err, took = ctrl_c_after(start + draw.uniform(0, 1.5),
                                       command + (["--resume"] if attempt else []))
        assert code == 130, err
        assert "Traceback" not in err, err
        assert "--resume to continue" in err
        assert took < 15, f"{took:.1f} s to stop"
    finished = subprocess.run(command + ["--resume"], capture_output=True, text=True,
                              timeout=120, env={**os.environ, "PYTHONPATH": str(ROOT)})
    assert finished.returncode == 0, finished.stderr
    rows = stored(store)
    keys = [row[:3] for row in rows]
    assert len(keys) == len(set(keys)) == load_study(SLOW).task_count
    assert [row for row in rows if row[3] == "error"] == []


def test_ctrl_c_while_the_pool_starts_its_server_is_taken(monkeypatch):
    """The default mode starts its pool after a second in the driver; a Ctrl-C that lands
    while the fork server starts is taken once it runs (it was ignored there, and the study
    ran on to its end: the flaky ``[default]`` case above, exit 0)."""
    from multiprocessing import forkserver

    def starting() -> None:      # to the main thread, where a terminal's Ctrl-C lands
        signal.pthread_kill(threading.main_thread().ident, signal.SIGINT)
        time.sleep(0.05)

    monkeypatch.setattr(forkserver, "ensure_running", starting)
    with CTRL_C.installed(), pytest.raises(KeyboardInterrupt):
        _forkserver()


def test_ctrl_c_that_a_solver_swallows_in_the_driver_stores_no_error_row(tmp_path,
                                                                           monkeypatch):
    """``--workers 1`` runs the methods in the driver. HiGHS catches the KeyboardInterrupt
    that Ctrl-C raises in its callback and returns an error status (``SolverError``); the
    method here does the same. The run stops, and the cut task is not the method's error."""
    def swallowing(problem):
        try:
            os.kill(os.getpid(), signal.SIGINT)
            time.sleep(1)
        except KeyboardInterrupt:
            raise SolverError("HiGHS via Pyomo: error") from None
        raise AssertionError("no Ctrl-C")

    monkeypatch.setitem(KINDS["etf"].methods, "swallowing", swallowing)
    study = load_study({**QUICK, "methods": ["waterfill", "swallowing"]})
    with Store(tmp_path / "s.duckdb") as store:
        progress = run_study(study, store, workers=1)
    assert progress.interrupted and progress.errors == 0
    assert stored(tmp_path / "s.duckdb") == [(0, "waterfill", 0, "heuristic", None)]


class _Connection:
    """A DuckDB connection whose ``INSERT INTO runs`` first runs ``before`` (inside the
    batch's transaction, which has begun)."""

    def __init__(self, con, before):
        self._con, self._before = con, before

    def execute(self, sql, *args):
        if sql.startswith("INSERT INTO runs"):
            self._before()
        return self._con.execute(sql, *args)

    def __getattr__(self, name):
        return getattr(self._con, name)


def test_ctrl_c_inside_a_batch_transaction_waits_for_its_commit(tmp_path):
    """Ctrl-C that lands between the batch's BEGIN and COMMIT: the batch is committed, the run
    stops interrupted with every row that arrived stored, and the store takes more rows."""
    with Store(tmp_path / "s.duckdb") as store:
        sent = []

        def ctrl_c():
            if not sent:
                sent.append(True)
                os.kill(os.getpid(), signal.SIGINT)
                time.sleep(0.05)            # Python runs the handler here, inside the batch

        con = store.con
        store.con = _Connection(con, ctrl_c)
        seen = []
        progress = run_study(load_study(QUICK), store, workers=1, on_row=seen.append)
        assert sent and progress.interrupted and progress.stored == len(seen)
        assert con.execute("SELECT count(*) FROM runs").fetchone() == (len(seen),)
        progress = run_study(load_study(QUICK), store, workers=1, resume=True)
        assert not progress.interrupted
    assert len(stored(tmp_path / "s.duckdb")) == 3


def test_an_interrupted_batch_is_rolled_back_and_the_store_goes_on(tmp_path):
    """KeyboardInterrupt inside ``Store.add``'s transaction leaves no transaction open."""
    study = load_study(QUICK)
    with Store(tmp_path / "s.duckdb") as store:
        store.open_study(study, False)
        rows = [{"study": "quick", "instance": i, "method": "waterfill", "repeat": 0,
                 "status": "heuristic"} for i in range(3)]
        con = store.con

        def interrupt():
            raise KeyboardInterrupt

        store.con = _Connection(con, interrupt)
        with pytest.raises(KeyboardInterrupt):
            store.add(rows[:2])
        store.con = con
        store.add(rows)
    assert len(stored(tmp_path / "s.duckdb")) == 3


def test_a_task_the_cluster_lost_is_not_stored_and_resume_runs_it(tmp_path):
    """Futures cancelled on the cluster (as when its scheduler goes): their tasks are counted
    lost, not stored as errors, and ``--resume`` runs them."""
    distributed = pytest.importorskip("dask.distributed")
    cluster = distributed.LocalCluster(n_workers=1, threads_per_worker=1, processes=False,
                                       dashboard_address="127.0.0.1:0")
    try:
        def cancel_the_rest(row):
            client = distributed.default_client()
            client.cancel([distributed.Future(key, client) for key in list(client.futures)])

        study = load_study({**QUICK, "instances": {"generate": {"apps": 5}, "count": 12}})
        with Store(tmp_path / "s.duckdb") as store:
            progress = run_study(study, store, cluster=("address", cluster.scheduler_address),
                                 on_row=cancel_the_rest)
            assert progress.errors == 0 and progress.lost > 0
            assert progress.stored + progress.lost == 12
            progress = run_study(study, store, cluster=("address", cluster.scheduler_address),
                                 resume=True)
            assert (progress.lost, progress.errors) == (0, 0)
    finally:
        cluster.close()
    rows = stored(tmp_path / "s.duckdb")
    assert len({row[:3] for row in rows}) == len(rows) == 12
    assert {row[3] for row in rows} == {"heuristic"}


# ---------------------------------------------------------------- --cluster addresses


@pytest.mark.parametrize("address", ["inproc://x", "ucx://127.0.0.1:8786",
                                     "tls://127.0.0.1:8786", "tcp://127.0.0.1:1 x",
                                     "tcp://127.0.0.1", "tcp://127.0.0.1:70000", "tcp://:8786"])
def test_a_cluster_address_not_tcp_host_port_is_refused(tmp_path, capsys, address):
    (tmp_path / "s.json").write_text(json.dumps(QUICK))
    assert main(["study", "run", str(tmp_path / "s.json"), "--cluster", address,
                 "--store", str(tmp_path / "s.duckdb")]) == 2
    err = capsys.readouterr().err
    assert "expected local:N or a scheduler address tcp://HOST:PORT" in err
    assert not (tmp_path / "s.duckdb").exists()


def _answer_silently(conn: socket.socket) -> None:
    time.sleep(60)


def _answer_http(conn: socket.socket) -> None:
    conn.recv(65536)
    conn.sendall(b"HTTP/1.1 400 Bad Request\r\nContent-Length: 0\r\nConnection: close\r\n\r\n")
    time.sleep(1)


def _answer_short_frame(conn: socket.socket) -> None:
    conn.sendall((1).to_bytes(8, "little") + b"\x05")     # one frame announced, a byte of it


@pytest.fixture
def fake_service(request):
    """A TCP service on 127.0.0.1 that answers every connection with ``request.param``."""
    server = socket.create_server(("127.0.0.1", 0))
    server.settimeout(0.2)
    stop = threading.Event()

    def serve() -> None:
        while not stop.is_set():
            try:
                conn, _ = server.accept()
            except OSError:
                continue
            threading.Thread(target=lambda c=conn: (request.param(c), c.close()),
                             daemon=True).start()

    thread = threading.Thread(target=serve, daemon=True)
    thread.start()
    yield f"tcp://127.0.0.1:{server.getsockname()[1]}"
    stop.set()
    thread.join(5)
    server.close()


@pytest.mark.slow
@pytest.mark.parametrize("fake_service", [_answer_silently, _answer_http, _answer_short_frame],
                         ids=["silent", "http", "short-frame"], indirect=True)
def test_a_service_that_is_not_a_dask_scheduler_is_one_line(tmp_path, fake_service,
                                                             request):
    pytest.importorskip("dask.distributed")
    (tmp_path / "s.json").write_text(json.dumps(QUICK))
    start = time.monotonic()
    try:
        done = subprocess.run(cli("study", "run", str(tmp_path / "s.json"), "--cluster",
                                  fake_service, "--store", str(tmp_path / "s.duckdb"), "-q"),
                              capture_output=True, text=True, timeout=40, cwd=ROOT,
                              env={**os.environ, "PYTHONPATH": str(ROOT)})
    except subprocess.TimeoutExpired:
        pytest.fail(f"--cluster {fake_service}: still waiting after 40 s")
    lines = done.stderr.strip().splitlines()
    assert done.returncode == 1, done.stderr
    assert len(lines) == 1 and lines[0].startswith(
        f"fairalloc study: cannot reach a Dask scheduler at {fake_service}: "), done.stderr
    assert time.monotonic() - start < 30
    assert ("no answer within 10 s" if "silent" in request.node.name else
            "does not answer in Dask's protocol") in lines[0]


def _sigint_after(seconds: float) -> threading.Thread:
    """SIGINT to this process after ``seconds`` (from a thread: the main thread is busy)."""
    def send():
        time.sleep(seconds)
        os.kill(os.getpid(), signal.SIGINT)
    thread = threading.Thread(target=send)
    thread.start()
    return thread


LONG_QUERY = "SELECT count(*) FROM range(100000000000) a"    # minutes, unless interrupted


@pytest.mark.slow
def test_ctrl_c_mid_query_in_the_store_is_ctrl_c(tmp_path, monkeypatch):
    """DuckDB takes SIGINT while a query runs and raises RuntimeError("Query interrupted"):
    a Ctrl-C landing while a store is opened (study run, resume) was a traceback and exit 1.
    The store raises it as Ctrl-C, which the command line answers with exit 130."""
    def slow_prepare(self, read_only):
        self.con.execute(LONG_QUERY)

    monkeypatch.setattr(Store, "_prepare", store_module._database_errors(slow_prepare))
    sender = _sigint_after(0.5)
    with pytest.raises(KeyboardInterrupt):
        Store(tmp_path / "s.duckdb")
    sender.join()


@pytest.mark.slow
def test_ctrl_c_mid_query_in_any_command_exits_130(tmp_path, monkeypatch, capsys):
    """The same Ctrl-C while a command reads a table through DuckDB: exit 130, one line."""
    def slow_replay(*args, **kwargs):
        duckdb.connect().execute(LONG_QUERY)

    monkeypatch.setattr(api, "replay", slow_replay)
    sender = _sigint_after(0.5)
    code = main(["replay", str(ROOT / "specs" / "replay" / "quick.json"), "-q"])
    sender.join()
    assert code == 130
    assert capsys.readouterr().err == "fairalloc replay: interrupted\n"
