"""The one-pass yardstick of issue 24: read a spec with orjson and write to standard output,
also with orjson, a JSON object of about ``BYTES`` bytes with one entry of numbers per user.

It is what any command that reads the spec and writes its allocation must at least pay (Python
start, the parse, one object per user, the text of the output), so ``fairalloc solve`` is
measured against it: ``bench_cli.py`` runs both as subprocesses on the same spec, ``BYTES``
the size of the command's output.

    python benchmarks/yardstick.py SPEC BYTES > OUT
"""

from __future__ import annotations

import math
import sys

import orjson


def row(user: dict, columns: int) -> dict[str, float]:
    """``columns`` full-precision numbers made from the user's weight (as long as a solved
    allocation's numbers)."""
    weight = user.get("weight", 1.0)
    return {f"c{j}": weight * (j + math.pi) for j in range(columns)}


def columns_for(users: list[dict], size: int) -> int:
    """How many numbers per user make the output about ``size`` bytes: the text of the first
    users' entries with one and with two numbers gives the cost of the entry and of a number."""
    sample = users[:100]
    one, two = (len(orjson.dumps({"allocation": {u["id"]: row(u, c) for u in sample}},
                                 option=orjson.OPT_INDENT_2)) / len(sample) for c in (1, 2))
    return max(1, round((size / max(len(users), 1) - one) / (two - one)) + 1)


def main(argv: list[str]) -> int:
    path, size = argv[0], int(argv[1])
    with open(path, "rb") as fh:
        spec = orjson.loads(fh.read())
    users = spec["users"]
    columns = columns_for(users, size)
    out = {"name": spec.get("name"), "problem": spec["problem"],
           "allocation": {u["id"]: row(u, columns) for u in users}}
    sys.stdout.buffer.write(orjson.dumps(out, option=orjson.OPT_INDENT_2))
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
