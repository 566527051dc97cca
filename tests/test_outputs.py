"""The file edge of the command line: an input that would be read forever or would not fit
is refused (issue 22)."""

from __future__ import annotations

import io
import sys

import pytest
from clitools import ROOT, cli

DRF = str(ROOT / "specs" / "drf" / "classic.json")


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
