"""The one engine for time (``fairalloc.replay.clock``) on a population that never finishes:
jobs of infinite work, no policy, stopped at a horizon (what the token game plays on)."""

from __future__ import annotations

import math

import numpy as np
import pytest

from fairalloc.replay import clock, engine
from fairalloc.replay.trace import Trace


class Alternate:
    """One job of two runs each round (held rounds of one second), first a, then b, ...;
    remembers what ran."""

    def __init__(self):
        self.log: list[tuple[float, list[int], list[float]]] = []

    def plan(self, state: clock.State) -> clock.Plan:
        rates = np.zeros(state.active.size)
        rates[int(state.now) % state.active.size] = 1.0
        return clock.Plan(rates, rates[:, None], until=state.now + 1, held=True)

    def ran(self, state: clock.State, plan: clock.Plan, seconds: np.ndarray) -> None:
        self.log.append((state.now, state.active.tolist(), seconds.tolist()))


def test_infinite_work_runs_round_by_round_to_the_horizon():
    """Two jobs that never finish, one round a second to the horizon of 4: four rounds,
    alternating, every job's work still infinite, no finish, no verdicts."""
    mechanism = Alternate()
    timeline = clock.run(Trace.of(["a", "b"], [0.0, 0.0]), np.full(2, math.inf), mechanism,
                         resources=1, horizon=4)
    assert timeline.status == "done" and timeline.end == 4
    assert [seconds for _, _, seconds in mechanism.log] == [[1, 0], [0, 1], [1, 0], [0, 1]]
    assert timeline.intervals.tolist() == [[0, 1], [1, 2], [2, 3], [3, 4]]
    assert timeline.busy.ravel().tolist() == [1, 1, 1, 1]
    assert timeline.start.tolist() == [0, 1]
    assert np.isnan(timeline.finish).all()
    assert (timeline.verdicts, timeline.allocations, timeline.solve_s) == ({}, 0, 0.0)


def test_a_running_round_of_infinite_work_is_held_to_its_end():
    """A job arriving mid-round waits for the round's end even when the running job's work is
    infinite (the round is busy, not idle): rounds [0, 1), [1, 2), then both."""
    mechanism = Alternate()
    clock.run(Trace.of(["a", "b"], [0.0, 1.5]), np.full(2, math.inf), mechanism, resources=1,
              horizon=3)
    assert [(now, active) for now, active, _ in mechanism.log] == \
        [(0, [0]), (1, [0]), (2, [0, 1])]


def test_the_horizon_cuts_the_last_plan_and_waits_for_no_arrival():
    """A plan reaching past the horizon runs only to it; a job arriving after it never
    enters."""
    mechanism = Alternate()
    timeline = clock.run(Trace.of(["a", "b"], [0.0, 10.0]), np.full(2, math.inf), mechanism,
                         resources=1, horizon=2.5)
    assert timeline.end == 2.5
    assert timeline.intervals[-1].tolist() == [2, 2.5]
    assert np.isnan(timeline.start[1])


def test_finite_work_still_finishes_before_the_horizon():
    """The horizon does not change a run that ends before it: a job of 1.5 work at rate 1
    finishes at 1.5 (held rounds: the round to 2 is kept, as in Gavel's)."""
    timeline = clock.run(Trace.of(["a"], [0.0]), np.array([1.5]), Alternate(), resources=1,
                         horizon=100)
    assert timeline.finish.tolist() == pytest.approx([1.5])
    assert timeline.end == 2


def test_the_replay_engine_runs_on_the_clock():
    """One engine for time: the replay's ``run`` is the clock's."""
    assert engine.run is clock.run and engine.Plan is clock.Plan


class Table:
    """Rates read from a table (rounds x jobs), each round one second: one plan a round, or
    (``ahead``) every round in one schedule, then whatever is left at constant rate 1."""

    def __init__(self, rates: np.ndarray, ahead: bool):
        self.rates, self.ahead = rates, ahead
        self.seconds: list[np.ndarray] = []

    def plan(self, state: clock.State) -> clock.Plan:
        rounds, r = len(self.rates), int(state.now)
        if r >= rounds:
            ones = np.ones(state.active.size)
            return clock.Plan(ones, ones[:, None])
        rows = self.rates[r:] if self.ahead else self.rates[r]
        rows = rows[..., state.active]
        return clock.Plan(rows, rows[..., None], until=rounds if self.ahead else r + 1,
                          held=True)

    def ran(self, state: clock.State, plan: clock.Plan, seconds: np.ndarray) -> None:
        self.seconds.append(seconds)


def test_a_schedule_of_rounds_by_hand():
    """Rounds [0, 4) planned at once: a (2.5 work) runs rounds 0, 2 and half of 3, ending at
    3.5; b (5 work) runs round 1 only and ends after the schedule, alone at rate 1, at 8."""
    mechanism = Table(np.array([[1.0, 0.0], [0.0, 1.0], [1.0, 0.0], [1.0, 0.0]]), ahead=True)
    timeline = clock.run(Trace.of(["a", "b"], [0.0, 0.0]), np.array([2.5, 5.0]), mechanism,
                         resources=1)
    assert mechanism.seconds[0].tolist() == [[1, 0], [0, 1], [1, 0], [0.5, 0]]
    assert timeline.start.tolist() == [0, 1]
    assert timeline.finish.tolist() == [3.5, 8]
    assert timeline.intervals.tolist() == [[0, 4], [4, 8]]
    assert timeline.busy.ravel().tolist() == [3.5, 4]


@pytest.mark.parametrize("seed", range(20))
def test_a_schedule_plays_as_its_rounds_one_by_one(seed):
    """The same rates planned a round at a time or all at once: the same starts, finishes
    and busy resource-seconds (a job done mid-schedule holds nothing after its work)."""
    rng = np.random.default_rng(seed)
    rates = rng.random((12, 5)) * (rng.random((12, 5)) < 0.6)
    work = rng.random(5) * 6 * (rng.random(5) < 0.8)          # some jobs of no work
    trace = Trace.of([f"j{i}" for i in range(5)], np.zeros(5))
    one, all_ = (clock.run(trace, work, Table(rates, ahead), resources=1)
                 for ahead in (False, True))
    np.testing.assert_allclose(all_.start, one.start)
    np.testing.assert_allclose(all_.finish, one.finish, rtol=1e-12)
    assert all_.end == pytest.approx(one.end, rel=1e-12)
    assert all_.busy.sum() == pytest.approx(one.busy.sum(), rel=1e-12)
    assert all_.busy.sum() == pytest.approx(work.sum(), rel=1e-12)


def test_a_schedule_is_held():
    with pytest.raises(ValueError, match="must be held"):
        clock.Plan(np.ones((2, 3)), np.ones((2, 3, 1)), until=2.0)


def test_a_job_of_no_work_starts_and_ends_alike_in_a_schedule_and_a_round():
    """A job of no work that may run starts and ends at once, planned a round at a time or in
    a schedule (its first running round, here the second)."""
    rates = np.array([[0.0, 1.0], [1.0, 1.0], [1.0, 1.0]])
    for ahead in (False, True):
        mechanism = Table(rates, ahead)
        timeline = clock.run(Trace.of(["a", "b"], [0.0, 0.0]), np.array([0.0, 2.0]),
                             mechanism, resources=1)
        assert timeline.start.tolist() == [1, 0] and timeline.finish.tolist() == [1, 2]
        assert timeline.busy.sum() == 2 and timeline.end == 2
        assert all((seconds[..., 0] == 0).all() for seconds in mechanism.seconds)
