"""Renderings of results for people: rich tables, Markdown, CSV, LaTeX and HTML (JSON is
``Result.to_json``). Each text format has one escaper here, used by every command and by
reports: :func:`escape_markdown`, :func:`escape_latex`, :func:`escape_html`."""

from __future__ import annotations

import csv
import html
import io
import os
import re
import sys
import unicodedata
from collections.abc import Iterable
from typing import Any

from fairalloc.allocation import Allocation, plain_value
from fairalloc.result import (
    MARKS,
    MEANINGS,
    NOTEBOOK,
    VERDICTS,
    Comparison,
    Finding,
    Result,
    check_column,
    ratio_header,
    ratio_to,
)


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


def _allocation_rows(allocation: Allocation, limit: int, show=fmt
                     ) -> tuple[list[str], list[list[str]]]:
    keys = list(allocation.columns)
    header = ["id"] + [".".join(k) for k in keys]
    rows = [
        [uid] + [show(allocation.columns[k][i]) for k in keys]
        for i, uid in enumerate(allocation.ids[:limit])
    ]
    return header, rows


def exact_text(value: Any) -> str:
    """A value for CSV: every digit of a number (repr), empty for none.

    >>> exact_text(2 / 3), exact_text(None), exact_text(3)
    ('0.6666666666666666', '', '3')
    """
    value = plain_value(value)
    if value is None:
        return ""
    return repr(float(value)) if isinstance(value, float) else str(value)


def render_table(result: Result, console=None, rows: int = 25) -> None:
    """Print a result as rich tables: summary, allocation (first ``rows`` ids), metrics, checks."""
    # lazy: rich (tens of ms), only the table format needs it
    from rich.console import Console
    from rich.markup import escape  # cells are markup; names, details and witnesses are text

    console = console or Console(highlight=False)
    title = escape(f"{result.name or result.problem} — {result.problem} / {result.method}")
    style = "green" if result.status in ("optimal", "heuristic", "feasible") else "bold red"
    time_s = result.solver.get("time_s")
    head = f"[{style}]{result.status}[/]  objective {fmt(result.objective)}"
    if time_s is not None:
        head += f"  ({escape(str(result.solver.get('name', '?')))}, {time_s:.3g} s)"
    if "gap" in result.solver:
        head += f"  gap {fmt(result.solver['gap'])}"
    console.print(f"[bold]{title}[/]\n{head}")

    header, body = _allocation_rows(result.allocation, rows)
    print_table(console, header, [[escape(c) for c in row] for row in body], "allocation")
    if len(result.allocation) > rows:
        console.print(f"  … {len(result.allocation) - rows:,} more (use --format json for all)")

    if result.metrics:
        print_table(console, ["metric", "value"],
                    [[escape(key), escape(fmt(value))] for key, value in _dotted(result.metrics)],
                    "metrics")

    if result.validation:
        print_table(console, ["check", "verdict", "detail", "witness"],
                    [[f.check, f"{rich_mark(f.verdict)} {f.verdict}", escape(f.detail),
                      escape(fmt(f.witness, 50)) if f.witness else ""]
                     for f in result.validation],
                    "validation", legend(result.validation))


PIPED_WIDTH = 150       # tables written to a file or a CI log, when COLUMNS is unset
TEXT_WIDTH = 24         # a column with a spaced cell longer than this is text: it wraps
READABLE = 5           # an abbreviated head may take this much even above a narrow column
FOLD_WIDTH = 10         # text wraps at its spaces; a word longer than this may fold


def console_width() -> int | None:
    """The width terminal tables are laid out in: None (rich's: the terminal's, or
    ``COLUMNS``) on a terminal or when ``COLUMNS`` is set, else :data:`PIPED_WIDTH`."""
    if sys.stdout.isatty() or os.environ.get("COLUMNS", "").strip().isdigit():
        return None
    return PIPED_WIDTH


class Layout:
    """How a table fits a width: its heads (abbreviated ones in ``legend``), each column's
    width (None: rich's natural widths), its cell padding, which columns wrap."""

    def __init__(self, heads: list[str], widths: list[int] | None, padding: int,
                 wraps: list[bool], legend: str = "") -> None:
        self.heads, self.widths, self.padding = heads, widths, padding
        self.wraps, self.legend = wraps, legend


def layout(heads: list[str], columns: list[list[str]], width: int, abbreviate_heads: bool = True
           ) -> Layout | None:
    """The layout of a table of plain-text cells (``columns[j]``: column j's cells) in
    ``width`` characters that prints every number and name whole: at natural widths if they
    fit; else text columns (:data:`TEXT_WIDTH`) wrap at their spaces; else the cells are
    spaced by one character instead of three; else heads wider than their column are
    abbreviated (:func:`abbreviate`, with a legend; unless not ``abbreviate_heads``). None
    when even that does not fit (the caller prints one block per row).

    >>> layout(["utilization.gpu", "n"], [["0.5"], ["1"]], 80).widths is None
    True
    >>> fit = layout(["utilization.gpu", "time (s)"], [["0.125"], ["0.25"]], 14)
    >>> fit.heads, fit.widths, fit.legend
    (['u.gpu', 't.s'], [5, 4], 'u.gpu: utilization.gpu · t.s: time (s)')
    """
    data = [max((_cell_width(c) for c in cells), default=0) for cells in columns]
    wraps = [is_text(cells) for cells in columns]
    least = [min(d, max(FOLD_WIDTH, *(_longest_word(c) for c in cells))) if wrap else d
             for d, wrap, cells in zip(data, wraps, columns)]
    tries = [(1, heads), (0, heads)]
    if abbreviate_heads:
        tries += [(0, shown) for shortest in (READABLE, 2)   # u.k80 before uk
                  for shown in _fewest_abbreviations(heads, [max(n, shortest) for n in least])]
    for padding, shown in tries:
        room = width - _frame_width(len(heads), padding)
        natural = [max(d, _cell_width(h)) for d, h in zip(data, shown)]
        needed = [max(n, _cell_width(h)) for n, h in zip(least, shown)]
        if sum(natural) <= room:
            widths = None if shown is heads and padding == 1 else natural
        elif sum(needed) <= room:
            widths = _shrunk(natural, needed, wraps, room)
        else:
            continue
        legend = " · ".join(f"{s}: {h}" for s, h in zip(shown, heads) if s != h)
        return Layout(list(shown), widths, padding, wraps, legend)
    return None


def _fewest_abbreviations(heads: list[str], room: list[int]) -> list[list[str]]:
    """The heads with the one that saves most abbreviated, then the two that save most, and
    so on (:func:`abbreviated`): the fewest abbreviations that fit are tried first."""
    short = abbreviated(heads, room)
    saving = sorted(range(len(heads)), key=lambda j: _cell_width(short[j]) - _cell_width(heads[j]))
    chosen = [j for j in saving if short[j] != heads[j]]
    return [[short[j] if j in chosen[:k] else heads[j] for j in range(len(heads))]
            for k in range(1, len(chosen) + 1)]


def _cell_width(text: str) -> int:
    """The terminal columns of a cell's widest line (a wide character counts two)."""
    from rich.cells import cell_len

    return max((cell_len(line) for line in str(text).splitlines()), default=0)


def _longest_word(text: str) -> int:
    return max((_cell_width(w) for w in str(text).split()), default=0)


def _frame_width(columns: int, padding: int) -> int:
    """The characters a table with simple rules adds to its cells: both edges, a divider
    between columns and ``padding`` either side of each cell."""
    return 2 + max(columns - 1, 0) + 2 * padding * columns


def _shrunk(natural: list[int], needed: list[int], wraps: list[bool], room: int) -> list[int]:
    """Column widths summing to at most ``room``: the widest wrapping column narrowed first,
    none below its need."""
    widths = list(natural)
    while sum(widths) > room:
        j = max((j for j, w in enumerate(wraps) if w and widths[j] > needed[j]),
                key=lambda j: widths[j])
        widths[j] -= 1
    return widths


def abbreviated(heads: list[str], room: list[int]) -> list[str]:
    """Each head wider than its column's ``room`` abbreviated (:func:`abbreviate`); the others
    as they are; no two alike.

    >>> abbreviated(["utilization.cpu", "utilization.gpu", "status"], [5, 5, 9])
    ['u.cpu', 'u.gpu', 'status']
    >>> abbreviated(["ab", "abc", "abd"], [1, 1, 1])
    ['ab', 'ab2', 'ab3']
    """
    out: list[str] = []
    for head, width in zip(heads, room):
        short = head if _cell_width(head) <= width else abbreviate(head, max(width, 2))
        base, n = short, 1
        while short in out:
            n += 1
            short = f"{base}{n}"
        out.append(short)
    return out


def abbreviate(head: str, width: int) -> str:
    """A column head in ``width`` characters where it can be: its last word led by the
    initials of the others (``u.gpu``), else the initials (``Mg``), else its first
    characters and a dot.

    >>> abbreviate("utilization.gpu", 5), abbreviate("MIP gap", 2), abbreviate("objective", 7)
    ('u.gpu', 'Mg', 'object.')
    """
    parts = [p for p in re.split(r"[\s._\-()/]+", head) if p]
    if len(parts) > 1:
        for short in (".".join([p[0] for p in parts[:-1]] + [parts[-1]]),
                      "".join(p[0] for p in parts)):
            if _cell_width(short) <= width:
                return short
    return head[:width - 1] + "." if width > 3 else head[:width]


def print_table(console, header: list[Any], body: list[list[Any]], title: str = "",
                note: str = "") -> None:
    """Rows as a rich table (cells are text with rich markup) that never cuts a number or a
    name: laid out by :func:`layout` in the console's width, the legend of abbreviated heads
    and ``note`` below it; when it does not fit, one block per row (the row's first cell as
    its head, then each column's name and value)."""
    from rich.text import Text

    heads = [str(h) for h in header]
    rows = [[Text.from_markup(str(c)) for c in row] for row in body]
    columns = [[row[j].plain for row in rows if j < len(row)] for j in range(len(heads))]
    fit = layout(heads, columns, console.width)
    if fit is None:
        if title:
            console.print(title, style="table.title")
        for row in rows:
            _print_block(console, heads, row)
    else:
        _print_rich(console, fit.heads, rows, title, fit)
    for line in filter(None, [fit and fit.legend, note]):
        console.print(f"  {line}", style="dim")


def _print_block(console, heads: list[str], row: list[Any]) -> None:
    """A row of a table too wide for the console: a two-column table headed by the row's
    first cell, then each column's name and the row's value (values wrap)."""
    from rich.text import Text

    names, values = heads[1:len(row)], row[1:]
    fit = (layout([heads[0], row[0].plain], [names, [v.plain for v in values]], console.width,
                  abbreviate_heads=False)
           or Layout([heads[0], row[0].plain], None, 0, [False, True]))
    _print_rich(console, [heads[0], row[0]], [[Text(n), v] for n, v in zip(names, values)],
                "", fit)


def _print_rich(console, heads: list[Any], rows: list[list[Any]], title: str, fit: Layout
                ) -> None:
    """One rich table with simple rules, laid out as ``fit`` says; every cell folds rather
    than being cut (nothing is ellipsised)."""
    from rich import box
    from rich.table import Table

    table = Table(box=box.SIMPLE_HEAD, title=title or None, title_justify="left",
                  padding=(0, fit.padding))
    for j, head in enumerate(heads):
        table.add_column(head, overflow="fold", no_wrap=not fit.wraps[j],
                         width=fit.widths[j] if fit.widths else None)
    for row in rows:
        table.add_row(*row)
    console.print(table)


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


SHORT = {
    "feasibility": "feasible", "sharing_incentive": "SI", "envy_freeness": "EF",
    "pareto_efficiency": "PE", "strategy_proofness": "SP", "delta_fairness": "δ-fair",
    "max_min": "max-min", "time_guarantee": "time", "no_unforced_idle": "no idle",
    "all_resident": "resident",
}


def short_check(check: str) -> str:
    """A check's column head in tables (SI, EF, PE, ...; a bound by its name).

    >>> short_check("envy_freeness"), short_check("bound:theorem5")
    ('EF', 'theorem5')
    """
    return SHORT.get(check, check.removeprefix("bound:"))


TITLES = {
    "envy_freeness": "envy-freeness", "pareto_efficiency": "Pareto efficiency",
    "strategy_proofness": "strategy-proofness", "delta_fairness": "δ-fairness",
    "max_min": "max-min fairness", "no_unforced_idle": "no unforced idle time",
    "all_resident": "every kernel resident",
}


def check_title(check: str) -> str:
    """A check's name in words, for the reader of an abbreviated column head.

    >>> check_title("sharing_incentive"), check_title("bound"), check_title("bound:theorem5")
    ('sharing incentive', "the method's own bound", "the method's own bound (theorem5)")
    """
    name, _, claim = check.partition(":")
    if name == "bound":
        return "the method's own bound" + (f" ({claim})" if claim else "")
    return TITLES.get(check, check.replace("_", " "))


def check_heads(checks: Iterable[str]) -> list[Cell]:
    """The column heads of checks: the short name, with the check's name in words as its
    detail (HTML writes ``<abbr title>``; other formats the short name)."""
    return [Cell(short_check(c), "", check_title(c)) for c in checks]


def abbreviations(header: Iterable[Any]) -> str:
    """The legend of a table's heads written as initials (SI, EF, ...; :func:`check_heads`),
    each with its title; none: empty.

    >>> abbreviations(["method", *check_heads(["feasibility", "sharing_incentive", "bound"])])
    'SI: sharing incentive'
    """
    heads = {h.text: h.detail for h in header
             if isinstance(h, Cell) and h.detail and h.text.isupper()}
    return " · ".join(f"{short}: {title}" for short, title in heads.items())


def escape_markdown(text: str) -> str:
    """A cell or line of Markdown: pipes, backslashes and the characters that start
    emphasis, code, links or HTML are escaped (an underscore inside a word, as in
    ``envy_freeness``, starts nothing and stays); line breaks become spaces.

    >>> print(escape_markdown("a|b *c* <d> `e` _f_ envy_freeness"))
    a\\|b \\*c\\* \\<d> \\`e\\` \\_f\\_ envy_freeness
    """
    text = " ".join(str(text).splitlines())
    return re.sub(r"([\\|*`<\[\]])|(?<!\w)_|_(?!\w)",
                  lambda m: "\\" + m.group(0), text)


LATEX_SPECIAL = {"&": r"\&", "%": r"\%", "$": r"\$", "#": r"\#", "_": r"\_", "{": r"\{",
                 "}": r"\}", "~": r"\textasciitilde{}", "^": r"\textasciicircum{}",
                 "\\": r"\textbackslash{}", "[": "{[}", "]": "{]}", "*": "{*}",
                 "|": r"\textbar{}", "✓": r"\checkmark{}", "✗": r"$\times$",
                 "–": "--", "—": "---", "÷": r"$\div$", "×": r"$\times$", "≥": r"$\geq$",
                 "≤": r"$\leq$", "δ": r"$\delta$", "η": r"$\eta$", "φ": r"$\phi$",
                 "…": r"\ldots{}", "<": r"\textless{}", ">": r"\textgreater{}"}


def _latex_char(char: str) -> str:
    """One character as LaTeX: a control or line-separator character becomes a space (a
    newline in a ``%`` comment would end it and run the rest of the line)."""
    if unicodedata.category(char) in ("Cc", "Zl", "Zp"):
        return " "
    return LATEX_SPECIAL.get(char, char)


def escape_latex(text: str) -> str:
    """Text for a LaTeX document, safe in every position fairalloc writes it (a cell, a
    row's first cell, a caption, a ``%`` comment): the ten special characters escaped;
    ``[``, ``]`` and ``*`` braced (after ``\\\\`` or ``\\midrule`` they would be read as
    an optional argument or a star); control characters and line breaks as spaces; the marks
    and symbols fairalloc prints (✓ ✗ ÷ δ …) as LaTeX (``\\checkmark`` needs amssymb).

    >>> print(escape_latex(r"50% of a_1 & {x} ~ y^2 \\ #3 $"))
    50\\% of a\\_1 \\& \\{x\\} \\textasciitilde{} y\\textasciicircum{}2 \\textbackslash{} \\#3 \\$
    >>> print(escape_latex("[1em] B\\n\\\\input{x}"))
    {[}1em{]} B \\textbackslash{}input\\{x\\}
    """
    return "".join(map(_latex_char, str(text)))


def escape_html(text: str) -> str:
    """Text for HTML (element content and quoted attributes).

    >>> escape_html('<b> & "x"')
    '&lt;b&gt; &amp; &quot;x&quot;'
    """
    return html.escape(str(text), quote=True)


NUMBER = re.compile(r"^[-+]?(\d[\d,]*\.?\d*|\.\d+)([eE][-+]?\d+)?%?$")


def numeric_columns(body: list[list[str]]) -> list[bool]:
    """Which columns hold only numbers (or nothing): they are right-aligned."""
    width = max((len(r) for r in body), default=0)
    return [all(not r[i] or NUMBER.match(r[i].strip()) or r[i] == "—" for r in body
                if i < len(r)) and any(i < len(r) and r[i] and r[i] != "—" for r in body)
            for i in range(width)]


def markdown_table(header: list[str], body: list[list[str]]) -> list[str]:
    """Lines of a Markdown table, cells escaped, numeric columns right-aligned.

    >>> markdown_table(["a", "b"], [["x|y", "1"]])
    ['| a | b |', '|---|---:|', '| x\\\\|y | 1 |']
    """
    align = numeric_columns(body)
    esc = [[escape_markdown(c) for c in r] for r in [header] + body]
    rule = "|" + "".join("---:|" if i < len(align) and align[i] else "---|"
                         for i in range(len(header)))
    out = ["| " + " | ".join(esc[0]) + " |", rule]
    return out + ["| " + " | ".join(r) + " |" for r in esc[1:]]


LINEWIDTH = r"\linewidth"
LATEX_LENGTH = re.compile(r"(\d+\.?\d*|\.\d+)?\\[A-Za-z]+"      # \linewidth, 0.8\textwidth
                          r"|(\d+\.?\d*|\.\d+)(pt|bp|mm|cm|in|em|ex|pc)")     # 12cm
LATEX_PACKAGES = "booktabs,tabularx,graphicx,amssymb"
HEAD_LINE = 6             # a column head may stack into lines this long (above its cells)
TABCOLSEP = r"\setlength{\tabcolsep}{4pt}"      # tighter than LaTeX's 6pt, within the float
TEXT_MEASURE = "30em"     # the narrowest a table with wrapped text is set before scaling


def latex_table(title: str, header: list[str], body: list[list[str]], note: str = "",
                width: str = LINEWIDTH) -> str:
    r"""A table as a LaTeX float no wider than ``width`` (a LaTeX length: ``\linewidth``,
    ``\textwidth``, ``0.8\linewidth``, ``12cm``), with booktabs rules and numeric columns
    right-aligned (``\usepackage{booktabs,tabularx,graphicx,amssymb}``); ``note`` below it.
    A table with free text (a column like the checks' details, :func:`text_columns`) is a
    ``tabularx`` of that width (at least :data:`TEXT_MEASURE`) whose text columns wrap; any
    other is set at its natural width. Either is scaled down to ``width`` only when wider
    (LaTeX measures it: no estimate here).

    >>> print(latex_table("a_b", ["x", "n"], [["50%", "1"]]))
    % fairalloc: needs \usepackage{booktabs,tabularx,graphicx,amssymb}
    \begin{table}[ht]
    \centering
    \caption{a\_b}
    \setlength{\tabcolsep}{4pt}
    \ifdefined\fairallocbox\else\newsavebox{\fairallocbox}\fi
    \begin{lrbox}{\fairallocbox}
    \begin{tabular}{@{}rr@{}}
    \toprule
    x & n \\
    \midrule
    50\% & 1 \\
    \bottomrule
    \end{tabular}
    \end{lrbox}
    \ifdim\wd\fairallocbox>\linewidth\resizebox{\linewidth}{!}{\usebox{\fairallocbox}}\else\usebox{\fairallocbox}\fi
    \end{table}
    """
    if not LATEX_LENGTH.fullmatch(width):
        raise ValueError(f"{width!r} is not a LaTeX length (\\linewidth, 0.8\\textwidth, 12cm)")
    align = numeric_columns(body)
    wraps = text_columns(body)
    spec = "".join(r">{\raggedright\arraybackslash}X" if i < len(wraps) and wraps[i]
                   else "r" if i < len(align) and align[i] else "l"
                   for i in range(len(header)))
    row = lambda cells: " & ".join(escape_latex(c) for c in cells) + r" \\"  # noqa: E731
    data = [max((len(str(r[i])) for r in body if i < len(r)), default=0)
            for i in range(len(header))]
    heads = [latex_head(str(h), max(n, HEAD_LINE), "r" if i < len(align) and align[i] else "l")
             for i, (h, n) in enumerate(zip(header, data))]
    rows = [r"\toprule", " & ".join(heads) + r" \\", r"\midrule", *map(row, body),
            r"\bottomrule"]
    box, text_width = r"\fairallocbox", r"\fairallocwidth"
    lines = [f"% fairalloc: needs \\usepackage{{{LATEX_PACKAGES}}}", r"\begin{table}[ht]",
             r"\centering", rf"\caption{{{escape_latex(title)}}}", TABCOLSEP,
             rf"\ifdefined{box}\else\newsavebox{{{box}}}\fi"]
    if any(wraps):      # wrapped text set no narrower than TEXT_MEASURE, scaled down to width
        lines += [rf"\ifdefined{text_width}\else\newlength{{{text_width}}}\fi",
                  rf"\setlength{{{text_width}}}{{{width}}}",
                  rf"\ifdim{text_width}<{TEXT_MEASURE}\setlength{{{text_width}}}{{{TEXT_MEASURE}}}"
                  r"\fi",
                  rf"\begin{{lrbox}}{{{box}}}",
                  rf"\begin{{tabularx}}{{{text_width}}}{{@{{}}{spec}@{{}}}}", *rows,
                  r"\end{tabularx}"]
    else:
        lines += [rf"\begin{{lrbox}}{{{box}}}", rf"\begin{{tabular}}{{@{{}}{spec}@{{}}}}",
                  *rows, r"\end{tabular}"]
    lines += [r"\end{lrbox}",
              rf"\ifdim\wd{box}>{width}\resizebox{{{width}}}{{!}}{{\usebox{{{box}}}}}"
              rf"\else\usebox{{{box}}}\fi"]
    if note:
        lines.append(rf"\par\smallskip{{\footnotesize {escape_latex(note)}}}")
    return "\n".join([*lines, r"\end{table}"])


def latex_head(head: str, room: int, align: str = "l") -> str:
    r"""A column head as LaTeX, stacked on lines of about ``room`` characters (broken after
    ``.``, ``_``, ``-`` or at a space) when it is wider than its column's cells, so that a
    long name does not widen a column of short numbers.

    >>> print(latex_head("min_normalized_throughput", 12, "r"))
    \shortstack[r]{min\_ \\ normalized\_ \\ throughput}
    >>> print(latex_head("solver bound", 6))
    \shortstack[l]{solver \\ bound}
    >>> print(latex_head("status", 12))
    status
    """
    pieces = [p for p in re.split(r"(?<=[._\-])|\s+", head) if p]
    lines = [""]
    for piece in pieces:
        joint = "" if not lines[-1] or lines[-1][-1] in "._-" else " "
        if lines[-1] and len(lines[-1] + joint + piece) > room:
            lines.append(piece)
        else:
            lines[-1] += joint + piece
    if len(lines) == 1:
        return escape_latex(head)
    stacked = r" \\ ".join(map(escape_latex, lines))
    return rf"\shortstack[{align}]{{{stacked}}}"


def text_columns(body: list[list[Any]]) -> list[bool]:
    """Which columns hold free text (a cell with spaces longer than :data:`TEXT_WIDTH`): they
    wrap, in a terminal and in LaTeX.

    >>> text_columns([["lp", "every bundle fits; units within caps and bundles"]])
    [False, True]
    """
    width = max((len(r) for r in body), default=0)
    return [is_text([r[i] for r in body if i < len(r)]) for i in range(width)]


def is_text(cells: Iterable[Any]) -> bool:
    """Whether a column's cells are free text: one has spaces and is longer than
    :data:`TEXT_WIDTH`."""
    return any(" " in str(c).strip() and _cell_width(c) > TEXT_WIDTH for c in cells)


def html_table(header: list[str], body: list[list[Any]], caption: str = "",
               table_id: str = "") -> str:
    """A table as HTML; a cell is text, or a :class:`Cell` (text with a class and a detail
    shown on expand); numeric columns right-aligned (class ``num``)."""
    align = numeric_columns([[c.text if isinstance(c, Cell) else c for c in r] for r in body])
    ident = f' id="{escape_html(table_id)}"' if table_id else ""
    out = [f"<table{ident}>"]
    if caption:
        out.append(f"<caption>{escape_html(caption)}</caption>")
    out.append("<thead><tr>" + "".join(f"<th>{_head_html(h)}</th>" for h in header)
               + "</tr></thead><tbody>")
    for r in body:
        cells = []
        for i, c in enumerate(r):
            cell = c if isinstance(c, Cell) else Cell(str(c))
            classes = " ".join(x for x in (cell.css, "num" if i < len(align) and align[i]
                                           else "") if x)
            attr = f' class="{classes}"' if classes else ""
            inner = escape_html(cell.text)
            if cell.detail:
                inner = (f"<details><summary>{inner}</summary><div class=\"detail\">"
                         f"{escape_html(cell.detail)}</div></details>")
            cells.append(f"<td{attr}>{inner}</td>")
        out.append("<tr>" + "".join(cells) + "</tr>")
    out.append("</tbody></table>")
    return "\n".join(out)


def _head_html(head: Any) -> str:
    """A column head: a :class:`Cell` with a detail is an abbreviation titled by it."""
    if isinstance(head, Cell) and head.detail:
        return f'<abbr title="{escape_html(head.detail)}">{escape_html(head.text)}</abbr>'
    return escape_html(str(head))


class Cell:
    """A table cell with a CSS class and a detail shown on expand (HTML; other formats show
    the text). As a column head, the detail is the title of the abbreviated head."""

    __slots__ = ("text", "css", "detail")

    def __init__(self, text: str, css: str = "", detail: str = "") -> None:
        self.text, self.css, self.detail = text, css, detail

    def __str__(self) -> str:
        return self.text


def comparison(rows: list[tuple[str, Result | str]], exact: str | None, sense: str,
               show=fmt) -> tuple[list[str], list[list[str]], list[str]]:
    """``compare``'s table: per method its status, objective, time, ratio to the exact
    method's objective (1 = as good; ``ratio_to``), the solver's MIP gap and bound, and the
    reasons of the methods that did not apply. A ratio to an exact result not proven optimal
    (stopped at its limit) is written ``≥ r``: the optimum is at least as good as that
    incumbent, so the ratio to it is at least r. Returns (header, rows, notes)."""
    reference = next((r for m, r in rows if m == exact and isinstance(r, Result)), None)
    header = ["method", "status", "objective", "time (s)", ratio_header(exact or "exact", sense),
              "MIP gap", "solver bound"]
    body, notes = [], []
    for name, r in rows:
        if not isinstance(r, Result):
            body.append([name, "n/a", "", "", "", "", ""])
            notes.append(f"n/a {name}: {r}")
            continue
        ratio = ratio_to(r.objective, reference.objective, sense) if reference else None
        shown = show(ratio)
        if ratio is not None and not reference_proven(reference):
            shown = f"≥ {shown}"
        body.append([name, r.status, show(r.objective), show(r.solver.get("time_s")),
                     shown, show(r.solver.get("gap")), show(r.solver.get("bound"))])
    if reference is not None and not reference_proven(reference):
        notes.append(f"≥: {exact}'s result is {reference.status}, not proven optimal, so each "
                     "ratio to the optimum is at least the one shown")
    return header, body, notes


def reference_proven(reference: Result) -> bool:
    """Whether a ratio's reference is proven: the exact method's result is optimal."""
    return reference.status == "optimal"


def verdict_cell(finding: Finding) -> Cell:
    """A verdict's mark (with the theorem a bound names) whose detail, on expand, is the
    finding's detail and whole witness."""
    witness = fmt(finding.witness, 10**6) if finding.witness else ""
    named = finding.check.partition(":")[2]
    return Cell(f"{MARKS[finding.verdict]} {named}".strip(), f"verdict {finding.verdict}",
                f"{finding.check}: {finding.verdict}. {finding.detail}"
                + (f"\nwitness: {witness}" if witness else ""))


def comparison_with_verdicts(rows: list[tuple[str, Result | str]], exact: str | None,
                             sense: str) -> tuple[list[str], list[list[Any]], str]:
    """The comparison table with a verdict column per check (:func:`verdict_cell`), and its
    note (the legend, the methods that did not apply)."""
    results = [r for _, r in rows if isinstance(r, Result)]
    checks = verdict_columns(results)
    header, body, notes = comparison(rows, exact, sense)
    for row, (_, r) in zip(body, rows):
        found = {} if not isinstance(r, Result) else \
            {check_column(f.check): f for f in reversed(r.validation)}
        row += [verdict_cell(found[c]) if c in found else "" for c in checks]
    findings = [f for r in results for f in r.validation]
    heads = check_heads(checks)
    marks = " · ".join(filter(None, [legend(findings) if findings else "",
                                     abbreviations(heads)]))
    note = "; ".join(filter(None, [marks, *notes]))
    return header + heads, body, note


def verdict_columns(results: Iterable[Result]) -> list[str]:
    """The check columns of several results, in order (every ``bound:*`` in one)."""
    return list(dict.fromkeys(check_column(f.check) for r in results for f in r.validation))


FORMULA_START = ("=", "+", "-", "@", "\t", "\r", "\uff1d", "\uff0b", "\uff0d", "\uff20")
CSV_NUMBER = re.compile(r"[-+]?([0-9]+\.?[0-9]*|\.[0-9]+)([eE][-+]?[0-9]+)?")


def csv_safe(cell: Any) -> Any:
    """A CSV cell a spreadsheet will not run: text starting with ``= + - @``, a tab or a
    carriage return (or a full-width ``＝ ＋ － ＠``) gets a leading ``'`` (OWASP's rule for
    CSV injection), unless the text is a plain number (``-1.5``); any other cell as it is.

    >>> [csv_safe(c) for c in ["=HYPERLINK(1)", "@SUM(A1)", "+1+2", "-1.5e3", "a=b", -2]]
    ["'=HYPERLINK(1)", "'@SUM(A1)", "'+1+2", '-1.5e3', 'a=b', -2]
    """
    if isinstance(cell, str) and cell.startswith(FORMULA_START) and not CSV_NUMBER.fullmatch(cell):
        return "'" + cell
    return cell


def csv_table(header: list[Any], body: Iterable[list[Any]]) -> str:
    """A table as CSV (RFC 4180 quoting, lines ended by ``\\n``), every cell
    :func:`csv_safe` (None: empty)."""
    out = io.StringIO()
    # Python 3.11 quotes only the terminator's characters: with CRLF a cell holding a lone
    # CR is quoted too (else it splits the row); each row's CRLF then becomes LF.
    writer = csv.writer(out, lineterminator="\r\n")
    lines = []
    for row in [header, *body]:
        out.seek(0)
        out.truncate()
        writer.writerow(map(csv_safe, row))
        lines.append(out.getvalue()[:-2] + "\n")
    return "".join(lines)


def table_text(title: str, header: list[str], body: list[list[str]], fmt_name: str,
               note: str = "", latex_width: str = LINEWIDTH) -> str:
    """A titled table with a note in a text format: markdown, csv (the table alone), latex
    (no wider than ``latex_width``) or html (a fragment)."""
    if fmt_name == "csv":
        return csv_table(header, body)
    if fmt_name == "latex":
        return latex_table(title, header, body, note, latex_width) + "\n"
    if fmt_name == "html":
        foot = f"\n<p class=\"note\">{escape_html(note)}</p>" if note else ""
        return html_table(header, body, caption=title) + foot + "\n"
    lines = [f"## {escape_markdown(title)}", "", *markdown_table(header, body)]
    return "\n".join(lines + (["", escape_markdown(note)] if note else [])) + "\n"


def result_summary(result: Result) -> str:
    """A result's one-line summary: status, objective, solver and time (and gap, bound)."""
    solver = result.solver
    line = (f"status {result.status}, objective {fmt(result.objective)}, solver "
            f"{solver.get('name') or '?'} in {fmt(solver.get('time_s'))} s")
    for key in ("gap", "bound"):
        if solver.get(key) is not None:
            line += f", {key} {fmt(solver[key])}"
    return line


def _witness(finding: Finding, width: int) -> str:
    return fmt(finding.witness, width) if finding.witness else ""


def result_tables(result: Result, rows: int = 50, cells: bool = False
                  ) -> list[tuple[str, list[str], list[list[Any]], str]]:
    """A result's tables as (title, header, rows, note): allocation (first ``rows`` ids),
    metrics and checks; with ``cells`` the verdicts are :class:`Cell` objects whose detail
    is the finding's detail and whole witness (HTML shows it on expand)."""
    header, body = _allocation_rows(result.allocation, rows)
    more = (f"… {len(result.allocation) - rows:,} more ids" if len(result.allocation) > rows
            else "")
    out = [("allocation", header, body, more)]
    if result.metrics:
        out.append(("metrics", ["metric", "value"],
                    [[k, fmt(v)] for k, v in _dotted(result.metrics)], ""))
    if result.validation:
        checks = []
        for f in result.validation:
            mark = f"{f.mark} {f.verdict}"
            if cells:
                witness = _witness(f, 10**6)
                mark = Cell(mark, f"verdict {f.verdict}",
                            f.detail + (f"\nwitness: {witness}" if witness else ""))
            checks.append([f.check, mark, f.detail, _witness(f, 80)])
        out.append(("checks", ["check", "verdict", "detail", "witness"], checks,
                    legend(result.validation)))
    return out


def result_title(result: Result) -> str:
    return f"{result.name or result.problem} — {result.problem} / {result.method}"


def render_markdown(result: Result, rows: int = 50) -> str:
    """A result as Markdown: a summary line and tables for allocation, metrics and checks."""
    parts = [f"## {escape_markdown(result_title(result))}", "",
             escape_markdown(result_summary(result)), ""]
    for title, header, body, note in result_tables(result, rows):
        parts += [f"### {title}", "", *markdown_table(header, body),
                  *(["", escape_markdown(note)] if note else []), ""]
    return "\n".join(parts)


def render_latex(result: Result, rows: int = 50, width: str = LINEWIDTH) -> str:
    """A result as LaTeX: a comment with its summary, then a table float per table, each no
    wider than ``width`` (:func:`latex_table`)."""
    parts = ["% " + escape_latex(f"{result_title(result)}: {result_summary(result)}")]
    parts += [latex_table(f"{result_title(result)}: {title}", header, body, note, width)
              for title, header, body, note in result_tables(result, rows)]
    return "\n\n".join(parts) + "\n"


def render_html(result: Result, rows: int = 50) -> str:
    """A result as an HTML fragment (notebooks, ``solve --format html``, reports): heading,
    summary and tables, each failing or probed check's witness on expand."""
    parts = [f'<div class="fairalloc-result"><h3>{escape_html(result_title(result))}</h3>',
             f"<p>{escape_html(result_summary(result))}</p>"]
    for title, header, body, note in result_tables(result, rows, cells=True):
        parts.append(html_table(header, body, caption=title))
        if note:
            parts.append(f'<p class="note">{escape_html(note)}</p>')
    return "\n".join(parts) + "\n</div>"


def render_csv(result: Result) -> str:
    """A result's allocation as CSV, every id (the metrics and checks: JSON)."""
    return csv_table(*_allocation_rows(result.allocation, len(result.allocation), exact_text))


def comparison_markdown(compared: Comparison) -> str:
    """A comparison as a Markdown table with every verdict (how a notebook shows it)."""
    header, body, note = comparison_with_verdicts(list(compared), compared.exact,
                                                  compared.sense)
    texts = [[c.text if isinstance(c, Cell) else c for c in row] for row in body]
    return table_text(compared.title, header, texts, "markdown", note)


def comparison_html(compared: Comparison) -> str:
    """A comparison as an HTML table, each witness on expand (how a notebook shows it)."""
    header, body, note = comparison_with_verdicts(list(compared), compared.exact,
                                                  compared.sense)
    return (html_table(header, body, caption=compared.title)
            + (f'\n<p class="note">{escape_html(note)}</p>' if note else ""))


NOTEBOOK.update({"result.markdown": render_markdown, "result.html": render_html,
                 "comparison.markdown": comparison_markdown, "comparison.html": comparison_html})
