"""Decayed-usage fair share: any kind's fairness method on weights discounted by each
tenant's recent usage, so that "fair now" and "fair over the last week" meet on one trace.

Production schedulers remember what a tenant used, with a half-life:

* Slurm's classic fair-share factor (``priority/multifactor``,
  https://slurm.schedmd.com/classic_fair_share.html) is ``F = 2^(-U/S)``: ``U`` the account's
  effective usage (its usage decayed with ``PriorityDecayHalfLife``, 7 days by default, over the
  whole cluster's) and ``S`` its normalised shares. A tenant that used exactly its share gets
  1/2, one that used nothing 1, one that used everything 2^(-1/S).
* Kueue's admission fair sharing (https://kueue.sigs.k8s.io/docs/concepts/admission_fair_sharing,
  ``admissionFairSharing``) orders workloads by their LocalQueue's usage decayed with
  ``usageHalfLifeTime`` (e.g. 168h), resources weighted by ``resourceWeights`` and divided by the
  queue's ``fairSharing.weight``.

Here, at each re-allocation at time ``now``, tenant t's decayed usage is

    D_t(now) = D_t(last) 2^(-dt/h) + u_t (h / ln 2) (1 - 2^(-dt/h)),   dt = now - last,

the exact integral of its usage rate ``u_t`` since the last re-allocation decayed with half-life
``h`` (``half_life_s``); ``u_t`` is the sum over its jobs and the resources of the share of the
resource each job held under the allocation in force (every resource weighted 1, as Kueue's
default ``resourceWeights``). Then ``U_t = D_t / sum_s D_s``, ``S_t = 1/T`` (equal shares among
the T tenants seen so far) and each job's weight is its own weight times ``F_t = 2^(-U_t/S_t)``;
the kind's method (``base``) runs on the re-weighted jobs. ``h = 0`` remembers nothing: every
``F_t`` is 1 and the policy is the plain method ("fair now"); ``h`` of a week is "fair over the
last week". Slurm's ``U`` is normalised by the total, so it does not shrink with ``h``: a
half-life far below the time between two re-allocations still discounts a tenant by what it
held since the last one (as AWS Batch's ``shareDecaySeconds`` 0 "measures only current
usage"); only ``h = 0`` is the plain method. (In Slurm, ``PriorityDecayHalfLife=0`` means
no decay at all; here that is a very large ``h``.)

What it simplifies: the usage charged is the allocation's shares (what ``ideal`` applies; under
a mechanism with rounds, what the policy allocated rather than what each round placed); shares
are equal among tenants and flat (no account tree, Slurm's Fair Tree or Kueue's cohorts); no
entry penalty (Kueue) and no reset period (Slurm's ``PriorityUsageResetPeriod``).

The tenant of a job is the trace's ``tenant`` column (each job its own tenant without one: a
decayed least-attained-service). The wrapper names no kind: a kind gives how its problem
carries the jobs' weights (:class:`Weights`), its replay ``usage`` and its methods.
"""

from __future__ import annotations

import dataclasses
import json
import math
from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Any

import numpy as np

from fairalloc.errors import Violations
from fairalloc.replay.clock import LATEST_S
from fairalloc.result import Solution

WEEK_S = 7 * 24 * 3600.0       # Slurm's default PriorityDecayHalfLife (7-0)
KEY = "fair_share"             # the policy's state in the run's memory
CODES = "fair_share_tenants"   # (names, code of each trace position), made once a run


@dataclass(frozen=True)
class Weights:
    """How a kind's problem carries its jobs' weights: ``of(problem) -> (n,)`` and
    ``replaced(problem, weights) -> problem`` the same problem with those weights."""

    of: Callable[[Any], np.ndarray]
    replaced: Callable[[Any, np.ndarray], Any]


def field_weights(name: str) -> Weights:
    """The weights of a problem that is a dataclass with a field ``name`` of per-job weights."""
    return Weights(lambda p: getattr(p, name),
                   lambda p, w: dataclasses.replace(p, **{name: w}))


def decayed(usage, rate, seconds: float, half_life_s: float):
    """Decayed usage after ``seconds`` at usage ``rate`` from ``usage`` (numbers or arrays):
    the exact integral of the rate with half-life ``half_life_s`` (0: nothing remembered; inf:
    nothing forgotten).

    >>> decayed(4.0, 1.0, 10.0, 10.0)      # 4/2 + 1 * (10/ln 2) * (1 - 1/2)
    9.213475204444817
    """
    if half_life_s == 0:
        return usage * 0.0
    if math.isinf(half_life_s):
        return usage + rate * seconds
    kept = 2.0 ** (-seconds / half_life_s)
    return usage * kept + rate * half_life_s / math.log(2) * (1.0 - kept)


@dataclass
class Ledger:
    """Per tenant (codes 0, 1, ...): the decayed usage at ``at``, the usage rate under the
    allocation in force, and whether it was seen (had a job present)."""

    usage: np.ndarray = field(default_factory=lambda: np.zeros(0))
    rate: np.ndarray = field(default_factory=lambda: np.zeros(0))
    seen: np.ndarray = field(default_factory=lambda: np.zeros(0, dtype=bool))
    at: float | None = None

    def advance(self, now: float, half_life_s: float) -> None:
        """Decay to ``now``, charging the rates in force since ``at``."""
        if self.at is not None and now > self.at:
            self.usage = decayed(self.usage, self.rate, now - self.at, half_life_s)
        self.at = now if self.at is None else max(self.at, now)

    def factors(self, codes: np.ndarray) -> np.ndarray:
        """Slurm's ``2^(-U_t/S_t)`` per tenant code, those of ``codes`` now seen: U_t the share
        of all decayed usage, S_t = 1/T equal shares among the T tenants seen."""
        self._fit(int(codes.max(initial=-1)) + 1)
        self.seen[codes] = True
        total = float(self.usage.sum())
        if total <= 0:
            return np.ones(self.usage.size)
        return 2.0 ** (-(self.usage / total) * int(self.seen.sum()))

    def holding(self, codes: np.ndarray, use: np.ndarray) -> None:
        """The usage rates from now on: per tenant, the shares its jobs hold (summed over
        jobs and resources)."""
        per_job = use.sum(axis=1) if use.ndim == 2 else np.asarray(use, dtype=float)
        self._fit(int(codes.max(initial=-1)) + 1)
        self.rate = np.bincount(codes, weights=per_job, minlength=self.usage.size)

    def _fit(self, size: int) -> None:
        grow = size - self.usage.size
        if grow > 0:
            self.usage = np.concatenate([self.usage, np.zeros(grow)])
            self.rate = np.concatenate([self.rate, np.zeros(grow)])
            self.seen = np.concatenate([self.seen, np.zeros(grow, dtype=bool)])


def tenants_of(problem: Any, memory: dict) -> tuple[np.ndarray, np.ndarray]:
    """Each job's tenant code, and the names by code: the trace's ``tenant`` column at the
    active positions (coded once a run), or without one each job its own tenant (its trace
    position, named by its id)."""
    column = memory.get("tenants")
    if column is None:
        active = np.asarray(memory["active"])
        names = np.empty(int(active.max(initial=-1)) + 1, dtype=object)
        names[active] = problem.ids
        return active, names
    if CODES not in memory:
        memory[CODES] = np.unique(np.asarray(column).astype(str), return_inverse=True)
    names, codes = memory[CODES]
    return codes.ravel()[memory["active"]], names


def policy(weights: Weights, usage: Callable[[Any, Any], np.ndarray],
           methods: dict[str, Callable], default: str) -> Callable[..., Solution]:
    """The ``fair-share`` replay policy of a kind: ``base`` (one of ``methods``, ``default``
    unless given) on the jobs re-weighted by their tenants' decayed usage (module docstring).
    It keeps its ledger in the run's ``memory``, which gives the time (``now``)."""

    def fair_share(problem: Any, memory: dict, half_life_s: float = WEEK_S,
                   base: str = default) -> Solution:
        """Decayed-usage fair share (``fairalloc.replay.fairshare``): ``base`` on weights
        discounted by 2^(-U/S), usage decayed with ``half_life_s``."""
        found = Violations()
        check_options({"half_life_s": half_life_s, "base": base}, found)
        if found:
            raise ValueError("; ".join(str(v) for v in found.items))
        if "now" not in memory:
            raise ValueError("fair-share keeps time: run it in a replay (memory has no 'now')")
        codes, names = tenants_of(problem, memory)
        ledger = memory.setdefault(KEY, Ledger())
        ledger.advance(float(memory["now"]), float(half_life_s))
        factor = ledger.factors(codes)
        reweighted = weights.replaced(problem, weights.of(problem) * factor[codes])
        solution = methods[base](reweighted)
        ledger.holding(codes, np.asarray(usage(reweighted, solution.allocation), dtype=float))
        name = solution.solver.get("name", base)
        present = np.unique(codes)
        return dataclasses.replace(solution, solver={
            **solution.solver, "name": f"{name} on decayed fair-share weights",
            "half_life_s": half_life_s,
            "fair_share_factor": dict(zip(names[present].tolist(), factor[present].tolist()))})

    def check_options(options: dict, found: Violations) -> None:
        """A violation for a ``base`` that is no method of the kind (a name: any other JSON
        value too) and a half-life that is no number of seconds from 0 to the latest time a
        replay represents (checked when the replay document is read)."""
        base = options.get("base", default)
        if not isinstance(base, str) or base not in methods:
            found.add("policy.base", f"one of {', '.join(methods)}, not {json.dumps(base)}")
        life = options.get("half_life_s", 0.0)
        if isinstance(life, bool) or not isinstance(life, (int, float)) or \
                not 0 <= life <= LATEST_S:
            found.add("policy.half_life_s", f"a number of seconds from 0 to {LATEST_S:g} (a "
                      f"replay's clock ends there), not {json.dumps(life)}")

    fair_share.check_options = check_options
    # the method it runs, which a mechanism may treat as it treats that method (Gavel's rounds
    # place the jobs of a policy aware of heterogeneity fastest type first)
    fair_share.base_of = lambda options: options.get("base", default)
    return fair_share
