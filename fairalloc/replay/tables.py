"""A replay's trace from a table: CSV, TSV or Parquet read through DuckDB, one row a job.

Columns are mapped as ``fairalloc import`` maps them: a table column named like a trace
column fills it, ``mapping`` ({trace column: table column}) names others. Every trace has an
``id`` (when the table has none, the jobs are numbered ``0``, ``1``, ... in file order, as
Gavel numbers a trace's jobs) and an ``arrival`` time in seconds (a finite number >= 0); the
kind's replay names its other columns and their types (``Column``). Reading and checking cells
is the import command's (``fairalloc.traces``): a cell that is not its column's type or breaks
its rule is reported with the file, its line (counted through quoted line breaks) and column,
every such cell at once (the first 20), as a ``SpecError`` (exit 2).
Shared code: it names no kind.
"""

from __future__ import annotations

import difflib
import json
from collections.abc import Callable, Collection, Iterable, Mapping
from dataclasses import dataclass, replace
from typing import Any

import numpy as np

from fairalloc import traces
from fairalloc.errors import ArgumentError, SpecError, Violation
from fairalloc.replay.clock import LATEST_S
from fairalloc.replay.trace import Trace
from fairalloc.traces import Layout, Leaf

KINDS = {int: "integer", float: "number", str: "string"}
DTYPES = {int: np.int64, float: np.float64, str: object}
LARGEST = {int: 2 ** 63, float: 2 ** 1023, str: 0}    # whole numbers past a column's dtype


@dataclass(frozen=True)
class Column:
    """A trace column: its type (``int``, ``float`` or ``str``), the least and the largest
    value a number may take, the values a text may take, and its value when the table has no
    such column (None: the table must have it). An empty cell is refused."""

    type: type
    at_least: float | None = None
    choices: Collection[str] | None = None
    default: Any = None
    at_most: float | None = None

    def __post_init__(self) -> None:
        if self.type not in KINDS:
            raise TypeError(f"a trace column is int, float or str, not {self.type!r}")


ARRIVAL = Column(float, at_least=0.0, at_most=LATEST_S)
TENANT = Column(str)      # a job's tenant (fair share), in any kind's trace

# A rule over whole rows (``rules`` of ``read_trace``): the columns read, in file order, to
# the bad rows as (row index, trace column, rule).
RowRule = Callable[[Mapping[str, np.ndarray]], Iterable[tuple[int, str, str]]]


def read_trace(path: str, *, mapping: Mapping[str, str] | None = None,
               columns: Mapping[str, type | Column], rules: Iterable[RowRule] = (),
               layout: Layout | None = None, source: str | None = None,
               needed: Collection[str] | None = None) -> Trace:
    """The trace in table ``path``: ``id`` (optional), ``arrival`` (s), ``tenant`` (optional)
    and ``columns`` (name -> type or ``Column``; a name ending in ``.`` is a family, filled by
    every table column it begins: ``demand.`` by ``demand.cpu``), each from the table column
    ``mapping`` names for it or the one named like it, then checked by each of ``rules`` on the
    rows whose cells are all of their types. The table must have the columns ``needed`` (None:
    every column without a default); another the table lacks takes its default, or is left out
    when it has none (the kind's replay then says what its jobs need, as of a listed trace).
    ``layout`` says how a text table is written (``fairalloc.traces.Layout``: a delimiter,
    names for a table without a header, no quoting). A table that breaks a rule is a
    ``SpecError`` naming each bad cell's line and column, type and rule errors at once; a
    ``mapping`` of an unknown trace column an ``ArgumentError``. The table columns no trace
    column reads are the trace's ``ignored``."""
    layout = layout or Layout()
    specs = {name: _column(spec) for name, spec in columns.items()}
    if needed is None:
        needed = [name for name, spec in specs.items()
                  if spec.default is None and not name.endswith(".")]
    wanted = {"arrival": ARRIVAL, "tenant": TENANT, **specs}
    names, table, _ = traces.read_table(path, layout)
    try:
        wanted = _members(wanted, names, dict(mapping or {}))
        pairs = _pairs(names, {"id": Column(str), **wanted}, dict(mapping or {}),
                       {"arrival", *needed}, path)
        values: dict[str, np.ndarray] = {}
        bad: list[tuple[int, str, str]] = []
        for name, column in pairs.items():
            spec = Column(str) if name == "id" else wanted[name]
            values[name] = _cells(table, column, name, spec, bad)
    finally:
        table.con.close()
    for name, spec in wanted.items():
        if name not in values and spec.default is not None:
            values[name] = np.full(table.rows, spec.default, dtype=DTYPES[spec.type])
    bad += _rule_cells(rules, values, pairs, {i for i, _, _ in bad}, table.rows)
    if "id" in pairs:
        bad += _repeated(values["id"], pairs["id"])
    if bad:
        raise traces.cells_refused(bad, path, what="trace", layout=layout)
    ids = values.pop("id") if "id" in values else np.arange(table.rows).astype(str)
    used = set(pairs.values())
    return replace(Trace.of(ids, values.pop("arrival"), values, source=source or path),
                   ignored=tuple(name for name in names if name not in used))


def _rule_cells(rules: Iterable[RowRule], values: Mapping[str, np.ndarray],
                pairs: Mapping[str, str], wrong: set[int], rows: int
                ) -> list[tuple[int, str, str]]:
    """The cells breaking ``rules`` as (row, table column, rule), judged on the rows none of
    whose cells is ``wrong`` (not of its type): a table's rule errors are reported with its
    type errors, never hidden by them."""
    keep = np.ones(rows, dtype=bool)
    keep[list(wrong)] = False
    kept = np.flatnonzero(keep)
    judged = {name: column[keep] for name, column in values.items()} if wrong else values
    return [(int(kept[i]), pairs.get(name, name), why)
            for rule in rules for i, name, why in rule(judged)]


def _members(wanted: Mapping[str, Column], names: list[str], mapping: Mapping[str, str]
             ) -> dict[str, Column]:
    """``wanted`` with each family (a name ending in ``.``) replaced by its members: the trace
    columns ``mapping`` names in it and the table columns named in it that no mapping takes.
    A ``mapping`` of a trace column that is neither one nor a member is an ``ArgumentError``.
    """
    families = [name for name in wanted if name.endswith(".")]
    unknown = [key for key in mapping if key not in ("id", *wanted) and not any(
        key.startswith(f) and len(key) > len(f) for f in families)]
    if unknown:
        known = ", ".join(n + "<name>" if n.endswith(".") else n for n in ("id", *wanted))
        raise ArgumentError("mapping", f"no trace column {unknown[0]!r} (trace columns: "
                            f"{known})")
    taken = set(mapping.values())
    out: dict[str, Column] = {}
    for name, spec in wanted.items():
        if not name.endswith("."):
            out[name] = spec
            continue
        members = [key for key in mapping if key.startswith(name)]
        members += [c for c in names if c.startswith(name) and c not in taken]
        out.update({member: spec for member in members if len(member) > len(name)})
    return out


def _column(spec: type | Column) -> Column:
    return spec if isinstance(spec, Column) else Column(spec)


def _pairs(names: list[str], wanted: Mapping[str, Column], mapping: dict[str, str],
           needed: Collection[str], path: str) -> dict[str, str]:
    """Which table column fills which trace column: ``mapping`` first, then the columns named
    like one. A ``needed`` trace column no table column fills is a ``SpecError``."""
    out = {}
    found = []
    for name in wanted:
        column = mapping.get(name, name if name not in mapping.values() else None)
        if column in names:
            out[name] = column
        elif name in mapping:
            found.append(Violation("$", f"no column {column!r} (mapped to {name}; columns: "
                                   f"{', '.join(names)})"))
        elif name in needed:
            found.append(Violation("$", f"no column {name!r}: every job needs its {name} "
                                   f"(map a column to it; columns: {', '.join(names)})"))
    if found:
        raise SpecError(found, path, what="trace")
    return out


def _cells(table: traces.Table, column: str, name: str, spec: Column,
           bad: list[tuple[int, str, str]]) -> np.ndarray:
    """A table column as the trace column ``spec`` says, its bad cells added to ``bad`` as
    (row, table column, rule): not the type, empty, below ``at_least`` or not a choice."""
    kind = KINDS[spec.type]
    values, wrong = traces.table_column(table, column, Leaf((name,), kind))
    what = f"{name} is {traces.article(kind)}"
    out = _array(values, spec.type) if not wrong and None not in values else None
    if out is None:          # some cell is bad, empty or too large: found one by one
        wrong += [(i, f"{v!r} is too large") for i, v in enumerate(values)
                  if type(v) is int and abs(v) >= LARGEST[spec.type]]
        bad += [(i, column, f"{why} ({what})") for i, why in wrong]
        rows = {i for i, _ in wrong}
        empty = [i for i, v in enumerate(values) if v is None and i not in rows]
        bad += [(i, column, f"empty cell ({what}; every job needs one)") for i in empty]
        wrong += [(i, "empty") for i in empty]
        rows = {i for i, _ in wrong}
        fill = "" if spec.type is str else 0
        out = np.array([fill if i in rows else v for i, v in enumerate(values)],
                       dtype=DTYPES[spec.type])
    checked = np.ones(len(out), dtype=bool)
    checked[[i for i, _ in wrong]] = False
    bad += [(i, column, rule) for i, rule in broken(out, checked, name, spec)]
    return out


def broken(out: np.ndarray, checked: np.ndarray, name: str, spec: Column
           ) -> list[tuple[int, str]]:
    """The values of column ``name`` (those ``checked``: of its type) that break its rules,
    as (row, rule): below ``at_least``, above ``at_most`` or not a choice."""
    bad = []
    if spec.at_least is not None:
        bad += [(int(i), f"{traces.cell_text(out[i].item())} is below {spec.at_least:g} "
                 f"({name} is at least {spec.at_least:g})")
                for i in np.flatnonzero(checked & (out < spec.at_least))]
    if spec.at_most is not None:
        bad += [(int(i), f"{traces.cell_text(out[i].item())} is above {spec.at_most:g} "
                 f"({name} is at most {spec.at_most:g})")
                for i in np.flatnonzero(checked & (out > spec.at_most))]
    if spec.choices is not None:
        known = set(spec.choices)
        bad += [(int(i), f"{out[i]!r} is not a known {name} ({_near(out[i], known)})")
                for i in np.flatnonzero(checked) if out[i] not in known]
    return bad


def listed_column(values: list, name: str, spec: Column
                  ) -> tuple[np.ndarray, list[tuple[int, str]]]:
    """JSON values of a trace column (a listed trace's, one a job) as the column ``spec``
    says, and the bad ones as (job, rule): not its type (JSON's: ``true`` or ``"2"`` is no
    number, a whole number past the column's dtype is too large), or breaking its rules, as a
    table's cells are checked."""
    kind = KINDS[spec.type]
    wrong = [(i, f"{json.dumps(v)} is not {traces.article(kind)} ({name} is "
              f"{traces.article(kind)})") for i, v in enumerate(values) if not _fits(v, spec)]
    wrong += [(i, f"{v} is too large ({name} is {traces.article(kind)})")
              for i, v in enumerate(values) if _fits(v, spec) and spec.type is int
              and abs(v) >= LARGEST[int]]
    rows = {i for i, _ in wrong}
    fill = "" if spec.type is str else 0
    out = np.array([fill if i in rows else v for i, v in enumerate(values)],
                   dtype=DTYPES[spec.type])
    checked = np.ones(len(out), dtype=bool)
    checked[list(rows)] = False
    return out, wrong + broken(out, checked, name, spec)


def _fits(value: Any, spec: Column) -> bool:
    """Whether a JSON value is of the column's type (an integral float is a whole number)."""
    if spec.type is str:
        return isinstance(value, str)
    if isinstance(value, bool) or not isinstance(value, (int, float)):
        return False
    return spec.type is float or float(value).is_integer()


def _array(values: list, of: type) -> np.ndarray | None:
    """Cells as an array of the column's type; None when a number does not fit it."""
    try:
        return np.array(values, dtype=DTYPES[of])
    except OverflowError:
        return None


def _near(value: str, known: set[str]) -> str:
    """The known values nearest ``value`` as a hint, or the first few."""
    near = difflib.get_close_matches(value, sorted(known), n=3, cutoff=0.5)
    if near:
        return f"did you mean {', '.join(map(repr, near))}?"
    return f"known: {', '.join(sorted(known)[:6])}{', ...' if len(known) > 6 else ''}"


def _repeated(ids: np.ndarray, column: str) -> list[tuple[int, str, str]]:
    """Rows whose id an earlier row has, as (row, column, rule)."""
    if len(set(ids.tolist())) == len(ids):
        return []
    first: dict[str, int] = {}
    out = []
    for i, job in enumerate(ids.tolist()):
        if job in first:
            out.append((i, column, f"id {job!r} is an earlier job's id (ids are unique)"))
        else:
            first[job] = i
    return out
