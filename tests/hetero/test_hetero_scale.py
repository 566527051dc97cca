"""hetero in any unit: a spec whose seconds are multiplied by a factor (throughputs divided
by it, times elapsed multiplied) and whose steps by another (throughputs and steps remaining
multiplied) is the same problem: every method gives the same status, verdicts and objective
(a normalised throughput: no unit), or the same refusal; a method with many optimal
allocations the same status and optimum."""

from __future__ import annotations

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st
from scaling import assert_alike

import fairalloc

TYPES = ("k80", "p100", "v100")
# methods whose allocation is one of many optima (the LP's vertex): which one may change with
# the unit, and the verdicts and the smallest level with it (max-min's second stage is under
# way); each is held to the same status and the same value of what it optimises
OPTIMISED = {"max-min": "objective", "max-throughput": "total_normalized_throughput",
             "finish-time": "max_finish_time_ratio"}


@st.composite
def small_specs(draw) -> dict:
    """2 to 4 jobs on 1 to 3 types of 1 to 3 GPUs; whole-number throughputs (0 on some types,
    each job above 0 on the first), scale factors 1 or 2, weights 1..3, steps remaining (some
    0: finished) and times elapsed (some 0)."""
    types = TYPES[:draw(st.integers(1, 3))]
    jobs = []
    for i in range(draw(st.integers(2, 4))):
        row = {t: draw(st.integers(0, 1000)) for t in types}
        row[types[0]] = draw(st.integers(1, 1000))
        jobs.append({"id": f"j{i}", "throughput": row,
                     "scale_factor": 1 if i == 0 else draw(st.integers(1, 2)),
                     "weight": draw(st.integers(1, 3)),
                     "steps_remaining": draw(st.sampled_from([0, 1, 500, 10 ** 5])),
                     "time_elapsed": draw(st.sampled_from([0, 30, 86400]))})
    return {"problem": "hetero", "workers": {t: draw(st.integers(2, 3)) for t in types},
            "jobs": jobs}


def in_units(spec: dict, seconds: float, steps: float) -> dict:
    """The spec with a second worth ``seconds`` and a step worth ``steps`` of the old ones."""
    def job(j: dict) -> dict:
        return {**j, "throughput": {t: v * steps / seconds for t, v in j["throughput"].items()},
                "steps_remaining": j["steps_remaining"] * steps,
                "time_elapsed": j["time_elapsed"] * seconds}
    return {**spec, "jobs": [job(j) for j in spec["jobs"]]}


@pytest.mark.slow
@settings(max_examples=12, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(spec=small_specs(), seconds=st.integers(-10, 10), steps=st.integers(-10, 10))
def test_every_method_is_alike_in_any_unit(spec, seconds, steps):
    """A second and a step each worth 2^-10 .. 2^10 of the old ones: throughputs multiplied by
    2^-20 .. 2^20 (about 1e-6 .. 1e6, within the schema's 1e12; ``test_scale_invariance``
    goes to 1e-9 .. 1e9 in steps alone)."""
    base = dict(fairalloc.compare(spec))
    scaled = dict(fairalloc.compare(in_units(spec, 2.0 ** seconds, 2.0 ** steps)))
    for name, result in base.items():
        if name in OPTIMISED and not isinstance(result, str):
            assert scaled[name].status == result.status, name
            assert optimised(scaled[name]) == pytest.approx(optimised(result), rel=1e-6), name
        else:
            assert_alike(result, scaled[name], 1.0, rel=1e-6, objective_scales=False)


def optimised(result) -> float:
    """The value the result's method optimises (``OPTIMISED``)."""
    key = OPTIMISED[result.method]
    return result.objective if key == "objective" else result.metrics[key]


def job(name: str, weight: float, **throughput: float) -> dict:
    return {"id": name, "weight": weight, "throughput": throughput,
            "steps_remaining": 1000, "time_elapsed": 10}


# specs at the ends of the ranges a spec may hold (weights 1e-6 .. 1e6, throughputs 1e-9 ..
# 1e12 steps/s): on raw throughputs and weights HiGHS met entries beyond its 1e15 or below its
# 1e-9 (which it drops) and said "Empty" or "Unbounded"
EDGES = {
    "weight 1e6, throughput 1e10": [job("a", 1e6, k80=1e10, v100=1e12), job("b", 1, k80=1)],
    "weights 1e-6, throughput 1e-6": [job("a", 1e-6, k80=1e-6), job("b", 1e-6, k80=1e-6)],
    "weights 1e-6 and 1, throughputs 1e-3": [job("a", 1e-6, k80=1e-3, v100=2e-4),
                                             job("b", 1, k80=1e-4, v100=1e-3)],
    "throughput 1e-9 everywhere": [job("a", 1, k80=1e-9, v100=1e-9), job("b", 1, k80=1)],
    "weights 1e-6 and 1e6": [job("a", 1e-6, k80=1, v100=3), job("b", 1e6, k80=1, v100=2),
                             job("c", 1, k80=1, v100=1)],
    # weights 2e-4 to 8e3: the lightest job's floor, asked of it in units of its isolated
    # throughput, was 6e-8, under HiGHS's feasibility tolerance, and it got 2e-9
    "weights 2e-4 to 8e3": [job("a", 0.0428, k80=4.3e11), job("b", 7849.3, k80=1.04e11),
                            job("c", 2.43e-4, k80=6.0e5)],
    "every extreme": [job("a", 1e-6, k80=1e-9, v100=1e12), job("b", 1e6, k80=1e12, v100=1e-9),
                      job("c", 1e6, k80=1e-9, v100=1e-9)],
}


@pytest.mark.parametrize("jobs", EDGES.values(), ids=EDGES.keys())
def test_every_method_solves_at_the_ends_of_the_ranges(jobs):
    """Every method gives an allocation (no solver error), and max-min's and leximin's
    smallest level is the max-min LP's (their max_min check holds), max-min's Pyomo
    formulation's too."""
    spec = {"problem": "hetero", "workers": {"k80": 2, "v100": 1}, "jobs": jobs}
    results = dict(fairalloc.compare(spec))
    results["pyomo"] = fairalloc.solve({**spec, "options": {"formulation": "pyomo"}}, "max-min")
    for name, result in results.items():
        assert not isinstance(result, str), (name, result)
        assert result.status in ("optimal", "heuristic"), name
    for name in ("max-min", "leximin", "pyomo"):
        assert {f.check: f.verdict for f in results[name].validation}["max_min"] == "holds"
    assert results["pyomo"].objective == pytest.approx(results["max-min"].objective, rel=1e-7)


def test_a_type_far_below_the_jobs_best_is_unusable_in_any_unit():
    """A type where a job makes less than 1e-9 of its best counts as one it cannot use, and a
    job whose every throughput is below 1e-9 steps/s runs where it is best (the floor is
    relative: an absolute 1e-9 steps/s refused Gavel's 0.35 steps/s in units of 1e9 steps)."""
    for unit in (1e-12, 1.0, 1e9):
        spec = {"problem": "hetero", "workers": {"k80": 1, "v100": 1},
                "jobs": [{"id": "a", "throughput": {"k80": 0.35 * unit, "v100": 3e-10 * unit}},
                         {"id": "b", "throughput": {"k80": 1 * unit, "v100": 2 * unit}}]}
        p = fairalloc.load_spec(spec).problem
        assert p.throughput[0].tolist() == [0.35 * unit, 0.0]
        assert p.throughput[1].tolist() == [1 * unit, 2 * unit]


def test_a_pareto_lp_without_a_solution_leaves_the_check_unchecked():
    """Weights 2e-6 to 2e3 and throughputs 3e-9 to 2e9: max-min gives j3 2e-9 of a K80, and
    the Pareto LP in each job's own unit ends "optimal" without a point (HiGHS); the check
    says so, where it raised a TypeError."""
    rows = [("j0", 46.701469731077395, 1, 243.60532189498838, 216573.3391420314),
            ("j1", 0.009054377888947458, 2, 1552642346.5493388, 1.510461284864693e-06),
            ("j2", 1.137446819953868e-05, 1, 7.361364735500081, 1670506026.414994),
            ("j3", 2.0650560737384333e-06, 1, 0.11093992246294389, 2.5937976111368867e-09),
            ("j4", 2359.6618928383064, 2, 5565509.17573415, 5.054221505459996)]
    spec = {"problem": "hetero", "workers": {"k80": 2, "p100": 2},
            "jobs": [{"id": name, "weight": weight, "scale_factor": scale,
                      "throughput": {"k80": k80, "p100": p100}}
                     for name, weight, scale, k80, p100 in rows]}
    result = fairalloc.solve(spec, "max-min")
    verdict = {f.check: f.verdict for f in result.validation}["pareto_efficiency"]
    assert verdict in ("holds", "fails", "unrefuted", "unchecked")
