"""The engine, below the API: solve one spec with one method and judge the allocation.

What ``api.solve``, ``api.compare``, ``api.validate``, sweeps and every study task run: the
method chosen by name with the spec's options, timed apart from the process's one-off start-up
(``fairalloc.startup``), the kind's checks on its allocation, and the guard that a method whose
own allocation fails the feasibility check is a bug. It takes built specs (``fairalloc.spec``)
and never imports the API or the command line.
"""

from __future__ import annotations

import math
import time
from collections.abc import Callable, Collection, Sequence
from dataclasses import dataclass
from typing import Any, TextIO

from fairalloc import startup
from fairalloc.allocation import Allocation
from fairalloc.contract import COMMON_OPTIONS, method_options, solver_info
from fairalloc.errors import SolverError, SpecError, Violation, json_path
from fairalloc.registry import KINDS, Kind
from fairalloc.result import FAILED, Comparison, Finding, Result, Solution, check_column
from fairalloc.solvers import highs
from fairalloc.spec import Spec

MAX_SWEEP_POINTS = 10_000
# HiGHS threads for the checks' re-runs when none were asked for: a strategy-proofness probe
# re-solves up to 24 small misreports, where HiGHS's pool costs more than it gives (ETF's milp
# at 7 apps: 0.23 s a run on one thread, 0.49 s on two; compare of datacenter-mix 11 s, not 19)
CHECK_THREADS = 1
STEP_SLACK = 1e-9     # of a step: a stop this close past the last whole step is reached


@dataclass(frozen=True)
class SolverSettings:
    """The solver keywords of ``solve``, ``compare`` and ``sweep``, checked once."""

    time_limit: float | None = None
    mip_gap: float | None = None
    threads: int | None = None
    log: bool | TextIO | None = None

    def __post_init__(self) -> None:
        highs.check_settings(self.threads, self.mip_gap)

    def solving(self):
        """The settings for the method's own run (its log shown)."""
        return highs.settings(threads=self.threads, mip_gap=self.mip_gap, log=self.log)

    def checking(self):
        """The settings for the checks' re-runs (strategy-proofness probes): no log, and
        ``CHECK_THREADS`` unless threads were asked for (here or by an enclosing block)."""
        threads = self.threads or highs.asked_threads() or CHECK_THREADS
        return highs.settings(threads=threads, mip_gap=self.mip_gap, log=False)

    def asked(self) -> dict:
        """What the caller set, for the result's solver record."""
        return {k: v for k, v in (("mip_gap", self.mip_gap), ("threads", self.threads))
                if v is not None}


def find_method(kind: Kind, name: str | None) -> tuple[str, Callable]:
    """The method ``name`` of the kind (None: its default) and its function; an unknown or
    empty name is a bad spec (``options.method``)."""
    if name is not None and not isinstance(name, str):
        raise TypeError(f"a method is named by a string, not a {type(name).__name__}")
    if name == "":
        raise SpecError([Violation("options.method", "a method name must not be empty")])
    name = name or kind.default
    if name not in kind.methods:
        known = ", ".join(kind.methods)
        if kind.replay is not None and name in kind.replay.policies:
            # a replay policy runs over time, not on a spec: FIFO's queue and Gandiva's
            # pairs are kept across its allocations
            raise SpecError([Violation("options.method", f"{name} is a replay policy of "
                                       f"{kind.name}, run over time (fairalloc replay, "
                                       f"policy.method); a spec's methods: {known}")])
        raise SpecError([Violation("options.method", f"unknown method {name!r} for "
                                   f"{kind.name} (known: {known})")])
    return name, kind.methods[name]


def options(spec: Spec, name: str, run: Callable, strict: bool = True) -> dict:
    """The spec's options for method ``name``: those it declares (``method_options``). With
    ``strict``, an option it does not declare is a bad spec; without (``compare``, where every
    method runs on one spec), it is left out. The options every spec may give
    (``COMMON_OPTIONS``: method, time_limit) are never refused: a method that finishes without
    a limit ignores ``time_limit``."""
    declared = method_options(run)
    given = {k: v for k, v in spec.options.items() if k != "method"}
    foreign = [k for k in given if k not in declared and k not in COMMON_OPTIONS]
    if strict and foreign:
        takes = f"it takes {', '.join(declared)}" if declared else "it takes none"
        raise SpecError([Violation(json_path(["options", k]), f"method {name} does not take "
                                   f"this option ({takes})") for k in foreign])
    return {k: v for k, v in given.items() if k in declared}


def judge(kind: Kind, spec: Spec, allocation: Allocation, mechanism,
          claims: dict | None = None, checks: Collection[str] | None = None) -> list:
    """Every check of the kind (or those named in ``checks``); ``mechanism`` re-runs the method
    (strategy-proofness probes), ``claims`` are the method's own metrics (a theorem bound it
    promises, checked here)."""
    chosen = None if checks is None else {check_column(name) for name in checks}
    findings = (check(spec.problem, allocation, mechanism=mechanism, claims=claims)
                for check in kind.checks if chosen is None or check.__name__ in chosen)
    return [f for f in findings if f is not None]


def mechanism(kind: Kind, spec: Spec, name: str | None, strict: bool = True,
              time_limit: float | None = None,
              probing: bool = False) -> tuple[str, Callable[[Any], Solution]]:
    """The method ``name`` as a mechanism: problem -> Solution with the spec's options;
    ``time_limit`` (seconds) overrides the spec's for a method that takes one and is
    ignored by one that does not (a heuristic has nothing to stop). ``probing``: the
    mechanism the checks re-run, with the kind's ``probe_options`` that the method takes."""
    name, run = find_method(kind, name or spec.options.get("method"))
    chosen = options(spec, name, run, strict)
    if time_limit is not None and "time_limit" in method_options(run):
        chosen["time_limit"] = float(time_limit)
    if probing:
        chosen.update(kind.probing(run))
    return name, lambda problem: run(problem, **chosen)


def feasibility_failure(validation: list[Finding]) -> Finding | None:
    """The feasibility check's finding when it fails, else None."""
    return next((f for f in validation if f.check == "feasibility" and f.verdict == "fails"),
                None)


def check_names(kind: Kind, checks: Collection[str] | None) -> None:
    """Refuse ``checks`` that name no check of the kind (``ValueError``, before anything runs):
    a misspelt name must not quietly select nothing."""
    if checks is None:
        return
    if isinstance(checks, str) or not all(isinstance(c, str) for c in checks):
        raise TypeError(f"checks is a list of check names (strings), not {checks!r}")
    unknown = kind.unknown_checks(checks)
    if unknown:
        raise ValueError(f"no check {', '.join(map(repr, unknown))} in {kind.name} "
                         f"(checks: {', '.join(kind.check_names())})")


def solve(spec: Spec, method: str | None, validate: bool, strict: bool,
          checks: Collection[str] | None = None,
          settings: SolverSettings = SolverSettings()) -> Result:
    """Solve ``spec`` with ``method`` and, with ``validate``, run the chosen checks on its
    allocation (as :func:`fairalloc.api.solve` documents). The solver's ``time_s`` leaves out
    the process's one-off start-up, reported apart as ``start_up_s``; an allocation that fails
    its own feasibility check (the method's status not a failure) is a :class:`SolverError`."""
    kind = KINDS[spec.kind]
    check_names(kind, checks)
    name, run = mechanism(kind, spec, method, strict, settings.time_limit)
    probing = mechanism(kind, spec, method, strict, settings.time_limit, probing=True)[1]
    paid, start = startup.spent(), time.perf_counter()
    with settings.solving():
        solution: Solution = run(spec.problem)
    start_up = startup.spent() - paid        # once per process (the first Pyomo model): apart
    elapsed = time.perf_counter() - start - start_up
    metrics = {**kind.metrics(spec.problem, solution.allocation), **solution.metrics}
    validation = []
    if validate:
        with settings.checking():
            validation = judge(kind, spec, solution.allocation, probing, solution.metrics,
                               checks)
        broken = feasibility_failure(validation)
        if broken is not None and solution.status not in FAILED:
            raise SolverError(f"method {name} produced an allocation that fails its own "
                              f"feasibility check ({solution.status}): {broken.detail}")
    return Result(
        problem=spec.kind,
        method=name,
        status=solution.status,
        objective=solution.objective,
        allocation=solution.allocation,
        metrics=metrics,
        validation=validation,
        solver=solver_info({**solution.solver, "time_s": elapsed, **settings.asked(),
                            **({"start_up_s": start_up} if start_up else {})}),
        name=spec.name,
    )


def validate(spec: Spec, data: Any, method: str | None = None,
             label: str = "allocation") -> Result:
    """Every check of the kind on an allocation made elsewhere (``data``: a result's
    ``allocation`` object, parsed plain; a bad one is a ``SpecError`` naming ``label``);
    ``method`` names the mechanism the strategy-proofness probe re-runs (None: that check is
    ``unchecked``). The status is ``infeasible`` when the feasibility check fails, else
    ``feasible``."""
    kind = KINDS[spec.kind]
    run, solver = None, {"name": "external allocation"}
    if method is not None:
        probe, run = mechanism(kind, spec, method, probing=True)
        solver["probe"] = probe
    try:
        allocation = spec.problem.read_allocation(data)
    except SpecError as exc:
        raise SpecError(exc.violations, label, what="allocation") from None
    validation = judge(kind, spec, allocation, run)
    return Result(
        problem=spec.kind,
        method="external",
        status="infeasible" if feasibility_failure(validation) else "feasible",
        objective=None,
        allocation=allocation,
        metrics=kind.metrics(spec.problem, allocation),
        validation=validation,
        solver=solver_info(solver),
        name=spec.name,
    )


Step = Callable[[str, int, int], None]
"""A progress callback, ``on_step(what, done, total)``: called as each step starts (``what``
the step, ``done`` the steps finished) and once at the end with ``done == total``."""


def compared_methods(kind: Kind, methods: Sequence[str] | None) -> list[str]:
    """The methods ``compare`` runs: ``methods``, else every method of the kind, the exact one
    first; an unknown name is refused (``SpecError``)."""
    exact = [kind.exact] if kind.exact else []
    names = list(methods) if methods else exact + [m for m in kind.methods if m != kind.exact]
    for name in names:
        find_method(kind, name)
    return names


def compare(spec: Spec, methods: Sequence[str] | None = None,
            settings: SolverSettings = SolverSettings(), validate: bool = True,
            checks: Collection[str] | None = None, on_step: Step | None = None) -> Comparison:
    """Every method (or ``methods``) of the spec's kind, the exact one first, solved and
    checked (with ``validate``: every check, or those named in ``checks``); a method that does
    not apply, or whose solver fails, gives its reason instead of a result. Unknown names are
    refused before anything runs. ``on_step`` sees each method start (:data:`Step`)."""
    kind = KINDS[spec.kind]
    names = compared_methods(kind, methods)
    check_names(kind, checks)
    out = Comparison([], spec.kind, spec.name, exact=kind.exact, sense=kind.sense)
    for done, name in enumerate(names):
        if on_step:
            on_step(name, done, len(names))
        try:
            out.append((name, solve(spec, name, validate, strict=False, checks=checks,
                                    settings=settings)))
        except SpecError as exc:
            out.append((name, "; ".join(v.rule for v in exc.violations)))
        except SolverError as exc:
            out.append((name, f"solver error: {exc}"))
    if on_step:
        on_step("done", len(names), len(names))
    return out


def sweep_values(start: float, stop: float, step: float) -> list[float]:
    """Values start, start+step, ... up to stop inclusive (whole numbers stay whole).

    >>> sweep_values(0, 1, 0.25)
    [0.0, 0.25, 0.5, 0.75, 1.0]
    >>> sweep_values(2, 10, 4)
    [2, 6, 10]
    >>> len(sweep_values(1, MAX_SWEEP_POINTS, 1))
    10000
    """
    if not all(math.isfinite(v) for v in (start, stop, step)):
        raise ValueError("start, stop and step must be finite numbers")
    if step == 0 or (stop - start) / step < 0:
        raise ValueError("step must be non-zero and lead from start to stop")
    span = (stop - start) / step + STEP_SLACK      # may overflow to inf for a tiny step
    if not span < MAX_SWEEP_POINTS - 0.5:          # round(span) + 1 points, before rounding
        raise ValueError(f"{span + 1:.6g} points; a sweep takes at most {MAX_SWEEP_POINTS}")
    count = int(round(span)) + 1
    values = [start + i * step for i in range(count)]
    if all(isinstance(v, int) for v in (start, stop, step)):
        return [int(v) for v in values]
    return [round(float(v), 12) for v in values]
