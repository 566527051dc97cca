"""Progress of a long replay or study whose stderr is a log file, not a terminal: a plain line
every so often (issue 33 §2: a 5-minute replay said nothing until it ended)."""

from __future__ import annotations

import pytest
from clitools import ROOT, cli

from fairalloc.cli import output

QUICK = str(ROOT / "specs" / "replay" / "quick.json")


def test_a_replay_logged_to_a_file_says_how_far_it_got(capsys, monkeypatch):
    monkeypatch.setattr(output, "LOG_EVERY_S", 0.0)     # every update: the run is short
    code, out, err = cli(capsys, "replay", QUICK)
    assert code == 0, err
    lines = err.splitlines()
    assert lines and all(line.startswith("quick: ") and "h simulated: " in line
                         for line in lines), err
    assert lines[-1].endswith(": 16/16")
    done = [int(line.rsplit(": ", 1)[1].split("/")[0]) for line in lines]
    assert done == sorted(done)


@pytest.mark.slow
def test_quiet_and_short_runs_log_nothing(capsys, monkeypatch):
    monkeypatch.setattr(output, "LOG_EVERY_S", 0.0)
    assert cli(capsys, "replay", QUICK, "-q")[2] == ""
    monkeypatch.setattr(output, "LOG_EVERY_S", 3600.0)
    assert cli(capsys, "replay", QUICK)[2] == ""


@pytest.mark.slow
def test_a_study_logged_to_a_file_counts_its_rows(capsys, monkeypatch, tmp_path):
    monkeypatch.setattr(output, "LOG_EVERY_S", 0.0)
    study = str(ROOT / "specs" / "studies" / "replay-quick.json")
    code, _, err = cli(capsys, "study", "run", study, "--store", str(tmp_path / "s.duckdb"),
                       "--workers", "1")
    assert code == 0, err
    assert any(" errors" in line and "/" in line for line in err.splitlines()), err
