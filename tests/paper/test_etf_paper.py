"""Reproduce the ETF paper's numbers (Liang et al., papers/001_928654303d0ba8e1.txt).

Section 4 (eq. 2-15, Algorithm 1, the illustrative example of 4.3, Lemma 2, Theorem 3) and
section 6 (the metrics F_T / F_E / F_S of 6.1, the phi sweep of 6.4, the 2:1 weights of 6.7).
Expected values are the paper's printed numbers or closed forms worked out by hand in this file,
never values read back from fairalloc's own formulas.

The example (4.3): T = 30, three backlogged apps of equal weight at 2, 3 and 8 W, phi = 0.7.
Step 1 guarantees 0.7 * 30 / 3 = 7 slices each (energy 14 / 21 / 56); step 2 hands the other 9
to the least-energy app one at a time: 14 / 9 / 7 slices, 28 / 27 / 56 energy.

phi_fair by hand (eq. 15 in whole words: the largest phi whose guarantees fit under the
energy-fair time): energy-fair time is proportional to w_i / P_i, so with 1/2 + 1/3 + 1/8 = 23/24
the example's energy-fair times are 30 * (12/23, 8/23, 3/23) = (15.65, 10.43, 3.91); the
time-fair share is 10, and C binds first: phi_fair = 90 / 230 = 9/23 = 0.3913.
ResNet vs MobileNet (240 W vs 60 W, T = 100): energy-fair 20 / 80, time-fair 50 / 50, so
phi_fair = 20 / 50 = 0.4. Weighted 2:1 (A1 200 W weight 2, A2 100 W weight 1, T = 60):
energy-fair 30 / 30 (t proportional to w/P = 0.01 each), time-fair 40 / 20, phi_fair = 30 / 40.
"""

from __future__ import annotations

import json
from pathlib import Path

import numpy as np
import pytest

import fairalloc
from fairalloc.api import sweep_values
from fairalloc.checks import etf as etf_checks
from fairalloc.errors import Violations
from fairalloc.models.etf import EtfProblem, energy_fair_time, guarantee
from fairalloc.solvers import etf as etf_solvers

SPECS = Path(__file__).resolve().parents[2] / "specs" / "etf"
EXAMPLE = str(SPECS / "example.json")
RESNET = str(SPECS / "resnet-mobilenet.json")
WEIGHTED = str(SPECS / "weighted.json")
BACKLOGGED = [EXAMPLE, RESNET, WEIGHTED]
ALL_SPECS = BACKLOGGED + [str(SPECS / "datacenter-mix.json")]
PHI_GRID = sweep_values(0, 1, 0.05)

# closed forms from the module docstring
PHI_FAIR = {EXAMPLE: 9 / 23, RESNET: 0.4, WEIGHTED: 0.75}


def stem(spec: str) -> str:
    return Path(spec).stem


def problem(spec: str | dict) -> EtfProblem:
    return fairalloc.load_spec(spec).problem


def raw(path: str) -> dict:
    with open(path) as fh:
        return json.load(fh)


def times(result) -> np.ndarray:
    return np.asarray(result.allocation.column("time"), dtype=float)


def energies(result) -> np.ndarray:
    return np.asarray(result.allocation.column("energy"), dtype=float)


def weighted_energy(p: EtfProblem, t) -> np.ndarray:
    """t_i P_i / w_i, computed here (not with fairalloc's helper)."""
    return np.asarray(t, dtype=float) * p.power / p.weights


def paper_eq2(weights, power, T) -> np.ndarray:
    """The paper's eq. 2 as printed: T_i^EF = (1 - w_i P_i / sum_k w_k P_k) T."""
    wp = np.asarray(weights, float) * np.asarray(power, float)
    return (1 - wp / wp.sum()) * T


@pytest.fixture(scope="module")
def sweeps() -> dict:
    """fairalloc.sweep on phi over 0, 0.05, ..., 1 for each backlogged spec (validated)."""
    return {spec: fairalloc.sweep(spec, "phi", PHI_GRID) for spec in BACKLOGGED}


# --- the illustrative example (section 4.3, Figure 3) ----------------------------------------

def test_example_guarantees_are_7_each():
    p = problem(EXAMPLE)
    assert guarantee(p).tolist() == [7, 7, 7]
    # step 1's energies, as printed: 14, 21, 56
    assert (7 * p.power).tolist() == [14, 21, 56]
    assert 30 - guarantee(p).sum() == 9            # (1 - phi) T slices left for step 2


@pytest.mark.parametrize("method", ["waterfill", "greedy", "leximin", "milp"])
def test_example_slices_14_9_7_energy_28_27_56(method):
    r = fairalloc.solve(EXAMPLE, method=method, validate=False)
    assert list(r.allocation) == ["A", "B", "C"]
    assert times(r).tolist() == [14, 9, 7]
    assert energies(r).tolist() == [28, 27, 56]
    assert r.objective == pytest.approx(27)         # the smallest weighted energy
    assert r.status == ("optimal" if method in ("leximin", "milp") else "heuristic")


def test_example_round_one_of_figure_3():
    """After round 1 A has 11 slices (22 J) next to B's 21 J and C's 56 J: on a quantum that
    holds only 4 slices beyond the guarantees, the greedy gives all 4 to A."""
    p = problem(EXAMPLE)
    # the same apps with the guarantees fixed at 7 (phi T_i^TF = 7 needs phi = 7 * 3 / 25)
    round1 = EtfProblem.from_spec({"quantum": 25, "phi": 21 / 25, "apps": [
        {"id": i, "power": float(pw)} for i, pw in zip(p.ids, p.power)]}, Violations())
    assert guarantee(round1).tolist() == [7, 7, 7]
    t = etf_solvers.greedy_slices(round1)
    assert t.tolist() == [11, 7, 7]
    assert (t * round1.power).tolist() == [22, 21, 56]


def test_example_metrics_section_6_1():
    """F_T = min/max time = 7/14, F_E = min/max energy = 27/56, F_S = min of both."""
    r = fairalloc.solve(EXAMPLE, validate=False)
    assert r.metrics["time_fairness"] == pytest.approx(7 / 14)
    assert r.metrics["energy_fairness"] == pytest.approx(27 / 56)
    assert r.metrics["system_fairness"] == pytest.approx(27 / 56)
    assert r.metrics["utilization"] == pytest.approx(1.0)
    assert r.metrics["phi_fair"] == pytest.approx(9 / 23, rel=1e-12)


def test_example_checks():
    """Theorem 1 (PE), Theorem 3 (max-min with the guarantee) hold; SP does not (Lemma 2)."""
    r = fairalloc.solve(EXAMPLE)
    verdict = {f.check: f.holds for f in r.validation}
    assert verdict == {"feasibility": True, "time_guarantee": True, "pareto_efficiency": True,
                       "max_min": True, "strategy_proofness": False}


# --- eq. 2 vs the energy-fair time ------------------------------------------------------------

def test_eq2_sums_to_n_minus_1_times_T_on_the_example():
    p = problem(EXAMPLE)
    eq2 = paper_eq2(p.weights, p.power, p.quantum)
    # (1 - 2/13) 30, (1 - 3/13) 30, (1 - 8/13) 30
    np.testing.assert_allclose(eq2, [330 / 13, 300 / 13, 150 / 13], rtol=1e-12)
    assert eq2.sum() == pytest.approx(60)           # (N - 1) T, not T
    # and it does not equalise energy: P_i T_i^EF = 50.8, 69.2, 92.3
    assert np.ptp(eq2 * p.power) > 40


@pytest.mark.parametrize("n", [2, 3, 4, 7])
def test_eq2_sums_to_n_minus_1_times_T(n):
    rng = np.random.default_rng(n)
    w, P, T = rng.uniform(0.5, 3, n), rng.uniform(1, 300, n), 100
    assert paper_eq2(w, P, T).sum() == pytest.approx((n - 1) * T)


def test_eq2_is_right_for_two_apps_of_equal_weight():
    """N = 2, equal weights: (1 - P_1/(P_1+P_2)) T = P_2/(P_1+P_2) T, which is proportional to
    1/P_1 as energy fairness needs: 240 W / 60 W over 100 slices -> 20 / 80."""
    p = problem(RESNET)
    eq2 = paper_eq2(p.weights, p.power, p.quantum)
    np.testing.assert_allclose(eq2, [20, 80], rtol=1e-12)
    np.testing.assert_allclose(energy_fair_time(p), [20, 80], rtol=1e-12)


def test_eq2_with_unequal_weights_equalises_the_wrong_thing():
    """Even for N = 2, eq. 2 with weights 2:1 (A1 200 W, A2 100 W, T = 60) gives 12 / 48,
    equalising E_i * w_i rather than E_i / w_i (eq. 3); energy-fair time is 30 / 30."""
    p = problem(WEIGHTED)
    eq2 = paper_eq2(p.weights, p.power, p.quantum)
    np.testing.assert_allclose(eq2, [12, 48], rtol=1e-12)
    assert eq2.sum() == pytest.approx(60)
    e = eq2 * p.power
    assert e[0] * 2 == pytest.approx(e[1] * 1)      # E w equal ...
    assert e[0] / 2 != pytest.approx(e[1] / 1)      # ... E / w not
    np.testing.assert_allclose(energy_fair_time(p), [30, 30], rtol=1e-12)


@pytest.mark.parametrize("spec", ALL_SPECS, ids=stem)
def test_energy_fair_time_equalises_weighted_energy_and_sums_to_T(spec):
    p = problem(spec)
    t = energy_fair_time(p)
    assert t.sum() == pytest.approx(p.quantum, rel=1e-12)
    assert np.all(t <= p.demand * (1 + 1e-12))
    uncapped = t < p.demand * (1 - 1e-12)
    e = weighted_energy(p, t)
    # every app below its demand sits at one common level; capped apps at or below it
    np.testing.assert_allclose(e[uncapped], e[uncapped].max(), rtol=1e-12)
    assert np.all(e[~uncapped] <= e[uncapped].max() * (1 + 1e-12))


def test_energy_fair_time_of_the_example_by_hand():
    np.testing.assert_allclose(energy_fair_time(problem(EXAMPLE)),
                               [360 / 23, 240 / 23, 90 / 23], rtol=1e-12)


@pytest.mark.parametrize("spec", BACKLOGGED, ids=stem)
def test_phi_fair_closed_form(spec):
    r = fairalloc.solve(spec, validate=False)
    assert r.metrics["phi_fair"] == pytest.approx(PHI_FAIR[spec], rel=1e-12)


# --- the phi sweep (section 6.4, Figure 7) ----------------------------------------------------

@pytest.mark.slow
@pytest.mark.parametrize("spec", BACKLOGGED, ids=stem)
def test_phi_sweep_moves_from_energy_fair_to_time_fair(sweeps, spec):
    points = sweeps[spec]
    assert [v for v, _ in points] == PHI_GRID and len(points) == 21
    f_t = [r.metrics["time_fairness"] for _, r in points]
    f_e = [r.metrics["energy_fairness"] for _, r in points]
    f_s = [r.metrics["system_fairness"] for _, r in points]
    # monotone on the grid (ties allowed)
    assert all(b >= a - 1e-12 for a, b in zip(f_t, f_t[1:])), f_t
    assert all(b <= a + 1e-12 for a, b in zip(f_e, f_e[1:])), f_e
    np.testing.assert_allclose(f_s, np.minimum(f_t, f_e), rtol=1e-12)
    # phi = 1 is time fair; phi = 0 is energy fair up to whole slices
    assert f_t[-1] == pytest.approx(1.0)
    assert f_e[0] >= 0.9
    assert f_e[0] > f_e[-1] and f_t[-1] > f_t[0]
    for _, r in points:
        verdict = {f.check: f.holds for f in r.validation}
        assert verdict["feasibility"] and verdict["time_guarantee"], r.validation
        assert verdict["pareto_efficiency"] and verdict["max_min"], r.validation


@pytest.mark.parametrize("spec", BACKLOGGED, ids=stem)
def test_phi_one_is_time_fair_shares(sweeps, spec):
    """phi = 1: every app gets exactly its time-fair share w_i / W * T (whole here)."""
    p = problem(spec)
    r = sweeps[spec][-1][1]
    np.testing.assert_array_equal(times(r), p.weights / p.weights.sum() * p.quantum)


@pytest.mark.parametrize("spec", BACKLOGGED, ids=stem)
def test_energy_fair_up_to_one_slice_below_phi_fair(sweeps, spec):
    """For phi <= phi_fair the guarantees fit under the energy-fair time, so the weighted
    energies differ by at most one slice's worth, max_i P_i / w_i."""
    p = problem(spec)
    one_slice = float((p.power / p.weights).max())
    below = [(v, r) for v, r in sweeps[spec] if v <= r.metrics["phi_fair"] + 1e-12]
    assert below and below[0][0] == 0
    for v, r in below:
        e = weighted_energy(p, times(r))
        assert np.ptp(e) <= one_slice * (1 + 1e-12), (v, e)
    # exactly at phi_fair too (off the grid)
    phi = PHI_FAIR[spec]
    r = fairalloc.solve(dict(raw(spec), phi=phi), validate=False)
    assert np.ptp(weighted_energy(p, times(r))) <= one_slice * (1 + 1e-12)


def test_resnet_mobilenet_perfectly_energy_fair_up_to_phi_fair(sweeps):
    """Figure 7: perfect energy fairness for small phi (here exactly, since 20/80 is whole):
    the 240 W app gets 20 slices, the 60 W app 80, both 4800 J, up to phi_fair = 0.4."""
    for v, r in sweeps[RESNET]:
        if v <= 0.4:
            assert times(r).tolist() == [20, 80]
            assert energies(r).tolist() == [4800, 4800]
            assert r.metrics["energy_fairness"] == 1.0
        else:
            assert r.metrics["energy_fairness"] < 1.0
            # above phi_fair the guarantee binds: the 240 W app gets exactly floor(50 phi)
            assert times(r)[0] == np.floor(50 * v + 1e-9)


# --- weights 2:1 (section 6.7, Figure 11) -------------------------------------------------

def test_weighted_twice_the_energy_at_or_below_phi_fair(sweeps):
    p = problem(WEIGHTED)
    for v, r in sweeps[WEIGHTED]:
        if v <= PHI_FAIR[WEIGHTED]:
            e1, e2 = energies(r)
            # E_1 / 2 and E_2 / 1 within one slice's worth of weighted energy (100)
            assert abs(e1 / 2 - e2) <= (p.power / p.weights).max(), (v, e1, e2)
            assert e1 == pytest.approx(2 * e2)     # here exactly: 30 / 30 slices
    r = fairalloc.solve(WEIGHTED, validate=False)              # the spec's phi = 0.6
    assert times(r).tolist() == [30, 30]
    assert energies(r).tolist() == [6000, 3000]


def test_weighted_twice_the_time_at_phi_one(sweeps):
    v, r = sweeps[WEIGHTED][-1]
    assert v == 1
    assert times(r).tolist() == [40, 20]
    assert r.metrics["time_fairness"] == pytest.approx(1.0)    # weight-normalised
    assert r.metrics["energy_fairness"] == pytest.approx(0.5)  # 8000/2 vs 2000/1


# --- Lemma 2 and Theorem 3 ----------------------------------------------------------------

def test_lemma2_probe_finds_a_gain_on_the_example():
    r = fairalloc.solve(EXAMPLE)
    sp = r.finding("strategy_proofness")
    assert sp.holds is False
    w = sp.witness
    assert w["app"] in ("A", "B", "C") and w["gain"] > 0
    assert w["misreport"].startswith("power")
    before_t, after_t = w["time"]
    before_e, after_e = w["energy"]
    assert after_t == before_t                       # keeps its time ...
    assert after_e > before_e                        # ... and its energy rises
    i = r.allocation.ids.index(w["app"])
    assert before_t == times(r)[i] and before_e == energies(r)[i]
    # it reported more power than it has
    reported = float(w["misreport"].split("->")[1].split()[0])
    assert reported > problem(EXAMPLE).power[i]


@pytest.mark.parametrize("method", ["waterfill", "greedy", "leximin", "milp"])
def test_lemma2_c_at_10_watts_keeps_7_slices_energy_56_to_70(method):
    """The paper's numbers: C raises its power from 8 to 10 W; it keeps its 7 slices and its
    energy goes from 56 to 70."""
    p = problem(EXAMPLE)
    run = {"waterfill": etf_solvers.waterfill, "greedy": etf_solvers.greedy,
           "leximin": etf_solvers.leximin, "milp": etf_solvers.leximin_milp}[method]
    honest = run(p).allocation
    liar = p.with_report(2, power=10)
    lied = run(liar).allocation
    assert honest["C"] == {"time": 7, "energy": 56}
    assert lied["C"] == {"time": 7, "energy": 70}
    assert p.power[2] == 8                           # with_report leaves the original alone


def test_lemma2_low_power_app_can_raise_its_power_for_free():
    """Lemma 2's second case: an app so frugal that it gets every step-2 slice may raise its
    power up to the next app's energy without losing time: 1 W vs 100 W, T = 30, phi = 0.7."""
    spec = {"problem": "etf", "quantum": 30, "phi": 0.7,
            "apps": [{"id": "A", "power": 1}, {"id": "B", "power": 100},
                     {"id": "C", "power": 100}]}
    p = problem(spec)
    assert etf_solvers.waterfill_slices(p).tolist() == [16, 7, 7]
    liar = p.with_report(0, power=2)
    assert etf_solvers.waterfill_slices(liar).tolist() == [16, 7, 7]   # energy 16 -> 32
    r = fairalloc.solve(spec)
    assert r.finding("strategy_proofness").holds is False


@pytest.mark.parametrize("spec", ALL_SPECS, ids=stem)
def test_theorem3_greedy_reaches_the_exact_max_min(spec):
    p = problem(spec)
    t = etf_solvers.greedy_slices(p)
    best = etf_checks.max_min_slices(p)[0]
    assert best is not None
    assert weighted_energy(p, t).min() == pytest.approx(best, rel=1e-9)
    assert np.all(t >= guarantee(p))                 # while keeping the minimum time guarantee
