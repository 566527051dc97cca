"""What a user starts from: ``import`` (a spec from a table), ``schema``, ``new`` (a
template), ``list`` (the kinds) and ``examples``."""

from __future__ import annotations

import json
import sys

from fairalloc import api
from fairalloc import arguments as arg
from fairalloc.arguments import UsageError
from fairalloc.catalog import EXAMPLES, copy_examples, examples
from fairalloc.cli.options import Commands, json_or_text
from fairalloc.cli.output import console, note, print_rows
from fairalloc.files import write_text
from fairalloc.registry import KINDS
from fairalloc.render import print_table
from fairalloc.spec import schema, template


def register(commands: Commands) -> None:
    kinds = sorted(KINDS)
    sp = commands.add("import", cmd_import, "build a spec from a table (CSV or Parquet), one "
                      "row a user, app, job or kernel", spec=False)
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
    sp = commands.add("schema", cmd_schema, "print a kind's JSON Schema", spec=False)
    sp.add_argument("kind", choices=kinds)
    sp = commands.add("new", cmd_new, "print (or write) a commented template spec (a kind's, "
                      "a study's or a replay's)", spec=False)
    sp.add_argument("kind", choices=[*kinds, "study", "replay"])
    sp.add_argument("-o", "--output", type=arg.writable,
                    help="write to this file instead of standard output")
    commands.add("list", cmd_list, "problem kinds, their methods and checks", spec=False)
    sp = commands.add("examples", cmd_examples, "list the example specs shipped with "
                      "fairalloc, or copy them into a folder", spec=False)
    sp.add_argument("kind", metavar="KIND", nargs="?",
                    help="only these: a problem kind, study or traces")
    sp.add_argument("--copy", metavar="DIR", type=arg.folder_to_make,
                    help="copy them into DIR (made if missing), keeping their folders")
    sp.add_argument("--force", action="store_true", help="with --copy: overwrite files")
    sp.add_argument("--format", choices=("table", "markdown", "csv"), default="table",
                    help="what to print on standard output")


def cmd_import(args) -> int:
    """A spec of KIND from a table: a row per entity, columns mapped to the entity's keys, the
    rest of the spec from --base and --set; checked like any spec before it is written."""
    made = api.import_table(args.kind, args.table, mapping=dict(_pairs(args.map, "--map")),
                            sets={path: json_or_text(value)
                                  for path, value in _pairs(args.set, "--set")},
                            base=args.base, name=args.name, normalize=args.normalize)
    if args.output:
        write_text(args.output, made.text())
    else:
        sys.stdout.write(made.text())
    note(args, f"{len(made.spec[made.key]):,} {made.key} from {args.table}"
         + (f" written to {args.output}" if args.output else "")
         + (f"; columns not used: {', '.join(made.unused)}" if made.unused else ""))
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


def cmd_schema(args) -> int:
    print(json.dumps(schema(args.kind), indent=2))
    return 0


def cmd_new(args) -> int:
    text = template(args.kind)
    if args.output:
        write_text(args.output, text)
        then = {"study": "study run", "replay": "replay"}.get(args.kind, "solve")
        print(f"wrote {args.output}; edit it, then: fairalloc {then} {args.output}",
              file=sys.stderr)
    else:
        print(text, end="")
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
            ("simulate", kind.simulation), ("replay", kind.replay)) if capability is not None)
        rows.append([kind.name, methods, checks, also, kind.summary])
    print_table(console(), ["kind", "methods (default *, exact †)", "checks", "also", "what"],
                rows)
    return 0


def cmd_examples(args) -> int:
    """List the example specs shipped in the package, or copy them into a folder."""
    chosen = examples(args.kind)
    if not chosen:
        raise UsageError("KIND", f"no examples of {args.kind!r} (kinds: "
                                 f"{', '.join(sorted({e.kind for e in examples()}))})")
    if args.copy is None:
        print_rows(f"examples in {EXAMPLES}", ["file", "kind", "name"],
                   [[e.path, e.kind, e.name] for e in chosen], args.format,
                   "fairalloc examples --copy DIR copies them (keeping their folders)")
        return 0
    try:
        written = copy_examples(args.copy, chosen, args.force)
    except FileExistsError as exc:
        raise UsageError("--copy", f"{len(exc.args[0])} file(s) exist already (--force "
                                   f"overwrites them): {', '.join(exc.args[0][:5])}"
                                   + (" ..." if len(exc.args[0]) > 5 else "")) from None
    note(args, f"{len(written)} examples copied into {args.copy}; try: fairalloc solve "
               f"{written[0]}")
    return 0
