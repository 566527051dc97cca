"""One spec at a time: ``solve``, ``compare``, ``validate`` and ``sweep``."""

from __future__ import annotations

import dataclasses
import json
import sys

from fairalloc import api, plots
from fairalloc import arguments as arg
from fairalloc.arguments import UsageError
from fairalloc.cli.options import (
    Commands,
    check_fail_on,
    check_flags,
    check_pool,
    checks_of,
    execution_flags,
    format_flags,
    gate_flags,
    parse_set,
    solver_settings,
)
from fairalloc.cli.output import (
    bar,
    cell_style,
    emit,
    exit_status,
    failure_detail,
    gate,
    note,
    outcome,
    print_rows,
    steps,
    stored_number,
    verdict_cell,
)
from fairalloc.errors import SpecError
from fairalloc.registry import KINDS
from fairalloc.render import (
    abbreviations,
    check_heads,
    comparison,
    exact_text,
    fmt,
    legend,
    verdict_columns,
)
from fairalloc.result import FAILED, Result, check_column
from fairalloc.spec import set_path
from fairalloc.studies.sweep import spec_title


def register(commands: Commands) -> None:
    sp = commands.add("solve", cmd_solve, "solve a spec and check the allocation")
    sp.add_argument("--method", type=arg.name, help="method name (see `fairalloc list`)")
    sp.add_argument("--no-validate", action="store_true", help="skip the checks")
    sp.add_argument("--plot", metavar="FILE.png", type=arg.figure,
                    help="the picture of the result, for kinds that have one (fairalloc list)")
    sp.set_defaults(writes={"plot": "--plot"})
    format_flags(sp)
    gate_flags(sp)
    sp = commands.add("compare", cmd_compare, "every method of the kind side by side")
    sp.add_argument("--methods", type=arg.names, help="comma-separated subset, e.g. lp,wfq")
    check_flags(sp)
    format_flags(sp, rows=False)
    gate_flags(sp)
    sp = commands.add("validate", cmd_validate,
                      "check an allocation (from --allocation, or solved); of a replay "
                      "document, check the document", spec=False)
    sp.add_argument("spec", help="spec or replay document (JSON), or - for standard input")
    sp.set_defaults(reads={"spec": "SPEC"})
    sp.add_argument("--allocation", help="JSON file: a result or its allocation object")
    sp.add_argument("--method", type=arg.name,
                    help="without --allocation: the method to solve with; with "
                    "it: the mechanism the strategy-proofness probe re-runs on misreports")
    format_flags(sp)
    gate_flags(sp, limit=False)
    sp = commands.add("sweep", cmd_sweep,
                      "re-solve with spec keys varied (several: every combination)")
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
    format_flags(sp, rows=False)
    gate_flags(sp, limit=False)          # --time-limit is among the execution flags
    execution_flags(sp, store_help="also keep the rows (each with its whole result) in this "
                                   "DuckDB file (default: in memory only)")
    sp.set_defaults(writes={"plot": "--plot", "store": "--store"})


def cmd_solve(args) -> int:
    spec = api.load_spec(args.spec)
    draw = KINDS[spec.kind].plot
    if args.plot and draw is None:
        with_plots = ", ".join(api.kinds_with("plot"))
        raise UsageError("--plot", f"{spec.kind} results have no plot (kinds with one: "
                         f"{with_plots}; sweep --plot draws any kind's sweep)")
    check_fail_on(spec.kind, args.fail_on)
    if args.fail_on and args.no_validate:
        raise UsageError("--fail-on", "needs the checks: drop --no-validate")
    result = api.solve(spec, args.method, validate=not args.no_validate, **solver_settings(args))
    emit(result, args.format, args.rows, args.latex_width)
    if args.plot:       # an untitled spec's picture is titled by its file name
        draw(spec.problem,
             result if result.name else dataclasses.replace(result, name=spec_title(spec)),
             args.plot)
        note(args, f"plot written to {args.plot}")
    if result.status in FAILED:
        print(f"fairalloc: status {result.status}: {failure_detail(result.solver)}".rstrip(": "),
              file=sys.stderr)
    return exit_status([result], args.fail_on)


def cmd_validate(args) -> int:
    if args.spec == "-" and args.allocation == "-":
        raise UsageError("--allocation", "standard input can be read only once: give the spec "
                         "or the allocation as a file")
    doc = api.load_document(args.spec)
    if isinstance(doc, api.replays.Document):
        return _valid_replay(doc, args)
    result = api.validate(doc, args.allocation, args.method)
    check_fail_on(result.problem, args.fail_on)
    emit(result, args.format, args.rows, args.latex_width)
    return exit_status([result], args.fail_on)


def _valid_replay(doc, args) -> int:
    """A replay document checked (its problems exit 2 before this): one line saying so; the
    flags of an allocation's checks are refused."""
    given = [flag for flag, value in (("--allocation", args.allocation),
                                      ("--method", args.method), ("--fail-on", args.fail_on),
                                      ("--format", args.format != "table")) if value]
    if given:
        raise UsageError(given[0], "checks an allocation of a spec; a replay document is "
                                   "checked as a document (run it with fairalloc replay)")
    print(f"{doc.source}: valid replay document {doc.described()}")
    for line in doc.left_out():
        note(args, line)
    return 0


def cmd_compare(args) -> int:
    spec = api.load_spec(args.spec)
    check_fail_on(spec.kind, args.fail_on)
    with steps(args, f"compare {spec_title(spec)}") as on_step:
        rows = api.compare(spec, args.methods, **checks_of(args), **solver_settings(args),
                           on_step=on_step)
    results = [r for _, r in rows if isinstance(r, Result)]
    if args.format == "json":
        print(json.dumps([r.to_dict() if isinstance(r, Result) else {"method": m, "error": r}
                          for m, r in rows], indent=2, allow_nan=False))
        return exit_status(results, args.fail_on)
    kind = KINDS[spec.kind]
    checks = verdict_columns(results)
    show = exact_text if args.format == "csv" else fmt
    header, body, notes = comparison(rows, kind.exact, kind.sense, show)
    header += check_heads(checks)
    style = cell_style(args.format)
    for row, (_, r) in zip(body, rows):
        row += [_check_mark(r, c, style) if isinstance(r, Result) else "" for c in checks]
    title = f"{spec_title(spec)} — every {spec.kind} method"
    findings = [f for r in results for f in r.validation]
    marks = " · ".join(filter(None, [legend(findings) if findings else "",
                                     abbreviations(header)]))
    print_rows(title, header, body, args.format, "\n".join(filter(None, [marks, *notes])),
               args.latex_width)
    return exit_status(results, args.fail_on)


def _check_mark(result: Result, column: str, style: str) -> str:
    """The result's verdict in a check column (empty when it has no such check)."""
    found = [f for f in result.validation if check_column(f.check) == column]
    if not found:
        return ""
    return verdict_cell(found[0].check, found[0].verdict, style)


def cmd_sweep(args) -> int:
    """Re-solve one spec with keys varied: a study with the spec as its base instance, the
    keys as its grid (several: every combination) and one or more methods, shown row by row."""
    sets = dict(parse_set(text) for text in args.set)
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
    check_fail_on(spec.kind, args.fail_on)
    check_pool(args)
    with bar(args, spec_title(spec)) as callbacks:
        swept = api.sweep(spec, sets, method=args.method, methods=args.methods,
                          metrics=args.metrics, store=args.store, resume=args.resume,
                          workers=args.workers, cluster=args.cluster,
                          log=args.verbose or None, **callbacks, **solver_settings(args),
                          **checks_of(args))
    code = outcome(swept.study.name, swept.progress, args.store, args)
    if code == 130:
        return code
    rows, keys, names, checks = swept.rows, swept.keys, swept.metric_names, swept.check_columns
    stored_checks = [c for c in rows if c.startswith("check.")]
    if args.format == "json":
        print(json.dumps(swept.records(), indent=2, allow_nan=False))
    else:
        _print_sweep(swept, spec_title(spec), args.format, args.latex_width)
    if args.plot:
        plots.sweep(rows, keys[0], names, checks, args.plot, spec_title(spec),
                    KINDS[spec.kind])
        note(args, f"plot written to {args.plot}")
    if code or any(status in FAILED or status == "error" for status in rows["status"]):
        return code or 1
    return gate([c.removeprefix("check.") for c in stored_checks if "fails" in set(rows[c])],
                args.fail_on)


def _print_sweep(swept: api.Sweep, title: str, fmt_name: str, latex_width: str) -> None:
    """A sweep's rows: the swept values, the method (several), status, objective, metrics
    and verdicts."""
    rows, keys, names, checks = swept.rows, swept.keys, swept.metric_names, swept.check_columns
    several = len(swept.study.methods) > 1
    style = cell_style(fmt_name)
    show = exact_text if fmt_name == "csv" else fmt    # CSV keeps every digit
    body = [[*map(show, point), *([rows["method"][i]] if several else []),
             rows["status"][i], show(stored_number(rows["objective"][i])),
             *[show(stored_number(rows[f"metric.{n}"][i])) for n in names],
             *_verdict_cells(rows, i, checks, style)]
            for i, point in enumerate(swept.points)]
    verdicts = {v for c in rows if c.startswith("check.") for v in rows[c]} - {None}
    header = [*keys, *(["method"] if several else []), "status", "objective", *names,
              *check_heads(checks)]
    print_rows(f"{title}: sweep of {' × '.join(keys)}", header, body, fmt_name,
               " · ".join(filter(None, [legend(verdicts) if verdicts else "",
                                        abbreviations(header)])), latex_width)


def _verdict_cells(rows: dict, i: int, checks: list[str], style: str) -> list[str]:
    """Row i's verdict per check column (``bound:*`` checks share one, named): a rich mark,
    a plain ``mark`` or the ``word`` (CSV)."""
    out = []
    for column in checks:
        found = [(name.removeprefix("check."), rows[name][i]) for name in rows
                 if name.startswith("check.") and rows[name][i] is not None
                 and check_column(name.removeprefix("check.")) == column]
        out.append(verdict_cell(*found[0], style) if found else "")
    return out
