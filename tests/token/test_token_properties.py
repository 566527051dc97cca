"""Property tests for token (the token mechanism) on random instances.

What is checked, each against an independent computation: the utility grid's binary searches
against brute-force sums; the direct stationary distribution against ``np.linalg`` on the full
transition matrix; the value of one more token against np.linalg's values; eq. 8 as "fill the
boosts from the most tokens down"; policy iteration's best response against the MDP linear
program and against every one-step deviation; the mean-field and mean-field-lp methods giving
the same thresholds; the chain's flow balance (every
type spends n/m tokens a round); the checks failing on broken allocations; the simulation's
mechanisms against their definitions.
"""

from __future__ import annotations

import json

import numpy as np
import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

import fairalloc
from fairalloc.checks import token as V
from fairalloc.models.token import (
    Chain,
    Utility,
    UtilityGrid,
    boost_probability,
    deviation_gain,
    stationary_distribution,
    strategy_thresholds,
)
from fairalloc.models.token_game import MECHANISMS, simulate
from fairalloc.solvers import token as S

PASSING = ("holds", "unrefuted")    # a probe that found nothing is not a failure


def dense(chain: Chain) -> np.ndarray:
    """The first type's transition matrix, written out from the chain's bands."""
    return (np.diag(chain.stay[0]) + np.diag(chain.up[0, :-1], 1)
            + np.diag(chain.down[0, 1:], -1))


def fast(examples: int) -> settings:
    return settings(max_examples=examples, deadline=None,
                    suppress_health_check=[HealthCheck.too_slow])


@st.composite
def utilities(draw) -> dict:
    form = draw(st.sampled_from(["values", "uniform", "samples"]))
    if form == "uniform":
        a = draw(st.floats(0, 0.5))
        return {"uniform": [a, a + draw(st.floats(0.01, 0.5))],
                "points": draw(st.integers(1, 12))}
    values = draw(st.lists(st.sampled_from([0.0, 0.05, 0.1, 0.2, 0.25, 0.3, 0.5, 0.8]),
                           min_size=1, max_size=6))
    if form == "samples":
        return {"samples": values}
    weights = draw(st.lists(st.integers(1, 5), min_size=len(values), max_size=len(values)))
    return {"values": values, "probabilities": [w / sum(weights) for w in weights]}


@st.composite
def token_specs(draw, max_types: int = 3, max_tokens: int = 6) -> dict:
    k = draw(st.integers(1, max_types))
    weights = draw(st.lists(st.integers(1, 4), min_size=k, max_size=k))
    fractions = [w / sum(weights) for w in weights]
    fractions[-1] = 1 - sum(fractions[:-1])
    agents = draw(st.sampled_from([20, 100, 1000]))
    t_max = draw(st.integers(2, max_tokens))
    return {
        "problem": "token", "agents": agents,
        "boosts": draw(st.integers(1, agents // 2)),
        "initial_tokens": draw(st.integers(1, t_max)), "max_tokens": t_max,
        "discount": draw(st.sampled_from([0.0, 0.5, 0.9, 0.99])),
        "tolerance": 1e-3, "max_iterations": 300,
        "types": [{"id": f"T{i}", "fraction": f, "utility": draw(utilities())}
                  for i, f in enumerate(fractions)],
    }


# ---------------------------------------------------------------- formulas


@fast(60)
@given(st.lists(utilities(), min_size=1, max_size=3), st.floats(-1, 1.5))
def test_grid_searches_match_brute_force(specs, c):
    us = tuple(Utility.from_spec(s) for s in specs)
    grid = UtilityGrid.of(us)
    q = np.full((len(us), 1), c)
    for k, u in enumerate(us):
        above = u.values > c
        assert grid.prob_above(q)[k, 0] == pytest.approx(u.probabilities[above].sum(), abs=1e-12)
        excess = (u.probabilities * np.maximum(u.values - c, 0)).sum()
        assert grid.expected_excess(q)[k, 0] == pytest.approx(excess, abs=1e-12)
        # top-mass strategy: signal on the top Pr(u > c) exactly = threshold c
        mass = np.full((len(us), 1), u.probabilities[above].sum())
        expect = (u.probabilities * u.values)[above].sum()
        assert grid.top_mass_utility(mass)[k, 0] == pytest.approx(expect, abs=1e-12)


@fast(80)
@given(st.integers(1, 8), st.floats(0.01, 1.0),
       st.lists(st.sampled_from([0.0, 0.1, 0.5, 0.9, 1.0]), min_size=9, max_size=9))
def test_stationary_distribution_matches_linear_algebra(t_max, p_r, raw):
    s = np.array([raw[: t_max + 1]])
    s[0, 0], s[0, -1] = 0.0, 1.0
    chain = Chain.of(s, p_r)
    f = stationary_distribution(chain)[0]
    P = dense(chain)
    assert P.sum(axis=1) == pytest.approx(np.ones(t_max + 1))
    assert chain.step(f[None])[0] == pytest.approx(f @ P, abs=1e-15)
    A = P.T - np.eye(t_max + 1)
    A[-1] = 1.0
    b = np.zeros(t_max + 1)
    b[-1] = 1.0
    assert np.all(f >= 0) and f.sum() == pytest.approx(1.0)
    assert f @ P == pytest.approx(f, abs=1e-12)
    if np.linalg.matrix_rank(A) == t_max + 1:          # one closed class: f is unique
        assert f == pytest.approx(np.linalg.solve(A, b), abs=1e-6)   # LAPACK: ill-conditioned
    # flow balance: tokens spent = tokens received, so sum f s = P_R / (1 + P_R)
    assert f @ s[0] == pytest.approx(p_r / (1 + p_r), abs=1e-12)


@fast(40)
@given(st.integers(1, 8), st.floats(0.01, 1.0), st.floats(0.0, 0.999),
       st.lists(st.floats(0, 1), min_size=9, max_size=9),
       st.lists(st.floats(-1, 1), min_size=9, max_size=9))
def test_token_values_match_linear_algebra(t_max, p_r, gamma, raw, reward):
    s = np.array([raw[: t_max + 1]])
    s[0, 0], s[0, -1] = 0.0, 1.0
    chain = Chain.of(s, p_r)
    r = np.array([reward[: t_max + 1]])
    W = np.linalg.solve(np.eye(t_max + 1) - gamma * dense(chain), r[0])
    assert chain.token_values(gamma, r)[0] == pytest.approx(np.diff(W), abs=1e-9)


def test_token_values_keep_their_precision_next_to_a_discount_of_one():
    # W is ~1e12 here, so differences of W keep ~4 digits; D, solved directly, keeps them all:
    # as gamma -> 1, D tends to the bias differences of the average-reward chain (finite)
    s = np.array([[0.0, 0.3, 0.6, 1.0]])
    chain = Chain.of(s, 0.25)
    r = np.array([[0.0, 0.2, 0.5, 1.0]])
    near = chain.token_values(1 - 1e-12, r)[0]
    closer = chain.token_values(1 - 1e-15, r)[0]
    assert np.all(np.isfinite(near)) and near == pytest.approx(closer, rel=1e-6)


@fast(80)
@given(st.lists(st.floats(0, 0.3), min_size=2, max_size=10), st.integers(2, 500))
def test_eq8_fills_the_boosts_from_the_top(g, m):
    g = np.array(g) / max(sum(g), 1e-9) * min(sum(g), 1.0)
    n = max(1, m // 4)
    p_b = boost_probability(g, m, n)
    assert np.all((p_b >= 0) & (p_b <= 1))
    assert np.all(np.diff(p_b[1:]) >= -1e-12)          # more tokens never hurt
    granted = m * (g[1:] * p_b[1:]).sum()
    assert granted == pytest.approx(min(n, m * g[1:].sum()), abs=1e-9)


@fast(25)
@given(token_specs())
def test_policy_iteration_is_a_best_response_and_the_lp_optimum(data):
    p = fairalloc.load_spec(data).problem
    p_b = S.step_boosts(p.initial_tokens - 0.5, p.max_tokens)
    thr, p_y, _ = S.policy_iteration(p, p_b, None)
    assert thr == pytest.approx(strategy_thresholds(p, p_y, p_b), nan_ok=True)
    gain, _ = deviation_gain(p, p_y, p_b, thr)          # no state gains by the other action
    assert gain <= 1e-11
    lp, _, _ = S.lp_best_response(p, p_b)
    assert thr == pytest.approx(lp, abs=1e-6, nan_ok=True)


@fast(15)
@given(token_specs(max_types=2, max_tokens=5))
def test_both_methods_agree_and_pass_their_checks(data):
    vi = fairalloc.solve(data, "mean-field")
    lp = fairalloc.solve(data, "mean-field-lp")
    assert vi.status == lp.status
    a = np.array(vi.allocation.column("thresholds"), dtype=float)
    b = np.array(lp.allocation.column("thresholds"), dtype=float)
    assert np.allclose(a, b, atol=1e-5, equal_nan=True)
    if vi.status == "feasible":
        assert vi.finding("equilibrium").holds, vi.finding("equilibrium")
    assert vi.finding("stationarity").holds
    for share in vi.metrics["boost_share"].values():
        assert share == pytest.approx(data["boosts"] / data["agents"], rel=1e-6)


# -------------------------------------------------------------------- checks fail when broken


PAIR = {"problem": "token", "agents": 100, "boosts": 10, "initial_tokens": 1, "max_tokens": 6,
        "discount": 0.99, "tolerance": 1e-4,
        "types": [{"id": "hi", "fraction": 0.5, "utility": {"uniform": [0.1, 0.5], "points": 9}},
                  {"id": "lo", "fraction": 0.5, "utility": {"uniform": [0.0, 0.2], "points": 9}}]}


@pytest.fixture(scope="module")
def solved():
    spec = fairalloc.load_spec(PAIR)
    return spec.problem, fairalloc.solve(spec)


def test_the_solved_pair_passes(solved):
    _, result = solved
    assert result.status == "feasible"
    assert all(f.verdict in PASSING for f in result.validation), result.validation


def test_with_a_short_horizon_thresholds_rise():
    result = fairalloc.solve({**PAIR, "discount": 0.9})
    assert result.status == "feasible"
    assert result.finding("equilibrium").holds and result.finding("stationarity").holds
    # agents with one token rarely win (P_B(1) ~ 0.05) and those with two always do: W jumps
    # from t = 1 to t = 2, so spending at t = 2 costs more than at t = 1 and the threshold
    # rises: the paper's "thresholds fall as tokens rise" (section 3.3) is not a theorem
    assert result.metrics["boost_probability"][1] < 0.1
    finding = result.finding("monotone_thresholds")
    assert not finding.holds and finding.witness["tokens"] == 1
    thr = result.allocation["hi"]["thresholds"]
    assert thr[2] > thr[1]


def _with(p, result, **columns):
    alloc = result.allocation
    cols = {key: np.array(alloc.column(key), dtype=float) for key in
            ("thresholds", "token_distribution", "signal_probability")}
    cols.update(columns)
    return p.allocation(cols["thresholds"], cols["token_distribution"],
                        cols["signal_probability"])


def test_feasibility_holds_on_the_solved_pair_and_fails_on_each_broken_part(solved):
    """Each structural rule on its own: a signal at t = 0, no forced boost at t_max, a
    distribution that does not sum to 1, a missing threshold, thresholds that describe
    another strategy, a mean_tokens that is not the mean."""
    p, result = solved
    assert V.feasibility(p, result.allocation).holds
    p_y = np.array(result.allocation.column("signal_probability"), dtype=float)
    f = np.array(result.allocation.column("token_distribution"), dtype=float)
    thr = np.array(result.allocation.column("thresholds"), dtype=float)
    signals_at_zero, never_forced = p_y.copy(), p_y.copy()
    signals_at_zero[1, 0], never_forced[0, -1] = 0.5, 0.0
    short, missing, moved = f.copy(), thr.copy(), thr.copy()
    short[0, 1] -= 0.01
    missing[1, 3] = np.nan
    moved[1, 2] += 0.06                      # "lo" is on a 0.025 grid: a different strategy
    broken = {"at t = 0": _with(p, result, signal_probability=signals_at_zero),
              "at t = 6": _with(p, result, signal_probability=never_forced),
              "(sum 0.99": _with(p, result, token_distribution=short),
              "no threshold at t = 3": _with(p, result, thresholds=missing),
              "does not describe": _with(p, result, thresholds=moved)}
    for words, allocation in broken.items():
        finding = V.feasibility(p, allocation)
        assert finding.verdict == "fails" and words in finding.detail, (words, finding)


def test_feasibility_judges_the_mean_tokens_a_file_gives(solved):
    p, result = solved
    data = json.loads(result.to_json())["allocation"]
    assert fairalloc.validate(PAIR, data).finding("feasibility").holds
    data["lo"]["mean_tokens"] += 0.5
    checked = fairalloc.validate(PAIR, data)
    assert checked.status == "infeasible"
    assert checked.finding("feasibility").witness["type"] == "lo"


def test_solve_refuses_a_token_method_whose_strategy_signals_without_tokens(monkeypatch):
    """The guard in solve is on for token: a method standing by a broken allocation is a
    bug (SolverError), not a result."""
    def eager(problem):
        solution = S.mean_field(problem)
        p_y = np.array(solution.allocation.column("signal_probability"), dtype=float)
        p_y[:, 0] = 1.0
        thr, f = (np.array(solution.allocation.column(k), dtype=float)
                  for k in ("thresholds", "token_distribution"))
        solution.allocation = problem.allocation(thr, f, p_y)
        return solution

    token = fairalloc.registry.KINDS["token"]
    monkeypatch.setitem(token.methods, "mean-field", eager)
    with pytest.raises(fairalloc.SolverError, match="fails its own feasibility check"):
        fairalloc.solve(PAIR)


def test_equilibrium_fails_when_a_type_signals_too_eagerly(solved):
    p, result = solved
    p_y = np.array(result.allocation.column("signal_probability"), dtype=float)
    p_y[0, 1:-1] = 1.0                          # "hi" signals whatever its utility
    finding = V.equilibrium(p, _with(p, result, signal_probability=p_y))
    assert not finding.holds and finding.witness["gain"] > p.tolerance


def test_equilibrium_fails_when_the_claimed_boosts_differ(solved):
    p, result = solved
    claimed = np.array(result.metrics["boost_probability"]) * 0.5
    assert not V.equilibrium(p, result.allocation, {"boost_probability": claimed}).holds


def test_equilibrium_fails_on_thresholds_that_do_not_match_the_strategy(solved):
    p, result = solved
    thr = np.array(result.allocation.column("thresholds"), dtype=float)
    thr[1, 2] += 0.06                        # "lo" is on a 0.025 grid: a different strategy
    finding = V.equilibrium(p, _with(p, result, thresholds=thr))
    assert not finding.holds and finding.witness["tokens"] == 2


def test_stationarity_fails_on_a_moved_distribution(solved):
    p, result = solved
    f = np.array(result.allocation.column("token_distribution"), dtype=float)
    f[0] = np.roll(f[0], 1)
    assert not V.stationarity(p, _with(p, result, token_distribution=f)).holds
    f[0, 0] += 0.1
    assert "not a distribution" in V.stationarity(p, _with(p, result,
                                                           token_distribution=f)).detail


def test_monotone_thresholds_reports_a_rise(solved):
    p, result = solved
    thr = np.array(result.allocation.column("thresholds"), dtype=float)
    thr[0, 3] = thr[0, 2] + 0.01
    finding = V.monotone_thresholds(p, _with(p, result, thresholds=thr))
    assert not finding.holds and finding.witness == {"type": "hi", "tokens": 2,
                                                     "rise": pytest.approx(0.01)}


def test_non_convergence_is_labelled():
    result = fairalloc.solve({**PAIR, "max_iterations": 1, "tolerance": 1e-12})
    assert result.status == "iteration_limit"
    assert result.metrics["converged"] is False
    assert "did not converge" in result.solver["message"]


# ---------------------------------------------------------------- simulation


@pytest.fixture(scope="module")
def simulated(solved):
    p, result = solved
    thr = np.array(result.allocation.column("thresholds"), dtype=float)
    return p, thr, simulate(p, thr, rounds=400, seed=3)


def test_max_welfare_is_the_best_performance(simulated):
    _, _, report = simulated
    best = report["max-welfare"]["performance"]
    for row in report.values():
        assert row["performance"] <= best * (1 + 1e-6)
        assert row["relative_performance"] <= 1 + 1e-6


def test_definitions_of_the_fair_baselines(simulated):
    p, _, report = simulated
    m = report
    assert m["round-robin"]["share_uniformity"] == 1.0       # 400 x 10 / 100 rounds each
    assert m["equal-division"]["envy_free_index"] == pytest.approx(1.0)
    for name, row in m.items():
        used = sum(row["boost_share"][i] * f for i, f in zip(p.ids, p.fractions))
        if name == "mean-field":                 # a round with fewer signals leaves boosts idle
            assert used <= p.boosts / p.agents * (1 + 1e-9)
        else:
            assert used == pytest.approx(p.boosts / p.agents, rel=1e-6)


def test_simulation_is_seeded_and_independent_of_the_mechanism_subset(simulated):
    p, thr, report = simulated
    again = simulate(p, thr, mechanisms=("lottery", "mean-field"), rounds=400, seed=3)
    for name in ("lottery", "mean-field"):
        assert again[name] == report[name]
    other = simulate(p, thr, mechanisms=("lottery",), rounds=400, seed=4)
    assert other["lottery"] != report["lottery"]
    assert set(report) == set(MECHANISMS)


def test_mean_field_simulation_conserves_tokens_and_spends_n_over_m(simulated):
    p, _, report = simulated
    # every boost costs a token and every spent token is handed on: with tokens conserved,
    # each type's long-run boost share is near n/m (the chain's flow balance)
    for share in report["mean-field"]["boost_share"].values():
        assert share == pytest.approx(p.boosts / p.agents, rel=0.15)


def test_trace_is_replayed():
    data = {**PAIR, "types": [
        {"id": "phased", "fraction": 1.0, "utility": {"samples": [0.0, 0.0, 0.0, 1.0]},
         "trace": [0.0, 0.0, 0.0, 1.0]}]}
    p = fairalloc.load_spec(data).problem
    result = fairalloc.solve(data)
    report = simulate(p, np.array(result.allocation.column("thresholds"), dtype=float),
                      mechanisms=("max-welfare",), rounds=40, seed=1)
    # every agent sees 1.0 once every 4 rounds: 10 rounds worth 1 each, 100 agents, 10 boosts
    # a round; max-welfare can use a 1.0 whenever at least 10 agents have one (25 per round)
    assert report["max-welfare"]["performance"] == pytest.approx(40 * 10)
