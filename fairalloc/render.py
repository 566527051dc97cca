"""Renderings of results for people: a rich table and Markdown (JSON is ``Result.to_json``)."""

from __future__ import annotations

from collections.abc import Iterable
from typing import Any

from fairalloc.allocation import Allocation, plain_value
from fairalloc.result import MARKS, MEANINGS, VERDICTS, Finding, Result


def fmt(value: Any, width: int = 60) -> str:
    """A compact human rendering of a number, list or dict."""
    value = plain_value(value)
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


def legend(findings: Iterable[Finding | str] = ()) -> str:
    """What each mark means; only the marks that appear, when ``findings`` (or verdicts) are
    given.

    >>> print(legend().replace(" · ", chr(10)))
    ✓ holds: proved on this allocation
    ✗ fails: refuted, with a witness
    ~ unrefuted: a bounded probe found no counterexample
    – unchecked: not checked (the detail says why)
    """
    shown = {f if isinstance(f, str) else f.verdict for f in findings} or set(VERDICTS)
    return " · ".join(f"{MARKS[v]} {v}: {MEANINGS[v]}" for v in VERDICTS if v in shown)


def markdown_table(header: list[str], body: list[list[str]]) -> list[str]:
    """Lines of a Markdown table, ``|`` in cells escaped.

    >>> markdown_table(["a", "b"], [["x|y", "1"]])
    ['| a | b |', '|---|---|', '| x\\\\|y | 1 |']
    """
    esc = [[c.replace("|", "\\|") for c in r] for r in [header] + body]
    out = ["| " + " | ".join(esc[0]) + " |", "|" + "---|" * len(header)]
    return out + ["| " + " | ".join(r) + " |" for r in esc[1:]]


def render_markdown(result: Result, rows: int = 50) -> str:
    """A result as Markdown: a summary line and tables for allocation, metrics and checks."""

    lines = [
        f"## {result.name or result.problem} — {result.problem} / {result.method}",
        "",
        f"status **{result.status}**, objective {fmt(result.objective)}, "
        f"solver {result.solver.get('name', '?')} in {fmt(result.solver.get('time_s'))} s",
        "",
    ]
    header, body = _allocation_rows(result.allocation, rows)
    lines += markdown_table(header, body)
    if len(result.allocation) > rows:
        lines.append(f"\n… {len(result.allocation) - rows:,} more ids")
    if result.metrics:
        lines += ["", *markdown_table(["metric", "value"],
                             [[k, fmt(v)] for k, v in _dotted(result.metrics)])]
    if result.validation:
        body = [
            [f.check, f"{f.mark} {f.verdict}", f.detail, fmt(f.witness, 80) if f.witness else ""]
            for f in result.validation
        ]
        lines += ["", *markdown_table(["check", "verdict", "detail", "witness"], body),
                  "", legend(result.validation)]
    return "\n".join(lines) + "\n"
