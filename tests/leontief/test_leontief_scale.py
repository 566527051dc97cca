"""drf and emrf at the ends of the documented range (capacities 1e-6 .. 1e12): tolerances are
relative to each capacity and to each user's units, never absolute (issue 26)."""

from __future__ import annotations

import pytest

import fairalloc
from fairalloc.models.leontief import RTOL

SCALES = [1e-6, 1.0, 1e11]


def two_users(scale: float) -> dict:
    """Capacities 2 and 4 (times ``scale``); A needs 1, 1 per task and B 1, 2."""
    return {"problem": "drf", "capacity": {"cpu": 2 * scale, "mem": 4 * scale},
            "users": [{"id": "A", "demand": {"cpu": 1 * scale, "mem": 1 * scale}},
                      {"id": "B", "demand": {"cpu": 1 * scale, "mem": 2 * scale}}]}


def overloaded(scale: float, factor: float) -> dict:
    """One task each (exactly the capacity of cpu) times ``factor``."""
    return {"A": {"tasks": factor, "resources": {"cpu": factor * scale, "mem": factor * scale}},
            "B": {"tasks": factor, "resources": {"cpu": factor * scale,
                                                  "mem": 2 * factor * scale}}}


@pytest.mark.parametrize("scale", SCALES)
def test_five_percent_over_capacity_is_infeasible_at_every_scale(scale):
    """At the 1e-6 capacity floor a 5% overload used to pass: the tolerance had an absolute
    floor of 1e-7 (a tenth of the capacity there)."""
    result = fairalloc.validate(two_users(scale), overloaded(scale, 1.05))
    assert result.status == "infeasible"
    assert result.finding("feasibility").verdict == "fails"


@pytest.mark.parametrize("scale", SCALES)
@pytest.mark.parametrize("factor, verdict", [(1 + 3 * RTOL, "fails"), (1 + RTOL / 3, "holds")])
def test_feasibility_tolerance_is_relative_to_the_capacity(scale, factor, verdict):
    """Just above the tolerance fails, just below holds, whatever the scale."""
    finding = fairalloc.validate(two_users(scale), overloaded(scale, factor)).finding(
        "feasibility")
    assert finding.verdict == verdict, finding.detail


@pytest.mark.parametrize("scale", SCALES)
@pytest.mark.parametrize("factor, verdict", [(1 - 3 * RTOL, "fails"), (1 - RTOL / 3, "holds")])
def test_pareto_and_sharing_tolerances_are_relative(scale, factor, verdict):
    """One task each fills cpu: a shortfall just above the tolerance leaves room to grow and
    falls short of the weighted slice's worth; just below it does not."""
    result = fairalloc.validate(two_users(scale), overloaded(scale, factor))
    assert result.finding("pareto_efficiency").verdict == verdict
    assert result.finding("sharing_incentive").verdict == verdict


@pytest.mark.parametrize("scale", SCALES)
def test_emrf_shortfall_below_the_weighted_slice_fails_at_every_scale(scale):
    """emrf's units (GFLOPS) scale with the capacities: 5% below the weighted slice's worth
    used to pass sharing incentive at the capacity floor, where every total is below 1e-6."""
    spec = {"problem": "emrf", "capacity": {"cpu": 1 * scale, "gpu": 1 * scale}, "knob": 0.5,
            "users": [{"id": "A", "split": {"cpu": 0.5, "gpu": 0.5}},
                      {"id": "B", "split": {"cpu": 0.5, "gpu": 0.5}}]}
    total = 0.95 * scale
    alloc = {u: {"total": total, "devices": {"cpu": total / 2, "gpu": total / 2}}
             for u in ("A", "B")}
    result = fairalloc.validate(spec, alloc)
    assert result.finding("sharing_incentive").verdict == "fails"
    assert result.finding("pareto_efficiency").verdict == "fails"


KNOB_ZERO = {"problem": "emrf", "capacity": {"cpu": 20.0, "gpu": 160.0}, "knob": 0.0,
             "users": [{"id": "u0", "weight": 1.44, "split": {"cpu": 0.8, "gpu": 0.2}},
                       {"id": "u1", "weight": 0.64, "split": {"cpu": 0.6, "gpu": 0.4}}]}


def test_emrf_lp_at_knob_zero_has_no_negative_noise():
    """The fairest-optimum round froze u0 at HiGHS's t = -5e-16: a total of -9e-15 GFLOPS,
    which the feasibility check (no tolerance on signs then) called infeasible, so solve
    raised. 32 of 150 random knob-0 specs did; this is the smallest."""
    result = fairalloc.solve(KNOB_ZERO)
    assert result.status == "optimal"
    total = result.allocation.column("total")
    assert min(total) >= 0
    assert total[0] == 0 and total[1] == pytest.approx(100 / 3, rel=1e-9)


FIVE_USERS = {"problem": "emrf", "capacity": {"cpu": 1.25, "gpu": 10.0}, "knob": 0.5,
                "users": [{"id": f"u{i}", "weight": w, "split": {"cpu": c, "gpu": 1 - c}}
                          for i, (w, c) in enumerate([(0.56, 0.8), (3.35, 0.6), (3.69, 0.5),
                                                      (2.62, 0.2), (3.05, 0.3)])]}


@pytest.mark.parametrize("scale", [1e-6, 6e8, 1e9, 1e11])
def test_emrf_lp_scales_with_the_capacities(scale):
    """At capacities of 1e9 HiGHS's absolute tolerances made the fairest-optimum round
    infeasible (or optimal without a solution); the LPs now run in units of the largest
    capacity, so the totals scale with the capacities."""
    spec = {**FIVE_USERS,
            "capacity": {d: c * scale for d, c in FIVE_USERS["capacity"].items()}}
    base = fairalloc.solve(FIVE_USERS)
    result = fairalloc.solve(spec)
    assert result.status == "optimal"
    assert result.objective == pytest.approx(base.objective * scale, rel=1e-9)
    assert [f.verdict for f in result.validation] == [f.verdict for f in base.validation]
    for got, want in zip(result.allocation.column("total"), base.allocation.column("total")):
        assert got == pytest.approx(want * scale, rel=1e-7, abs=1e-9 * scale)
