"""The replay's data edges (issue 32): no command writes over a file a document reads, a study
never mixes two versions of a trace table, and a trace that is not a table file is refused in
one line saying what it is, never by echoing what it holds."""

from __future__ import annotations

import json
import os
import signal
import subprocess
import sys
import threading
import time
from pathlib import Path

import duckdb
import pytest
from clitools import cli
from test_trace_tables import JOBS_GAVEL, gavel_file

MODEL = "ResNet-50 (batch size 64)"


def jobs_csv(count: int) -> str:
    return "job,submitted,model,scale_factor,steps\n" + "".join(
        f"j{i},{30 * i},{MODEL},1,{500 + i}\n" for i in range(count))


def replay_doc(table: str = "jobs.csv", **trace) -> dict:
    return {"replay": "edges", "kind": "hetero",
            "cluster": {"workers": {"v100": 2, "p100": 2, "k80": 2}},
            "trace": {"table": table, "map": {"id": "job", "arrival": "submitted"}, **trace},
            "policy": {"method": "max-min"}, "mechanism": {"name": "ideal"},
            "measure": {"finish_time_fairness": False}}


@pytest.fixture
def replay_files(tmp_path):
    """A folder with a trace table of 40 jobs, a replay document reading it and a study of
    that document under two policies."""
    (tmp_path / "jobs.csv").write_text(jobs_csv(40))
    (tmp_path / "doc.json").write_text(json.dumps(replay_doc()))
    (tmp_path / "study.json").write_text(json.dumps(
        {"study": "edges", "kind": "hetero", "instances": {"base": "doc.json"},
         "grid": {"policy.method": ["max-min", "agnostic-max-min"]}}))
    return tmp_path


# An output over the trace table ------------------------------------------------------------

def test_no_output_is_written_over_the_trace_table_a_document_reads(replay_files, capsys):
    """``replay --plot`` (through a link named .png) and ``report -o`` over the document's
    own trace table: exit 2 naming it, the table as it was."""
    table = replay_files / "jobs.csv"
    before = table.read_bytes()
    (replay_files / "jobs.png").symlink_to(table)
    doc = str(replay_files / "doc.json")
    for argv, option in ((("replay", doc, "--plot", str(replay_files / "jobs.png")), "--plot"),
                         (("report", doc, "-o", str(table)), "--output")):
        code, out, err = cli(capsys, *argv, "-q")
        assert code == 2, err
        assert f"error: {option}: " in err and "trace table (read by" in err, err
        assert len(err.strip().splitlines()) == 1, err
        assert table.read_bytes() == before


def test_no_report_is_written_over_the_gavel_trace_file_a_document_reads(tmp_path, capsys):
    trace = Path(gavel_file(tmp_path, JOBS_GAVEL))
    before = trace.read_bytes()
    doc = {**replay_doc(), "trace": {"table": "gavel.trace", "format": "gavel"},
           "cluster": {"workers": {"v100": 4, "p100": 4, "k80": 4}}}
    (tmp_path / "doc.json").write_text(json.dumps(doc))
    code, _, err = cli(capsys, "report", str(tmp_path / "doc.json"), "-o", str(trace), "-q")
    assert code == 2 and "--output: " in err and "trace table (read by" in err, err
    assert trace.read_bytes() == before


def test_a_study_s_outputs_spare_the_tables_its_documents_read(replay_files, capsys):
    """``study run --store`` over a trace table its replay document reads, and ``study
    instance -o`` over the table a stored study's document reads: exit 2, table kept."""
    table = replay_files / "jobs.csv"
    before = table.read_bytes()
    study, store = str(replay_files / "study.json"), str(replay_files / "s.duckdb")
    code, _, err = cli(capsys, "study", "run", study, "--store", str(table), "-q")
    assert code == 2 and "--store: " in err and "trace table" in err, err
    assert table.read_bytes() == before
    assert cli(capsys, "study", "run", study, "--store", store, "-q")[0] == 0
    code, _, err = cli(capsys, "study", "instance", store, "0", "--method", "max-min",
                       "-o", str(table))
    assert code == 2 and "--output: " in err and "trace table" in err, err
    assert table.read_bytes() == before


# Resume over a changed trace table -----------------------------------------------------------

@pytest.mark.slow
def test_resume_and_instance_refuse_a_trace_table_changed_since_the_study_ran(replay_files,
                                                                            capsys):
    """The table cut from 40 jobs to 20 after the study first ran: ``--resume`` and ``study
    instance`` exit 2 naming it (the rows would mix the two traces); restored, both go on."""
    table, store = replay_files / "jobs.csv", str(replay_files / "s.duckdb")
    study = str(replay_files / "study.json")
    assert cli(capsys, "study", "run", study, "--store", store, "-q")[0] == 0
    table.write_text(jobs_csv(20))
    for argv in (("study", "run", study, "--store", store, "--resume", "-q"),
                 ("study", "instance", store, "0", "--method", "max-min")):
        code, out, err = cli(capsys, *argv)
        assert code == 2 and out == "", err
        assert f"{table} has changed since study 'edges' first ran on it" in err, err
    table.write_text(jobs_csv(40))
    assert cli(capsys, "study", "run", study, "--store", store, "--resume", "-q")[0] == 0
    assert cli(capsys, "study", "instance", store, "0", "--method", "max-min")[0] == 0


# What a trace table that is not a file is ------------------------------------------------------

def _fifo(folder):
    os.mkfifo(folder / "jobs.csv")


def _folder(folder):
    (folder / "jobs.csv").mkdir()


def _loop(folder):
    os.symlink(folder / "other.csv", folder / "jobs.csv")
    os.symlink(folder / "jobs.csv", folder / "other.csv")


def _device(folder):
    os.symlink("/dev/null", folder / "jobs.csv")


@pytest.mark.parametrize("make, said", [
    (_fifo, "is a named pipe (FIFO), not a file"),
    (_folder, "is a folder, not a file"),
    (_loop, "is a symbolic-link loop, not a file"),
    (_device, "is a character device, not a file"),
])
def test_a_trace_table_that_is_not_a_file_is_said_to_be_what_it_is(tmp_path, capsys, make,
                                                                   said):
    """Never "no such file", and a pipe is never opened (it would wait for a writer)."""
    make(tmp_path)
    (tmp_path / "doc.json").write_text(json.dumps(replay_doc()))
    done = []
    worker = threading.Thread(target=lambda: done.append(
        cli(capsys, "validate", str(tmp_path / "doc.json"))), daemon=True)
    worker.start()
    worker.join(60)                   # a guard against a hang, not a measure
    assert done, "validate still waiting after 60 s"
    code, _, err = done[0]
    assert code == 2 and f"trace.table: jobs.csv {said}" in err, err


@pytest.mark.parametrize("make, said", [
    (_folder, "is a folder, not a file"),
    (_loop, "is a symbolic-link loop, not a file"),
    (_fifo, "is a named pipe (FIFO), not a file"),
])
def test_a_study_s_spec_file_that_is_not_a_file_is_said_to_be_what_it_is(tmp_path, capsys,
                                                                         make, said):
    make(tmp_path)
    study = {"study": "s", "kind": "hetero", "instances": {"specs": ["jobs.csv"]}}
    (tmp_path / "study.json").write_text(json.dumps(study))
    code, _, err = cli(capsys, "study", "run", str(tmp_path / "study.json"), "--store",
                       str(tmp_path / "s.duckdb"), "-q")
    assert code == 2 and f"instances.specs[0]: {tmp_path / 'jobs.csv'} {said}" in err, err


def test_a_document_that_is_a_symbolic_link_loop_is_said_to_be_one(tmp_path, capsys):
    _loop(tmp_path)
    code, _, err = cli(capsys, "replay", str(tmp_path / "jobs.csv"))
    assert code == 2 and "is a symbolic-link loop, not a file" in err, err


@pytest.mark.parametrize("make, said", [
    (_loop, "is a symbolic-link loop, not a file"),
    (_fifo, "is a named pipe (FIFO), not a file"),
])
def test_an_imported_table_that_is_not_a_file_is_said_to_be_what_it_is(tmp_path, capsys,
                                                                      make, said):
    make(tmp_path)
    code, out, err = cli(capsys, "import", "drf", str(tmp_path / "jobs.csv"))
    assert code == 2 and out == "" and said in err, err


# Two sorts in one document -------------------------------------------------------------------

@pytest.mark.parametrize("command, data", [
    ("replay", {"replay": "x", "study": "y"}),
    ("solve", {"problem": "drf", "replay": "x"}),
    ("study run", {"study": "y", "problem": "drf", "replay": "x"}),
])
def test_a_document_of_two_sorts_is_one_line_naming_both_keys(tmp_path, capsys, command, data):
    path = tmp_path / "doc.json"
    path.write_text(json.dumps(data))
    code, out, err = cli(capsys, *command.split(), str(path))
    keys = [f'"{key}"' for key in ("problem", "replay", "study") if key in data]
    assert code == 2 and out == "" and len(err.strip().splitlines()) == 1, err
    assert all(key in err for key in keys), err


# What is not a table, and what a table may not hold ---------------------------------------------

PASSWD = "".join(f"user{i}:x:{i}:{i}:User {i}:/home/user{i}:/bin/sh\n" for i in range(23)) + \
    "postgres:x:101:104:PostgreSQL administrator,,,:/var/lib/postgresql:/bin/bash\n"


@pytest.mark.parametrize("name, content, said", [
    ("passwd", PASSWD, "not a table: its first line holds no comma, tab, semicolon or '|'"),
    ("passwd.csv", PASSWD, "not a table: its first line holds no comma between"),
    ("tool.csv", b"\x7fELF\x02\x01\x01\x00\x00,id,arrival\n", "not a table: it holds binary "
                                                              "data"),
    ("latin.csv", "id,arrival,gar\xe7on\na,0,1\n".encode("latin-1"),
     "not a table: it is not UTF-8 text"),
])
@pytest.mark.parametrize("mapped", [False, True])
def test_a_file_that_is_not_a_table_is_refused_without_quoting_it(tmp_path, capsys, name,
                                                                  content, said, mapped):
    """/etc/passwd as a trace was "the table has no rows" (DuckDB skipped 23 lines to find a
    header), or with a map echoed its line as the columns; a binary file is no table either."""
    path = tmp_path / name
    path.write_bytes(content if isinstance(content, bytes) else content.encode())
    doc = replay_doc(str(path))
    if not mapped:
        del doc["trace"]["map"]
    (tmp_path / "doc.json").write_text(json.dumps(doc))
    code, out, err = cli(capsys, "replay", str(tmp_path / "doc.json"))
    assert code == 2 and out == "" and said in err, err
    assert "user0" not in err and "postgres" not in err and "ELF" not in err, err
    code, _, err = cli(capsys, "import", "drf", str(path))
    assert code == 2 and said in err, err


def test_a_repeated_column_name_is_refused_at_line_1(tmp_path, capsys):
    """DuckDB read ``id,arrival,id`` with the second id renamed ``id_1``: the trace took the
    first and said nothing."""
    (tmp_path / "jobs.csv").write_text(f"id,arrival,model,scale_factor,steps,id\n"
                                       f"a,0,{MODEL},1,500,b\n")
    doc = replay_doc()
    del doc["trace"]["map"]
    (tmp_path / "doc.json").write_text(json.dumps(doc))
    code, _, err = cli(capsys, "replay", str(tmp_path / "doc.json"))
    assert code == 2, err
    assert "jobs.csv: invalid table" in err, err
    assert "line 1, column 'id': repeated column name (columns 1 and 6)" in err, err


@pytest.mark.parametrize("column, sql", [
    ("id", "[1, 2]"), ("steps", "{'a': 1}"), ("model", "MAP {'k': 'v'}")])
def test_a_parquet_column_of_lists_or_records_is_refused(tmp_path, capsys, column, sql):
    """A Parquet list column was read as ids ``[1, 2]`` (DuckDB's text of it)."""
    cells = {"id": "'a'", "arrival": "0", "model": f"'{MODEL}'", "scale_factor": "1",
             "steps": "500", column: sql}
    select = ", ".join(f"{value} AS {name}" for name, value in cells.items())
    with duckdb.connect() as con:
        con.execute(f"COPY (SELECT {select}) TO '{tmp_path / 'jobs.parquet'}' (FORMAT parquet)")
    doc = replay_doc("jobs.parquet")
    del doc["trace"]["map"]
    (tmp_path / "doc.json").write_text(json.dumps(doc))
    code, _, err = cli(capsys, "replay", str(tmp_path / "doc.json"))
    assert code == 2 and f"column '{column}': holds " in err and "not a list or a record" \
        in err, err


# Ctrl-C while fairalloc starts ------------------------------------------------------------------

SCRIPT = Path(sys.executable).with_name("fairalloc")      # the console script pip installed
# about half a second of HiGHS per "milp" task: a study that is still running after 1 s
SLOW = {"study": "slow", "kind": "etf", "seed": 3,
        "instances": {"generate": {"apps": 20, "quantum": 100}, "count": 48},
        "methods": ["milp"], "solver": {"threads": 1}, "time_limit": 1}
# sitecustomize runs before the console script: it sends this process SIGINT as the module
# INTERRUPT_AT starts to import, the moment a Ctrl-C lands in the import of fairalloc
AT_IMPORT = """
import os, signal, sys

class Interrupt:
    def find_spec(self, name, path=None, target=None):
        if name == os.environ["INTERRUPT_AT"]:
            os.kill(os.getpid(), signal.SIGINT)

sys.meta_path.insert(0, Interrupt())
"""


def _study(tmp_path, store: str = "slow.duckdb") -> list[str]:
    (tmp_path / "slow.json").write_text(json.dumps(SLOW))
    return [str(SCRIPT), "study", "run", str(tmp_path / "slow.json"), "--store",
            str(tmp_path / store), "--workers", "1", "-q"]


@pytest.mark.parametrize("module", ["numpy", "fairalloc.api", "fairalloc.cli.studies"])
def test_ctrl_c_while_fairalloc_imports_exits_130_in_one_line(tmp_path, module):
    """The console script imports fairalloc (about a second) before ``main`` runs: a Ctrl-C
    there was a KeyboardInterrupt traceback."""
    assert SCRIPT.is_file(), f"no console script {SCRIPT}: pip install -e ."
    (tmp_path / "sitecustomize.py").write_text(AT_IMPORT)
    env = {**os.environ, "PYTHONPATH": str(tmp_path), "INTERRUPT_AT": module}
    done = subprocess.run(_study(tmp_path), capture_output=True, text=True, env=env,
                          timeout=120)
    assert (done.returncode, done.stderr) == (130, "fairalloc: interrupted\n")
    assert not (tmp_path / "slow.duckdb").exists()


# a stand-in for DuckDB's start-up as it behaves when a Ctrl-C lands in it (found 1 run in ~25
# with SIGINT at a random moment of ``import duckdb``): the interrupt is swallowed and the import
# succeeds, or it fails with DuckDB's ImportError
FAKE_DUCKDB = """
import os, signal, time
try:
    os.kill(os.getpid(), signal.SIGINT)
    time.sleep(0.05)
except KeyboardInterrupt:
    if os.environ["LANDS"] == "error":
        raise ImportError("Encountered an error while initializing the extension.")
"""


@pytest.mark.parametrize("lands", ["swallowed", "error"])
def test_ctrl_c_inside_duckdbs_start_up_exits_130_in_one_line(tmp_path, lands):
    """A study imports DuckDB when it opens its store. A Ctrl-C inside that import was lost (the
    study ran on: CI's "still running 60 s after Ctrl-C") or was an ImportError traceback."""
    (tmp_path / "duckdb.py").write_text(FAKE_DUCKDB)
    env = {**os.environ, "PYTHONPATH": str(tmp_path), "LANDS": lands}
    done = subprocess.run(_study(tmp_path), capture_output=True, text=True, env=env,
                          timeout=120)
    assert (done.returncode, done.stderr) == (130, "fairalloc study: interrupted\n"), \
        done.stderr[-2000:]
    assert not (tmp_path / "slow.duckdb").exists()



@pytest.mark.parametrize("lands", ["swallowed", "error"])
def test_a_ctrl_c_held_in_duckdbs_start_up_reaches_a_handler_that_only_notes_it(tmp_path,
                                                                                lands):
    """Under a handler that only notes Ctrl-C (a study writing its store), the Ctrl-C held
    through DuckDB's import reaches it once, after the import, which nothing interrupted."""
    (tmp_path / "duckdb.py").write_text(FAKE_DUCKDB)
    probe = ("import signal\nfrom fairalloc import startup\nnoted = []\n"
             "signal.signal(signal.SIGINT, lambda s, f: noted.append(s))\n"
             "try:\n    print(type(startup.duckdb()).__name__, end=' ')\n"
             "except ImportError as exc:\n    print('ImportError', end=' ')\n"
             "print(len(noted))\n")
    env = {**os.environ, "PYTHONPATH": str(tmp_path), "LANDS": lands}
    done = subprocess.run([sys.executable, "-c", probe], capture_output=True, text=True,
                          env=env, timeout=120)
    assert done.returncode == 0, done.stderr[-2000:]
    assert done.stdout.strip() == "module 1"

@pytest.mark.slow
def test_ctrl_c_at_any_moment_of_the_start_exits_130_without_a_traceback(tmp_path):
    """SIGINT to the process group (as a terminal's Ctrl-C) 0.05 to 1 s after Python has
    started ``fairalloc study run``: while fairalloc imports, the study loads or runs. (Python's
    own start-up, before it runs any code of the script, is not the script's to handle: a
    SIGINT there is Python's "Fatal Python error: init_import_site". So the clock starts when
    Python runs sitecustomize, the last step of its start-up.)"""
    (tmp_path / "sitecustomize.py").write_text(
        "import os\nos.write(int(os.environ['STARTED_FD']), b'.')\n")
    for delay in (0.05, 0.1, 0.2, 0.35, 0.5, 0.75, 1.0):
        started, tell = os.pipe()
        env = {**os.environ, "PYTHONPATH": str(tmp_path), "STARTED_FD": str(tell)}
        process = subprocess.Popen(_study(tmp_path, f"{delay}.duckdb"), start_new_session=True,
                                   stdout=subprocess.DEVNULL, stderr=subprocess.PIPE,
                                   text=True, env=env, pass_fds=[tell])
        os.close(tell)
        assert os.read(started, 1) == b".", process.communicate()[1]
        os.close(started)
        time.sleep(delay)
        os.killpg(process.pid, signal.SIGINT)
        try:
            _, err = process.communicate(timeout=60)     # a guard against a hang
        except subprocess.TimeoutExpired:
            os.killpg(process.pid, signal.SIGKILL)
            pytest.fail(f"still running 60 s after Ctrl-C at {delay} s")
        assert process.returncode == 130 and "Traceback" not in err, (delay, err)
        lines = err.strip().splitlines()
        assert len(lines) == 1 and "interrupted" in lines[0], (delay, err)
