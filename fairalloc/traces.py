"""Specs from tables (``fairalloc import KIND FILE``): one row a user, app, job or kernel.

The kind's schema says what a row becomes: its list of entities (the top-level array of
objects with ids: ``users``, ``apps``, ``jobs`` ...) and each entity's keys. A column named like
a key maps itself (``weight``; ``demand.cpu`` for a key inside an object), ``--map KEY=COLUMN``
maps others; the rest of the spec comes from a base spec and ``--set KEY=VALUE``. Tables are
read with DuckDB (CSV with typed columns sniffed, or Parquet), so millions of rows read in
seconds; a cell that cannot be the key's type is reported with its file, line and column.
Shared code: it reads the kind's schema, never a kind's name.
"""

from __future__ import annotations

import json
import math
import re
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import numpy as np

from fairalloc.errors import InputRefused, SpecError, Violation
from fairalloc.files import check_input

TABLE_SUFFIXES = (".csv", ".tsv", ".txt", ".parquet", ".pq")


@dataclass(frozen=True)
class Leaf:
    """A key a column can fill: its path in the entity and what its cells must be."""

    path: tuple[str, ...]
    kind: str              # "number", "integer", "string" or "json" (arrays, objects, choices)

    @property
    def name(self) -> str:
        return ".".join(self.path)


def entity_list(schema: dict) -> str:
    """The spec's list of entities: the top-level array of objects that have an ``id``."""
    for name, prop in schema["properties"].items():
        items = prop.get("items") if prop.get("type") == "array" else None
        if isinstance(items, dict) and "id" in items.get("required", ()):
            return name
    raise ValueError("this kind's spec has no list of entities with ids")


def _kind_of(schema: dict) -> str:
    kinds = schema.get("type")
    if kinds in ("number", "integer", "string"):
        return kinds
    return "json"


def leaves(item: dict, prefix: tuple[str, ...] = ()) -> tuple[list[Leaf], list[tuple[str, ...]]]:
    """The keys of an entity a column can fill, and the objects whose keys are free (``demand``:
    any resource name), which ``demand.<name>`` columns fill."""
    fixed, free = [], []
    for name, prop in item.get("properties", {}).items():
        path = (*prefix, name)
        if prop.get("type") == "object" and isinstance(prop.get("additionalProperties"), dict):
            free.append(path)
        elif prop.get("type") == "object" and "properties" in prop:
            more, loose = leaves(prop, path)
            fixed += more
            free += loose
        fixed.append(Leaf(path, _kind_of(prop)))
    return fixed, free


def free_leaf(item: dict, path: tuple[str, ...]) -> Leaf:
    """A key inside a free object (``demand.cpu``): the object's value schema says its type."""
    node = item
    for name in path[:-1]:
        node = node["properties"][name]
    return Leaf(path, _kind_of(node["additionalProperties"]))


def read_table(path: str) -> tuple[list[str], dict[str, list], dict[str, str]]:
    """Read a CSV or Parquet file with DuckDB: (columns, column -> values, column -> type).
    A file DuckDB cannot read is a ``SpecError`` naming the file (and DuckDB's line)."""
    import duckdb

    source = Path(path)
    try:
        check_input(source, pipes=False)     # DuckDB reads a table more than once
    except OSError:
        raise SpecError([Violation("$", f"no such file: {path}")], str(path), what="table") \
            from None
    except InputRefused as exc:
        raise SpecError([Violation("$", exc.rule)], str(path), what="table") from None
    suffix = source.suffix.lower()
    delimiter = {".csv": ", delim = ','", ".tsv": ", delim = '\\t'"}.get(suffix, "")
    reader = "read_parquet(?)" if suffix in (".parquet", ".pq") else \
        f"read_csv(?, header = true, auto_detect = true, sample_size = -1{delimiter})"
    try:
        with duckdb.connect() as con:
            relation = con.sql(f"SELECT * FROM {reader}", params=[str(source)])
            columns = list(relation.columns)
            types = dict(zip(columns, map(str, relation.types)))
            data = relation.fetchnumpy()
    except duckdb.Error as exc:
        message = " ".join(str(exc).split())
        raise SpecError([Violation("$", message[:500])], str(path), what="table") from None
    if not columns or not len(data[columns[0]]):
        raise SpecError([Violation("$", "the table has no rows")], str(path), what="table")
    return columns, {c: _plain(data[c]) for c in columns}, types


def _plain(values) -> list:
    """A column as Python values, None for a missing cell."""
    if isinstance(values, np.ma.MaskedArray):
        mask = np.ma.getmaskarray(values)
        return [None if m else v for m, v in zip(mask.tolist(), values.data.tolist())]
    return [None if isinstance(v, float) and math.isnan(v) else v
            for v in np.asarray(values).tolist()]


def _cell(value: Any, leaf: Leaf) -> Any:
    """A cell as the key's type; ``ValueError`` says why it cannot be."""
    if leaf.kind == "string":
        return str(value)
    if leaf.kind in ("number", "integer"):
        if isinstance(value, bool) or not isinstance(value, int | float):
            try:
                value = float(str(value).strip())
            except ValueError:
                raise ValueError(f"{value!r} is not a number") from None
        if not math.isfinite(value):
            raise ValueError(f"{value!r} is not a finite number")
        if leaf.kind == "integer":
            if value != int(value):
                raise ValueError(f"{value!r} is not a whole number")
            return int(value)
        return value
    if isinstance(value, str):
        try:
            return json.loads(value)
        except ValueError:
            raise ValueError(f"{value!r} is not JSON (a list or an object)") from None
    return value


def mapping(columns: list[str], item: dict, given: dict[str, str]) -> list[tuple[Leaf, str]]:
    """Which column fills which key: ``given`` (key -> column) first, then every column named
    like a key. Unknown keys and columns in ``given`` are usage errors (ValueError)."""
    fixed, free = leaves(item)
    by_name = {leaf.name: leaf for leaf in fixed}

    def leaf_of(name: str) -> Leaf | None:
        if name in by_name:
            return by_name[name]
        path = tuple(name.split("."))
        if len(path) > 1 and path[:-1] in free:
            return free_leaf(item, path)
        return None

    out: list[tuple[Leaf, str]] = []
    for key, column in given.items():
        leaf = leaf_of(key)
        if leaf is None:
            known = ", ".join([*by_name, *(".".join(p) + ".<name>" for p in free)])
            raise ValueError(f"--map {key}={column}: no key {key!r} in an entity (keys: "
                             f"{known})")
        if column not in columns:
            raise ValueError(f"--map {key}={column}: no column {column!r} in the table "
                             f"(columns: {', '.join(columns)})")
        out.append((leaf, column))
    taken = {c for _, c in out} | {leaf.name for leaf, _ in out}
    for column in columns:
        leaf = leaf_of(column)
        if leaf is not None and column not in taken:
            out.append((leaf, column))
    return out


def _put(node: dict, path: tuple[str, ...], value: Any) -> None:
    for name in path[:-1]:
        node = node.setdefault(name, {})
    node[path[-1]] = value


def column_values(values: list, leaf: Leaf) -> tuple[list, list[tuple[int, str]]]:
    """A column's cells as the key's type (None stays None) and its bad cells as (row, why).
    Numbers DuckDB already typed are checked in one numpy pass; other cells one by one."""
    if leaf.kind in ("number", "integer") and all(
            v is None or type(v) in (int, float) for v in values):
        data = np.array([np.nan if v is None else v for v in values], dtype=float)
        given = np.array([v is not None for v in values])
        wrong = given & ~np.isfinite(data)
        if leaf.kind == "integer":
            wrong |= given & np.isfinite(data) & (data != np.round(data))
        bad = [(int(i), f"{values[i]!r} is not {_article(leaf.kind)}")
               for i in np.flatnonzero(wrong)[:20]]
        if leaf.kind == "integer" and not bad:
            values = [None if v is None else int(v) for v in values]
        return values, bad
    out, bad = [], []
    for i, value in enumerate(values):
        try:
            out.append(None if value is None else _cell(value, leaf))
        except ValueError as exc:
            out.append(None)
            bad.append((i, str(exc)))
    return out, bad


def entities(table: dict[str, list], pairs: list[tuple[Leaf, str]], source: str
             ) -> list[dict]:
    """One entity per row (an empty cell leaves its key out); every cell that cannot be its
    key's type is reported (file, line, column), the first 20 of them."""
    count = len(next(iter(table.values())))
    rows: list[dict] = [{} for _ in range(count)]
    bad: list[Violation] = []
    for leaf, column in pairs:
        values, wrong = column_values(table[column], leaf)
        bad += [Violation(f"line {row_line(i)}, column {column!r}",
                          f"{why} ({leaf.name} is {_article(leaf.kind)})") for i, why in wrong]
        if len(leaf.path) == 1:
            name = leaf.path[0]
            for row, value in zip(rows, values):
                if value is not None:
                    row[name] = value
        else:
            for row, value in zip(rows, values):
                if value is not None:
                    _put(row, leaf.path, value)
    if bad:
        raise SpecError(sorted(bad, key=lambda v: int(v.path.split()[1].rstrip(",")))[:20],
                        source, what="table")
    return rows


def _article(kind: str) -> str:
    return {"json": "a list or object (JSON)", "integer": "a whole number"}.get(kind, f"a {kind}")


def row_line(index: int) -> int:
    """The file line of row ``index`` (0-based) of a CSV with a header line (a Parquet file's
    row number + 2)."""
    return index + 2


def normalize(items: list[dict], key: str) -> None:
    """Divide each entity's object ``key`` (e.g. a split) by its sum, so it sums to 1."""
    for item in items:
        values = item.get(key)
        if isinstance(values, dict):
            total = sum(v for v in values.values() if isinstance(v, int | float))
            if total > 0:
                item[key] = {k: v / total for k, v in values.items()}


def row_paths(exc: SpecError, key: str, source: str) -> SpecError:
    """A spec error whose paths inside the entity list also name the table's line."""
    pattern = re.compile(rf"^{re.escape(key)}\[(\d+)\]")
    out = []
    for v in exc.violations:
        m = pattern.match(v.path)
        rule = f"{v.rule} (line {row_line(int(m.group(1)))} of {source})" if m else v.rule
        out.append(Violation(v.path, rule))
    return SpecError(out, exc.source, what=exc.what)
