"""drf/emrf envy-freeness: the class path and the orthant-dominance sweep against the pairwise
definition on small random instances (ties included), and which path a size takes."""

from __future__ import annotations

import numpy as np
import pytest

import fairalloc
from fairalloc.checks import leontief
from fairalloc.checks.leontief import _envy_worth, exceeds, unit_scale
from fairalloc.studies import drf, emrf


def envious(m, x, bundles) -> np.ndarray:
    """The definition: i envies when some other user's bundle scaled by w_i / w_j runs more
    of its units than it has (every pair)."""
    return np.array([exceeds(_envy_worth(m, bundles, i).max(), x[i], unit_scale(m)[i])
                     for i in range(m.n)])


def instances(seed: int):
    """Random drf (distinct demands, or a few task types: ties) and emrf specs, each with the
    method's allocation (equal shares: ties), one with alike users given alike units, and one
    scaled down at random."""
    rng = np.random.default_rng(seed)
    n = int(rng.integers(2, 40))
    specs = [drf.random_spec(seed, users=n), drf.random_spec(seed, users=n, types=3),
             drf.random_spec(seed, users=n, divisible=False), emrf.random_spec(seed, users=n)]
    for data in specs:
        spec = fairalloc.load_spec(data)
        m = spec.problem.market
        x = m.units(fairalloc.solve(spec, validate=False).allocation)
        alike = x.copy()
        alike[m.classes().label == m.classes().label[0]] = x[0]
        scaled = x * rng.choice([0.5, 1.0], m.n)
        for units in (x, alike, np.floor(scaled) if m.integral else scaled):
            yield spec.problem, m, units


@pytest.mark.parametrize("seed", range(12))
def test_both_envy_paths_match_the_definition(seed, monkeypatch):
    for problem, m, x in instances(seed):
        allocation = m.allocation(x)
        expected = envious(m, x, m.bundles(allocation))
        monkeypatch.setattr(leontief, "SWEEP_ABOVE_CLASSES", float("inf"))
        by_class = leontief.envy_freeness(problem, allocation)
        monkeypatch.setattr(leontief, "SWEEP_ABOVE_CLASSES", 0)
        by_sweep = leontief.envy_freeness(problem, allocation)
        assert "orthant-dominance" in by_sweep.detail
        for found in (by_class, by_sweep):
            assert found.holds == (not expected.any())
            if not found.holds:
                assert expected[m.ids.index(found.witness["envious"])]
                assert f"{int(expected.sum())} of {m.n} users envy" in found.detail


def test_many_demand_classes_go_to_the_sweep():
    """300 users of distinct demands (~300 demand classes): the sweep, 7x faster there."""
    spec = fairalloc.load_spec(drf.random_spec(1, users=300))
    result = fairalloc.solve(spec, validate=False)
    assert "orthant-dominance" in leontief.envy_freeness(spec.problem, result.allocation).detail


def test_the_level_bound_never_spares_a_negative_query():
    """The sweep skips users whose level no bundle reaches; that bound needs a positive query.
    User a holds negative units (an infeasible allocation, as a file may hold): b's empty
    bundle beats a's negative query on every resource, so a envies b though no bundle holds
    anything."""
    from fairalloc.checks.leontief import _envious_by_dominance
    from fairalloc.models.leontief import Leontief

    m = Leontief(("a", "b"), ("r0", "r1"), np.array([10.0, 10.0]),
                 np.array([[1.0, 1.0], [1.0, 0.0]]), np.ones(2), np.full(2, np.inf),
                 integral=False)
    x = np.array([-1.0, 0.0])
    bundles = x[:, None] * m.demand
    envious_users, swept = _envious_by_dominance(m, x, bundles)
    np.testing.assert_array_equal(envious_users, envious(m, x, bundles))
    assert envious_users.tolist() == [True, False] and swept == 1    # b: no bundle reaches


def test_a_drf_allocation_needs_no_sweep():
    """In a progressive-filling allocation every user is capped or stopped by a saturated
    resource that every user holding it stopped at: the level bound clears all of them (DRF's
    envy-freeness argument), and the verdict is the definition's."""
    spec = fairalloc.load_spec(drf.random_spec(3, users=400))
    allocation = fairalloc.solve(spec, validate=False).allocation
    m = spec.problem.market
    x, bundles = m.units(allocation), m.bundles(allocation)
    envious_users, swept = leontief._envious_by_dominance(m, x, bundles)
    assert swept == 0 and not envious(m, x, bundles).any() and not envious_users.any()
    found = leontief.envy_freeness(spec.problem, allocation)
    assert found.holds and "sweep of the 0 below their cap" in found.detail
