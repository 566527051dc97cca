"""Allocations: the contract's ``allocation[id] -> {key: value, nested: {key: value}}``,
stored by columns (one numpy array per output key) so that a million users cost arrays, not a
million dicts; and the reader of allocations produced elsewhere."""

from __future__ import annotations

import json
import math
import re
from collections.abc import Callable, Iterator, Mapping, Sequence
from typing import Any

import numpy as np
import orjson

from fairalloc.errors import Violations

Key = tuple[str, ...]


class Allocation(Mapping):
    """An allocation keyed by the spec's ids, held as columns.

    ``columns`` maps an output key path, e.g. ``("resources", "cpu")``, to an array with one
    entry (or one row, for list-valued keys) per id.

    >>> a = Allocation(["u1", "u2"], {("tasks",): np.array([3.0, 2.0]),
    ...                               ("resources", "cpu"): np.array([3.0, 6.0])})
    >>> a["u2"]
    {'tasks': 2.0, 'resources': {'cpu': 6.0}}
    """

    def __init__(self, ids: Sequence[str], columns: dict[Key, np.ndarray]):
        self.ids = list(ids)
        self.columns = {key: np.asarray(col) for key, col in columns.items()}
        self._index: dict[str, int] | None = None

    def column(self, *key: str) -> np.ndarray:
        return self.columns[key]

    def __len__(self) -> int:
        return len(self.ids)

    def __iter__(self) -> Iterator[str]:
        return iter(self.ids)

    def __getitem__(self, uid: str) -> dict:
        if self._index is None:
            self._index = {u: i for i, u in enumerate(self.ids)}
        i = self._index[uid]
        return self._row({key: plain_value(col[i]) for key, col in self.columns.items()})

    @staticmethod
    def _row(values: dict[Key, Any]) -> dict:
        row: dict = {}
        for key, value in values.items():
            node = row
            for part in key[:-1]:
                node = node.setdefault(part, {})
            node[key[-1]] = value
        return row

    def _plain_columns(self) -> dict[Key, list]:
        """Columns as Python lists with non-finite numbers as None (JSON's null)."""
        out = {}
        for key, col in self.columns.items():
            values = col.tolist()
            if col.dtype.kind == "f" and not np.isfinite(col).all():
                values = plain_value(values)
            out[key] = values
        return out

    def rows(self) -> Iterator[tuple[str, dict]]:
        cols = self._plain_columns()
        for i, uid in enumerate(self.ids):
            yield uid, self._row({key: col[i] for key, col in cols.items()})

    def to_dict(self) -> dict:
        return dict(self.rows())

    @classmethod
    def from_dict(cls, rows: Mapping[str, dict]) -> Allocation:
        """The allocation that ``to_dict`` gave ``rows`` (a result kept as JSON, as a study
        row keeps it): a column per key path of the first id's row, null held as NaN.

        >>> rows = {"u1": {"tasks": 3.0, "resources": {"cpu": None}}}
        >>> Allocation.from_dict(rows).to_dict() == rows
        True
        """
        ids = list(rows)
        keys = list(_key_paths(rows[ids[0]])) if ids else []
        return cls(ids, {key: _column([_at(rows[uid], key) for uid in ids]) for key in keys})

    def to_pandas(self):
        """A DataFrame indexed by id, one column per output key (nested keys dotted:
        ``resources.cpu``; a list-valued key holds a list per id)."""
        pd = _pandas("Allocation.to_pandas")
        data = {".".join(key): (list(col) if col.ndim > 1 else col)
                for key, col in self.columns.items()}
        return pd.DataFrame(data, index=pd.Index(self.ids, name="id"))

    def to_json_lines(self, indent: str) -> str:
        """The allocation as a JSON object with one id per line (``json_chunks`` joined)."""
        return "".join(self.json_chunks(indent))

    def json_chunks(self, indent: str, rows: int = 20_000) -> Iterator[str]:
        """The allocation as a JSON object with one id per line, ``rows`` ids a piece, so that a
        writer never holds the text of a million ids at once.

        Each piece is one ``str.join`` of its ids and cells between the row template's fixed
        parts; a numeric column's cells are one orjson call.

        >>> a = Allocation(["u1", 'u"2'], {("x",): np.array([1.5, np.nan])})
        >>> print("".join(a.json_chunks("", rows=1)))
        {
          "u1": {"x": 1.5},
          "u\\"2": {"x": null}
        }
        """
        if not self.ids:
            yield "{}"
            return
        keys = list(self.columns)
        parts, order = self._row_template()
        width = 2 + 2 * len(keys)          # lead and id, then (fixed text, cell) per key
        opening, between = f"{{\n{indent}  \"", f",\n{indent}  \""
        for start in range(0, len(self.ids), rows):
            ids = self.ids[start:start + rows]
            pieces: list = [None] * (width * len(ids) + 1)
            pieces[0:-1:width] = [parts[-1] + between] * len(ids)   # the row before ends
            pieces[1:-1:width] = _json_ids(ids)
            for k, key in enumerate(order):
                pieces[2 + 2 * k:-1:width] = [parts[k]] * len(ids)
                column = self.columns[keys[key]][start:start + rows]
                pieces[3 + 2 * k:-1:width] = _json_cells(column)
            pieces[0] = opening if start == 0 else between
            pieces[-1] = parts[-1]
            yield "".join(pieces)
        yield f"\n{indent}}}"

    def _row_template(self) -> tuple[list[str], list[int]]:
        """The fixed text of a row, from the id's closing quote to the row's end, split around
        its cells, and the column (index into ``columns``) of each cell in order."""
        markers = {key: f"\u0000{k}\u0000" for k, key in enumerate(self.columns)}
        text = json.dumps(self._row(markers), separators=(", ", ": "))
        split = _MARKER.split('": ' + text)
        return split[::2], [int(k) for k in split[1::2]]


def _key_paths(row: dict, prefix: Key = ()) -> Iterator[Key]:
    """The key path of every leaf of one id's nested row."""
    for key, value in row.items():
        if isinstance(value, dict):
            yield from _key_paths(value, (*prefix, key))
        else:
            yield (*prefix, key)


def _at(row: dict, key: Key) -> Any:
    for part in key:
        row = row[part]
    return row


def _column(values: list) -> np.ndarray:
    """Values as a column: numbers (null as NaN) as floats, anything else as it comes."""
    try:
        return np.array([math.nan if v is None else v for v in values], dtype=float)
    except (TypeError, ValueError):
        return np.array(values)


def _pandas(what: str):
    """pandas, or an ImportError that says how to get it (it is optional)."""
    try:
        import pandas  # lazy: heavy and optional, only to_pandas needs it
    except ImportError:
        raise ImportError(f"{what} needs pandas, which fairalloc does not require: "
                          "pip install pandas (or fairalloc[pandas])") from None
    return pandas


_MARKER = re.compile(r'"\\u0000(\d+)\\u0000"')    # a cell's place in ``_row_template``
_PLAIN_ID = re.compile(r'[ !#-\[\]-~]*')   # ids that are their own JSON text inside quotes


def _json_ids(ids: list[str]) -> list[str]:
    """Each id as JSON text without its quotes: the id itself when it is printable ASCII
    without quote or backslash (``json.dumps`` leaves those as they are), else escaped."""
    if _PLAIN_ID.fullmatch("".join(ids)):
        return ids
    return [json.dumps(uid)[1:-1] for uid in ids]


def _json_cells(column: np.ndarray) -> list[str]:
    """Each value of a column as JSON text. A column of numbers is one orjson call (shortest
    round-trip floats, NaN as null): 6x faster than the standard library's float formatting."""
    if column.ndim == 1 and column.dtype.kind in "fiub" and len(column):
        return orjson.dumps(np.ascontiguousarray(column),   # orjson takes C-ordered arrays only
                            option=orjson.OPT_SERIALIZE_NUMPY).decode()[1:-1].split(",")
    return [json.dumps(v, allow_nan=False) for v in plain_value(column)]


def plain_value(value: Any, finite: bool = True) -> Any:
    """A plain Python value: numpy scalars and arrays unwrapped (tuples as lists) and, with
    ``finite`` (JSON-ready), non-finite numbers as null.

    >>> plain_value({"x": np.float64(1.5), "y": (np.int64(2), np.inf)}, finite=False)
    {'x': 1.5, 'y': [2, inf]}
    """
    if isinstance(value, np.ndarray):
        return [plain_value(v, finite) for v in value.tolist()]
    if isinstance(value, (np.floating, float)):
        value = float(value)
        return value if math.isfinite(value) or not finite else None
    if isinstance(value, np.integer):
        return int(value)
    if isinstance(value, (np.bool_,)):
        return bool(value)
    if isinstance(value, (list, tuple)):
        return [plain_value(v, finite) for v in value]
    if isinstance(value, dict):
        return {k: plain_value(v, finite) for k, v in value.items()}
    return value


# The largest magnitude of a number in an allocation read from elsewhere. Spec values are at
# most ~1e15 and specs hold at most ~1e7 entities, so sums of products of an allocation value
# with a few spec values stay far from the float range (1.8e308); no real allocation comes near.
LARGEST = 1e100


def read_allocation(
    data: Any,
    ids: Sequence[str],
    required: Sequence[Key],
    optional: Sequence[Key] = (),
    found: Violations | None = None,
    parsed: Mapping[Key, Callable[[Any], Any]] | None = None,
    derived: Callable[[Allocation], dict[Key, np.ndarray]] | None = None,
) -> Allocation:
    """Read an allocation in the result's format (as produced elsewhere) into columns.

    Every id of the spec must be present with every ``required`` key holding a finite number
    of magnitude at most ``LARGEST``;
    ``optional`` keys, when given for one id, are needed for all; ``parsed`` keys are read by
    their function, whose result is the column's value (a ValueError is reported with its
    message; such a key is required when it is also in ``required``). Unknown ids and other
    keys are reported. ``derived`` computes from the columns read the keys (among
    ``optional``) that follow from the decision variables: a value given for one must agree
    with the computed one (``agrees``), and the allocation holds the computed ones, never an
    echo of what was given. Raises ``SpecError``.
    """
    own = found is None
    found = found if found is not None else Violations()
    if isinstance(data, dict) and "allocation" in data and isinstance(data["allocation"], dict):
        data, prefix = data["allocation"], ["allocation"]
    else:
        prefix = []
    if not isinstance(data, dict):
        found.add(prefix or "$", "an allocation must be an object keyed by the spec's ids")
        found.raise_if_any()
    parsed = parsed or {}
    known_keys = set(required) | set(optional) | set(parsed)
    spec_ids = set(ids)
    for uid in data:
        if uid not in spec_ids:
            found.add(prefix + [uid], "id is not in the spec")
    entries = [data.get(uid) for uid in ids]
    for uid, entry in zip(ids, entries):
        if not isinstance(entry, dict):
            found.add(prefix + [uid], "missing" if entry is None else "must be an object")
            continue
        for key in _leaf_keys(entry):
            if key not in known_keys:
                found.add(prefix + [uid, *key], "unknown key")
    columns = {}
    for key in [k for k in list(required) + list(optional) if k not in parsed]:
        values = [_get(e, key) if isinstance(e, dict) else None for e in entries]
        given = sum(v is not None for v in values)
        if key not in required and given == 0:
            continue
        column = np.full(len(ids), np.nan)
        for i, value in enumerate(values):
            where = prefix + [ids[i], *key]
            if value is None:
                if isinstance(entries[i], dict):
                    found.add(where, "required number is missing" if key in required
                              else "given for other ids, so needed here too")
            elif isinstance(value, bool) or not isinstance(value, (int, float)):
                found.add(where, "must be a number")
            elif not math.isfinite(value):
                found.add(where, "must be a finite number")
            elif abs(value) > LARGEST:
                found.add(where, f"must be within ±{LARGEST:g} (the checks add and multiply "
                          "allocation values with the spec's: larger ones overflow)")
            else:
                column[i] = value
        columns[key] = column
    for key, parse in parsed.items():
        values = [_get(e, key) if isinstance(e, dict) else None for e in entries]
        if key not in required and all(v is None for v in values):
            continue
        column = np.empty(len(ids), dtype=object)
        for i, value in enumerate(values):
            if value is None:
                if isinstance(entries[i], dict):
                    found.add(prefix + [ids[i], *key], "required key is missing" if key in
                              required else "given for other ids, so needed here too")
                continue
            try:
                column[i] = parse(value)
            except ValueError as error:
                found.add(prefix + [ids[i], *key], str(error))
        columns[key] = column
    if own:
        found.raise_if_any()
    if derived is None or found:
        return Allocation(ids, columns)
    computed = derived(Allocation(ids, columns))
    for key, column in computed.items():
        if key in columns:
            _disagreements(columns[key], column, prefix, ids, key, found)
    if own:
        found.raise_if_any()
    return Allocation(ids, {**columns, **computed})


DERIVED_RTOL = 1e-9   # a derived value given may differ from the computed one by this much


def agrees(given: np.ndarray, computed: np.ndarray) -> np.ndarray:
    """Whether each given value of a derived column is the computed one, to ``DERIVED_RTOL``
    of the larger of the two, or of the column's largest computed value near zero (the
    rounding of a sum or product written out elsewhere is not a disagreement).

    >>> agrees(np.array([3.0, 1e9, 1e-20]), np.array([3.0 + 1e-12, 7.0, 0.0])).tolist()
    [True, False, True]
    """
    given, computed = np.asarray(given, float), np.asarray(computed, float)
    finite = computed[np.isfinite(computed)]
    scale = float(np.abs(finite).max(initial=0.0))
    with np.errstate(over="ignore", invalid="ignore"):   # inf - inf: a disagreement below
        gap = np.abs(given - computed)
        slack = DERIVED_RTOL * np.maximum(np.maximum(np.abs(given), np.abs(computed)), scale)
    return gap <= slack


def _disagreements(given: np.ndarray, computed: np.ndarray, prefix: list, ids: Sequence[str],
                   key: Key, found: Violations) -> None:
    """A violation for each given value of a derived column that is not the computed one."""
    for i in np.flatnonzero(~agrees(given, computed)).tolist():
        found.add(prefix + [ids[i], *key],
                  f"is {given[i]:.10g}, but the allocation's decision variables give "
                  f"{float(computed[i]):.10g} (a derived value: give the computed one or leave "
                  "it out)")


def _leaf_keys(entry: dict, prefix: Key = ()) -> list[Key]:
    keys: list[Key] = []
    for k, v in entry.items():
        if isinstance(v, dict):
            keys += _leaf_keys(v, prefix + (k,))
        else:
            keys.append(prefix + (k,))
    return keys


def _get(entry: dict, key: Key) -> Any:
    node: Any = entry
    for part in key:
        if not isinstance(node, dict) or part not in node:
            return None
        node = node[part]
    return node


# The four verdicts of a check (DESIGN.md, the result contract):
#   holds      the whole property was checked on this allocation and is true;
#   fails      refuted: the witness says who, against whom, by how much;
#   unrefuted  a bounded probe (or a sample) found no counterexample; the detail says how much
#              was probed;
#   unchecked  not checked (size cap, a solver limit hit inside the check, no mechanism to probe,
#              no claim to check); the detail says why.
