"""The ``fairalloc`` command line, a thin layer over :mod:`fairalloc.api`: it parses, prints
and maps exit codes. Each command group is a module with a ``register(commands)`` that adds its
commands; ``GROUPS`` lists them in the order ``fairalloc --help`` shows them.

Exit codes: 0 success (a failing axiom is a finding, not an error), 1 solver trouble
(infeasible, time limit, solver error) or an output that could not be written (a full disk),
2 a bad spec, allocation, input file or command line (an output over one of the inputs), 3 a
check named by ``--fail-on`` fails (when there is no solver trouble), 130 interrupted.
"""

from __future__ import annotations

import argparse
import contextlib
import os
import sys

from fairalloc.arguments import UsageError
from fairalloc.cli import completion, files, replay, report, solving, studies
from fairalloc.cli.options import Commands, DefaultsHelp, refuse_overwrite
from fairalloc.errors import (
    ArgumentError,
    OutputError,
    SolverError,
    SpecError,
    StoreError,
    interrupted_query,
)
from fairalloc.solvers import highs
from fairalloc.version import __version__

GROUPS = (solving, studies, replay, report, files, completion)
FLAGS = {"mapping": "--map", "sets": "--set", "kind": "KIND"}   # API argument -> its flag


def parser() -> argparse.ArgumentParser:
    """The whole command line: every group's commands."""
    p = argparse.ArgumentParser(
        prog="fairalloc", formatter_class=DefaultsHelp,
        description="Fair and efficient sharing of heterogeneous compute: "
                    "JSON spec -> model -> solve -> validate.")
    p.add_argument("--version", action="version", version=f"fairalloc {__version__}")
    commands = Commands(p.add_subparsers(dest="command", required=True, metavar="COMMAND"), p)
    for group in GROUPS:
        group.register(commands)
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
        refuse_overwrite({label: getattr(args, dest) for dest, label in args.writes.items()},
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
    except KeyboardInterrupt:           # Ctrl-C in a command that is not a study: no traceback
        print(f"fairalloc {args.command}: interrupted", file=sys.stderr)
        return 130
    except RuntimeError as exc:         # Ctrl-C while DuckDB reads a table: the same
        if not interrupted_query(exc):
            raise
        print(f"fairalloc {args.command}: interrupted", file=sys.stderr)
        return 130
