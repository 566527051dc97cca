"""``report``: one document of a spec, of a replay or of a study store."""

from __future__ import annotations

from fairalloc import api
from fairalloc import arguments as arg
from fairalloc.arguments import UsageError
from fairalloc.cli.options import Commands, check_flags, checks_of, parse_set, solver_flags
from fairalloc.cli.output import note, steps


def register(commands: Commands) -> None:
    sp = commands.add("report", cmd_report, "write a report: of a spec (every method side by "
                      "side, the verdict matrix with witnesses, metrics, figures, the notes on "
                      "its paper), of a replay document (it is run: its measures, checks and "
                      "figure) or of a study store (summary and plots)", spec=False)
    sp.add_argument("source", metavar="SPEC|REPLAY|STORE",
                    help="a spec or a replay document (JSON, or - for standard input) or a "
                         "study store (.duckdb)")
    sp.add_argument("-o", "--output", required=True, metavar="FILE.html|FILE.md",
                    type=arg.writable)
    sp.set_defaults(reads={"source": "SPEC|REPLAY|STORE"}, writes={"output": "--output"})
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


def cmd_report(args) -> int:
    """One document for a spec (every method, verdicts with witnesses, figures, the notes on
    the paper), a replay (run: its measures, checks and figure; progress on stderr) or a
    study store (summary and plots): HTML, or Markdown with figure files."""
    if args.sweep and args.no_sweep:
        raise UsageError("--sweep", "give --sweep or --no-sweep, not both")
    sweep = False if args.no_sweep else parse_set(args.sweep, "--sweep") if args.sweep else None
    with steps(args, f"report {args.source}") as on_step:
        doc = api.report(args.source, methods=args.methods, study=args.study,
                         time_limit=args.time_limit, mip_gap=args.mip_gap, threads=args.threads,
                         sweep=sweep, on_step=on_step, **checks_of(args))
    written = api.write_report(doc, args.output, args.format)
    note(args, f"report written to {args.output}"
         + (f" (figures in {written[1].parent})" if len(written) > 1 else ""))
    return 0
