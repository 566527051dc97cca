"""A study spec (``fairalloc study run STUDY.json``): read strictly, checked, and expanded into
instances and tasks — one task per (instance, method, repeat), the unit the store keeps a row of.

A study names a kind, where its instances come from (the kind's ``random_spec``, spec files, or
one base spec), a grid over generator parameters or spec keys, the methods, the reference each
objective is divided by, a seed, repeats, a time limit and the checks and metrics kept. Instance
k of every grid point is drawn from the k-th child of ``numpy.random.SeedSequence(seed)``, so
two studies with different seeds share no instance, and the grid points of one study share
theirs (common random numbers: a difference between points is the parameter's, not the draw's).
"""

from __future__ import annotations

import glob
import hashlib
import inspect
import itertools
import json
import os
import types
import typing
from collections.abc import Iterator, Sequence
from dataclasses import dataclass
from functools import cache
from importlib import resources
from pathlib import Path
from typing import Any

import jsonschema_rs
import numpy as np

from fairalloc.contract import method_options
from fairalloc.documents import refuse_other_sort, sort_of
from fairalloc.engine import sweep_values
from fairalloc.errors import ArgumentError, InputRefused, SpecError, Violations
from fairalloc.files import check_input
from fairalloc.registry import KINDS
from fairalloc.replay import document as replays
from fairalloc.spec import (
    TYPE_WORDS,
    build,
    check_against,
    plain,
    read_json,
    set_path,
    without_schema_key,
)

MAX_GRID_POINTS = 100_000
MAX_TASKS = 10_000_000
CHECKED_POINTS = 1_000          # grid points whose first instance is built before a run starts

# columns of the store's ``runs`` table that a grid key must not shadow
RESERVED = ("study", "instance", "method", "repeat", "seed", "status", "objective", "gap",
            "bound", "reference_bound", "time_s", "error", "worker", "finished", "reference",
            "reference_status", "ratio", "result", "replay_jobs", "replay_utilization")
REPLAY = "replay"               # a recipe's tag: the instance is a replay document
POLICY_KEY = "policy.method"    # a replay study's grid key that is its methods (policies)
# a replay study's own document says what it measures and how its policy runs
NOT_FOR_REPLAYS = ("checks", "metrics", "reference", "results", "time_limit", "solver")


@cache
def study_schema() -> dict:
    """The JSON Schema of a study spec (``fairalloc/schemas/study.schema.json``)."""
    text = resources.files("fairalloc.schemas").joinpath("study.schema.json").read_text()
    return json.loads(text)


@cache
def _validator():
    return jsonschema_rs.validator_for(study_schema())


@dataclass(frozen=True)
class Instance:
    """One instance of a study: its id, seed (None for a spec file), grid point and file."""

    id: int
    seed: int | None
    point: tuple[tuple[str, Any], ...]
    source: str | None


@dataclass(frozen=True)
class Task:
    """One method run on one instance (what a worker gets): enough to re-make the instance."""

    study: str
    kind: str
    instance: Instance
    recipe: tuple                  # ("generate", {parameters}) or ("spec", raw spec)
    edits: tuple[tuple[str, Any], ...]   # spec keys the grid sets, applied after the recipe
    method: str
    repeat: int
    options: tuple[tuple[str, Any], ...]
    checks: tuple[str, ...] | None
    metrics: tuple[str, ...]
    bound: bool                    # compute the kind's bound on the optimum (the reference)
    keep_result: bool = False      # store the whole result as JSON (the study's ``results``)
    solver: tuple[tuple[str, Any], ...] = ()   # engine.SolverSettings' keywords (threads, ...)

    @property
    def key(self) -> tuple[int, str, int]:
        return (self.instance.id, self.method, self.repeat)


def study_name(subject: str, what: str) -> str:
    """``subject: what`` as a study's name (a command that builds a study names it after its
    spec), cut to the schema's longest name with a hash of the whole kept, so that two long
    names still name two studies.

    >>> len(study_name("x" * 300, "sweep of knob")), study_name("spec", "sweep of knob")
    (200, 'spec: sweep of knob')
    """
    name = f"{subject}: {what}"
    longest = study_schema()["properties"]["study"]["maxLength"]
    if len(name) <= longest:
        return name
    digest = hashlib.sha256(name.encode("utf-8", "surrogatepass")).hexdigest()[:8]
    return f"{name[:longest - len(digest) - 2]}… {digest}"


def generator_parameters(random_spec) -> tuple[str, ...]:
    """The size parameters of a kind's ``random_spec(seed, **size)``."""
    return tuple(list(inspect.signature(random_spec).parameters)[1:])


def generator_types(random_spec) -> dict[str, Any]:
    """The annotated type of each size parameter of ``random_spec``: the rules a study's
    ``generate`` values (and grid values of its parameters) follow (``Literal[...]`` names
    the choices a text parameter has)."""
    try:
        hints = typing.get_type_hints(random_spec)
    except (NameError, TypeError):     # an annotation that does not resolve: no rule from it
        return {}
    return {name: hints[name] for name in generator_parameters(random_spec) if name in hints}


def conformed(value: Any, hint: Any) -> tuple[Any, str | None]:
    """``value`` as a parameter annotated ``hint`` takes it (a whole float as an int, as
    problem specs take one), and the rule it breaks (None when it fits).

    >>> conformed(3.0, int), conformed("Linear", typing.Literal["linear", "two-phase"])
    ((3, None), ('Linear', 'must be one of "linear", "two-phase"'))
    """
    origin = typing.get_origin(hint)
    if origin is typing.Literal:
        fits = any(value == c and type(value) is type(c) for c in typing.get_args(hint))
    elif origin in (typing.Union, types.UnionType):
        for member in typing.get_args(hint):
            made, rule = conformed(value, member)
            if rule is None:
                return made, None
        fits = False
    elif hint is int and isinstance(value, float) and value.is_integer():
        return int(value), None
    elif hint in _JSON_TYPES:
        fits = isinstance(value, hint) and not (isinstance(value, bool) and hint is not bool)
        fits = fits or (hint is float and isinstance(value, int) and not isinstance(value, bool))
    else:
        fits = True                     # a type the study spec cannot express: not checked
    return value, None if fits else f"must be {_words(hint)}"


_JSON_TYPES = {int: "integer", float: "number", bool: "boolean", str: "string",
               type(None): "null"}


def _words(hint: Any) -> str:
    """An annotation in the words of a schema rule."""
    if typing.get_origin(hint) is typing.Literal:
        return "one of " + ", ".join(json.dumps(c) for c in typing.get_args(hint))
    if typing.get_origin(hint) in (typing.Union, types.UnionType):
        return " or ".join(map(_words, typing.get_args(hint)))
    return TYPE_WORDS.get(_JSON_TYPES.get(hint), "a value")


def instance_seeds(seed: int, count: int) -> list[int]:
    """``count`` independent 63-bit seeds: the children of ``SeedSequence(seed)``.

    >>> a, b = instance_seeds(1, 3), instance_seeds(2, 3)
    >>> len(set(a) | set(b)), instance_seeds(1, 2) == a[:2]
    (6, True)
    """
    children = np.random.SeedSequence(seed).spawn(count)
    return [int(c.generate_state(1, np.uint64)[0] >> 1) for c in children]


def make_instance(kind: str, recipe: tuple, seed: int | None,
                  edits: tuple[tuple[str, Any], ...]) -> dict:
    """The raw spec of an instance: the kind's ``random_spec(seed, **parameters)`` or a spec
    file's data, with the grid's spec keys set."""
    how, what = recipe[:2]
    raw = KINDS[kind].random_spec(seed, **what) if how == "generate" else what
    for key, value in edits:
        raw = set_path(raw, key, value)
    return raw


@dataclass(frozen=True)
class Study:
    """A checked study spec. ``spec`` is the data as given (stored with the rows); ``files``
    the spec files' (path, data) for ``specs`` and ``base`` instances (a replay document's
    trace table made absolute, so that it is found from anywhere); ``written`` their data as
    the files have it (the table as the user wrote it: what a report shows; empty when the
    files were given as a store keeps them)."""

    name: str
    kind: str
    spec: dict
    source: str | None
    generate: dict | None
    count: int
    files: tuple[tuple[str, dict], ...]
    grid: tuple[tuple[str, tuple], ...]
    generated_keys: frozenset
    methods: tuple[str, ...]
    reference: str
    seed: int
    repeat: int
    time_limit: float | None
    checks: tuple[str, ...] | None
    metrics: tuple[str, ...]
    keep_results: bool = False
    solver: tuple[tuple[str, Any], ...] = ()   # the study's solver settings (threads, mip_gap)
    log: bool = False              # each task streams HiGHS's log to its worker's stderr
    replay: bool = False           # the instances are replay documents, the methods policies
    written: tuple[dict, ...] = ()

    @property
    def points(self) -> list[tuple[tuple[str, Any], ...]]:
        """The grid's points (the cartesian product of its keys' values), or one empty point."""
        keys = [k for k, _ in self.grid]
        return [tuple(zip(keys, values))
                for values in itertools.product(*(v for _, v in self.grid))]

    @property
    def data_files(self) -> list[Path]:
        """The files its spec files read (a replay document's trace table), each once: its
        rows depend on their bytes too."""
        read = [t for label, data in self.files for t in replays.inputs(data, Path(label).parent)]
        return list(dict.fromkeys(read))

    @property
    def per_point(self) -> int:
        return self.count if self.generate is not None else len(self.files)

    @property
    def instance_count(self) -> int:
        return len(self.points) * self.per_point

    @property
    def task_count(self) -> int:
        return self.instance_count * len(self.methods) * self.repeat

    def instances(self) -> Iterator[Instance]:
        """Every instance, point by point; ids run 0, 1, ... in this order."""
        seeds = (instance_seeds(self.seed, self.count) if self.generate is not None
                 else [None] * len(self.files))
        sources = [None] * self.count if self.generate is not None else [f for f, _ in self.files]
        for p, point in enumerate(self.points):
            for k in range(self.per_point):
                yield Instance(p * self.per_point + k, seeds[k], point, sources[k])

    def recipe(self, instance: Instance) -> tuple[tuple, tuple[tuple[str, Any], ...]]:
        """How to make an instance: the recipe and the spec-key edits of its grid point."""
        varied = dict(instance.point)
        edits = tuple((k, v) for k, v in instance.point if k not in self.generated_keys)
        if self.generate is not None:
            made = {**self.generate, **{k: v for k, v in varied.items()
                                        if k in self.generated_keys}}
            return ("generate", made), edits
        raw = dict(self.files)[instance.source]
        if self.replay:     # its trace files are found beside it, wherever a task runs
            return (REPLAY, raw, str(Path(instance.source).parent.resolve())), edits
        return ("spec", raw), edits

    def instance_spec(self, instance: Instance, method: str | None = None) -> dict:
        """The raw spec of one instance (``fairalloc study instance``). A replay study's is
        the replay document a row ran: its grid point's keys set and the row's ``method`` as
        its policy (None: the study's only policy; a study of several must be told which,
        else :class:`ArgumentError`). Another study's spec is every method's."""
        recipe, edits = self.recipe(instance)
        raw = make_instance(self.kind, recipe, instance.seed, edits)
        if method is not None and method not in self.methods:
            raise ArgumentError("method", f"{method!r} is not a {self.word} of study "
                                f"{self.name} (its {self.word}s: {', '.join(self.methods)})")
        if not self.replay:
            return raw
        if method is None and len(self.methods) > 1:
            raise ArgumentError("method", f"the rows of instance {instance.id} ran "
                                f"{len(self.methods)} policies, each its own document: name "
                                f"one ({', '.join(self.methods)})")
        return with_policy(raw, method or self.methods[0])

    @property
    def word(self) -> str:
        """What the study's methods are: a replay study's are policies."""
        return "policy" if self.replay else "method"

    def tasks(self, done: set | frozenset = frozenset()) -> Iterator[Task]:
        """Every task whose (instance, method, repeat) is not in ``done``."""
        kind = KINDS[self.kind]
        options = {m: (("time_limit", self.time_limit),)
                   if self.time_limit is not None
                   and "time_limit" in method_options(kind.methods[m]) else ()
                   for m in self.methods}
        bound = self.reference in ("lower_bound", "upper_bound")
        solver = self.solver + ((("log", True),) if self.log else ())
        for instance in self.instances():
            recipe, edits = self.recipe(instance)
            for method in self.methods:
                for r in range(self.repeat):
                    if (instance.id, method, r) in done:
                        continue
                    yield Task(self.name, self.kind, instance, recipe, edits, method, r,
                               options[method], self.checks, self.metrics, bound,
                               self.keep_results, solver)


def as_integers(rules: dict, value: Any) -> Any:
    """``value`` with every whole float at a place the schema ``rules`` types ``integer`` made
    an int: JSON Schema counts 1.0 as an integer (so ``seed: 1.0`` passes it), and problem
    specs take such numbers as the ints they are.

    >>> as_integers(study_schema(), {"seed": 1.0, "solver": {"threads": 2.0, "mip_gap": 0.0}})
    {'seed': 1, 'solver': {'threads': 2, 'mip_gap': 0.0}}
    """
    if rules.get("type") == "integer" and isinstance(value, float) and value.is_integer():
        return int(value)
    if isinstance(value, dict):
        properties = rules.get("properties", {})
        return {k: as_integers(properties.get(k, {}), v) for k, v in value.items()}
    return value


def grid_values(value: Any) -> tuple:
    """A grid key's values: a list as given, or ``{start, stop, step}`` (stop included)."""
    if isinstance(value, list):
        return tuple(value)
    return tuple(sweep_values(value["start"], value["stop"], value["step"]))


def load_study(source: str | Path | dict, root: str | Path | None = None,
               known: dict[str, dict] | None = None,
               files: Sequence[tuple[str, dict]] | None = None) -> Study:
    """Read a study spec from a file (or parsed data: spec files are then found from ``root``,
    default the working directory) and check it: the study schema, then what the kind allows.
    ``known`` maps spec paths to data already read (a spec from stdin, or edited by a command
    that builds the study); those are not read again. ``files``: the (file, data) of every
    spec file the instances come from, in order (as a store keeps them); no file is read.

    Raises :class:`~fairalloc.errors.SpecError` (``invalid study``) listing every problem with
    its JSON path.
    """
    if isinstance(source, dict):
        data, label = plain(source, None, what="study"), None
        base = Path(root or ".")
    else:
        data, label = read_json(source, what="study")
        base = Path(root) if root else (Path(source).parent if label != "<stdin>" else Path("."))
    found = Violations()
    if not isinstance(data, dict):
        found.add("$", "a study must be a JSON object")
        _raise(found, label)
    refuse_other_sort(data, ("study",), label)
    data = without_schema_key(data, found)
    check_against(study_schema(), _validator(), data, found)
    if found:
        # report what the kind refuses too where the structure allows (as problem specs do)
        try:
            _checked(data, label, base, Violations() if _shapeless(data) else found, known,
                     files)
        except (KeyError, TypeError, AttributeError, ValueError, IndexError, SpecError):
            pass
        _raise(found, label)
    study = _checked(data, label, base, found, known, files)
    _raise(found, label)
    _try_points(study, found)
    _raise(found, label)
    return study


def _shapeless(data: dict) -> bool:
    """Whether the keys the kind's checks read are missing (they would only repeat the
    schema's complaint)."""
    return not (isinstance(data.get("kind"), str) and isinstance(data.get("instances"), dict))


def _raise(found: Violations, label: str | None) -> None:
    if found:
        raise SpecError(found.items, label, what="study")


def _checked(data: dict, label: str | None, base: Path, found: Violations,
             known: dict[str, dict] | None = None,
             given: Sequence[tuple[str, dict]] | None = None) -> Study | None:
    """The study, after the checks the schema cannot make (they need the kind's record)."""
    spec, data = data, as_integers(study_schema(), data)
    kind_name = data["kind"]
    if kind_name not in KINDS:
        found.add(["kind"], f"unknown problem kind (known: {', '.join(KINDS)})")
        return None
    kind = KINDS[kind_name]
    where = data["instances"]
    generate = where.get("generate")
    parameters = generator_parameters(kind.random_spec)
    typed = generator_types(kind.random_spec)
    if generate is not None:
        generate = dict(generate)
        for key, value in generate.items():
            if key not in parameters:
                found.add(["instances", "generate", key], f"not a parameter of {kind_name}'s "
                          f"random_spec (its parameters: {', '.join(parameters) or 'none'})")
            elif key in typed:
                generate[key], rule = conformed(value, typed[key])
                if rule:
                    found.add(["instances", "generate", key], rule)
    elif "count" in where:
        found.add(["instances", "count"], "count goes with generate (spec files are counted)")
    files, written = (list(given), []) if given is not None else \
        _spec_files(where, kind_name, base, found, known or {})
    replay = bool(files) and all(is_replay(d) for _, d in files)
    policies = None
    if replay:
        policies = _replay_settings(data, kind, files, found)
    grid, generated = [], set()
    for key, value in data.get("grid", {}).items():
        if replay and key == POLICY_KEY:
            continue
        path = ["grid", key]
        if replay and key == POLICY_KEY.split(".")[0]:
            # rows are labelled by their method: a whole policy varied here would run one
            # method under another's name
            found.add(path, f"vary the policies by {POLICY_KEY}; a policy's options go in the "
                      "replay document (its own policy keeps them)")
            continue
        if key in RESERVED or key.startswith(("check.", "metric.")):
            found.add(path, f"{key!r} names a column of the results; choose another key")
        if generate is not None and key in generate:
            found.add(path, "also given in instances.generate: a key is fixed or varied, "
                      "not both")
        if generate is not None and key in parameters:
            generated.add(key)
        try:
            values = grid_values(value)
        except ValueError as exc:
            found.add(path, str(exc))
            continue
        if key in generated and key in typed:
            values = tuple(_conformed_value(v, typed[key], path, found) for v in values)
        grid.append((key, values))
    methods = policies or tuple(data.get("methods") or kind.methods)
    known_methods = replays.policies(kind) if replay else kind.methods
    for i, m in enumerate(methods):
        if m not in known_methods:
            where_ = ["grid", POLICY_KEY, i] if replay and POLICY_KEY in data.get("grid", {}) \
                else ["methods", i]
            found.add(where_, f"unknown {'policy' if replay else 'method'} for {kind_name} "
                      f"(known: {', '.join(known_methods)})")
    if replay:
        _check_policy_options(kind_name, grid, methods, found)
    # a replay has no objective to divide: its rows' ratio stays empty
    reference = "best" if replay else \
        data.get("reference") or ("exact" if kind.exact in methods else "best")
    if not replay:
        _check_reference(kind, reference, methods, found)
    checks = data.get("checks")
    for i, c in enumerate(checks or ()):
        if kind.unknown_checks([c]):
            found.add(["checks", i], f"unknown check for {kind_name} (known: "
                      f"{', '.join(kind.check_names())})")
    if found:
        return None
    study = Study(
        name=data["study"], kind=kind_name, spec=spec, source=label, generate=generate,
        count=where.get("count", 1), files=tuple(files), written=tuple(written),
        grid=tuple(grid),
        generated_keys=frozenset(generated), methods=methods, reference=reference,
        seed=data.get("seed", 0), repeat=data.get("repeat", 1),
        time_limit=data.get("time_limit"),
        checks=tuple(checks) if checks is not None else None,
        metrics=tuple(data.get("metrics", kind.sweep_metrics)),
        keep_results=data.get("results", False),
        solver=tuple(sorted(data.get("solver", {}).items())), replay=replay)
    points = 1
    for _, values in grid:
        points *= len(values)
    if points > MAX_GRID_POINTS:
        found.add(["grid"], f"{points} points; a study takes at most {MAX_GRID_POINTS}")
    elif study.task_count > MAX_TASKS:
        found.add("$", f"{study.task_count} tasks (instances x methods x repeat); a study "
                       f"takes at most {MAX_TASKS}")
    return study


def _conformed_value(value: Any, hint: Any, path: list, found: Violations) -> Any:
    """A grid value of a generator parameter as the parameter takes it; a violation if it
    does not fit."""
    made, rule = conformed(value, hint)
    if rule:
        found.add(path, f"{json.dumps(value)[:40]}: {rule}")
    return made


def _check_reference(kind, reference: str, methods: tuple, found: Violations) -> None:
    path = ["reference"]
    if reference == "exact":
        if kind.exact is None:
            found.add(path, f"{kind.name} has no exact method (use best)")
        elif kind.exact not in methods:
            found.add(path, f"the exact method {kind.exact} must be among the methods")
    elif reference in ("lower_bound", "upper_bound"):
        wanted = "lower_bound" if kind.sense == "min" else "upper_bound"
        if kind.bound is None:
            found.add(path, f"{kind.name} has no bound on its optimum (use exact or best)")
        elif reference != wanted:
            found.add(path, f"{kind.name} {kind.sense}imises: its bound on the optimum is "
                            f"{wanted.replace('_', ' ')}")


def _spec_files(where: dict, kind_name: str, base: Path, found: Violations,
                known: dict[str, dict]) -> tuple[list[tuple[str, dict]], list[dict]]:
    """The (path, data) of every spec file named by ``specs`` (globs) or ``base`` (``known``
    ones as given), a replay document's trace table made absolute, and each file's data as
    written; each is checked as a spec of the study's kind (its own errors are raised as
    they are)."""
    files: list[str] = []
    for path, pattern in _patterns(where):
        if pattern in known:
            files.append(pattern)
            continue
        matched = _matches(pattern, base)
        if not matched:
            found.add(path, f"matches no file (looked in {base})")
        files += [m for m in matched if m not in files and _readable(m, path, found)]
    out, written = [], []
    for f in files:
        data, label = (known[f], f) if f in known else read_json(f)
        written.append(data)
        if is_replay(data):
            doc = replays.load(data, Path(label).parent)     # its own errors, as they are
            made = doc.kind.name
            data = replays.anchored(data, Path(label).parent)
        else:
            made = build(data, label).kind
        if made != kind_name:
            found.add(["instances"], f"{label} is a {made} "
                      f"{'replay' if is_replay(data) else 'spec'}, not {kind_name}")
        out.append((label, data))
    if len({is_replay(d) for _, d in out}) > 1:
        found.add(["instances"], "replay documents and problem specs are two studies")
    return out, written


def _patterns(where: dict) -> list[tuple[list, str]]:
    """The spec files a study's ``instances`` names (``specs``: globs, or ``base``), each
    with its JSON path; a pattern that is not text is left to the schema."""
    if "specs" in where:
        named = list(enumerate(where["specs"])) if isinstance(where["specs"], list) else []
        patterns = [(["instances", "specs", i], p) for i, p in named]
    else:
        patterns = [(["instances", "base"], where["base"])] if "base" in where else []
    return [(path, pattern) for path, pattern in patterns if isinstance(pattern, str)]


def _matches(pattern: str, base: Path) -> list[str]:
    """The files a pattern names, found from ``base``: a glob's matches, sorted."""
    full = pattern if Path(pattern).is_absolute() else str(base / pattern)
    if glob.has_magic(pattern):
        return sorted(glob.glob(full))
    return [full] if os.path.lexists(full) else []


def inputs(data: Any, base: str | Path) -> list[tuple[str, Path]]:
    """The files a study spec (parsed data, checked or not; its spec files found from
    ``base``) reads besides itself, as (what, path): its spec files and the trace tables its
    replay documents read, so that a command refuses to write over one of them."""
    where = data.get("instances") if isinstance(data, dict) else None
    out: list[tuple[str, Path]] = []
    for _, pattern in _patterns(where) if isinstance(where, dict) else []:
        for file in _matches(pattern, Path(base)):
            out.append(("spec file", Path(file)))
            if Path(file).is_file():        # a pipe is read once, by the command
                try:
                    spec, _ = read_json(file)
                except SpecError:           # the command says what is wrong with it
                    continue
                out += [("trace table", t) for t in replays.inputs(spec, Path(file).parent)]
    return out


def _readable(file: str, path: list, found: Violations) -> bool:
    """Whether a spec file a study names is a file to read; if not (a folder, a pipe, a
    symbolic-link loop), a violation at ``path`` says what it is."""
    try:
        check_input(file, pipes=False)
    except InputRefused as exc:
        found.add(path, f"{file} {exc.rule}")
        return False
    except OSError as exc:
        found.add(path, f"{file}: {exc.strerror or exc}")
        return False
    return True


def is_replay(data: Any) -> bool:
    """Whether a file's data is a replay document (``fairalloc replay``), not a spec."""
    return sort_of(data) == "replay"


def _replay_settings(data: dict, kind, files: Sequence[tuple[str, dict]],
                     found: Violations) -> tuple[str, ...]:
    """A replay study's policies (its methods: ``methods``, or the grid's ``policy.method``,
    default the document's), after refusing the keys a replay document says for itself."""
    for key in NOT_FOR_REPLAYS:
        if key in data:
            found.add([key], "a replay study runs its documents as they say (their measure "
                      "and policy); set it in the replay document")
    grid = data.get("grid", {})
    if POLICY_KEY in grid and "methods" in data:
        found.add(["grid", POLICY_KEY], "the policies are the study's methods: give them "
                  "once, in methods or here")
    if POLICY_KEY in grid:
        try:
            return tuple(dict.fromkeys(grid_values(grid[POLICY_KEY])))
        except ValueError as exc:
            found.add(["grid", POLICY_KEY], str(exc))
            return ()
    if "methods" in data:
        return tuple(data["methods"])
    first = files[0][1]
    return (first.get("policy", {}).get("method") or kind.replay.default_policy
            or kind.default,)


def with_policy(document: dict, policy: str) -> dict:
    """A replay document with ``policy`` as its policy: every option of the document's policy
    (the grid's ``policy.*`` keys included) when it is the document's own policy, else those
    ``policy`` takes (a kind's options share one schema, so an option means the same to every
    policy that takes it: ``point`` to both max-mins, a grid's ``policy.reference_type`` to
    ``agnostic-finish-time`` beside a ``max-min`` document); the others would not fit."""
    own = document.get("policy", {})
    if own.get("method") == policy:
        return document
    takes = _policy_options(document.get("kind"), policy)
    kept = {k: v for k, v in own.items() if k in takes}
    return {**document, "policy": {"method": policy, **kept}}


def _check_policy_options(kind: str, grid: list, policies: Sequence[str],
                          found: Violations) -> None:
    """A grid's ``policy.<option>`` reaches only the policies that take it
    (``with_policy``): one that none of the study's policies takes is a bad study."""
    for key, _ in grid:
        head, _, option = key.partition(".")
        if head == "policy" and not any(option in _policy_options(kind, p) for p in policies):
            found.add(["grid", key], f"no policy of the study takes the option {option!r} "
                      f"(its policies: {', '.join(policies)})")


def _policy_options(kind: Any, policy: str) -> tuple[str, ...]:
    """The options ``policy`` of ``kind`` takes in a replay (none when either is unknown:
    the document's check names it)."""
    known = replays.policies(KINDS[kind]) if kind in KINDS else {}
    return replays.policy_options(known[policy]) if policy in known else ()


def _try_points(study: Study, found: Violations) -> None:
    """Build the first instance of each grid point (up to ``CHECKED_POINTS``), so a grid value
    the spec refuses is a bad study now, not a column of error rows later."""
    first = {}                  # grid point number -> its first instance (values may be lists)
    for instance in study.instances():
        number = instance.id // study.per_point
        if number not in first and len(first) < CHECKED_POINTS:
            first[number] = instance
    for instance in first.values():
        point = instance.point
        where = ", ".join(f"{k}={json.dumps(v)}" for k, v in point) or "the instances"
        try:
            raw = study.instance_spec(instance, study.methods[0])
        except SpecError as exc:
            found.add(["grid"], f"at {where}: {exc.violations[0]}")
            return
        except Exception as exc:    # a random_spec refusing its parameters, in its own words
            found.add(["instances", "generate"], f"{study.kind}'s random_spec failed at "
                      f"{where}: {type(exc).__name__}: {exc}")
            return
        try:
            if study.replay:
                replays.load(raw, study.recipe(instance)[0][2])
            else:
                build(raw, None)
        except SpecError as exc:
            for v in exc.violations:
                found.add(["grid"] if point else ["instances"],
                          f"at {where} the spec breaks {v.path}: {v.rule}")
            return


__all__ = ["Instance", "Study", "Task", "instance_seeds", "is_replay", "load_study",
           "make_instance", "study_name", "study_schema", "with_policy"]
