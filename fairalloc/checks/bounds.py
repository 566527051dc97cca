"""Theorem bounds a method claims, checked on the allocation at hand, for any kind.

A method that proves a bound puts it in its metrics as ``bound:<name>`` (``bound:theorem2``);
the kind's bound check (``claimed_bounds(objective, sense, quantity)``) recomputes the objective
from the allocation — never taking the method's word for it — and compares it with every
claim: an upper bound for a ``min`` objective, a lower bound for a ``max`` one.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

from fairalloc.allocation import Allocation
from fairalloc.result import Finding

RTOL = 1e-9


def claims_of(claims: dict | None) -> dict[str, float]:
    """The ``bound:<name>`` entries of a method's metrics (numbers only).

    >>> claims_of({"alpha": 0.5, "bound:theorem1": 12, "bound:none": None})
    {'bound:theorem1': 12.0}
    """
    return {k: float(v) for k, v in (claims or {}).items()
            if k.startswith("bound:") and isinstance(v, (int, float)) and not isinstance(v, bool)}


def within(value: float, bound: float, sense: str) -> bool:
    """Whether ``value`` keeps a bound: at most it for ``min``, at least it for ``max``, up to
    a relative ``RTOL``.

    >>> within(10.0, 10.0 * (1 + 1e-12), "min"), within(9.0, 10.0, "max")
    (True, False)
    """
    slack = RTOL * max(abs(bound), abs(value), 1e-300)
    return value <= bound + slack if sense == "min" else value >= bound - slack


def claimed_bounds(objective: Callable[[Any, Allocation], float], sense: str,
                   quantity: str) -> Callable[..., Finding]:
    """The check of every bound a method claims: ``objective(problem, allocation)`` computes
    the ``quantity`` (e.g. the makespan) from the allocation. One finding: ``holds`` when every
    claim holds, ``fails`` with the first broken claim as witness, ``unchecked`` without one
    (the method proves none, or the allocation came from elsewhere). The finding's name is the
    claim's (``bound:theorem2``), or ``bound`` when there are none or several; the check's own
    name (``fairalloc list``, ``checks=``) is ``bound``."""
    if sense not in ("min", "max"):
        raise ValueError(f"sense is min or max, not {sense!r}")
    relation, broken_relation = ("<=", ">") if sense == "min" else (">=", "<")

    def check(problem, allocation: Allocation, claims: dict | None = None, **_) -> Finding:
        bounds = claims_of(claims)
        if not bounds:
            return Finding("bound", "unchecked", "no bound claimed: the method proves none, or "
                           "the allocation came from elsewhere")
        value = float(objective(problem, allocation))
        name = next(iter(bounds)) if len(bounds) == 1 else "bound"
        parts, broken = [], None
        for claim, bound in bounds.items():
            kept = within(value, bound, sense)
            parts.append(f"{quantity} {value:g} {relation if kept else broken_relation} "
                         f"{claim.split(':', 1)[1]} bound {bound:g}")
            if not kept and broken is None:
                broken = {quantity: value, "bound": bound, "claim": claim}
        if broken is not None and len(bounds) == 1:
            broken.pop("claim")
        return Finding(name, broken is None, "; ".join(parts), broken)

    check.__name__ = check.__qualname__ = "bound"     # as results and --fail-on name it
    return check
