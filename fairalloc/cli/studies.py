"""Many solves at once: ``experiment``, ``simulate`` and ``study run|summary|export|instance``.
Each runs a study through the API, which reports progress to the bar through callbacks."""

from __future__ import annotations

import argparse
import json
import sys

from fairalloc import api, plots
from fairalloc import arguments as arg
from fairalloc.arguments import UsageError
from fairalloc.cli.options import (
    Commands,
    DefaultsHelp,
    check_pool,
    common_flags,
    execution_flags,
    format_flags,
    refuse_overwrite,
    solver_settings,
)
from fairalloc.cli.output import bar, note, outcome, print_rows, print_summary
from fairalloc.files import write_text
from fairalloc.registry import KINDS
from fairalloc.result import FAILED
from fairalloc.studies import plots as study_plots
from fairalloc.studies.sweep import spec_title, stem


def register(commands: Commands) -> None:
    sp = commands.add("experiment", cmd_experiment, "a kind's preset experiment: random "
                      "workloads, every method, statistics (`fairalloc experiment KIND "
                      "--help` shows its flags)", spec=False)
    sp.add_argument("kind", metavar="KIND", help="a kind with an experiment (fairalloc list)")
    sp.add_argument("rest", nargs=argparse.REMAINDER, help=argparse.SUPPRESS)
    sp = commands.add("simulate", cmd_simulate, "solve for the policy, then simulate it and "
                      "the baselines round by round (kinds with a simulation: fairalloc list)")
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
    format_flags(sp, rows=False)
    execution_flags(sp, store_help="also keep the row (with its whole result) in this DuckDB "
                                   "file (default: in memory only)")
    sp.set_defaults(writes={"plot": "--plot", "store": "--store"})
    _register_study(commands.nested(
        commands.add("study", None, "studies: many instances x methods, stored in DuckDB, "
                     "on a local pool or a Dask cluster", spec=False),
        "study_command", "STUDY_COMMAND"))


def _register_study(commands: Commands) -> None:
    """``study``'s own commands."""
    sp = commands.add("run", cmd_study_run, "run a study (fairalloc new study prints a "
                      "template)", spec=False)
    sp.add_argument("study", metavar="STUDY", help="study spec (JSON), or - for standard input")
    execution_flags(sp, store_help="the DuckDB store (default: STUDY's name .duckdb, here)")
    sp = commands.add("summary", cmd_study_summary, "statistics per grid point and method",
                      spec=False)
    _stored(sp)
    sp.add_argument("--by", type=arg.names, metavar="KEYS",
                    help="columns to group by (default: the grid's keys and method; a replay "
                         "study's seed keys left out)")
    sp.add_argument("--values", type=arg.names, metavar="COLUMNS",
                    help="columns to summarise (default: ratio; e.g. metric.makespan,time_s)")
    format_flags(sp, rows=False)
    sp.add_argument("--plot", metavar="FILE.png", type=arg.figure,
                    help="box plots per method, and the mean against each numeric grid key "
                         "(a replay study: JCT against the rate, CDFs, utilisation, checks)")
    sp.set_defaults(reads={"store": "STORE"}, writes={"plot": "--plot"})
    sp = commands.add("export", cmd_study_export, "write a study's rows to Parquet or CSV",
                      spec=False)
    _stored(sp)
    sp.add_argument("-o", "--output", required=True, metavar="FILE.parquet|FILE.csv",
                    type=arg.table_file)
    sp.set_defaults(reads={"store": "STORE"}, writes={"output": "--output"})
    sp = commands.add("instance", cmd_study_instance, "re-make one instance of a study as a "
                      "spec (a replay study's: the document a row ran)", spec=False)
    _stored(sp)
    sp.add_argument("id", metavar="ID", type=arg.whole(0), help="the instance column of a row")
    sp.add_argument("--method", type=arg.name, help="the method column of the row (a replay "
                    "study's policy: the document that row ran)")
    sp.add_argument("-o", "--output", type=arg.writable, help="write the spec to this file")
    sp.set_defaults(reads={"store": "STORE"}, writes={"output": "--output"})


def _stored(sp: argparse.ArgumentParser) -> None:
    """The store a command reads, and --study."""
    sp.add_argument("store", metavar="STORE", help="a study store (FILE.duckdb)")
    sp.add_argument("--study", type=arg.name, help="the study, when the store holds several")


def cmd_experiment(args) -> int:
    """A kind's preset experiment: its study, run like any, summarised by the paper's values."""
    experiment = api.experiment_of(args.kind)
    try:
        opts = _experiment_parser(args.kind, experiment).parse_args(args.rest)
    except SystemExit as exc:           # --help, or a mistake argparse reported
        return exc.code if isinstance(exc.code, int) else 2
    opts.quiet, opts.verbose = opts.quiet or args.quiet, opts.verbose or args.verbose
    refuse_overwrite({"--plot": opts.plot, "--store": opts.store}, {})
    parameters = {p.name: getattr(opts, p.name) for p in experiment.parameters}
    check_pool(opts)
    with bar(opts, f"{args.kind} experiment") as callbacks:
        run = api.experiment(args.kind, opts.seed, opts.methods, store=opts.store,
                             resume=opts.resume, workers=opts.workers, cluster=opts.cluster,
                             log=opts.verbose or None, **callbacks, **solver_settings(opts),
                             **parameters)
    code = outcome(run.study.name, run.progress, opts.store, opts)
    if code == 130:
        return code
    if opts.format == "json":
        print(json.dumps(run.to_dict(), indent=2, allow_nan=False))
    else:
        print_summary(run.title, run.records, run.by, list(run.values), opts.format,
                      run.values, experiment.baseline, checks=len(run.values) == 1,
                      latex_width=opts.latex_width)
    if opts.plot:
        plots.boxes(run.by_label, run.values, run.title, opts.plot, experiment.baseline,
                    experiment.log)
        note(opts, f"plot written to {opts.plot}")
    return code


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
    format_flags(sp, rows=False)
    execution_flags(sp, store_help="also keep the rows in this DuckDB file (default: in "
                                   "memory only)")
    return sp


def cmd_simulate(args) -> int:
    """Solve a spec for its policy, then play it and the baselines round by round: a study of
    the spec with its ``simulation`` set (the kind's metrics simulate it), one row per
    mechanism in the table."""
    spec = api.load_spec(args.spec)
    sim = KINDS[spec.kind].simulation
    if args.plot and sim is not None and sim.plot is None:     # said before it runs, not after
        raise UsageError("--plot", f"{spec.kind}'s simulation has no plot")
    check_pool(args)
    with bar(args, spec_title(spec)) as callbacks:
        run = api.simulate(spec, args.method, mechanisms=args.mechanisms, rounds=args.rounds,
                           seed=args.seed, store=args.store, resume=args.resume,
                           workers=args.workers, cluster=args.cluster,
                           log=args.verbose or None, **callbacks, **solver_settings(args))
    code = outcome(run.sweep.study.name, run.sweep.progress, args.store, args)
    if code == 130:
        return code
    if run.result is None:
        print(f"fairalloc: status {run.status}: {run.error}", file=sys.stderr)
        return 1
    if args.format == "json":
        print(json.dumps(run.to_dict(), indent=2, allow_nan=False))
    else:
        columns = sim.columns(spec.problem)
        print_rows(run.title, ["mechanism", *[header for header, _ in columns]],
                   [[mechanism, *[cell(row) for _, cell in columns]]
                    for mechanism, row in run.played.items()], args.format,
                   latex_width=args.latex_width)
    if args.plot:
        sim.plot(spec.problem, spec.problem.read_allocation(run.result["allocation"]),
                 run.result["metrics"], run.title, args.plot)
        note(args, f"plot written to {args.plot}")
    if run.status in FAILED:
        message = run.result["solver"].get("message") or ""
        print(f"fairalloc: status {run.status}: {message}", file=sys.stderr)
    return code or (1 if run.status in FAILED else 0)


def cmd_study_run(args) -> int:
    path = args.store or f"{stem(args.study)}.duckdb"
    refuse_overwrite({"--store": path}, {"STUDY": args.study})
    check_pool(args)
    with bar(args, stem(args.study)) as callbacks:
        done = api.study_run(args.study, path, resume=args.resume, workers=args.workers,
                             cluster=args.cluster, log=args.verbose or None, **callbacks,
                             **solver_settings(args))
    code = outcome(done.study.name, done.progress, path, args)
    if code == 130:
        return code
    found = done.summary()
    print_summary(found.title, found.records, found.by, found.values, "table", found.labels,
                  units=found.units)
    note(args, f"fairalloc study summary {path} --by ... | export {path} -o rows.parquet")
    return code


def cmd_study_summary(args) -> int:
    found = api.summary(args.store, args.study, args.by, args.values)
    print_summary(found.title, found.records, found.by, found.values, args.format,
                  found.labels, latex_width=args.latex_width, units=found.units)
    if args.plot and found.record["replay"]:
        jobs, utilization = api.replay_rows(args.store, args.study)
        study_plots.replay_study(found.rows, jobs, utilization, [*found.record["grid"]],
                                 found.title, args.plot)
        note(args, f"plot written to {args.plot}")
    elif args.plot:
        study_plots.study(found.rows, found.by, found.values, found.labels, found.title,
                          args.plot, [*found.record["grid"]])
        note(args, f"plot written to {args.plot}")
    return 0


def cmd_study_export(args) -> int:
    name, count = api.export(args.store, args.output, args.study)
    note(args, f"{count} rows of {name} written to {args.output}")
    return 0


def cmd_study_instance(args) -> int:
    spec, seed = api.instance_spec(args.store, args.id, args.study, args.method)
    text = json.dumps(spec, indent=2)
    if args.output:
        write_text(args.output, text + "\n")
        print(f"instance {args.id} (seed {seed}) written to {args.output}", file=sys.stderr)
    else:
        print(text)
    return 0
