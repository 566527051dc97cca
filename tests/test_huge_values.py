"""Values near the float range (1e308) are refused or handled, never a RuntimeWarning on
stderr: a spec value the schema refused is not multiplied on in the preconditions pass, and an
allocation's numbers are bounded so that the checks' sums and products stay finite."""

from __future__ import annotations

import json

import pytest
from clitools import ROOT, run

HUGE = (1e308, 1.7976931348623157e308, -1e308)


def spec_path(kind: str, name: str) -> str:
    return str(ROOT / "specs" / kind / name)


@pytest.mark.parametrize("value", HUGE[:2])
def test_accelos_huge_registers_per_thread(tmp_path, value):
    spec = json.loads((ROOT / "specs" / "accelos" / "figure3.json").read_text())
    spec["kernels"][0]["registers_per_thread"] = value
    path = tmp_path / "spec.json"
    path.write_text(json.dumps(spec))
    done = run("solve", str(path), "--format", "json")
    assert "RuntimeWarning" not in done.stderr and "Traceback" not in done.stderr
    assert done.returncode == 2
    assert done.stderr.splitlines()[1:] == [
        "  kernels[0].registers_per_thread: must be <= 9007199254740992"]


@pytest.mark.parametrize("value", HUGE)
@pytest.mark.parametrize("kind, spec, allocation", [
    ("drf", "classic.json", lambda v: {"A": {"tasks": v}, "B": {"tasks": 1}}),
    ("drf", "classic.json", lambda v: {"A": {"tasks": 1, "resources": {"cpu": v, "mem": 1}},
                                       "B": {"tasks": 1, "resources": {"cpu": 1, "mem": v}}}),
    ("hetero", "gavel-mix.json", None),
])
def test_validate_huge_allocation_values(tmp_path, value, kind, spec, allocation):
    if allocation is None:        # every time fraction of every job
        solved = json.loads(run("solve", spec_path(kind, spec), "--format", "json").stdout)
        data = {job: {"time": dict.fromkeys(entry["time"], value)}
                for job, entry in solved["allocation"].items()}
    else:
        data = allocation(value)
    path = tmp_path / "alloc.json"
    path.write_text(json.dumps(data))
    done = run("validate", spec_path(kind, spec), "--allocation", str(path), "--format", "json")
    assert "RuntimeWarning" not in done.stderr and "Traceback" not in done.stderr
    assert done.returncode == 2 and done.stdout == ""
    assert "must be within ±1e+100" in done.stderr
