"""The one-pass yardstick of issue 24: read a spec with orjson and write, to standard output, a
result-sized JSON object with one entry of ``COLUMNS`` numbers per user, also with orjson.

It is what any command that reads the spec and writes its allocation must at least pay (Python
start, the parse, one object per user, the serialisation), so ``fairalloc solve`` is measured
against it: ``bench_cli.py`` runs both as subprocesses on the same spec.

    python benchmarks/yardstick.py SPEC COLUMNS > OUT
"""

from __future__ import annotations

import sys

import orjson


def rows(users: list[dict], columns: int) -> dict[str, dict[str, float]]:
    """One entry per user of ``columns`` full-precision numbers drawn from its weight (numbers
    as long as a solved allocation's)."""
    names = [f"c{j}" for j in range(columns)]
    return {u["id"]: {name: u.get("weight", 1.0) / (j + 3) for j, name in enumerate(names)}
            for u in users}


def main(argv: list[str]) -> int:
    path, columns = argv[0], int(argv[1])
    with open(path, "rb") as fh:
        spec = orjson.loads(fh.read())
    out = {"name": spec.get("name"), "problem": spec["problem"],
           "allocation": rows(spec["users"], columns)}
    sys.stdout.buffer.write(orjson.dumps(out, option=orjson.OPT_INDENT_2))
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
