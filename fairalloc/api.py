"""The Python API, mirroring the command line: load_spec, solve, compare, validate, sweep."""

from __future__ import annotations

import math
import time
from collections.abc import Callable, Collection, Iterable, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any, TextIO

from fairalloc import startup
from fairalloc.allocation import Allocation
from fairalloc.contract import method_options, solver_info
from fairalloc.errors import SolverError, SpecError, Violation, json_path
from fairalloc.registry import KINDS, Kind
from fairalloc.result import FAILED, Comparison, Finding, Result, Solution, check_column
from fairalloc.solvers import highs
from fairalloc.spec import COMMON_OPTIONS, Spec, build, load_spec, plain, read_json, set_path

SpecLike = Spec | str | Path | dict
MAX_SWEEP_POINTS = 10_000


def _spec(spec: SpecLike) -> Spec:
    return spec if isinstance(spec, Spec) else load_spec(spec)


def _method(kind: Kind, name: str | None) -> tuple[str, Callable]:
    if name is not None and not isinstance(name, str):
        raise TypeError(f"a method is named by a string, not a {type(name).__name__}")
    if name == "":
        raise SpecError([Violation("options.method", "a method name must not be empty")])
    name = name or kind.default
    if name not in kind.methods:
        known = ", ".join(kind.methods)
        raise SpecError([Violation("options.method", f"unknown method {name!r} for "
                                   f"{kind.name} (known: {known})")])
    return name, kind.methods[name]


def _options(spec: Spec, name: str, run: Callable, strict: bool = True) -> dict:
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


def _judge(kind: Kind, spec: Spec, allocation: Allocation, mechanism,
           claims: dict | None = None, checks: Collection[str] | None = None) -> list:
    """Every check of the kind (or those named in ``checks``); ``mechanism`` re-runs the method
    (strategy-proofness probes), ``claims`` are the method's own metrics (a theorem bound it
    promises, checked here)."""
    chosen = None if checks is None else {check_column(name) for name in checks}
    findings = (check(spec.problem, allocation, mechanism=mechanism, claims=claims)
                for check in kind.validators if chosen is None or check.__name__ in chosen)
    return [f for f in findings if f is not None]


def _mechanism(kind: Kind, spec: Spec, name: str | None, strict: bool = True,
               time_limit: float | None = None,
               probing: bool = False) -> tuple[str, Callable[[Any], Solution]]:
    """The method ``name`` as a mechanism: problem -> Solution with the spec's options;
    ``time_limit`` (seconds) overrides the spec's for a method that takes one and is
    ignored by one that does not (a heuristic has nothing to stop). ``probing``: the
    mechanism the checks re-run, with the kind's ``probe_options`` that the method takes."""
    name, run = _method(kind, name or spec.options.get("method"))
    options = _options(spec, name, run, strict)
    if time_limit is not None and "time_limit" in method_options(run):
        options["time_limit"] = float(time_limit)
    if probing:
        options.update(kind.probing(run))
    return name, lambda problem: run(problem, **options)


def method_of(spec: SpecLike, method: str | None = None) -> str:
    """The method ``solve`` runs on this spec (``method``, else the spec's, else the kind's
    default), after checking its name and the spec's options for it (``SpecError``)."""
    spec = _spec(spec)
    return _mechanism(KINDS[spec.kind], spec, method)[0]


def _feasibility_failure(validation: list[Finding]) -> Finding | None:
    return next((f for f in validation if f.check == "feasibility" and f.verdict == "fails"),
                None)


def solve(spec: SpecLike, method: str | None = None, validate: bool = True, *,
          checks: Collection[str] | None = None, strict: bool = True,
          time_limit: float | None = None, mip_gap: float | None = None,
          threads: int | None = None, log: bool | TextIO | None = None) -> Result:
    """Solve a spec with ``method`` (default: the spec's ``options.method``, then the kind's
    default) and, unless ``validate=False``, run every check of the kind (or those named in
    ``checks``, as ``fairalloc list`` names them; an unknown name is a ``ValueError``) on the
    allocation. With ``strict=False`` the spec's options that ``method`` does not take are
    left out (as ``compare`` does, where every method runs on one spec) instead of refused.
    ``time_limit`` (seconds) bounds a method that takes a limit (an exact one); its result is
    then ``time_limit`` with the best allocation found. Solver keywords reach every HiGHS run
    of the method: ``mip_gap`` (relative gap at which a MILP may stop; stopping above the
    method's own gap makes the result ``feasible``, not ``optimal``), ``threads`` and ``log``
    (True, or a text stream: HiGHS's log as it runs; standard error for True).

    A method whose own allocation fails the feasibility check is a bug, never a result: it
    raises :class:`SolverError` rather than print an infeasible allocation as a solution.
    """
    knobs = Knobs(time_limit, mip_gap, threads, log)
    return _solve(_spec(spec), method, validate, strict, checks, knobs)


@dataclass(frozen=True)
class Knobs:
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
        """The settings for the checks' re-runs (strategy-proofness probes): no log."""
        return highs.settings(threads=self.threads, mip_gap=self.mip_gap, log=False)

    def asked(self) -> dict:
        """What the caller set, for the result's solver record."""
        return {k: v for k, v in (("mip_gap", self.mip_gap), ("threads", self.threads))
                if v is not None}


def _check_names(kind: Kind, checks: Collection[str] | None) -> None:
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


def _solve(spec: Spec, method: str | None, validate: bool, strict: bool,
           checks: Collection[str] | None = None, knobs: Knobs = Knobs()) -> Result:
    kind = KINDS[spec.kind]
    _check_names(kind, checks)
    name, mechanism = _mechanism(kind, spec, method, strict, knobs.time_limit)
    probing = _mechanism(kind, spec, method, strict, knobs.time_limit, probing=True)[1]
    paid, start = startup.spent(), time.perf_counter()
    with knobs.solving():
        solution: Solution = mechanism(spec.problem)
    start_up = startup.spent() - paid        # once per process (the first Pyomo model): apart
    elapsed = time.perf_counter() - start - start_up
    metrics = {**kind.metrics(spec.problem, solution.allocation), **solution.metrics}
    validation = []
    if validate:
        with knobs.checking():
            validation = _judge(kind, spec, solution.allocation, probing, solution.metrics,
                                checks)
        broken = _feasibility_failure(validation)
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
        solver=solver_info({**solution.solver, "time_s": elapsed, **knobs.asked(),
                            **({"start_up_s": start_up} if start_up else {})}),
        name=spec.name,
    )


def validate(spec: SpecLike, allocation: Any = None, method: str | None = None) -> Result:
    """Check an allocation produced elsewhere (a result's ``allocation`` object, a whole result,
    or a path to a JSON file holding either); without one, solve with ``method`` and check.

    With an allocation, ``method`` names the mechanism that the strategy-proofness probe re-runs
    on misreports (without one that check is ``unchecked``). The status follows from the checks:
    ``infeasible`` when the feasibility check fails, else ``feasible``.
    """
    spec = _spec(spec)
    if allocation is None:
        return solve(spec, method)
    label = "allocation"
    if isinstance(allocation, Result):
        allocation = allocation.allocation
    if isinstance(allocation, (str, Path)):
        allocation, label = read_json(allocation, what="allocation")   # parsed plain
    else:
        allocation = plain(allocation, label, what="allocation")
    kind = KINDS[spec.kind]
    mechanism, solver = None, {"name": "external allocation"}
    if method is not None:
        probe, mechanism = _mechanism(kind, spec, method, probing=True)
        solver["probe"] = probe
    try:
        alloc = spec.problem.read_allocation(allocation)
    except SpecError as exc:
        raise SpecError(exc.violations, label, what="allocation") from None
    validation = _judge(kind, spec, alloc, mechanism)
    return Result(
        problem=spec.kind,
        method="external",
        status="infeasible" if _feasibility_failure(validation) else "feasible",
        objective=None,
        allocation=alloc,
        metrics=kind.metrics(spec.problem, alloc),
        validation=validation,
        solver=solver_info(solver),
        name=spec.name,
    )


def compare(spec: SpecLike, methods: Sequence[str] | None = None, *,
            time_limit: float | None = None, mip_gap: float | None = None,
            threads: int | None = None, log: bool | TextIO | None = None) -> Comparison:
    """Solve with every method (or ``methods``) of the spec's kind, exact method first
    (``time_limit``: seconds for each method that takes a limit; ``mip_gap``, ``threads``,
    ``log`` as for :func:`solve`).

    Returns a :class:`~fairalloc.result.Comparison`: a list of (method, Result) pairs (a
    method that does not apply to this spec gives (method, reason) instead) that a notebook
    shows as the comparison table.
    """
    if isinstance(methods, str) or not (methods is None or isinstance(methods, Sequence)):
        raise TypeError(f"methods is a list of method names, not a {type(methods).__name__}")
    knobs = Knobs(time_limit, mip_gap, threads, log)
    spec = _spec(spec)
    kind = KINDS[spec.kind]
    exact = [kind.exact] if kind.exact else []
    names = list(methods) if methods else exact + [m for m in kind.methods if m != kind.exact]
    for name in names:
        _method(kind, name)
    out = Comparison([], spec.kind, spec.name)
    for name in names:
        try:
            out.append((name, _solve(spec, name, validate=True, strict=False, knobs=knobs)))
        except SpecError as exc:
            out.append((name, "; ".join(v.rule for v in exc.violations)))
        except SolverError as exc:
            out.append((name, f"solver error: {exc}"))
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
    span = (stop - start) / step + 1e-9            # may overflow to inf for a tiny step
    if not span < MAX_SWEEP_POINTS - 0.5:          # round(span) + 1 points, before rounding
        raise ValueError(f"{span + 1:.6g} points; a sweep takes at most {MAX_SWEEP_POINTS}")
    count = int(round(span)) + 1
    values = [start + i * step for i in range(count)]
    if all(isinstance(v, int) for v in (start, stop, step)):
        return [int(v) for v in values]
    return [round(float(v), 12) for v in values]


def sweep(
    spec: SpecLike, key: str, values: Iterable[Any], method: str | None = None,
    on_step: Callable[[Any, Result], None] | None = None, *, time_limit: float | None = None,
    mip_gap: float | None = None, threads: int | None = None, log: bool | TextIO | None = None,
) -> list[tuple[Any, Result]]:
    """Re-solve the spec with the value at ``key`` (e.g. ``knob``, ``users[0].weight``) set to
    each of ``values``; every variant is checked like a fresh spec (``time_limit``: seconds
    for a method that takes a limit; ``mip_gap``, ``threads``, ``log`` as for :func:`solve`).
    ``fairalloc sweep`` runs the same as a study."""
    knobs = Knobs(time_limit, mip_gap, threads, log)
    base = _spec(spec)
    out = []
    for value in values:
        try:
            variant = build(set_path(base.raw, key, value), base.source)
        except SpecError as exc:
            raise SpecError(exc.violations, f"{base.source or 'spec'} with {key}={value}") from None
        result = _solve(variant, method, True, True, None, knobs)
        out.append((value, result))
        if on_step:
            on_step(value, result)
    return out


def run_study(study: str | Path | dict, store: str | Path | None = None, *,
              resume: bool = False, workers: int | None = None,
              cluster: tuple[str, int | str] | None = None) -> dict:
    """Run a study (a study spec file, or its data) into the DuckDB ``store`` (None: in
    memory) as ``fairalloc study run`` does, and return its ``results`` rows: column -> numpy
    array (numbers with NaN for null). ``workers``: a whole number of local processes (None:
    as many as help); ``cluster``: ``("local", N)`` or ``("address", "tcp://HOST:PORT")``, or
    the same as text (``"local:N"``, ``"tcp://HOST:PORT"``). A run interrupted by Ctrl-C
    raises ``KeyboardInterrupt`` after storing what arrived (``resume=True`` continues it).

    Raises ``SpecError`` for a bad study, ``StoreError`` for a store that cannot take it (not
    a fairalloc store, damaged, or holding the study already, or with its spec files
    changed since it ran), ``TypeError`` or ``ValueError`` for a bad argument.

    >>> rows = run_study({"study": "doc", "kind": "drf", "seed": 1, "methods": ["lp"],
    ...                   "instances": {"generate": {"users": 3}, "count": 2}}, workers=1)
    >>> rows["status"].tolist(), rows["ratio"].tolist()
    (['optimal', 'optimal'], [1.0, 1.0])
    """
    from fairalloc.studies.plan import load_study
    from fairalloc.studies.run import run_study as run
    from fairalloc.studies.store import Store

    _check_run_arguments(study, store, resume, workers)
    cluster = _cluster(cluster)
    plan = load_study(study)
    with Store(store) as db:
        if run(plan, db, resume=resume, workers=workers, cluster=cluster).interrupted:
            raise KeyboardInterrupt
        return db.rows(plan.name)


def _check_run_arguments(study: Any, store: Any, resume: Any, workers: Any) -> None:
    """Refuse arguments of ``run_study`` of the wrong type or range (TypeError, ValueError)."""
    if not isinstance(study, (str, Path, dict)):
        raise TypeError(f"a study is a dict, a file path or '-' (standard input), not "
                        f"{type(study).__name__}")
    if store is not None and not isinstance(store, (str, Path)):
        raise TypeError(f"store is a file path (str or Path) or None (in memory), not "
                        f"{type(store).__name__}")
    if not isinstance(resume, bool):
        raise TypeError(f"resume is True or False, not {type(resume).__name__}")
    if workers is not None:
        if not isinstance(workers, int) or isinstance(workers, bool):
            raise TypeError(f"workers is a whole number of processes or None, not "
                            f"{type(workers).__name__}")
        if workers < 1:
            raise ValueError(f"workers must be at least 1, not {workers}")


def _cluster(cluster: Any) -> tuple[str, int | str] | None:
    """A ``run_study`` cluster as the runner takes it, checked as ``--cluster`` is: ``local:N``
    text or ``("local", N)``, an address or ``("address", ADDRESS)``."""
    from fairalloc.studies.run import parse_cluster

    if cluster is None:
        return None
    if isinstance(cluster, tuple) and len(cluster) == 2 and cluster[0] in ("local", "address"):
        how, what = cluster
        if how == "local" and (not isinstance(what, int) or isinstance(what, bool)):
            raise TypeError(f"a local cluster has a whole number of workers, not "
                            f"{type(what).__name__}")
        if how == "address" and not isinstance(what, str):
            raise TypeError(f"a cluster address is text, not {type(what).__name__}")
        cluster = f"local:{what}" if how == "local" else what
    if not isinstance(cluster, str):
        raise TypeError(f"cluster is ('local', N), ('address', 'tcp://HOST:PORT') or the same "
                        f"as text, not {cluster!r:.60}")
    return parse_cluster(cluster)
