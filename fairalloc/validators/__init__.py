"""Checks: each computes one property from its definition on the allocation at hand.

Shared here: what a strategy-proofness probe says when it has nothing to re-run, when it found
nothing, and how it re-runs a mechanism (a failed re-solve is no outcome, never a gain).
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

from fairalloc.errors import SolverError
from fairalloc.result import FAILED, Finding, Solution

NO_MECHANISM = ("no mechanism to probe: the allocation came from elsewhere "
                "(validate --method M names the mechanism to re-run on misreports)")


def no_mechanism(check: str = "strategy_proofness") -> Finding:
    """The probe is skipped: nothing to re-run on a misreport."""
    return Finding(check, "unchecked", NO_MECHANISM)


def nothing_found(scope: str, check: str = "strategy_proofness") -> Finding:
    """A bounded probe that found no profitable misreport: not a proof, ``unrefuted``."""
    return Finding(check, "unrefuted", f"no profitable misreport found ({scope})")


def rerun(mechanism: Callable[[Any], Solution], problem: Any) -> Solution | None:
    """The mechanism on a misreported problem, or None when it has no outcome there
    (infeasible, a solver limit, a solver error)."""
    try:
        outcome = mechanism(problem)
    except SolverError:
        return None
    return None if outcome.status in FAILED else outcome
