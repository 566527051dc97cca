"""``gandiva`` is Gavel's ``GandivaPolicy`` (stanford-futuredata/gavel
``scheduler/policies/gandiva.py``): random pairs of jobs of one scale factor, kept between
allocations while they are worth it, and an equal share of every type for each pair and each
job left alone; Gavel's rounds place it fastest type first."""

from __future__ import annotations

import random

import numpy as np
import pytest
from clitools import ROOT, cli

from fairalloc import api
from fairalloc.checks.hetero import feasibility
from fairalloc.models.hetero import HeteroProblem, shared_of, time_of
from fairalloc.replay import hetero as replay


class Scripted(random.Random):
    """Draws given in advance, each pool it is asked to draw from recorded: what Gavel's
    ``self._rng.sample(to_be_assigned_combinations, 2)`` calls are asked and answer."""

    def __init__(self, draws: list[tuple[int, int]]):
        super().__init__(0)
        self.draws, self.asked = list(draws), []

    def sample(self, population, k):
        self.asked.append(list(population))
        return list(self.draws.pop(0))


# 4 V100s; by trace position: (scale factor, throughput alone)
JOBS = {0: (1, 2.0), 1: (2, 2.0), 2: (1, 4.0), 3: (2, 2.0), 4: (1, 1.0)}
# jobs 0 and 2 side by side make 1.5 + 2.5 of 2 and 4 steps/s: 0.75 + 0.625 >= 1 of their
# speeds alone; 1 and 3 cannot share (as none of Gavel's pairs of multi-GPU jobs can)
TOGETHER = {(0, 2): (1.5, 2.5)}
GANDIVA_STATE = replay.GANDIVA       # gandiva's state in the run's memory


def problem(active: list[int], together: dict = TOGETHER, workers: float = 4.0
            ) -> HeteroProblem:
    """The active jobs of ``JOBS`` on ``workers`` V100s, with ``together``'s co-located
    throughputs."""
    n = len(active)
    table = np.zeros((len(JOBS), len(JOBS), 1))
    for (a, b), (ta, tb) in together.items():
        table[a, b, 0], table[b, a, 0] = ta, tb
    return HeteroProblem(
        ids=tuple(f"j{i}" for i in active), types=("v100",), workers=np.array([workers]),
        throughput=np.array([[JOBS[i][1]] for i in active]),
        scale=np.array([JOBS[i][0] for i in active], dtype=float), weights=np.ones(n),
        steps=np.full(n, np.nan), elapsed=np.full(n, np.nan),
        pair_class=np.array(active), pair_table=table)


def allocate(active: list[int], memory: dict, **cluster) -> tuple[dict, dict]:
    """One allocation of ``gandiva`` (on ``problem(active, **cluster)``): each job's time alone
    and each pair's time together on the V100s, by trace position; the allocation is
    feasible."""
    p = problem(active, **cluster)
    memory["active"] = np.array(active)
    allocation = replay.gandiva(p, memory).allocation
    assert feasibility(p, allocation).verdict == "holds"
    x, shared = time_of(p, allocation), shared_of(p, allocation)
    alone = {job: float(x[i, 0]) for i, job in enumerate(active) if x[i, 0] > 0}
    together = {} if shared is None else {
        (active[i], active[j]): float(shared[i, j, 0])
        for i, j in zip(*np.nonzero(np.triu(shared[:, :, 0], 1)))}
    return alone, together


def test_gandiva_by_hand():
    """Three allocations on 4 V100s (``gandiva.py`` ``get_allocation``, lines 63-140).

    1st, jobs 0-4 ask for 7 GPUs > 4 (lines 95-102): pack. Unpaired, in arrival order,
    [0, 1, 2, 3, 4]; up to 5 draws (lines 108-124): (0, 1) of scale factors 1 and 2, spent;
    (2, 0) paired; (3, 1) paired from [1, 3, 4]; one job left, no more draws. m = 3 holders,
    each W / (m s) (lines 19-45): the pair (0, 2) and job 4 4/3, cut to 1; the pair (1, 3)
    2/3 of 2 GPUs, left out: it cannot share (0 steps/s together), so 1 and 3 get none.
    2nd, the same jobs: (1, 3)'s normalised throughput is 0 < 1, dropped (lines 86-88);
    (0, 2)'s 1.375, kept. [1, 3, 4] drawn from: (4, 1) spent, (1, 3) paired again, [4]: 3
    holders again. The generator is not drawn from for a kept pair.
    3rd, job 2 finished: its pair is dropped (line 78). Jobs 0, 1, 3, 4 ask for 6 > 4; (1, 3)
    is dropped again and [0, 1, 3, 4] drawn from: (3, 1) paired, (4, 0) paired; 2 holders of
    4 / 2 = 2 GPUs each: (0, 4) 1 (cut), (1, 3) none.
    4th, jobs 0 and 4 only, 2 GPUs <= 4: no packing (line 97), each alone 4 / 2 = 2, cut to
    1; the pair (0, 4), worth 0 (no co-located throughput), is dropped, no draw made."""
    rng = Scripted([(0, 1), (2, 0), (3, 1), (4, 1), (1, 3), (3, 1), (4, 0)])
    memory = {"seed": 0, GANDIVA_STATE: replay.GandivaPairs(rng)}
    assert allocate([0, 1, 2, 3, 4], memory) == ({4: 1.0}, {(0, 2): 1.0})
    assert rng.asked == [[0, 1, 2, 3, 4], [0, 1, 2, 3, 4], [1, 3, 4]]
    assert allocate([0, 1, 2, 3, 4], memory) == ({4: 1.0}, {(0, 2): 1.0})
    assert rng.asked[3:] == [[1, 3, 4], [1, 3, 4]]
    assert memory[GANDIVA_STATE].partner == {0: 2, 2: 0, 1: 3, 3: 1}
    assert allocate([0, 1, 3, 4], memory) == ({}, {})
    assert rng.asked[5:] == [[0, 1, 3, 4], [0, 4]]
    assert memory[GANDIVA_STATE].partner == {1: 3, 3: 1, 4: 0, 0: 4}
    assert allocate([0, 4], memory) == ({0: 1.0, 4: 1.0}, {})
    assert memory[GANDIVA_STATE].partner == {} and not rng.draws



def test_a_pair_worth_less_than_its_jobs_alone_is_dropped():
    """On 2 V100s, a pair making 0.3 + 0.3 of its jobs' speeds alone (normalised 0.6 < 1) is
    drawn and given its share (2 / 2 holders), then dropped at the next allocation and its
    jobs drawn again."""
    poor = {"together": {(0, 2): (0.6, 1.2)}, "workers": 2.0}
    rng = Scripted([(0, 2), (2, 0)])
    memory = {"seed": 0, GANDIVA_STATE: replay.GandivaPairs(rng)}
    assert allocate([0, 2, 4], memory, **poor) == ({4: 1.0}, {(0, 2): 1.0})
    assert allocate([0, 2, 4], memory, **poor) == ({4: 1.0}, {(0, 2): 1.0})
    assert rng.asked == [[0, 2, 4], [0, 2, 4]]


def test_the_same_seed_draws_the_same_pairs():
    """Gavel's generator is Python's ``random.Random`` seeded with the run's seed: the same
    seed, the same pairs (its first draw is ``sample`` of the unpaired jobs); seeds differ."""
    active = [0, 1, 2, 3, 4]
    pairs = {}
    for seed in range(8):
        for _ in range(2):
            memory = {"seed": seed}
            allocate(active, memory)
            partner = memory[GANDIVA_STATE].partner
            assert pairs.setdefault(seed, partner) == partner
        first = random.Random(seed).sample(active, 2)
        if JOBS[first[0]][0] == JOBS[first[1]][0]:
            assert pairs[seed][first[0]] == first[1]
    assert len({tuple(sorted(p.items())) for p in pairs.values()}) > 1


def test_it_keeps_state_across_a_replay_only():
    with pytest.raises(ValueError, match="keeps state across a replay"):
        replay.gandiva(problem([0, 2]), {"seed": 0})


# Gavel's table measures these two on a V100 side by side at their speeds alone
A, B = "ResNet-18 (batch size 32)", "ResNet-18 (batch size 64)"


def finishes(workers: dict, mechanism: str, policy: str = "gandiva",
             models: tuple[str, ...] = (A, B)) -> list[float]:
    """Jobs of ``models``, an hour's work alone on a V100 each, arriving at 0."""
    jobs = [{"id": f"j{i}", "model": m, "duration": 3600.0} for i, m in enumerate(models)]
    run = api.replay({"replay": "gandiva", "kind": "hetero", "cluster": {"workers": workers},
                      "trace": {"jobs": jobs}, "policy": {"method": policy},
                      "mechanism": {"name": mechanism},
                      "measure": {"finish_time_fairness": False}})
    assert run.status == "done"
    return run.jobs["finish"].tolist()


@pytest.mark.parametrize("mechanism", ["rounds", "ideal"])
def test_two_jobs_on_one_gpu_share_it(mechanism):
    """Two jobs on one V100 ask for more than the cluster has: Gandiva pairs them, and side by
    side at their speeds alone both end their hour at 3,600 s; alone in turns, the later
    would end at 7,200 s."""
    assert finishes({"v100": 1}, mechanism) == pytest.approx([3600.0, 3600.0], rel=1e-6)


def test_rounds_visit_the_types_fastest_first():
    """Without pairs each job's share is half of each type, and Gavel's rounds of a packing
    policy visit the types in their fixed order (``scheduler.py`` lines 879-881): the lone job
    runs on the V100 every round, never on the K80 in a shuffled order."""
    alone = finishes({"v100": 1, "k80": 1}, "rounds", models=(A,))
    assert alone == pytest.approx([3600.0], rel=1e-6)


@pytest.mark.parametrize("policy", ["gandiva", "fifo"])
def test_a_spec_is_told_a_replay_policy_runs_over_time(capsys, policy):
    """Gandiva's pairs (as FIFO's queue) are drawn and kept over time: a spec asking for it
    is refused in one line saying where it runs, not as an unknown method."""
    code, out, err = cli(capsys, "solve", str(ROOT / "specs" / "hetero" / "gavel-mix.json"),
                         "--method", policy)
    assert code == 2 and not out
    assert f"options.method: {policy} is a replay policy of hetero, run over time " \
           "(fairalloc replay, policy.method)" in err
    assert "Traceback" not in err
