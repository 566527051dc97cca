"""``replay``: a kind's policy over time on a trace of arriving jobs."""

from __future__ import annotations

import json
import sys

from fairalloc import api, plots
from fairalloc import arguments as arg
from fairalloc.cli.options import Commands
from fairalloc.cli.output import note, print_rows, progress_bar, stored_number
from fairalloc.render import csv_table


def register(commands: Commands) -> None:
    sp = commands.add("replay", cmd_replay, "replay a kind's policy over time on a trace of "
                      "arriving jobs (fairalloc new replay)", spec=False)
    sp.add_argument("spec", metavar="FILE", help="replay document (JSON)")
    sp.add_argument("--format", choices=("text", "json", "csv"), default="text",
                    help="what to print on standard output")
    sp.add_argument("--plot", metavar="FILE.png", type=arg.figure,
                    help="the JCT CDF and the utilisation over time")
    sp.set_defaults(reads={"spec": "FILE"}, writes={"plot": "--plot"})


def cmd_replay(args) -> int:
    """Replay a kind's policy over time: the run's measures (or every job, as CSV), progress
    (simulated time, jobs done) on stderr (a bar, or a plain line every so often into a log);
    exit 1 when the policy failed mid-run."""
    doc = api.replays.load(args.spec)
    for line in doc.left_out():
        note(args, line)
    with progress_bar(args) as bar:
        task = bar.add_task(doc.name, total=doc.trace.n)
        run = api.replay(doc, progress=lambda now, done, total: bar.update(
            task, completed=done, description=f"{doc.name}: {now / 3600:.1f} h simulated"))
    if args.format == "json":
        print(json.dumps(run.to_dict(), indent=2, allow_nan=False))
    elif args.format == "csv":
        jobs = run.jobs
        sys.stdout.write(csv_table(list(jobs), [[stored_number(v) for v in row]
                                                for row in zip(*jobs.values())]))
    else:
        print_rows(f"replay {run.name}: {run.settings['policy']} "
                   f"({run.settings['mechanism']}), {run.settings['trace']}",
                   ["measure", "value"], [list(row) for row in run.rows()], "table")
    if args.plot:
        plots.replay_run(run, args.plot)
        note(args, f"plot written to {args.plot}")
    if run.ran_dry():
        print(f"fairalloc replay: warning: {run.ran_dry()}", file=sys.stderr)
    if run.status != "done":
        print(f"fairalloc replay: status {run.status}: {run.summary['error']}",
              file=sys.stderr)
        return 1
    return 0

