"""An ETF spec whose leximin level is 0 (an app of demand 0): the MILP's rounds must not stop on
HiGHS's rounding of a level of 0, and what the checks say of it must read right. Found by the
property tests on a run that was not derandomised (issue 33 §5)."""

from __future__ import annotations

import pytest
from clitools import cli, write

import fairalloc

ZERO_LEVEL = {"problem": "etf", "quantum": 2, "phi": 0.0,
              "apps": [{"id": "a0", "power": 0.5}, {"id": "a1", "power": 0.5, "demand": 0},
                       {"id": "a2", "power": 12}, {"id": "a3", "power": 12}]}


def test_the_milp_proves_a_level_of_0_and_hands_out_every_slice():
    """Theta_1 is 0 (a1 can take no slice); HiGHS's bound sits 3.6e-18 above it, which a gap
    relative to the objective alone calls open, and the rounds stopped with no slice given."""
    milp = fairalloc.solve(ZERO_LEVEL, method="milp")
    exact = fairalloc.solve(ZERO_LEVEL, method="leximin")
    assert milp.status == "optimal"
    assert milp.allocation.column("time").tolist() == exact.allocation.column("time").tolist()
    assert milp.allocation.column("time").sum() == 2
    assert {f.check: f.verdict for f in milp.validation}["pareto_efficiency"] == "holds"


def test_no_negative_zero_slices():
    times = fairalloc.solve(ZERO_LEVEL, method="milp").allocation.column("time")
    assert not any(str(t) == "-0.0" for t in times.tolist())


def test_a_gain_from_nothing_is_counted_in_slices():
    """One slice, three apps: a0 at 0 slices gets the slice by doubling its power (6 -> 12 W).
    Its gain is one slice (energy 0 -> 12 at the 12 W it then runs at: two slices' worth of
    its true 6 W), not 12 / 1e-12."""
    spec = {"problem": "etf", "quantum": 1, "phi": 0,
            "apps": [{"id": "a0", "power": 6}, {"id": "a1", "power": 6},
                     {"id": "a2", "power": 12}]}
    sp = {f.check: f for f in fairalloc.solve(spec, method="leximin").validation}
    witness = sp["strategy_proofness"].witness
    assert sp["strategy_proofness"].verdict == "fails"
    assert witness["time"] == [0.0, 1.0]
    assert witness["gain"] == pytest.approx(2.0)


def test_a_witness_list_is_printed_in_the_terminal_table(capsys, tmp_path):
    """A witness's list of names (``wanting: [a0, a2, a3]``) was taken for rich markup and
    dropped: ``{idle: 2, wanting: }``; names that look like markup print as written."""
    spec = {**ZERO_LEVEL, "name": "[bold]mine[/]"}
    allocation = {"allocation": {app["id"]: {"time": 0} for app in ZERO_LEVEL["apps"]}}
    code, out, err = cli(capsys, "validate", write(tmp_path, spec, "spec.json"),
                         "--allocation", write(tmp_path, allocation, "alloc.json"))
    assert code == 0, err
    assert "wanting: [a0, a2, a3]" in " ".join(out.split())
    assert "[bold]mine[/]" in out


@pytest.mark.parametrize("objective, bound, gap", [(0.0, 3.6e-18, 3.6e-18), (2.0, 3.0, 0.5),
                                                   (0.5, 1.0, 0.5), (1.0, None, 0.0)])
def test_slice_gap(objective, bound, gap):
    from fairalloc.solvers.etf import slice_gap

    assert slice_gap(objective, bound) == pytest.approx(gap)

