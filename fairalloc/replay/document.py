"""The replay document (``fairalloc replay FILE``): a kind, its cluster, a trace, a policy, a
mechanism and what to measure. Schema ``fairalloc/schemas/replay.schema.json``, template
``fairalloc/templates/replay.jsonc`` (``fairalloc new replay``); every problem is reported at
once, one line each naming its JSON path.
"""

from __future__ import annotations

import functools
import inspect
import json
import math
from collections.abc import Callable
from dataclasses import dataclass, replace
from importlib import resources
from pathlib import Path
from typing import Any

import jsonschema_rs
import numpy as np

from fairalloc.contract import Kind, MethodDoesNotApply, method_options
from fairalloc.documents import refuse_other_sort
from fairalloc.errors import ArgumentError, InputRefused, SpecError, Violations
from fairalloc.files import check_input
from fairalloc.registry import KINDS
from fairalloc.replay.clock import at_once
from fairalloc.replay.elasticflow import CLUSTERS, elasticflow
from fairalloc.replay.engine import Checking
from fairalloc.replay.tables import ARRIVAL, TENANT, Column, listed_column
from fairalloc.replay.trace import Trace
from fairalloc.spec import check_against, plain, read_json, schema, without_schema_key

IDEAL = "ideal"
DEFAULT_TOLERANCE = 1.1
# jobs active at once: hetero's max-min LP over 10,000 active jobs takes 1.9 s and 104 MB,
# over 100,000 52 s and 458 MB, and a replay solves it again at each change; jobs solved
# over in all (about 50-190 µs each in that LP, so a few minutes at most)
MOST_AT_ONCE = 10_000
MOST_SOLVED = 1_000_000


@functools.cache
def replay_schema() -> dict:
    """The JSON Schema of a replay document."""
    text = resources.files("fairalloc.schemas").joinpath("replay.schema.json").read_text()
    return json.loads(text)


@functools.cache
def _validator():
    return jsonschema_rs.validator_for(replay_schema())


def template() -> str:
    """The commented template of a replay document (``fairalloc new replay``)."""
    return resources.files("fairalloc.templates").joinpath("replay.jsonc").read_text()


@dataclass(frozen=True, eq=False)
class Document:
    """A checked replay document with its trace and the kind's jobs built: ``policy`` the
    method's name, ``run`` its function and ``options`` its options; ``mechanism`` the name
    and ``settings`` its settings."""

    name: str
    kind: Kind
    cluster: Any
    trace: Trace
    jobs: Any
    policy: str
    run: Callable
    options: dict
    mechanism: str
    settings: dict
    window: tuple[int, int] | None
    tolerance: float
    finish_time_fairness: bool
    checking: Checking
    raw: dict
    source: str | None = None

    def left_out(self) -> list[str]:
        """A line each for what of its source the trace leaves out: the table's columns that
        no trace column reads (an operator's log has many: user, queue, ...) and the jobs
        dropped for more GPUs than measured (``larger``)."""
        trace, lines = self.trace, []
        if trace.ignored:
            lines.append(f"{trace.source}: {len(trace.ignored)} column(s) not read: "
                         f"{', '.join(trace.ignored)} (\"map\": {{TRACE COLUMN: "
                         f"\"{trace.ignored[0]}\"}} would read one)")
        if trace.dropped:
            lines.append(f"{trace.source}: {len(trace.dropped)} job(s) of the source with "
                         f"more GPUs than measured dropped (larger: drop): "
                         f"{_few(trace.dropped)}")
        return lines

    def described(self) -> str:
        """The document in one line: its name, kind, trace, policy and mechanism."""
        return (f"{self.name}: {self.kind.name}, {self.trace.n} jobs ({self.trace.source}), "
                f"policy {self.policy}, mechanism {self.mechanism}")


def _few(ids: tuple[str, ...], most: int = 5) -> str:
    """The first ``most`` ids, and how many more."""
    more = f" and {len(ids) - most:,} more" if len(ids) > most else ""
    return ", ".join(ids[:most]) + more


def load(source: str | Path | dict, root: str | Path | None = None) -> Document:
    """Read and check a replay document (a path or parsed data); raises
    :class:`~fairalloc.errors.SpecError` listing every problem with its JSON path (or, for a
    trace table's bad cells, with the table's file, line and column). A trace file's path is
    relative to ``root``: default the document's folder (the working directory for data)."""
    if isinstance(source, dict):
        data, label = plain(source, None, what="replay"), None
    else:
        data, label = read_json(source, what="replay")
    return from_data(data, label, root)


def anchored(data: dict, root: str | Path) -> dict:
    """The document with its trace table's path made absolute (resolved against ``root``, the
    document's folder), so that it names the same file from any working directory: a study
    stores its documents so, for ``--resume`` and ``study instance`` run elsewhere.

    >>> anchored({"trace": {"table": "jobs.csv"}}, "/data")["trace"]
    {'table': '/data/jobs.csv'}
    """
    table = _table_name(data)
    if table is None or Path(table).is_absolute():
        return data
    return {**data, "trace": {**data["trace"], "table": str((Path(root) / table).resolve())}}


def inputs(data: Any, root: str | Path) -> list[Path]:
    """The files a replay document (parsed data, checked or not) reads besides itself: its
    trace table or a simulator's trace file, found from ``root`` (the document's folder), so
    that a command refuses to write over one of them.

    >>> inputs({"trace": {"table": "jobs.csv"}}, "/data"), inputs({"trace": {"jobs": []}}, ".")
    ([PosixPath('/data/jobs.csv')], [])
    """
    table = _table_name(data)
    return [] if table is None else [Path(root) / table]


def _table_name(data: Any) -> str | None:
    """The file named by a document's ``trace.table``, if it names one."""
    trace = data.get("trace") if isinstance(data, dict) else None
    table = trace.get("table") if isinstance(trace, dict) else None
    return table if isinstance(table, str) else None


def from_data(data: Any, label: str | None, root: str | Path | None = None) -> Document:
    """Check a parsed replay document read from ``label`` (a path, ``<stdin>`` or None) as
    :func:`load` does."""
    found = Violations()
    if not isinstance(data, dict):
        found.add("$", "a replay document is a JSON object")
        raise SpecError(found.items, label, "replay")
    refuse_other_sort(data, ("replay",), label)
    data = without_schema_key(data, found)
    check_against(replay_schema(), _validator(), data, found)
    _whole_numbers(replay_schema(), data, [], found)
    if found:
        raise SpecError(found.items, label, "replay")
    if root is None:
        root = Path(label).parent if label and label != "<stdin>" else Path(".")
    doc = _checked(data, label, found, Path(root))
    if found or doc is None:
        raise SpecError(found.items, label, "replay")
    return doc


def _whole_numbers(rules: dict, value: Any, path: list, found: Violations) -> None:
    """A violation for each number written with a fraction or an exponent where the schema
    ``rules`` says integer (a seed, a count, a position): JSON Schema lets an integral float
    be an integer, but seeds, counts and slices take whole numbers (1e308 as a seed was a
    traceback)."""
    if isinstance(value, float) and "integer" in _types(rules):
        found.add(path, f"a whole number written in digits (as 7), not {json.dumps(value)}")
    for branch in rules.get("anyOf", ()):
        _whole_numbers({k: v for k, v in branch.items() if k != "type"}, value, path, found)
    if isinstance(value, dict):
        for key, rule in rules.get("properties", {}).items():
            if key in value:
                _whole_numbers(rule, value[key], [*path, key], found)
    elif isinstance(value, list) and isinstance(rules.get("items"), dict):
        for i, item in enumerate(value):
            _whole_numbers(rules["items"], item, [*path, i], found)


def _types(rules: dict) -> set[str]:
    """The JSON types ``rules`` admits by name (its ``type`` and those of its ``anyOf``)."""
    named = rules.get("type")
    out = set(named) if isinstance(named, list) else {named}
    return out | {branch.get("type") for branch in rules.get("anyOf", ())}


def _checked(data: dict, label: str | None, found: Violations, root: Path
             ) -> Document | None:
    """What the schema cannot check: the kind, its cluster, trace, policy and mechanism."""
    kind = KINDS.get(data["kind"]) if data["kind"] in KINDS else None
    if kind is None or kind.replay is None:
        with_replay = [name for name in KINDS if KINDS[name].replay is not None]
        found.add("kind", f"no kind {data['kind']!r} with a replay (kinds with one: "
                  f"{', '.join(with_replay)})")
        return None
    replay = kind.replay
    cluster = replay.cluster(data["cluster"], found)
    policy, run, options = _policy(kind, data.get("policy", {}), found)
    mechanism, settings = _mechanism(kind, data.get("mechanism", {"name": IDEAL}), found)
    measure = data.get("measure", {})
    checking = _checking(kind, measure.get("checks", {}), found)
    window = tuple(measure["window"]) if "window" in measure else None
    if window is not None and window[0] >= window[1]:
        found.add("measure.window", "the window is [first, last) with first < last")
    trace = _trace(kind, data["trace"], found, root)
    if found or cluster is None or trace is None:
        return None
    if window is not None and window[1] > trace.n:
        found.add("measure.window", f"the trace has {trace.n} jobs; the window ends at "
                  f"{window[1]}")
    jobs = replay.jobs(cluster, trace, found)
    if not found and trace.n:
        method = getattr(run, "base_of", lambda _: policy)(options)
        _serves(kind, cluster, jobs, method, options if method == policy else {}, found)
        _holds(kind, cluster, jobs, trace, data["trace"], mechanism == IDEAL, found)
        check = getattr(replay.mechanisms.get(mechanism), "check", None)
        if check is not None:
            check(cluster, jobs, trace.arrival, settings, found)
    if found:
        return None
    return Document(data["replay"], kind, cluster, trace, jobs, policy, run, options,
                    mechanism, settings, window, float(measure.get("tolerance",
                                                                   DEFAULT_TOLERANCE)),
                    bool(measure.get("finish_time_fairness", True)), checking, data, label)


def longer(doc: Document, until_s: float) -> Document | None:
    """The document with its generated continuous trace (a generator given a ``rate``) made
    to arrive until at least ``until_s`` (jobs arrive at a constant rate: the count times
    ``until_s`` over its last arrival, and a quarter more), by at least one job and at most
    twice as many (a window 500 times later than 5 jobs' last arrival would make thousands,
    and more load than the window's end was measured under), checked as any document; None
    for another trace, or when the checks refuse the longer one (the clock's limit, too many
    jobs at once). The "gavel" stream keeps its first jobs as they
    were (its draws go job by job); numpy's draws the whole trace anew at the new length."""
    trace = doc.raw.get("trace", {})
    if "generator" not in trace or trace.get("rate") is None or not doc.trace.n:
        return None
    last = float(doc.trace.arrival[-1])
    jobs = doc.trace.n * (1.25 * until_s / last if last > 0 else 2.0)
    jobs = min(2 * doc.trace.n, max(doc.trace.n + 1, math.ceil(jobs)))
    data = {**doc.raw, "trace": {**trace, "jobs": jobs}}
    try:
        return from_data(data, doc.source, Path("."))
    except SpecError:
        return None


def policies(kind: Kind) -> dict[str, Callable]:
    """Every policy a replay of the kind may name: its methods and its replay policies."""
    return {**kind.methods, **kind.replay.policies}


def policy_options(run: Callable) -> tuple[str, ...]:
    """The options a document may give a policy: its declared ones but ``memory`` (the state
    the engine hands a replay policy, not the user's)."""
    return tuple(o for o in method_options(run) if o != "memory")


def _policy(kind: Kind, data: dict, found: Violations) -> tuple[str, Callable | None, dict]:
    known = policies(kind)
    name = data.get("method", kind.replay.default_policy or kind.default)
    if name not in known:
        found.add("policy.method", f"unknown policy {name!r} for {kind.name} (known: "
                  f"{', '.join(known)})")
        return name, None, {}
    run = known[name]
    declared = policy_options(run)
    options = {k: v for k, v in data.items() if k != "method"}
    for key in options:
        if key not in declared:
            found.add(["policy", key], f"{name} takes no option {key!r}"
                      + (f" (it takes: {', '.join(declared)})" if declared else ""))
    check = getattr(run, "check_options", None)   # a replay policy checking its values
    if check is not None:
        check(options, found)
    if name in kind.methods:
        check_against(*_options_rules(kind.name, KINDS.generation), {"policy": options}, found)
    return name, run, options


@functools.cache
def _options_rules(kind: str, generation: int) -> tuple[dict, Any]:
    """The JSON Schema of a replay's ``policy`` when it is a method of ``kind``: its options'
    types and ranges as a spec of the kind states them (an option the method does not take is
    reported apart), and its validator (``generation``: the registry's, as ``schema``)."""
    options = {**schema(kind)["properties"]["options"], "additionalProperties": True}
    rules = {"type": "object", "properties": {"policy": options}}
    return rules, jsonschema_rs.validator_for(rules)


def _serves(kind: Kind, cluster: Any, jobs: Any, method: str, options: dict,
            found: Violations) -> None:
    """A method of the kind (or the one a wrapper runs) that cannot serve this cluster's
    problems (drf's ``lp`` on whole tasks), or not with the policy's ``options`` (a
    worker type the cluster lacks), is a bad document: asked of the first job alone. A
    refused option is named at its place in the policy."""
    if method not in kind.methods:
        return
    replay = kind.replay
    first = np.zeros(1, dtype=np.int64)
    problem = replay.problem(cluster, jobs, first, np.asarray(replay.work(jobs))[first],
                             np.zeros(1))
    try:
        kind.methods[method](problem, **options)
    except MethodDoesNotApply as exc:
        for v in exc.violations:
            if v.path.startswith("options."):
                found.add(f"policy.{v.path.removeprefix('options.')}", v.rule)
            else:
                found.add("policy.method", f"{method} cannot serve this cluster: {v.rule}")


def _holds(kind: Kind, cluster: Any, jobs: Any, trace: Trace, data: dict, ideal: bool,
           found: Violations) -> None:
    """Refuse a trace with more than ``MOST_AT_ONCE`` jobs active at once for certain (each
    job active from its arrival for at least its least time, the cluster able to end no more
    than the least cluster-time of jobs it holds): the policy solves over every active job at
    each change. ``ideal`` solves at every arrival: more than ``MOST_SOLVED`` jobs solved over
    at the arrivals alone are refused too."""
    active = at_once(trace.arrival, *kind.replay.least(cluster, jobs))
    path = "trace.jobs" if "jobs" in data else "trace"
    if active.max() > MOST_AT_ONCE:
        found.add(path, f"{active.max():,} jobs are active at once; a replay holds at most "
                  f"{MOST_AT_ONCE:,} (jobs arriving over a longer time are fine)")
    elif ideal and active.sum() > MOST_SOLVED:
        found.add(path, f"ideal solves over at least {active.sum():,} active jobs at their "
                  f"arrivals; a replay solves over at most {MOST_SOLVED:,} (rounds re-solve "
                  "at most every reset_s; or fewer jobs)")


def _mechanism(kind: Kind, data: dict, found: Violations) -> tuple[str, dict]:
    name = data["name"]
    known = [IDEAL, *kind.replay.mechanisms]
    if name not in known:
        found.add("mechanism.name", f"unknown mechanism {name!r} (known: {', '.join(known)})")
    settings = {k: v for k, v in data.items() if k != "name"}
    if name == IDEAL and settings:
        found.add(["mechanism", next(iter(settings))], "ideal takes no settings")
    return name, settings


def _checking(kind: Kind, data: dict, found: Violations) -> Checking:
    names = data.get("names")
    if names is not None:
        for unknown in kind.unknown_checks(names):
            found.add(["measure", "checks", "names", names.index(unknown)],
                      f"no check {unknown!r} in {kind.name} (checks: "
                      f"{', '.join(kind.check_names())})")
    return Checking(int(data.get("every", 0)), names)


def _trace(kind: Kind, data: dict, found: Violations, root: Path) -> Trace | None:
    """The trace: from a table, the shipped production trace, the jobs listed or a
    generator's (seeded)."""
    source = next((key for key in ("table", "shipped") if key in data), None)
    if source is not None and isinstance(data.get("jobs"), list):
        found.add("trace.jobs", f"a {source} trace takes a count (\"jobs\": N keeps its first "
                  "N jobs), not a list of jobs")
    if "table" in data:
        return _table(kind, data, found, root)
    if "shipped" in data:
        return _shipped(kind, data, found)
    if isinstance(data.get("jobs"), list):
        foreign = [k for k in data if k != "jobs"]
        for key in foreign:
            found.add(["trace", key], "a listed trace has only \"jobs\"")
        return None if foreign else listed(data["jobs"], kind.replay.columns(), found)
    generators = kind.replay.generators
    name = data.get("generator")
    if name not in generators:
        found.add("trace.generator", f"give a generator ({', '.join(generators)}) or "
                  "\"jobs\": [...]" if name is None else
                  f"unknown generator {name!r} (known: {', '.join(generators)})")
        return None
    make = generators[name]
    params = {k: v for k, v in data.items() if k != "generator"}
    signature = inspect.signature(make)
    for key in params:
        if key not in signature.parameters:
            found.add(["trace", key], f"{name} takes no parameter {key!r} (it takes: "
                      f"{', '.join(signature.parameters)})")
    for key, param in signature.parameters.items():
        if param.default is inspect.Parameter.empty and key not in params:
            found.add(["trace", key], f"{name} needs {key!r}")
        elif key in params and not _fits(params[key], param.annotation):
            found.add(["trace", key], f"{key} is {_wanted(param.annotation)}, not "
                      f"{json.dumps(params[key])}")
    if found:
        return None
    try:      # a rate of 5e-324 makes infinite arrivals, refused below: no warning
        with np.errstate(over="ignore", invalid="ignore"):
            trace = make(**params)
    except ValueError as exc:       # a parameter's value the generator refuses
        found.add("trace", str(exc))
        return None
    last = float(trace.arrival[-1]) if trace.n else 0.0
    if not last <= ARRIVAL.at_most:    # a rate so low the clock cannot hold the arrivals
        found.add(["trace", "rate" if "rate" in params else "jobs"],
                  f"the jobs generated arrive until {last:g} s, past {ARRIVAL.at_most:g} s "
                  "(a replay's clock ends there): a higher rate or fewer jobs")
        return None
    return trace


WANTED = {"int": "a whole number >= 0 (in digits, as 7)", "float": "a number > 0",
          "bool": "true or false", "str": "a string"}


def _fits(value: Any, annotation: str) -> bool:
    """Whether a JSON value fits a generator parameter's annotation (int, float, bool, str;
    with ``| None``, null too): counts and seeds whole numbers >= 0, rates numbers > 0."""
    text = str(annotation)
    if value is None:
        return "None" in text
    if text.startswith("bool"):
        return isinstance(value, bool)
    if text.startswith("str"):
        return isinstance(value, str)
    if isinstance(value, bool):
        return False
    if text.startswith("int"):
        return isinstance(value, int) and value >= 0
    if text.startswith("float"):
        return isinstance(value, (int, float)) and value > 0
    return False


def _wanted(annotation: str) -> str:
    """What a generator parameter of ``annotation`` takes, in words."""
    text = str(annotation)
    words = WANTED.get(text.split("|")[0].strip(), text)
    return words + (" or null" if "None" in text else "")


def listed(jobs: list[dict], kinds: dict[str, Column], found: Violations) -> Trace | None:
    """A trace from jobs given in the document: ``id``, ``arrival`` (s, default 0) and the
    kind's columns ``kinds`` (name -> ``Column``) as keys (a nested object ``{"throughput":
    {"v100": 4}}`` becomes the columns ``throughput.v100``), each value checked by its
    column's type and rules as a table's cells are."""
    ids = [job["id"] for job in jobs]
    seen: set[str] = set()
    for i, job_id in enumerate(ids):
        if job_id in seen:
            found.add(["trace", "jobs", i, "id"], f"duplicate id {job_id!r}")
        seen.add(job_id)
    rows = [_flat(job) for job in jobs]
    for row in rows:
        row.setdefault("arrival", 0.0)
    kinds = {"arrival": ARRIVAL, "tenant": TENANT, **kinds}
    names = list(dict.fromkeys(key for row in rows for key in row if key != "id"))
    columns = {}
    for name in names:
        spec = _column_of(name, kinds)
        missing = [i for i, row in enumerate(rows) if name not in row]
        if spec is None:
            first = next(i for i, row in enumerate(rows) if name in row)
            known = ", ".join(k + "<name>" if k.endswith(".") else k for k in kinds)
            found.add(["trace", "jobs", first, *name.split(".")],
                      f"no such key (a job has: id, {known})")
        elif missing and spec.default is None:
            found.add(["trace", "jobs", missing[0]], f"every job gives {name!r} when one does "
                      "(it has no default)")
        else:      # a job without a value that has a default takes it, as a table's does
            columns[name], bad = listed_column([row.get(name, spec.default) for row in rows],
                                               name, spec)
            for i, rule in bad:
                found.add(["trace", "jobs", i, *name.split(".")], rule)
    if found:
        return None
    return Trace.of(ids, columns.pop("arrival"), columns, source="listed")


def _column_of(name: str, kinds: dict[str, Column]) -> Column | None:
    """The column ``name`` is: its own, or that of the family (``throughput.``) it is in."""
    if name in kinds:
        return kinds[name]
    family = name[:name.index(".") + 1] if "." in name else None
    return kinds.get(family)


def _flat(job: dict, prefix: str = "") -> dict:
    out = {}
    for key, value in job.items():
        if isinstance(value, dict):
            out.update(_flat(value, f"{prefix}{key}."))
        else:
            out[f"{prefix}{key}"] = value
    return out


SHIPPED = {"elasticflow": elasticflow}       # production traces shipped with fairalloc
TYPING_KEYS = ("types_seed", "larger")       # how a trace of durations and GPUs is typed
TABLE_KEYS = {"table", "map", "format", "jobs", *TYPING_KEYS}
SHIPPED_KEYS = {"shipped", "cluster", "jobs", *TYPING_KEYS}


def _table(kind: Kind, data: dict, found: Violations, root: Path) -> Trace | None:
    """``{"table": FILE, "map": {trace column: table column}}``: the kind's columns from a
    CSV, TSV or Parquet file; with ``types_seed`` and ``larger``, a log of durations and GPU
    counts typed as the shipped trace is (``Replay.untyped``, ``Replay.typed``); or
    ``{"table": FILE, "format": NAME}``: a simulator's own trace file (hetero: ``gavel``).
    ``"jobs": N`` keeps the first N (in arrival order). A bad cell is refused with the file,
    its line and column (a ``SpecError`` of the table)."""
    replay = kind.replay
    _foreign(data, TABLE_KEYS, "a table trace", found)
    fmt, mapping = data.get("format"), data.get("map")
    typing = [key for key in TYPING_KEYS if key in data]
    if fmt is not None and fmt not in replay.formats:
        found.add("trace.format", f"unknown trace format {fmt!r} for {kind.name} (known: "
                  f"{', '.join(replay.formats) or 'none'})")
    elif fmt is None and replay.table is None:
        found.add("trace.table", f"{kind.name} reads no trace from a table")
    if fmt is not None and mapping is not None:
        found.add("trace.map", f"a {fmt} trace file is read as it is, without a map")
    if typing and fmt is not None:
        found.add(["trace", typing[0]], f"a {fmt} trace file gives its jobs' types; "
                  f"{' and '.join(TYPING_KEYS)} type a table of durations and GPU counts")
    elif typing and kind.replay.untyped is None:
        found.add(["trace", typing[0]], f"{kind.name} reads no table of durations and GPUs")
    elif typing:
        _typing(kind, data, "a table of durations and GPU counts", found)
    path = root / data["table"]
    try:
        check_input(path, pipes=False)      # never opened here: a pipe could block
    except OSError:
        found.add("trace.table", f"no such file: {data['table']} (looked in {root})")
    except InputRefused as exc:
        found.add("trace.table", f"{data['table']} {exc.rule}")
    if found:
        return None
    read = replay.formats[fmt] if fmt is not None else \
        functools.partial(replay.untyped if typing else replay.table, mapping=mapping)
    try:
        trace = read(str(path))
    except ArgumentError as exc:       # a map naming a column the kind's trace does not have
        log = fmt is None and not typing and _fits_a_log(kind, str(path), mapping)
        found.add(["trace", "map"], exc.rule + ("; the map fits a log of durations and GPU "
                                                "counts, which types_seed and larger type"
                                                if log else ""))
        return None
    if typing:
        trace = _typed(kind, trace, data, found)
    return None if trace is None else _first(trace, data.get("jobs"))


def _fits_a_log(kind: Kind, path: str, mapping: dict | None) -> bool:
    """Whether ``mapping`` names columns of the kind's log of durations and GPU counts (its
    table read as one gives no error of the map): read again only to word a refusal."""
    if kind.replay.untyped is None:
        return False
    try:
        kind.replay.untyped(path, mapping=mapping)
    except ArgumentError:
        return False
    except SpecError:       # the map fits; a cell or a missing column is another matter
        pass
    return True


def _shipped(kind: Kind, data: dict, found: Violations) -> Trace | None:
    """``{"shipped": "elasticflow", "cluster": C, "types_seed": S, "larger": "drop"|"cap"}``:
    the production trace shipped with fairalloc (one cluster, or all ten without
    ``cluster``), its jobs given the kind's columns by a seeded draw (``Replay.typed``), its
    arrivals shifted so the first job arrives at 0 (the trace's clock starts before any
    cluster's first job). ``"jobs": N`` keeps the first N jobs replayed (after any drop).
    """
    _foreign(data, SHIPPED_KEYS, "a shipped trace", found)
    name = data["shipped"]
    if name not in SHIPPED:
        found.add("trace.shipped", f"no shipped trace {name!r} (shipped: "
                  f"{', '.join(SHIPPED)})")
    _typing(kind, data, "a shipped trace", found)
    cluster = data.get("cluster")
    if cluster is not None and cluster not in CLUSTERS:
        found.add("trace.cluster", f"no cluster {cluster!r} in the ElasticFlow trace "
                  f"(clusters: {', '.join(CLUSTERS)})")
    if found:
        return None
    typed = _typed(kind, SHIPPED[name](cluster), data, found)
    if typed is None:
        return None
    typed = _first(typed, data.get("jobs"))
    start = typed.arrival[0] if typed.n else 0.0
    return replace(typed, arrival=typed.arrival - start, source=f"{name}:{cluster or 'all'}")


def _typing(kind: Kind, data: dict, what: str, found: Violations) -> None:
    """A violation unless the kind can type a trace of durations and GPU counts and ``data``
    says how (``types_seed`` and ``larger``, no default: each changes the load)."""
    if kind.replay.typed is None:
        found.add(["trace", "shipped" if "shipped" in data else TYPING_KEYS[0]],
                  f"{kind.name} cannot type a trace of durations and GPUs")
    for key in TYPING_KEYS:
        if key not in data:
            found.add(["trace", key], f"{what} needs {key!r} (types_seed: the seed of the "
                      "types drawn; larger: drop or cap the jobs of more GPUs than measured)")


def _typed(kind: Kind, trace: Trace, data: dict, found: Violations) -> Trace | None:
    """The trace's jobs given the kind's columns by the seeded draw ``data`` asks for, typed
    whole before any cut (a job's type does not depend on ``"jobs"``)."""
    try:
        typed, dropped = kind.replay.typed(trace, data["types_seed"], larger=data["larger"])
    except ArgumentError as exc:
        found.add(["trace", exc.argument], exc.rule)
        return None
    return replace(typed, dropped=tuple(dropped))


def _foreign(data: dict, allowed: set[str], what: str, found: Violations) -> None:
    for key in data:
        if key not in allowed:
            found.add(["trace", key], f"{what} takes only {', '.join(sorted(allowed))}")


def _first(trace: Trace, jobs: int | None) -> Trace:
    """The first ``jobs`` jobs of the trace in arrival order (all when None)."""
    return trace if jobs is None else trace.take(slice(0, jobs))
