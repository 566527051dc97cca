"""The flags and checks of arguments that several commands share, and :class:`Commands`, where
a command group adds its commands to the parser."""

from __future__ import annotations

import argparse
import json
import math
from collections.abc import Callable
from dataclasses import dataclass, field

from fairalloc import api
from fairalloc import arguments as arg
from fairalloc.arguments import UsageError
from fairalloc.engine import sweep_values
from fairalloc.files import same_file
from fairalloc.registry import KINDS
from fairalloc.render import LINEWIDTH
from fairalloc.studies.run import parse_cluster

FORMATS = ("table", "json", "markdown", "csv", "latex", "html")


class DefaultsHelp(argparse.HelpFormatter):
    """``--help`` that shows an option's default (argparse's ArgumentDefaultsHelpFormatter
    also shows the defaults that say nothing: None, False, [])."""

    def _get_help_string(self, action: argparse.Action) -> str | None:
        text = action.help
        if text == argparse.SUPPRESS or "%(default)" in (text or "") or \
                action.default in (None, False, [], argparse.SUPPRESS):
            return text
        return f"{text} (default: %(default)s)" if text else "default: %(default)s"


def common_flags() -> argparse.ArgumentParser:
    """-v and -q, which every command takes."""
    common = argparse.ArgumentParser(add_help=False)
    common.add_argument("-v", "--verbose", action="store_true",
                        help="stream the solver log (HiGHS) to standard error")
    common.add_argument("-q", "--quiet", action="store_true",
                        help="no progress bars or notes on standard error")
    return common


@dataclass
class Commands:
    """The subcommands of a parser (``fairalloc``'s, or a command's own, as ``study``'s), to
    which a command group adds its commands; ``root`` is the whole ``fairalloc`` parser."""

    sub: argparse._SubParsersAction
    root: argparse.ArgumentParser
    common: argparse.ArgumentParser = field(default_factory=common_flags)

    def add(self, name: str, func: Callable | None, help_text: str,
            spec: bool = True) -> argparse.ArgumentParser:
        """A command running ``func(args)``; ``spec``: its first argument is a spec file.
        Each command's ``reads`` and ``writes`` (argument -> its name in messages) let ``main``
        refuse an output that is one of the inputs."""
        sp = self.sub.add_parser(name, help=help_text, description=help_text,
                                 parents=[self.common], formatter_class=DefaultsHelp)
        sp.set_defaults(func=func, reads={"spec": "SPEC"} if spec else {}, writes={})
        if spec:
            sp.add_argument("spec", help="spec file (JSON), or - for standard input")
        return sp

    def nested(self, parent: argparse.ArgumentParser, dest: str, metavar: str) -> Commands:
        """The subcommands of command ``parent`` (``study run``), named in ``args.<dest>``."""
        return Commands(parent.add_subparsers(dest=dest, required=True, metavar=metavar),
                        self.root)


def format_flags(sp: argparse.ArgumentParser, rows: bool = True,
                 formats: tuple = FORMATS) -> None:
    """--format, and --rows: the allocation rows a table shows."""
    sp.add_argument("--format", choices=formats, default="table",
                    help="what to print on standard output")
    latex_flag(sp)
    if rows:
        sp.add_argument("--rows", type=arg.whole(0), default=25,
                        help="allocation rows shown in tables")


def latex_flag(sp: argparse.ArgumentParser) -> None:
    """--latex-width, on the commands that write --format latex."""
    sp.add_argument("--latex-width", dest="latex_width", metavar="LENGTH", default=LINEWIDTH,
                    type=arg.latex_length,
                    help="with --format latex: the width each table fits, a LaTeX length "
                         "(\\textwidth, 0.8\\linewidth, 12cm); free text wraps, a wider "
                         "table is scaled down to it (default: %(default)s)")


def gate_flags(sp: argparse.ArgumentParser, limit: bool = True) -> None:
    """--fail-on, and (``limit``) the solver flags."""
    if limit:
        solver_flags(sp, "a method that takes a limit (the exact ones)")
    sp.add_argument("--fail-on", dest="fail_on", metavar="CHECK[,CHECK]", type=arg.names,
                    help="exit 3 when one of these checks fails (names as results show "
                         "them; bound: every method's own bound)")


def check_flags(sp: argparse.ArgumentParser) -> None:
    """--no-validate and --checks: the checks each method's allocation gets."""
    sp.add_argument("--no-validate", dest="no_validate", action="store_true",
                    help="skip the checks")
    sp.add_argument("--checks", metavar="CHECK[,CHECK]", type=arg.names,
                    help="only these checks (names as fairalloc list shows them; default: "
                         "every check of the kind)")


def checks_of(args) -> dict:
    """The checks a command runs: ``--no-validate`` and ``--checks`` as API keywords."""
    if args.no_validate and args.checks:
        raise UsageError("--checks", "give --checks or --no-validate, not both")
    if args.no_validate and getattr(args, "fail_on", None):
        raise UsageError("--fail-on", "needs the checks: drop --no-validate")
    return {"validate": not args.no_validate, "checks": args.checks}


def solver_flags(sp: argparse.ArgumentParser, limit_help: str) -> None:
    """--time-limit, --mip-gap and --threads: api.solve's solver keywords."""
    sp.add_argument("--time-limit", dest="time_limit", metavar="S", type=arg.positive,
                    help=f"seconds for {limit_help}")
    sp.add_argument("--mip-gap", dest="mip_gap", metavar="GAP", type=arg.gap,
                    help="relative gap at which exact MILPs may stop (above a method's own "
                         "gap the result is feasible, not optimal)")
    sp.add_argument("--threads", type=arg.whole(1, 1024), help="HiGHS threads per solve")


def execution_flags(sp: argparse.ArgumentParser, store_help: str) -> None:
    """Where a study's run goes and what runs it: --store, --cluster, --workers, --resume and
    the solver flags."""
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


def _cluster(text: str):
    try:
        return parse_cluster(text)
    except ValueError as exc:
        raise argparse.ArgumentTypeError(str(exc)) from None


def solver_settings(args) -> dict:
    """The API's solver keywords from the command line (the log: ``main``'s -v)."""
    return {"time_limit": args.time_limit, "mip_gap": args.mip_gap, "threads": args.threads}


def check_pool(opts) -> None:
    """A usage error for --workers with --cluster."""
    if opts.cluster is not None and opts.workers is not None:
        raise UsageError("--workers", "--workers sizes the local pool; with --cluster the "
                                      "cluster's workers run the tasks")


def check_fail_on(kind_name: str, fail_on: list[str] | None) -> None:
    """A usage error for a ``--fail-on`` name the kind has no check of."""
    kind = KINDS[kind_name]
    unknown = kind.unknown_checks(fail_on or ())
    if unknown:
        raise UsageError("--fail-on", f"no check {', '.join(map(repr, unknown))} in "
                                      f"{kind_name} (checks: {', '.join(kind.check_names())})")


def refuse_overwrite(writes: dict[str, str | None], reads: dict[str, str | None]) -> None:
    """A usage error when a file the command writes (option -> path) is one of the files it
    reads (its name -> path) or one its documents read (a replay document's trace table, a
    study's spec files), or another file it writes, also through a link: the command would
    destroy its input and exit 0."""
    outputs = [(option, path) for option, path in writes.items() if path]
    if not outputs:
        return
    others = [(name, path) for name, path in reads.items() if path and path != "-"]
    others += [(f"{what} (read by {path})", str(file)) for _, path in others
               for what, file in api.files_read(path)]
    for i, (option, path) in enumerate(outputs):
        for name, other in others + outputs[:i]:
            if same_file(path, other):
                raise UsageError(option, f"{path} is the command's {name} too: writing it "
                                         f"would destroy it; name another file")


def json_or_text(text: str, flag: str = "--set"):
    """A value as JSON reads it (0.5, true, "x", [1, 2]), else the text itself (kepler)."""
    try:
        value = json.loads(text)
    except ValueError:
        return text.strip()
    if isinstance(value, float) and not math.isfinite(value):
        raise UsageError(flag, f"{text!r}: values must be finite")
    return value


def parse_set(text: str, flag: str = "--set") -> tuple[str, list]:
    """``KEY=START:STOP:STEP`` (STOP included) or ``KEY=V1,V2,...`` (each a JSON value, or
    text): the key and its values (a mistake is ``flag``'s)."""
    key, sep, rng = text.partition("=")
    if not sep or not key or not rng:
        raise UsageError(flag, f"{text!r}: expected KEY=START:STOP:STEP or KEY=V1,V2,...")
    if ":" not in rng:
        return key, [json_or_text(v, flag) for v in rng.split(",")]
    parts = rng.split(":")
    if len(parts) != 3:
        raise UsageError(flag, f"{text!r}: expected KEY=START:STOP:STEP or KEY=V1,V2,...")
    try:
        nums = [int(p) if p.strip().lstrip("-").isdigit() else float(p) for p in parts]
        return key, sweep_values(*nums)
    except ValueError as exc:
        raise UsageError(flag, f"{text!r}: {exc}") from None
