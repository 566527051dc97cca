"""The Python API, mirroring the command line: load_spec, solve, compare, validate, sweep.

It takes a spec in any form (a :class:`~fairalloc.spec.Spec`, a path, a dict), checks the
caller's arguments and hands the work to :mod:`fairalloc.engine`.
"""

from __future__ import annotations

import json
import os
from collections.abc import Callable, Collection, Iterable, Mapping, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, TextIO

from fairalloc import engine, traces
from fairalloc import report as reports
from fairalloc.allocation import _pandas
from fairalloc.contract import Experiment
from fairalloc.documents import refuse_other_sort, sort_of
from fairalloc.engine import MAX_SWEEP_POINTS, SolverSettings, sweep_values
from fairalloc.errors import ArgumentError, SpecError, StoreError, Violation
from fairalloc.registry import KINDS
from fairalloc.replay import document as replays
from fairalloc.replay.engine import Progress as ReplayProgress
from fairalloc.replay.run import ReplayRun, play
from fairalloc.report import Document
from fairalloc.result import Comparison, Result
from fairalloc.spec import Spec, build, load_spec, parsed, plain, read_json, schema, set_path
from fairalloc.studies.plan import Study, load_study
from fairalloc.studies.plan import inputs as plan_inputs
from fairalloc.studies.run import Progress, parse_cluster
from fairalloc.studies.run import run_study as run
from fairalloc.studies.store import Store
from fairalloc.studies.summary import (
    StudySummary,
    study_summary,
    summarise,
    values_by_label,
)
from fairalloc.studies.sweep import Sweep, logged, run_sweep, solver_edits, spec_study
from fairalloc.traces import TableImport

__all__ = ["MAX_SWEEP_POINTS", "ExperimentRun", "SimulationRun", "SolverSettings", "SpecLike",
           "StudyRun", "StudySummary", "Sweep", "TableImport", "compare", "experiment",
           "experiment_of", "export", "files_read", "import_table", "instance_spec", "is_store",
           "kinds_with", "load_document", "load_spec", "method_of", "replay", "replay_rows",
           "ReplayRun", "report", "run_study",
           "simulate", "solve",
           "study_frame", "study_run", "summary", "sweep", "sweep_values", "validate",
           "write_report"]

SpecLike = Spec | str | Path | dict


def _spec(spec: SpecLike) -> Spec:
    return spec if isinstance(spec, Spec) else load_spec(spec)


def load_document(source: SpecLike | replays.Document) -> Spec | replays.Document:
    """A spec or a replay document (a path, ``-`` for standard input, read once, or parsed
    data), told apart by its top-level key (``problem`` or ``replay``) and checked as
    :func:`load_spec` or ``replays.load`` checks it (``SpecError``); a study raises
    :class:`~fairalloc.documents.WrongDocument`, naming the command that runs it."""
    if isinstance(source, (Spec, replays.Document)):
        return source
    data, label = parsed(source)
    refuse_other_sort(data, ("problem", "replay"), label)
    return replays.from_data(data, label) if sort_of(data) == "replay" else build(data, label)


def method_of(spec: SpecLike, method: str | None = None) -> str:
    """The method ``solve`` runs on this spec (``method``, else the spec's, else the kind's
    default), after checking its name and the spec's options for it (``SpecError``)."""
    spec = _spec(spec)
    return engine.mechanism(KINDS[spec.kind], spec, method)[0]


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
    settings = SolverSettings(time_limit, mip_gap, threads, log)
    return engine.solve(_spec(spec), method, validate, strict, checks, settings)


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
    return engine.validate(spec, allocation, method, label)


def compare(spec: SpecLike, methods: Sequence[str] | None = None, *,
            validate: bool = True, checks: Collection[str] | None = None,
            time_limit: float | None = None, mip_gap: float | None = None,
            threads: int | None = None, log: bool | TextIO | None = None,
            on_step: Callable[[str, int, int], None] | None = None) -> Comparison:
    """Solve with every method (or ``methods``) of the spec's kind, exact method first
    (``time_limit``: seconds for each method that takes a limit; ``mip_gap``, ``threads``,
    ``log`` as for :func:`solve`), and run every check on each allocation, or those named in
    ``checks`` (an unknown name is an :class:`ArgumentError`), or none with
    ``validate=False``. ``on_step(what, done, total)`` is called as each method starts (the
    method's name, the methods finished) and once at the end with ``done == total``.

    Returns a :class:`~fairalloc.result.Comparison`: a list of (method, Result) pairs (a
    method that does not apply to this spec gives (method, reason) instead) that a notebook
    shows as the comparison table.
    """
    if isinstance(methods, str) or not (methods is None or isinstance(methods, Sequence)):
        raise TypeError(f"methods is a list of method names, not a {type(methods).__name__}")
    settings = SolverSettings(time_limit, mip_gap, threads, log)
    spec = _spec(spec)
    return engine.compare(spec, methods, settings, validate,
                          _chosen_checks(spec, checks, validate), on_step)


def _chosen_checks(spec: Spec, checks: Collection[str] | None,
                  validate: bool) -> list[str] | None:
    """The checks a run makes: none without ``validate``, else ``checks`` (None: every one),
    each name checked against the kind's (:class:`ArgumentError` naming ``checks``)."""
    if not validate:
        return []
    try:
        engine.check_names(KINDS[spec.kind], checks)
    except ValueError as exc:
        raise ArgumentError("checks", str(exc)) from None
    return None if checks is None else list(checks)


def sweep(
    spec: SpecLike, key: str | Mapping[str, Any], values: Iterable[Any] | None = None,
    method: str | None = None, on_step: Callable[[Any, Result | None], None] | None = None, *,
    methods: Sequence[str] | None = None, metrics: Sequence[str] | None = None,
    store: str | Path | None = None, resume: bool = False, workers: int | None = None,
    cluster: tuple[str, int | str] | str | None = None,
    on_start: Callable[[Progress], None] | None = None,
    on_row: Callable[[dict], None] | None = None, time_limit: float | None = None,
    mip_gap: float | None = None, threads: int | None = None,
    log: bool | TextIO | None = None, validate: bool = True,
    checks: Collection[str] | None = None,
) -> Sweep:
    """Re-solve the spec with the value at ``key`` (e.g. ``knob``, ``users[0].weight``) set to
    each of ``values`` (or with ``key`` a dict of key -> values: every combination), by
    ``method`` or each of ``methods`` (default: the spec's method); every variant is checked
    like a fresh spec. It runs as a study, as ``fairalloc sweep`` does: into the DuckDB
    ``store`` (None: in memory), with ``resume``, ``workers`` and ``cluster`` as for
    :func:`run_study`; ``on_start`` sees the totals and ``on_row`` every row as it arrives
    (the progress a caller shows), ``on_step`` each (value, Result). ``metrics``: the
    metrics kept as columns (names or patterns; default: the kind's sweep metrics).
    ``time_limit``, ``mip_gap``, ``threads`` and ``log`` as for :func:`solve` (a log stream
    needs the tasks in this process: ``workers=1``). ``checks`` and ``validate`` choose the
    checks each row makes, as for :func:`compare`.

    Returns a :class:`Sweep`: its ``rows`` (column -> array, as a study's), ``results`` (each
    row's result object) and ``records()`` (what ``fairalloc sweep --format json`` prints);
    as a list it is the (value, Result) pairs, a failed task's Result None. A grid value the
    spec refuses raises ``SpecError``; a run interrupted by Ctrl-C returns what arrived, with
    ``progress.interrupted`` set.

    >>> swept = sweep("specs/emrf/example1-knob0.5.json", "knob", [0, 1], workers=1)
    >>> [(value, result.metrics["knob"]) for value, result in swept]
    [(0, 0.0), (1, 1.0)]
    >>> swept.rows["status"].tolist(), swept.keys
    (['optimal', 'optimal'], ['knob'])
    """
    base = _spec(spec)
    grid = _grid(key, values)
    if method is not None and methods is not None:
        raise TypeError("give method or methods, not both")
    chosen = [method_of(base, m) for m in ([method] if methods is None else methods)]
    data = spec_study(base, f"sweep of {' × '.join(grid)}", grid, chosen,
                      list(KINDS[base.kind].sweep_metrics) if metrics is None else metrics,
                      _chosen_checks(base, checks, validate),
                      edits=solver_edits(time_limit, mip_gap, threads))
    return _run_sweep(base, data, store, resume, workers, cluster, log, on_start,
                      _stepper(list(grid), on_step, on_row))


def _run_sweep(spec: Spec, data: dict, store: Any, resume: Any, workers: Any, cluster: Any,
               log: Any, on_start: Callable | None, on_row: Callable | None) -> Sweep:
    """Run a one-spec study after checking the run's arguments (a log stream: in this
    process)."""
    _check_store_arguments(store, resume, workers)
    stream = log not in (None, True, False)
    if stream and (cluster is not None or (workers or 1) > 1):
        raise ValueError("a log stream needs the tasks in this process: workers=1")
    with Store(store) as db:
        return run_sweep(spec, data, db, resume=resume, workers=1 if stream else workers,
                         cluster=_cluster(cluster), log=log or None, on_start=on_start,
                         on_row=on_row)


def kinds_with(capability: str) -> list[str]:
    """The kinds whose record has ``capability`` (``plot``, ``experiment``, ``simulation``)."""
    return [name for name in KINDS if getattr(KINDS[name], capability) is not None]


@dataclass
class SimulationRun:
    """What ``simulate`` played: the title, the policy's status, the rounds and seed, the
    method, and ``played``: mechanism -> its row of measures (empty when the task failed:
    ``error`` says why); ``result`` is the policy's whole result object, ``sweep`` the run."""

    title: str
    status: str
    rounds: int
    seed: int
    method: str
    played: dict
    result: dict | None
    error: str | None
    sweep: Sweep = field(repr=False)

    def to_dict(self) -> dict:
        """What ``fairalloc simulate --format json`` prints."""
        return {"title": self.title, "status": self.status, "rounds": self.rounds,
                "seed": self.seed, "simulation": self.played}


def simulate(spec: SpecLike, method: str | None = None, *,
             mechanisms: Sequence[str] | None = None, rounds: int | None = None,
             seed: int | None = None, store: str | Path | None = None, resume: bool = False,
             workers: int | None = None, cluster: tuple[str, int | str] | str | None = None,
             on_start: Callable[[Progress], None] | None = None,
             on_row: Callable[[dict], None] | None = None, time_limit: float | None = None,
             mip_gap: float | None = None, threads: int | None = None,
             log: bool | TextIO | None = None) -> SimulationRun:
    """Solve the spec for its policy with ``method`` (default: the spec's), then play it and
    the baselines (``mechanisms``, default all) for ``rounds`` (default: the spec's, else the
    kind's) from ``seed``, as ``fairalloc simulate`` does: a one-row study of the spec with
    its ``simulation`` key set (``store``, ``workers``, callbacks and solver keywords as for
    :func:`sweep`). A spec of a kind without a simulation, or too big to play, raises
    ``SpecError``; an unknown method or mechanism :class:`ArgumentError`.

    >>> run = simulate("specs/token/kmeans-pagerank.json", rounds=50, workers=1)
    >>> run.status, run.rounds, "mean-field" in run.played
    ('feasible', 50, True)
    """
    base = _spec(spec)
    sim = KINDS[base.kind].simulation
    if sim is None:
        raise SpecError([Violation("problem", f"fairalloc simulate needs a spec of a kind with "
                                   f"a simulation ({', '.join(kinds_with('simulation'))}), "
                                   f"not {base.kind}")])
    try:
        method = method_of(base, method)
    except SpecError as exc:
        raise ArgumentError("method", exc.violations[0].rule) from None
    unknown = [m for m in mechanisms or () if m not in sim.mechanisms]
    if unknown:
        raise ArgumentError("mechanisms", f"unknown mechanism(s) {', '.join(unknown)} "
                                          f"(known: {', '.join(sim.mechanisms)})")
    chosen, played_rounds, played_seed = sim.settings(
        base.problem, tuple(mechanisms) if mechanisms else None, rounds, seed)
    why = sim.too_big(base.problem, played_rounds)
    if why:
        raise SpecError([Violation("--rounds" if rounds else "agents", why)])
    setting = {"rounds": played_rounds, "seed": played_seed, "mechanisms": list(chosen)}
    data = spec_study(base, f"simulation of {played_rounds} rounds (seed {played_seed})",
                      {"simulation": [setting]}, [method], ["simulation.*"], checks=[],
                      edits=solver_edits(time_limit, mip_gap, threads))
    swept = _run_sweep(base, data, store, resume, workers, cluster, log, on_start, on_row)
    if not swept.results:               # interrupted before the row arrived
        return SimulationRun("", "", played_rounds, played_seed, method, {}, None, None,
                             swept)
    status, result = str(swept.rows["status"][0]), swept.results[0]
    title = sim.title(base.name or base.kind, base.problem, played_rounds, played_seed, method,
                      status)
    played = result["metrics"]["simulation"] if result is not None else {}
    error = swept.rows["error"][0] if result is None else None
    return SimulationRun(title, status, played_rounds, played_seed, method, played, result,
                         error, swept)


def replay(doc: str | Path | dict | replays.Document, *,
           progress: ReplayProgress | None = None) -> ReplayRun:
    """Replay a kind's policy over time (``fairalloc replay``): a replay document (path,
    parsed data or loaded :class:`~fairalloc.replay.document.Document`) names the kind, its
    cluster, a trace, a policy, a mechanism and what to measure. ``progress(now, done,
    total)`` is called as simulated time passes. A bad document raises ``SpecError`` (every
    problem with its JSON path); a policy failing mid-run gives status ``error``, with the
    simulated time and message in ``summary["error"]``.

    >>> run = replay({"replay": "two", "kind": "hetero",
    ...               "cluster": {"workers": {"v100": 1}},
    ...               "trace": {"jobs": [{"id": "a", "steps": 720, "throughput": {"v100": 2}},
    ...                                  {"id": "b", "steps": 720, "throughput": {"v100": 2}}]},
    ...               "policy": {"method": "max-min"}, "mechanism": {"name": "ideal"}})
    >>> run.status, [round(t) for t in run.jobs["jct"]]
    ('done', [720, 720])
    """
    loaded = doc if isinstance(doc, replays.Document) else replays.load(doc)
    return play(loaded, progress)


def _grid(key: Any, values: Any) -> dict[str, list]:
    """A sweep's grid: key -> its values, from one key and its values or a dict of them."""
    if isinstance(key, str):
        if values is None or isinstance(values, (str, Mapping)):
            raise TypeError(f"sweep {key!r} over a list of values, not {values!r:.60}")
        return {key: list(values)}
    if values is not None or not isinstance(key, Mapping) or not key:
        raise TypeError("sweep one key and its values, or a dict of keys -> values")
    return {k: list(v) for k, v in key.items()}


def _stepper(keys: list[str], on_step: Callable | None,
             on_row: Callable | None) -> Callable[[dict], None] | None:
    """The run's row callback: ``on_row`` with the row, ``on_step`` with its value and
    Result (None when its task failed)."""
    if on_step is None:
        return on_row

    def step(row: dict) -> None:
        if on_row:
            on_row(row)
        value = row[keys[0]] if len(keys) == 1 else {k: row[k] for k in keys}
        text = row.get("result")
        on_step(value, Result.from_dict(json.loads(text)) if text is not None else None)
    return step


@dataclass
class ExperimentRun:
    """What ``experiment`` ran and found: its title, study and progress, the study's ``rows``,
    the summary ``records`` per group and method (``by``) of each of ``values`` (the
    columns the paper reports: column -> axis label), and ``by_label``: value -> "group
    method" -> the values of the rows that solved. Interrupted: no summary."""

    title: str
    study: Study
    progress: Progress
    rows: dict
    by: list[str]
    values: dict[str, str]
    records: list[dict]
    by_label: dict

    def to_dict(self) -> dict:
        """What ``fairalloc experiment KIND --format json`` prints: the paper's values per
        label, and the study's summary."""
        short = {v: v.removeprefix("metric.") for v in self.values}
        return {"title": self.title, "study": self.study.spec,
                "summary": {short[v]: {" ".join(map(str, (r[b] for b in self.by))): r[v]
                                       for r in self.records if r[v]} for v in self.values},
                "values": {short[v]: {label: xs.tolist()
                                      for label, xs in self.by_label[v].items()}
                           for v in self.values},
                "groups": self.records}


def experiment(kind: str, seed: int = 1, methods: Sequence[str] | None = None, *,
               store: str | Path | None = None, resume: bool = False,
               workers: int | None = None, cluster: tuple[str, int | str] | str | None = None,
               on_start: Callable[[Progress], None] | None = None,
               on_row: Callable[[dict], None] | None = None, time_limit: float | None = None,
               mip_gap: float | None = None, threads: int | None = None,
               log: bool | TextIO | None = None, **parameters: Any) -> ExperimentRun:
    """A kind's preset experiment, as ``fairalloc experiment KIND`` runs it: its study (random
    workloads from ``seed`` with the experiment's ``parameters``, every method or
    ``methods``) run into ``store`` (``resume``, ``workers``, ``cluster``, callbacks and
    solver keywords as for :func:`sweep`), summarised by the values its paper reports.
    An unknown kind, a kind without an experiment or an unknown parameter raises
    :class:`ArgumentError`; a bad value ``SpecError`` (``invalid study``).
    """
    preset = experiment_of(kind)
    known = {p.name: p.default for p in preset.parameters}
    unknown = sorted(set(parameters) - set(known))
    if unknown:
        raise ArgumentError("parameters", f"no parameter {', '.join(map(repr, unknown))} in "
                                          f"{kind}'s experiment (parameters: "
                                          f"{', '.join(known) or 'none'})")
    _check_store_arguments(store, resume, workers)
    parameters = {**known, **parameters}
    study = logged(_edited_study(preset.study(seed, **parameters), ".", methods,
                                 solver_edits(time_limit, mip_gap, threads)), log)
    with Store(store) as db:
        progress = run(study, db, resume=resume, workers=workers, cluster=_cluster(cluster),
                       on_start=on_start, on_row=on_row)
        rows = db.rows(study.name)
    by, values = [*preset.groups, "method"], list(preset.values)
    interrupted = progress.interrupted
    records = [] if interrupted else summarise(rows, by, values, preset.baseline,
                                               list(study.methods))
    by_label = {} if interrupted else values_by_label(rows, by, values)
    return ExperimentRun(preset.title(seed, **parameters), study, progress, rows, by,
                         dict(preset.values), records, by_label)


def experiment_of(kind: str) -> Experiment:
    """The kind's preset experiment (its parameters, values, title); an ArgumentError naming
    the kinds that have one when it has none."""
    if kind not in KINDS:
        raise ArgumentError("kind", f"unknown problem kind {kind!r} (known: "
                                    f"{', '.join(KINDS)})")
    found = KINDS[kind].experiment
    if found is None:
        having = ", ".join(kinds_with("experiment")) or "none"
        raise ArgumentError("kind", f"{kind} has no experiment (fairalloc experiment works "
                                    f"for: {having})")
    return found


def summary(store: str | Path, study: str | None = None, by: Sequence[str] | None = None,
            values: Sequence[str] | None = None) -> StudySummary:
    """Statistics per grid point and method of a study in a DuckDB ``store`` (``study``: its
    name, when the store holds several), as ``fairalloc study summary`` prints them: grouped
    by ``by`` (default: the grid's keys and method), of each of ``values`` (number columns;
    default ``ratio``). A column the results do not have raises :class:`ArgumentError`, a
    store that cannot serve ``StoreError``.
    """
    return study_summary(*_stored(store, study), by, values)


def replay_rows(store: str | Path, study: str | None = None) -> tuple[dict, dict]:
    """A stored replay study's rows per job (``replay_jobs``) and its utilisation over time
    (``replay_utilization``), each column -> array with its run's key and grid values; empty
    for a study of problem specs."""
    with Store(store, read_only=True) as db:
        name = db.study(study)["study"]
        return db.replay_rows(name, "replay_jobs"), db.replay_rows(name, "replay_utilization")


def _stored(store: str | Path, study: str | None) -> tuple[dict, dict]:
    """A stored study's record and its rows (column -> array)."""
    with Store(store, read_only=True) as db:
        record = db.study(study)
        return record, db.rows(record["study"])


def export(store: str | Path, output: str | Path,
           study: str | None = None) -> tuple[str, int]:
    """Write a stored study's rows to Parquet or CSV (by ``output``'s suffix), as ``fairalloc
    study export`` does; returns the study's name and how many rows were written."""
    with Store(store, read_only=True) as db:
        name = db.study(study)["study"]
        return name, db.export(name, str(output))


def instance_spec(store: str | Path, instance: int, study: str | None = None,
                  method: str | None = None) -> tuple[dict, int | None]:
    """One instance of a stored study re-made as a spec, as ``fairalloc study instance``
    does: the spec's data and the instance's seed (None for a spec file's instance). An id
    the study does not have, or a trace table changed since the study ran, raises
    ``StoreError``. A replay study's instance is the replay document of its row of policy
    ``method`` (which a study of several policies needs; a method the study does not have
    raises :class:`ArgumentError`)."""
    with Store(store, read_only=True) as db:
        record = db.study(study)
        files = db.spec_files(record["study"])
        db.check_data_files(record["study"])
    plan = load_study(record["spec"], files=files)
    found = next((i for i in plan.instances() if i.id == instance), None)
    if found is None:
        raise StoreError(f"study {record['study']} has instances 0 to "
                         f"{plan.instance_count - 1}, not {instance}")
    return plan.instance_spec(found, method), found.seed


def study_frame(store: str | Path, study: str | None = None) -> Any:
    """A stored study's results rows as a pandas DataFrame (one row per instance, method and
    repeat; needs pandas, which fairalloc does not require)."""
    pandas = _pandas("study_frame")
    return pandas.DataFrame(_stored(store, study)[1])


def report(source: SpecLike, *, methods: Sequence[str] | None = None,
           study: str | None = None, time_limit: float | None = None,
           mip_gap: float | None = None, threads: int | None = None,
           validate: bool = True, checks: Collection[str] | None = None,
           sweep: tuple[str, Iterable[Any]] | bool | None = None,
           on_step: Callable[[str, int, int], None] | None = None) -> Document:
    """The report of a spec (every method, or ``methods``, side by side, the verdict matrix
    with witnesses, metrics, figures, the notes on its paper), of a replay document (played:
    its measures, the checks' verdicts over the run, its figure; ``on_step`` sees the
    simulated time and jobs done) or of a study store (a ``.duckdb`` file: its summary and
    plots; ``study`` names one when it holds several), as ``fairalloc report`` makes it;
    :func:`write_report` writes it. ``time_limit``, ``mip_gap`` and ``threads`` as for
    :func:`compare`; they, ``methods``, ``checks`` and ``sweep`` are for a spec only
    (:class:`ArgumentError`), as ``study`` is for a store.

    A spec's checks: every one, or those in ``checks``, or none with ``validate=False``.
    Its trade-off figure re-solves the spec along ``sweep``, a (key, values) pair (None: the
    kind's own sweep, e.g. ``phi`` from 0 to 1 for etf; False: no sweep), each point checked
    by ``checks`` when given, else by every check but strategy-proofness (whose probe re-runs
    the method up to 24 times a point; the verdict matrix has it for the spec). ``on_step(what,
    done, total)`` sees the work go: each method, each row of the sweep, the figures.

    >>> doc = report("specs/emrf/example1-knob0.5.json", methods=["lp"])
    >>> doc.title, [b.text for b in doc.blocks if type(b).__name__ == "Heading"][:2]
    ('EMRF paper, Example 1 (knob 0.5)', ['The spec', 'Methods side by side'])
    """
    spec_only = {"methods": methods or time_limit or mip_gap is not None or threads,
                 "checks": checks is not None or not validate, "sweep": sweep is not None}
    if isinstance(source, (str, Path)) and str(source) != "-" and is_store(str(source)):
        _refuse_spec_flags(spec_only, "a study's report shows its stored rows")
        return reports.store_report(str(source), study)
    if study:
        raise ArgumentError("study", "names a study in a store, not in a spec or a replay "
                                     "document")
    spec = load_document(source)
    if isinstance(spec, replays.Document):
        _refuse_spec_flags(spec_only, "a replay's report shows its run")
        return _replay_report(spec, on_step)
    chosen = _chosen_checks(spec, checks, validate)
    if sweep not in (None, True, False):
        sweep = _report_sweep(spec, sweep)
    with SolverSettings(mip_gap=mip_gap, threads=threads).solving():
        return reports.spec_report(spec, methods, time_limit, checks=chosen, sweep=sweep,
                                   on_step=on_step)


def _refuse_spec_flags(given: dict[str, Any], why: str) -> None:
    """``ArgumentError`` for the first of a spec report's arguments ``given`` (argument ->
    whether given) to the report of a store or a replay, saying ``why`` they do not apply."""
    for argument, value in given.items():
        if value:
            flags = ("solver and method flags are" if argument == "methods" else
                     "checks and the trade-off sweep are")
            raise ArgumentError(argument, f"{why}; {flags} for a spec's report")


def _replay_report(doc: replays.Document, on_step: Callable | None) -> Document:
    """The report of one replay, played with its progress (simulated time, jobs done) as
    ``on_step`` steps."""
    progress = None if on_step is None else \
        lambda now, done, total: on_step(f"{now / 3600:.1f} h simulated", done, total)
    return reports.replay_report(play(doc, progress), doc.raw)


def _report_sweep(spec: Spec, sweep: Any) -> tuple[str, list]:
    """A report's ``sweep`` as (key, values), the spec taking its first value at the key
    (:class:`ArgumentError` otherwise)."""
    if not (isinstance(sweep, tuple) and len(sweep) == 2 and isinstance(sweep[0], str)):
        raise ArgumentError("sweep", f"a (key, values) pair, True, False or None, not "
                                     f"{sweep!r:.60}")
    key, values = sweep[0], list(sweep[1])
    if not values:
        raise ArgumentError("sweep", f"{key}: no values to sweep")
    try:
        build(set_path(spec.raw, key, values[0]), spec.source)
    except SpecError as exc:
        raise ArgumentError("sweep", f"{key}={values[0]!r}: {exc.violations[0]}") from None
    return key, values


def write_report(doc: Document, output: str | Path, format: str | None = None) -> list[Path]:
    """Write a report as ``html`` (one self-contained file) or ``markdown`` (its figures in
    ``<stem>_files/`` beside it); default: markdown for a ``.md`` file, else html. Returns the
    files written."""
    name = str(output)
    chosen = format or ("markdown" if name.endswith((".md", ".markdown")) else "html")
    if chosen not in ("html", "markdown"):
        raise ArgumentError("format", f"html or markdown, not {chosen!r}")
    return reports.write(doc, output, chosen)


def files_read(source: str | Path) -> list[tuple[str, Path]]:
    """The files a document at path ``source`` reads besides itself, as (what, path): a replay
    document's trace table, a study's spec files and their trace tables, the trace tables of
    the replay documents a study store keeps. Empty for standard input, a pipe (read once, by
    the command), a spec, or a file that is not a document (the command says why)."""
    path = str(source)
    if path == "-" or not os.path.isfile(path):
        return []
    try:
        if is_store(path):
            with Store(path, read_only=True) as db:
                return [("trace table", table) for name in db.studies()
                        for file, data in db.spec_files(name)
                        for table in replays.inputs(data, Path(file).parent)]
        data, _ = read_json(path)
    except (SpecError, StoreError):
        return []
    if sort_of(data) == "replay":
        return [("trace table", table) for table in replays.inputs(data, Path(path).parent)]
    return plan_inputs(data, Path(path).parent) if sort_of(data) == "study" else []


def is_store(path: str) -> bool:
    """A study store (named ``.duckdb``, even a damaged one) or a DuckDB file (its magic
    bytes), not a spec. Only a regular file is looked into: a pipe's first bytes, once read,
    would be lost to the spec."""
    if path.lower().endswith(".duckdb"):
        return True
    if not os.path.isfile(path):
        return False
    try:
        with open(path, "rb") as fh:
            return fh.read(12)[8:12] == b"DUCK"
    except OSError:
        return False


def import_table(kind: str, table: str | Path, *, mapping: Mapping[str, str] | None = None,
                 sets: Mapping[str, Any] | None = None, base: str | Path | dict | None = None,
                 name: str | None = None, normalize: str | None = None) -> TableImport:
    """A spec of ``kind`` from a table (CSV or Parquet), one row an entity (user, app, job,
    kernel), as ``fairalloc import`` makes it: columns named like an entity's keys fill them,
    ``mapping`` (key -> column, e.g. ``{"demand.cpu": "cpus"}``) maps others; the rest of the
    spec comes from ``base`` (a spec file or its data; its entities replaced), then ``sets``
    (dotted key -> value, e.g. ``{"capacity.cpu": 100}``); ``normalize``: an entity's object
    key divided by its sum. The spec is checked like any (``SpecError``, a row's problem naming
    its line); an argument that cannot be used raises :class:`ArgumentError` naming it.

    >>> made = import_table("drf", "specs/traces/drf-users.csv", mapping={"id": "user",
    ...     "demand.cpu": "cpu", "demand.mem": "mem_gb", "demand.gpu": "gpu"},
    ...     sets={"capacity.cpu": 64, "capacity.mem": 256, "capacity.gpu": 4})
    >>> made.spec["users"][1]
    {'id': 'ben', 'demand': {'cpu': 8, 'mem': 32, 'gpu': 0}, 'weight': 1, 'max_tasks': 6}
    >>> made.unused          # fairalloc import lists them on stderr; made.text() is its output
    ['team']
    """
    if kind not in KINDS:
        raise ArgumentError("kind", f"unknown problem kind {kind!r} (known: "
                                    f"{', '.join(KINDS)})")
    table = str(table)
    data = schema(kind)
    key = traces.entity_list(data)
    item = data["properties"][key]["items"]
    columns, rows, _ = traces.read_table(table)
    try:
        pairs = traces.mapping(columns, item, dict(mapping or {}))
    except ValueError as exc:
        raise ArgumentError("mapping", str(exc)) from None
    if not any(leaf.name == "id" for leaf, _ in pairs):
        raise ArgumentError("mapping", f"no column gives the ids (a column named id, or --map "
                                       f"id=COLUMN; columns: {', '.join(columns)})")
    items = traces.entities(rows, pairs, table)
    if normalize:
        if normalize not in item.get("properties", {}):
            raise ArgumentError("normalize", f"no key {normalize!r} in a {kind} entity")
        traces.normalize(items, normalize)
    raw = read_json(base, what="spec")[0] if isinstance(base, (str, Path)) else base or {}
    if not isinstance(raw, dict):
        raise ArgumentError("base", "the base spec must be a JSON object")
    raw = {**raw, "problem": kind, "name": name or raw.get("name") or os.path.basename(table)}
    for path, value in (sets or {}).items():
        node = raw
        names = path.split(".")
        for part in names[:-1]:
            node = node.setdefault(part, {})
            if not isinstance(node, dict):
                raise ArgumentError("sets", f"{path}: {part} is not an object in the spec")
        node[names[-1]] = value
    raw[key] = items
    try:
        build(raw, table)
    except SpecError as exc:
        raise traces.row_paths(exc, key, table) from None
    used = {column for _, column in pairs}
    return TableImport(raw, key, [c for c in columns if c not in used])


def run_study(study: str | Path | dict, store: str | Path | None = None, *,
              resume: bool = False, workers: int | None = None,
              cluster: tuple[str, int | str] | None = None) -> dict:
    """Run a study (a study spec file, or its data) into the DuckDB ``store`` (None: in
    memory) as ``fairalloc study run`` does, and return its ``results`` rows: column -> numpy
    array (numbers with NaN for null). ``workers``: a whole number of local processes (None:
    as many as help); ``cluster``: ``("local", N)`` or ``("address", "tcp://HOST:PORT")``, or
    the same as text (``"local:N"``, ``"tcp://HOST:PORT"``). A run interrupted by Ctrl-C
    raises ``KeyboardInterrupt`` after storing what arrived (``resume=True`` continues it);
    :func:`study_run` returns it instead, with the run's progress.

    Raises ``SpecError`` for a bad study, ``StoreError`` for a store that cannot take it (not
    a fairalloc store, damaged, or holding the study already, or with its spec files or
    their trace tables changed since it ran), ``TypeError`` or ``ValueError`` for a bad
    argument.

    >>> rows = run_study({"study": "doc", "kind": "drf", "seed": 1, "methods": ["lp"],
    ...                   "instances": {"generate": {"users": 3}, "count": 2}}, workers=1)
    >>> rows["status"].tolist(), rows["ratio"].tolist()
    (['optimal', 'optimal'], [1.0, 1.0])
    """
    done = study_run(study, store, resume=resume, workers=workers, cluster=cluster)
    if done.progress.interrupted:
        raise KeyboardInterrupt
    return done.rows


@dataclass
class StudyRun:
    """A study's run: the checked study, what the run did, the study's rows and its
    ``record`` in the store."""

    study: Study
    progress: Progress
    rows: dict
    record: dict = field(repr=False)

    def summary(self) -> StudySummary:
        """The ratio to the reference per grid point and method: what ``fairalloc study run``
        prints when it ends (as :func:`summary` gives it from the store)."""
        return study_summary(self.record, self.rows)


def study_run(study: str | Path | dict, store: str | Path | None = None, *,
              resume: bool = False, workers: int | None = None,
              cluster: tuple[str, int | str] | str | None = None,
              methods: Sequence[str] | None = None,
              on_start: Callable[[Progress], None] | None = None,
              on_row: Callable[[dict], None] | None = None, time_limit: float | None = None,
              mip_gap: float | None = None, threads: int | None = None,
              log: bool | TextIO | None = None) -> StudyRun:
    """:func:`run_study` with what ``fairalloc study run`` adds: ``methods``, ``time_limit``,
    ``mip_gap`` and ``threads`` change the study's spec (and so what the store records)
    before it is checked; ``on_start``/``on_row`` see the run's progress; ``log`` as for
    :func:`sweep`. A run interrupted by Ctrl-C returns what arrived
    (``progress.interrupted``)."""
    if not isinstance(study, (str, Path, dict)):
        raise TypeError(f"a study is a dict, a file path or '-' (standard input), not "
                        f"{type(study).__name__}")
    _check_store_arguments(store, resume, workers)
    plan = logged(_edited_study(study, None, methods, solver_edits(time_limit, mip_gap,
                                                                    threads)), log)
    with Store(store) as db:
        progress = run(plan, db, resume=resume, workers=workers, cluster=_cluster(cluster),
                       on_start=on_start, on_row=on_row)
        return StudyRun(plan, progress, db.rows(plan.name), db.study(plan.name))


def _edited_study(source: str | Path | dict, root: str | None,
                  methods: Sequence[str] | None, edits: dict) -> Study:
    """A checked study whose spec ``methods`` and the solver ``edits`` (``solver_edits``)
    change first; a study file's specs are found beside it."""
    edits = {**({"methods": list(methods)} if methods is not None else {}), **edits}
    if not edits:
        return load_study(source, root)
    data = source if isinstance(source, dict) else read_json(source, what="study")[0]
    if isinstance(data, dict):
        solver = {**data.get("solver", {}), **edits.pop("solver", {})}
        data = {**data, **edits, **({"solver": solver} if solver else {})}
    if not isinstance(source, dict) and root is None and str(source) != "-":
        root = os.path.dirname(str(source)) or "."
    return load_study(data, root)


def _check_store_arguments(store: Any, resume: Any, workers: Any) -> None:
    """Refuse arguments of a study's run of the wrong type or range (TypeError, ValueError)."""
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
