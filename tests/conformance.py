"""The kind contract's conformance battery, in the manner of scikit-learn's ``check_estimator``.

Each check is a module-level function ``check_<what>(name, kind, solved)`` that raises
``AssertionError`` saying what is wrong when the record ``kind`` breaks the contract
(``fairalloc.contract``). ``solved`` (:class:`Solved`) holds the kind's specs solved once, on
first use, and is shared by every check of one record, so the battery solves the template once
per method however many checks read it. ``check_kind(name, kind)`` yields ``(check_name,
check)`` pairs, each check taking no argument: ``tests/test_conformance.py`` runs them over
every registered kind, and an out-of-tree kind's author runs the same battery on their record
(CONTRIBUTING.md). While a check runs, the registry answers the record under test for
``name``, so a variant of a registered kind (``dataclasses.replace``) is what gets solved.
"""

from __future__ import annotations

import ast
import contextlib
import fnmatch
import functools
import inspect
import io
import json
import math
import sys
import tempfile
from collections.abc import Callable, Iterator
from functools import cached_property
from importlib import resources
from pathlib import Path

import jsonschema
import numpy as np

import fairalloc
from fairalloc.catalog import EXAMPLES, examples
from fairalloc.cli import main
from fairalloc.contract import SOLVER_FIELDS, Kind, MethodDoesNotApply, method_options
from fairalloc.errors import SolverError
from fairalloc.registry import KINDS, shipped_kinds
from fairalloc.replay import engine as replay_engine
from fairalloc.replay.document import IDEAL
from fairalloc.replay.document import load as load_replay
from fairalloc.replay.document import policies as replay_policies
from fairalloc.result import FAILED, STATUSES, VERDICTS, Finding, Result, flat_metrics
from fairalloc.spec import forget_schemas, parse_text, template

SEEDS = (0, 1)             # random specs: valid, solved, the exact method optimal on them
REPLAY_JOBS = 4            # the static trace a kind's replay record plays (each policy once)
TOLERANCE = 1e-6           # relative slack when comparing objectives across methods

# what one method gives on one spec: a result, or the error that stopped it
Outcome = Result | MethodDoesNotApply | SolverError


def outcome(spec: dict, method: str, checks: tuple[str, ...] | None = None) -> Outcome:
    """``method`` on ``spec`` with the options it takes (as ``compare`` runs it), or the error
    saying it does not apply or failed. A spec error other than "does not apply" propagates."""
    try:
        return fairalloc.solve(spec, method, strict=False, checks=checks)
    except (MethodDoesNotApply, SolverError) as exc:
        return exc


class Solved:
    """The specs of one kind record solved once, on first use: what the checks read instead
    of solving again."""

    def __init__(self, name: str, kind: Kind):
        self.name, self.kind = name, kind

    @cached_property
    def template(self) -> dict:
        """The kind's commented template (what ``fairalloc new KIND`` writes), parsed."""
        return parse_text(template(self.name), self.name)

    @cached_property
    def schema(self) -> dict:
        """The schema as the kind brings it (the record's own, or the shipped file)."""
        if self.kind.schema is not None:
            return self.kind.schema
        text = resources.files("fairalloc.schemas").joinpath(f"{self.name}.schema.json")
        return json.loads(text.read_text())

    @cached_property
    def on_template(self) -> dict[str, Outcome]:
        """Every method on the template, with every check. A kind's simulation (the spec's
        ``simulation`` key) plays the default method's policy only: it runs the same code
        whatever the policy, and token's template simulates 3,000 rounds."""
        bare = {k: v for k, v in self.template.items() if k != "simulation"}
        return {method: outcome(self.template if method == self.kind.default else bare, method)
                for method in self.kind.methods}

    @cached_property
    def random_specs(self) -> list[dict]:
        return [self.kind.random_spec(seed) for seed in SEEDS]

    @cached_property
    def on_random(self) -> list[dict[str, Outcome]]:
        """Each random spec solved by every method when the kind has an exact one to compare
        with (else by the default), with the feasibility check only: the guard in ``solve``
        that refuses an allocation failing it stays on, the costlier checks are the
        template's."""
        methods = list(self.kind.methods) if self.kind.exact else [self.kind.default]
        return [{m: outcome(spec, m, ("feasibility",)) for m in methods}
                for spec in self.random_specs]

    @cached_property
    def small(self) -> Result:
        """The first random spec by the default method, with every check: the round trips
        (validate, the command line) run on it, as a template may be large (token's
        simulates 3,000 rounds)."""
        return fairalloc.solve(self.random_specs[0])

    def replay_doc(self, policy: str | None = None, jobs: int = REPLAY_JOBS, seed: int = 0,
                   rho: bool = False) -> dict:
        """A replay of the ``static`` generator's jobs on the record's example cluster."""
        replay = self.kind.replay
        return {"replay": "conformance", "kind": self.name, "cluster": replay.example,
                "trace": {"generator": "static", "seed": seed, "jobs": jobs},
                "policy": {"method": policy or replay.default_policy or self.kind.default},
                "mechanism": {"name": "ideal"}, "measure": {"finish_time_fairness": rho}}

    @cached_property
    def replayed(self) -> dict:
        """Every policy of the replay record (methods too) on the static trace, once."""
        return {p: fairalloc.api.replay(self.replay_doc(p))
                for p in replay_policies(self.kind)}

    def results(self) -> Iterator[Result]:
        """Every result solved so far (template and random specs)."""
        for found in (self.on_template, *self.on_random):
            yield from (r for r in found.values() if isinstance(r, Result))


_SOLVED: dict[tuple[str, int], tuple[Kind, Solved]] = {}


def solved_for(name: str, kind: Kind) -> Solved:
    """The one :class:`Solved` of this record (keyed by its identity; the record is kept
    alive with it, so the key is never reused)."""
    key = (name, id(kind))
    if key not in _SOLVED:
        _SOLVED[key] = (kind, Solved(name, kind))
    return _SOLVED[key][1]


@contextlib.contextmanager
def registered(name: str, kind: Kind) -> Iterator[None]:
    """The registry answers ``kind`` for ``name`` while the block runs, then what it answered
    before: the API solves the record under test, not the registered one."""
    if name in KINDS and KINDS[name] is kind:
        yield
        return
    names, built = KINDS._names, dict(KINDS._built)
    if name in names:
        KINDS._built[name] = kind
    else:                                  # refuses a record without schema and template
        KINDS.add_kind(kind)
    forget_schemas()                       # options.method names this record's methods
    try:
        yield
    finally:
        KINDS._names, KINDS._built = names, built
        forget_schemas()


def _answered(method: str, found: Outcome, where: str) -> Result | None:
    """The result of ``method``, None when it does not apply; a solver error is a failure
    (only :class:`MethodDoesNotApply` means "does not apply")."""
    if isinstance(found, MethodDoesNotApply):
        assert str(found), f"{method} does not apply to {where} but does not say why"
        return None
    assert not isinstance(found, SolverError), \
        f"{method} raised SolverError on {where} (only MethodDoesNotApply is n/a): {found}"
    return found


def _not_worse(value: float, than: float, sense: str) -> bool:
    slack = TOLERANCE * max(1.0, abs(than))
    return value >= than - slack if sense == "max" else value <= than + slack


# ---- the schema, the record and the method signatures ------------------------------------

def check_schema_is_draft_2020_12(name: str, kind: Kind, solved: Solved) -> None:
    schema = solved.schema
    assert schema.get("$schema", "").endswith("2020-12/schema"), schema.get("$schema")
    jsonschema.Draft202012Validator.check_schema(schema)


def check_schema_methods_equal_the_record(name: str, kind: Kind, solved: Solved) -> None:
    enum = solved.schema["properties"]["options"]["properties"]["method"]["enum"]
    assert enum == list(kind.methods), (enum, list(kind.methods))
    assert kind.default in kind.methods, f"default {kind.default!r} is not a method"
    assert kind.sense in ("max", "min"), f"sense {kind.sense!r} is neither max nor min"


def check_methods_declare_documented_options(name: str, kind: Kind, solved: Solved) -> None:
    option_keys = set(solved.schema["properties"]["options"]["properties"]) - {"method"}
    for method, function in kind.methods.items():
        params = inspect.signature(function).parameters.values()
        assert not any(p.kind is p.VAR_KEYWORD for p in params), \
            f"{method} takes **kwargs: its options must be named"
        undocumented = set(method_options(function)) - option_keys
        assert not undocumented, f"{method} takes {undocumented}, not in the schema"


def check_checks_follow_the_contract(name: str, kind: Kind, solved: Solved) -> None:
    for check in kind.checks:
        params = inspect.signature(check).parameters
        assert len(params) >= 2 and ("mechanism" in params or any(
            p.kind is p.VAR_KEYWORD for p in params.values())), \
            f"{check.__name__} is not f(problem, allocation, *, mechanism, claims)"
        assert f"fairalloc.solvers.{name}" not in _imported(check.__module__), \
            f"{check.__module__} imports the kind's solvers"


@functools.cache
def _imported(module: str) -> frozenset[str]:
    """The modules ``module`` imports from (``from X import ...``)."""
    source = ast.parse(inspect.getsource(sys.modules[module]))
    return frozenset(node.module for node in ast.walk(source)
                     if isinstance(node, ast.ImportFrom) and node.module)


def check_units_label_the_objective_and_sweep_metrics(name: str, kind: Kind,
                                                      solved: Solved) -> None:
    """Figures label their axes with ``units``: the objective and every swept metric."""
    def labelled(metric: str) -> bool:
        return any(fnmatch.fnmatchcase(metric, pattern) for pattern in kind.units)

    assert labelled("objective"), "units has no entry for the objective"
    unlabelled = [m for m in kind.sweep_metrics if not labelled(m)]
    assert not unlabelled, f"units has no entry for the sweep metrics {unlabelled}"


# ---- the template, every method on it -----------------------------------------------------

def check_template_solves_with_the_default(name: str, kind: Kind, solved: Solved) -> None:
    result = _answered(kind.default, solved.on_template[kind.default], "the template")
    assert result is not None, f"the default method {kind.default} does not apply"
    assert result.method == kind.default
    assert result.status in STATUSES and result.status not in FAILED, result.status


def check_every_method_answers_on_the_template(name: str, kind: Kind, solved: Solved) -> None:
    ids = list(fairalloc.load_spec(solved.template).problem.ids)
    for method, found in solved.on_template.items():
        result = _answered(method, found, "the template")
        if result is None:
            continue
        assert result.status in STATUSES, (method, result.status)
        assert set(result.solver) == {*SOLVER_FIELDS, "extra"}, (method, result.solver)
        assert list(result.allocation) == ids, f"{method}'s allocation is not keyed by the ids"
        assert all(isinstance(f, Finding) and f.verdict in VERDICTS
                   for f in result.validation), f"{method}: a check returned no Finding"


def check_a_feasibility_check_exists(name: str, kind: Kind, solved: Solved) -> None:
    """``solve`` refuses an allocation failing its own ``feasibility`` check: without one the
    guard is off, so every kind has one and it decides every allocation a method stands by."""
    for method, found in solved.on_template.items():
        result = _answered(method, found, "the template")
        if result is None:
            continue
        verdicts = [f.verdict for f in result.validation if f.check == "feasibility"]
        assert verdicts, f"no feasibility check: {method}'s allocation went unchecked"
        if result.status not in FAILED:
            assert verdicts == ["holds"], f"feasibility is {verdicts} on {method}'s allocation"


def check_the_problem_has_ids_and_reads_allocations(name: str, kind: Kind,
                                                    solved: Solved) -> None:
    problem = fairalloc.load_spec(solved.template).problem
    assert len(problem.ids) == len(set(problem.ids)) > 0, problem.ids
    result = solved.on_template[kind.default]
    assert isinstance(result, Result), result
    alloc = problem.read_allocation(json.loads(result.to_json())["allocation"])
    assert list(alloc) == list(problem.ids)


def check_an_undeclared_option_is_a_bad_spec(name: str, kind: Kind, solved: Solved) -> None:
    spec = solved.template
    bad = {**spec, "options": {**spec.get("options", {}), "no_such_option": 1}}
    try:
        fairalloc.solve(bad, kind.default)    # refused before solving
    except fairalloc.SpecError as exc:
        assert any(v.path.startswith("options") for v in exc.violations), exc
    else:
        raise AssertionError("an unknown option was accepted")


def check_sweep_metrics_are_metrics(name: str, kind: Kind, solved: Solved) -> None:
    """Each sweep metric (and trade-off axis) names a metric some solved result has."""
    names = {metric for result in solved.results() for metric, _ in flat_metrics(result.metrics)}
    wanted = [*kind.sweep_metrics, *(kind.tradeoff or ())]
    missing = [m for m in wanted if not fnmatch.filter(names, m)]
    assert not missing, f"sweep_metrics or tradeoff name {missing}, which no result has"


# ---- the exact method ----------------------------------------------------------------------

def _optimises(kind: Kind) -> bool:
    """Whether the kind's methods optimise (then it has an exact method) or compute an
    equilibrium (``Kind.equilibrium``: then it has none, there being no optimum to reach)."""
    if kind.equilibrium:
        assert kind.exact is None, (f"the kind computes an equilibrium, yet names an exact "
                                    f"method {kind.exact!r}: no optimum for it to reach")
        return False
    assert kind.exact is not None, "the kind has no exact method (nor computes an equilibrium)"
    return True


def _exact(kind: Kind, found: dict[str, Outcome], where: str) -> Result:
    """The exact method's result, which must be optimal with a finite objective."""
    assert kind.exact in kind.methods, f"exact {kind.exact!r} is not a method"
    exact = _answered(kind.exact, found[kind.exact], where)
    assert exact is not None, f"the exact method {kind.exact} does not apply to {where}"
    assert exact.status == "optimal", f"{kind.exact} is {exact.status}, not optimal, on {where}"
    assert exact.objective is not None and math.isfinite(exact.objective), exact.objective
    return exact


def _solved_specs(solved: Solved) -> Iterator[tuple[str, dict[str, Outcome]]]:
    yield "the template", solved.on_template
    for seed, found in zip(SEEDS, solved.on_random, strict=True):
        yield f"random_spec({seed})", found


def check_the_exact_method_is_optimal(name: str, kind: Kind, solved: Solved) -> None:
    """The kind has an exact method, optimal on the template and on random specs. A kind that
    computes an equilibrium has none, and no method of it claims ``optimal``."""
    optimises = _optimises(kind)
    for where, found in _solved_specs(solved):
        if optimises:
            _exact(kind, found, where)
            continue
        for method, other in found.items():
            result = _answered(method, other, where)
            assert result is None or result.status != "optimal", \
                f"{method} claims optimal on {where}, but the kind computes an equilibrium"


def check_no_method_beats_the_exact_one(name: str, kind: Kind, solved: Solved) -> None:
    """No method's objective is better than the exact optimum (in the kind's ``sense``);
    nothing to compare for a kind that computes an equilibrium (no optimum)."""
    if not _optimises(kind):
        return
    for where, found in _solved_specs(solved):
        exact = _exact(kind, found, where)
        for method, other in found.items():
            result = _answered(method, other, where)
            if result is None or result.status in FAILED or result.objective is None:
                continue
            assert _not_worse(exact.objective, result.objective, kind.sense), (
                f"{method} ({result.objective}) beats the exact {kind.exact} "
                f"({exact.objective}, sense {kind.sense}) on {where}")


# ---- random specs, round trips, the shipped examples ---------------------------------------

def check_random_specs_are_valid_and_solve(name: str, kind: Kind, solved: Solved) -> None:
    params = list(inspect.signature(kind.random_spec).parameters.values())
    assert params[0].name == "seed" and all(
        p.default is not p.empty for p in params[1:]), "random_spec(seed, **size) defaults"
    first, second = solved.random_specs[:2]
    assert first == kind.random_spec(SEEDS[0]), "random_spec is not a function of its seed"
    assert first != second, "two seeds gave the same spec"
    validator = jsonschema.Draft202012Validator(solved.schema)
    for seed, spec, found in zip(SEEDS, solved.random_specs, solved.on_random, strict=True):
        validator.validate(spec)
        for method, other in found.items():
            result = _answered(method, other, f"random_spec({seed})")
            assert result is None or result.status in STATUSES, (method, result.status)
        assert isinstance(found[kind.default], Result), \
            f"the default {kind.default} does not apply to random_spec({seed})"


def check_validate_of_a_solved_json_gives_the_same_verdicts(name: str, kind: Kind,
                                                            solved: Solved) -> None:
    result = solved.small
    spec = solved.random_specs[0]
    again = fairalloc.validate(spec, json.loads(result.to_json()), method=result.method)

    def verdicts(r: Result) -> list[tuple[str, str]]:
        return [(f.check, f.verdict) for f in r.validation if f.check.split(":")[0] != "bound"]

    assert verdicts(again) == verdicts(result)


def check_the_command_line_prints_the_api_result(name: str, kind: Kind, solved: Solved) -> None:
    result = solved.small
    with tempfile.TemporaryDirectory() as folder:
        path = Path(folder) / f"{name}.json"
        path.write_text(json.dumps(solved.random_specs[0]))
        out = io.StringIO()
        with contextlib.redirect_stdout(out):
            code = main(["solve", str(path), "--format", "json"])
    printed = json.loads(out.getvalue())
    assert code in (0, 1), code
    assert (printed["problem"], printed["method"], printed["status"]) == (
        name, result.method, result.status)
    assert list(printed["allocation"]) == list(result.allocation)
    assert [f["check"] for f in printed["validation"]] == [f.check for f in result.validation]


def check_the_shipped_examples_load_and_solve(name: str, kind: Kind, solved: Solved) -> None:
    """A kind fairalloc ships has examples in ``fairalloc/examples/<kind>/`` (``fairalloc
    examples`` lists them, ``make demo`` solves them): each is a valid spec of the kind, and
    the first solves with the default method."""
    found = [e for e in examples(name) if e.path.endswith(".json")
             and not e.kind.startswith("study")]
    assert found, f"no example spec of {name} in {EXAMPLES}/{name}/"
    for example in found:
        assert fairalloc.load_spec(EXAMPLES / example.path).kind == name, example.path
    result = outcome(str(EXAMPLES / found[0].path), kind.default, ("feasibility",))
    result = _answered(kind.default, result, found[0].path)
    assert result is not None and result.status not in FAILED, (found[0].path, result)


# ---- the replay record (kinds with one) --------------------------------------------------

def _replay_record(kind: Kind) -> bool:
    """Whether the kind has a replay record, and then that it can be replayed at all."""
    if kind.replay is None:
        return False
    assert "static" in kind.replay.generators, \
        "the replay record has no 'static' generator (seed, jobs: every job at time 0)"
    assert kind.replay.example, "the replay record gives no example cluster"
    assert "isolated" in replay_policies(kind), \
        "no policy 'isolated', the reference of finish-time fairness"
    return True


def check_a_static_trace_replays_and_finishes_every_job(name: str, kind: Kind,
                                                        solved: Solved) -> None:
    if not _replay_record(kind):
        return
    policy = kind.replay.default_policy or kind.default
    run = solved.replayed[policy]
    assert run.status == "done", f"{policy} on {REPLAY_JOBS} static jobs: {run.summary['error']}"
    assert run.summary["finished"] == REPLAY_JOBS, \
        f"{policy} finished {run.summary['finished']} of {REPLAY_JOBS} static jobs"


class _Tally(replay_engine.Ideal):
    """``ideal``, adding up the work each job is credited with."""

    def __init__(self, replay, policy, n: int):
        super().__init__(replay, policy)
        self.done = np.zeros(n)

    def ran(self, state, plan, seconds) -> None:
        self.done[state.active] += plan.rates * seconds


def check_a_replay_does_all_the_work(name: str, kind: Kind, solved: Solved) -> None:
    """Work conservation: the work credited to each job over the run is its work, no more
    (a job ends when its work is done) and no less."""
    if not _replay_record(kind):
        return
    doc = load_replay(solved.replay_doc())
    replay = kind.replay
    policy = replay_engine.Policy(kind, doc.cluster, doc.jobs, doc.policy, doc.run, doc.options,
                                  replay_engine.Checking(), 0, doc.trace.columns.get("tenant"))
    tally = _Tally(replay, policy, doc.trace.n)
    work = np.asarray(replay.work(doc.jobs), dtype=float)
    timeline = replay_engine.run(doc.trace, work, tally, policy,
                                 len(replay.resources(doc.cluster)))
    assert timeline.status == "done", timeline.error
    assert np.allclose(tally.done, work, rtol=1e-9), \
        f"work credited {tally.done.tolist()} is not the jobs' work {work.tolist()}"


def check_a_replay_is_determined_by_its_seed(name: str, kind: Kind, solved: Solved) -> None:
    if not _replay_record(kind):
        return
    make = kind.replay.generators["static"]
    first, again = make(seed=3, jobs=REPLAY_JOBS), make(seed=3, jobs=REPLAY_JOBS)
    assert first.ids == again.ids and all(
        np.array_equal(first.columns[c], again.columns[c]) for c in first.columns), \
        "the static generator draws other jobs for the same seed"
    runs = [fairalloc.api.replay(solved.replay_doc(seed=3)) for _ in range(2)]
    for column in ("start", "finish"):
        assert np.array_equal(runs[0].jobs[column], runs[1].jobs[column], equal_nan=True), \
            f"two replays of one seed differ in {column}"


def check_a_job_alone_has_rho_at_most_1(name: str, kind: Kind, solved: Solved) -> None:
    """A job alone: its rho under the default policy is its JCT there over its JCT in a
    replay under ``isolated`` (the measure), and at most 1 (alone, the whole cluster is at
    least its isolated share; exactly 1 where the isolated share of one job is the whole
    cluster, as drf's is)."""
    if not _replay_record(kind):
        return
    run = fairalloc.api.replay(solved.replay_doc(jobs=1, rho=True))
    alone = fairalloc.api.replay(solved.replay_doc("isolated", jobs=1))
    assert run.status == alone.status == "done", run.summary["error"] or alone.summary["error"]
    rho = float(run.jobs["rho"][0])
    assert math.isclose(rho, float(run.jobs["jct"][0] / alone.jobs["jct"][0]), rel_tol=1e-9), \
        f"rho {rho} is not the JCT over the JCT under the isolated policy"
    assert 0 < rho <= 1 + 1e-9, f"a job alone has rho {rho} (> 1: less than its isolated share)"


def check_every_policy_replays(name: str, kind: Kind, solved: Solved) -> None:
    """Every policy a replay may name (methods and replay policies) runs the static trace to
    its end."""
    if not _replay_record(kind):
        return
    failed = {p: run.summary["error"] or f"{run.summary['finished']} finished"
              for p, run in solved.replayed.items()
              if run.status != "done" or run.summary["finished"] != REPLAY_JOBS}
    assert not failed, f"policies that do not replay {REPLAY_JOBS} static jobs: {failed}"


def _example_parameters(generator: Callable) -> dict:
    """Small values for a generator's required parameters, from their annotations."""
    small = {"int": 8, "float": 2.0}
    return {p.name: small[str(p.annotation).split(" ")[0]]
            for p in list(inspect.signature(generator).parameters.values())[1:]
            if p.default is inspect.Parameter.empty}


def check_a_replay_record_replays(name: str, kind: Kind, solved: Solved) -> None:
    """A kind with a replay record: each generator's jobs (seeded), on the record's example
    cluster, finish under the default policy and every mechanism, every allocation feasible,
    and the same seed gives the same rows."""
    if kind.replay is None:
        return
    for generator, make in kind.replay.generators.items():
        for mechanism in (IDEAL, *kind.replay.mechanisms):
            doc = {"replay": "conformance", "kind": name, "cluster": kind.replay.example,
                   "trace": {"generator": generator, "seed": 3,
                             **_example_parameters(make)},
                   "mechanism": {"name": mechanism},
                   "measure": {"finish_time_fairness": False,
                               "checks": {"every": 1, "names": ["feasibility"]}}}
            first, again = fairalloc.api.replay(doc), fairalloc.api.replay(doc)
            where = f"{generator} under {mechanism}"
            assert first.status == "done", (where, first.summary["error"])
            assert first.summary["finished"] == first.summary["jobs"], where
            assert first.verdicts["feasibility"]["passed"] is True, where
            assert list(first.jobs["finish"]) == list(again.jobs["finish"]), where


CHECKS: tuple[Callable[[str, Kind, Solved], None], ...] = (
    check_schema_is_draft_2020_12, check_schema_methods_equal_the_record,
    check_methods_declare_documented_options, check_checks_follow_the_contract,
    check_units_label_the_objective_and_sweep_metrics, check_template_solves_with_the_default,
    check_every_method_answers_on_the_template, check_a_feasibility_check_exists,
    check_the_problem_has_ids_and_reads_allocations, check_an_undeclared_option_is_a_bad_spec,
    check_sweep_metrics_are_metrics, check_the_exact_method_is_optimal,
    check_no_method_beats_the_exact_one,
    check_random_specs_are_valid_and_solve,
    check_validate_of_a_solved_json_gives_the_same_verdicts,
    check_the_command_line_prints_the_api_result, check_the_shipped_examples_load_and_solve,
    check_a_static_trace_replays_and_finishes_every_job, check_a_replay_does_all_the_work,
    check_a_replay_is_determined_by_its_seed, check_a_job_alone_has_rho_at_most_1,
    check_every_policy_replays,
    check_a_replay_record_replays)


def _run(check: Callable[[str, Kind, Solved], None], name: str, kind: Kind | None) -> None:
    record = KINDS[name] if kind is None else kind
    assert record.name == name, f"the record is named {record.name!r}, not {name!r}"
    with registered(name, record):
        check(name, record, solved_for(name, record))


def check_kind(name: str, kind: Kind | None = None) -> Iterator[tuple[str, Callable[[], None]]]:
    """Every conformance check of kind ``name`` (its registered record, or ``kind``) as
    ``(check_name, check)``. The shipped-examples check is for the kinds fairalloc ships
    (``fairalloc/kinds/``); a kind from outside brings its own examples."""
    for check in CHECKS:
        if check is check_the_shipped_examples_load_and_solve and name not in shipped_kinds():
            continue
        yield check.__name__, functools.partial(_run, check, name, kind)


__all__ = ["CHECKS", "Solved", "check_kind", "registered", *(c.__name__ for c in CHECKS)]
