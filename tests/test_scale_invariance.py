"""Scale invariance (issue 26): a spec with its quantities scaled by factors across the documented
range gives the same status, the same verdicts and the objective scaled by the matching
factor. Each kind's ``random_spec`` draws the instance; a per-kind function scales it and says
how the objective moves. Tolerances that are absolute somewhere break this at one end of the
range (a 5% overload passing at capacities of 1e-6, an LP round infeasible at 1e9).

moldable has its own scale test, and hetero one in units of time and steps
(``tests/hetero/test_hetero_scale.py``); here: drf, emrf, etf, accelos, token and hetero.
"""

from __future__ import annotations

import copy

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

import fairalloc
from fairalloc.models.hetero import measured
from fairalloc.studies import accelos, drf, emrf, etf, hetero, token

RTOL = 1e-7     # objectives are LP optima or closed forms of the scaled numbers


def examples(n: int) -> settings:
    return settings(max_examples=n, deadline=None, derandomize=True,
                    suppress_health_check=[HealthCheck.too_slow])


def decades(low: int, high: int) -> st.SearchStrategy[float]:
    """A power of ten between 10^low and 10^high (not a power of two: floats round anew)."""
    return st.integers(low, high).map(lambda k: 10.0 ** k)


def outcome(spec: dict, method: str | None = None) -> tuple[str, dict[str, str], float | None]:
    result = fairalloc.solve(spec, method=method)
    return result.status, {f.check: f.verdict for f in result.validation}, result.objective


def assert_scaled(base: dict, scaled: dict, factor: float, method: str | None = None) -> None:
    """``scaled`` solves like ``base``, its objective ``factor`` times base's."""
    status, verdicts, objective = outcome(base, method)
    s_status, s_verdicts, s_objective = outcome(scaled, method)
    assert (s_status, s_verdicts) == (status, verdicts)
    if objective is None:
        assert s_objective is None
    else:
        assert s_objective == pytest.approx(objective * factor, rel=RTOL, abs=0)


# --- drf: capacities and demands by f (tasks unchanged), weights by g (shares / g) ----------


def scale_drf(spec: dict, f: float, g: float) -> dict:
    out = copy.deepcopy(spec)
    out["capacity"] = {r: c * f for r, c in spec["capacity"].items()}
    for user in out["users"]:
        user["demand"] = {r: a * f for r, a in user["demand"].items()}
        user["weight"] = user.get("weight", 1.0) * g
    return out


@pytest.mark.slow
@examples(60)
@given(st.integers(0, 10**6), st.integers(2, 7), st.booleans(),
       st.sampled_from(["continue", "stop"]), st.booleans(), decades(-5, 10), decades(-5, 5))
def test_drf(seed, users, divisible, saturation, exact, f, g):
    """Capacities 1e-5 .. 5e11, weights 5e-6 .. 4e5; the objective (min weighted dominant
    share) is divided by the weight factor."""
    spec = drf.random_spec(seed, users=users, divisible=divisible, saturation=saturation)
    method = "lp" if divisible and exact else None
    assert_scaled(spec, scale_drf(spec, f, g), 1 / g, method)


def scale_amounts(allocation: dict, units: float, amounts: float) -> dict:
    """A result-format Leontief allocation's decisions, units times ``units`` and the
    bundles times ``amounts``; derived columns (shares) are left out for ``validate`` to
    recompute (a stale one is refused)."""
    def scale(value, by):
        return {k: scale(v, by) for k, v in value.items()} if isinstance(value, dict) \
            else value * by
    decisions = {"tasks": units, "total": units, "resources": amounts, "devices": amounts}
    return {uid: {key: scale(value, decisions[key]) for key, value in row.items()
                  if key in decisions} for uid, row in allocation.items()}


@examples(60)
@given(st.integers(0, 10**6), st.integers(2, 6), st.sampled_from(["drf", "emrf"]),
       st.sampled_from([1 - 3e-7, 1 - 3e-8, 1, 1 + 3e-8, 1 + 3e-7, 1.05]), decades(-5, 9))
def test_leontief_checks_on_perturbed_allocations(seed, users, kind, factor, f):
    """The checks on the solver's allocation scaled by ``factor`` (within and beyond the
    checks' relative tolerance 1e-7) give the same verdicts at every scale: an absolute
    tolerance passed a 5% overload at capacities of 1e-6."""
    if kind == "drf":
        spec = drf.random_spec(seed, users=users)
        scaled, unit = scale_drf(spec, f, 1.0), 1.0
    else:
        spec = emrf.random_spec(seed, users=users, formulation="classes")
        scaled, unit = scale_emrf(spec, f, 1.0), f
    allocation = scale_amounts(fairalloc.solve(spec, validate=False).allocation.to_dict(),
                               factor, factor)
    base = fairalloc.validate(spec, allocation)
    other = fairalloc.validate(scaled, scale_amounts(allocation, unit, f))
    assert base.status == other.status
    assert ({c.check: c.verdict for c in base.validation}
            == {c.check: c.verdict for c in other.validation})


# --- emrf: capacities by f (GFLOPS scale with them), weights by g (nothing moves) -----------


def scale_emrf(spec: dict, f: float, g: float) -> dict:
    out = copy.deepcopy(spec)
    out["capacity"] = {d: c * f for d, c in spec["capacity"].items()}
    for user in out["users"]:
        user["weight"] = user.get("weight", 1.0) * g
    return out


@pytest.mark.slow
@examples(40)
@given(st.integers(0, 10**6), st.integers(2, 7), st.sampled_from([0.0, 0.3, 0.5, 1.0]),
       decades(-7, 9), decades(-5, 5))
def test_emrf(seed, users, knob, f, g):
    """Capacities 1e-6 .. 6e11 (``random_spec`` gives 10 and 80 per user)."""
    spec = emrf.random_spec(seed, users=users, knob=knob, formulation="classes")
    assert_scaled(spec, scale_emrf(spec, f, g), f)


# --- etf: power by f (energies by f), weights by g (energies / g); slices are counts --------


def scale_etf(spec: dict, f: float, g: float) -> dict:
    out = copy.deepcopy(spec)
    for app in out["apps"]:
        app["power"] = app["power"] * f
        app["weight"] = app.get("weight", 1.0) * g
    return out


@pytest.mark.slow
@examples(60)
@given(st.integers(0, 10**6), st.integers(2, 12), st.sampled_from([1, 7, 100, 10**6]),
       st.sampled_from([0.0, 0.5, 1.0]), st.sampled_from(["waterfill", "leximin"]),
       decades(-4, 3), decades(-5, 5))
def test_etf(seed, apps, quantum, phi, method, f, g):
    """Powers 5e-3 .. 3e5 W, weights 1e-5 .. 3e5; the quantum is a count of slices, not a
    scale (``tests/etf`` covers T from 1 to 2^53)."""
    spec = etf.random_spec(seed, apps=apps, quantum=quantum, phi=phi)
    assert_scaled(spec, scale_etf(spec, f, g), f / g, method)


# --- accelos: memory by a whole factor, time per group by f, shares by g --------------------


def scale_accelos(spec: dict, k: int, f: float, g: float) -> dict:
    """Local memory of the device and of each group times ``k`` (whole: resident groups are
    floor(device / group), the same counts), times per group by ``f``, shares by ``g``.
    Threads and registers are left alone: a group's registers are registers per thread times
    its threads, so scaling both is not one factor."""
    out = copy.deepcopy(spec)
    out["device"]["local_memory"] = spec["device"]["local_memory"] * k
    for kernel in out["kernels"]:
        kernel["local_memory_per_group"] = kernel["local_memory_per_group"] * k
        kernel["time_per_group"] = kernel["time_per_group"] * f
        kernel["share"] = kernel.get("share", 1.0) * g
    return out


@examples(40)
@given(st.integers(0, 10**6), st.integers(2, 8), st.integers(1, 1000), decades(-6, 6),
       decades(-6, 6))
def test_accelos(seed, kernels, k, f, g):
    """The objective (min weighted dominant share) is divided by the share factor."""
    spec = accelos.random_spec(seed, kernels=kernels)
    assert_scaled(spec, scale_accelos(spec, k, f, g), 1 / g)


# --- token: utilities by f (thresholds and the boost utility by f) --------------------------


def scale_token(spec: dict, f: float) -> dict:
    out = copy.deepcopy(spec)
    for kind in out["types"]:
        kind["utility"]["uniform"] = [u * f for u in kind["utility"]["uniform"]]
    return out


@pytest.mark.slow
@examples(20)
@given(st.integers(0, 10**6), st.integers(1, 3), decades(-6, 6))
def test_token(seed, types, f):
    """The objective is a utility per agent and round: it scales with the utilities."""
    spec = token.random_spec(seed, types=types, max_tokens=8, points=12)
    assert_scaled(spec, scale_token(spec, f), f)


# --- hetero: throughputs and steps by f (times unchanged), weights by g (levels / g) --------


def hetero_rows(spec: dict) -> dict:
    """The spec with each ``model`` job's measured throughput row written out (a row can be
    scaled, a model name cannot)."""
    out = copy.deepcopy(spec)
    for job in out["jobs"]:
        job["throughput"] = dict(measured()[(job.pop("model"), job.get("scale_factor", 1))])
    return out


def scale_hetero(spec: dict, f: float, g: float) -> dict:
    out = copy.deepcopy(spec)
    for job in out["jobs"]:
        job["throughput"] = {t: v * f for t, v in job["throughput"].items()}
        job["steps_remaining"] = job["steps_remaining"] * f
        job["weight"] = job.get("weight", 1.0) * g
    return out


def outcomes(spec: dict) -> dict:
    """Every method's status, verdicts and objective, or its refusal."""
    return {name: result if isinstance(result, str) else
            (result.status, {f.check: f.verdict for f in result.validation}, result.objective)
            for name, result in fairalloc.compare(spec)}


@pytest.mark.slow
@examples(12)
@given(st.integers(0, 10**6), st.integers(2, 5), st.integers(1, 3), st.booleans(),
       decades(-9, 9), decades(-5, 5))
def test_hetero(seed, jobs, workers, weighted, f, g):
    """Gavel's throughputs (0.35 .. 699 steps/s) and the steps remaining times 1e-9 .. 1e9,
    weights (1 .. 3) times 1e-5 .. 1e5: every method the same status and verdicts, its
    objective (the smallest weighted normalised throughput) divided by g. An absolute floor
    of 1e-7 steps/s in envy-freeness said "holds" at 1e-9, and the LPs on raw throughputs
    found other optima (finish-time 0.5 against 0.621) or none ("HiGHS: Unbounded")."""
    spec = hetero_rows(hetero.random_spec(seed, jobs=jobs, workers=workers, weighted=weighted))
    base, scaled = outcomes(spec), outcomes(scale_hetero(spec, f, g))
    assert scaled.keys() == base.keys()
    for method, result in base.items():
        other = scaled[method]
        if isinstance(result, str):
            assert other == result, method
            continue
        assert other[:2] == result[:2], method
        assert other[2] == pytest.approx(result[2] / g, rel=RTOL, abs=0), method


REPLAY_JOBS = [{"id": "a", "arrival": 0, "throughput": {"v100": 4.0, "p100": 2.0, "k80": 1.0},
                "steps": 30000},
               {"id": "b", "arrival": 200, "throughput": {"v100": 1.0, "p100": 1.0, "k80": 0.5},
                "steps": 8000, "weight": 2},
               {"id": "c", "arrival": 900, "throughput": {"v100": 3.0, "p100": 0.0, "k80": 1.0},
                "steps": 5000}]


def scaled_replay(f: float, policy: str, mechanism: dict) -> dict:
    """Three listed jobs on one GPU of each type, throughputs and steps times ``f`` (time
    unchanged)."""
    jobs = copy.deepcopy(REPLAY_JOBS)
    for job in jobs:
        job["throughput"] = {t: v * f for t, v in job["throughput"].items()}
        job["steps"] *= f
    return {"replay": "scaled", "kind": "hetero",
            "cluster": {"workers": {"v100": 1, "p100": 1, "k80": 1}}, "trace": {"jobs": jobs},
            "policy": {"method": policy}, "mechanism": mechanism}


@pytest.mark.parametrize("mechanism", [{"name": "ideal"}, {"name": "rounds", "round_s": 60}],
                         ids=["ideal", "rounds"])
@pytest.mark.parametrize("policy", ["max-min", "leximin", "finish-time", "max-throughput",
                                    "agnostic-finish-time",
                                    "agnostic-max-min", "fifo", "min-total-duration"])
def test_hetero_replays(policy, mechanism):
    """A replay's finish times do not depend on the unit of steps: min-total-duration's LP on
    raw steps/s gave no finish time at 1e-9 under ideal and 23% later ones under rounds."""
    base = fairalloc.api.replay(scaled_replay(1.0, policy, mechanism)).jobs["finish"]
    for f in (1e-9, 1e9):
        finish = fairalloc.api.replay(scaled_replay(f, policy, mechanism)).jobs["finish"]
        assert finish == pytest.approx(base, rel=RTOL), f
