"""Helpers shared by the command-line tests: run fairalloc in-process or as a subprocess."""

from __future__ import annotations

import json
import subprocess
import sys
from collections.abc import Collection, Iterable
from pathlib import Path

import pytest

from fairalloc.cli import main

ROOT = Path(__file__).resolve().parents[1]
CONTRACT = {"problem", "method", "status", "objective", "allocation", "metrics", "validation",
            "solver"}


def run(*argv: str, cwd: str | None = None,
        stdin: str | None = None) -> subprocess.CompletedProcess:
    """``fairalloc ARGV`` in a subprocess: exit code, stdout, stderr, any traceback."""
    return subprocess.run([sys.executable, "-m", "fairalloc.cli", *argv], input=stdin,
                          capture_output=True, text=True, timeout=120, cwd=cwd)


def cli(capsys, *argv: str) -> tuple[int, str, str]:
    """``fairalloc ARGV`` in this process: (exit code, stdout, stderr)."""
    code = main(list(argv))
    captured = capsys.readouterr()
    return code, captured.out, captured.err


def write(tmp_path: Path, data, name: str = "spec.json") -> str:
    """``data`` as a JSON file in ``tmp_path``; its path."""
    path = tmp_path / name
    path.write_text(json.dumps(data))
    return str(path)


def slow_cases(values: Iterable, slow: Collection) -> list:
    """``values`` as parametrize cases, those in ``slow`` marked slow (``make test`` leaves
    them out; the token kind's, say, whose solve plays its game for thousands of rounds)."""
    return [pytest.param(value, marks=pytest.mark.slow) if value in slow else value
            for value in values]


def expand_cpuset(text: str) -> list[int]:
    """The processor ids of a cpuset list ("0-2,5" -> [0, 1, 2, 5]), written independently of
    fairalloc's parser."""
    ids: list[int] = []
    for part in filter(None, text.split(",")):
        lo, _, hi = part.partition("-")
        ids += range(int(lo), int(hi or lo) + 1)
    return ids
