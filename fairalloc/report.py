"""Reports: one document for a spec, a replay or a study store (``fairalloc report``).

For a spec: the spec, every method side by side (objective, ratio to the exact method, status,
gap, bound, time), the verdict matrix (methods × checks, each witness on expand), the metrics,
an allocation, the kind's figures (its picture of a result, its trade-off sweep) and the notes on
its paper. For a replay: its measures, the checks' verdicts over the run, its figure and its
document. For a study store: the study, its summary table and its plots.

A report is a list of blocks written as HTML (one self-contained file: inline CSS and SVG, no
scripts, no network) or as Markdown (its figures as SVG files beside it). Shared code: it uses
the kind's record (``plot``, ``tradeoff_sweep``, ``tradeoff``, ``notes``), never a kind's name.
"""

from __future__ import annotations

import dataclasses
import datetime as dt
import json
import re
import tempfile
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from fairalloc import engine, plots
from fairalloc.errors import SpecError
from fairalloc.files import make_folder, write_text
from fairalloc.registry import KINDS
from fairalloc.render import (
    Cell,
    _dotted,
    abbreviations,
    check_heads,
    comparison,
    escape_html,
    escape_markdown,
    fmt,
    html_table,
    legend,
    markdown_table,
    result_tables,
    verdict_cell,
    verdict_columns,
)
from fairalloc.result import Result, check_column
from fairalloc.spec import build, paper_notes, set_path
from fairalloc.studies import plots as study_plots
from fairalloc.studies.store import Store
from fairalloc.studies.summary import (
    TIME_NOTE,
    default_by,
    study_summary,
    study_title,
    summarise,
    summary_cells,
    value_labels,
    value_units,
)
from fairalloc.studies.sweep import run_sweep, solver_edits, spec_study
from fairalloc.version import __version__


@dataclass(frozen=True)
class Heading:
    text: str
    level: int = 2


@dataclass(frozen=True)
class Text:
    text: str
    css: str = ""


@dataclass(frozen=True)
class Table:
    header: list[str]
    rows: list[list[Any]]            # text or render.Cell
    caption: str = ""
    note: str = ""
    ident: str = ""


@dataclass(frozen=True)
class Code:
    text: str


@dataclass(frozen=True)
class Figure:
    name: str                        # the file name stem in a Markdown report
    caption: str
    svg: str


@dataclass(frozen=True)
class Notes:
    markdown: str                    # package Markdown: headings, bullets, **, *, `code`


Block = Heading | Text | Table | Code | Figure | Notes


@dataclass
class Document:
    title: str
    subtitle: str
    blocks: list[Block] = field(default_factory=list)


# --- figures ---------------------------------------------------------------------------------

def svg_of(draw: Callable[[str], Any]) -> str:
    """The SVG text of a figure that ``draw(path)`` writes (its XML prolog removed, so it can
    stand inside HTML)."""
    with tempfile.TemporaryDirectory() as tmp:
        path = Path(tmp) / "figure.svg"
        draw(str(path))
        text = path.read_text(encoding="utf-8")
    return text[text.index("<svg"):]


def _figure(name: str, caption: str, draw: Callable[[str], Any]) -> Block:
    """A figure, or a line saying why it could not be drawn (a report is still written)."""
    name = re.sub(r"[^\w-]+", "-", name).strip("-")      # a file name and an HTML id
    try:
        return Figure(name, caption, svg_of(draw))
    except Exception as exc:         # a figure that fails is reported, the rest still written
        return Text(f"{caption}: not drawn ({type(exc).__name__}: {exc})", "note")


# --- a spec ----------------------------------------------------------------------------------

# Checks that re-run the method on misreports (up to ``checks.PROBE_RUNS`` re-runs each): the
# automatic trade-off sweep leaves them out at every point, where they cost 20 times the rest
# (the ETF report spent 137 of its 154 s probing the MILP along the sweep); the verdict matrix
# still has them for the spec itself.
PROBES = ("strategy_proofness",)
# Seconds for a method that takes a limit, when neither the caller nor the spec sets one: a
# report is read, not waited for (moldable exact's own default, 60 s, made gpu-mix's report
# take 61 s); a method stopped by it shows status time_limit with its gap.
REPORT_TIME_LIMIT = 10.0


@dataclass(frozen=True)
class Steps:
    """A report's steps for ``on_step(what, done, total)`` (``engine.Step``): each method
    compared, each row of the trade-off sweep, then the figures."""

    on_step: engine.Step | None
    total: int
    done: int = 0

    def starting(self, what: str) -> Steps:
        """Step ``what`` starting: the steps once it is done."""
        if self.on_step:
            self.on_step(what, self.done, self.total)
        return Steps(self.on_step, self.total, self.done + 1)

    def finished(self, what: str) -> Steps:
        """Step ``what`` done (a sweep's row, seen when it arrives): the steps after it."""
        after = Steps(self.on_step, self.total, self.done + 1)
        if self.on_step:
            self.on_step(what, after.done, self.total)
        return after


def spec_report(spec, methods: Sequence[str] | None = None,
                time_limit: float | None = None, rows: int = 50, *,
                checks: Sequence[str] | None = None,
                sweep: tuple[str, list] | bool | None = None,
                on_step: engine.Step | None = None) -> Document:
    """The report of a spec: every method (or ``methods``) solved and checked (every check,
    or those in ``checks``; ``[]``: none), a method that takes a limit given ``time_limit``
    seconds, else the spec's ``options.time_limit``, else ``REPORT_TIME_LIMIT``. ``sweep``:
    the trade-off figure's sweep, (key, values); None: the kind's ``tradeoff_sweep``; False:
    no sweep. ``on_step`` sees each method, each sweep row and the figures start
    (``engine.Step``)."""
    kind = KINDS[spec.kind]
    title = spec.name or (Path(spec.source).name if spec.source not in (None, "<stdin>")
                          else spec.kind)
    when = dt.datetime.now().astimezone().isoformat(timespec="seconds")
    doc = Document(title, f"{spec.kind}: {kind.summary} — fairalloc {__version__}, {when}")
    swept = tradeoff_sweep(kind, sweep)
    names = engine.compared_methods(kind, methods)
    points = len(swept[1]) if swept else 0
    progress = Steps(on_step, len(names) * (1 + points) + 1)

    def method_step(what: str, done: int, total: int) -> None:
        if what != "done":
            nonlocal progress
            progress = progress.starting(what)

    limit = report_time_limit(spec, time_limit)
    compared = engine.compare(spec, names, engine.SolverSettings(time_limit=limit),
                              checks=checks, on_step=method_step)
    results = [(m, r) for m, r in compared if isinstance(r, Result)]
    progress = Steps(on_step, progress.done + len(results) * points + 1, progress.done)
    doc.blocks += [Heading("The spec"), Code(json.dumps(spec.raw, indent=2))]
    doc.blocks += _methods(compared, kind, limit)
    doc.blocks += _verdicts(results)
    doc.blocks += _metrics(results)
    shown = next((r for m, r in results if m == kind.exact), None) or \
        next((r for _, r in results), None)
    if shown is not None:
        doc.blocks.append(Heading(f"Allocation: {shown.method}"))
        table = next(t for t in result_tables(shown, rows) if t[0] == "allocation")
        doc.blocks.append(Table(table[1], table[2], note=table[3], ident="allocation"))
    figures = _spec_figures(spec, kind, shown, [m for m, _ in results], title, swept,
                            sweep_checks(kind, checks), limit, progress)
    if figures:
        doc.blocks += [Heading("Figures"), *figures]
    notes = re.sub(r"\A# .*\n+", "", paper_notes(spec.kind))   # its title: the heading here
    if notes:
        doc.blocks += [Heading("Notes on the paper"), Notes(notes)]
    doc.blocks += _reference(kind)
    if on_step:
        on_step("done", progress.total, progress.total)
    return doc


def report_time_limit(spec, time_limit: float | None) -> float:
    """The seconds each method that takes a limit gets in a report: ``time_limit``, else the
    spec's ``options.time_limit``, else ``REPORT_TIME_LIMIT``."""
    if time_limit is not None:
        return float(time_limit)
    return float(spec.options.get("time_limit", REPORT_TIME_LIMIT))


def tradeoff_sweep(kind, sweep: tuple[str, list] | bool | None) -> tuple[str, list] | None:
    """The report's trade-off sweep, (key, values): ``sweep`` itself, the kind's
    ``tradeoff_sweep`` for None (when it has one), none for False."""
    if sweep is False or (sweep is None and kind.tradeoff_sweep is None):
        return None
    if sweep is None or sweep is True:
        key, start, stop, step = kind.tradeoff_sweep
        return key, engine.sweep_values(start, stop, step)
    key, values = sweep
    return key, list(values)


def sweep_checks(kind, checks: Sequence[str] | None) -> list[str]:
    """The checks at each point of the trade-off sweep: ``checks`` when given, else every
    check of the kind but the probes (``PROBES``)."""
    if checks is not None:
        return list(checks)
    return [name for name in kind.check_names() if name not in PROBES]


def _reference(kind) -> list[Block]:
    """The paper the kind implements, to cite (``Kind.reference``)."""
    if not kind.reference:
        return []
    return [Heading("Reference"), Notes(kind.reference)]


def _methods(compared, kind, limit: float) -> list[Block]:
    header, body, notes = comparison(compared, kind.exact, kind.sense)
    return [Heading("Methods side by side"),
            Table(header, body, note="; ".join(
                [f"ratio: objective against the exact method's ({kind.sense}imise; 1 = as "
                 "good, above 1 worse); gap and bound: the exact solver's",
                 f"a method that takes a time limit had {limit:g} s (--time-limit)", *notes]),
                  ident="comparison")]


def _verdicts(results: list[tuple[str, Result]]) -> list[Block]:
    """The methods × checks matrix; each cell's detail and witness open on expand."""
    checks = verdict_columns(r for _, r in results)
    if not checks:
        return []
    body = []
    for method, r in results:
        row: list[Any] = [method]
        for column in checks:
            found = [f for f in r.validation if check_column(f.check) == column]
            if not found:
                row.append("")
                continue
            row.append(verdict_cell(found[0]))
        body.append(row)
    findings = [f for _, r in results for f in r.validation]
    header = ["method", *check_heads(checks)]
    return [Heading("Verdicts"),
            Text("Each check computed from its definition on each method's allocation; open a "
                 "mark for its detail and witness."),
            Table(header, body, note=" · ".join(filter(None, [legend(findings),
                                                               abbreviations(header)])),
                  ident="verdicts")]


def _metrics(results: list[tuple[str, Result]]) -> list[Block]:
    names: dict[str, None] = {}
    values = []
    for _, r in results:
        flat = dict(_dotted(r.metrics))
        values.append(flat)
        names.update(dict.fromkeys(flat))
    if not names:
        return []
    body = [[n, *(fmt(v.get(n), 40) if n in v else "" for v in values)] for n in names]
    return [Heading("Metrics"), Table(["metric", *(m for m, _ in results)], body,
                                      ident="metrics")]


def _spec_figures(spec, kind, shown: Result | None, methods: list[str], title: str,
                  swept: tuple[str, list] | None, checks: list[str], limit: float,
                  progress: Steps) -> list[Block]:
    out: list[Block] = []
    if kind.plot is not None and shown is not None:
        out.append(_figure("result", f"{shown.method}'s result",
                           lambda path: kind.plot(spec.problem, shown if shown.name else
                                                  _titled(shown, title), path)))
    simulation = kind.simulation
    if (simulation is not None and simulation.plot is not None and shown is not None
            and "simulation" in shown.metrics):      # the spec asked for its simulation
        out.append(_figure("simulation", f"{shown.method}'s policy, simulated",
                           lambda path: simulation.plot(
                               spec.problem, shown.allocation, shown.metrics, title, path)))
    if swept is not None and methods:
        out.append(_tradeoff_figure(spec, kind, methods, title, swept, checks, limit,
                                    progress))
    else:
        progress.starting("figures")
    return out


def _titled(result: Result, title: str) -> Result:
    return dataclasses.replace(result, name=title)


def _tradeoff_figure(spec, kind, methods: list[str], title: str, sweep: tuple[str, list],
                     checks: list[str], limit: float, progress: Steps) -> Block:
    """The trade-off: the spec solved along ``sweep`` (key, values) by every method that
    applies (``limit`` seconds each), each point checked by ``checks``, as ``fairalloc sweep
    --plot`` draws it."""
    key, values = sweep
    skipped = [name for name in kind.check_names() if name not in checks]
    caption = f"the trade-off along {key}" + (
        f" (not checked at each point: {', '.join(skipped)})" if skipped else "")
    try:
        build(set_path(spec.raw, key, values[0]), spec.source)
    except SpecError as exc:
        progress.starting("figures")
        return Text(f"{caption}: not drawn ({exc.violations[0]})", "note")
    data = spec_study(spec, f"the trade-off along {key}", {key: values}, methods,
                      list(kind.sweep_metrics), checks, keep_results=False,
                      edits=solver_edits(time_limit=limit))

    def row_step(row: dict) -> None:
        nonlocal progress
        progress = progress.finished(f"sweep of {key}: {row['method']}")

    with Store(None) as store:      # in this process: the caller's solver settings hold
        swept = run_sweep(spec, data, store, workers=1, on_row=row_step)
    progress.starting("figures")
    rows, names, columns = swept.rows, swept.metric_names, swept.check_columns
    return _figure(f"sweep-{key}", caption,
                   lambda path: plots.sweep(rows, key, names, columns, path, title, kind))


# --- a study store ---------------------------------------------------------------------------

def store_report(path: str, study: str | None = None) -> Document:
    """The report of a study in a DuckDB store: the study, its summary and its plots."""
    with Store(path, read_only=True) as store:
        record = store.study(study)
        rows = store.rows(record["study"])
        if record["replay"]:
            jobs = store.replay_rows(record["study"], "replay_jobs")
            over = store.replay_rows(record["study"], "replay_utilization")
    if record["replay"]:
        return _replay_study_report(path, record, rows, jobs, over)
    found = study_summary(record, rows)
    by, labels, title = found.by, found.labels, found.title
    header, body = summary_cells(found.records, by, ["ratio"], None)
    doc = Document(record["study"], f"a study of {record['kind']} — {len(rows['method'])} rows "
                   f"in {path} — fairalloc {__version__}")
    doc.blocks += [
        Heading("Summary"),
        Table(header, body, note="; ".join(filter(None, [
            f"ratio: {labels['ratio']}", "95% CI: bootstrap interval of the mean; rows that "
            "did not solve (or whose reference is unproven) are counted apart", TIME_NOTE,
            abbreviations(header)])), ident="summary"),
        Heading("Figures"),
        _figure("study", title, lambda p: study_plots.study(rows, by, ["ratio"], labels, title,
                                                            p, [*record["grid"]])),
        Heading("The study"), Code(json.dumps(record["spec"], indent=2)),
        *_reference(KINDS[record["kind"]]),
    ]
    return doc


REPLAY_REPORTED = ["metric.average_jct_s", "metric.p99_jct_s", "metric.makespan_s",
                   "metric.worst_rho"]


def _replay_study_report(path: str, record: dict, rows: dict, jobs: dict,
                         over: dict) -> Document:
    """The report of a replay study: per grid point and policy the run's measures (average
    and 99th percentile JCT, makespan, worst rho) with the checks' verdicts over the runs,
    the replay figure (JCT against the rate, CDFs, utilisation, checks), the study and its
    replay document."""
    grid = [*record["grid"]]
    by = default_by(grid, replay=True)
    values = [v for v in REPLAY_REPORTED if v in rows]
    labels = value_labels(record["reference"], replay=True)
    records = summarise(rows, by, values, methods=list(dict.fromkeys(rows["method"])))
    title = study_title(record["study"], record["kind"], record["reference"], replay=True)
    header, body = summary_cells(records, by, values, None, units=value_units(replay=True))
    errors = [[str(m), str(e)] for m, s, e in zip(rows["method"], rows["status"],
                                                  rows.get("error", rows["status"]))
              if s == "error"]
    with Store(path, read_only=True) as store:
        documents = store.spec_files(record["study"], written=True)
    doc = Document(record["study"], f"a study of {record['kind']} replays — "
                   f"{len(rows['method'])} runs, {len(jobs.get('job', ()))} jobs in {path} — "
                   f"fairalloc {__version__}")
    doc.blocks += [
        Heading("Summary"),
        Table(header, body, note="; ".join(filter(None, [
            "; ".join(f"{v.removeprefix('metric.')}: {labels.get(v, v)}" for v in values),
            "95% CI: bootstrap interval of the mean over the runs of a group; a check's "
            "verdict over a run is fails when an allocation judged failed, holds when every "
            "one held", abbreviations(header)])), ident="summary"),
        *([Table(["policy", "error (simulated time: message)"], errors,
                 caption="Runs that failed")] if errors else []),
        Heading("Figures"),
        _figure("replays", title,
                lambda p: study_plots.replay_study(rows, jobs, over, grid, title, p)),
        Heading("The study"), Code(json.dumps(record["spec"], indent=2)),
        *[block for file, data in documents
          for block in (Heading(f"The replay document {file}", 3),
                        Code(json.dumps(data, indent=2)))],
        *_reference(KINDS[record["kind"]]),
    ]
    return doc


# --- a replay --------------------------------------------------------------------------------

def replay_report(run, document: dict) -> Document:
    """The report of one replay (a ``ReplayRun``): its measures and the checks' verdicts over
    the run (as ``fairalloc replay`` prints them), its figure (JCT CDF, utilisation over time)
    and its replay document."""
    s = run.settings
    played = f"{s['policy']} ({s['mechanism']}), {s['trace']}"
    doc = Document(run.name, f"one replay of {run.kind}: {played} — fairalloc {__version__}")
    doc.blocks += [
        Heading("Summary"),
        Table(["measure", "value"], [list(row) for row in run.rows()],
              note="JCT: job completion time, arrival to finish; rho: JCT over the JCT under "
                   "the isolated share; a check's counts are over the allocations judged",
              ident="summary"),
        Heading("Figures"),
        _figure("replay", f"replay {run.name}: {played}",
                lambda p: plots.replay_run(run, p)),
        Heading("The replay document"), Code(json.dumps(document, indent=2)),
        *_reference(KINDS[run.kind]),
    ]
    return doc


# --- writers ---------------------------------------------------------------------------------

CSS = """
body { font: 15px/1.45 system-ui, -apple-system, "Segoe UI", sans-serif; color: #1d1d1f;
       max-width: 1100px; margin: 2em auto; padding: 0 1em; }
h1 { font-size: 1.7em; margin-bottom: .1em; } .subtitle { color: #555; margin-top: 0; }
h2 { border-bottom: 1px solid #ddd; padding-bottom: .2em; margin-top: 1.6em; }
table { border-collapse: collapse; margin: .6em 0; font-size: .92em; }
caption { text-align: left; font-weight: 600; padding-bottom: .3em; }
th, td { border-bottom: 1px solid #e3e3e3; padding: .25em .7em; text-align: left;
         vertical-align: top; }
th { background: #f5f5f7; } td.num { text-align: right; font-variant-numeric: tabular-nums; }
td.verdict { white-space: nowrap; } .holds { color: #17803d; } .fails { color: #c0262d; }
.unrefuted { color: #b26b00; } .unchecked { color: #777; }
details summary { cursor: pointer; } .detail { white-space: pre-wrap; max-width: 40em;
  font-size: .9em; color: #333; background: #fafafa; padding: .4em; }
pre { background: #f6f8fa; padding: .8em; overflow: auto; font-size: .85em; max-height: 30em; }
code { background: #f2f2f2; padding: 0 .2em; } pre code { background: none; padding: 0; }
.note { color: #555; font-size: .9em; }
figure { margin: 1em 0; } figure svg { max-width: 100%; height: auto; }
figcaption { color: #555; font-size: .9em; }
"""


def inline_markdown_html(text: str) -> str:
    """The inline Markdown of the package notes as HTML: `code`, **bold**, *italic*.

    >>> inline_markdown_html("a **b** *c* `d<e` x")
    'a <strong>b</strong> <em>c</em> <code>d&lt;e</code> x'
    """
    out, last = [], 0
    pattern = re.compile(r"`([^`]+)`|\*\*(.+?)\*\*|\*(.+?)\*")
    for m in pattern.finditer(text):
        out.append(escape_html(text[last:m.start()]))
        if m.group(1) is not None:
            out.append(f"<code>{escape_html(m.group(1))}</code>")
        elif m.group(2) is not None:
            out.append(f"<strong>{inline_markdown_html(m.group(2))}</strong>")
        else:
            out.append(f"<em>{inline_markdown_html(m.group(3))}</em>")
        last = m.end()
    out.append(escape_html(text[last:]))
    return "".join(out)


def notes_html(markdown: str) -> str:
    """The package notes (headings, paragraphs, bullet lists with indented continuation
    lines) as HTML."""
    out, items, para = [], [], []

    def flush() -> None:
        if para:
            out.append(f"<p>{inline_markdown_html(' '.join(para))}</p>")
            para.clear()
        if items:
            out.append("<ul>" + "".join(f"<li>{inline_markdown_html(' '.join(i))}</li>"
                                        for i in items) + "</ul>")
            items.clear()

    for line in markdown.splitlines():
        if line.startswith("#"):
            flush()
            out.append(f"<h3>{inline_markdown_html(line.lstrip('#').strip())}</h3>")
        elif line.startswith("- "):
            if para:
                flush()
            items.append([line[2:].strip()])
        elif line.startswith("  ") and items:
            items[-1].append(line.strip())
        elif not line.strip():
            flush()
        else:
            if items:
                flush()
            para.append(line.strip())
    flush()
    return "\n".join(out)


def to_html(doc: Document) -> str:
    """The document as one self-contained HTML file (no scripts, no external resources)."""
    parts = ["<!DOCTYPE html>", '<html lang="en"><head><meta charset="utf-8">',
             '<meta name="viewport" content="width=device-width, initial-scale=1">',
             f"<title>{escape_html(doc.title)}</title><style>{CSS}</style></head><body>",
             f"<h1>{escape_html(doc.title)}</h1>",
             f'<p class="subtitle">{escape_html(doc.subtitle)}</p>']
    for block in doc.blocks:
        if isinstance(block, Heading):
            parts.append(f"<h{block.level}>{escape_html(block.text)}</h{block.level}>")
        elif isinstance(block, Text):
            css = f' class="{block.css}"' if block.css else ""
            parts.append(f"<p{css}>{escape_html(block.text)}</p>")
        elif isinstance(block, Table):
            parts.append(html_table(block.header, block.rows, block.caption, block.ident))
            if block.note:
                parts.append(f'<p class="note">{escape_html(block.note)}</p>')
        elif isinstance(block, Code):
            parts.append(f"<pre><code>{escape_html(block.text)}</code></pre>")
        elif isinstance(block, Figure):
            parts.append(f'<figure id="figure-{escape_html(block.name)}">{block.svg}'
                         f"<figcaption>{escape_html(block.caption)}</figcaption></figure>")
        else:
            parts.append(notes_html(block.markdown))
    parts.append("</body></html>")
    return "\n".join(parts) + "\n"


def to_markdown(doc: Document, figures: str) -> tuple[str, dict[str, str]]:
    """The document as Markdown with its figures as files in the folder ``figures`` (a path
    relative to the report): (text, {file name: SVG text})."""
    parts = [f"# {escape_markdown(doc.title)}", "", f"*{escape_markdown(doc.subtitle)}*", ""]
    files: dict[str, str] = {}
    for block in doc.blocks:
        if isinstance(block, Heading):
            parts += ["#" * block.level + " " + escape_markdown(block.text), ""]
        elif isinstance(block, Text):
            parts += [escape_markdown(block.text), ""]
        elif isinstance(block, Table):
            parts += _markdown_table(block)
        elif isinstance(block, Code):
            parts += ["```json", block.text, "```", ""]
        elif isinstance(block, Figure):
            name = f"{block.name}.svg"
            files[name] = block.svg
            parts += [f"![{escape_markdown(block.caption)}]({figures}/{name})", ""]
        else:
            parts += [block.markdown, ""]
    return "\n".join(parts).rstrip() + "\n", files


def _markdown_table(block: Table) -> list[str]:
    """A table in Markdown; a cell's detail (a witness) listed under the table."""
    texts = [[c.text if isinstance(c, Cell) else c for c in r] for r in block.rows]
    out = ([f"**{escape_markdown(block.caption)}**", ""] if block.caption else [])
    out += [*markdown_table(block.header, texts), ""]
    details = [(r[0], block.header[i], c.detail) for r in block.rows
               for i, c in enumerate(r) if isinstance(c, Cell) and c.detail
               and not c.css.endswith("holds")]
    if details:
        out += [f"- {escape_markdown(row)} / {escape_markdown(column)}: "
                f"{escape_markdown(detail)}" for row, column, detail in details] + [""]
    if block.note:
        out += [escape_markdown(block.note), ""]
    return out


def write(doc: Document, path: str | Path, fmt_name: str) -> list[Path]:
    """Write the document as ``html`` or ``markdown`` (figures in ``<stem>_files/`` beside it);
    returns the files written."""
    path = Path(path)
    if fmt_name == "html":
        write_text(path, to_html(doc))
        return [path]
    folder = path.with_name(f"{path.stem}_files")
    text, files = to_markdown(doc, folder.name)
    written = [path]
    if files:
        make_folder(folder)
        for name, svg in files.items():
            write_text(folder / name, svg)
            written.append(folder / name)
    write_text(path, text)
    return written
