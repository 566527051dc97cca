"""The result contract (DESIGN.md) and its renderings: JSON, a rich table, Markdown.

An :class:`Allocation` is stored by columns (one numpy array per output key) so that a million
users cost arrays, not a million dicts; it still reads like the contract's mapping
``allocation[id] -> {key: value, nested: {key: value}}``.
"""

from __future__ import annotations

import json
import math
from collections.abc import Callable, Iterator, Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any

import numpy as np
import orjson

from fairalloc.errors import Violations

# ``iteration_limit``: a fixed-point iteration (token's Algorithm 1) stopped at its iteration cap
# without converging; its last iterate is kept, labelled, and the exit code is 1.
STATUSES = ("optimal", "feasible", "heuristic", "infeasible", "time_limit", "iteration_limit")
FAILED = ("infeasible", "time_limit", "iteration_limit")

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
        return self._row({key: _plain(col[i]) for key, col in self.columns.items()})

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
                values = _plain(values)
            out[key] = values
        return out

    def rows(self) -> Iterator[tuple[str, dict]]:
        cols = self._plain_columns()
        for i, uid in enumerate(self.ids):
            yield uid, self._row({key: col[i] for key, col in cols.items()})

    def to_dict(self) -> dict:
        return dict(self.rows())

    def to_json_lines(self, indent: str) -> str:
        """The allocation as a JSON object with one id per line.

        Built column by column (one C-level ``json.dumps`` per column, a %-template per row),
        so a million ids take about a second rather than ten.
        """
        if not self.ids:
            return "{}"
        keys = list(self.columns)
        markers = {key: f"\u0000{k}\u0000" for k, key in enumerate(keys)}
        template = json.dumps(self._row(markers), separators=(", ", ": ")).replace("%", "%%")
        for marker in markers.values():
            template = template.replace(json.dumps(marker), "%s")
        plain = self._plain_columns()
        cells = [_json_cells(plain[key], self.columns[key]) for key in keys]
        ids = map(json.dumps, self.ids)
        lines = (f"{indent}  {uid}: {template % row}" for uid, row in zip(ids, zip(*cells)))
        body = ",\n".join(lines)
        return "{\n" + body + f"\n{indent}}}"


def _json_cells(values: list, column: np.ndarray) -> list[str]:
    """Each value of a column as JSON text. A column of numbers is one orjson call (shortest
    round-trip floats, NaN as null): 6x faster than the standard library's float formatting."""
    if column.ndim == 1 and column.dtype.kind in "fiub" and len(column):
        return orjson.dumps(np.ascontiguousarray(column),   # orjson takes C-ordered arrays only
                            option=orjson.OPT_SERIALIZE_NUMPY).decode()[1:-1].split(",")
    return [json.dumps(v, allow_nan=False) for v in values]


def _plain(value: Any) -> Any:
    """A JSON-ready Python value: numpy scalars unwrapped, non-finite numbers as null."""
    if isinstance(value, np.ndarray):
        return [_plain(v) for v in value.tolist()]
    if isinstance(value, (np.floating, float)):
        value = float(value)
        return value if math.isfinite(value) else None
    if isinstance(value, np.integer):
        return int(value)
    if isinstance(value, (np.bool_,)):
        return bool(value)
    if isinstance(value, list):
        return [_plain(v) for v in value]
    if isinstance(value, dict):
        return {k: _plain(v) for k, v in value.items()}
    return value


def read_allocation(
    data: Any,
    ids: Sequence[str],
    required: Sequence[Key],
    optional: Sequence[Key] = (),
    found: Violations | None = None,
    parsed: Mapping[Key, Callable[[Any], Any]] | None = None,
) -> Allocation:
    """Read an allocation in the result's format (as produced elsewhere) into columns.

    Every id of the spec must be present with every ``required`` key holding a finite number;
    ``optional`` keys, when given for one id, are needed for all; ``parsed`` keys are read by
    their function, whose result is the column's value (a ValueError is reported with its
    message; such a key is required when it is also in ``required``). Unknown ids and other
    keys are reported. Raises ``SpecError``.
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
    return Allocation(ids, columns)


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
VERDICTS = ("holds", "fails", "unrefuted", "unchecked")
MARKS = {"holds": "✓", "fails": "✗", "unrefuted": "~", "unchecked": "–"}
MEANINGS = {"holds": "proved on this allocation", "fails": "refuted, with a witness",
            "unrefuted": "a bounded probe found no counterexample",
            "unchecked": "not checked (the detail says why)"}


def check_column(check: str) -> str:
    """The column a check shares with its kin in tables and plots: every method's own bound
    (``bound:theorem2``, ``bound:theorem5``, ``bound`` when none is claimed) is ``bound``."""
    return "bound" if check.split(":")[0] == "bound" else check


@dataclass(frozen=True)
class Finding:
    """The verdict of one check on one allocation; a failure carries a witness.

    ``verdict`` is one of :data:`VERDICTS`; a check that decided the whole property may pass
    its outcome as a bool (True: ``holds``, False: ``fails``).

    >>> Finding("envy_freeness", False, "u1 envies u2", {"envious": "u1"}).to_dict()["holds"]
    False
    >>> Finding("strategy_proofness", "unrefuted", "24 misreports").holds is None
    True
    """

    check: str
    verdict: str | bool
    detail: str
    witness: Any = None

    def __post_init__(self) -> None:
        verdict = self.verdict
        if isinstance(verdict, (bool, np.bool_)):
            object.__setattr__(self, "verdict", "holds" if verdict else "fails")
        elif verdict not in VERDICTS:
            raise ValueError(f"verdict must be one of {', '.join(VERDICTS)}, not {verdict!r}")

    @property
    def holds(self) -> bool | None:
        """True only when the property was proved, False only when refuted, else None."""
        return {"holds": True, "fails": False}.get(self.verdict)

    @property
    def mark(self) -> str:
        return MARKS[self.verdict]

    def to_dict(self) -> dict:
        return {
            "check": self.check,
            "verdict": self.verdict,
            "holds": self.holds,
            "detail": self.detail,
            "witness": _plain(self.witness),
        }


@dataclass
class Solution:
    """What a method returns: an allocation, its status and what the method knows about it."""

    allocation: Allocation
    status: str
    objective: float | None = None
    metrics: dict = field(default_factory=dict)
    solver: dict = field(default_factory=dict)


@dataclass
class Result:
    """One solved (or validated) spec: the contract's ``fairalloc solve --format json`` object."""

    problem: str
    method: str
    status: str
    objective: float | None
    allocation: Allocation
    metrics: dict
    validation: list[Finding]
    solver: dict
    name: str | None = None

    def finding(self, check: str) -> Finding:
        return next(f for f in self.validation if f.check == check)

    def to_dict(self, allocation: bool = True) -> dict:
        out = {
            "name": self.name,
            "problem": self.problem,
            "method": self.method,
            "status": self.status,
            "objective": _plain(self.objective),
            "allocation": self.allocation.to_dict() if allocation else None,
            "metrics": _plain(self.metrics),
            "validation": [f.to_dict() for f in self.validation],
            "solver": _plain(self.solver),
        }
        if not allocation:
            del out["allocation"]
        return out

    def to_json(self) -> str:
        """The result as indented JSON, the allocation one id per line."""
        marker = "\u0000allocation\u0000"
        head = {**self.to_dict(allocation=False), "allocation": marker}
        order = ["name", "problem", "method", "status", "objective", "allocation"]
        head = {k: head[k] for k in order} | {k: v for k, v in head.items() if k not in order}
        text = json.dumps(head, indent=2, allow_nan=False)
        return text.replace(json.dumps(marker), self.allocation.to_json_lines("  "), 1)


def fmt(value: Any, width: int = 60) -> str:
    """A compact human rendering of a number, list or dict."""
    value = _plain(value)
    if value is None:
        return "—"
    if isinstance(value, bool):
        return "yes" if value else "no"
    if isinstance(value, float):
        if value == int(value) and abs(value) < 1e15:
            return f"{int(value)}"
        return f"{value:.6g}"
    if isinstance(value, list):
        text = "[" + ", ".join(_short(v) for v in value) + "]"
    elif isinstance(value, dict):
        text = "{" + ", ".join(f"{k}: {_short(v)}" for k, v in value.items()) + "}"
    else:
        return str(value)
    return text if len(text) <= width else text[: width - 1] + "…"


def _short(value: Any) -> str:
    """A number inside a list or dict, to 4 significant digits (the JSON output keeps all)."""
    if isinstance(value, float) and not (value == int(value) and abs(value) < 1e15):
        return f"{value:.4g}"
    return fmt(value, width=24)


def _dotted(metrics: dict, prefix: str = "") -> list[tuple[str, Any]]:
    """Metrics with nested dicts of dicts spelled out as dotted names (simulation.lottery.x)."""
    rows: list[tuple[str, Any]] = []
    for key, value in metrics.items():
        if isinstance(value, dict) and any(isinstance(v, dict) for v in value.values()):
            rows += _dotted(value, f"{prefix}{key}.")
        else:
            rows.append((f"{prefix}{key}", value))
    return rows


def _allocation_rows(allocation: Allocation, limit: int) -> tuple[list[str], list[list[str]]]:
    keys = list(allocation.columns)
    header = ["id"] + [".".join(k) for k in keys]
    rows = [
        [uid] + [fmt(allocation.columns[k][i]) for k in keys]
        for i, uid in enumerate(allocation.ids[:limit])
    ]
    return header, rows


def render_table(result: Result, console=None, rows: int = 25) -> None:
    """Print a result as rich tables: summary, allocation (first ``rows`` ids), metrics, checks."""
    from rich import box
    from rich.console import Console
    from rich.table import Table

    console = console or Console(highlight=False)
    title = f"{result.name or result.problem} — {result.problem} / {result.method}"
    style = "green" if result.status in ("optimal", "heuristic", "feasible") else "bold red"
    time_s = result.solver.get("time_s")
    head = f"[{style}]{result.status}[/]  objective {fmt(result.objective)}"
    if time_s is not None:
        head += f"  ({result.solver.get('name', '?')}, {time_s:.3g} s)"
    if "gap" in result.solver:
        head += f"  gap {fmt(result.solver['gap'])}"
    console.print(f"[bold]{title}[/]\n{head}")

    header, body = _allocation_rows(result.allocation, rows)
    table = Table(*header, box=box.SIMPLE_HEAD, title="allocation", title_justify="left")
    for row in body:
        table.add_row(*row)
    console.print(table)
    if len(result.allocation) > rows:
        console.print(f"  … {len(result.allocation) - rows:,} more (use --format json for all)")

    if result.metrics:
        metrics = Table("metric", "value", box=box.SIMPLE_HEAD, title="metrics",
                        title_justify="left")
        for key, value in _dotted(result.metrics):
            metrics.add_row(key, fmt(value))
        console.print(metrics)

    if result.validation:
        checks = Table("check", "verdict", "detail", "witness", box=box.SIMPLE_HEAD,
                       title="validation", title_justify="left")
        for f in result.validation:
            checks.add_row(f.check, f"{rich_mark(f.verdict)} {f.verdict}", f.detail,
                           fmt(f.witness, 50) if f.witness else "")
        console.print(checks)
        console.print(f"  {legend(result.validation)}", style="dim")


MARK_STYLES = {"holds": "green", "fails": "red", "unrefuted": "yellow", "unchecked": "dim"}


def rich_mark(verdict: str) -> str:
    """A verdict's mark in rich markup: ✓ green, ✗ red, ~ yellow, – dim."""
    return f"[{MARK_STYLES[verdict]}]{MARKS[verdict]}[/]"


def legend(findings: Sequence[Finding] = ()) -> str:
    """What each mark means; only the marks that appear, when ``findings`` are given.

    >>> print(legend().replace(" · ", chr(10)))
    ✓ holds: proved on this allocation
    ✗ fails: refuted, with a witness
    ~ unrefuted: a bounded probe found no counterexample
    – unchecked: not checked (the detail says why)
    """
    shown = {f.verdict for f in findings} or set(VERDICTS)
    return " · ".join(f"{MARKS[v]} {v}: {MEANINGS[v]}" for v in VERDICTS if v in shown)


def render_markdown(result: Result, rows: int = 50) -> str:
    """A result as Markdown: a summary line and tables for allocation, metrics and checks."""

    def table(header: list[str], body: list[list[str]]) -> list[str]:
        esc = [[c.replace("|", "\\|") for c in r] for r in [header] + body]
        out = ["| " + " | ".join(esc[0]) + " |", "|" + "---|" * len(header)]
        return out + ["| " + " | ".join(r) + " |" for r in esc[1:]]

    lines = [
        f"## {result.name or result.problem} — {result.problem} / {result.method}",
        "",
        f"status **{result.status}**, objective {fmt(result.objective)}, "
        f"solver {result.solver.get('name', '?')} in {fmt(result.solver.get('time_s'))} s",
        "",
    ]
    header, body = _allocation_rows(result.allocation, rows)
    lines += table(header, body)
    if len(result.allocation) > rows:
        lines.append(f"\n… {len(result.allocation) - rows:,} more ids")
    if result.metrics:
        lines += ["", *table(["metric", "value"],
                             [[k, fmt(v)] for k, v in _dotted(result.metrics)])]
    if result.validation:
        body = [
            [f.check, f"{f.mark} {f.verdict}", f.detail, fmt(f.witness, 80) if f.witness else ""]
            for f in result.validation
        ]
        lines += ["", *table(["check", "verdict", "detail", "witness"], body),
                  "", legend(result.validation)]
    return "\n".join(lines) + "\n"
