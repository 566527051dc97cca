"""How commands print: results, rows of text in every format, study summaries, progress bars
and the notes and exit codes of what a command did."""

from __future__ import annotations

import contextlib
import json
import sys
import time
import types
from collections.abc import Iterator

from rich.console import Console
from rich.progress import BarColumn, MofNCompleteColumn, TextColumn, TimeRemainingColumn
from rich.progress import Progress as Bar

from fairalloc.render import (
    LINEWIDTH,
    abbreviations,
    console_width,
    csv_table,
    print_table,
    render_csv,
    render_html,
    render_latex,
    render_markdown,
    render_table,
    rich_mark,
    table_text,
)
from fairalloc.result import FAILED, MARKS, Result, check_column
from fairalloc.studies.summary import TIME_NOTE, Unit, summary_cells


def console() -> Console:
    """Tables as wide as the terminal, or COLUMNS; when piped without it, a generous width."""
    return _Console(highlight=False, width=console_width())


class _Console(Console):
    def on_broken_pipe(self) -> None:
        """A reader that left (``| head``) is not a failure: ``main`` exits 0 quietly (rich's
        default exits 1)."""
        self.quiet = True
        raise BrokenPipeError


def note(args, text: str) -> None:
    """What a command did beside its output (a file written), on stderr unless -q."""
    if not args.quiet:
        print(text, file=sys.stderr)


def emit(result: Result, fmt_name: str, rows: int, latex_width: str = LINEWIDTH) -> None:
    """A result on stdout: rich tables, JSON (the contract), Markdown, CSV (the allocation,
    every id), LaTeX (no wider than ``latex_width``) or HTML (tables of allocation, metrics
    and checks)."""
    if fmt_name == "table":
        render_table(result, console(), rows)
        return
    if fmt_name == "json":          # in pieces: a million ids' text is never held at once
        sys.stdout.writelines(result.json_chunks())
        sys.stdout.write("\n")
        return
    text = {"csv": lambda: render_csv(result),
            "markdown": lambda: render_markdown(result, rows),
            "latex": lambda: render_latex(result, rows, latex_width),
            "html": lambda: render_html(result, rows) + "\n"}[fmt_name]()
    sys.stdout.write(text)


def stored_number(value):
    """A stored number for ``fmt``: NaN (null) as None."""
    return None if value is None or value != value else value


def exit_status(results: list[Result], fail_on: list[str] | None = None) -> int:
    """1 for solver trouble, else 3 when a check named in ``fail_on`` fails, else 0."""
    if any(r.status in FAILED for r in results):
        return 1
    return gate([f.check for r in results for f in r.validation if f.verdict == "fails"],
                fail_on)


def gate(failed: list[str], fail_on: list[str] | None) -> int:
    """3, with the reason on stderr, when a failed check is one ``--fail-on`` names (by its
    name as results show it; ``bound`` for every method's own bound), else 0."""
    hit = sorted({c for c in failed for name in fail_on or ()
                  if name in (c, check_column(c))})
    if hit:
        print(f"fairalloc: --fail-on: {', '.join(hit)} failed", file=sys.stderr)
        return 3
    return 0


def failure_detail(solver: dict) -> str:
    """What a failed run leaves to say: the solver's message, else its gap and bound (a
    time-limited exact run still brackets the optimum)."""
    numbers = [f"{key} {solver[key]:.6g}" for key in ("gap", "bound")
               if isinstance(solver.get(key), (int, float))]
    return solver.get("message") or ", ".join(numbers)


def verdict_cell(check: str, verdict: str, style: str) -> str:
    """A verdict as a rich mark, a plain ``mark`` or its ``word`` (CSV), with the theorem a
    bound check names."""
    mark = {"rich": rich_mark, "mark": MARKS.get, "word": str}[style](verdict)
    named = check.partition(":")[2]
    return f"{mark} {named}" if named else mark


def cell_style(fmt_name: str) -> str:
    """How a format shows verdicts: rich marks in a table, words in CSV, else plain marks."""
    return {"table": "rich", "csv": "word"}.get(fmt_name, "mark")


def print_rows(title: str, header: list[str], body: list[list[str]], fmt_name: str,
               below: str = "", latex_width: str = LINEWIDTH) -> None:
    """Rows of text as a rich table, or Markdown, CSV, LaTeX (no wider than ``latex_width``)
    or HTML, with a note below."""
    if fmt_name != "table":
        sys.stdout.write(table_text(title, header, body, fmt_name, below, latex_width))
        return
    print_table(console(), header, body, title, below)


def print_summary(title: str, records: list[dict], by: list[str], values: list[str],
                  fmt_name: str, labels: dict[str, str], baseline: float | None = None,
                  checks: bool = True, latex_width: str = LINEWIDTH,
                  units: dict[str, Unit] | None = None) -> None:
    """A summary as a table, JSON, Markdown, CSV, LaTeX (no wider than ``latex_width``) or
    HTML (``checks``: a column per check in the table and Markdown; JSON and CSV always have
    them; ``units``: values the table formats print in a unit of their own, JSON and CSV
    keeping the stored one)."""
    if fmt_name == "json":
        print(json.dumps({"title": title, "by": by, "values": values, "groups": records},
                         indent=2, allow_nan=False))
        return
    if fmt_name == "csv":
        flat = [_flat(r) for r in records]
        names = list(dict.fromkeys(k for row in flat for k in row))
        sys.stdout.write(csv_table(names, ([row.get(n) for n in names] for row in flat)))
        return
    header, body = summary_cells(records, by, values, baseline, checks, units)
    value_note = "; ".join(f"{v}: {labels.get(v, v)}" for v in values)
    print_rows(title, header, body, fmt_name,
               "; ".join(filter(None, [value_note, "95% CI: bootstrap interval of the mean; "
                                       "rows that did not solve (or whose reference is "
                                       "unproven) are counted apart", TIME_NOTE,
                                       abbreviations(header)])),
               latex_width)


def _flat(record: dict) -> dict:
    """A summary record as one flat row of numbers and text (CSV)."""
    out = {}
    for key, value in record.items():
        if isinstance(value, dict):
            for k, v in _flat(value).items():
                out[f"{key}.{k}"] = v
        else:
            out[key] = value
    return out


LOG_EVERY_S = 30.0       # stderr not a terminal (a log file, CI): a plain line this often


class ProgressLines:
    """Progress as plain lines on stderr, one every ``LOG_EVERY_S`` seconds of wall time
    (``description: done/total, field``), for a long run whose stderr is a log file: a bar
    there would say nothing until the run ends. The part of rich's ``Progress`` that the
    commands use (``add_task``, ``update``, ``tasks``), for one task."""

    def __init__(self, field: str):
        self.field = field
        self.task = types.SimpleNamespace(description="", completed=0, total=None, fields={})
        self.tasks = [self.task]
        self.said = time.monotonic()

    def __enter__(self) -> ProgressLines:
        return self

    def __exit__(self, *exc) -> None:
        return None

    def add_task(self, description: str, total=None, **fields) -> int:
        self.task.description, self.task.total, self.task.fields = description, total, fields
        return 0

    def update(self, task: int, *, advance: float = 0, completed=None, total=None,
               description: str | None = None, **fields) -> None:
        t = self.task
        t.completed = (t.completed if completed is None else completed) + advance
        t.total = t.total if total is None else total
        t.description = t.description if description is None else description
        t.fields.update(fields)
        if time.monotonic() - self.said >= LOG_EVERY_S:
            self.said = time.monotonic()
            field = self.field.replace("task.fields", "fields").format(fields=t.fields)
            of = f"/{int(t.total):,}" if t.total is not None else ""
            print(f"{t.description}: {int(t.completed):,}{of}" + (f", {field}" if field else ""),
                  file=sys.stderr, flush=True)


def progress_bar(opts, field: str = "") -> Bar | ProgressLines:
    """Progress on stderr showing ``field``: a bar on a terminal, a plain line every
    ``LOG_EVERY_S`` seconds elsewhere (``ProgressLines``), nothing with -q."""
    shown_on = Console(stderr=True)
    if not shown_on.is_terminal:
        return Bar(disable=True) if opts.quiet else ProgressLines(field)
    columns = (TextColumn("{task.description}"), BarColumn(), MofNCompleteColumn(),
               *([TextColumn(field)] if field else []), TimeRemainingColumn())
    return Bar(*columns, transient=True, console=shown_on, disable=opts.quiet)


@contextlib.contextmanager
def bar(opts, description: str) -> Iterator[dict]:
    """A progress bar on stderr (``progress_bar``) while a study runs: the run's
    ``on_start`` and ``on_row`` callbacks that move it."""
    with progress_bar(opts, "{task.fields[errors]} errors") as shown:
        task = shown.add_task(description, total=None, errors=0)
        yield {"on_start": lambda p: shown.update(task, total=p.total, completed=p.skipped),
               "on_row": lambda row: shown.update(task, advance=1,
                                                  errors=shown.tasks[0].fields["errors"]
                                                  + (row["status"] == "error"))}


@contextlib.contextmanager
def steps(opts, description: str) -> Iterator:
    """A progress bar on stderr (``progress_bar``) moved by the API's ``on_step(what,
    done, total)`` callback, which this yields."""
    with progress_bar(opts, "{task.fields[what]}") as shown:
        task = shown.add_task(description, total=None, what="")
        yield lambda what, done, total: shown.update(task, completed=done, total=total,
                                                     what=what)


def outcome(name: str, progress, path: str | None, opts) -> int:
    """A note of what a study's run did on stderr; the exit code: 130 when interrupted, 1
    when a task failed or was lost, else 0."""
    said = (f"{name}: {progress.stored} rows stored in {path or 'memory'}"
            + (f" ({progress.skipped} were there)" if progress.skipped else "")
            + (f"; {progress.errors} error rows" if progress.errors else "")
            + (f"; {progress.lost} tasks lost by the cluster, not stored (--resume runs them)"
               if progress.lost else ""))
    if progress.interrupted:
        print(f"fairalloc study: interrupted; {said}. Run it again with --resume to continue.",
              file=sys.stderr)
        return 130
    if progress.errors or progress.lost or (path and not opts.quiet):
        print(said, file=sys.stderr)
    return 1 if progress.errors or progress.lost else 0
