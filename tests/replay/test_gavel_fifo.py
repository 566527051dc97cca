"""``fifo`` is Gavel's ``FIFOPolicy`` in mode base as its code behaves
(stanford-futuredata/gavel ``scheduler/policies/fifo.py``, ``get_allocation`` from line 74):
the state it keeps between allocations, the type it places a job on, the type it drops from its
list, its random draws, and the over-committed types it leaves to the rounds."""

from __future__ import annotations

import random

import numpy as np
import pytest

from fairalloc import api
from fairalloc.models.hetero import HeteroProblem, time_of
from fairalloc.replay import hetero as replay


class Scripted(random.Random):
    """Draws given in advance, each call's argument recorded: what Gavel's ``randrange`` calls
    are asked and answer."""

    def __init__(self, draws: list[int]):
        super().__init__(0)
        self.draws, self.asked = list(draws), []

    def randrange(self, n):
        self.asked.append(n)
        return self.draws.pop(0)


# types deliberately not in name order: Gavel sorts them by name (fifo.py line 129)
TYPES = ("v100", "k80", "p100")
ANYWHERE = {"v100": 1.0, "k80": 1.0, "p100": 1.0}


def problem(jobs: dict[int, tuple[int, dict[str, float]]]) -> HeteroProblem:
    """Jobs by trace position: (scale factor, throughput per type), on 2 GPUs of each type."""
    n = len(jobs)
    return HeteroProblem(
        ids=tuple(f"j{i}" for i in jobs), types=TYPES, workers=np.full(3, 2.0),
        throughput=np.array([[row.get(t, 0.0) for t in TYPES] for _, row in jobs.values()]),
        scale=np.array([s for s, _ in jobs.values()], dtype=float), weights=np.ones(n),
        steps=np.full(n, np.nan), elapsed=np.full(n, np.nan))


def allotted(jobs: dict[int, tuple[int, dict[str, float]]], memory: dict
             ) -> dict[int, tuple[str, float]]:
    """One allocation of ``fifo`` over ``jobs``: each allotted job's type and time there."""
    p = problem(jobs)
    memory["active"] = np.array(list(jobs))
    x = time_of(p, replay.fifo(p, memory).allocation)
    assert ((x > 0).sum(axis=1) <= 1).all()
    return {job: (TYPES[int(x[i].argmax())], float(x[i].max()))
            for i, job in enumerate(jobs) if x[i].any()}


def test_gavels_fifo_by_hand():
    """Three allocations on 2 K80 + 2 P100 + 2 V100, types listed by name: [k80, p100, v100].

    1st, jobs 0-4 (scale factors 1, 1, 2, 1, 1), all queued (lines 88-90):
      job 0: every type has room, randrange(3) (line 144) -> 0; placed on ``worker_type``,
        the last listed type (line 137's loop variable): v100, 1 free.
      job 1: randrange(3) -> 0; on v100, 0 free: exactly 0, so the type at the draw's index
        is dropped (lines 160-163): k80, which has 2 free. Listed: [p100, v100].
      job 2 (2 GPUs): only p100 has room, randrange(1) -> 0; on v100 all the same (the last
        listed): -2 free, over-committed; not exactly 0, nothing dropped.
      jobs 3 and 4: the same, v100 at -3 then -4.
    2nd, job 0 finished, jobs 5 (1 GPU) and 6 (2 GPUs) arrived; queue [5, 6]:
      lines 96-122 in job order: job 0 first, with nothing subtracted yet v100 shows 2 free, so
      job 5 takes v100 (line 113) although v100 is over-committed; then jobs 1-4 are
      subtracted: v100 -4, p100 2, k80 2. Listed (free > 0): [k80, p100].
      job 6: both have room, randrange(2) -> 1; on p100, the last listed: 0 free, drop the
        type at index 1: p100 itself.
    3rd, jobs 7 (no throughput on k80) and 8 arrived, none finished: v100 -4, p100 0, k80 2;
    listed [k80]:
      job 7: randrange(1) -> 0; the last listed is k80, where it cannot run: skipped (line
        157), its draw made.
      job 8: randrange(1) -> 0; on k80, 1 free.
    The allocation shares an over-committed type by time: the V100s' 2 GPUs among jobs
    needing 6 (1st call) then 6 again (2nd and 3rd: jobs 1-5), a third of the time each."""
    rng = Scripted([0, 0, 0, 0, 0, 1, 0, 0])
    memory = {"seed": 0, replay.GAVEL_FIFO: replay.GavelFifo(rng)}
    first = {0: (1, ANYWHERE), 1: (1, ANYWHERE), 2: (2, ANYWHERE), 3: (1, ANYWHERE),
             4: (1, ANYWHERE)}
    v100 = ("v100", pytest.approx(1 / 3))
    assert allotted(first, memory) == dict.fromkeys(range(5), v100)
    assert rng.asked == [3, 3, 1, 1, 1]
    second = {**{j: first[j] for j in range(1, 5)}, 5: (1, ANYWHERE), 6: (2, ANYWHERE)}
    assert allotted(second, memory) == {**dict.fromkeys(range(1, 6), v100), 6: ("p100", 1.0)}
    assert rng.asked[5:] == [2]
    third = {**second, 7: (1, {"v100": 1.0, "p100": 1.0}), 8: (1, ANYWHERE)}
    assert allotted(third, memory) == {**dict.fromkeys(range(1, 6), v100), 6: ("p100", 1.0),
                                       8: ("k80", 1.0)}
    assert rng.asked[6:] == [1, 1]
    assert sorted(memory[replay.GAVEL_FIFO].allotted) == [1, 2, 3, 4, 5, 6, 8]


def test_fifo_draws_from_pythons_random_seeded_as_gavel_seeds_it():
    """``utils.get_policy`` gives ``FIFOPolicy`` the run's seed: the state starts from
    ``random.Random(seed)``, so its draws are Gavel's."""
    memory = {"seed": 3}
    allotted({0: (1, ANYWHERE)}, memory)
    expected = random.Random(3)
    expected.randrange(3)
    assert memory[replay.GAVEL_FIFO].rng.getstate() == expected.getstate()


def three_types(policy: str, mechanism: dict, jobs: list[dict]) -> object:
    run = api.replay({"replay": "fifo", "kind": "hetero",
                      "cluster": {"workers": {"v100": 1, "p100": 1, "k80": 1}},
                      "trace": {"jobs": jobs}, "policy": {"method": policy},
                      "mechanism": mechanism,
                      "measure": {"finish_time_fairness": False,
                                  "checks": {"every": 1, "names": ["feasibility"]}}})
    assert run.status == "done"
    return run


ARRIVING = [{"id": "a", "arrival": 0, "steps": 10_000, "throughput": ANYWHERE},
            {"id": "b", "arrival": 100, "steps": 10_000, "throughput": ANYWHERE},
            {"id": "c", "arrival": 2_500, "steps": 10_000, "throughput": ANYWHERE}]


def test_jobs_arriving_while_the_v100_is_taken_run_on_the_p100_and_the_k80():
    """Jobs of 10,000 steps at 1 step/s anywhere, on one GPU of each type. a arrives alone:
    the V100, the last of [k80, p100, v100]. Rounds of 360 s re-allocate at a round's start
    once 1,920 s passed since the last re-allocation, or while that was at time 0 (Gavel's
    ``_update_priorities``): at 360 s b (arrived at 100 s) finds the V100 held by a (lines
    119-122), so [k80, p100] are listed and b goes on the P100; at 2,520 s c (arrived at
    2,500 s) finds only the K80 free. Each runs alone from then: a ends at 10,000 s, b at
    10,360 s, c at 12,520 s. (Every job on the V100, as fairalloc's fifo had it, runs them
    in turns there.) Under ``ideal`` each arrival is allocated at once: b ends at 10,100 s,
    c at 12,500 s."""
    rounds = three_types("fifo", {"name": "rounds"}, ARRIVING)
    assert rounds.jobs["start"].tolist() == [0.0, 360.0, 2520.0]
    assert rounds.jobs["finish"].tolist() == pytest.approx([10_000.0, 10_360.0, 12_520.0])
    ideal = three_types("fifo", {"name": "ideal"}, ARRIVING)
    assert ideal.jobs["finish"].tolist() == pytest.approx([10_000.0, 10_100.0, 12_500.0])
    assert min(ideal.summary["utilization"].values()) > 0


AT_ONCE = [{"id": i, "steps": 360, "throughput": {"v100": 3, "p100": 1, "k80": 1}}
           for i in "abc"]


def test_an_over_committed_type_is_run_in_turns_by_the_rounds_and_shared_under_ideal():
    """Three jobs at time 0, seed 0: a goes on the V100, whose free GPUs reach 0, and
    Random(0).randrange(3) is 1, so the P100 is dropped from [k80, p100, v100]; b and c then
    find the K80 with room and go on the V100 (the last listed) too: three jobs allotted one
    V100, time 1 each in Gavel's allocation. The rounds run them in turns (120 s each alone at
    3 steps/s): a ends at 120 s, b at 240 s, c at 360 s; the allocation shares the V100 by
    time, a third each, which ``ideal`` applies: all end at 360 s (1 step/s each) with the
    V100 busy, never beyond, the others idle, and every allocation feasible."""
    rounds = three_types("fifo", {"name": "rounds", "seed": 0}, AT_ONCE)
    assert rounds.jobs["finish"].tolist() == pytest.approx([120.0, 240.0, 360.0])
    ideal = three_types("fifo", {"name": "ideal"}, AT_ONCE)
    assert ideal.jobs["finish"].tolist() == pytest.approx([360.0, 360.0, 360.0])
    assert ideal.summary["utilization"] == pytest.approx({"v100": 1.0, "p100": 0.0,
                                                          "k80": 0.0})
    for run in (rounds, ideal):
        assert run.verdicts["feasibility"]["passed"] is True


def test_the_rounds_take_each_allotted_type_whole_as_gavel(monkeypatch):
    """The same three jobs: the allocation gives each a third of the V100, but the rounds rank
    and credit them by Gavel's allocation, time 1 on the V100 each (its priorities are
    allocation / share of time received, its deficits allocation x elapsed - time received)."""
    seen = []
    reset = replay.Rounds._reset

    def recording(self, state):
        reset(self, state)
        seen.append(self.x[state.active].tolist())

    monkeypatch.setattr(replay.Rounds, "_reset", recording)
    three_types("fifo", {"name": "rounds", "seed": 0}, AT_ONCE)
    assert seen[0] == [[1.0, 0.0, 0.0]] * 3            # the cluster's order: v100, p100, k80


def test_a_job_fifo_never_places_ends_the_run_with_an_error_not_a_hang():
    """A lone job that runs only on the K80: Gavel's FIFO places it on the last listed type,
    the V100, where it cannot run, so it skips it at every allocation (line 157) and its
    simulator would wait forever; the replay ends with status error, saying why."""
    jobs = [{"id": "a", "steps": 720, "throughput": {"k80": 1, "v100": 0}}]
    run = api.replay({"replay": "starved", "kind": "hetero",
                      "cluster": {"workers": {"v100": 1, "k80": 1}}, "trace": {"jobs": jobs},
                      "policy": {"method": "fifo"}, "mechanism": {"name": "rounds"},
                      "measure": {"finish_time_fairness": False}})
    assert run.status == "error"
    assert "leaves all 1 active job(s) idle" in run.summary["error"]
