"""The replay engine: one engine for time, for every kind.

Jobs arrive (a :class:`~fairalloc.replay.trace.Trace`), a mechanism turns the policy's
allocations into a *plan* — each active job's progress rate (work/s) until the plan ends — and
the engine moves time from event to event: arrivals, completions and the plan's end (a round's
end under ``rounds``). Between two events every rate is constant, so the next completion is
computed (remaining work / rate), never stepped. The policy is a method of the kind (or one of
its replay policies), called directly on the kind's problem object built from arrays; each
allocation it makes can be judged by the kind's checks (``fairalloc.engine.judge``).

The engine names no kind: a kind takes part through its ``Kind.replay`` record
(``fairalloc.contract.Replay``).
"""

from __future__ import annotations

import copy
import math
import time
from collections.abc import Callable, Collection
from dataclasses import dataclass, field
from typing import Any, Protocol

import numpy as np

from fairalloc import engine as judging
from fairalloc.contract import Kind, Replay, method_options
from fairalloc.result import Finding, Solution
from fairalloc.spec import Spec

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


class PolicyFailed(Exception):
    """The policy raised mid-run: the replay ends with status ``error`` at ``time``."""

    def __init__(self, time_s: float, message: str):
        super().__init__(message)
        self.time = time_s
        self.message = message


@dataclass
class Verdicts:
    """The kind's checks over the allocations of a run: per check the count of each verdict
    and the worst witness (the first failure: time, detail, witness; else the first reason a
    check was not decided)."""

    counts: dict[str, dict[str, int]] = field(default_factory=dict)
    worst: dict[str, dict] = field(default_factory=dict)

    def add(self, now: float, findings: list[Finding]) -> None:
        for f in findings:
            counts = self.counts.setdefault(f.check, {"holds": 0, "fails": 0, "unrefuted": 0,
                                                      "unchecked": 0})
            counts[f.verdict] = counts.get(f.verdict, 0) + 1
            kept = self.worst.get(f.check)
            if f.verdict == "fails" and (kept is None or kept["verdict"] != "fails") or \
                    kept is None and f.verdict != "holds":
                self.worst[f.check] = {"verdict": f.verdict, "time": now, "detail": f.detail,
                                       "witness": f.witness}

    def summary(self) -> dict[str, dict]:
        """Per check: its counts of each verdict, ``passed`` (True: every checked allocation
        held — the run's ✓; False: one failed; None: none failed but some were not decided)
        and the worst witness."""
        out = {}
        for check, counts in self.counts.items():
            passed = False if counts["fails"] else (
                True if counts["unrefuted"] + counts["unchecked"] == 0 else None)
            out[check] = {**counts, "passed": passed, "worst": self.worst.get(check)}
        return out


@dataclass
class Checking:
    """Which checks run on the policy's allocations, and on which: every ``every``-th change
    (1: each), ``names`` None: all of the kind's; ``every`` 0: none."""

    every: int = 0
    names: Collection[str] | None = None


class Policy:
    """The policy as the mechanisms call it: ``allocate(state)`` builds the kind's problem over
    the active jobs, runs the method on it and judges the allocation when due."""

    def __init__(self, kind: Kind, cluster: Any, jobs: Any, name: str, run: Callable,
                 options: dict, checking: Checking, seed: int = 0,
                 tenants: np.ndarray | None = None):
        self.kind, self.replay = kind, kind.replay
        self.cluster, self.jobs = cluster, jobs
        self.name, self.run = name, run
        self.options = dict(options)
        if "memory" in method_options(run):
            # a policy with memory also knows the jobs' tenants (the trace's ``tenant``
            # column, None: each job its own) and, at each call, the time (``now``)
            self.options["memory"] = {"seed": seed, "tenants": tenants}
        self.checking = checking
        self.verdicts = Verdicts()
        self.changes = 0
        self.solve_s = 0.0

    def allocate(self, state: State) -> tuple[Any, Solution]:
        """The kind's problem over the active jobs and the policy's solution on it."""
        remaining = state.remaining[state.active]
        elapsed = state.now - state.arrival[state.active]
        problem = self.replay.problem(self.cluster, self.jobs, state.active, remaining, elapsed)
        if "memory" in self.options:
            self.options["memory"].update(now=state.now, active=state.active)
        began = time.perf_counter()
        try:
            solution = self.run(problem, **self.options)
        except Exception as exc:      # a policy's failure ends the run as an error, not a crash
            raise PolicyFailed(state.now, f"{self.name}: {type(exc).__name__}: {exc}") from exc
        self.solve_s += time.perf_counter() - began
        self.changes += 1
        every = self.checking.every
        if every and (self.changes - 1) % every == 0:
            self.judge(state.now, problem, solution)
        return problem, solution

    def judge(self, now: float, problem: Any, solution: Solution) -> None:
        spec = Spec(self.kind.name, problem, {}, {})
        # a probe re-runs the policy on a changed problem: on a copy of its memory, so that
        # judging never changes what the run does
        findings = judging.judge(self.kind, spec, solution.allocation,
                                 lambda p: self.run(p, **self._probing()),
                                 claims=solution.metrics, checks=self.checking.names)
        self.verdicts.add(now, findings)

    def _probing(self) -> dict:
        if "memory" not in self.options:
            return self.options
        return {**self.options, "memory": copy.deepcopy(self.options["memory"])}


class Ideal:
    """``ideal``: the allocation applied exactly, as time fractions, re-solved whenever the
    set of jobs changes (no rounds, no whole workers, no waiting)."""

    def __init__(self, replay: Replay, policy: Policy):
        self.replay, self.policy = replay, policy

    def plan(self, state: State) -> Plan:
        problem, solution = self.policy.allocate(state)
        return Plan(np.asarray(self.replay.rates(problem, solution.allocation), dtype=float),
                    np.asarray(self.replay.usage(problem, solution.allocation), dtype=float))

    def ran(self, state: State, plan: Plan, seconds: np.ndarray) -> None:
        pass


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


def run(trace, work: np.ndarray, mechanism: Mechanism, policy: Policy, resources: int,
        progress: Progress | None = None, watch: slice | None = None) -> Timeline:
    """Replay ``trace`` (jobs needing ``work``) under ``mechanism`` until every job finished
    (or, with ``watch``, every job at those positions: Gavel stops when its measured window
    is done, jobs still arriving), or the policy failed."""
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
    while done < n:
        arrived = int(np.searchsorted(arrival, now, side="right"))
        if arrived > admitted:
            active = np.concatenate([active, np.arange(admitted, arrived)])
            admitted, changed = arrived, True
        next_arrival = float(arrival[admitted]) if admitted < n else math.inf
        if active.size == 0:
            now = next_arrival
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
        with np.errstate(divide="ignore", invalid="ignore"):
            needs = np.where(rates > 0, remaining[active] / rates, math.inf)
        end = _epoch_end(plan, now, next_arrival, needs)
        if math.isinf(end):
            status, error = "error", (f"at {now:.1f} s: the policy leaves all {active.size} "
                                      f"active job(s) idle and no job is still to arrive")
            break
        ends = np.minimum(now + needs, end)
        finished = now + needs <= end + FINISH_SLACK_S
        seconds = ends - now
        running = rates > 0
        first = running & np.isnan(start[active])
        start[active[first]] = now
        remaining[active] = np.where(finished, 0.0, remaining[active] - rates * seconds)
        finish[active[finished]] = now + needs[finished]
        intervals.append((now, end))
        busy.append(plan.use.T @ np.where(running, seconds, 0.0) if plan.use.size
                    else np.zeros(resources))
        mechanism.ran(state, plan, np.where(running, seconds, 0.0))
        if finished.any():
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
    return Timeline(start, finish, np.array(intervals).reshape(-1, 2),
                    np.array(busy).reshape(-1, resources), policy.verdicts.summary(),
                    policy.changes, policy.solve_s, time.perf_counter() - began, now,
                    status, error)


def _epoch_end(plan: Plan, now: float, next_arrival: float, needs: np.ndarray) -> float:
    """When the current plan's stretch of constant rates ends: a held plan (a round) at its
    end, or when nothing runs in it at the next arrival (once none is to come: at the plan's
    end, when the mechanism will act again); otherwise at the first of the next arrival, the
    next completion and the plan's end."""
    if plan.held:
        if np.isfinite(needs).any():
            return plan.until
        return max(now, next_arrival) if math.isfinite(next_arrival) else plan.until
    return min(plan.until, next_arrival, now + float(needs.min()))
