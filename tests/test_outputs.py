"""The file edge of the command line: an output is never written over one of the command's
inputs, a failed write is one line and leaves the old file, and an input that would be read
forever or would not fit is refused (issue 22)."""

from __future__ import annotations

import errno
import io
import json
import os
import sys
from pathlib import Path

import pytest
from clitools import ROOT, cli, run

from fairalloc.cli import main

DRF = str(ROOT / "specs" / "drf" / "classic.json")
MOLDABLE = str(ROOT / "specs" / "moldable" / "case-study.json")
OLD = "the old content\n"


@pytest.fixture(scope="module")
def store(tmp_path_factory):
    """A study store of two small moldable instances."""
    folder = tmp_path_factory.mktemp("study")
    study = folder / "study.json"
    study.write_text(json.dumps({
        "study": "outputs", "kind": "moldable", "seed": 3, "methods": ["gpusched2"],
        "instances": {"generate": {"jobs": 4, "processors": 2}, "count": 2}}))
    path = folder / "s.duckdb"
    assert main(["study", "run", str(study), "--store", str(path), "--workers", "1",
                 "-q"]) == 0
    return path


def one_line_error(result, code: int, *words: str) -> None:
    """The run exited ``code`` with one line on stderr holding every word, no traceback."""
    assert result.returncode == code, result.stderr
    assert "Traceback" not in result.stderr
    lines = result.stderr.strip().splitlines()
    assert len(lines) == 1, result.stderr
    assert all(word in lines[0] for word in words), lines[0]


# --- an output that is one of the inputs ------------------------------------------------------

@pytest.mark.slow
def test_a_report_over_its_study_store_is_refused(tmp_path, store):
    copy = tmp_path / "S.duckdb"
    copy.write_bytes(store.read_bytes())
    before = copy.read_bytes()
    result = run("report", str(copy), "-o", str(copy))
    one_line_error(result, 2, "--output", str(copy), "STORE")
    assert copy.read_bytes() == before
    assert run("study", "summary", str(copy), "-q").returncode == 0


def test_a_study_instance_over_its_store_is_refused(tmp_path, store):
    copy = tmp_path / "S.duckdb"
    copy.write_bytes(store.read_bytes())
    before = copy.read_bytes()
    one_line_error(run("study", "instance", str(copy), "1", "-o", str(copy)), 2, "--output",
                   "STORE")
    assert copy.read_bytes() == before


def test_an_import_over_its_table_is_refused(tmp_path):
    table = tmp_path / "t.csv"
    table.write_text("id,demand.cpu\na,1\nb,2\n")
    result = run("import", "drf", str(table), "--set", "capacity.cpu=4", "-o", str(table))
    one_line_error(result, 2, "--output", "TABLE")
    assert table.read_text() == "id,demand.cpu\na,1\nb,2\n"


def test_a_plot_through_a_symbolic_link_to_the_spec_is_refused(tmp_path):
    spec = tmp_path / "case.json"
    spec.write_text(Path(MOLDABLE).read_text())
    before = spec.read_text()
    (tmp_path / "picture.png").symlink_to(spec)
    result = run("solve", str(spec), "--plot", str(tmp_path / "picture.png"), "-q")
    one_line_error(result, 2, "--plot", "SPEC")
    assert spec.read_text() == before


def test_a_report_over_a_hard_link_to_its_spec_is_refused(tmp_path):
    spec = tmp_path / "spec.json"
    spec.write_text(Path(DRF).read_text())
    before = spec.read_text()
    os.link(spec, tmp_path / "report.html")
    one_line_error(run("report", str(spec), "-o", str(tmp_path / "report.html")), 2,
                   "--output", "SPEC")
    assert spec.read_text() == before


def test_two_outputs_of_one_command_are_two_files(tmp_path, capsys):
    same = str(tmp_path / "sweep.png")
    code, _, err = cli(capsys, "sweep", DRF, "--set", "users[0].weight=1,2", "--store", same,
                       "--plot", same, "-q")
    assert code == 2 and "--plot" in err and "--store" in err
    assert not os.path.exists(same)


# --- a failed write ---------------------------------------------------------------------------

def test_an_unwritable_place_is_one_line_exit_1():
    # /proc takes no new files, even from root (tests may run as root: chmod stops nobody)
    one_line_error(run("new", "drf", "-o", "/proc/fairalloc-test.json"), 1,
                   "cannot write /proc/fairalloc-test.json")


def test_a_full_device_is_one_line_exit_1():
    one_line_error(run("new", "drf", "-o", "/dev/full"), 1, "cannot write /dev/full",
                   "No space left on device")


def _commands(tmp_path, store) -> dict[str, tuple[str, list[str]]]:
    """Each command that writes a file: the file, and its arguments."""
    table = tmp_path / "t.csv"
    table.write_text("id,demand.cpu\na,1\n")
    out = {name: str(tmp_path / name) for name in (
        "r.html", "r.md", "new.json", "instance.json", "rows.csv", "rows.parquet",
        "gantt.png", "import.json", "sweep.svg", "summary.png")}
    return {
        "report": (out["r.html"], ["report", DRF, "-o", out["r.html"], "--methods", "lp"]),
        "report markdown": (out["r.md"], ["report", str(store), "-o", out["r.md"]]),
        "new": (out["new.json"], ["new", "drf", "-o", out["new.json"]]),
        "study instance": (out["instance.json"],
                           ["study", "instance", str(store), "0", "-o", out["instance.json"]]),
        "study export csv": (out["rows.csv"],
                             ["study", "export", str(store), "-o", out["rows.csv"]]),
        "study export parquet": (out["rows.parquet"],
                                 ["study", "export", str(store), "-o", out["rows.parquet"]]),
        "solve --plot": (out["gantt.png"], ["solve", MOLDABLE, "--plot", out["gantt.png"]]),
        "import": (out["import.json"], ["import", "drf", str(table), "--set",
                                        "capacity.cpu=4", "-o", out["import.json"]]),
        "sweep --plot": (out["sweep.svg"], ["sweep", DRF, "--set", "users[0].weight=1,2",
                                            "--plot", out["sweep.svg"], "--workers", "1"]),
        "study summary --plot": (out["summary.png"],
                                 ["study", "summary", str(store), "--plot", out["summary.png"]]),
    }


COMMANDS = ["report", "report markdown", "new", "study instance", "study export csv",
            "study export parquet", "solve --plot", "import", "sweep --plot",
            "study summary --plot"]


@pytest.mark.parametrize("command", COMMANDS)
def test_a_full_disk_leaves_the_old_file(tmp_path, capsys, monkeypatch, store, command):
    path, argv = _commands(tmp_path, store)[command]
    with open(path, "w") as fh:
        fh.write(OLD)

    def full(fd):
        raise OSError(errno.ENOSPC, os.strerror(errno.ENOSPC))

    monkeypatch.setattr(os, "fsync", full)     # the disk fills as the new file is flushed
    code, _, err = cli(capsys, *argv, "-q")
    assert code == 1, err
    line, = err.strip().splitlines()      # a Markdown report's first figure fails first
    assert f"cannot write {os.path.splitext(path)[0]}" in line, line
    assert line.endswith(": No space left on device"), line
    with open(path) as fh:
        assert fh.read() == OLD
    assert not [n for n in os.listdir(tmp_path) if n.startswith(".")]   # no temporary left


@pytest.mark.parametrize("command", COMMANDS)
def test_every_output_is_renamed_into_place(tmp_path, capsys, monkeypatch, store, command):
    path, argv = _commands(tmp_path, store)[command]
    renamed = []
    replace = os.replace
    monkeypatch.setattr(os, "replace", lambda a, b: (renamed.append(b), replace(a, b)))
    code, _, err = cli(capsys, *argv, "-q")
    assert code == 0, err
    assert os.path.realpath(path) in renamed and os.path.getsize(path) > 0


# --- inputs that never end or would not fit ---------------------------------------------------

@pytest.mark.parametrize("argv", [
    ["solve", "/dev/zero"],
    ["validate", DRF, "--allocation", "/dev/zero"],
    ["import", "drf", "/dev/zero"],
    ["study", "run", "/dev/zero"],
    ["report", "/dev/zero", "-o", "{tmp}/r.html"],
])
def test_a_device_is_not_read(tmp_path, capsys, monkeypatch, argv):
    monkeypatch.chdir(tmp_path)             # study run's default store goes here
    code, _, err = cli(capsys, *[a.format(tmp=tmp_path) for a in argv])
    assert code == 2
    assert "/dev/zero" in err and "is a character device, not a file" in err


def test_a_file_above_the_limit_is_refused(tmp_path, capsys, monkeypatch):
    monkeypatch.setattr("fairalloc.files.MAX_INPUT_BYTES", 100)
    spec = tmp_path / "big.json"
    spec.write_text((ROOT / "specs" / "drf" / "classic.json").read_text())
    code, _, err = cli(capsys, "solve", str(spec))
    assert code == 2
    assert f"{spec}: invalid spec" in err and "larger than the 100 bytes an input may hold" in err


def test_standard_input_stops_at_the_limit(capsys, monkeypatch):
    monkeypatch.setattr("fairalloc.files.MAX_INPUT_BYTES", 1024)
    stream = io.BufferedReader(io.BytesIO(b" " * 10**6 + b"{}"))
    monkeypatch.setattr(sys, "stdin", io.TextIOWrapper(stream))
    code, _, err = cli(capsys, "solve", "-")
    assert code == 2
    assert "<stdin>" in err and "larger than the 1 KiB an input may hold" in err
    assert stream.tell() <= 10**5           # read up to the limit, not to the end
