"""The replay engine: a kind's policy over time, on the one engine for time.

Jobs arrive (a :class:`~fairalloc.replay.trace.Trace`), a mechanism turns the policy's
allocations into a *plan* — each active job's progress rate (work/s) until the plan ends — and
the engine moves time from event to event: arrivals, completions and the plan's end (a round's
end under ``rounds``). Between two events every rate is constant, so the next completion is
computed (remaining work / rate), never stepped. The policy is a method of the kind (or one of
its replay policies), called directly on the kind's problem object built from arrays; each
allocation it makes can be judged by the kind's checks (``fairalloc.engine.judge``).

The loop itself, :func:`run` with its :class:`State`, :class:`Plan`, :class:`Mechanism` and
:class:`Timeline`, lives in ``fairalloc.replay.clock`` (it imports nothing of fairalloc, so the
token game of ``fairalloc simulate`` runs on it too); this module adds the policy: the kind's
method called as the mechanisms need it, its verdicts over time, and ``ideal``.

The engine names no kind: a kind takes part through its ``Kind.replay`` record
(``fairalloc.contract.Replay``).
"""

from __future__ import annotations

import copy
import time
from collections.abc import Callable, Collection
from dataclasses import dataclass, field
from typing import Any

import numpy as np

from fairalloc import engine as judging
from fairalloc.contract import Kind, Replay, method_options
from fairalloc.replay.clock import Mechanism, Plan, PolicyFailed, Progress, State, Timeline, run
from fairalloc.result import Finding, Solution
from fairalloc.spec import Spec

__all__ = ["Checking", "Ideal", "Mechanism", "Plan", "Policy", "PolicyFailed", "Progress",
           "State", "Timeline", "Verdicts", "run"]

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
