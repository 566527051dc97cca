"""The one engine for time: jobs arrive, a mechanism plans their rates, time moves from event
to event. Replays (``fairalloc replay``) and the token game (``fairalloc simulate``) both run on
:func:`run`.

A *job* is anything that arrives at a time and needs some work (infinite: it never finishes,
as the token game's agents). At each event that needs one, a mechanism makes a *plan*: each
active job's progress rate (work/s) until the plan ends. The engine moves time from event to
event: arrivals, completions and the plan's end (a round's end under Gavel's ``rounds``, one
round of the token game). Between two events every rate is constant, so the next completion is
computed (remaining work / rate), never stepped; a held plan may also schedule several rounds
ahead, each at its own rates, which the engine plays in one stretch. The run ends when every
job finished, when the watched ones did, at the ``horizon`` (the simulated time to stop at), or
when the mechanism's policy failed.

It names no kind and imports nothing of fairalloc, so any layer can play time on it: a replay
adds a kind's policy on top (``fairalloc.replay.engine``), the token game its mechanisms
(``fairalloc.models.token_game``).
"""

from __future__ import annotations

import math
import time
from dataclasses import dataclass
from typing import Any, Protocol

import numpy as np

FINISH_SLACK_S = 1e-6      # a job whose completion falls within this of an event ends there
# The latest time a replay's clock represents (31.7 years): a double's spacing there is 1.2e-7
# s, an eighth of FINISH_SLACK_S; far later (an arrival at 1e305 s) a job's whole duration is
# below the spacing, and it would start and finish at the same time
LATEST_S = 1e9
PROGRESS_EVERY_S = 0.25    # wall-clock seconds between two progress reports


@dataclass
class State:
    """What a mechanism sees when it plans: the time, the active jobs (positions into the
    trace, in arrival order), every job's remaining work and arrival, and whether the set of
    active jobs changed since the last plan."""

    now: float
    active: np.ndarray
    remaining: np.ndarray
    arrival: np.ndarray
    changed: bool


@dataclass
class Plan:
    """A mechanism's decision: ``rates`` (work/s) per active job and ``use`` (active jobs x
    resources), the share of each resource a job holds while it runs, until ``until`` (inf:
    until the set of jobs changes). ``held``: arrivals and completions take effect only at
    ``until`` (a round: finished jobs leave their workers idle to its end, arrivals wait).

    A held plan may also be a schedule of rounds planned ahead, when nothing that happens
    in them can change what the mechanism does: ``rates`` steps x active jobs and ``use``
    steps x active jobs x resources, the time to ``until`` cut into that many equal steps,
    each at its own rates."""

    rates: np.ndarray
    use: np.ndarray
    until: float = math.inf
    held: bool = False

    def __post_init__(self) -> None:
        if self.rates.ndim == 2 and not self.held:
            raise ValueError("a schedule of rates (steps x jobs) must be held to its end")


class Mechanism(Protocol):
    """How allocations become progress: ``plan`` at each event that needs one, ``ran`` told
    what the plan did between ``start`` and ``end`` (per active job, the seconds it ran)."""

    def plan(self, state: State) -> Plan: ...

    def ran(self, state: State, plan: Plan, seconds: np.ndarray) -> None: ...


class Arrivals(Protocol):
    """The jobs as the engine sees them: how many, and when each arrives (sorted)."""

    @property
    def n(self) -> int: ...

    arrival: np.ndarray


class PolicyFailed(Exception):
    """The policy raised mid-run: the replay ends with status ``error`` at ``time``."""

    def __init__(self, time_s: float, message: str):
        super().__init__(message)
        self.time = time_s
        self.message = message


@dataclass
class Timeline:
    """What a run produced: per job (trace order) its ``start`` (first progress) and
    ``finish`` (NaN: not reached), per plan the interval and the busy resource-seconds, the
    verdicts, and ``status`` (``done`` or ``error`` with ``error`` saying when and why)."""

    start: np.ndarray
    finish: np.ndarray
    intervals: np.ndarray        # (plans, 2): [from, to) of each plan
    busy: np.ndarray             # (plans, resources): resource-seconds in use
    verdicts: dict
    allocations: int
    solve_s: float
    wall_s: float
    end: float
    status: str = "done"
    error: str | None = None


class Progress(Protocol):
    def __call__(self, now: float, done: int, total: int) -> None: ...


def run(trace: Arrivals, work: np.ndarray, mechanism: Mechanism, policy: Any = None,
        resources: int = 0, progress: Progress | None = None, watch: slice | None = None,
        horizon: float = math.inf, budget: float = math.inf) -> Timeline:
    """Play ``trace`` (jobs needing ``work``, inf: never done) under ``mechanism`` until every
    job finished (or, with ``watch``, every job at those positions: Gavel stops when its
    measured window is done, jobs still arriving), simulated time reached ``horizon``, or the
    policy failed. ``policy`` (a replay's ``Policy``, None: the mechanism decides alone) gives
    the timeline its verdicts, allocations and solve time. ``budget``: the most plans the run
    may need (a bound the caller computed at start); a run that needs more ends with status
    ``error`` where it got, so that no run can go on forever."""
    began = time.perf_counter()
    n = trace.n
    arrival = trace.arrival
    remaining = np.asarray(work, dtype=float).copy()
    start = np.full(n, np.nan)
    finish = np.full(n, np.nan)
    intervals, busy = _Rows(2), _Rows(resources)
    active = np.empty(0, dtype=np.int64)
    admitted = done = plans = 0
    now = float(arrival[0]) if n else 0.0
    plan: Plan | None = None
    changed = True
    status, error = "done", None
    reported = time.perf_counter()
    while done < n and now < horizon:
        arrived = int(np.searchsorted(arrival, now, side="right")) if admitted < n else n
        if arrived > admitted:
            active = np.concatenate([active, np.arange(admitted, arrived)])
            admitted, changed = arrived, True
        next_arrival = float(arrival[admitted]) if admitted < n else math.inf
        if active.size == 0:
            now = min(next_arrival, horizon)
            continue
        state = State(now, active, remaining, arrival, changed)
        if plan is None or changed or now >= plan.until:
            if plans >= budget:
                status, error = "error", (f"at {now:.1f} s: stopped after {plans} plans, the "
                                          "most this run can need (bounded from its trace "
                                          "at start)")
                break
            plans += 1
            try:
                plan = mechanism.plan(state)
            except PolicyFailed as failure:
                status, error = "error", f"at {failure.time:.1f} s: {failure.message}"
                break
            changed = False
        left = remaining[active]
        stretch = _Stretch(plan, now, left)
        end = min(_epoch_end(plan, now, next_arrival, stretch), horizon)
        if math.isinf(end):
            status, error = "error", (f"at {now:.1f} s: the policy leaves all {active.size} "
                                      f"active job(s) idle and no job is still to arrive")
            break
        end, at, seconds, worked, ran_from = stretch.to(end)
        finished = at <= end + FINISH_SLACK_S
        first = ~np.isnan(ran_from) & np.isnan(start[active])
        start[active[first]] = ran_from[first]
        remaining[active] = np.where(finished, 0.0, left - worked)
        intervals.add((now, end))
        busy.add(stretch.busy(seconds, resources))
        mechanism.ran(state, plan, seconds)
        if finished.any():
            finish[active[finished]] = at[finished]
            active = active[~finished]
            done += int(finished.sum())
            changed = True
            if watch is not None and np.isfinite(finish[watch]).all():
                now = end
                break
        now = end
        if progress is not None and time.perf_counter() - reported >= PROGRESS_EVERY_S:
            progress(now, done, n)
            reported = time.perf_counter()
    if progress is not None:
        progress(now, done, n)
    verdicts, allocations, solve_s = ({}, 0, 0.0) if policy is None else (
        policy.verdicts.summary(), policy.changes, policy.solve_s)
    return Timeline(start, finish, intervals.rows(), busy.rows(), verdicts, allocations,
                    solve_s, time.perf_counter() - began, now, status, error)


def at_once(arrival: np.ndarray, least: np.ndarray, share: np.ndarray) -> np.ndarray:
    """A lower bound of the jobs active at each instant jobs arrive at, for jobs arriving at
    ``arrival`` (sorted) that cannot finish sooner than ``least`` seconds after it, holding at
    least ``share`` of the cluster meanwhile: the jobs arrived less those that can have ended,
    which are at most those whose earliest end is past and at most as many as the smallest
    cluster-seconds (``least`` x ``share``, of any job) the time since the first arrival
    holds."""
    ended = np.searchsorted(np.sort(arrival + least), arrival, side="right")
    fit = np.searchsorted(np.cumsum(np.sort(least * share)), arrival - arrival[0],
                          side="right") if arrival.size else ended
    last = np.r_[np.flatnonzero(np.diff(arrival) > 0), arrival.size - 1][:arrival.size]
    return (np.arange(1, arrival.size + 1) - np.minimum(ended, fit))[last]


class _Rows:
    """Rows of ``width`` floats added one at a time, kept in an array that doubles as it
    fills (a run of millions of rounds keeps 8 bytes a number, not a Python object each)."""

    def __init__(self, width: int):
        self.data = np.empty((64, width))
        self.count = 0

    def add(self, row) -> None:
        if self.count == len(self.data):
            self.data = np.concatenate([self.data, np.empty_like(self.data)])
        self.data[self.count] = row
        self.count += 1

    def rows(self) -> np.ndarray:
        return self.data[:self.count].copy()


class _Stretch:
    """A plan's rates from ``now`` on, for the active jobs with ``left`` work: constant
    (``rates`` per job), or a schedule (``rates`` steps x jobs: the held plan's time to
    ``until`` in equal steps, each at its own rates)."""

    def __init__(self, plan: Plan, now: float, left: np.ndarray):
        self.plan, self.now, self.left = plan, now, left
        self.steps = plan.rates.ndim == 2
        self.running = (plan.rates > 0).any(axis=0) if self.steps else plan.rates > 0
        # at constant rates, the seconds each job needs to finish (inf: it does not run)
        self.needs = None if self.steps else np.divide(
            left, plan.rates, out=np.full(left.size, math.inf), where=self.running)

    def soonest(self) -> float:
        """The first completion at constant rates (never asked of a schedule: it is held)."""
        return self.now + float(self.needs.min())

    def to(self, end: float) -> tuple:
        """Up to ``end``: when the stretch ends (a schedule whose jobs are all done ends with
        the step the last one ends in, as a round at a time would) and, per job, when its work
        would be done (``at``; past the end: not in this stretch), the seconds it ran (per
        step for a schedule), the work done and when it first ran (NaN: not)."""
        if self.steps:
            return self._scheduled(end)
        rates, now = self.plan.rates, self.now
        at = now + self.needs
        seconds = np.where(self.running, np.minimum(at, end) - now, 0.0)
        return end, at, seconds, rates * seconds, np.where(self.running, now, np.nan)

    def _scheduled(self, end: float) -> tuple:
        rates, now, left = self.plan.rates, self.now, self.left
        steps = rates.shape[0]
        bounds = np.minimum(now + (self.plan.until - now) / steps * np.arange(steps + 1), end)
        done_by = np.cumsum(rates * np.diff(bounds)[:, None], axis=0)   # work at each step's end
        # the step a job's work ends in: the first it runs in with its work done by the step's
        # end (the last step when there is none: its work ends after the stretch, if ever)
        reached = (done_by >= left) & (rates > 0)
        step = np.where(reached.any(axis=0), reached.argmax(axis=0), steps - 1)
        jobs = np.arange(left.size)
        before = np.where(step > 0, done_by[step - 1, jobs], 0.0)
        rate = rates[step, jobs]
        at = np.divide(left - before, rate, out=np.full(left.size, math.inf),
                       where=rate > 0) + bounds[step]
        seconds = np.where(rates > 0, np.clip(np.minimum(bounds[1:, None], at)
                                              - bounds[:-1, None], 0.0, None), 0.0)
        # a step a job ran in: it runs there, and the step is in the stretch and not after its
        # work is done (a job of no work starts and ends in its first running step)
        ran = (rates > 0) & (bounds[:-1, None] <= at) & (bounds[:-1, None] < end)
        began = np.where(ran.any(axis=0), bounds[ran.argmax(axis=0)], np.nan)
        if (at <= end + FINISH_SLACK_S).all():
            end = float(bounds[step.max() + 1])
        return end, at, seconds, (rates * seconds).sum(axis=0), began

    def busy(self, seconds: np.ndarray, resources: int) -> np.ndarray:
        """The resource-seconds in use: each job's share of each resource while it ran."""
        use = self.plan.use
        if not use.size:
            return np.zeros(resources)
        return np.einsum("sj,sjr->r", seconds, use) if self.steps else use.T @ seconds


def _epoch_end(plan: Plan, now: float, next_arrival: float, stretch: _Stretch) -> float:
    """When the current plan's stretch ends: a held plan (a round, or a schedule of rounds)
    at its end, or when nothing runs in it at the next arrival (once none is to come: at the
    plan's end, when the mechanism will act again); otherwise at the first of the next
    arrival, the next completion and the plan's end."""
    if plan.held:
        if stretch.running.any():
            return plan.until
        return max(now, next_arrival) if math.isfinite(next_arrival) else plan.until
    return min(plan.until, next_arrival, stretch.soonest())
