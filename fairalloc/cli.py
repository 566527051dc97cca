"""The ``fairalloc`` command line, a thin layer over :mod:`fairalloc.api`.

Exit codes: 0 success (a failing axiom is a finding, not an error), 1 solver trouble
(infeasible, time limit, solver error), 2 a bad spec, allocation or command line.
"""

from __future__ import annotations

import argparse
import fnmatch
import json
import os
import sys
from pathlib import Path

from rich.console import Console

from fairalloc import api, plots
from fairalloc.errors import SolverError, SpecError, Violation
from fairalloc.registry import KINDS, Kind
from fairalloc.render import fmt, legend, markdown_table, render_markdown, render_table, rich_mark
from fairalloc.result import FAILED, Result, check_column
from fairalloc.spec import schema, set_path, template

FORMATS = ("table", "json", "markdown")


SHORT = {
    "feasibility": "feasible", "sharing_incentive": "SI", "envy_freeness": "EF",
    "pareto_efficiency": "PE", "strategy_proofness": "SP", "delta_fairness": "δ-fair",
    "max_min": "max-min", "time_guarantee": "time", "no_unforced_idle": "no idle",
    "all_resident": "resident",
}


class UsageError(Exception):
    """A command-line mistake (an option's value): exit 2 naming the option, never reported
    as an invalid spec."""

    def __init__(self, option: str, rule: str):
        super().__init__(f"{option}: {rule}")


def _short(check: str) -> str:
    return SHORT.get(check, check.removeprefix("bound:"))


def _console() -> Console:
    """Full-width tables on a terminal; a generous fixed width when piped (CI logs, files)."""
    return _Console(highlight=False, width=None if sys.stdout.isatty() else 150)


class _Console(Console):
    def on_broken_pipe(self) -> None:
        """A reader that left (``| head``) is not a failure: ``main`` exits 0 quietly (rich's
        default exits 1)."""
        self.quiet = True
        raise BrokenPipeError


def _emit(result: Result, fmt_name: str, rows: int) -> None:
    if fmt_name == "json":
        print(result.to_json())
    elif fmt_name == "markdown":
        print(render_markdown(result, rows))
    else:
        render_table(result, _console(), rows)


def _exit_status(results: list[Result]) -> int:
    return 1 if any(r.status in FAILED for r in results) else 0


def cmd_solve(args) -> int:
    spec = api.load_spec(args.spec)
    draw = KINDS[spec.kind].plot
    if args.plot and draw is None:
        with_plots = ", ".join(name for name in KINDS if KINDS[name].plot is not None)
        raise UsageError("--plot", f"{spec.kind} results have no plot (kinds with one: "
                         f"{with_plots}; sweep --plot draws any kind's sweep)")
    result = api.solve(spec, args.method, validate=not args.no_validate)
    _emit(result, args.format, args.rows)
    if args.plot:
        draw(result, args.plot)
        print(f"plot written to {args.plot}", file=sys.stderr)
    if result.status in FAILED:
        print(f"fairalloc: status {result.status}: {result.solver.get('message', '')}".rstrip(": "),
              file=sys.stderr)
    return _exit_status([result])


def cmd_validate(args) -> int:
    if args.spec == "-" and args.allocation == "-":
        raise UsageError("--allocation", "standard input can be read only once: give the spec "
                         "or the allocation as a file")
    result = api.validate(args.spec, args.allocation, args.method)
    _emit(result, args.format, args.rows)
    return _exit_status([result])


def _check_mark(result: Result, column: str, markup: bool = True) -> str:
    found = [f for f in result.validation if check_column(f.check) == column]
    if not found:
        return ""
    mark = rich_mark(found[0].verdict) if markup else found[0].mark
    named = found[0].check.partition(":")[2]          # which theorem's bound
    return f"{mark} {named}" if named else mark


def cmd_compare(args) -> int:
    methods = args.methods
    spec = api.load_spec(args.spec)
    rows = api.compare(spec, methods)
    results = [r for _, r in rows if isinstance(r, Result)]
    if args.format == "json":
        print(json.dumps([r.to_dict() if isinstance(r, Result) else {"method": m, "error": r}
                          for m, r in rows], indent=2, allow_nan=False))
        return _exit_status(results)
    exact_name = KINDS[spec.kind].exact
    exact = next((r for m, r in rows if m == exact_name and isinstance(r, Result)), None)
    checks = list(dict.fromkeys(check_column(f.check) for r in results for f in r.validation))
    header = ["method", "status", "objective", "time (s)", f"÷ {exact_name or 'exact'}",
              *[_short(c) for c in checks]]
    body, notes = [], []
    for name, r in rows:
        if not isinstance(r, Result):
            body.append([name, "n/a", "—", "", "", *[""] * len(checks)])
            notes.append(f"{name}: {r}")
            continue
        ratio = None
        if exact is not None and exact.objective and r.objective is not None:
            ratio = r.objective / exact.objective
        body.append([name, r.status, fmt(r.objective), f"{r.solver['time_s']:.3g}", fmt(ratio),
                     *[_check_mark(r, c, markup=args.format != "markdown") for c in checks]])
    title = f"{spec.name or spec.kind} — every {spec.kind} method"
    findings = [f for r in results for f in r.validation]
    if args.format == "markdown":
        print(f"## {title}\n")
        print("\n".join(markdown_table(header, body)))
        if findings:
            print(f"\n{legend(findings)}")
        for note in notes:
            print(f"\n{note}")
    else:
        from rich import box
        from rich.table import Table

        table = Table(*header, box=box.SIMPLE_HEAD, title=title, title_justify="left")
        for row in body:
            table.add_row(*row)
        console = _console()
        console.print(table)
        if findings:
            console.print(f"  {legend(findings)}", style="dim")
        for note in notes:
            console.print(f"  n/a {note}")
    return _exit_status(results)


def _parse_set(text: str) -> tuple[str, list]:
    key, sep, rng = text.partition("=")
    parts = rng.split(":")
    if not sep or not key or len(parts) != 3:
        raise UsageError("--set", f"{text!r}: expected KEY=START:STOP:STEP")
    try:
        nums = [int(p) if p.strip().lstrip("-").isdigit() else float(p) for p in parts]
        return key, api.sweep_values(*nums)
    except ValueError as exc:
        raise UsageError("--set", f"{text!r}: {exc}") from None


def _selected(metrics: dict, patterns: list[str]) -> list[str]:
    out = []
    for pattern in patterns:
        out += [k for k in metrics if fnmatch.fnmatchcase(k, pattern) and k not in out]
    return out


def cmd_sweep(args) -> int:
    from rich.progress import Progress

    key, values = _parse_set(args.set)
    spec = api.load_spec(args.spec)
    try:
        set_path(spec.raw, key, values[0])
    except SpecError as exc:
        raise UsageError("--set", f"{key!r}: {exc.violations[0]}") from None
    kind = KINDS[spec.kind]
    patterns = args.metrics or list(kind.sweep_metrics)
    with Progress(transient=True, console=Console(stderr=True)) as progress:
        task = progress.add_task(f"sweeping {key}", total=len(values))
        points = api.sweep(spec, key, values, args.method,
                           on_step=lambda *_: progress.advance(task))
    names = _selected(points[0][1].metrics, patterns)
    checks = list(dict.fromkeys(check_column(f.check) for _, r in points for f in r.validation))
    if args.format == "json":
        print(json.dumps([{"value": v, **r.to_dict()} for v, r in points], indent=2,
                         allow_nan=False))
    else:
        from rich import box
        from rich.table import Table

        table = Table(key, "status", "objective", *names, *map(_short, checks), box=box.SIMPLE_HEAD,
                      title=f"{spec.name or spec.kind}: sweep of {key}", title_justify="left")
        for value, r in points:
            table.add_row(fmt(value), r.status, fmt(r.objective),
                          *[fmt(r.metrics.get(n)) for n in names],
                          *[_check_mark(r, c) for c in checks])
        console = _console()
        console.print(table)
        findings = [f for _, r in points for f in r.validation]
        if findings:
            console.print(f"  {legend(findings)}", style="dim")
    if args.plot:
        plots.sweep(points, key, names, checks, args.plot, spec.name or spec.kind)
        print(f"plot written to {args.plot}", file=sys.stderr)
    return _exit_status([r for _, r in points])


def _experiment_methods(kind: Kind, chosen: list[str] | None, default: list[str]) -> list[str]:
    methods = chosen or default
    unknown = [m for m in methods if m not in kind.methods]
    if unknown:
        raise UsageError("--methods", f"unknown method(s) {', '.join(unknown)} "
                                   f"(known: {', '.join(kind.methods)})")
    return methods


def _percentile_table(title: str, labels: list[str], rows: list[tuple[list, dict, list]],
                      extra: list[str] | None = None) -> None:
    """An experiment's statistics: label cells, mean and 10/50/90th percentiles, extra cells."""
    from rich import box
    from rich.table import Table

    table = Table(*labels, "mean", "p10", "p50", "p90", *(extra or []), box=box.SIMPLE_HEAD,
                  title=title, title_justify="left")
    for cells, st, more in rows:
        table.add_row(*cells, *(f"{st[k]:.4f}" for k in ("mean", "p10", "p50", "p90")), *more)
    _console().print(table)


def cmd_experiment(args) -> int:
    from rich.progress import Progress

    from fairalloc import experiment

    if args.kind == "accelos":
        return cmd_experiment_accelos(args)
    kind = KINDS[args.kind]
    # the exact method only when asked for: proven optima are for small instances
    methods = _experiment_methods(kind, args.methods,
                                  [m for m in kind.methods if m != kind.exact])
    with Progress(transient=True, console=Console(stderr=True)) as progress:
        task = progress.add_task(f"{args.instances} instances", total=args.instances)
        ratios = experiment.run_moldable(
            args.jobs, args.processors, args.beta, args.speedup, args.instances, args.seed,
            methods, args.workers, on_done=lambda: progress.advance(task))
    stats = experiment.summary(ratios)
    title = (f"moldable: {args.jobs} jobs, m = {args.processors}, beta = {args.beta}, "
             f"{args.speedup} speedup, {args.instances} instances (seed {args.seed}): "
             "makespan / lower bound")
    if args.format == "json":
        print(json.dumps({"title": title, "summary": stats,
                          "ratios": {k: v.tolist() for k, v in ratios.items()}}, indent=2))
    else:
        _percentile_table(title, ["method"], [([name], st, []) for name, st in stats.items()])
    if args.plot:
        plots.ratios(ratios, title, args.plot)
        print(f"plot written to {args.plot}", file=sys.stderr)
    return 0


def cmd_experiment_accelos(args) -> int:
    """accelOS mixes: fairness improvement and throughput speedup over fcfs (section 7.4)."""
    from rich.progress import Progress

    from fairalloc import experiments_accelos as ex

    devices = args.devices
    unknown = [d for d in devices if d not in ex.DEVICES]
    if unknown:
        raise UsageError("--devices", f"unknown device(s) {', '.join(unknown)} "
                                   f"(known: {', '.join(ex.DEVICES)})")
    methods = _experiment_methods(KINDS["accelos"], args.methods, ["accelos", "ilp"])
    total = args.mixes * len(devices)
    with Progress(transient=True, console=Console(stderr=True)) as progress:
        task = progress.add_task(f"{total} mixes", total=total)
        values = ex.run_accelos(args.kernels, args.mixes, args.seed, methods, devices,
                                args.workers, on_done=lambda: progress.advance(task))
    stats = ex.accelos_summary(values)
    title = (f"accelos: {args.kernels}-kernel mixes, {args.mixes} per device (seed {args.seed}): "
             "improvement over fcfs")
    if args.format == "json":
        print(json.dumps({"title": title, "summary": stats,
                          "values": {k: {label: v.tolist() for label, v in by.items()}
                                     for k, by in values.items()}}, indent=2))
    else:
        _percentile_table(title, ["metric", "device method"],
                          [([key, label], st, [f"{st['above_1']:.0%}"])
                           for key, by in stats.items() for label, st in by.items()],
                          extra=["> 1"])
    if args.plot:
        plots.improvements(values, title, args.plot)
        print(f"plot written to {args.plot}", file=sys.stderr)
    return 0


def cmd_simulate(args) -> int:
    """Solve a token spec for its thresholds, then play the game and the baselines round by
    round (section 7 of the token paper): one row per mechanism."""
    from rich.progress import Progress

    from fairalloc import simulation
    from fairalloc.models.token import simulation_too_big

    spec = api.load_spec(args.spec)
    if spec.kind != "token":
        raise SpecError([Violation("problem", f"fairalloc simulate needs a token spec, not "
                                   f"{spec.kind}")])
    kind = KINDS["token"]
    method = args.method or spec.options.get("method") or kind.default
    if method not in kind.methods:
        raise UsageError("--method", f"unknown method {method!r} (known: "
                                   f"{', '.join(kind.methods)})")
    mechanisms = tuple(args.mechanisms) if args.mechanisms else None
    unknown = [m for m in mechanisms or () if m not in simulation.MECHANISMS]
    if unknown:
        raise UsageError("--mechanisms", f"unknown mechanism(s) {', '.join(unknown)} "
                                   f"(known: {', '.join(simulation.MECHANISMS)})")
    mechanisms, rounds, seed = simulation.settings(spec.problem, mechanisms, args.rounds,
                                                   args.seed)
    why = simulation_too_big(spec.problem.agents, rounds)
    if why:
        raise SpecError([Violation("--rounds" if args.rounds else "agents", why)])
    with Progress(transient=True, console=Console(stderr=True)) as progress:
        task = progress.add_task(f"{rounds} rounds x {len(mechanisms)} mechanisms",
                                 total=rounds * len(mechanisms))
        solution, report = simulation.solve_and_simulate(
            spec.problem, kind.methods[method], mechanisms, rounds, seed,
            tick=lambda k: progress.advance(task, k))
    title = (f"{spec.name or 'token'}: {spec.problem.agents} agents, {spec.problem.boosts} "
             f"boosts, {rounds} rounds (seed {seed}); thresholds by {method}: {solution.status}")
    metrics = ("performance", "relative_performance", "share_uniformity", "envy_free_index")
    ids = spec.problem.ids
    if args.format == "json":
        print(json.dumps({"title": title, "status": solution.status, "rounds": rounds,
                          "seed": seed, "simulation": report}, indent=2,
                         allow_nan=False))
    else:
        from rich import box
        from rich.table import Table

        table = Table("mechanism", "performance", "÷ max-welfare", "share uniformity",
                      "envy-free index", *[f"boosts {i}" for i in ids], box=box.SIMPLE_HEAD,
                      title=title, title_justify="left")
        for name, row in report.items():
            table.add_row(name, *[fmt(row[k]) for k in metrics],
                          *[f"{row['boost_share'][i]:.3f}" for i in ids])
        _console().print(table)
    if args.plot:
        allocation = solution.allocation
        plots.token(ids, allocation.column("thresholds"), allocation.column("token_distribution"),
                    solution.metrics["boost_probability"], report, title, args.plot)
        print(f"plot written to {args.plot}", file=sys.stderr)
    if solution.status in FAILED:
        print(f"fairalloc: status {solution.status}: {solution.solver.get('message', '')}",
              file=sys.stderr)
    return 1 if solution.status in FAILED else 0


def cmd_schema(args) -> int:
    print(json.dumps(schema(args.kind), indent=2))
    return 0


def cmd_new(args) -> int:
    text = template(args.kind)
    if args.output:
        with open(args.output, "w", encoding="utf-8") as fh:
            fh.write(text)
        print(f"wrote {args.output}; edit it, then: fairalloc solve {args.output}",
              file=sys.stderr)
    else:
        print(text, end="")
    return 0


def cmd_list(args) -> int:
    from rich import box
    from rich.table import Table

    table = Table("kind", "methods (default *, exact †)", "checks", "what", box=box.SIMPLE_HEAD)
    for kind in KINDS.values():
        methods = ", ".join(
            m + ("*" if m == kind.default else "") + ("†" if m == kind.exact else "")
            for m in kind.methods)
        checks = ", ".join(v.__name__ for v in kind.validators)
        table.add_row(kind.name, methods, checks, kind.summary)
    _console().print(table)
    return 0


def whole(low: int, high: int | None = None):
    """An argparse type: a whole number in low..high."""
    def parse(text: str) -> int:
        try:
            value = int(text)
        except ValueError:
            raise argparse.ArgumentTypeError(f"{text!r} is not a whole number") from None
        if value < low or (high is not None and value > high):
            span = f"{low}..{high}" if high is not None else f"at least {low}"
            raise argparse.ArgumentTypeError(f"{value} is out of range ({span})")
        return value
    return parse


def fraction(text: str) -> float:
    """An argparse type: a number in [0, 1]."""
    try:
        value = float(text)
    except ValueError:
        raise argparse.ArgumentTypeError(f"{text!r} is not a number") from None
    if not 0 <= value <= 1:                   # NaN fails this too
        raise argparse.ArgumentTypeError(f"{text} is not in [0, 1]")
    return value


def names(text: str) -> list[str]:
    """An argparse type: a comma-separated list of non-empty names."""
    parts = [part.strip() for part in text.split(",")]
    if not all(parts):
        raise argparse.ArgumentTypeError(f"{text!r} has an empty name")
    return parts


def name(text: str) -> str:
    """An argparse type: a non-empty name."""
    if not text.strip():
        raise argparse.ArgumentTypeError("a name must not be empty")
    return text.strip()


def writable(text: str) -> str:
    """An argparse type: a file to write (its folder exists, it is not a folder)."""
    path = Path(text)
    if path.is_dir():
        raise argparse.ArgumentTypeError(f"{text} is a folder; name a file in it")
    if not path.parent.is_dir():
        raise argparse.ArgumentTypeError(f"folder {path.parent} does not exist")
    return text


def figure(text: str) -> str:
    """An argparse type: a plot file whose extension matplotlib writes, in a folder that
    exists; checked before anything is computed."""
    from matplotlib.backend_bases import FigureCanvasBase

    formats = FigureCanvasBase.get_supported_filetypes()
    suffix = Path(text).suffix.lstrip(".").lower()
    if suffix not in formats:
        raise argparse.ArgumentTypeError(f"{text}: the extension must be one of "
                                          f"{', '.join(sorted(formats))}")
    return writable(text)


def parser() -> argparse.ArgumentParser:
    p = argparse.ArgumentParser(
        prog="fairalloc",
        description="Fair and efficient sharing of heterogeneous compute: "
                    "JSON spec -> model -> solve -> validate.")
    sub = p.add_subparsers(dest="command", required=True, metavar="COMMAND")

    def add(name: str, func, help_text: str, spec: bool = True) -> argparse.ArgumentParser:
        sp = sub.add_parser(name, help=help_text, description=help_text)
        sp.set_defaults(func=func)
        if spec:
            sp.add_argument("spec", help="spec file (JSON), or - for standard input")
        return sp

    def output(sp, rows: bool = True) -> None:
        sp.add_argument("--format", choices=FORMATS, default="table")
        if rows:
            sp.add_argument("--rows", type=whole(0), default=25,
                            help="allocation rows shown in tables")

    sp = add("solve", cmd_solve, "solve a spec and check the allocation")
    sp.add_argument("--method", type=name, help="method name (see `fairalloc list`)")
    sp.add_argument("--no-validate", action="store_true", help="skip the checks")
    sp.add_argument("--plot", metavar="FILE.png", type=figure,
                    help="Gantt chart of a timed schedule (moldable): bus lane + processors")
    output(sp)
    sp = add("compare", cmd_compare, "every method of the kind side by side")
    sp.add_argument("--methods", type=names, help="comma-separated subset, e.g. lp,wfq")
    output(sp, rows=False)
    sp = add("validate", cmd_validate, "check an allocation (from --allocation, or solved)")
    sp.add_argument("--allocation", help="JSON file: a result or its allocation object")
    sp.add_argument("--method", type=name,
                    help="without --allocation: the method to solve with; with "
                    "it: the mechanism the strategy-proofness probe re-runs on misreports")
    output(sp)
    sp = add("sweep", cmd_sweep, "re-solve with one spec key varied")
    sp.add_argument("--set", required=True, metavar="KEY=START:STOP:STEP",
                    help="e.g. knob=0:1:0.1 or users[0].weight=1:4:1 (STOP included)")
    sp.add_argument("--plot", metavar="FILE.png", type=figure, help="write a plot of the sweep")
    sp.add_argument("--method", type=name)
    sp.add_argument("--metrics", type=names,
                    help="comma-separated metric names or patterns (utilization.*)")
    output(sp, rows=False)
    sp = add("experiment", cmd_experiment, "random workloads of a paper's experiment, every "
             "method: moldable (makespan / lower bound), accelos (improvement over fcfs)",
             spec=False)
    sp.add_argument("kind", choices=["moldable", "accelos"])
    sp.add_argument("--jobs", type=whole(1, 10**5), default=20, help="jobs per instance (n)")
    sp.add_argument("--processors", type=whole(1, 2**20), default=8, help="m")
    sp.add_argument("--beta", type=fraction, default=0.5,
                    help="offload share: a in [beta/2, beta], x = a z")
    sp.add_argument("--speedup", choices=["linear", "two-phase"], default="linear")
    sp.add_argument("--instances", type=whole(1, 10**6), default=100)
    sp.add_argument("--kernels", type=int, choices=(2, 4, 8), default=4,
                    help="accelos: kernels per mix")
    sp.add_argument("--mixes", type=whole(1, 10**6), default=100,
                    help="accelos: random mixes per device")
    sp.add_argument("--devices", type=names, default=["kepler", "gcn"],
                    help="accelos: comma-separated device profiles (kepler, gcn)")
    sp.add_argument("--seed", type=whole(0, 2**32 - 1), default=1)
    sp.add_argument("--methods", type=names,
                    help="comma-separated subset (default: every method)")
    sp.add_argument("--workers", type=whole(1, 1024), help="processes (default: one per core)")
    sp.add_argument("--plot", metavar="FILE.png", type=figure,
                    help="box plot of the ratios per method")
    sp.add_argument("--format", choices=("table", "json"), default="table")
    sp = add("simulate", cmd_simulate, "token: solve for the thresholds, then simulate the "
             "token game and the baselines round by round")
    sp.add_argument("--mechanisms", type=names,
                    help="comma-separated subset, e.g. mean-field,round-robin")
    sp.add_argument("--rounds", type=whole(1, 10**9),
                    help="rounds (default: the spec's, else 1000)")
    sp.add_argument("--seed", type=whole(0, 2**32 - 1), help="seed (default: the spec's, else 0)")
    sp.add_argument("--method", type=name, help="method for the thresholds (default: the spec's)")
    sp.add_argument("--plot", metavar="FILE.png", type=figure,
                    help="thresholds, token distributions and the mechanisms' metrics")
    sp.add_argument("--format", choices=("table", "json"), default="table")
    kinds = sorted(KINDS)
    sp = add("schema", cmd_schema, "print a kind's JSON Schema", spec=False)
    sp.add_argument("kind", choices=kinds)
    sp = add("new", cmd_new, "print (or write) a commented template spec", spec=False)
    sp.add_argument("kind", choices=kinds)
    sp.add_argument("-o", "--output", type=writable,
                    help="write to this file instead of standard output")
    add("list", cmd_list, "problem kinds, their methods and checks", spec=False)
    return p


def main(argv: list[str] | None = None) -> int:
    for stream in (sys.stdout, sys.stderr):     # never crash on printing what a user wrote
        if hasattr(stream, "reconfigure"):
            stream.reconfigure(errors="backslashreplace")
    try:
        args = parser().parse_args(argv)
    except SystemExit as exc:           # --help, or a command-line mistake argparse reported
        return exc.code if isinstance(exc.code, int) else 2
    try:
        return args.func(args)
    except SpecError as exc:
        print(f"fairalloc: {exc.report()}", file=sys.stderr)
        return 2
    except UsageError as exc:
        print(f"fairalloc {args.command}: error: {exc}", file=sys.stderr)
        return 2
    except SolverError as exc:
        print(f"fairalloc: solver error: {exc}", file=sys.stderr)
        return 1
    except BrokenPipeError:             # `fairalloc ... | head`: the reader left, quietly
        os.dup2(os.open(os.devnull, os.O_WRONLY), sys.stdout.fileno())
        return 0


if __name__ == "__main__":
    sys.exit(main())
