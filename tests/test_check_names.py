"""One set of check names everywhere: ``fairalloc list``, results, ``checks=`` in the Python
API, ``--fail-on`` and study specs; an unknown name is an error in each."""

from __future__ import annotations

import pytest
from clitools import ROOT, cli

import fairalloc
from fairalloc.registry import KINDS
from fairalloc.result import check_column

EMRF1 = str(ROOT / "specs" / "emrf" / "example1-knob0.5.json")
MOLDABLE1 = str(ROOT / "specs" / "moldable" / "example1.json")


def test_an_unknown_check_in_the_python_api_is_an_error():
    with pytest.raises(ValueError, match=r"no check 'envy' in emrf \(checks: feasibility"):
        fairalloc.solve(EMRF1, checks=["envy"])
    with pytest.raises(TypeError, match="list of check names"):
        fairalloc.solve(EMRF1, checks="envy_freeness")


def test_checks_selects_by_the_names_results_show():
    chosen = fairalloc.solve(EMRF1, checks=["envy_freeness"])
    assert [f.check for f in chosen.validation] == ["envy_freeness"]
    bound = fairalloc.solve(MOLDABLE1, checks=["bound"]).validation
    assert [check_column(f.check) for f in bound] == ["bound"]
    named = fairalloc.solve(MOLDABLE1, checks=[bound[0].check]).validation   # bound:theorem..
    assert [f.check for f in named] == [bound[0].check]


@pytest.mark.parametrize("kind", ["emrf", "moldable"])
def test_list_shows_the_names_results_use(capsys, kind):
    spec = EMRF1 if kind == "emrf" else MOLDABLE1
    shown = {check_column(f.check) for f in fairalloc.solve(spec).validation}
    assert shown == set(KINDS[kind].check_names())
    code, out, _ = cli(capsys, "list")
    assert code == 0 and "claimed_bounds" not in out and "bound" in out


def test_fail_on_and_studies_take_the_same_names(capsys):
    assert cli(capsys, "solve", MOLDABLE1, "--fail-on", "bound")[0] == 0
    code, out, err = cli(capsys, "solve", MOLDABLE1, "--fail-on", "claimed_bounds")
    assert code == 2 and out == "" and len(err.strip().splitlines()) == 1
    assert "checks: feasibility, no_unforced_idle, bound" in err
    rows = fairalloc.run_study({"study": "names", "kind": "moldable", "seed": 1,
                                "methods": ["gpusched1"], "checks": ["bound"],
                                "instances": {"generate": {"jobs": 3}, "count": 1}}, workers=1)
    assert "check.bound" in rows or any(k.startswith("check.bound") for k in rows)
