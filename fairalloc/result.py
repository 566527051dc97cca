"""The result contract (DESIGN.md): statuses, verdicts, findings, solutions and results.

Allocations are in ``fairalloc.allocation``; tables and Markdown in ``fairalloc.render``, which
fills :data:`NOTEBOOK` when it is imported (``import fairalloc`` imports it), so these types
import no renderer.
"""

from __future__ import annotations

import json
from collections.abc import Callable, Iterator
from dataclasses import dataclass, field
from typing import Any, NamedTuple

import numpy as np

from fairalloc.allocation import Allocation, _pandas, plain_value

# ``iteration_limit``: a fixed-point iteration (token's Algorithm 1) stopped at its iteration cap
# without converging; its last iterate is kept, labelled, and the exit code is 1.
STATUSES = ("optimal", "feasible", "heuristic", "infeasible", "time_limit", "iteration_limit")
FAILED = ("infeasible", "time_limit", "iteration_limit")

VERDICTS = ("holds", "fails", "unrefuted", "unchecked")
MARKS = {"holds": "✓", "fails": "✗", "unrefuted": "~", "unchecked": "–"}
MEANINGS = {"holds": "proved on this allocation", "fails": "refuted, with a witness",
            "unrefuted": "a bounded probe found no counterexample",
            "unchecked": "not checked (the detail says why)"}

# How a notebook shows a result and a comparison ("result.markdown", "result.html",
# "comparison.markdown", "comparison.html" -> function of the object to its text): set by
# fairalloc.render at import, so that the result types import no renderer.
NOTEBOOK: dict[str, Callable[[Any], str]] = {}


def ratio_to(value: float | None, reference: float | None, sense: str) -> float | None:
    """How many times worse ``value`` is than ``reference`` for an objective of this sense:
    value / reference for ``min``, reference / value for ``max``, so 1 is as good and above 1
    is worse either way; None when either is missing or not positive (no ratio means anything).

    >>> ratio_to(12.0, 10.0, "min"), ratio_to(8.0, 10.0, "max"), ratio_to(0.0, 10.0, "max")
    (1.2, 1.25, None)
    """
    if value is None or reference is None or value <= 0 or reference <= 0:
        return None
    return value / reference if sense == "min" else reference / value


def ratio_header(reference: str, sense: str) -> str:
    """The column head of ``ratio_to``: ``÷ exact`` (objective ÷ exact) for min, ``exact ÷``
    for max."""
    return f"÷ {reference}" if sense == "min" else f"{reference} ÷"


def check_column(check: str) -> str:
    """The column a check shares with its kin in tables and plots: every method's own bound
    (``bound:theorem2``, ``bound:theorem5``, ``bound`` when none is claimed) is ``bound``."""
    return "bound" if check.split(":")[0] == "bound" else check


@dataclass(frozen=True)
class Finding:
    """The verdict of one check on one allocation; a failure carries a witness.

    ``verdict`` is one of :data:`VERDICTS`; a check that decided the whole property may pass
    its outcome as a bool (True: ``holds``, False: ``fails``).

    >>> Finding("envy_freeness", False, "u1 envies u2", {"envious": "u1"}).to_dict()["holds"]
    False
    >>> Finding("strategy_proofness", "unrefuted", "24 misreports").holds is None
    True
    """

    check: str
    verdict: str | bool
    detail: str
    witness: Any = None

    def __post_init__(self) -> None:
        # plain Python numbers in witnesses (1.5, not np.float64(1.5)); infinities kept
        object.__setattr__(self, "witness", plain_value(self.witness, finite=False))
        verdict = self.verdict
        if isinstance(verdict, (bool, np.bool_)):
            object.__setattr__(self, "verdict", "holds" if verdict else "fails")
        elif verdict not in VERDICTS:
            raise ValueError(f"verdict must be one of {', '.join(VERDICTS)}, not {verdict!r}")

    @property
    def holds(self) -> bool | None:
        """True only when the property was proved, False only when refuted, else None."""
        return {"holds": True, "fails": False}.get(self.verdict)

    @property
    def mark(self) -> str:
        return MARKS[self.verdict]

    def to_dict(self) -> dict:
        return {
            "check": self.check,
            "verdict": self.verdict,
            "holds": self.holds,
            "detail": self.detail,
            "witness": plain_value(self.witness),
        }


@dataclass
class Solution:
    """What a method returns: an allocation, its status and what the method knows about it."""

    allocation: Allocation
    status: str
    objective: float | None = None
    metrics: dict = field(default_factory=dict)
    solver: dict = field(default_factory=dict)


class ResultFrames(NamedTuple):
    """A result as pandas DataFrames (``Result.to_pandas``)."""

    allocation: Any
    metrics: Any
    checks: Any


def flat_metrics(metrics: dict, prefix: str = "") -> Iterator[tuple[str, Any]]:
    """(name, value) of every metric, a nested one named by its keys joined with dots.

    >>> dict(flat_metrics({"a": 1, "sim": {"lottery": {"performance": 2.5}}}))
    {'a': 1, 'sim.lottery.performance': 2.5}
    """
    for name, value in metrics.items():
        if isinstance(value, dict):
            yield from flat_metrics(value, f"{prefix}{name}.")
        else:
            yield f"{prefix}{name}", value


@dataclass(repr=False)
class Result:
    """One solved (or validated) spec: the contract's ``fairalloc solve --format json`` object."""

    problem: str
    method: str
    status: str
    objective: float | None
    allocation: Allocation
    metrics: dict
    validation: list[Finding]
    solver: dict
    name: str | None = None

    def finding(self, check: str) -> Finding:
        return next(f for f in self.validation if f.check == check)

    def to_dict(self, allocation: bool = True) -> dict:
        out = {
            "name": self.name,
            "problem": self.problem,
            "method": self.method,
            "status": self.status,
            "objective": plain_value(self.objective),
            "allocation": self.allocation.to_dict() if allocation else None,
            "metrics": plain_value(self.metrics),
            "validation": [f.to_dict() for f in self.validation],
            "solver": plain_value(self.solver),
        }
        if not allocation:
            del out["allocation"]
        return out

    @classmethod
    def from_dict(cls, data: dict) -> Result:
        """The result whose contract object (``to_dict``) is ``data``, as a study row keeps it
        (``fairalloc sweep --format json`` prints it)."""
        findings = [Finding(f["check"], f["verdict"], f["detail"], f.get("witness"))
                    for f in data["validation"]]
        return cls(data["problem"], data["method"], data["status"], data["objective"],
                   Allocation.from_dict(data["allocation"]), data["metrics"], findings,
                   data["solver"], data.get("name"))

    def __repr__(self) -> str:
        checks = ", ".join(f"{f.check} {f.mark}" for f in self.validation)
        objective = "none" if self.objective is None else f"{self.objective:.6g}"
        return (f"<Result {self.name or self.problem}: {self.problem}/{self.method} "
                f"{self.status}, objective {objective}, {len(self.allocation)} ids"
                f"{'; ' + checks if checks else ''}>")

    def _repr_markdown_(self) -> str:
        """Jupyter shows a result as its Markdown report (as ``--format markdown``)."""
        return NOTEBOOK["result.markdown"](self)

    def _repr_html_(self) -> str:
        """Jupyter shows a result as HTML tables, each witness on expand."""
        return NOTEBOOK["result.html"](self)

    def to_pandas(self) -> ResultFrames:
        """The allocation (indexed by id), metrics (one row per dotted name) and checks (one
        row per check: verdict, detail, witness) as pandas DataFrames; pandas is optional."""
        pd = _pandas("Result.to_pandas")
        metrics = dict(flat_metrics(plain_value(self.metrics, finite=False)))
        return ResultFrames(
            allocation=self.allocation.to_pandas(),
            metrics=pd.DataFrame({"value": list(metrics.values())},
                                 index=pd.Index(list(metrics), name="metric")),
            checks=pd.DataFrame([{k: v for k, v in f.to_dict().items() if k != "holds"}
                                 for f in self.validation],
                                columns=["check", "verdict", "detail", "witness"]))

    def to_json(self) -> str:
        """The result as indented JSON, the allocation one id per line."""
        return "".join(self.json_chunks())

    def json_chunks(self) -> Iterator[str]:
        """``to_json`` in pieces (the allocation a few thousand ids a piece), for a writer that
        need not hold the whole text."""
        marker = "\u0000allocation\u0000"
        head = {**self.to_dict(allocation=False), "allocation": marker}
        order = ["name", "problem", "method", "status", "objective", "allocation"]
        head = {k: head[k] for k in order} | {k: v for k, v in head.items() if k not in order}
        before, after = json.dumps(head, indent=2, allow_nan=False).split(json.dumps(marker), 1)
        yield before
        yield from self.allocation.json_chunks("  ")
        yield after


class Comparison(list):
    """What ``compare`` returns: a list of (method, Result) pairs — (method, reason) for a
    method that does not apply — that a notebook shows as the comparison table with every
    verdict (each witness on expand in HTML). ``exact`` is the kind's exact method (None: none)
    and ``sense`` its objective's direction, which the table's ratio column needs."""

    def __init__(self, rows, kind: str, name: str | None = None, *,
                 exact: str | None = None, sense: str = "max") -> None:
        super().__init__(rows)
        self.kind = kind
        self.name = name
        self.exact = exact
        self.sense = sense

    @property
    def title(self) -> str:
        return f"{self.name or self.kind} — every {self.kind} method"

    def _repr_markdown_(self) -> str:
        return NOTEBOOK["comparison.markdown"](self)

    def to_pandas(self):
        """One row per method (the index): status, objective, time_s, the ``ratio`` to the
        exact method (1 = as good; ``ratio_to``) and whether that reference is proven
        optimal, the solver's gap and bound, ``check.<name>`` verdicts and ``metric.<name>``
        numbers; a method that does not apply has status ``n/a`` and its ``reason``."""
        pd = _pandas("Comparison.to_pandas")
        reference = next((r for m, r in self if m == self.exact and isinstance(r, Result)),
                         None)
        rows = []
        for method, r in self:
            if not isinstance(r, Result):
                rows.append({"method": method, "status": "n/a", "reason": str(r)})
                continue
            rows.append({
                "method": method, "status": r.status, "objective": r.objective,
                "time_s": r.solver.get("time_s"),
                "ratio": ratio_to(r.objective, reference.objective, self.sense)
                if reference else None,
                "reference_proven": reference.status == "optimal" if reference else None,
                "gap": r.solver.get("gap"), "bound": r.solver.get("bound"),
                **{f"check.{f.check}": f.verdict for f in r.validation},
                **{f"metric.{k}": v for k, v in flat_metrics(plain_value(r.metrics,
                                                                         finite=False))}})
        return pd.DataFrame(rows).set_index("method")

    def _repr_html_(self) -> str:
        return NOTEBOOK["comparison.html"](self)
