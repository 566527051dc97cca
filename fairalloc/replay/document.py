"""The replay document (``fairalloc replay FILE``): a kind, its cluster, a trace, a policy, a
mechanism and what to measure. Schema ``fairalloc/schemas/replay.schema.json``, template
``fairalloc/templates/replay.jsonc`` (``fairalloc new replay``); every problem is reported at
once, one line each naming its JSON path.
"""

from __future__ import annotations

import functools
import inspect
import json
from collections.abc import Callable
from dataclasses import dataclass
from importlib import resources
from pathlib import Path
from typing import Any

import jsonschema_rs
import numpy as np

from fairalloc.contract import Kind, method_options
from fairalloc.errors import SpecError, Violations
from fairalloc.registry import KINDS
from fairalloc.replay.engine import Checking
from fairalloc.replay.trace import Trace
from fairalloc.spec import check_against, plain, read_json, without_schema_key

IDEAL = "ideal"
DEFAULT_TOLERANCE = 1.1


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


def load(source: str | Path | dict) -> Document:
    """Read and check a replay document (a path or parsed data); raises
    :class:`~fairalloc.errors.SpecError` listing every problem with its JSON path."""
    if isinstance(source, dict):
        data, label = plain(source, None, what="replay"), None
    else:
        data, label = read_json(source, what="replay")
    found = Violations()
    if not isinstance(data, dict):
        found.add("$", "a replay document is a JSON object")
        raise SpecError(found.items, label, "replay")
    data = without_schema_key(data, found)
    check_against(replay_schema(), _validator(), data, found)
    if found:
        raise SpecError(found.items, label, "replay")
    doc = _checked(data, label, found)
    if found or doc is None:
        raise SpecError(found.items, label, "replay")
    return doc


def _checked(data: dict, label: str | None, found: Violations) -> Document | None:
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
    trace = _trace(kind, data["trace"], found)
    if found or cluster is None or trace is None:
        return None
    if window is not None and window[1] > trace.n:
        found.add("measure.window", f"the trace has {trace.n} jobs; the window ends at "
                  f"{window[1]}")
    jobs = replay.jobs(cluster, trace, found)
    if found:
        return None
    return Document(data["replay"], kind, cluster, trace, jobs, policy, run, options,
                    mechanism, settings, window, float(measure.get("tolerance",
                                                                   DEFAULT_TOLERANCE)),
                    bool(measure.get("finish_time_fairness", True)), checking, data, label)


def policies(kind: Kind) -> dict[str, Callable]:
    """Every policy a replay of the kind may name: its methods and its replay policies."""
    return {**kind.methods, **kind.replay.policies}


def _policy(kind: Kind, data: dict, found: Violations) -> tuple[str, Callable | None, dict]:
    known = policies(kind)
    name = data.get("method", kind.replay.default_policy or kind.default)
    if name not in known:
        found.add("policy.method", f"unknown policy {name!r} for {kind.name} (known: "
                  f"{', '.join(known)})")
        return name, None, {}
    run = known[name]
    declared = [o for o in method_options(run) if o != "memory"]
    options = {k: v for k, v in data.items() if k != "method"}
    for key in options:
        if key not in declared:
            found.add(["policy", key], f"{name} takes no option {key!r}"
                      + (f" (it takes: {', '.join(declared)})" if declared else ""))
    return name, run, options


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


def _trace(kind: Kind, data: dict, found: Violations) -> Trace | None:
    """The trace: a generator's (seeded) or the jobs listed."""
    if isinstance(data.get("jobs"), list):
        foreign = [k for k in data if k != "jobs"]
        for key in foreign:
            found.add(["trace", key], "a listed trace has only \"jobs\"")
        return None if foreign else listed(data["jobs"], found)
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
            found.add(["trace", key], f"{key} is {param.annotation}, not "
                      f"{json.dumps(params[key])}")
    if found:
        return None
    try:
        return make(**params)
    except ValueError as exc:       # a parameter's value the generator refuses
        found.add("trace", str(exc))
        return None


def _fits(value: Any, annotation: str) -> bool:
    """Whether a JSON value fits a generator parameter's annotation (int, float, bool; with
    ``| None``, null too); positive numbers (counts, rates)."""
    text = str(annotation)
    if value is None:
        return "None" in text
    if isinstance(value, bool):
        return text.startswith("bool")
    if text.startswith("int"):
        return isinstance(value, int) and value >= 0
    if text.startswith("float"):
        return isinstance(value, (int, float)) and value > 0
    return True


def listed(jobs: list[dict], found: Violations) -> Trace | None:
    """A trace from jobs given in the document: ``id``, ``arrival`` (s, default 0) and the
    kind's columns as keys (a nested object ``{"throughput": {"v100": 4}}`` becomes the
    columns ``throughput.v100``)."""
    ids = [job["id"] for job in jobs]
    seen: set[str] = set()
    for i, job_id in enumerate(ids):
        if job_id in seen:
            found.add(["trace", "jobs", i, "id"], f"duplicate id {job_id!r}")
        seen.add(job_id)
    rows = [_flat(job) for job in jobs]
    names = sorted({key for row in rows for key in row} - {"id", "arrival"})
    columns = {}
    for name in names:
        missing = [i for i, row in enumerate(rows) if name not in row]
        if missing:
            found.add(["trace", "jobs", missing[0]], f"every job gives {name!r} when one does")
            continue
        columns[name] = np.array([row[name] for row in rows],
                                 dtype=object if isinstance(rows[0][name], str) else float)
    if found:
        return None
    return Trace.of(ids, [job.get("arrival", 0.0) for job in jobs], columns, source="listed")


def _flat(job: dict, prefix: str = "") -> dict:
    out = {}
    for key, value in job.items():
        if isinstance(value, dict):
            out.update(_flat(value, f"{prefix}{key}."))
        else:
            out[f"{prefix}{key}"] = value
    return out
