"""Issue 32, the numbers of a replay document and its trace: every value of the wrong type or
beyond what the models can represent is exit 2 naming its JSON path (or the table's file,
line and column) and the rule; never a traceback, a solver's failure (exit 1), a warning on
stderr or a silently wrong replay."""

from __future__ import annotations

import json
from pathlib import Path

import pytest
from clitools import cli

ROOT = Path(__file__).resolve().parents[2]
QUICK = json.loads((ROOT / "specs" / "replay" / "quick.json").read_text())
HUGE = "1" + "0" * 5000          # past Python's 4,300-digit limit on int()


def refused(capsys, tmp_path, text: str, *argv: str) -> str:
    """The stderr of ``fairalloc ARGV`` (``DOC`` in it: a file of ``text``, ``OUT`` a file to
    write), checked to be exit 2 without a traceback."""
    path = tmp_path / "doc.json"
    path.write_text(text)
    named = {"DOC": str(path), "OUT": str(tmp_path / "out.html")}
    code, _, err = cli(capsys, *(named.get(a, a) for a in argv))
    assert code == 2, err
    assert "Traceback" not in err
    return err


# --- an integer too long to convert -------------------------------------------------------------

@pytest.mark.parametrize("argv", [("replay", "DOC"), ("validate", "DOC"),
                                  ("report", "DOC", "-o", "OUT")])
def test_a_5001_digit_integer_in_a_replay_document_is_refused(capsys, tmp_path, argv):
    text = json.dumps(QUICK).replace('"jobs": 16', f'"jobs": {HUGE}')
    err = refused(capsys, tmp_path, text, *argv)
    assert "trace.jobs: " in err and "not a finite number" in err


@pytest.mark.parametrize("argv", [("solve", "DOC"), ("validate", "DOC"),
                                  ("report", "DOC", "-o", "OUT")])
def test_a_5001_digit_integer_in_a_spec_is_refused(capsys, tmp_path, argv):
    spec = (ROOT / "specs" / "drf" / "classic.json").read_text()
    text = spec.replace('"cpu": 9', f'"cpu": -{HUGE}', 1)
    err = refused(capsys, tmp_path, text, *argv)
    assert "capacity.cpu: " in err and "not a finite number" in err


def test_a_5001_digit_integer_in_a_study_is_refused(capsys, tmp_path):
    study = {"study": "huge", "kind": "hetero",
             "instances": {"base": str(ROOT / "specs" / "replay" / "quick.json")},
             "grid": {"trace.seed": [0, 1]}}
    text = json.dumps(study).replace("[0, 1]", f"[0, {HUGE}]")
    err = refused(capsys, tmp_path, text, "study", "run", "DOC", "--store",
                  str(tmp_path / "s.duckdb"))
    assert 'grid["trace.seed"][1]: ' in err and "not a finite number" in err
