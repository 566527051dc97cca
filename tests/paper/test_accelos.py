"""Reproduce the accelOS paper's examples (Margiolas & O'Boyle, papers/002_84329e9f1e578df9.txt).

Section 2 (figure 1a: standard OpenCL serialises concurrent kernels; figure 3: two kernels on
4 compute units), section 3 (x_i = T / (K w_i), y_i = L / (K m_i), z_i = R / (K r_i), n_i the
minimum, then a greedy) and section 7.4 (IS_i, U, fairness improvement, overlap, throughput
speedup). Expected values are the paper's printed numbers or worked out by hand in this file,
never read back from fairalloc's formulas.

Figure 3 by hand: 4 compute units holding one 256-thread group each (T = 1024 threads); A has
12 groups, B 8. Standard OpenCL: A, launched first, takes all 4 units (figure 3a) and runs
12 / 4 = 3 waves; B starts when A is done and runs 8 / 4 = 2 waves: A finishes at 3, B at 5
(one time unit per wave). Alone, A takes 3 and B 2, so IS = (1, 2.5) and U = 2.5; the kernels
never co-execute, O = 0. accelOS: x_i = 1024 / (2 * 256) = 2 groups each (figure 3b), A runs
12 / 2 = 6 waves and B 8 / 2 = 4 side by side: IS = (2, 2), U = 1, fairness improvement
2.5 / 1 = 2.5, throughput speedup 5 / 6, O = 4 / 6.
"""

from __future__ import annotations

import json
from pathlib import Path

import numpy as np
import pytest

import fairalloc
from fairalloc.errors import Violations
from fairalloc.models.accelos import AccelosProblem, equal_split, execute, fcfs_counts

PASSING = ("holds", "unrefuted")    # a probe that found nothing is not a failure

SPECS = Path(__file__).resolve().parents[2] / "specs" / "accelos"
FIGURE3 = str(SPECS / "figure3.json")
MIX = str(SPECS / "parboil-mix4.json")


def groups(result) -> dict[str, int]:
    return {k: v["work_groups"] for k, v in result.allocation.to_dict().items()}


def test_figure3_accelos_gives_each_kernel_two_groups():
    result = fairalloc.solve(FIGURE3)
    assert result.method == "accelos"
    assert groups(result) == {"A": 2, "B": 2}
    assert result.allocation["A"]["threads"] == result.allocation["B"]["threads"] == 512
    assert all(f.verdict in PASSING for f in result.validation), result.validation


def test_figure3a_standard_opencl_gives_kernel_a_every_compute_unit():
    result = fairalloc.solve(FIGURE3, "fcfs")
    assert groups(result) == {"A": 4, "B": 0}
    verdict = {f.check: f for f in result.validation}
    assert verdict["feasibility"].holds                            # the device holds it ...
    assert not verdict["all_resident"].holds                       # ... but B waits
    assert verdict["all_resident"].witness["kernels"] == ["B"]


def test_figure3_slowdowns_unfairness_and_speedups():
    m_accelos = fairalloc.solve(FIGURE3).metrics
    m_fcfs = fairalloc.solve(FIGURE3, "fcfs").metrics
    assert (m_fcfs["min_slowdown"], m_fcfs["max_slowdown"]) == (1, 2.5)
    assert m_fcfs["unfairness"] == pytest.approx(2.5)
    assert m_fcfs["overlap"] == 0
    assert m_fcfs["makespan"] == 5
    assert m_fcfs["fairness_improvement"] == m_fcfs["throughput_speedup"] == 1
    assert m_accelos["unfairness"] == pytest.approx(1.0)
    assert m_accelos["fairness_improvement"] == pytest.approx(2.5)
    assert m_accelos["throughput_speedup"] == pytest.approx(5 / 6)
    assert m_accelos["overlap"] == pytest.approx(4 / 6)
    assert m_accelos["antt"] == pytest.approx(2.0)           # mean of IS = (2, 2)
    assert m_fcfs["antt"] == pytest.approx((1 + 2.5) / 2)


def test_figure3_ilp_and_equal_threads_agree():
    assert groups(fairalloc.solve(FIGURE3, "ilp")) == {"A": 2, "B": 2}
    assert groups(fairalloc.solve(FIGURE3, "equal-threads")) == {"A": 2, "B": 2}


def four_saturating_kernels() -> AccelosProblem:
    """Figure 1a: four kernels, each able to fill the device (8 groups of 128 threads on 1024
    threads, with 16, 24, 8 and 32 groups), launched in order."""
    spec = {"device": {"threads": 1024, "local_memory": 65536, "registers": 65536},
            "kernels": [{"id": name, "work_group_size": 128, "work_groups": n}
                        for name, n in zip("ABCD", (16, 24, 8, 32))]}
    return AccelosProblem.from_spec(spec, Violations())


def test_figure1a_standard_opencl_runs_the_kernels_one_after_another():
    p = four_saturating_kernels()
    assert fcfs_counts(p).tolist() == [8, 0, 0, 0]        # the first excludes the rest
    run = execute(p)
    # 2, 3, 1 and 4 waves, each kernel starting when the previous one ends
    assert run.start.tolist() == [0, 2, 5, 6]
    assert run.finish.tolist() == [2, 5, 6, 10]
    assert run.overlap == 0
    # figure 2a's shape: the kernel launched first is slowed least; a short one launched
    # late (C, 1 wave alone) most
    assert run.slowdown.tolist() == [1, 5 / 3, 6, 2.5]


def test_figure1b_accelos_runs_them_side_by_side():
    p = four_saturating_kernels()
    n = equal_split(p)
    assert n.tolist() == [2, 2, 2, 2]                      # 1024 / (4 * 128)
    run = execute(p, n)
    assert run.start.tolist() == [0, 0, 0, 0]
    assert run.finish.tolist() == [8, 12, 4, 16]
    np.testing.assert_allclose(run.slowdown, [4, 4, 4, 4])


def two_kernels(local_memory: int) -> dict:
    """A (256 threads, 4 KiB, 16 registers per thread) and B (64 threads, 8 KiB, 32 registers)
    on T = 2048 threads, R = 32768 registers and the given local memory."""
    return {"problem": "accelos",
            "device": {"threads": 2048, "local_memory": local_memory, "registers": 32768},
            "kernels": [{"id": "A", "work_group_size": 256, "local_memory_per_group": 4096,
                         "registers_per_thread": 16, "work_groups": 100},
                        {"id": "B", "work_group_size": 64, "local_memory_per_group": 8192,
                         "registers_per_thread": 32, "work_groups": 100}]}


def test_section3_min_of_the_three_resources():
    """L = 32 KiB: A gets x = 2048/(2*256) = 4, y = 32768/(2*4096) = 4, z = 32768/(2*4096) = 4;
    B gets x = 16, y = 32768/(2*8192) = 2, z = 32768/(2*2048) = 8, so local memory holds B to 2.
    4 * 4 KiB + 2 * 8 KiB is all the local memory: the greedy adds nothing."""
    result = fairalloc.solve(two_kernels(32768))
    assert groups(result) == {"A": 4, "B": 2}
    assert result.metrics["utilization.local_memory"] == 1
    assert result.metrics["utilization.threads"] == pytest.approx((4 * 256 + 2 * 64) / 2048)


def test_section3_greedy_order_matters():
    """L = 40 KiB: the split is again A 4 (y = 5 now, x and z still 4), B 2; 8 KiB of local
    memory is left. Dominant shares per group: A max(256/2048, 4096/40960, 4096/32768) = 1/8,
    B max(64/2048, 8192/40960, 2048/32768) = 1/5; so A is at 4/8 = 0.5 and B at 2/5 = 0.4.
    Smallest first: B takes the 8 KiB (B at 0.6) and nothing fits any more: (4, 3), min 0.5.
    Round-robin in spec order: A takes 4 KiB, B's 8 KiB no longer fits, A takes the last
    4 KiB: (6, 2), min 0.4. The exact max-min is 0.5, reached only by (4, 3)."""
    assert groups(fairalloc.solve(two_kernels(40960))) == {"A": 4, "B": 3}
    spec = two_kernels(40960) | {"options": {"greedy": "round-robin"}}
    assert groups(fairalloc.solve(spec)) == {"A": 6, "B": 2}
    exact = fairalloc.solve(two_kernels(40960), "ilp")
    assert groups(exact) == {"A": 4, "B": 3}
    assert exact.objective == pytest.approx(0.5)
    verdict = {f.check: f.holds for f in fairalloc.solve(spec).validation}
    assert verdict["pareto_efficiency"] and not verdict["max_min"]


def test_realistic_mix_spec_is_well_formed():
    data = json.loads(Path(MIX).read_text())
    assert [k["id"] for k in data["kernels"]] == ["bfs", "cutcp", "stencil", "tpacf"]
    result = fairalloc.solve(MIX)
    assert all(f.verdict in PASSING for f in result.validation), result.validation
    assert result.metrics["fairness_improvement"] > 1


def test_section3_split_then_greedy_is_not_always_max_min():
    """T = 877 threads, A: 64-thread groups (N = 12), B: 256-thread groups (N = 33). The split
    gives A floor(877 / (2 * 64)) = 6 and B floor(877 / (2 * 256)) = 1: 640 threads, 237 free.
    B has the smaller share (256/877 = 0.29 against 384/877) but its next group needs 256
    threads: it never fits, and A takes the rest (3 groups): (9, 1), min 256/877. Giving up one
    of A's groups first would have fit B's second: (5, 2) has min 320/877 = 0.365, the exact
    max-min. The greedy only adds, so section 3's procedure is not max-min in general."""
    spec = {"problem": "accelos",
            "device": {"threads": 877, "local_memory": 8, "registers": 6},
            "kernels": [{"id": "A", "work_group_size": 64, "work_groups": 12},
                        {"id": "B", "work_group_size": 256, "work_groups": 33}]}
    result = fairalloc.solve(spec)
    assert groups(result) == {"A": 9, "B": 1}
    assert result.objective == pytest.approx(256 / 877)
    verdict = {f.check: f for f in result.validation}
    assert verdict["pareto_efficiency"].holds and not verdict["max_min"].holds
    assert verdict["max_min"].witness["max_min"] == pytest.approx(320 / 877)
    exact = fairalloc.solve(spec, "ilp")
    assert groups(exact) == {"A": 5, "B": 2}
