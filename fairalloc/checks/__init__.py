"""Checks: each computes one property from its definition on the allocation at hand.

Shared here: what a strategy-proofness probe says when it has nothing to re-run, when it found
nothing, how many re-runs it may make (``probe_budget``) and how it re-runs a mechanism (a
failed re-solve is no outcome, never a gain); and how an envy check values every bundle once
per class of alike enviers, not once per pair.
"""

from __future__ import annotations

from collections.abc import Callable, Iterable
from typing import Any

import numpy as np

from fairalloc.errors import SolverError
from fairalloc.result import FAILED, Finding, Solution

PROBE_RUNS = 24        # re-runs of the mechanism a strategy-proofness probe makes at most
# subject-runs: a re-run costs about as much as the solve, which grows with n, so from
# PROBE_WORK / 2 subjects the probe makes about two re-runs and a kind's checks together stay
# within 3x its solve (issue 24; docs/performance.md "Probe budgets")
PROBE_WORK = 2_000

NO_MECHANISM = ("no mechanism to probe: the allocation came from elsewhere "
                "(validate --method M names the mechanism to re-run on misreports)")


def no_mechanism(check: str = "strategy_proofness") -> Finding:
    """The probe is skipped: nothing to re-run on a misreport."""
    return Finding(check, "unchecked", NO_MECHANISM)


def nothing_found(scope: str, check: str = "strategy_proofness") -> Finding:
    """A bounded probe that found no profitable misreport: not a proof, ``unrefuted``."""
    return Finding(check, "unrefuted", f"no profitable misreport found ({scope})")


def probe_budget(n: int, least: int, work: int = PROBE_WORK) -> int:
    """The re-runs a strategy-proofness probe of a spec with ``n`` subjects (users, apps) may
    make: ``PROBE_RUNS`` on small specs (up to ``work / PROBE_RUNS`` subjects), ``work // n``
    on larger ones (a re-run costs about as much as the solve, which grows with n, so the
    probe stays about ``work / n`` solves' worth; a kind whose re-run costs more per subject
    gives a smaller ``work``), never fewer than ``least`` (the kind's smallest useful probe:
    at least one re-run)."""
    return min(PROBE_RUNS, max(least, work // max(n, 1)))


def probe(mechanism: Callable[[Any], Solution], subjects: Iterable[Any],
          misreports: Callable[[Any], list[tuple[str, Any]]],
          reported: Callable[[Any, Any], Any],
          gain: Callable[[Any, str, Any, Solution], dict | None],
          budget: int) -> tuple[dict, int, int]:
    """The one strategy-proofness probe: for each subject in turn, its misreports (label, lie)
    while ``budget`` re-runs last; ``reported(subject, lie)`` is the problem as the liar
    reports it (built only for the lies that run: a large problem is copied for each), and
    each outcome the mechanism has (``rerun``) is scored by ``gain(subject, label, liar,
    outcome)`` -> {"gain": g, ... witness} or None. Returns the best (``{"gain": 0.0}`` when
    none), the subjects probed and the re-runs made."""
    best: dict = {"gain": 0.0}
    probed = runs = 0
    for subject in subjects:
        lies = misreports(subject)[: budget - runs]
        if not lies:
            break
        probed += 1
        for label, lie in lies:
            runs += 1
            liar = reported(subject, lie)
            outcome = rerun(mechanism, liar)
            found = None if outcome is None else gain(subject, label, liar, outcome)
            if found is not None and found["gain"] > best["gain"]:
                best = found
        if runs >= budget:                 # the next subject is not even looked for
            break
    return best, probed, runs


def rerun(mechanism: Callable[[Any], Solution], problem: Any) -> Solution | None:
    """The mechanism on a misreported problem, or None when it has no outcome there
    (infeasible, a solver limit, a solver error)."""
    try:
        outcome = mechanism(problem)
    except SolverError:
        return None
    return None if outcome.status in FAILED else outcome


def alike(key: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """Subjects with equal rows of ``key`` (n, d): (the first subject of each class, each
    subject's class). An envy check whose envier enters the value of a bundle only through
    its key values the n bundles once per class, not once per subject."""
    _, first, cls = np.unique(key, axis=0, return_index=True, return_inverse=True)
    return first, cls.reshape(-1)


def best_of_others(values: Callable[[np.ndarray], np.ndarray], key: np.ndarray,
                   block: int) -> np.ndarray:
    """For each subject i: the largest ``values(reps)[a, j]`` over the subjects j != i, where
    ``values`` gives the rows (len(reps), n) of the classes' first subjects ``reps`` (classes
    of equal ``key`` rows, ``alike``), at most ``block`` entries at once; -inf for a lone
    subject. Classes x n values in all."""
    first, cls = alike(key)
    n = cls.size
    top, best, second = (np.empty(first.size, dtype=int), np.empty(first.size),
                         np.empty(first.size))
    step = max(1, block // max(n, 1))
    for start in range(0, first.size, step):
        chunk = slice(start, start + step)
        rows = values(first[chunk]).astype(float)
        at = np.arange(rows.shape[0])
        top[chunk] = np.argmax(rows, axis=1)
        best[chunk] = rows[at, top[chunk]]
        rows[at, top[chunk]] = -np.inf
        second[chunk] = rows.max(axis=1, initial=-np.inf)
    return np.where(top[cls] == np.arange(n), second[cls], best[cls])
