"""The one engine for time: jobs arrive, a mechanism plans their rates, time moves from event
to event. Replays (``fairalloc replay``) and the token game (``fairalloc simulate``) both run on
:func:`run`.

A *job* is anything that arrives at a time and needs some work (infinite: it never finishes,
as the token game's agents). At each event that needs one, a mechanism makes a *plan*: each
active job's progress rate (work/s) until the plan ends. The engine moves time from event to
event: arrivals, completions and the plan's end (a round's end under Gavel's ``rounds``, one
round of the token game). Between two events every rate is constant, so the next completion is
computed (remaining work / rate), never stepped. The run ends when every job finished, when
the watched ones did, at the ``horizon`` (the simulated time to stop at), or when the
mechanism's policy failed.

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
    ``until`` (a round: finished jobs leave their workers idle to its end, arrivals wait)."""

    rates: np.ndarray
    use: np.ndarray
    until: float = math.inf
    held: bool = False


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
        horizon: float = math.inf) -> Timeline:
    """Play ``trace`` (jobs needing ``work``, inf: never done) under ``mechanism`` until every
    job finished (or, with ``watch``, every job at those positions: Gavel stops when its
    measured window is done, jobs still arriving), simulated time reached ``horizon``, or the
    policy failed. ``policy`` (a replay's ``Policy``, None: the mechanism decides alone) gives
    the timeline its verdicts, allocations and solve time."""
    began = time.perf_counter()
    n = trace.n
    arrival = trace.arrival
    remaining = np.asarray(work, dtype=float).copy()
    start = np.full(n, np.nan)
    finish = np.full(n, np.nan)
    intervals: list[tuple[float, float]] = []
    busy: list[np.ndarray] = []
    active = np.empty(0, dtype=np.int64)
    admitted = done = 0
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
            try:
                plan = mechanism.plan(state)
            except PolicyFailed as failure:
                status, error = "error", f"at {failure.time:.1f} s: {failure.message}"
                break
            changed = False
        rates = plan.rates
        running = rates > 0
        left = remaining[active]
        needs = np.divide(left, rates, out=np.full(active.size, math.inf), where=running)
        end = min(_epoch_end(plan, now, next_arrival, needs, running), horizon)
        if math.isinf(end):
            status, error = "error", (f"at {now:.1f} s: the policy leaves all {active.size} "
                                      f"active job(s) idle and no job is still to arrive")
            break
        at = now + needs
        finished = at <= end + FINISH_SLACK_S
        seconds = np.where(running, np.minimum(at, end) - now, 0.0)
        first = running & np.isnan(start[active])
        start[active[first]] = now
        remaining[active] = np.where(finished, 0.0, left - rates * seconds)
        intervals.append((now, end))
        busy.append(plan.use.T @ seconds if plan.use.size else np.zeros(resources))
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
    return Timeline(start, finish, np.array(intervals).reshape(-1, 2),
                    np.array(busy).reshape(-1, resources), verdicts, allocations, solve_s,
                    time.perf_counter() - began, now, status, error)


def _epoch_end(plan: Plan, now: float, next_arrival: float, needs: np.ndarray,
               running: np.ndarray) -> float:
    """When the current plan's stretch of constant rates ends: a held plan (a round) at its
    end, or when nothing runs in it at the next arrival (once none is to come: at the plan's
    end, when the mechanism will act again); otherwise at the first of the next arrival, the
    next completion and the plan's end."""
    if plan.held:
        if running.any():
            return plan.until
        return max(now, next_arrival) if math.isfinite(next_arrival) else plan.until
    return min(plan.until, next_arrival, now + float(needs.min()))
