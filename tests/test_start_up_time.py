"""A method's reported time measures the method: the process's one-off start-up (the first
Pyomo model: importing Pyomo, setting up its HiGHS interface) is timed apart."""

from __future__ import annotations

import json
import subprocess
import sys

import pytest
from clitools import ROOT

FIRST_AND_SECOND = """
import json, fairalloc
spec = {"problem": "emrf", "capacity": {"cpu": 10, "gpu": 20}, "knob": 0.5,
        "users": [{"id": "a", "split": {"cpu": 0.5, "gpu": 0.5}},
                  {"id": "b", "split": {"cpu": 0.2, "gpu": 0.8}}]}
runs = [fairalloc.solve(spec, "lp", validate=False).solver for _ in range(2)]
print(json.dumps([[r["time_s"], r["extra"].get("start_up_s")] for r in runs]))
"""


@pytest.mark.slow
def test_the_first_lp_of_a_process_reports_the_time_of_the_method():
    done = subprocess.run([sys.executable, "-c", FIRST_AND_SECOND], capture_output=True,
                          text=True, timeout=120, cwd=ROOT)
    assert done.returncode == 0, done.stderr
    (first, start_up), (second, none) = json.loads(done.stdout)
    assert first < 5 * second + 0.05, (first, second, start_up)
    assert start_up > 0 and none is None          # paid once, reported apart


@pytest.mark.slow
def test_the_start_up_leaves_the_thread_pool_to_the_first_run():
    """HiGHS sizes its thread pool on its first run: the start-up's solve must not take that
    from a first run that asks for one thread."""
    code = FIRST_AND_SECOND.replace('"lp", validate=False', '"lp", validate=False, threads=1')
    done = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True,
                          timeout=120, cwd=ROOT)
    assert done.returncode == 0, done.stderr


def test_the_command_line_starts_without_the_heavy_libraries_it_needs_only_sometimes():
    """Every command starts by importing ``fairalloc.cli``: matplotlib (0.3 s here) and
    Pyomo load only when a figure or a Pyomo model is made. A module-level matplotlib import
    in the replay figures made every command (and every test subprocess) 0.4 s slower."""
    done = subprocess.run([sys.executable, "-c", "import sys, fairalloc.cli; print(sorted("
                           "m for m in ('matplotlib', 'pyomo') if m in sys.modules))"],
                          capture_output=True, text=True, cwd=ROOT, check=True)
    assert done.stdout.strip() == "[]", done.stdout
