"""The ``fairalloc`` command line, a thin layer over :mod:`fairalloc.api`.

Exit codes: 0 success (a failing axiom is a finding, not an error), 1 solver trouble
(infeasible, time limit, solver error) or an output that could not be written (a full disk),
2 a bad spec, allocation, input file or command line (an output over one of the inputs), 3 a
check named by ``--fail-on`` fails (when there is no solver trouble), 130 interrupted.
"""

from __future__ import annotations

import argparse
import contextlib
import dataclasses
import fnmatch
import json
import math
import os
import sys
from collections.abc import Iterator

from rich.console import Console
from rich.progress import BarColumn, MofNCompleteColumn, TextColumn, TimeRemainingColumn
from rich.progress import Progress as Bar

from fairalloc import api, plots
from fairalloc import arguments as arg
from fairalloc.arguments import UsageError
from fairalloc.catalog import EXAMPLES, copy_examples, examples
from fairalloc.errors import (
    ArgumentError,
    OutputError,
    SolverError,
    SpecError,
    StoreError,
)
from fairalloc.files import same_file, write_text
from fairalloc.registry import KINDS
from fairalloc.render import (
    LINEWIDTH,
    abbreviations,
    check_heads,
    comparison,
    console_width,
    csv_table,
    exact_text,
    fmt,
    legend,
    print_table,
    render_csv,
    render_html,
    render_latex,
    render_markdown,
    render_table,
    rich_mark,
    table_text,
    verdict_columns,
)
from fairalloc.result import FAILED, MARKS, Result, check_column
from fairalloc.solvers import highs
from fairalloc.spec import schema, set_path, template
from fairalloc.studies.run import parse_cluster
from fairalloc.studies.summary import (
    TIME_NOTE,
    ratio_label,
    study_title,
    summarise,
    summary_cells,
)
from fairalloc.studies.sweep import spec_title, stem
from fairalloc.version import __version__

FORMATS = ("table", "json", "markdown", "csv", "latex", "html")
SUMMARY_FORMATS = FORMATS
FLAGS = {"mapping": "--map", "sets": "--set", "kind": "KIND"}   # API argument -> its flag


def _console() -> Console:
    """Tables as wide as the terminal, or COLUMNS; when piped without it, a generous width."""
    return _Console(highlight=False, width=console_width())


class _Console(Console):
    def on_broken_pipe(self) -> None:
        """A reader that left (``| head``) is not a failure: ``main`` exits 0 quietly (rich's
        default exits 1)."""
        self.quiet = True
        raise BrokenPipeError


def _emit(result: Result, fmt_name: str, rows: int, latex_width: str = LINEWIDTH) -> None:
    """A result on stdout: rich tables, JSON (the contract), Markdown, CSV (the allocation,
    every id), LaTeX (no wider than ``latex_width``) or HTML (tables of allocation, metrics
    and checks)."""
    if fmt_name == "table":
        render_table(result, _console(), rows)
        return
    text = {"json": lambda: result.to_json() + "\n", "csv": lambda: render_csv(result),
            "markdown": lambda: render_markdown(result, rows),
            "latex": lambda: render_latex(result, rows, latex_width),
            "html": lambda: render_html(result, rows) + "\n"}[fmt_name]()
    sys.stdout.write(text)


def _exit_status(results: list[Result], fail_on: list[str] | None = None) -> int:
    """1 for solver trouble, else 3 when a check named in ``fail_on`` fails, else 0."""
    if any(r.status in FAILED for r in results):
        return 1
    return _gate([f.check for r in results for f in r.validation if f.verdict == "fails"],
                 fail_on)


def _gate(failed: list[str], fail_on: list[str] | None) -> int:
    """3, with the reason on stderr, when a failed check is one ``--fail-on`` names (by its
    name as results show it; ``bound`` for every method's own bound), else 0."""
    hit = sorted({c for c in failed for name in fail_on or ()
                  if name in (c, check_column(c))})
    if hit:
        print(f"fairalloc: --fail-on: {', '.join(hit)} failed", file=sys.stderr)
        return 3
    return 0


def _check_fail_on(kind_name: str, fail_on: list[str] | None) -> None:
    """A usage error for a ``--fail-on`` name the kind has no check of."""
    kind = KINDS[kind_name]
    unknown = kind.unknown_checks(fail_on or ())
    if unknown:
        raise UsageError("--fail-on", f"no check {', '.join(map(repr, unknown))} in "
                                      f"{kind_name} (checks: {', '.join(kind.check_names())})")


def _solver_settings(args) -> dict:
    """``api.solve``'s solver keywords from the command line (the log: ``main``'s -v)."""
    return {"time_limit": args.time_limit, "mip_gap": args.mip_gap, "threads": args.threads}


def _refuse_overwrite(writes: dict[str, str | None], reads: dict[str, str | None]) -> None:
    """A usage error when a file the command writes (option -> path) is one of the files it
    reads (its name -> path), or another file it writes, also through a link: the command
    would destroy its input and exit 0."""
    outputs = [(option, path) for option, path in writes.items() if path]
    others = [(name, path) for name, path in reads.items() if path and path != "-"]
    for i, (option, path) in enumerate(outputs):
        for name, other in others + outputs[:i]:
            if same_file(path, other):
                raise UsageError(option, f"{path} is the command's {name} too: writing it "
                                         f"would destroy it; name another file")


def _note(args, text: str) -> None:
    """What a command did beside its output (a file written), on stderr unless -q."""
    if not args.quiet:
        print(text, file=sys.stderr)


def cmd_solve(args) -> int:
    spec = api.load_spec(args.spec)
    draw = KINDS[spec.kind].plot
    if args.plot and draw is None:
        with_plots = ", ".join(name for name in KINDS if KINDS[name].plot is not None)
        raise UsageError("--plot", f"{spec.kind} results have no plot (kinds with one: "
                         f"{with_plots}; sweep --plot draws any kind's sweep)")
    _check_fail_on(spec.kind, args.fail_on)
    if args.fail_on and args.no_validate:
        raise UsageError("--fail-on", "needs the checks: drop --no-validate")
    result = api.solve(spec, args.method, validate=not args.no_validate, **_solver_settings(args))
    _emit(result, args.format, args.rows, args.latex_width)
    if args.plot:       # an untitled spec's picture is titled by its file name
        draw(result if result.name else dataclasses.replace(result, name=spec_title(spec)),
             args.plot)
        _note(args, f"plot written to {args.plot}")
    if result.status in FAILED:
        print(f"fairalloc: status {result.status}: {_failure_detail(result.solver)}".rstrip(": "),
              file=sys.stderr)
    return _exit_status([result], args.fail_on)


def _failure_detail(solver: dict) -> str:
    """What a failed run leaves to say: the solver's message, else its gap and bound (a
    time-limited exact run still brackets the optimum)."""
    numbers = [f"{key} {solver[key]:.6g}" for key in ("gap", "bound")
               if isinstance(solver.get(key), (int, float))]
    return solver.get("message") or ", ".join(numbers)


def cmd_validate(args) -> int:
    if args.spec == "-" and args.allocation == "-":
        raise UsageError("--allocation", "standard input can be read only once: give the spec "
                         "or the allocation as a file")
    result = api.validate(args.spec, args.allocation, args.method)
    _check_fail_on(result.problem, args.fail_on)
    _emit(result, args.format, args.rows, args.latex_width)
    return _exit_status([result], args.fail_on)


def _check_mark(result: Result, column: str, style: str = "rich") -> str:
    found = [f for f in result.validation if check_column(f.check) == column]
    if not found:
        return ""
    return _verdict_cell(found[0].check, found[0].verdict, style)


def _verdict_cell(check: str, verdict: str, style: str) -> str:
    """A verdict as a rich mark, a plain ``mark`` or its ``word`` (CSV), with the theorem a
    bound check names."""
    mark = {"rich": rich_mark, "mark": MARKS.get, "word": str}[style](verdict)
    named = check.partition(":")[2]
    return f"{mark} {named}" if named else mark


def cmd_compare(args) -> int:
    methods = args.methods
    spec = api.load_spec(args.spec)
    _check_fail_on(spec.kind, args.fail_on)
    with _steps(args, f"compare {spec_title(spec)}") as on_step:
        rows = api.compare(spec, methods, **_checks(args), **_solver_settings(args),
                           on_step=on_step)
    results = [r for _, r in rows if isinstance(r, Result)]
    if args.format == "json":
        print(json.dumps([r.to_dict() if isinstance(r, Result) else {"method": m, "error": r}
                          for m, r in rows], indent=2, allow_nan=False))
        return _exit_status(results, args.fail_on)
    kind = KINDS[spec.kind]
    checks = verdict_columns(results)
    show = exact_text if args.format == "csv" else fmt
    header, body, notes = comparison(rows, kind.exact, kind.sense, show)
    header += check_heads(checks)
    style = {"table": "rich", "csv": "word"}.get(args.format, "mark")
    for row, (_, r) in zip(body, rows):
        row += [_check_mark(r, c, style) if isinstance(r, Result) else "" for c in checks]
    title = f"{spec_title(spec)} — every {spec.kind} method"
    findings = [f for r in results for f in r.validation]
    marks = " · ".join(filter(None, [legend(findings) if findings else "",
                                     abbreviations(header)]))
    note = "\n".join(filter(None, [marks, *notes]))
    _print_rows(title, header, body, args.format, note, args.latex_width)
    return _exit_status(results, args.fail_on)


def _parse_set(text: str, flag: str = "--set") -> tuple[str, list]:
    """``KEY=START:STOP:STEP`` (STOP included) or ``KEY=V1,V2,...`` (each a JSON value, or
    text): the key and its values (a mistake is ``flag``'s)."""
    key, sep, rng = text.partition("=")
    if not sep or not key or not rng:
        raise UsageError(flag, f"{text!r}: expected KEY=START:STOP:STEP or KEY=V1,V2,...")
    if ":" not in rng:
        return key, [_json_or_text(v, flag) for v in rng.split(",")]
    parts = rng.split(":")
    if len(parts) != 3:
        raise UsageError(flag, f"{text!r}: expected KEY=START:STOP:STEP or KEY=V1,V2,...")
    try:
        nums = [int(p) if p.strip().lstrip("-").isdigit() else float(p) for p in parts]
        return key, api.sweep_values(*nums)
    except ValueError as exc:
        raise UsageError(flag, f"{text!r}: {exc}") from None


def _json_or_text(text: str, flag: str = "--set"):
    """A value as JSON reads it (0.5, true, "x", [1, 2]), else the text itself (kepler)."""
    try:
        value = json.loads(text)
    except ValueError:
        return text.strip()
    if isinstance(value, float) and not math.isfinite(value):
        raise UsageError(flag, f"{text!r}: values must be finite")
    return value


def _selected(metrics: dict, patterns: list[str]) -> list[str]:
    out = []
    for pattern in patterns:
        out += [k for k in metrics if fnmatch.fnmatchcase(k, pattern) and k not in out]
    return out


def _verdict_cells(rows: dict, i: int, checks: list[str], style: str = "rich") -> list[str]:
    """Row i's verdict per check column (``bound:*`` checks share one, named): a rich mark,
    a plain ``mark`` or the ``word`` (CSV)."""
    out = []
    for column in checks:
        found = [(name.removeprefix("check."), rows[name][i]) for name in rows
                 if name.startswith("check.") and rows[name][i] is not None
                 and check_column(name.removeprefix("check.")) == column]
        if not found:
            out.append("")
            continue
        out.append(_verdict_cell(*found[0], style))
    return out


def cmd_sweep(args) -> int:
    """Re-solve one spec with keys varied: a study with the spec as its base instance, the
    keys as its grid (several: every combination) and one or more methods, shown row by row."""
    sets = dict(_parse_set(text) for text in args.set)
    spec = api.load_spec(args.spec)
    for key, values in sets.items():
        try:
            set_path(spec.raw, key, values[0])
        except SpecError as exc:
            raise UsageError("--set", f"{key!r}: {exc.violations[0]}") from None
    if args.plot and len(sets) > 1:
        raise UsageError("--plot", "a sweep plot has one axis: sweep one key (or run the "
                                   "grid as a study and use study summary --plot)")
    if args.method and args.methods:
        raise UsageError("--methods", "give --method or --methods, not both")
    _check_fail_on(spec.kind, args.fail_on)
    _check_pool(args)
    with _bar(args, spec_title(spec)) as callbacks:
        swept = api.sweep(spec, sets, method=args.method, methods=args.methods,
                          metrics=args.metrics, store=args.store, resume=args.resume,
                          workers=args.workers, cluster=args.cluster,
                          log=args.verbose or None, **callbacks, **_solver_settings(args),
                          **_checks(args))
    code = _outcome(swept.study.name, swept.progress, args.store, args)
    if code == 130:
        return code
    rows, keys, names, checks = swept.rows, swept.keys, swept.metric_names, swept.check_columns
    several = len(swept.study.methods) > 1
    verdict_columns = [c for c in rows if c.startswith("check.")]
    if args.format == "json":
        print(json.dumps(swept.records(), indent=2, allow_nan=False))
    else:
        style = {"table": "rich", "csv": "word"}.get(args.format, "mark")
        show = exact_text if args.format == "csv" else fmt    # CSV keeps every digit
        body = [[*map(show, point), *([rows["method"][i]] if several else []),
                 rows["status"][i], show(_number(rows["objective"][i])),
                 *[show(_number(rows[f"metric.{n}"][i])) for n in names],
                 *_verdict_cells(rows, i, checks, style)]
                for i, point in enumerate(swept.points)]
        verdicts = {v for c in verdict_columns for v in rows[c]} - {None}
        header = [*keys, *(["method"] if several else []), "status", "objective", *names,
                  *check_heads(checks)]
        _print_rows(f"{spec_title(spec)}: sweep of {' × '.join(keys)}", header, body,
                    args.format, " · ".join(filter(None, [legend(verdicts) if verdicts else "",
                                                         abbreviations(header)])),
                    args.latex_width)
    if args.plot:
        plots.sweep(rows, keys[0], names, checks, args.plot, spec_title(spec),
                    KINDS[spec.kind])
        _note(args, f"plot written to {args.plot}")
    if code or any(status in FAILED or status == "error" for status in rows["status"]):
        return code or 1
    return _gate([c.removeprefix("check.") for c in verdict_columns
                  if "fails" in set(rows[c])], args.fail_on)


def _number(value):
    """A stored number for ``fmt``: NaN (null) as None."""
    return None if value is None or value != value else value


def _print_rows(title: str, header: list[str], body: list[list[str]], fmt_name: str,
                note: str = "", latex_width: str = LINEWIDTH) -> None:
    """Rows of text as a rich table, or Markdown, CSV, LaTeX (no wider than ``latex_width``)
    or HTML, with a note below."""
    if fmt_name != "table":
        sys.stdout.write(table_text(title, header, body, fmt_name, note, latex_width))
        return
    print_table(_console(), header, body, title, note)


class DefaultsHelp(argparse.HelpFormatter):
    """``--help`` that shows an option's default (argparse's ArgumentDefaultsHelpFormatter
    also shows the defaults that say nothing: None, False, [])."""

    def _get_help_string(self, action: argparse.Action) -> str | None:
        text = action.help
        if text == argparse.SUPPRESS or "%(default)" in (text or "") or \
                action.default in (None, False, [], argparse.SUPPRESS):
            return text
        return f"{text} (default: %(default)s)" if text else "default: %(default)s"


def _experiment_parser(kind_name: str, experiment) -> argparse.ArgumentParser:
    """``fairalloc experiment KIND``'s own flags: the experiment's parameters, then the ones
    every experiment has (those of ``study run`` among them)."""
    sp = argparse.ArgumentParser(prog=f"fairalloc experiment {kind_name}",
                                 description=experiment.summary, parents=[common_flags()],
                                 formatter_class=DefaultsHelp)
    for p in experiment.parameters:
        sp.add_argument(f"--{p.name.replace('_', '-')}", dest=p.name, type=p.type,
                        default=p.default, choices=p.choices, help=p.help)
    sp.add_argument("--seed", type=arg.whole(0, 2**63 - 1), default=1,
                    help="the study's seed (every instance's seed is drawn from it)")
    sp.add_argument("--methods", type=arg.names,
                    help="comma-separated subset (default: the preset's)")
    sp.add_argument("--plot", metavar="FILE.png", type=arg.figure,
                    help="box plots of the values per method")
    sp.add_argument("--format", choices=SUMMARY_FORMATS, default="table",
                    help="what to print on standard output")
    latex_flag(sp)
    _execution_flags(sp, store_help="also keep the rows in this DuckDB file (default: in "
                                    "memory only)")
    return sp


def _execution_flags(sp: argparse.ArgumentParser, store_help: str) -> None:
    sp.add_argument("--store", metavar="FILE.duckdb", type=arg.writable, help=store_help)
    sp.add_argument("--cluster", metavar="local:N|tcp://HOST:PORT", type=_cluster,
                    help="run on Dask: a LocalCluster of N worker processes, or a running "
                         "scheduler (dask scheduler; dask worker tcp://HOST:PORT)")
    sp.add_argument("--workers", type=arg.whole(1, 1024),
                    help="local processes without --cluster (default: one per core; "
                         "1: in this process)")
    sp.add_argument("--resume", action="store_true",
                    help="continue a study already in the store: run only the missing rows")
    solver_flags(sp, "every method that takes a limit (overrides the study's)")


def latex_flag(sp: argparse.ArgumentParser) -> None:
    """--latex-width, on the commands that write --format latex."""
    sp.add_argument("--latex-width", dest="latex_width", metavar="LENGTH", default=LINEWIDTH,
                    type=arg.latex_length,
                    help="with --format latex: the width each table fits, a LaTeX length "
                         "(\\textwidth, 0.8\\linewidth, 12cm); free text wraps, a wider "
                         "table is scaled down to it (default: %(default)s)")


def solver_flags(sp: argparse.ArgumentParser, limit_help: str) -> None:
    """--time-limit, --mip-gap and --threads: api.solve's solver keywords."""
    sp.add_argument("--time-limit", dest="time_limit", metavar="S", type=arg.positive,
                    help=f"seconds for {limit_help}")
    sp.add_argument("--mip-gap", dest="mip_gap", metavar="GAP", type=arg.gap,
                    help="relative gap at which exact MILPs may stop (above a method's own "
                         "gap the result is feasible, not optimal)")
    sp.add_argument("--threads", type=arg.whole(1, 1024), help="HiGHS threads per solve")


def check_flags(sp: argparse.ArgumentParser) -> None:
    """--no-validate and --checks: the checks each method's allocation gets."""
    sp.add_argument("--no-validate", dest="no_validate", action="store_true",
                    help="skip the checks")
    sp.add_argument("--checks", metavar="CHECK[,CHECK]", type=arg.names,
                    help="only these checks (names as fairalloc list shows them; default: "
                         "every check of the kind)")


def common_flags() -> argparse.ArgumentParser:
    """-v and -q, which every command takes."""
    common = argparse.ArgumentParser(add_help=False)
    common.add_argument("-v", "--verbose", action="store_true",
                        help="stream the solver log (HiGHS) to standard error")
    common.add_argument("-q", "--quiet", action="store_true",
                        help="no progress bars or notes on standard error")
    return common


def _cluster(text: str):
    try:
        return parse_cluster(text)
    except ValueError as exc:
        raise argparse.ArgumentTypeError(str(exc)) from None


def _check_pool(opts) -> None:
    """A usage error for --workers with --cluster."""
    if opts.cluster is not None and opts.workers is not None:
        raise UsageError("--workers", "--workers sizes the local pool; with --cluster the "
                                      "cluster's workers run the tasks")


def _progress_bar(opts, field: str) -> Bar:
    """A progress bar on stderr showing ``field``, left out with -q and when stderr is not a
    terminal (rich would still write a blank line into a log)."""
    console = Console(stderr=True)
    columns = (TextColumn("{task.description}"), BarColumn(), MofNCompleteColumn(),
               TextColumn(field), TimeRemainingColumn())
    return Bar(*columns, transient=True, console=console,
               disable=opts.quiet or not console.is_terminal)


@contextlib.contextmanager
def _bar(opts, description: str) -> Iterator[dict]:
    """A progress bar on stderr (``_progress_bar``) while a study runs: the run's
    ``on_start`` and ``on_row`` callbacks that move it."""
    with _progress_bar(opts, "{task.fields[errors]} errors") as bar:
        task = bar.add_task(description, total=None, errors=0)
        yield {"on_start": lambda p: bar.update(task, total=p.total, completed=p.skipped),
               "on_row": lambda row: bar.update(task, advance=1,
                                                errors=bar.tasks[0].fields["errors"]
                                                + (row["status"] == "error"))}


@contextlib.contextmanager
def _steps(opts, description: str) -> Iterator:
    """A progress bar on stderr (``_progress_bar``) moved by the API's ``on_step(what,
    done, total)`` callback, which this yields."""
    with _progress_bar(opts, "{task.fields[what]}") as bar:
        task = bar.add_task(description, total=None, what="")
        yield lambda what, done, total: bar.update(task, completed=done, total=total,
                                                   what=what)


def _checks(args) -> dict:
    """The checks a command runs: ``--no-validate`` and ``--checks`` as API keywords."""
    if args.no_validate and args.checks:
        raise UsageError("--checks", "give --checks or --no-validate, not both")
    if args.no_validate and getattr(args, "fail_on", None):
        raise UsageError("--fail-on", "needs the checks: drop --no-validate")
    return {"validate": not args.no_validate, "checks": args.checks}


def _outcome(name: str, progress, path: str | None, opts) -> int:
    """A note of what a study's run did on stderr; the exit code: 130 when interrupted, 1
    when a task failed or was lost, else 0."""
    note = (f"{name}: {progress.stored} rows stored in {path or 'memory'}"
            + (f" ({progress.skipped} were there)" if progress.skipped else "")
            + (f"; {progress.errors} error rows" if progress.errors else "")
            + (f"; {progress.lost} tasks lost by the cluster, not stored (--resume runs them)"
               if progress.lost else ""))
    if progress.interrupted:
        print(f"fairalloc study: interrupted; {note}. Run it again with --resume to continue.",
              file=sys.stderr)
        return 130
    if progress.errors or progress.lost or (path and not opts.quiet):
        print(note, file=sys.stderr)
    return 1 if progress.errors or progress.lost else 0


def cmd_experiment(args) -> int:
    """A kind's preset experiment: its study, run like any, summarised by the paper's values."""
    experiment = api.experiment_of(args.kind)
    try:
        opts = _experiment_parser(args.kind, experiment).parse_args(args.rest)
    except SystemExit as exc:           # --help, or a mistake argparse reported
        return exc.code if isinstance(exc.code, int) else 2
    opts.quiet, opts.verbose = opts.quiet or args.quiet, opts.verbose or args.verbose
    _refuse_overwrite({"--plot": opts.plot, "--store": opts.store}, {})
    parameters = {p.name: getattr(opts, p.name) for p in experiment.parameters}
    _check_pool(opts)
    with _bar(opts, f"{args.kind} experiment") as callbacks:
        run = api.experiment(args.kind, opts.seed, opts.methods, store=opts.store,
                             resume=opts.resume, workers=opts.workers, cluster=opts.cluster,
                             log=opts.verbose or None, **callbacks, **_solver_settings(opts),
                             **parameters)
    code = _outcome(run.study.name, run.progress, opts.store, opts)
    if code == 130:
        return code
    if opts.format == "json":
        print(json.dumps(run.to_dict(), indent=2, allow_nan=False))
    else:
        _print_summary(run.title, run.records, run.by, list(run.values), opts.format,
                       run.values, experiment.baseline, checks=len(run.values) == 1,
                       latex_width=opts.latex_width)
    if opts.plot:
        plots.boxes(run.by_label, run.values, run.title, opts.plot, experiment.baseline,
                    experiment.log)
        _note(opts, f"plot written to {opts.plot}")
    return code


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


def _print_summary(title: str, records: list[dict], by: list[str], values: list[str],
                   fmt_name: str, labels: dict[str, str], baseline: float | None = None,
                   checks: bool = True, latex_width: str = LINEWIDTH) -> None:
    """A summary as a table, JSON, Markdown, CSV, LaTeX (no wider than ``latex_width``) or
    HTML (``checks``: a column per check in the table and Markdown; JSON and CSV always have
    them)."""
    if fmt_name == "json":
        print(json.dumps({"title": title, "by": by, "values": values, "groups": records},
                         indent=2, allow_nan=False))
        return
    if fmt_name == "csv":
        flat = [_flat(r) for r in records]
        names = list(dict.fromkeys(k for row in flat for k in row))
        sys.stdout.write(csv_table(names, ([row.get(n) for n in names] for row in flat)))
        return
    header, body = summary_cells(records, by, values, baseline, checks)
    value_note = "; ".join(f"{v}: {labels.get(v, v)}" for v in values)
    _print_rows(title, header, body, fmt_name,
                "; ".join(filter(None, [value_note, "95% CI: bootstrap interval of the mean; "
                                        "rows that did not solve (or whose reference is "
                                        "unproven) are counted apart", TIME_NOTE,
                                        abbreviations(header)])),
                latex_width)


def cmd_study_run(args) -> int:
    path = args.store or f"{stem(args.study)}.duckdb"
    _refuse_overwrite({"--store": path}, {"STUDY": args.study})
    _check_pool(args)
    with _bar(args, stem(args.study)) as callbacks:
        done = api.study_run(args.study, path, resume=args.resume, workers=args.workers,
                             cluster=args.cluster, log=args.verbose or None, **callbacks,
                             **_solver_settings(args))
    study = done.study
    code = _outcome(study.name, done.progress, path, args)
    if code == 130:
        return code
    by = [k for k, _ in study.grid] + ["method"]
    records = summarise(done.rows, by, ["ratio"], methods=list(study.methods))
    _print_summary(study_title(study.name, study.kind, study.reference), records, by,
                   ["ratio"], "table", {"ratio": ratio_label(study.reference)})
    _note(args, f"fairalloc study summary {path} --by ... | export {path} -o rows.parquet")
    return code


def cmd_study_summary(args) -> int:
    found = api.summary(args.store, args.study, args.by, args.values)
    _print_summary(found.title, found.records, found.by, found.values, args.format,
                   found.labels, latex_width=args.latex_width)
    if args.plot:
        plots.study(found.rows, found.by, found.values, found.labels, found.title, args.plot,
                    [*found.record["grid"]])
        _note(args, f"plot written to {args.plot}")
    return 0


def cmd_study_export(args) -> int:
    name, count = api.export(args.store, args.output, args.study)
    _note(args, f"{count} rows of {name} written to {args.output}")
    return 0


def cmd_study_instance(args) -> int:
    spec, seed = api.instance_spec(args.store, args.id, args.study)
    text = json.dumps(spec, indent=2)
    if args.output:
        write_text(args.output, text + "\n")
        print(f"instance {args.id} (seed {seed}) written to {args.output}",
              file=sys.stderr)
    else:
        print(text)
    return 0


def cmd_simulate(args) -> int:
    """Solve a spec for its policy, then play it and the baselines round by round: a study of
    the spec with its ``simulation`` set (the kind's metrics simulate it), one row per
    mechanism in the table."""
    spec = api.load_spec(args.spec)
    sim = KINDS[spec.kind].simulation
    if args.plot and sim is not None and sim.plot is None:     # said before it runs, not after
        raise UsageError("--plot", f"{spec.kind}'s simulation has no plot")
    _check_pool(args)
    with _bar(args, spec_title(spec)) as callbacks:
        run = api.simulate(spec, args.method, mechanisms=args.mechanisms, rounds=args.rounds,
                           seed=args.seed, store=args.store, resume=args.resume,
                           workers=args.workers, cluster=args.cluster,
                           log=args.verbose or None, **callbacks, **_solver_settings(args))
    code = _outcome(run.sweep.study.name, run.sweep.progress, args.store, args)
    if code == 130:
        return code
    if run.result is None:
        print(f"fairalloc: status {run.status}: {run.error}", file=sys.stderr)
        return 1
    if args.format == "json":
        print(json.dumps(run.to_dict(), indent=2, allow_nan=False))
    else:
        columns = sim.columns(spec.problem)
        _print_rows(run.title, ["mechanism", *[header for header, _ in columns]],
                    [[mechanism, *[cell(row) for _, cell in columns]]
                     for mechanism, row in run.played.items()], args.format,
                    latex_width=args.latex_width)
    if args.plot:
        sim.plot(spec.problem, spec.problem.read_allocation(run.result["allocation"]),
                 run.result["metrics"], run.title, args.plot)
        _note(args, f"plot written to {args.plot}")
    if run.status in FAILED:
        message = run.result["solver"].get("message") or ""
        print(f"fairalloc: status {run.status}: {message}", file=sys.stderr)
    return code or (1 if run.status in FAILED else 0)


def cmd_schema(args) -> int:
    print(json.dumps(schema(args.kind), indent=2))
    return 0


def cmd_new(args) -> int:
    text = template(args.kind)
    if args.output:
        write_text(args.output, text)
        then = "study run" if args.kind == "study" else "solve"
        print(f"wrote {args.output}; edit it, then: fairalloc {then} {args.output}",
              file=sys.stderr)
    else:
        print(text, end="")
    return 0


def _pairs(texts: list[str], flag: str) -> list[tuple[str, str]]:
    """``KEY=VALUE`` arguments as (key, value) pairs."""
    out = []
    for text in texts:
        key, sep, value = text.partition("=")
        if not sep or not key.strip() or not value.strip():
            raise UsageError(flag, f"{text!r}: expected KEY=VALUE")
        out.append((key.strip(), value.strip()))
    return out


def cmd_import(args) -> int:
    """A spec of KIND from a table: a row per entity, columns mapped to the entity's keys, the
    rest of the spec from --base and --set; checked like any spec before it is written."""
    made = api.import_table(args.kind, args.table, mapping=dict(_pairs(args.map, "--map")),
                            sets={path: _json_or_text(value)
                                  for path, value in _pairs(args.set, "--set")},
                            base=args.base, name=args.name, normalize=args.normalize)
    if args.output:
        write_text(args.output, made.text())
    else:
        sys.stdout.write(made.text())
    _note(args, f"{len(made.spec[made.key]):,} {made.key} from {args.table}"
          + (f" written to {args.output}" if args.output else "")
          + (f"; columns not used: {', '.join(made.unused)}" if made.unused else ""))
    return 0


def cmd_report(args) -> int:
    """One document for a spec (every method, verdicts with witnesses, figures, the notes on
    the paper) or a study store (summary and plots): HTML, or Markdown with figure files."""
    if args.sweep and args.no_sweep:
        raise UsageError("--sweep", "give --sweep or --no-sweep, not both")
    sweep = False if args.no_sweep else _parse_set(args.sweep, "--sweep") if args.sweep else None
    with _steps(args, f"report {args.source}") as on_step:
        doc = api.report(args.source, methods=args.methods, study=args.study,
                         time_limit=args.time_limit, mip_gap=args.mip_gap, threads=args.threads,
                         sweep=sweep, on_step=on_step, **_checks(args))
    written = api.write_report(doc, args.output, args.format)
    _note(args, f"report written to {args.output}"
          + (f" (figures in {written[1].parent})" if len(written) > 1 else ""))
    return 0


def cmd_examples(args) -> int:
    """List the example specs shipped in the package, or copy them into a folder."""
    chosen = examples(args.kind)
    if not chosen:
        raise UsageError("KIND", f"no examples of {args.kind!r} (kinds: "
                                 f"{', '.join(sorted({e.kind for e in examples()}))})")
    if args.copy is None:
        _print_rows(f"examples in {EXAMPLES}", ["file", "kind", "name"],
                    [[e.path, e.kind, e.name] for e in chosen], args.format,
                    "fairalloc examples --copy DIR copies them (keeping their folders)")
        return 0
    try:
        written = copy_examples(args.copy, chosen, args.force)
    except FileExistsError as exc:
        raise UsageError("--copy", f"{len(exc.args[0])} file(s) exist already (--force "
                                   f"overwrites them): {', '.join(exc.args[0][:5])}"
                                   + (" ..." if len(exc.args[0]) > 5 else "")) from None
    _note(args, f"{len(written)} examples copied into {args.copy}; try: fairalloc solve "
                f"{written[0]}")
    return 0


def cmd_list(args) -> int:
    rows = []
    for kind in KINDS.values():
        exact = kind.exact_methods()
        methods = ", ".join(
            m + ("*" if m == kind.default else "") + ("†" if m in exact else "")
            for m in kind.methods)
        checks = ", ".join(kind.check_names())
        also = ", ".join(command for command, capability in (
            ("solve --plot", kind.plot), ("experiment", kind.experiment),
            ("simulate", kind.simulation)) if capability is not None)
        rows.append([kind.name, methods, checks, also, kind.summary])
    print_table(_console(), ["kind", "methods (default *, exact †)", "checks", "also", "what"],
                rows)
    return 0


def cmd_completion(args) -> int:
    """A shell completion script (bash; zsh through its bashcompinit) made from this parser:
    commands, each command's flags, the choices of flags and positionals, files otherwise."""
    print(completion_script(parser(), args.shell))
    return 0


def _subcommands(p: argparse.ArgumentParser) -> dict[str, argparse.ArgumentParser]:
    found = [a for a in p._actions if isinstance(a, argparse._SubParsersAction)]
    return dict(found[0].choices) if found else {}


def _flags_and_choices(p: argparse.ArgumentParser) -> tuple[list[str], dict[str, list[str]],
                                                             list[str]]:
    """A parser's flags, the choices of each flag that has some, and its first positional's
    choices (subcommands included)."""
    flags, choices, first = [], {}, []
    for action in p._actions:
        if action.option_strings:
            flags += action.option_strings
            if action.choices:
                for flag in action.option_strings:
                    choices[flag] = [str(c) for c in action.choices]
        elif not first and action.choices and action.help != argparse.SUPPRESS:
            first = [str(c) for c in action.choices]
    return flags, choices, first


def completion_script(p: argparse.ArgumentParser, shell: str) -> str:
    """The completion script for ``shell`` (bash or zsh)."""
    commands = _subcommands(p)
    cases, prev_cases = [], []
    for name, sp in commands.items():
        for sub_name, sub in [("", sp), *_subcommands(sp).items()]:
            flags, choices, first = _flags_and_choices(sub)
            key = f"{name} {sub_name}".strip()
            cases.append(f'    "{key}") flags="{" ".join(flags)}"; first="{" ".join(first)}";;')
            prev_cases += [f'    "{key}|{flag}") words="{" ".join(values)}";;'
                           for flag, values in choices.items()]
    top = " ".join([*commands, "--version", "--help"])
    script = f"""# fairalloc completion ({shell}): eval "$(fairalloc completion {shell})"
_fairalloc() {{
  local cur=${{COMP_WORDS[COMP_CWORD]}} prev=${{COMP_WORDS[COMP_CWORD-1]}}
  local cmd=${{COMP_WORDS[1]}} key flags="" first="" words=""
  if [[ $COMP_CWORD -eq 1 ]]; then COMPREPLY=($(compgen -W "{top}" -- "$cur")); return; fi
  key=$cmd
  case "$cmd ${{COMP_WORDS[2]}}" in
{chr(10).join(f'    "{c}") key="{c}";;' for c in _nested(commands))}
  esac
  case "$key" in
{chr(10).join(cases)}
  esac
  case "$key|$prev" in
{chr(10).join(prev_cases) if prev_cases else '    "") ;;'}
  esac
  if [[ -n $words ]]; then COMPREPLY=($(compgen -W "$words" -- "$cur")); return; fi
  if [[ $cur == -* ]]; then COMPREPLY=($(compgen -W "$flags" -- "$cur")); return; fi
  if [[ -n $first && $COMP_CWORD -eq $(( ${{#key}} > ${{#cmd}} ? 3 : 2 )) ]]; then
    COMPREPLY=($(compgen -W "$first" -- "$cur")); return
  fi
  COMPREPLY=($(compgen -f -- "$cur"))
}}
complete -o filenames -F _fairalloc fairalloc"""
    if shell == "zsh":
        script = "autoload -U +X bashcompinit && bashcompinit\n" + script
    return script


def _nested(commands: dict[str, argparse.ArgumentParser]) -> list[str]:
    """``command subcommand`` for every command with subcommands (``study run``)."""
    return [f"{name} {sub}" for name, sp in commands.items() for sub in _subcommands(sp)]


def parser() -> argparse.ArgumentParser:
    p = argparse.ArgumentParser(
        prog="fairalloc", formatter_class=DefaultsHelp,
        description="Fair and efficient sharing of heterogeneous compute: "
                    "JSON spec -> model -> solve -> validate.")
    p.add_argument("--version", action="version", version=f"fairalloc {__version__}")
    sub = p.add_subparsers(dest="command", required=True, metavar="COMMAND")

    common = common_flags()

    def add(name: str, func, help_text: str, spec: bool = True) -> argparse.ArgumentParser:
        sp = sub.add_parser(name, help=help_text, description=help_text, parents=[common],
                            formatter_class=DefaultsHelp)
        sp.set_defaults(func=func, reads={"spec": "SPEC"} if spec else {}, writes={})
        if spec:
            sp.add_argument("spec", help="spec file (JSON), or - for standard input")
        return sp

    def output(sp, rows: bool = True, formats: tuple = FORMATS) -> None:
        sp.add_argument("--format", choices=formats, default="table",
                        help="what to print on standard output")
        latex_flag(sp)
        if rows:
            sp.add_argument("--rows", type=arg.whole(0), default=25,
                            help="allocation rows shown in tables")

    def gates(sp, limit: bool = True) -> None:
        if limit:
            solver_flags(sp, "a method that takes a limit (the exact ones)")
        sp.add_argument("--fail-on", dest="fail_on", metavar="CHECK[,CHECK]", type=arg.names,
                        help="exit 3 when one of these checks fails (names as results show "
                             "them; bound: every method's own bound)")

    sp = add("solve", cmd_solve, "solve a spec and check the allocation")
    sp.add_argument("--method", type=arg.name, help="method name (see `fairalloc list`)")
    sp.add_argument("--no-validate", action="store_true", help="skip the checks")
    sp.add_argument("--plot", metavar="FILE.png", type=arg.figure,
                    help="the picture of the result, for kinds that have one (fairalloc list)")
    sp.set_defaults(writes={"plot": "--plot"})
    output(sp)
    gates(sp)
    sp = add("compare", cmd_compare, "every method of the kind side by side")
    sp.add_argument("--methods", type=arg.names, help="comma-separated subset, e.g. lp,wfq")
    check_flags(sp)
    output(sp, rows=False, formats=SUMMARY_FORMATS)
    gates(sp)
    sp = add("validate", cmd_validate, "check an allocation (from --allocation, or solved)")
    sp.add_argument("--allocation", help="JSON file: a result or its allocation object")
    sp.add_argument("--method", type=arg.name,
                    help="without --allocation: the method to solve with; with "
                    "it: the mechanism the strategy-proofness probe re-runs on misreports")
    output(sp)
    gates(sp, limit=False)
    sp = add("sweep", cmd_sweep, "re-solve with spec keys varied (several: every combination)")
    sp.add_argument("--set", required=True, action="append",
                    metavar="KEY=START:STOP:STEP|KEY=V1,V2,...",
                    help="e.g. knob=0:1:0.1, users[0].weight=1:4:1 (STOP included) or "
                         "knob=0,0.5,1; repeat --set for a grid")
    sp.add_argument("--plot", metavar="FILE.png", type=arg.figure,
                    help="write a plot of the sweep (.png, .svg, .pdf, ...)")
    sp.add_argument("--method", type=arg.name)
    sp.add_argument("--methods", type=arg.names,
                    help="several methods, side by side in the table and overlaid in the plot")
    sp.add_argument("--metrics", type=arg.names,
                    help="comma-separated metric names or patterns (utilization.*)")
    check_flags(sp)
    sp.add_argument("--format", choices=SUMMARY_FORMATS, default="table",
                    help="what to print on standard output")
    latex_flag(sp)
    gates(sp, limit=False)          # --time-limit is among the execution flags
    _execution_flags(sp, store_help="also keep the rows (each with its whole result) in this "
                                    "DuckDB file (default: in memory only)")
    sp.set_defaults(writes={"plot": "--plot", "store": "--store"})
    sp = add("experiment", cmd_experiment, "a kind's preset experiment: random workloads, "
             "every method, statistics (`fairalloc experiment KIND --help` shows its flags)",
             spec=False)
    sp.add_argument("kind", metavar="KIND", help="a kind with an experiment (fairalloc list)")
    sp.add_argument("rest", nargs=argparse.REMAINDER, help=argparse.SUPPRESS)
    sp = add("simulate", cmd_simulate, "solve for the policy, then simulate it and the "
             "baselines round by round (kinds with a simulation: fairalloc list)")
    sp.add_argument("--mechanisms", type=arg.names,
                    help="comma-separated subset, e.g. mean-field,round-robin")
    sp.add_argument("--rounds", type=arg.whole(1, 10**9),
                    help="rounds (default: the spec's, else 1000)")
    sp.add_argument("--seed", type=arg.whole(0, 2**32 - 1),
                    help="seed (default: the spec's, else 0)")
    sp.add_argument("--method", type=arg.name,
                    help="method for the policy (default: the spec's)")
    sp.add_argument("--plot", metavar="FILE.png", type=arg.figure,
                    help="the policy and the mechanisms' metrics")
    sp.add_argument("--format", choices=SUMMARY_FORMATS, default="table",
                    help="what to print on standard output")
    latex_flag(sp)
    _execution_flags(sp, store_help="also keep the row (with its whole result) in this DuckDB "
                                    "file (default: in memory only)")
    sp.set_defaults(writes={"plot": "--plot", "store": "--store"})
    _study_parsers(add("study", None, "studies: many instances x methods, stored in DuckDB, "
                       "on a local pool or a Dask cluster", spec=False))
    sp = add("report", cmd_report, "write a report: of a spec (every method side by side, the "
             "verdict matrix with witnesses, metrics, figures, the notes on its paper) or of a "
             "study store (summary and plots)", spec=False)
    sp.add_argument("source", metavar="SPEC|STORE",
                    help="a spec (JSON, or - for standard input) or a study store (.duckdb)")
    sp.add_argument("-o", "--output", required=True, metavar="FILE.html|FILE.md",
                    type=arg.writable)
    sp.set_defaults(reads={"source": "SPEC|STORE"}, writes={"output": "--output"})
    sp.add_argument("--format", choices=("html", "markdown"),
                    help="default: markdown for a .md file, else html (one self-contained "
                         "file); markdown writes its figures into FILE_files/")
    sp.add_argument("--methods", type=arg.names, help="a spec's methods to compare (default "
                                                        "all)")
    sp.add_argument("--study", type=arg.name, help="the study, when the store holds several")
    check_flags(sp)
    sp.add_argument("--sweep", metavar="KEY=START:STOP:STEP|KEY=V1,V2,...",
                    help="a spec's trade-off figure sweeps KEY over these values (default: "
                         "the kind's own sweep, e.g. phi=0:1:0.1 for etf); without --checks "
                         "its points are not probed for strategy-proofness")
    sp.add_argument("--no-sweep", dest="no_sweep", action="store_true",
                    help="no trade-off sweep (its figure left out)")
    solver_flags(sp, "a method that takes a limit (the exact ones)")
    kinds = sorted(KINDS)
    sp = add("import", cmd_import, "build a spec from a table (CSV or Parquet), one row a "
             "user, app, job or kernel", spec=False)
    sp.add_argument("kind", choices=kinds)
    sp.add_argument("table", metavar="FILE.csv|FILE.parquet")
    sp.add_argument("-o", "--output", type=arg.writable,
                    help="write the spec to this file (default: standard output)")
    sp.set_defaults(reads={"table": "TABLE", "base": "--base"}, writes={"output": "--output"})
    sp.add_argument("--map", action="append", default=[], metavar="KEY=COLUMN",
                    help="fill an entity's KEY (weight, demand.cpu) from COLUMN; a column "
                         "named like a key maps itself")
    sp.add_argument("--set", action="append", default=[], metavar="KEY=VALUE",
                    help="the rest of the spec (capacity.cpu=100, knob=0.5; VALUE is JSON, "
                         "else text)")
    sp.add_argument("--base", metavar="SPEC",
                    help="the rest of the spec from this spec (its list of entities replaced)")
    sp.add_argument("--name", help="the spec's name (default: the base's, else the file name)")
    sp.add_argument("--normalize", metavar="KEY",
                    help="divide each row's object KEY by its sum (EMRF: split from per-device "
                         "work)")
    sp = add("schema", cmd_schema, "print a kind's JSON Schema", spec=False)
    sp.add_argument("kind", choices=kinds)
    sp = add("new", cmd_new, "print (or write) a commented template spec (a kind's, or a "
             "study's)", spec=False)
    sp.add_argument("kind", choices=[*kinds, "study"])
    sp.add_argument("-o", "--output", type=arg.writable,
                    help="write to this file instead of standard output")
    add("list", cmd_list, "problem kinds, their methods and checks", spec=False)
    sp = add("examples", cmd_examples, "list the example specs shipped with fairalloc, or copy "
             "them into a folder", spec=False)
    sp.add_argument("kind", metavar="KIND", nargs="?",
                    help="only these: a problem kind, study or traces")
    sp.add_argument("--copy", metavar="DIR", type=arg.folder_to_make,
                    help="copy them into DIR (made if missing), keeping their folders")
    sp.add_argument("--force", action="store_true", help="with --copy: overwrite files")
    sp.add_argument("--format", choices=("table", "markdown", "csv"), default="table",
                    help="what to print on standard output")
    sp = add("completion", cmd_completion, "print a shell completion script: "
             'eval "$(fairalloc completion bash)"', spec=False)
    sp.add_argument("shell", choices=("bash", "zsh"))
    return p


def _study_parsers(parent: argparse.ArgumentParser) -> None:
    sub = parent.add_subparsers(dest="study_command", required=True, metavar="STUDY_COMMAND")

    common = common_flags()

    def add(name: str, func, help_text: str) -> argparse.ArgumentParser:
        sp = sub.add_parser(name, help=help_text, description=help_text, parents=[common],
                            formatter_class=DefaultsHelp)
        sp.set_defaults(func=func, reads={}, writes={})
        return sp

    def stored(sp: argparse.ArgumentParser) -> None:
        sp.add_argument("store", metavar="STORE", help="a study store (FILE.duckdb)")
        sp.add_argument("--study", type=arg.name,
                        help="the study, when the store holds several")

    sp = add("run", cmd_study_run, "run a study (fairalloc new study prints a template)")
    sp.add_argument("study", metavar="STUDY", help="study spec (JSON), or - for standard input")
    _execution_flags(sp, store_help="the DuckDB store (default: STUDY's name .duckdb, here)")
    sp = add("summary", cmd_study_summary, "statistics per grid point and method")
    stored(sp)
    sp.add_argument("--by", type=arg.names, metavar="KEYS",
                    help="columns to group by (default: the grid's keys and method)")
    sp.add_argument("--values", type=arg.names, metavar="COLUMNS",
                    help="columns to summarise (default: ratio; e.g. metric.makespan,time_s)")
    sp.add_argument("--format", choices=SUMMARY_FORMATS, default="table",
                    help="what to print on standard output")
    latex_flag(sp)
    sp.add_argument("--plot", metavar="FILE.png", type=arg.figure,
                    help="box plots per method, and the mean against each numeric grid key")
    sp.set_defaults(reads={"store": "STORE"}, writes={"plot": "--plot"})
    sp = add("export", cmd_study_export, "write a study's rows to Parquet or CSV")
    stored(sp)
    sp.add_argument("-o", "--output", required=True, metavar="FILE.parquet|FILE.csv",
                    type=arg.table_file)
    sp.set_defaults(reads={"store": "STORE"}, writes={"output": "--output"})
    sp = add("instance", cmd_study_instance, "re-make one instance of a study as a spec")
    stored(sp)
    sp.add_argument("id", metavar="ID", type=arg.whole(0), help="the instance column of a row")
    sp.add_argument("-o", "--output", type=arg.writable, help="write the spec to this file")
    sp.set_defaults(reads={"store": "STORE"}, writes={"output": "--output"})


def main(argv: list[str] | None = None) -> int:
    for stream in (sys.stdout, sys.stderr):     # never crash on printing what a user wrote
        if hasattr(stream, "reconfigure"):
            stream.reconfigure(errors="backslashreplace")
    try:
        args = parser().parse_args(argv)
    except SystemExit as exc:           # --help, or a command-line mistake argparse reported
        return exc.code if isinstance(exc.code, int) else 2
    try:
        _refuse_overwrite({label: getattr(args, dest) for dest, label in args.writes.items()},
                          {label: getattr(args, dest) for dest, label in args.reads.items()})
        with highs.settings(log=True) if args.verbose else contextlib.nullcontext():
            return args.func(args)
    except SpecError as exc:
        print(f"fairalloc: {exc.report()}", file=sys.stderr)
        return 2
    except UsageError as exc:
        print(f"fairalloc {args.command}: error: {exc}", file=sys.stderr)
        return 2
    except ArgumentError as exc:        # an API argument: named by the flag that gave it
        flag = FLAGS.get(exc.argument, f"--{exc.argument.replace('_', '-')}")
        print(f"fairalloc {args.command}: error: {flag}: {exc.rule}", file=sys.stderr)
        return 2
    except SolverError as exc:
        print(f"fairalloc: solver error: {exc}", file=sys.stderr)
        return 1
    except StoreError as exc:
        print(f"fairalloc {args.command}: {exc}", file=sys.stderr)
        return 2
    except OutputError as exc:          # a full disk, a read-only folder: the old file stays
        print(f"fairalloc {args.command}: {exc}", file=sys.stderr)
        return 1
    except BrokenPipeError:             # `fairalloc ... | head`: the reader left, quietly
        os.dup2(os.open(os.devnull, os.O_WRONLY), sys.stdout.fileno())
        return 0
    except ConnectionError as exc:      # a Dask scheduler that cannot be reached
        print(f"fairalloc {args.command}: {exc}", file=sys.stderr)
        return 1


if __name__ == "__main__":
    sys.exit(main())
