"""How the suite runs: ``make test`` is the quick tier (every test not marked slow),
``make test-all`` and CI run every test, spread over the cores; CI replays the same Hypothesis
examples every run, and no example anywhere has a deadline (a timed assert)."""

from __future__ import annotations

import os
import re
import shlex
import subprocess

from clitools import ROOT
from hypothesis import settings


def pytest_arguments(target: str) -> list[str]:
    """The arguments ``make TARGET`` gives pytest (read from ``make -n``: nothing runs)."""
    printed = subprocess.run(["make", "-n", "--no-print-directory", target], cwd=ROOT,
                             capture_output=True, text=True, check=True).stdout
    line, = [line for line in printed.splitlines() if line.startswith(".venv/bin/pytest")]
    return shlex.split(line)[1:]


def test_make_test_leaves_out_the_slow_tests_only():
    arguments = pytest_arguments("test")
    assert arguments[arguments.index("-m") + 1] == "not slow"
    assert not any(a.endswith(".py") or a.startswith("tests") for a in arguments), arguments


def test_make_test_all_runs_every_test():
    arguments = pytest_arguments("test-all")
    assert "-m" not in arguments and "-k" not in arguments, arguments
    assert not any(a.endswith(".py") or a.startswith("tests") for a in arguments), arguments


def test_ci_runs_every_test():
    script = (ROOT / ".ci" / "run").read_text(encoding="utf-8")
    assert re.search(r"^make test-all$", script, re.MULTILINE), script


def test_no_example_has_a_deadline():
    assert settings.default.deadline is None
    assert settings.get_profile("ci").deadline is None


def test_ci_replays_the_same_examples():
    ci = settings.get_profile("ci")
    assert ci.derandomize and ci.database is None
    if os.environ.get("CI"):
        assert settings.default.derandomize
