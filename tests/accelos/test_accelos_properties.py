"""Property tests for accelos (work groups of concurrent kernels) on random instances.

Random kernels draw work-group sizes, local memory, registers and shares from small pools
(so that equal per-group dominant shares, hence ties in the greedy, are common) and the device
is a random multiple of what one group of every kernel needs (so the spec is valid, and both
tight and roomy devices occur).

What is checked, each against an independent reference written here: the batched greedy equals
a literal one-group-at-a-time greedy (both orders); ``accelos`` is always feasible and
saturated; the ILP's first round equals a brute-force max-min on tiny instances and ``ilp`` is
never less fair than ``accelos``; the wave model's closed form equals its event loop; the
checks fail, with the right witness, on allocations that break their definitions.
"""

from __future__ import annotations

import itertools
from pathlib import Path
from unittest import mock

import numpy as np
import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

import fairalloc
from fairalloc.allocation import Allocation
from fairalloc.checks import accelos as V
from fairalloc.models.accelos import (
    AccelosProblem,
    dispatch,
    equal_split,
    execute,
    max_min_level,
    max_min_program,
    share_key,
    waves_time,
)
from fairalloc.solvers import accelos as S
from fairalloc.solvers.highs import solve_program

GROUP_SIZES = [1, 2, 3, 32, 64, 96, 128, 256]
LOCAL = [0, 0, 1, 100, 1024, 4096]
REGISTERS = [0, 1, 2, 16, 32]
SHARES = [1, 1, 2, 0.5, 3]


def fast(examples: int) -> settings:
    return settings(max_examples=examples, deadline=None,
                    suppress_health_check=[HealthCheck.too_slow])


@st.composite
def accelos_specs(draw, max_k: int = 6, max_groups: int = 40) -> dict:
    """A valid accelos spec: pooled kernel shapes, device a multiple of one group each."""
    k = draw(st.integers(1, max_k))
    kernels = []
    for i in range(k):
        kernel = {"id": f"k{i}", "work_group_size": draw(st.sampled_from(GROUP_SIZES)),
                  "work_groups": draw(st.integers(1, max_groups))}
        for key, pool in (("local_memory_per_group", LOCAL), ("registers_per_thread", REGISTERS),
                          ("share", SHARES)):
            if draw(st.booleans()):
                kernel[key] = draw(st.sampled_from(pool))
        if draw(st.booleans()):
            kernel["time_per_group"] = draw(st.sampled_from([1, 2, 0.5, 3.25]))
        kernels.append(kernel)
    need = {
        "threads": sum(kn["work_group_size"] for kn in kernels),
        "local_memory": max(1, sum(kn.get("local_memory_per_group", 0) for kn in kernels)),
        "registers": max(1, sum(kn["work_group_size"] * kn.get("registers_per_thread", 0)
                                for kn in kernels)),
    }
    device = {r: v * draw(st.sampled_from([1, 1, 2, 3, 5, 8])) + draw(st.integers(0, v))
              for r, v in need.items()}
    return {"problem": "accelos", "device": device, "kernels": kernels}


def problem(spec: dict) -> AccelosProblem:
    return fairalloc.load_spec(spec).problem


def keys(p: AccelosProblem, n) -> np.ndarray:
    return share_key(np.asarray(n, dtype=float), (p.demand / p.capacity).max(axis=1), p.share)


def fits_next(p: AccelosProblem, n: np.ndarray) -> np.ndarray:
    """Which kernels could take one more group (below N_i, next group within what is free)."""
    free = p.capacity - n @ p.demand
    return (n < p.groups) & np.all(p.demand <= free, axis=1)


def one_at_a_time(p: AccelosProblem, start: np.ndarray) -> np.ndarray:
    """The greedy as the issue states it: one group to the kernel with the smallest weighted
    dominant share (ties: spec order) among those that can take one more, until none can."""
    n = start.astype(float).copy()
    while True:
        can = np.flatnonzero(fits_next(p, n))
        if can.size == 0:
            return n.astype(np.int64)
        k = keys(p, n)[can]
        n[can[np.flatnonzero(k == k.min())[0]]] += 1


def round_robin_reference(p: AccelosProblem, start: np.ndarray) -> np.ndarray:
    """Passes in spec order, one group each to every kernel that can take one, until none can."""
    n = start.astype(float).copy()
    while fits_next(p, n).any():
        for i in range(p.kernel_count):
            if fits_next(p, n)[i]:
                n[i] += 1
    return n.astype(np.int64)


def groups(solution) -> np.ndarray:
    return np.asarray(solution.allocation.column("work_groups"), dtype=np.int64)


# --- the greedy ---------------------------------------------------------------------------------

@pytest.mark.slow
@fast(300)
@given(accelos_specs())
def test_batched_greedy_equals_one_group_at_a_time(spec):
    p = problem(spec)
    start = equal_split(p)
    np.testing.assert_array_equal(S.fill_by_dominant_share(p, start), one_at_a_time(p, start))
    ones = np.ones(p.kernel_count, dtype=np.int64)     # a start far from the split: long batches
    np.testing.assert_array_equal(S.fill_by_dominant_share(p, ones), one_at_a_time(p, ones))


@pytest.mark.slow
@fast(200)
@given(accelos_specs())
def test_round_robin_equals_its_reference(spec):
    p = problem(spec)
    start = equal_split(p)
    np.testing.assert_array_equal(S.fill_round_robin(p, start), round_robin_reference(p, start))


@pytest.mark.slow
@fast(300)
@given(accelos_specs(), st.sampled_from(S.GREEDY_ORDERS))
def test_accelos_is_always_feasible_and_saturated(spec, order):
    p = problem(spec)
    sol = S.accelos(p, greedy=order)
    n = groups(sol)
    assert V.feasibility(p, sol.allocation).holds
    assert V.pareto_efficiency(p, sol.allocation).holds
    assert not fits_next(p, n.astype(float)).any()                 # saturated, from scratch
    assert np.all(n >= equal_split(p))                             # the greedy only adds
    assert sol.objective == pytest.approx(keys(p, n).min(), rel=1e-12)


@pytest.mark.slow
@fast(200)
@given(accelos_specs())
def test_equal_split_follows_section_3(spec):
    """x_i = floor(T s_i / (S w_i)) and likewise for y, z (a resource not used does not
    bound), n_i = min, capped at N_i; where every share gives at least one group, exactly
    that; always within the device and 1 <= n_i <= N_i."""
    p = problem(spec)
    n = equal_split(p)
    assert np.all(n >= 1) and np.all(n <= p.groups)
    assert np.all(n @ p.demand <= p.capacity)
    portion = p.share / p.share.sum()
    with np.errstate(divide="ignore"):
        per = np.where(p.demand > 0, np.floor(portion[:, None] * p.capacity / p.demand + 1e-9),
                       np.inf)
    formula = np.minimum(per.min(axis=1), p.groups)
    if np.all(formula >= 1):
        np.testing.assert_array_equal(n, formula)


# --- the ILP ------------------------------------------------------------------------------------

def brute_force_max_min(p: AccelosProblem) -> float:
    best = -np.inf
    for n in itertools.product(*(range(1, int(g) + 1) for g in p.groups)):
        n = np.array(n, dtype=float)
        if np.all(n @ p.demand <= p.capacity):
            best = max(best, float(keys(p, n).min()))
    return best


@fast(60)
@given(accelos_specs(max_k=3, max_groups=6))
def test_the_max_min_ilp_is_the_brute_force_max_min(spec):
    """The max-min ILP (``max_min_program``), an independent witness of the level bisection
    that ``ilp`` uses, against enumeration."""
    p = problem(spec)
    report = solve_program(max_min_program(p), mip_gap=0.0)
    assert report.status == "optimal"
    n = np.round(report.x[:p.kernel_count])
    assert float(keys(p, n).min()) == pytest.approx(brute_force_max_min(p), rel=1e-12)


@fast(60)
@given(accelos_specs(max_k=3, max_groups=6))
def test_max_min_level_is_the_brute_force_max_min(spec):
    """The validator's exact max-min (bisection on the level, no ILP) against enumeration."""
    p = problem(spec)
    level, n = max_min_level(p)
    brute = brute_force_max_min(p)
    assert level == pytest.approx(brute, rel=1e-12)
    assert np.all(n @ p.demand <= p.capacity) and np.all((1 <= n) & (n <= p.groups))


@fast(60)
@given(accelos_specs(max_k=5))
def test_ilp_is_never_less_fair_than_accelos(spec):
    p = problem(spec)
    exact, heuristic = S.ilp(p), S.accelos(p)
    assert exact.status == "optimal"
    assert V.feasibility(p, exact.allocation).holds
    assert V.max_min(p, exact.allocation).holds
    assert exact.objective >= heuristic.objective * (1 - 1e-12)
    n_exact, n_heur = groups(exact), groups(heuristic)
    if keys(p, n_heur).min() >= exact.objective:            # same level: ILP uses more threads
        assert n_exact @ p.demand[:, 0] >= n_heur @ p.demand[:, 0]


# --- the wave model -----------------------------------------------------------------------------

@pytest.mark.slow
@fast(150)
@given(accelos_specs(max_groups=25))
def test_closed_form_equals_the_event_loop_for_persistent_groups(spec):
    p = problem(spec)
    n = S.accelos(p).allocation.column("work_groups").astype(float)
    closed = execute(p, n)
    loop = dispatch(p, n)
    np.testing.assert_allclose(closed.finish, loop.finish)
    np.testing.assert_allclose(loop.start, 0.0)
    np.testing.assert_allclose(closed.finish, np.ceil(p.groups / n) * p.time_per_group)


@pytest.mark.slow
@fast(150)
@given(accelos_specs(max_groups=25))
def test_standard_opencl_dispatch_does_all_the_work(spec):
    """Uncapped dispatch: every kernel finishes no sooner than alone, the first kernel exactly
    as alone (it takes the device first), and no later than every group one at a time (the
    device never idles while groups wait: one group of any kernel fits an empty device). Not
    "no later than the kernels one after the other alone": greedy dispatch has Graham's
    anomalies (``test_greedy_dispatch_can_lose_to_running_alone``)."""
    p = problem(spec)
    run = execute(p)
    assert np.all(np.isfinite(run.finish)) and np.all(run.start <= run.finish)
    assert np.all(run.finish >= run.alone * (1 - 1e-12))
    assert run.finish[0] == pytest.approx(run.alone[0])
    assert run.makespan <= (p.groups * p.time_per_group).sum() * (1 + 1e-12)
    alone = waves_time(p, np.minimum(p.groups, np.floor(
        np.where(p.demand > 0, p.capacity / np.where(p.demand > 0, p.demand, 1), np.inf)
        .min(axis=1))))
    np.testing.assert_allclose(run.alone, alone)


@pytest.mark.slow
@fast(150)
@given(accelos_specs(max_groups=400), st.sampled_from(["uncapped", "persistent", "mixed"]))
def test_skipping_repeated_periods_changes_nothing(spec, caps):
    """The event loop with whole repeated periods skipped (``_repeat``) gives the times the
    plain loop gives, event by event."""
    p = problem(spec)
    n = S.accelos(p).allocation.column("work_groups").astype(float)
    limit = {"uncapped": np.full(p.kernel_count, np.inf), "persistent": n,
             "mixed": np.where(np.arange(p.kernel_count) % 2 == 0, n, np.inf)}[caps]
    fast_run = dispatch(p, limit)
    with mock.patch("fairalloc.models.accelos._repeat", lambda *_: None):
        plain = dispatch(p, limit)
    np.testing.assert_array_equal(fast_run.start, plain.start)
    np.testing.assert_allclose(fast_run.finish, plain.finish, rtol=1e-15)


def test_an_ndrange_of_2_53_groups_dispatches_in_few_events():
    """Figure 3 with 2^53 groups each: standard OpenCL runs A then B, each alone at 4 groups
    resident, whose times the skipped loop gets exactly (2^51 waves each)."""
    spec = fairalloc.load_spec(Path(__file__).parents[2] / "specs/accelos/figure3.json").raw
    for kernel in spec["kernels"]:
        kernel["work_groups"] = 2**53
    p = problem(spec)
    run = execute(p)
    assert run.finish.tolist() == [2.0**51, 2.0**52]


# --- the checks fail on broken allocations --------------------------------------------------

def allocation(p: AccelosProblem, n) -> Allocation:
    return p.allocation(np.asarray(n))


@fast(100)
@given(accelos_specs())
def test_checks_on_broken_allocations(spec):
    p = problem(spec)
    n = groups(S.accelos(p))
    # one kernel given its whole NDRange and everything beyond: over capacity or over N_i
    broken = n.copy()
    broken[0] = p.groups[0] + 1
    assert not V.feasibility(p, allocation(p, broken)).holds
    # a kernel without a resident group: the device holds it, but not everyone runs
    if p.kernel_count > 1:
        idle = n.copy()
        idle[-1] = 0
        assert V.feasibility(p, allocation(p, idle)).holds
        finding = V.all_resident(p, allocation(p, idle))
        assert not finding.holds and p.ids[-1] in finding.witness["kernels"]
    negative = n.copy()
    negative[0] = -1
    assert not V.feasibility(p, allocation(p, negative)).holds
    # all ones on a roomy device: not saturated, and the witness can take one more
    ones = np.ones(p.kernel_count, dtype=np.int64)
    finding = V.pareto_efficiency(p, allocation(p, ones))
    assert finding.holds == (not fits_next(p, ones.astype(float)).any())
    if not finding.holds:
        i = p.ids.index(finding.witness["kernel"])
        assert fits_next(p, ones.astype(float))[i]


def envy_reference(p: AccelosProblem, n: np.ndarray) -> set[tuple[int, int]]:
    """Pairs (i, j): i fits more of its groups (at most N_i) in j's share-scaled bundle."""
    out = set()
    for i, j in itertools.product(range(p.kernel_count), repeat=2):
        if i == j:
            continue
        bundle = n[j] * p.demand[j] * p.share[i] / p.share[j]
        fit = min((np.floor(bundle[r] / p.demand[i, r] + 1e-9) for r in range(3)
                   if p.demand[i, r] > 0), default=np.inf)
        if min(fit, p.groups[i]) > n[i]:
            out.add((i, j))
    return out


@fast(150)
@given(accelos_specs(), st.sampled_from(["accelos", "ilp", "fcfs", "equal-threads"]))
def test_envy_freeness_matches_its_definition(spec, method):
    p = problem(spec)
    sol = fairalloc.solve(fairalloc.load_spec(spec), method, validate=False)
    n = groups(sol)
    finding = V.envy_freeness(p, sol.allocation)
    envious = envy_reference(p, n.astype(float))
    assert finding.holds == (not envious)
    if not finding.holds:
        pair = (p.ids.index(finding.witness["kernel"]), p.ids.index(finding.witness["envies"]))
        assert pair in envious


def test_max_min_finds_an_unfair_allocation():
    spec = {"problem": "accelos", "device": {"threads": 1024, "local_memory": 1,
                                             "registers": 1},
            "kernels": [{"id": "A", "work_group_size": 256, "work_groups": 12},
                        {"id": "B", "work_group_size": 256, "work_groups": 8}]}
    p = problem(spec)
    finding = V.max_min(p, allocation(p, [3, 1]))
    assert not finding.holds
    assert finding.witness == {"minimum": 0.25, "max_min": 0.5,
                               "work_groups": {"A": 2, "B": 2}}


def test_greedy_dispatch_can_lose_to_running_alone():
    """Found by hypothesis: k3's small groups fill the threads k2 needs, so standard OpenCL
    takes 7 where the kernels one after the other alone take 6.5."""
    spec = {"problem": "accelos", "device": {"threads": 384, "local_memory": 1, "registers": 768},
            "kernels": [{"id": "k0", "work_group_size": 1, "work_groups": 1,
                         "time_per_group": 0.5},
                        {"id": "k1", "work_group_size": 64, "work_groups": 15,
                         "registers_per_thread": 2},
                        {"id": "k2", "work_group_size": 64, "work_groups": 6,
                         "registers_per_thread": 2, "time_per_group": 2},
                        {"id": "k3", "work_group_size": 32, "work_groups": 9}]}
    run = execute(problem(spec))
    assert run.makespan == 7 and run.alone.sum() == 6.5


def test_wave_times_are_exact_as_written():
    """Three waves of 0.1 end at 0.3, not at 0.30000000000000004 (float sums): under standard
    OpenCL A takes all three slots, and B (two slots) waits until A's third wave ends."""
    spec = {"problem": "accelos", "device": {"threads": 192, "local_memory": 1, "registers": 1},
            "kernels": [{"id": "A", "work_group_size": 64, "work_groups": 9,
                         "time_per_group": 0.1},
                        {"id": "B", "work_group_size": 128, "work_groups": 1,
                         "time_per_group": 0.3}]}
    run = execute(problem(spec))
    assert run.start.tolist() == [0.0, 0.3] and run.finish.tolist() == [0.3, 0.6]


def test_standard_opencl_runs_once_per_problem_with_the_same_metrics():
    """The standard-OpenCL baseline (an event loop, many times the method) is run once per
    problem: compare's four methods and fcfs's own baseline share it, and every metric is the
    one a fresh run gives."""
    from fairalloc.models import accelos as model

    spec = fairalloc.load_spec(fairalloc.registry.KINDS["accelos"].random_spec(11, kernels=6))
    p, runs = spec.problem, []
    loop = model.dispatch

    def counted(problem, limit):
        runs.append(bool(np.all(np.isinf(limit))))
        return loop(problem, limit)

    with mock.patch("fairalloc.models.accelos.dispatch", counted):
        results = [(name, r) for name, r in fairalloc.compare(spec) if not isinstance(r, str)]
    assert runs.count(True) == 1 and len(results) >= 3
    baseline = loop(p, np.full(p.kernel_count, np.inf))
    for name, r in results:
        run = execute(p, r.allocation.column("work_groups"))
        assert r.metrics["fairness_improvement"] == \
            model.unfairness(baseline) / model.unfairness(run), name
        assert r.metrics["throughput_speedup"] == baseline.makespan / run.makespan, name
