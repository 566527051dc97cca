"""Property tests on random small instances (2-6 users, 2-4 resources) for drf and emrf.

Specs are built as dicts and go through the public API (``fairalloc.solve`` / ``load_spec``).
Random instances draw demand/split vectors from a small pool so that users often share a
direction (the class-based code paths matter), with optional weights and task caps.

Some instances have a resource nobody uses: the Pyomo models used to crash on those (see
the regression tests at the end of this file).
"""

from __future__ import annotations

import math
from pathlib import Path

import numpy as np
import pytest
from hypothesis import HealthCheck, assume, event, given, settings
from hypothesis import strategies as st

import fairalloc
from fairalloc.allocation import Allocation
from fairalloc.checks import emrf as emrf_checks
from fairalloc.checks import leontief
from fairalloc.models.emrf import delta_bound, drf_ceiling, knob_for_delta

PASSING = ("holds", "unrefuted")    # a probe that found nothing is not a failure

ROOT = Path(__file__).resolve().parents[2]


def fast(examples: int) -> settings:
    """Hypothesis settings: ``examples`` random instances, no per-example deadline."""
    return settings(max_examples=examples, deadline=None,
                    suppress_health_check=[HealthCheck.too_slow])


# --- random instances ---------------------------------------------------------------------------

@st.composite
def vectors(draw, size: int, low: int = 0, high: int = 8) -> list[int]:
    """A non-negative integer vector with at least one positive entry."""
    vec = draw(st.lists(st.integers(low, high), min_size=size, max_size=size))
    if not any(vec):
        vec[draw(st.integers(0, size - 1))] = draw(st.integers(1, high))
    return vec


@st.composite
def pooled_rows(draw, n: int, size: int, low: int = 0) -> np.ndarray:
    """n rows drawn from a pool of at most n vectors (repeats are likely); usually every column
    is positive in some row, sometimes a resource is left that nobody uses."""
    pool = draw(st.lists(vectors(size, low), min_size=1, max_size=n))
    rows = np.array([pool[draw(st.integers(0, len(pool) - 1))] for _ in range(n)], dtype=float)
    if draw(st.integers(0, 3)):
        first = (rows == rows[0]).all(axis=1)              # users sharing user 0's vector
        for d in np.flatnonzero(rows.sum(axis=0) == 0):    # put every resource in use
            rows[first, d] = 1.0
    return rows


@st.composite
def drf_specs(draw, saturation: str | None = None, caps: bool = True,
              divisible: bool = True) -> dict:
    """A drf spec: pooled demand vectors (scaled per user), optional weights and max_tasks."""
    n, D = draw(st.integers(2, 6)), draw(st.integers(2, 4))
    resources = [f"r{d}" for d in range(D)]
    rows = draw(pooled_rows(n, D)) / 2
    users = []
    for i in range(n):
        scale = draw(st.sampled_from([1.0, 1.0, 2.0, 0.5, 3.0]))
        user = {"id": f"u{i}", "demand": {r: float(rows[i, d] * scale)
                                          for d, r in enumerate(resources) if rows[i, d] > 0}}
        if draw(st.booleans()):
            user["weight"] = draw(st.sampled_from([0.5, 1.0, 1.5, 2.0, 3.0]))
        if caps and draw(st.integers(0, 2)) == 0:
            user["max_tasks"] = draw(st.integers(0, 30))
        users.append(user)
    return {
        "problem": "drf",
        "capacity": {r: float(draw(st.integers(2, 200))) for r in resources},
        "users": users,
        "saturation": saturation or draw(st.sampled_from(["continue", "stop"])),
        "divisible": divisible,
    }


@st.composite
def emrf_specs(draw, all_positive: bool = False, knob: float | None = None) -> dict:
    """An emrf spec: pooled splits (normalised to sum 1), optional weights, a knob in [0, 1]."""
    n, D = draw(st.integers(2, 6)), draw(st.integers(2, 4))
    devices = [f"d{d}" for d in range(D)]
    rows = draw(pooled_rows(n, D, low=1 if all_positive else 0))
    rows = rows / rows.sum(axis=1, keepdims=True)
    users = []
    for i in range(n):
        user = {"id": f"u{i}", "split": {dev: float(rows[i, d]) for d, dev in enumerate(devices)
                                         if rows[i, d] > 0}}
        if draw(st.booleans()):
            user["weight"] = draw(st.sampled_from([0.5, 1.0, 2.0, 3.0, 4.0]))
        users.append(user)
    if knob is None:
        knob = draw(st.one_of(st.sampled_from([0.0, 1.0]), st.floats(0.0, 1.0)))
    return {
        "problem": "emrf",
        "capacity": {dev: float(draw(st.integers(10, 1000))) for dev in devices},
        "users": users,
        "knob": knob,
    }


def as_drf_stop(emrf: dict) -> dict:
    """The same data as a drf spec (demand per GFLOP = split) with eq. 7-8's stopping rule."""
    return {
        "problem": "drf",
        "capacity": emrf["capacity"],
        "saturation": "stop",
        "users": [{"id": u["id"], "weight": u.get("weight", 1.0), "demand": u["split"]}
                  for u in emrf["users"]],
    }


def tasks(result) -> np.ndarray:
    return np.asarray(result.allocation.column("tasks"), dtype=float)


def totals(result) -> np.ndarray:
    return np.asarray(result.allocation.column("total"), dtype=float)


# --- drf ----------------------------------------------------------------------------------------

@pytest.mark.slow
@fast(150)
@given(drf_specs())
def test_drf_lp_equals_progressive_filling(spec):
    """The leximin LP and numpy progressive filling give the same tasks (continue and stop)."""
    lp = tasks(fairalloc.solve(spec, method="lp", validate=False))
    pf = tasks(fairalloc.solve(spec, method="progressive-filling", validate=False))
    np.testing.assert_allclose(lp, pf, rtol=1e-6, atol=1e-6 * max(1.0, pf.max()))


@pytest.mark.slow
@fast(60)
@given(drf_specs())
def test_drf_lp_formulations_agree(spec):
    """The warm-started sparse rounds and the readable Pyomo model give the same tasks."""
    matrix = tasks(fairalloc.solve(spec, method="lp", validate=False))
    spec = {**spec, "options": {**spec.get("options", {}), "formulation": "pyomo"}}
    pyomo = tasks(fairalloc.solve(spec, method="lp", validate=False))
    np.testing.assert_allclose(matrix, pyomo, rtol=1e-6, atol=1e-6 * max(1.0, pyomo.max()))


@st.composite
def capped_drf_specs(draw) -> dict:
    """A drf spec with 20-60 users, most of them capped at levels spread around the water
    level, so that the level passes many caps at once and in cascades."""
    spec = draw(drf_specs(caps=False))
    D = len(spec["capacity"])
    n = draw(st.integers(20, 60))
    rows = draw(pooled_rows(n, D)) / 2
    users = []
    for i in range(n):
        user = {"id": f"u{i}", "demand": {f"r{d}": float(rows[i, d] * (1 + i % 3))
                                          for d in range(D) if rows[i, d] > 0},
                "weight": draw(st.sampled_from([0.5, 1.0, 2.0, 3.0]))}
        if draw(st.integers(0, 3)):
            user["max_tasks"] = draw(st.floats(0.0, 3.0))
        users.append(user)
    return {**spec, "users": users}


@pytest.mark.slow
@fast(40)
@given(capped_drf_specs())
def test_drf_lp_many_caps_equals_progressive_filling(spec):
    """Many max_tasks below the water level: the caps the LP's level passes freeze together,
    and the result is still progressive filling's, in both saturation modes."""
    lp = tasks(fairalloc.solve(spec, method="lp", validate=False))
    pf = tasks(fairalloc.solve(spec, method="progressive-filling", validate=False))
    np.testing.assert_allclose(lp, pf, rtol=1e-6, atol=1e-6 * max(1.0, pf.max()))


def one_cpu(caps: list[float | None]) -> dict:
    """Users needing 1 cpu per task out of 10, with these max_tasks (None: uncapped)."""
    users = [{"id": f"u{i}", "demand": {"cpu": 1.0}, **({} if c is None else {"max_tasks": c})}
             for i, c in enumerate(caps)]
    return {"problem": "drf", "capacity": {"cpu": 10.0}, "users": users}


@pytest.mark.parametrize("formulation", ["matrix", "pyomo"])
def test_drf_lp_caps_pass_in_a_cascade(formulation):
    """Four users on 10 cpus: at the level of 2.5 tasks each, u1's cap of 1 is passed; with u1
    at 1 the others reach 3, which passes u2's cap of 3; u0 and u3 then share the rest (3
    each, below u3's cap of 3.5). The matrix model takes two solves that pass caps and one
    round; the literal model's caps are rows, so it needs a round per cap."""
    spec = {**one_cpu([None, 1.0, 3.0, 3.5]), "options": {"formulation": formulation}}
    result = fairalloc.solve(spec, method="lp")
    np.testing.assert_allclose(tasks(result), [3.0, 1.0, 3.0, 3.0], rtol=1e-9)
    assert not [f for f in result.validation if f.verdict not in PASSING]
    if formulation == "matrix":
        assert (result.solver["extra"]["cap_rounds"], result.solver["extra"]["rounds"]) == (2, 1)


def test_drf_lp_passes_every_cap_below_the_level_at_once():
    """Ten users capped at 0.1 tasks (and one at 0) under a level of 10/12 tasks: one solve
    freezes all eleven, a second gives the uncapped user the remaining 9 cpus."""
    result = fairalloc.solve(one_cpu([None] + [0.1] * 10 + [0.0]), method="lp", validate=False)
    np.testing.assert_allclose(tasks(result), [9.0] + [0.1] * 10 + [0.0], rtol=1e-9)
    assert (result.solver["extra"]["cap_rounds"], result.solver["extra"]["rounds"]) == (1, 1)


@pytest.mark.slow
@fast(200)
@given(drf_specs(saturation="continue"))
def test_drf_continue_is_si_ef_pe(spec):
    """Ghodsi's DRF (divisible, continue) is feasible, SI, EF and PE on every instance."""
    problem = fairalloc.load_spec(spec).problem
    allocation = fairalloc.solve(spec, validate=False).allocation
    for check in (leontief.feasibility, leontief.sharing_incentive, leontief.envy_freeness,
                  leontief.pareto_efficiency):
        found = check(problem, allocation)
        assert found.holds, (check.__name__, found.detail, found.witness)


# --- emrf ---------------------------------------------------------------------------------------

@pytest.mark.slow
@fast(100)
@given(emrf_specs(all_positive=True, knob=1.0))
def test_emrf_knob_one_is_drf_stop(spec):
    """With every user on every device, EMRF at knob 1 is DRF stopped at the first saturation."""
    emrf = totals(fairalloc.solve(spec, validate=False))
    drf = tasks(fairalloc.solve(as_drf_stop(spec), validate=False))
    np.testing.assert_allclose(emrf, drf, rtol=1e-6, atol=1e-9 * drf.max())


@pytest.mark.slow
@fast(150)
@given(emrf_specs())
def test_emrf_total_at_least_drf_stop(spec):
    """The efficiency LP never loses GFLOPS: EMRF's total >= DRF-stop's total."""
    emrf = totals(fairalloc.solve(spec, validate=False)).sum()
    drf = tasks(fairalloc.solve(as_drf_stop(spec), validate=False)).sum()
    assert emrf >= drf * (1 - 1e-9)


@pytest.mark.slow
@fast(150)
@given(emrf_specs())
def test_delta_observed_within_theorem1_bound(spec):
    """max_i F_i/S_i - min_j F_j/S_j never exceeds Theorem 1's bound at the knob."""
    r = fairalloc.solve(spec, validate=False)
    observed, bound = r.metrics["delta_observed"], r.metrics["delta_bound"]
    assert observed <= bound + 1e-7 * max(1.0, bound)


@pytest.mark.slow
@fast(100)
@given(emrf_specs())
def test_emrf_literal_equals_classes(spec):
    """The per-user Pyomo LP and the per-class highspy LP reach the same allocation."""
    def run(formulation):
        return totals(fairalloc.solve({**spec, "options": {"formulation": formulation}},
                                      validate=False))
    literal, classes = run("literal"), run("classes")
    assert literal.sum() == pytest.approx(classes.sum(), rel=1e-6)
    np.testing.assert_allclose(literal, classes, rtol=1e-6, atol=1e-6 * classes.max())


def bisect_knob(m, delta: float, steps: int = 60) -> float:
    """Smallest eta in [0, 1] with delta_bound(eta) <= delta by bisection (2.0 when none);
    delta_bound is non-increasing in eta."""
    if delta_bound(m, 0.0) <= delta:
        return 0.0
    if delta_bound(m, 1.0) > delta:
        return 2.0
    lo, hi = 0.0, 1.0
    for _ in range(steps):
        mid = (lo + hi) / 2
        lo, hi = (lo, mid) if delta_bound(m, mid) <= delta else (mid, hi)
    return hi


@pytest.mark.slow
@fast(300)
@given(emrf_specs(knob=0.5), st.floats(0.0, 1.3), st.sampled_from(["scaled", "raw", "zero"]))
def test_knob_for_delta_matches_bisection(spec, u, how):
    """knob_for_delta's closed form equals a bisection on delta_bound."""
    m = fairalloc.load_spec(spec).problem.market
    delta = {"scaled": u * delta_bound(m, 0.0), "raw": 3 * u, "zero": 0.0}[how]
    closed = knob_for_delta(m, delta)
    expected = bisect_knob(m, delta)
    if expected > 1:
        assert closed > 1
    else:
        assert closed == pytest.approx(expected, abs=1e-9)


@pytest.mark.slow
@fast(300)
@given(emrf_specs())
def test_drf_ceiling_equals_stop_filling(spec):
    """Eq. 8's closed form F_i^max equals drf progressive filling in stop mode on the same data."""
    m = fairalloc.load_spec(spec).problem.market
    filled = tasks(fairalloc.solve(as_drf_stop(spec), validate=False))
    np.testing.assert_allclose(drf_ceiling(m), filled, rtol=1e-9)


# --- the checks can fail -------------------------------------------------------------------

CLASSIC = {"problem": "drf", "capacity": {"cpu": 9, "mem": 18}, "users": [
    {"id": "A", "demand": {"cpu": 1, "mem": 4}}, {"id": "B", "demand": {"cpu": 3, "mem": 1}}]}


def slice_worth(m) -> np.ndarray:
    """Independent SI baseline: min(cap_i, min_d (w_i/W) C_d / a_id)."""
    share = m.weights / m.weights.sum()
    out = np.empty(m.n)
    for i in range(m.n):
        need = m.demand[i] > 0
        out[i] = min(m.caps[i], (share[i] * m.capacity[need] / m.demand[i, need]).min())
    return out


@fast(100)
@given(drf_specs(saturation="continue"))
def test_sharing_incentive_fails_for_starved_user(spec):
    """Take DRF's allocation and give the user with the largest slice nothing: SI fails, naming
    that user with its slice's worth."""
    problem = fairalloc.load_spec(spec).problem
    m = problem.market
    worth = slice_worth(m)
    k = int(np.argmax(worth))
    assume(worth[k] > 1e-3)
    x = tasks(fairalloc.solve(spec, validate=False))
    x[k] = 0.0
    found = leontief.sharing_incentive(problem, problem.allocation(x))
    assert not found.holds
    assert found.witness["user"] == m.ids[k]
    assert found.witness["slice_worth"] == pytest.approx(worth[k])
    assert found.witness["gets"] == 0


@fast(100)
@given(drf_specs(saturation="continue"), st.floats(0.2, 0.9))
def test_pareto_fails_with_idle_capacity(spec, factor):
    """Shrink DRF's allocation: capacity sits idle, PE fails, and the named user can really grow
    by the amount reported (checked by hand from the free capacity)."""
    problem = fairalloc.load_spec(spec).problem
    m = problem.market
    x = tasks(fairalloc.solve(spec, validate=False)) * factor
    assume(x.max() > 1e-3)
    found = leontief.pareto_efficiency(problem, problem.allocation(x))
    assert not found.holds
    i = m.ids.index(found.witness["user"])
    free = m.capacity - x @ m.demand
    need = m.demand[i] > 0
    can_add = min(m.caps[i] - x[i], (free[need] / m.demand[i, need]).min())
    assert can_add > 0
    assert found.witness["can_add"] == pytest.approx(can_add)


def test_envy_freeness_fails_when_bundles_swap():
    """Classic example with A and B holding each other's DRF bundle: A (running 0.5 tasks on
    <6 cpu, 2 mem>) envies B, whose <3 cpu, 12 mem> would run 3 of A's tasks."""
    problem = fairalloc.load_spec(CLASSIC).problem
    bundles = np.array([[6.0, 2.0], [3.0, 12.0]])           # swapped
    x = np.array([min(6 / 1, 2 / 4), min(3 / 3, 12 / 1)])   # what each can run on what it holds
    alloc = Allocation(["A", "B"], {("tasks",): x, ("resources", "cpu"): bundles[:, 0],
                                    ("resources", "mem"): bundles[:, 1]})
    found = leontief.envy_freeness(problem, alloc)
    assert not found.holds
    assert (found.witness["envious"], found.witness["of"]) == ("A", "B")
    assert found.witness["would_have"] == pytest.approx(3.0)
    assert {p["envious"] for p in found.witness["pairs"]} == {"A", "B"}  # B would run 2 on A's
    assert leontief.feasibility(problem, alloc).holds


def test_feasibility_fails_over_capacity():
    """4 tasks for A and 2 for B need 10 of the 9 CPUs."""
    problem = fairalloc.load_spec(CLASSIC).problem
    found = leontief.feasibility(problem, problem.allocation(np.array([4.0, 2.0])))
    assert not found.holds
    assert found.witness[0]["resource"] == "cpu"
    assert found.witness[0]["used"] == pytest.approx(10)


def test_delta_fairness_fails_beyond_bound():
    """At knob 1 the bound is 0: an allocation with unequal F_i/S_i breaks delta-fairness."""
    spec = {"problem": "emrf", "capacity": {"cpu": 100, "gpu": 800}, "knob": 1, "users": [
        {"id": "a", "split": {"cpu": 0.1, "gpu": 0.9}},
        {"id": "b", "split": {"cpu": 0.4, "gpu": 0.6}}]}
    problem = fairalloc.load_spec(spec).problem
    x = drf_ceiling(problem.market) * np.array([1.0, 0.5])
    found = emrf_checks.delta_fairness(problem, problem.allocation(x))
    assert not found.holds
    assert (found.witness["most"], found.witness["least"]) == ("a", "b")


# --- envy-freeness: the class-based check against the definition ----------------------------

def brute_force_envy(m, x: np.ndarray, bundles: np.ndarray) -> dict[str, tuple[float, set]]:
    """From the definition, O(n^2): i envies j iff min(cap_i, min_d (w_i/w_j) B_jd / a_id)
    (floored for whole tasks) exceeds x_i beyond rel tol 1e-7. Returns, per envious user, its
    best worth and the users whose bundle gives it."""
    out = {}
    for i in range(m.n):
        need = m.demand[i] > 0
        worth = {}
        for j in range(m.n):
            if j == i:
                continue
            value = min(m.caps[i], float((m.weights[i] / m.weights[j] * bundles[j, need]
                                          / m.demand[i, need]).min()))
            worth[j] = math.floor(value + 1e-9) if m.integral else value
        best = max(worth.values())
        if best > x[i] + 1e-7 * max(1.0, abs(x[i])):
            out[m.ids[i]] = (best, {m.ids[j] for j, v in worth.items() if v >= best * (1 - 1e-9)})
    return out


@st.composite
def random_allocations(draw):
    """A drf problem (whole or divisible tasks) and random units and bundles within capacity;
    bundles sometimes hold more than the units need, so bundle directions differ from demand."""
    divisible = draw(st.booleans())
    spec = draw(drf_specs(divisible=divisible))
    problem = fairalloc.load_spec(spec).problem
    m = problem.market
    x = np.array(draw(st.lists(st.floats(0, 20), min_size=m.n, max_size=m.n)))
    bundles = x[:, None] * m.demand
    if draw(st.booleans()):
        waste = draw(st.lists(st.sampled_from([0.0, 0.0, 0.5, 1.0, 3.0]),
                              min_size=m.n * len(m.resources), max_size=m.n * len(m.resources)))
        bundles = bundles + np.reshape(waste, bundles.shape)
    fit = min(1.0, float((m.capacity / np.maximum(bundles.sum(axis=0), 1e-12)).min()))
    x, bundles = x * fit, bundles * fit
    if not divisible:
        x = np.floor(x)                                    # bundles still cover the tasks
    columns = {("tasks",): x}
    for d, r in enumerate(m.resources):
        columns[("resources", r)] = bundles[:, d]
    return problem, Allocation(list(m.ids), columns), x, bundles


@pytest.mark.slow
@fast(300)
@given(random_allocations())
def test_envy_freeness_matches_brute_force(case):
    """envy_freeness (classes of demand and bundle directions) finds exactly the envious users a
    pairwise check finds, with the same best worth and a rival that gives it."""
    problem, allocation, x, bundles = case
    m = problem.market
    expected = brute_force_envy(m, x, bundles)
    event(f"{'whole' if m.integral else 'divisible'} tasks, {'some' if expected else 'no'} envy, "
          f"{'shared' if m.classes().count < m.n else 'distinct'} demand directions")
    found = leontief.envy_freeness(problem, allocation)
    assert found.holds == (not expected), (found.detail, expected)
    if expected:
        pairs = {p["envious"]: p for p in found.witness["pairs"]}
        assert set(pairs) == set(expected)
        for uid, (best, rivals) in expected.items():
            assert pairs[uid]["would_have"] == pytest.approx(best, rel=1e-9)
            assert pairs[uid]["of"] in rivals
        gain = {uid: best - x[m.ids.index(uid)] for uid, (best, _) in expected.items()}
        assert found.witness["by"] == pytest.approx(max(gain.values()), rel=1e-9)


# --- a resource nobody uses; numpy numbers in dict specs -------------------------------------

UNUSED_DRF = {"problem": "drf", "capacity": {"cpu": 10, "mem": 7},
              "users": [{"id": "a", "demand": {"cpu": 1}}, {"id": "b", "demand": {"cpu": 2}}]}
UNUSED_EMRF = {"problem": "emrf", "capacity": {"cpu": 100, "gpu": 800, "npu": 50}, "knob": 0.5,
               "users": [{"id": "a", "split": {"cpu": 0.1, "gpu": 0.9}},
                         {"id": "b", "split": {"cpu": 0.4, "gpu": 0.6}}]}
WITHOUT_NPU = {**UNUSED_EMRF, "capacity": {"cpu": 100, "gpu": 800}}


@pytest.mark.parametrize("method", ["progressive-filling", "lp"])
def test_drf_with_unused_resource(method):
    """'mem' nobody demands: a gets 5 tasks and b 2.5 (equal CPU shares), mem stays idle.
    Regression: the lp's Pyomo capacity row for 'mem' was the constant ``0 <= 7`` and crashed
    with InvalidConstraintError."""
    r = fairalloc.solve(UNUSED_DRF, method=method)
    np.testing.assert_allclose(tasks(r), [5, 2.5])
    assert r.metrics["utilization.mem"] == 0
    assert not [f for f in r.validation if f.verdict not in PASSING]


@pytest.mark.parametrize("formulation", ["auto", "literal", "classes"])
def test_emrf_with_unused_device(formulation):
    """An 'npu' nobody uses changes nothing. Regression: the literal (and, up to 100 users,
    default) Pyomo LP crashed with InvalidConstraintError on the npu's empty capacity row."""
    got = fairalloc.solve({**UNUSED_EMRF, "options": {"formulation": formulation}},
                          validate=False)
    np.testing.assert_allclose(totals(got), totals(fairalloc.solve(WITHOUT_NPU, validate=False)))
    assert got.metrics["utilization.npu"] == 0


def test_numpy_numbers_in_dict_spec():
    """Python callers often build specs from numpy arrays: np.float64(1) must count as a number."""
    spec = {**CLASSIC, "users": [{"id": "A", "demand": {"cpu": np.float64(1), "mem": 4}},
                                 {"id": "B", "demand": {"cpu": 3, "mem": np.float64(1)}}]}
    np.testing.assert_allclose(tasks(fairalloc.solve(spec, validate=False)), [3, 2])


@pytest.mark.parametrize("seed", [3, 4])
def test_drf_sparse_demands_at_scale(seed):
    """Users that leave resources out of their demand, a few hundred of them, with caps.
    Regression: after the first saturation, rounding put the saturated resource a hair above
    its capacity, progressive filling then froze the other users too early (not PE, and not
    equal to the exact LP)."""
    rng = np.random.default_rng(seed)
    names = ["cpu", "mem", "disk", "net"]
    users = []
    for i in range(200):
        demand = {r: float(rng.integers(1, 9)) for r in names if rng.random() < 0.6}
        user = {"id": f"u{i}", "demand": demand or {"cpu": 1.0},
                "weight": float(rng.integers(1, 4))}
        if rng.random() < 0.1:
            user["max_tasks"] = float(rng.integers(1, 20))
        users.append(user)
    spec = {"problem": "drf", "capacity": {r: 1e4 for r in names}, "users": users}
    filled = fairalloc.solve(spec)
    assert not [f for f in filled.validation if f.verdict not in PASSING]
    exact = fairalloc.solve(spec, method="lp", validate=False)
    np.testing.assert_allclose(tasks(filled), tasks(exact), rtol=1e-6, atol=1e-9)


@pytest.mark.slow
@pytest.mark.parametrize("seed, largest", [(5, 60), (7, 700)])
def test_envy_by_dominance_matches_brute_force(seed, largest):
    """The orthant-dominance path of envy_freeness (used when demand x bundle classes are
    many) finds exactly the envious users of the O(n^2) definition: divisible and whole tasks,
    caps, unequal weights, bundles holding more than the tasks need, zero demands. Instances up
    to ``largest`` users so that the divide-and-conquer recursion runs, not only brute force."""
    from fairalloc.checks.leontief import _envious_by_dominance, _envy_worth, exceeds
    from fairalloc.models.leontief import Leontief

    rng = np.random.default_rng(seed)
    for _ in range(60):
        n, D = int(rng.integers(2, largest)), int(rng.integers(1, 5))
        pool = rng.integers(0, 4, (5, D)).astype(float)
        demand = (pool[rng.integers(0, 5, n)] if rng.random() < 0.5
                  else rng.integers(0, 4, (n, D)).astype(float))
        demand[demand.sum(axis=1) == 0, 0] = 1.0
        caps = np.where(rng.random(n) < 0.2, rng.integers(1, 5, n).astype(float), np.inf)
        m = Leontief(tuple(f"u{i}" for i in range(n)), tuple(f"r{d}" for d in range(D)),
                     np.full(D, 20.0), demand, rng.choice([1.0, 2.0, 0.5, 3.0], n), caps,
                     integral=bool(rng.random() < 0.3))
        x = rng.uniform(0, 3, n)
        x = np.minimum(np.floor(x) if m.integral else x, caps)
        if rng.random() < 0.2:                 # a file's allocation may be infeasible
            x[rng.random(n) < 0.2] *= -1
        extra = 1 + (rng.random((n, 1)) < 0.2) * rng.uniform(0, 0.5, (n, D))
        bundles = x[:, None] * demand * (extra if rng.random() < 0.7 else 1.0)
        brute = np.array([exceeds(_envy_worth(m, bundles, i).max(), x[i]) for i in range(n)])
        np.testing.assert_array_equal(_envious_by_dominance(m, x, bundles)[0], brute)


@pytest.mark.parametrize("spec_file", ["specs/emrf/example1-knob0.5.json",
                                       "specs/emrf/example2-knob0.1.json",
                                       "specs/drf/whole-tasks.json", "specs/drf/classic.json"])
def test_envy_verdict_same_on_both_paths(spec_file, monkeypatch):
    """Forcing the dominance path (as for many classes) gives the class path's verdict and an
    envious/envied pair that really is one."""
    from fairalloc.checks import leontief

    spec = fairalloc.load_spec(ROOT / spec_file)
    result = fairalloc.solve(spec, validate=False)
    by_class = leontief.envy_freeness(spec.problem, result.allocation)
    monkeypatch.setattr(leontief, "SWEEP_ABOVE_CLASSES", 0)
    by_dominance = leontief.envy_freeness(spec.problem, result.allocation)
    assert by_dominance.holds == by_class.holds
    assert "orthant-dominance" in by_dominance.detail
    if not by_class.holds:
        w = by_dominance.witness
        assert w["would_have"] > w["has"]
        assert w["by"] <= by_class.witness["by"] + 1e-9   # the class path names the worst


def test_whole_task_ties_go_to_the_user_listed_first():
    """A's share per task is 0.1 / 0.6 = 0.16666666666666669 and B's 0.3 / 0.6 / 3 =
    0.16666666666666666: a tie the user wrote, an ulp apart in floats. With one task each,
    A (listed first) gets the next one, and then B's does not fit (stop mode): 3 tasks in
    all, where the float keys gave B the next task, which did not fit: 2."""
    spec = {"problem": "drf", "capacity": {"cpu": 0.6}, "divisible": False,
            "saturation": "stop",
            "users": [{"id": "A", "demand": {"cpu": 0.1}},
                      {"id": "B", "weight": 3, "demand": {"cpu": 0.3}}]}
    assert list(fairalloc.solve(spec).allocation.column("tasks")) == [2, 1]


def test_probe_on_a_large_spec_makes_the_shared_budget_of_resolves():
    """drf's probe is sized by the rule every kind's probe shares (``probe_budget``): at 3,000
    users one re-solve (2,000 // 3,000, at least one), not 24, and the detail says the first
    user type of how many users was probed, with how many misreports."""
    from fairalloc.checks import probe_budget
    from fairalloc.registry import KINDS

    kind = KINDS["drf"]
    spec = fairalloc.load_spec(kind.random_spec(3, users=3000))
    calls = []

    def mechanism(problem):
        calls.append(problem)
        return kind.methods[kind.default](problem)

    allocation = mechanism(spec.problem).allocation
    calls.clear()
    finding = leontief.strategy_proofness(spec.problem, allocation, mechanism=mechanism)
    assert len(calls) == probe_budget(3000, 1) == 1
    assert ("probed the first 1 user types in spec order, of 3000 users, with 1 "
            "misreports") in finding.detail


def test_emrf_probe_re_solves_with_the_class_lp_and_solves_as_asked(monkeypatch):
    """The strategy-proofness probe's re-solves take the class LP (``probe_options``): the
    Pyomo model is built once, for the solve the spec asks for, not once per misreport."""
    from fairalloc.registry import KINDS
    from fairalloc.solvers import emrf as emrf_solvers

    built = []
    model = emrf_solvers.efficiency_model
    monkeypatch.setattr(emrf_solvers, "efficiency_model",
                        lambda *a: built.append(1) or model(*a))
    spec = KINDS["emrf"].random_spec(5, users=40)
    for options in ({}, {"formulation": "literal"}):
        built.clear()
        r = fairalloc.solve({**spec, "options": options})
        assert r.solver["extra"]["formulation"].startswith("literal")
        assert "24 misreports" in r.finding("strategy_proofness").detail
        assert len(built) == 1


@pytest.mark.slow
@fast(40)
@given(emrf_specs())
def test_emrf_probe_finds_the_same_with_either_formulation(spec):
    """The probe re-solving with the class LP judges as re-solving with the Pyomo model does:
    the same verdict and the same largest gain (two users with one split may tie on it, and
    either may then be the witness)."""
    from fairalloc.registry import KINDS

    lp = KINDS["emrf"].methods["lp"]
    spec = fairalloc.load_spec(spec)
    allocation = lp(spec.problem, formulation="literal").allocation

    def probe(formulation):
        return leontief.strategy_proofness(
            spec.problem, allocation, mechanism=lambda p: lp(p, formulation=formulation))

    literal, classes = probe("literal"), probe("classes")
    assert (literal.verdict, literal.detail) == (classes.verdict, classes.detail) or (
        literal.verdict == classes.verdict == "fails"
        and literal.witness["gain"] == pytest.approx(classes.witness["gain"], rel=1e-5))


# --- issue 24: the checks' fast paths agree with the slow ones ------------------------------------

@pytest.mark.slow
@fast(200)
@given(random_allocations())
def test_pareto_without_the_lp_agrees_with_the_lp(case):
    """The bound each demand class could grow by alone (``_growth_alone``) decides PE without
    the LP only when the LP could find no growth either: same verdict as the LP alone."""
    from unittest import mock

    problem, allocation, _, _ = case
    found = leontief.pareto_efficiency(problem, allocation)
    unbounded = lambda direction, room, slack: np.full(len(direction), np.inf)  # noqa: E731
    with mock.patch.object(leontief, "_growth_alone", unbounded):
        by_lp = leontief.pareto_efficiency(problem, allocation)
    assert found.verdict == by_lp.verdict, (found.detail, by_lp.detail)


def test_pareto_of_a_filled_allocation_needs_no_lp():
    """Progressive filling leaves every user frozen at a full resource or its cap: no class
    can grow alone, so PE holds without an LP over its thousands of demand classes."""
    from unittest import mock

    from fairalloc.registry import KINDS

    spec = fairalloc.load_spec(KINDS["drf"].random_spec(5, users=2000))
    allocation = fairalloc.solve(spec, validate=False).allocation
    with mock.patch.object(leontief, "solve_wide", side_effect=AssertionError("LP built")):
        found = leontief.pareto_efficiency(spec.problem, allocation)
    assert found.holds and "no LP needed" in found.detail


@pytest.mark.slow
@fast(200)
@given(st.integers(1, 30).flatmap(lambda n: pooled_rows(n, 3)))
def test_types_found_one_at_a_time_are_the_first_of_each(rows):
    """The probe's users, one per distinct type in spec order, found lazily, are the first
    occurrences a sort of all rows gives."""
    from fairalloc.checks.leontief import _FirstOfEachType

    types = np.asarray(rows, dtype=float)
    order = _FirstOfEachType(list(types.T))
    assert list(order) == sorted(np.unique(types, axis=0, return_index=True)[1])
    assert order.exhausted


@pytest.mark.slow
@fast(200)
@given(drf_specs())
def test_weighted_slice_is_the_worth_of_the_slice(data):
    """The slice's worth by the dominant share (share / s_i) is its worth by definition,
    min_d share C_d / a_id, capped (to rounding)."""
    m = fairalloc.load_spec(data).problem.market
    share = m.weights / m.weights.sum()
    slice_ = share[:, None] * m.capacity[None, :]
    np.testing.assert_allclose(m.weighted_slice(), m.worth(np.arange(m.n), slice_), rtol=1e-12)


@pytest.mark.slow
@fast(300)
@given(drf_specs(), st.data())
def test_a_misreport_carries_the_classes_over_as_a_fresh_grouping_makes_them(data, draw):
    """``Leontief.with_demand`` updates the dominant shares and demand classes for the one
    changed user (no sort): exactly what grouping the changed market afresh gives, whatever
    the lie (a known direction, a new one, the last member of a class leaving)."""
    from fairalloc.models.leontief import demand_classes, dominant_share

    m = fairalloc.load_spec(data).problem.market
    m.classes()
    i = draw.draw(st.integers(0, m.n - 1))
    lies = leontief._misreports(m.demand[i], m.resources) + [
        ("another's", m.demand[j]) for j in range(m.n)]
    _, lie = draw.draw(st.sampled_from(lies))
    changed = m.with_demand(i, lie)
    carried, fresh = changed.classes(), demand_classes.__wrapped__(changed)
    for name in ("label", "first", "direction"):
        np.testing.assert_array_equal(getattr(carried, name), getattr(fresh, name))
    np.testing.assert_array_equal(changed.dominant(), dominant_share.__wrapped__(changed))
    assert demand_classes.__qualname__ in changed.memo
