"""The bound check every kind shares (``checks/bounds.py``): every claim is checked, on the
objective computed from the allocation, in the right direction for the kind's sense."""

from __future__ import annotations

from types import SimpleNamespace

import pytest

from fairalloc.checks.bounds import claimed_bounds


def objective(problem, allocation):
    return allocation.value


@pytest.fixture
def at():
    return lambda value: SimpleNamespace(value=value)


def test_every_claim_is_checked_not_just_the_first(at):
    check = claimed_bounds(objective, "min", "makespan")
    claims = {"bound:theorem1": 20.0, "alpha": 0.5, "bound:theorem2": 9.0}
    f = check(None, at(10.0), claims=claims)
    assert f.verdict == "fails" and f.check == "bound"
    assert f.witness == {"makespan": 10.0, "bound": 9.0, "claim": "bound:theorem2"}
    assert "theorem1 bound 20" in f.detail and "10 > theorem2 bound 9" in f.detail
    assert check(None, at(9.0), claims=claims).verdict == "holds"


def test_a_max_objective_is_bounded_from_below(at):
    check = claimed_bounds(objective, "max", "throughput")
    f = check(None, at(4.0), claims={"bound:guarantee": 5.0})
    assert f.verdict == "fails" and f.check == "bound:guarantee"
    assert f.witness == {"throughput": 4.0, "bound": 5.0}
    assert check(None, at(5.0), claims={"bound:guarantee": 5.0}).verdict == "holds"


def test_no_claim_is_unchecked_never_holds(at):
    check = claimed_bounds(objective, "min", "makespan")
    for claims in (None, {}, {"alpha": 1.0}, {"bound:x": None}, {"bound:x": True}):
        assert check(None, at(1.0), claims=claims).verdict == "unchecked"


def test_the_value_comes_from_the_allocation_not_the_claims(at):
    check = claimed_bounds(objective, "min", "makespan")
    f = check(None, at(12.0), claims={"bound:t": 11.0, "makespan": 1.0})
    assert f.verdict == "fails" and f.witness["makespan"] == 12.0


def test_a_sense_other_than_min_or_max_is_refused():
    with pytest.raises(ValueError, match="min or max"):
        claimed_bounds(objective, "down", "x")
