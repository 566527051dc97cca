"""The kind contract: what fairalloc needs from a problem kind, and what it calls.

A kind is one :class:`Kind` record (``fairalloc/kinds/<kind>.py``). Its parts are plain
functions with these shapes:

* problem: ``from_spec(data, found) -> problem | None`` builds the problem object from
  schema-valid spec data, adding a :class:`~fairalloc.errors.Violation` to ``found`` for every
  broken precondition; the problem has ``ids`` and ``read_allocation(data) -> Allocation``;
* method: ``f(problem, *, <options>) -> Solution``. The keyword parameters *are* the options it
  declares (``method_options``): a spec option the chosen method does not declare is a bad spec
  (``options.<key>``), and a method is never passed one. A method that cannot serve a valid spec
  raises :class:`MethodDoesNotApply` (``compare`` shows it as n/a);
* check: ``f(problem, allocation, *, mechanism=None, claims=None) -> Finding | None``:
  ``mechanism`` re-runs the method on a changed problem (strategy-proofness probes), ``claims``
  are the method's own metrics (a theorem bound it promises); ``**_`` takes what a check does not
  use;
* metrics: ``f(problem, allocation) -> dict`` of numbers computed from any allocation.
"""

from __future__ import annotations

import fnmatch
import inspect
from collections.abc import Callable, Iterable
from dataclasses import dataclass, field
from typing import Any

from fairalloc.errors import SpecError, Violation
from fairalloc.result import STATUSES, Finding, Result, Solution, check_column

__all__ = ["Experiment", "Kind", "MethodDoesNotApply", "Parameter", "Replay", "Simulation",
           "does_not_apply", "method_options", "Finding", "Result", "Solution", "STATUSES"]


# Options every spec may give, whatever its method: ``method`` picks it, ``time_limit``
# bounds a method that takes a limit and is ignored by one that finishes without (as the
# command line's --time-limit is).
COMMON_OPTIONS = ("method", "time_limit")

SOLVER_FIELDS = ("name", "time_s", "iterations", "gap", "bound", "message")


def solver_info(fields: dict) -> dict:
    """One record for every method (as QuantEcon's ``DPSolveResult`` has the same fields for
    every method): name, time_s, iterations, gap, bound, message — None where a method has
    none — and ``extra`` for what is particular to a method.

    >>> solver_info({"name": "HiGHS", "gap": 0.0, "rounds": 2})["extra"]
    {'rounds': 2}
    """
    info = {key: fields.get(key) for key in SOLVER_FIELDS}
    info["extra"] = {k: v for k, v in fields.items() if k not in SOLVER_FIELDS}
    return info


class MethodDoesNotApply(SpecError):
    """A valid spec that this method cannot serve (another method can): exit 2 for ``solve``,
    n/a in ``compare``."""


def does_not_apply(path: str, rule: str) -> MethodDoesNotApply:
    """The error a method raises for a valid spec it cannot serve, naming the JSON path and
    why (and what serves instead)."""
    return MethodDoesNotApply([Violation(path, rule)])


def method_options(method: Callable) -> tuple[str, ...]:
    """The options a method declares: its keyword parameters after the problem.

    >>> def lp(problem, time_limit=None): ...
    >>> method_options(lp)
    ('time_limit',)
    """
    params = list(inspect.signature(method).parameters.values())[1:]
    return tuple(p.name for p in params
                 if p.kind in (p.POSITIONAL_OR_KEYWORD, p.KEYWORD_ONLY))


@dataclass(frozen=True)
class Parameter:
    """A study parameter, given on the command line as ``--<name>`` (underscores as dashes):
    ``type`` parses and checks the text (an ``argparse`` type, ``fairalloc.arguments``)."""

    name: str
    type: Callable[[str], Any]
    default: Any
    help: str
    choices: tuple | None = None


@dataclass(frozen=True)
class Experiment:
    """A kind's preset experiment (``fairalloc experiment KIND``): a study (``fairalloc.studies``)
    built from a few command-line parameters, run like any study, and summarised by the values
    a paper reports.

    ``study(seed, **parameters)`` returns the study spec (as ``fairalloc study run`` reads it;
    ``specs/studies/`` holds the presets as files); ``values`` maps a column of the study's
    ``results`` (``ratio``, ``metric.<name>``) to its axis label; ``groups`` are grid columns
    that label rows beside the method (``device``); ``title(seed, **parameters)`` heads the
    table and plot. ``baseline``: a reference value (1 = no better than fcfs) drawn as a line
    and counted (the share of instances above it); ``log``: plot the values on a log axis."""

    summary: str
    parameters: tuple[Parameter, ...]
    study: Callable[..., dict]
    values: dict[str, str]
    title: Callable[..., str]
    groups: tuple[str, ...] = ()
    baseline: float | None = None
    log: bool = False


@dataclass(frozen=True)
class Simulation:
    """A kind's round-by-round simulation (``fairalloc simulate SPEC``): solve the spec for the
    policy, then play it and the baselines (``mechanisms``) round by round on one population.

    The spec asks for it with its ``simulation`` key (``{"rounds", "seed", "mechanisms"}``) and
    the kind's metrics then hold ``simulation``: ``{mechanism: row}``; ``fairalloc simulate``
    is a one-row study of the spec with that key set. ``settings(problem, mechanisms, rounds,
    seed)`` fills in what is not given (the spec's, then defaults) and ``too_big(problem,
    rounds)`` says why a run would not fit, or None; ``columns(problem)`` are the table's
    (header, cell of a row) pairs; ``title(name, problem, rounds, seed, method, status)``;
    ``plot(problem, allocation, metrics, title, path)`` draws it."""

    summary: str
    mechanisms: tuple[str, ...]
    settings: Callable[..., tuple[tuple[str, ...], int, int]]
    too_big: Callable[[Any, int], str | None]
    columns: Callable[[Any], list[tuple[str, Callable[[dict], str]]]]
    title: Callable[..., str]
    plot: Callable | None = None


@dataclass(frozen=True)
class Replay:
    """A kind's part in a replay (``fairalloc replay``, ``fairalloc.replay``): its policy over
    time on a trace of arriving jobs. The engine (``fairalloc.replay.engine``) names no kind;
    it calls these, all on arrays (no JSON per event):

    * ``cluster(data, found) -> cluster``: the replay document's ``cluster`` part (the kind's
      capacity, e.g. hetero ``{"workers": {...}}``), a violation per problem; ``resources
      (cluster)`` names what utilisation is measured on (hetero: the worker types);
    * ``jobs(cluster, trace, found) -> jobs``: the per-job arrays the kind needs from the
      trace's ``columns`` (a violation per missing column, and per job that can run nowhere,
      naming its id); ``work`` of it is each job's total work (hetero: steps);
    * ``generators``: name -> ``f(seed, **params) -> Trace`` (seeded, numpy's Generator);
    * ``problem(cluster, jobs, active, remaining, elapsed) -> problem``: the kind's problem over
      the active jobs (positions into the trace, in arrival order), built from arrays, on which a
      method runs directly;
    * ``least(cluster, jobs) -> (seconds, share)``: per job the least time it can take (its
      work at its fastest rate) and the least share of the cluster it holds meanwhile (what
      bounds the jobs a replay holds at once);
    * ``rates(problem, allocation) -> (n,)`` work/s per active job when the allocation is
      applied exactly (the ``ideal`` mechanism), ``usage(problem, allocation) -> (n, r)`` the
      share of each resource each active job holds;
    * ``mechanisms``: name -> ``f(cluster, jobs, policy, settings) -> mechanism`` for the kind's
      own mechanisms (hetero ``rounds``, Gavel's), see ``fairalloc.replay.engine.Mechanism``;
      a mechanism may carry ``check(cluster, jobs, arrival, settings, found)``, called when
      the document is read (refusing a replay it cannot play in bounded time), and its
      instance a ``budget``, the most plans it can make (the engine stops there);
    * ``policies``: name -> ``f(problem, **options) -> Solution``, policies beyond the kind's
      methods (FIFO, minimum total duration), called like methods; a policy declaring a
      ``memory`` option gets a dict kept across the run, holding ``seed``, ``tenants`` (the
      trace's ``tenant`` column, or None) and, at each call, ``now`` and ``active``; a policy
      may carry ``check_options(options, found)``, called when the document is read, and, when
      it wraps a method (fair-share), ``base_of(options)``, the method's name;
    * ``aware``: the policies (methods too) that use the jobs' speeds per resource, which a
      mechanism may treat differently (Gavel places them fastest type first);
    * ``table``, ``formats``, ``typed`` and ``untyped``: traces from files — a table with the
      kind's columns (read by ``fairalloc.replay.tables.read_trace`` with the kind's
      ``columns()``, as a listed trace is checked), a simulator's own trace format by name
      (hetero: Gavel's), the kind's columns drawn for a trace of durations and GPU counts
      (the shipped production trace), and such a trace read from a table (an operator's log).
    * ``columns() -> {name: Column}``: the trace columns a listed trace (``"jobs": [...]``)
      may give and their types and rules (``fairalloc.replay.tables.Column``, as the
      kind's table reader declares them), a name ending in ``.`` standing for every column
      it begins (hetero ``throughput.<type>``); each value is checked as a table's cell is.
    * ``example``: a small document ``cluster`` on which the ``static`` generator's jobs (all
      at time 0) run: what the conformance battery replays."""

    summary: str
    cluster: Callable
    resources: Callable
    jobs: Callable
    work: Callable
    generators: dict[str, Callable]
    problem: Callable
    rates: Callable
    usage: Callable
    least: Callable
    mechanisms: dict[str, Callable] = field(default_factory=dict)
    policies: dict[str, Callable] = field(default_factory=dict)
    aware: frozenset = frozenset()
    default_policy: str | None = None
    # traces from files (the replay document's ``{"table": FILE}``, ``{"shipped": NAME}``):
    table: Callable | None = None      # (path, mapping) -> Trace of the kind's columns
    formats: dict[str, Callable] = field(default_factory=dict)   # name -> (path) -> Trace
    typed: Callable | None = None      # (trace, seed, larger) -> (Trace, ids dropped): the
    #                                    kind's columns for jobs known by duration and GPUs
    untyped: Callable | None = None    # (path, mapping) -> Trace of durations and GPU counts
    #                                    from a table (an operator's log), for ``typed``
    example: dict = field(default_factory=dict)
    columns: Callable[[], dict] = dict


@dataclass(frozen=True)
class Kind:
    """How fairalloc handles one problem kind: the record every kind module exports as
    ``KIND``. ``sense`` is the objective's direction (``max``: larger is better)."""

    name: str
    summary: str
    from_spec: Callable
    methods: dict[str, Callable]
    default: str
    exact: str | None
    checks: tuple[Callable, ...]
    metrics: Callable
    random_spec: Callable[..., dict]      # (seed, **size) -> a valid spec: tests, studies
    sense: str = "max"
    sweep_metrics: tuple[str, ...] = ()
    # (problem, result, path): the picture of an allocation ``solve --plot`` and reports draw
    plot: Callable | None = None
    experiment: Experiment | None = None  # ``fairalloc experiment KIND``
    simulation: Simulation | None = None  # ``fairalloc simulate SPEC``
    replay: Replay | None = None          # ``fairalloc replay FILE``
    schema: dict | None = None            # None: fairalloc/schemas/<name>.schema.json
    template: str | None = None           # None: fairalloc/templates/<name>.jsonc
    options: dict | None = None           # JSON Schemas of registered methods' options
    # a bound on the optimum computed without solving (lower for min kinds, upper for max):
    # problem -> number, a study's ``lower_bound`` / ``upper_bound`` reference
    bound: Callable[[Any], float] | None = None
    # axis labels, "quantity (unit)", for the objective ("objective") and metrics (names or
    # patterns): figures put only quantities of one label on one axis
    units: dict[str, str] = field(default_factory=dict)
    # (x metric, y metric or pattern): a sweep's trade-off view, y against x per method
    tradeoff: tuple[str, str] | None = None
    # (spec key, start, stop, step): the parameter that moves along the trade-off, which a
    # report sweeps to draw it (EMRF's knob, ETF's phi)
    tradeoff_sweep: tuple[str, float, float, float] | None = None
    # what fairalloc found checking the kind's paper (Markdown); None: fairalloc/notes/<name>.md
    # when it exists (reports include it)
    notes: str | None = None
    # True: the methods compute an equilibrium (a fixed point, e.g. token's Algorithm 1), not
    # an optimum. Nothing is optimised, so no method is exact (``exact`` is None) and none is
    # ``optimal``; the objective is a quantity read at the equilibrium, compared, not a bound
    equilibrium: bool = False
    # options the checks' re-runs of a method (strategy-proofness probes) take in place of the
    # spec's, where the method declares them: a faster formulation of the same allocation
    # (emrf's class LP for its Pyomo model), so that a probe costs solves, not model builds
    probe_options: dict[str, Any] = field(default_factory=dict)
    # the paper the kind implements, as a reference a reader can cite (Markdown: authors,
    # title, venue, year, DOI); reports and ``fairalloc list`` show it, docs/references.md
    # lists them all
    reference: str | None = None
    # methods besides ``exact`` that solve exactly, each with what it solves exactly (its own
    # objective, when not the kind's): ``fairalloc list`` and README's kind table mark them
    also_exact: dict[str, str] = field(default_factory=dict)

    def exact_methods(self) -> dict[str, str]:
        """Every method that solves exactly, with what it solves: ``exact`` (the kind's
        objective, the reference of ``compare``'s ratios) first, then ``also_exact``."""
        first = {self.exact: "the kind's objective"} if self.exact else {}
        return first | self.also_exact

    def check_names(self) -> tuple[str, ...]:
        """The names of the kind's checks as results show them and ``checks=``, ``--fail-on``
        and study specs take them (every method's own bound is ``bound``)."""
        return tuple(check.__name__ for check in self.checks)

    def unknown_checks(self, names: Iterable[str]) -> list[str]:
        """Those of ``names`` that name no check of the kind (``bound:theorem2`` names the
        bound check, as results show it)."""
        known = self.check_names()
        return [n for n in names if check_column(n) not in known]

    def probing(self, run: Callable) -> dict[str, Any]:
        """The options the checks' re-runs of method ``run`` take in place of the spec's: the
        record's ``probe_options`` that the method declares."""
        declared = method_options(run)
        return {k: v for k, v in self.probe_options.items() if k in declared}

    def unit(self, name: str) -> str:
        """The axis label of the objective or a metric (its name when none is declared)."""
        return next((label for pattern, label in self.units.items()
                     if fnmatch.fnmatchcase(name, pattern)), name)
