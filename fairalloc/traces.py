"""Specs from tables (``fairalloc import KIND FILE``): one row a user, app, job or kernel.

The kind's schema says what a row becomes: its list of entities (the top-level array of
objects with ids: ``users``, ``apps``, ``jobs`` ...) and each entity's keys. A column named like
a key maps itself (``weight``; ``demand.cpu`` for a key inside an object), ``--map KEY=COLUMN``
maps others; the rest of the spec comes from a base spec and ``--set KEY=VALUE``. Tables are
read with DuckDB (CSV as text, so an id is the text written and a number its written value;
Parquet with its numbers typed) and a number key's column is converted and checked there and
in numpy in bulk, so millions of rows read in seconds; a cell that cannot be the key's type is
reported with its file, line (counted through quoted line breaks) and column.
Shared code: it reads the kind's schema, never a kind's name.
"""

from __future__ import annotations

import csv
import io
import json
import math
import re
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import numpy as np
import orjson

from fairalloc import startup
from fairalloc.errors import InputRefused, SpecError, Violation
from fairalloc.files import check_input

TABLE_SUFFIXES = (".csv", ".tsv", ".txt", ".parquet", ".pq")
PARQUET_SUFFIXES = (".parquet", ".pq")
# Parquet column types read as numbers; any other (dates, booleans, decimals, FLOAT, HUGEINT)
# is read as DuckDB's text of it, so nothing is rounded or reformatted on the way.
TYPED = {"TINYINT", "SMALLINT", "INTEGER", "BIGINT", "UTINYINT", "USMALLINT", "UINTEGER",
         "DOUBLE"}
LINE_BREAK = re.compile(r"\r\n|\r|\n")
CSV_TOKEN = re.compile(r'"[^"]*"|\r\n|\r|\n|[^"\r\n]+')
LINE_TOKEN = re.compile(r"\r\n|\r|\n|[^\r\n]+")     # a text table without quoting
SNIFFED = (",", "\t", ";", "|")     # the delimiters DuckDB's sniffer tries
DELIMITERS = {",": "comma", "\t": "tab", ";": "semicolon", "|": "'|'"}
HEAD_BYTES = 1 << 16               # what is read of a text table to tell whether it is one


@dataclass(frozen=True)
class Layout:
    """How a text table is written: its delimiter (None: ``,`` for .csv, a tab for .tsv, else
    detected), the names of its columns (None: its first line names them) and whether ``"``
    quotes cells (else every character is data and a line is a row)."""

    delimiter: str | None = None
    names: tuple[str, ...] | None = None
    quoted: bool = True


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


# A number's text as the cells DuckDB converts in bulk (anything else, e.g. ``1_000``, hex,
# ``inf`` or non-ASCII digits, is left to ``written_number``): RE2 syntax, ASCII only.
PLAIN = r"[ \t\n\r\f\v]*[+-]?([0-9]+\.?[0-9]*|\.[0-9]+)([eE][+-]?[0-9]+)?[ \t\n\r\f\v]*"
WHOLE = r"[ \t\n\r\f\v]*[+-]?[0-9]+[ \t\n\r\f\v]*"
EXACT = 2.0 ** 53                  # doubles at least this large may not be the number written


class Table:
    """A table held by DuckDB in memory (rows in file order): its columns, their types, and
    each column's cells fetched when asked, as text (a Parquet column of a type not in
    ``TYPED`` as DuckDB's text of it) or a Parquet number, or for a number key converted by
    DuckDB in bulk."""

    def __init__(self, con, types: dict[str, str], rows: int) -> None:
        self.con, self.types, self.rows = con, types, rows

    def text(self, column: str) -> str:
        """The SQL expression of a column's cells (its text unless Parquet typed it)."""
        quoted = '"' + column.replace('"', '""') + '"'
        return quoted if self.types[column] in TYPED | {"VARCHAR"} else \
            f"CAST({quoted} AS VARCHAR)"

    def is_text(self, column: str) -> bool:
        return self.types[column] not in TYPED

    def __getitem__(self, column: str) -> list:
        """The column's cells: text (None when empty), or a Parquet number."""
        return _plain(self._fetch(self.text(column)))

    def numbers(self, column: str, integer: bool) -> list | None:
        """A column's cells as numbers (``int`` for an ``integer``) with their values, checked
        in bulk: Parquet's numbers as typed, a text column converted by DuckDB
        (``parsed``). None when some cell is not a finite number (or not whole, for an
        ``integer``) or its value may not be kept so, so that ``column_values`` reads the
        cells one by one (exactly, or naming each bad one)."""
        value = self.parsed(column) if self.is_text(column) else \
            self._fetch(self.text(column))
        if value is None:
            return None
        data, empty = np.ma.getdata(value), np.ma.getmaskarray(value)
        if data.dtype.kind == "f":
            given = data[~empty]
            if not np.isfinite(given).all():
                return None
            if integer:
                if ((given != np.round(given)) | (np.abs(given) >= EXACT)).any():
                    return None
                data = np.where(empty, 0, data).astype(np.int64)
        return _with_gaps(data, empty)

    def parsed(self, column: str) -> np.ndarray | None:
        """A text column converted by DuckDB, its written values: every cell a whole number
        in int64 as int64, else every cell a plain number below 2**53 in size (not a whole
        number past the doubles) as the nearest double; None when some cell is neither."""
        c = self.text(column)
        plain, whole, in_int64, in_double = self.con.sql(
            f"SELECT bool_and(regexp_full_match({c}, '{PLAIN}')), "
            f"bool_and(regexp_full_match({c}, '{WHOLE}')), "
            f"count({c}) = count(TRY_CAST({c} AS BIGINT)), "
            f"count({c}) = count(TRY_CAST({c} AS DOUBLE)) FROM t").fetchall()[0]
        if plain is None:                                  # every cell empty
            return np.ma.masked_all(self.rows)
        if whole and in_int64:
            return self._fetch(f"TRY_CAST({c} AS BIGINT)")
        if not (plain and in_double):
            return None
        value = self._fetch(f"TRY_CAST({c} AS DOUBLE)")
        return value if (np.abs(np.ma.compressed(value)) < EXACT).all() else None

    def _fetch(self, expression: str) -> np.ndarray:
        """One expression over the rows, in their order (a masked array if some are NULL)."""
        return self.con.sql(f"SELECT {expression} AS x FROM t").fetchnumpy()["x"]


def _with_gaps(values: np.ndarray, empty: np.ndarray) -> list:
    """``values`` as a list of Python objects, None where ``empty``."""
    if not empty.any():
        return values.tolist()
    out = values.astype(object)
    out[empty] = None
    return out.tolist()


def read_table(path: str, layout: Layout = Layout()) -> tuple[list[str], Table, dict[str, str]]:
    """Read a CSV or Parquet file into DuckDB: (columns, the table, column -> type). A CSV's
    cells are its text (None when empty), written as ``layout`` says; a Parquet file's
    integer and double columns are numbers, its other columns text. A file DuckDB cannot read
    is a ``SpecError`` naming the file (and DuckDB's line); so is a text file that is not a
    table (``text_head``), a repeated column name and a column of lists or records."""
    duckdb = startup.duckdb()  # lazy: heavy, only reading a trace table needs it

    source = Path(path)
    try:
        check_input(source, pipes=False)     # DuckDB reads a table more than once
    except OSError:
        raise SpecError([Violation("$", f"no such file: {path}")], str(path), what="table") \
            from None
    except InputRefused as exc:
        raise SpecError([Violation("$", exc.rule)], str(path), what="table") from None
    suffix = source.suffix.lower()
    if suffix not in PARQUET_SUFFIXES:      # before DuckDB, whose messages quote the lines
        text = text_head(source, path)
        if layout.names is None:
            _check_header(text, delimiter(suffix, layout), layout.quoted, path)
    reader, options = ("read_parquet(?)", []) if suffix in PARQUET_SUFFIXES else \
        csv_reader(suffix, layout)
    con = duckdb.connect()
    con.execute("SET preserve_insertion_order = true")    # the default; rows keep file order
    try:
        con.execute(f"CREATE TABLE t AS SELECT * FROM {reader}", [str(source), *options])
        relation = con.sql("SELECT * FROM t")
        types = dict(zip(relation.columns, map(str, relation.types)))
        rows = con.sql("SELECT count(*) FROM t").fetchall()[0][0]
    except duckdb.Error as exc:
        con.close()
        # DuckDB's fixes name its own options, which a user of fairalloc cannot set
        message = " ".join(str(exc).split()).split(" Possible fixes:")[0]
        raise SpecError([Violation("$", message[:500])], str(path), what="table") from None
    if not types or not rows:
        con.close()
        raise SpecError([Violation("$", "the table has no rows")], str(path), what="table")
    nested = [Violation(f"column {name!r}", f"holds {kind} values: a cell holds one number or "
                        "text, not a list or a record")
              for name, kind in types.items()
              if kind.endswith("]") or kind.startswith(("STRUCT", "MAP", "UNION"))]
    if nested:
        con.close()
        raise SpecError(nested, str(path), what="table")
    return list(types), Table(con, types, rows), types


def text_head(source: Path, path: str) -> str:
    """The first ``HEAD_BYTES`` of a text table as text; a ``SpecError`` (saying nothing of
    what the file holds) when they are not a table's: binary data (a NUL byte) or not UTF-8."""
    with open(source, "rb") as fh:
        head = fh.read(HEAD_BYTES)
    if b"\0" in head:
        _not_a_table(path, "it holds binary data (a NUL byte)")
    try:
        return head.decode("utf-8-sig")
    except UnicodeDecodeError as exc:     # a character cut at the end of the block is fine
        if exc.reason != "unexpected end of data" or exc.start < len(head) - 3:
            _not_a_table(path, "it is not UTF-8 text")
        return head[:exc.start].decode("utf-8-sig")


def _check_header(text: str, known: str | None, quoted: bool, path: str) -> None:
    """Refuse a text table whose first record (its header) names fewer than two columns (it
    is a text file, not a table: its line is not quoted back) or one column twice (DuckDB
    would rename the second ``NAME_1``, and a map would read the wrong one). ``known``: the
    delimiter, else the one that splits the header most of those DuckDB tries."""
    candidates = (known,) if known else SNIFFED
    header = max((_first_record(text, d, quoted) for d in candidates), key=len)
    if len(header) == 1:          # (none: an empty file, which has no rows)
        named = [DELIMITERS.get(d, repr(d)) for d in candidates]
        either = ", ".join(named[:-1]) + " or " + named[-1] if len(named) > 1 else named[0]
        _not_a_table(path, f"its first line holds no {either} between column names (a table "
                           "names two or more columns)")
    seen: dict[str, int] = {}
    for i, name in enumerate(header):
        if name in seen:
            line = record_lines(text, quoted)[0]
            raise SpecError([Violation(f"line {line}, column {name!r}", f"repeated column "
                                       f"name (columns {seen[name] + 1} and {i + 1}): name "
                                       "each column once")], path, what="table")
        seen[name] = i


def _first_record(text: str, delimiter: str, quoted: bool) -> list[str]:
    """The first non-blank record of a text table's ``text`` split at ``delimiter``."""
    rows = csv.reader(io.StringIO(text), delimiter=delimiter,
                      quoting=csv.QUOTE_MINIMAL if quoted else csv.QUOTE_NONE)
    try:
        return next((row for row in rows if row), [])
    except csv.Error:                 # a header DuckDB will refuse at its line
        return []


def _not_a_table(path: str, why: str) -> None:
    raise SpecError([Violation("$", f"not a table: {why}")], path, what="table")


def csv_reader(suffix: str, layout: Layout) -> tuple[str, list]:
    """DuckDB's reader of a text table written as ``layout`` says, and its parameters after
    the file's name: every cell read as text."""
    known = delimiter(suffix, layout)
    options, values = ["header = ?"], [layout.names is None]
    if layout.names is None:
        # skip = 0: the first line is the header, never lines skipped to find one
        options.append("auto_detect = true, sample_size = -1, all_varchar = true, skip = 0")
    else:       # as named, not sniffed: a row of other fields than named is refused at its line
        types = ", ".join(f"{_sql_text(name)}: 'VARCHAR'" for name in layout.names)
        options.append(f"auto_detect = false, columns = {{{types}}}")
    if known is not None:
        options.append("delim = ?")
        values.append(known)
    if not layout.quoted:
        options += ["quote = ''", "escape = ''"]
    return f"read_csv(?, {', '.join(options)})", values


def delimiter(suffix: str, layout: Layout) -> str | None:
    """A text table's delimiter: ``layout``'s, else ``,`` for .csv and a tab for .tsv; None:
    DuckDB detects it."""
    return layout.delimiter or {".csv": ",", ".tsv": "\t"}.get(suffix)


def _sql_text(text: str) -> str:
    return "'" + text.replace("'", "''") + "'"


def _plain(values) -> list:
    """A column as Python values, None for a missing cell."""
    if isinstance(values, np.ma.MaskedArray):
        return _with_gaps(values.data, np.ma.getmaskarray(values))
    values = np.asarray(values)
    return _with_gaps(values, np.isnan(values) if values.dtype.kind == "f" else
                      np.zeros(len(values), dtype=bool))


def cell_text(value: Any) -> str:
    """A cell as text: a CSV cell as written; a Parquet number as its shortest text, a whole
    one without ``.0`` (an id 7 is ``"7"``).

    >>> [cell_text(v) for v in ("007", 7, 7.0, 2.5, 1e300)]
    ['007', '7', '7', '2.5', '1e+300']
    """
    if isinstance(value, float) and value.is_integer() and abs(value) < 1e16:
        return str(int(value))
    return str(value)


def written_number(text: str) -> int | float:
    """A number from the text of a cell, with the value written: a whole number as an exact
    integer (``12345678901234567890`` keeps every digit), others as the nearest double.
    ``ValueError`` if the text is not a plain number (``1_000`` and non-ASCII digits are not).

    >>> [written_number(t) for t in ("1", " -2 ", "2.5", "1e3", "12345678901234567890")]
    [1, -2, 2.5, 1000.0, 12345678901234567890]
    """
    plain = text.strip()
    if plain.isascii() and "_" not in plain:
        try:
            return int(plain) if plain.lstrip("+-").isdigit() else float(plain)
        except ValueError:
            pass
    raise ValueError(f"{text!r} is not a number")


def _cell(value: Any, leaf: Leaf) -> Any:
    """A cell as the key's type; ``ValueError`` says why it cannot be."""
    if leaf.kind == "string":
        return cell_text(value)
    if leaf.kind in ("number", "integer"):
        if isinstance(value, str):
            value = written_number(value)
        if isinstance(value, float) and not math.isfinite(value):
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


def column_values(values: list, leaf: Leaf) -> tuple[list, list[tuple[int, str]]]:
    """A column's cells as the key's type (None stays None) and its bad cells as (row, why).
    A column of numbers (typed by Parquet, or every text cell one) is checked in one numpy
    pass; other cells one by one."""
    if leaf.kind in ("number", "integer"):
        values = _numbers(values)
    if leaf.kind in ("number", "integer") and all(
            v is None or type(v) in (int, float) for v in values):
        try:
            return _numbers_checked(values, leaf)
        except OverflowError:       # a whole number past the doubles: kept exact cell by cell
            pass
    out, bad = [], []
    for i, value in enumerate(values):
        try:
            out.append(None if value is None else _cell(value, leaf))
        except ValueError as exc:
            out.append(None)
            bad.append((i, str(exc)))
    return out, bad


def _numbers_checked(values: list, leaf: Leaf) -> tuple[list, list[tuple[int, str]]]:
    """A column of numbers (an integer key's as ``int``) and its bad cells as (row, why), in
    one numpy pass."""
    data = np.array([np.nan if v is None else v for v in values], dtype=float)
    given = np.array([v is not None for v in values])
    wrong = given & ~np.isfinite(data)
    if leaf.kind == "integer":
        wrong |= given & np.isfinite(data) & (data != np.round(data))
    bad = [(int(i), f"{values[i]!r} is not {article(leaf.kind)}")
           for i in np.flatnonzero(wrong)[:20]]
    if leaf.kind == "integer" and not bad:
        values = [None if v is None else int(v) for v in values]
    return values, bad


def _numbers(values: list) -> list:
    """A column's text cells as numbers with their written values, in bulk: a column of
    whole numbers as integers, else as doubles (a whole number beyond 2**53 exactly, by
    :func:`written_number`); the column as it is when a cell is not a plain number (the
    cell-by-cell pass then names each such cell)."""
    gaps = None in values
    texts = [v for v in values if isinstance(v, str)] if gaps else values
    try:
        joined = "".join(texts)
    except TypeError:                     # typed by Parquet
        return values
    if not texts or not joined.isascii() or "_" in joined:
        return values
    try:
        numbers = list(map(int, texts))
    except ValueError:
        try:
            numbers = [written_number(t) if abs(f) >= 2 ** 53 else f
                       for t, f in zip(texts, map(float, texts))]
        except ValueError:
            return values
    if not gaps:
        return numbers
    parsed = iter(numbers)
    return [next(parsed) if isinstance(v, str) else v for v in values]


def table_column(table: Table, column: str, leaf: Leaf) -> tuple[list, list[tuple[int, str]]]:
    """A column as the key's type and its bad cells as (row, why): a number key's column
    checked in bulk when it can be (``Table.numbers``), a string key's text column as it is,
    others cell by cell (``column_values``)."""
    if leaf.kind in ("number", "integer"):
        values = table.numbers(column, leaf.kind == "integer")
        if values is not None:
            return values, []
    elif leaf.kind == "string" and table.is_text(column):
        return table[column], []
    return column_values(table[column], leaf)


def entities(table: Table, pairs: list[tuple[Leaf, str]], source: str) -> list[dict]:
    """One entity per row (an empty cell leaves its key out); every cell that cannot be its
    key's type is reported (file, line, column), the first 20 of them."""
    rows: list[dict] = [{} for _ in range(table.rows)]
    wrong_cells: list[tuple[int, str, Leaf, str]] = []
    # the keys of one object are put together, where its first key comes (so keys keep the
    # columns' order); a top-level key alone
    fills: dict[tuple[str, ...], tuple[tuple[str, ...], list[tuple[str, list]]]] = {}
    for leaf, column in pairs:
        values, wrong = table_column(table, column, leaf)
        wrong_cells += [(i, why, leaf, column) for i, why in wrong]
        parent = leaf.path[:-1]
        fills.setdefault(parent or leaf.path, (parent, []))[1].append((leaf.path[-1], values))
    if wrong_cells:
        raise cells_refused([(i, column, f"{why} ({leaf.name} is {article(leaf.kind)})")
                             for i, why, leaf, column in wrong_cells], source)
    for parent, keys in fills.values():
        _fill(rows, parent, keys)
    return rows


def _fill(rows: list[dict], parent: tuple[str, ...], keys: list[tuple[str, list]]) -> None:
    """Put each row's non-empty values of ``keys`` (name, a value per row) in the object at
    path ``parent`` of the row, made when the first value comes; all the keys of one object
    in one pass, a dict per row."""
    if not parent:
        for name, values in keys:
            for row, value in zip(rows, values):
                if value is not None:
                    row[name] = value
        return
    names = [name for name, _ in keys]
    columns = [values for _, values in keys]
    gaps = any(None in values for values in columns)
    *above, last = parent
    for row, cells in zip(rows, zip(*columns)):
        found = {name: value for name, value in zip(names, cells) if value is not None} \
            if gaps else dict(zip(names, cells))
        if found:
            node = row
            for name in above:
                node = node.setdefault(name, {})
            if last in node:
                node[last].update(found)
            else:
                node[last] = found


def cells_refused(cells: list[tuple[int, str, str]], source: str, *, what: str = "table",
                  layout: Layout = Layout()) -> SpecError:
    """The error naming bad cells, given as (row index, column, rule): one line each, the
    first 20 in file order, at ``line N, column 'c'``."""
    line = row_lines(source, layout)
    return SpecError([Violation(f"line {line(i)}, column {column!r}", rule)
                      for i, column, rule in sorted(cells, key=lambda c: c[0])][:20],
                     source, what=what)


def article(kind: str) -> str:
    return {"json": "a list or object (JSON)", "integer": "a whole number"}.get(kind, f"a {kind}")


def row_lines(source: str, layout: Layout = Layout()) -> Callable[[int], int]:
    """The file line where row ``index`` (0-based, after the header if any) of table
    ``source`` starts: in a CSV counted through quoted cells holding line breaks (when
    ``layout`` quotes) and past blank lines (as DuckDB reads it); a Parquet file's row number
    + 2. Read only to report an error."""
    if Path(source).suffix.lower() in PARQUET_SUFFIXES:
        return lambda index: index + 2
    starts = record_lines(Path(source).read_text(encoding="utf-8", errors="replace"),
                          layout.quoted)
    first = 1 if layout.names is None else 0
    return lambda index: starts[index + first] if index + first < len(starts) else \
        index + first + 1


def record_lines(text: str, quoted: bool = True) -> list[int]:
    """The line (1-based) each non-blank record of CSV ``text`` starts on, the header first;
    a ``"`` quotes line breaks unless not ``quoted``.

    >>> record_lines('id,note\\na,"two\\nlines"\\n\\nb,x\\n')
    [1, 2, 5]
    >>> record_lines('a\\t"b\\nc\\n', quoted=False)
    [1, 2]
    """
    starts, line, start, blank = [], 1, 1, True
    for token in (CSV_TOKEN if quoted else LINE_TOKEN).findall(text):
        if LINE_BREAK.fullmatch(token):
            if not blank:
                starts.append(start)
            line, blank = line + 1, True
            start = line
        else:
            blank = False
            line += len(LINE_BREAK.findall(token)) if token.startswith('"') else 0
    return starts + ([start] if not blank else [])


def normalize(items: list[dict], key: str) -> None:
    """Divide each entity's object ``key`` (e.g. a split) by its sum, so it sums to 1."""
    for item in items:
        values = item.get(key)
        if isinstance(values, dict):
            total = sum(v for v in values.values() if isinstance(v, int | float))
            if total > 0:
                item[key] = {k: v / total for k, v in values.items()}


@dataclass
class TableImport:
    """A spec made from a table: its data (checked), its list of entities, the columns no
    key took."""

    spec: dict
    key: str
    unused: list[str]

    def text(self) -> str:
        """The spec as indented JSON with one entity a line (a million rows stay readable)."""
        marker = "\u0000entities\u0000"
        head = json.dumps({**self.spec, self.key: marker}, indent=2, ensure_ascii=False)
        lines = ",\n".join("    " + orjson.dumps(e).decode() for e in self.spec[self.key])
        return head.replace(json.dumps(marker), "[\n" + lines + "\n  ]", 1) + "\n"


def row_paths(exc: SpecError, key: str, source: str) -> SpecError:
    """A spec error whose paths inside the entity list also name the table's line."""
    pattern = re.compile(rf"^{re.escape(key)}\[(\d+)\]")
    line = row_lines(source)
    out = []
    for v in exc.violations:
        m = pattern.match(v.path)
        rule = f"{v.rule} (line {line(int(m.group(1)))} of {source})" if m else v.rule
        out.append(Violation(v.path, rule))
    return SpecError(out, exc.source, what=exc.what)
