"""The wave model's event loop (``models.accelos.dispatch``: one event per finish time, one
batch per kernel and event, a walk over distinct demands, repeated periods skipped) against
the model written from its definitions, one work group at a time: every group is its own
event at exact rational times (each time_per_group as written: 0.3 is 3/10), and at t = 0
and whenever groups finish the dispatcher walks the kernels in launch order, starting each
one's groups one by one while one fits and it is below its limit."""

from __future__ import annotations

import heapq
from fractions import Fraction
from unittest import mock

import numpy as np
import pytest
from hypothesis import given
from hypothesis import strategies as st
from test_accelos_properties import accelos_specs, fast, problem

from fairalloc.models.accelos import AccelosProblem, dispatch, execute
from fairalloc.solvers import accelos as S

# decimals whose float sums drift (0.1 + 0.2 != 0.3) and whose ticks differ by 10^3
RAGGED_TIMES = [0.1, 0.2, 0.3, 0.7, 1.1, 0.05, 2.5, 0.333, 0.001, 7, 1, 3.25]


def one_group_at_a_time(p: AccelosProblem, limit: np.ndarray) -> tuple[list, list]:
    """(start, finish) of every kernel, as Fractions: one event per work group."""
    k = p.kernel_count
    length = [Fraction(repr(float(t))) for t in p.time_per_group]
    demand = [[int(d) for d in row] for row in p.demand]
    free = [int(c) for c in p.capacity]
    left, resident = [int(g) for g in p.groups], [0] * k
    start, finish = [None] * k, [Fraction(0)] * k
    running: list[tuple[Fraction, int]] = []
    now = Fraction(0)
    while True:
        for i in range(k):
            while (left[i] > 0 and resident[i] < limit[i]
                   and all(d <= f for d, f in zip(demand[i], free))):
                heapq.heappush(running, (now + length[i], i))
                left[i] -= 1
                resident[i] += 1
                free = [f - d for f, d in zip(free, demand[i])]
                start[i] = now if start[i] is None else start[i]
        if not running:
            return start, finish
        now = running[0][0]
        while running and running[0][0] == now:
            _, i = heapq.heappop(running)
            resident[i] -= 1
            free = [f + d for f, d in zip(free, demand[i])]
            finish[i] = now


@st.composite
def ragged_specs(draw) -> dict:
    """``accelos_specs`` with every time_per_group drawn from ``RAGGED_TIMES``, and kernels
    often alike (the walk's per-demand queues hold several kernels)."""
    spec = draw(accelos_specs(max_k=8, max_groups=30))
    for kernel in spec["kernels"]:
        kernel["time_per_group"] = draw(st.sampled_from(RAGGED_TIMES))
    copies = draw(st.integers(0, 3))
    first = spec["kernels"][0]
    need = {"threads": first["work_group_size"],
            "local_memory": first.get("local_memory_per_group", 0),
            "registers": first["work_group_size"] * first.get("registers_per_thread", 0)}
    spec["kernels"] += [{**first, "id": f"copy{c}"} for c in range(copies)]
    spec["device"] = {r: v + copies * need[r] for r, v in spec["device"].items()}
    return spec


def limits(p: AccelosProblem, caps: str) -> np.ndarray:
    """No limit (standard OpenCL), accelos's groups as limits, every other kernel's, or one
    group each (kernels leave and rejoin the walk at every event)."""
    n = S.accelos(p).allocation.column("work_groups").astype(float)
    return {"uncapped": np.full(p.kernel_count, np.inf), "persistent": n,
            "mixed": np.where(np.arange(p.kernel_count) % 2 == 0, n, np.inf),
            "one": np.ones(p.kernel_count)}[caps]


def assert_same_run(p: AccelosProblem, limit: np.ndarray) -> None:
    run = dispatch(p, limit)
    start, finish = one_group_at_a_time(p, limit)
    assert run.start.tolist() == [float(t) for t in start]
    assert run.finish.tolist() == [float(t) for t in finish]


@pytest.mark.slow
@fast(200)
@given(ragged_specs(), st.sampled_from(["uncapped", "persistent", "mixed", "one"]))
def test_dispatch_equals_one_group_at_a_time(spec, caps):
    p = problem(spec)
    assert_same_run(p, limits(p, caps))


@pytest.mark.slow
@fast(100)
@given(ragged_specs(), st.sampled_from(["uncapped", "mixed", "one"]))
def test_dispatch_picks_fitting_demands_with_numpy_the_same(spec, caps):
    """Above ``MANY_DEMANDS`` distinct demands the walk finds those that fit with numpy."""
    p = problem(spec)
    with mock.patch("fairalloc.models.accelos.MANY_DEMANDS", 0):
        assert_same_run(p, limits(p, caps))


def test_standard_opencl_of_a_random_mix_equals_one_group_at_a_time():
    """A 30-kernel mix of the benchmarks' synthetic kernels (25 demands, ten time_per_group
    values from 0.2 to 20), NDRanges cut to at most 60 groups so the reference stays quick."""
    from fairalloc.studies.accelos import random_spec

    spec = random_spec(3, kernels=30)
    for kernel in spec["kernels"]:
        kernel["work_groups"] = min(kernel["work_groups"], 60)
    p = problem(spec)
    run, (start, finish) = execute(p), one_group_at_a_time(p, np.full(p.kernel_count, np.inf))
    assert run.start.tolist() == [float(t) for t in start]
    assert run.finish.tolist() == [float(t) for t in finish]


def test_a_kernel_back_under_its_limit_goes_before_later_kernels_of_its_demand():
    """A (one group resident at most) and B (no limit) of one demand on room for three: each
    time A's group ends, A takes the next one before B (launch order), B the other two."""
    spec = {"problem": "accelos", "device": {"threads": 96, "local_memory": 1, "registers": 1},
            "kernels": [{"id": "A", "work_group_size": 32, "work_groups": 3},
                        {"id": "B", "work_group_size": 32, "work_groups": 10,
                         "time_per_group": 0.5}]}
    p = problem(spec)
    run = dispatch(p, np.array([1, np.inf]))
    assert run.start.tolist() == [0.0, 0.0] and run.finish.tolist() == [3.0, 2.5]
    assert_same_run(p, np.array([1, np.inf]))
