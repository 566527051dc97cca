"""The failures a user can meet: a bad spec or input file (exit 2), solver trouble (exit 1),
an output that could not be written (exit 1) and a study store that cannot serve a request
(exit 2)."""

from __future__ import annotations

import json
import re
from collections.abc import Iterable
from dataclasses import dataclass

_IDENTIFIER = re.compile(r"^[A-Za-z_][A-Za-z0-9_-]*$")


def json_path(parts: Iterable[str | int]) -> str:
    """Render a JSON location the way users read it: ``users[1].split.cpu``; ``$`` is the root.

    >>> json_path(["users", 1, "split", "cpu"])
    'users[1].split.cpu'
    >>> json_path(["capacity", "gpu 0"])
    'capacity["gpu 0"]'
    >>> json_path([])
    '$'

    A key longer than ``PART_SHOWN`` characters is cut, and text that is not Unicode (a lone
    surrogate) is escaped, so that a path can always be printed:

    >>> print(json_path(["users", 0, "x" * 100, chr(0xD800)]))
    users[0].xxxxxxxxxxxxxxxxxxxxxxxxxxxxxx…["\\ud800"]
    """
    out = ""
    for part in parts:
        if isinstance(part, int):
            out += f"[{part}]"
            continue
        part = part if len(part) <= PART_SHOWN else part[:30] + "…"
        if _IDENTIFIER.match(part.rstrip("…")):
            out += f".{part}" if out else part
        else:
            # escaped unless printable: a lone surrogate, a control or a line break (U+0085,
            # U+2028) would break the line or the print
            out += f"[{json.dumps(part, ensure_ascii=not part.isprintable())}]"
    return out or "$"


PART_SHOWN = 40


def is_unicode(text: str) -> bool:
    try:
        text.encode("utf-8")
    except UnicodeEncodeError:
        return False
    return True


@dataclass(frozen=True)
class Violation:
    """One broken rule at one place in the spec."""

    path: str
    rule: str

    def __str__(self) -> str:
        rule = self.rule if len(self.rule) <= RULE_SHOWN else self.rule[:RULE_SHOWN - 1] + "…"
        return one_line(f"{self.path}: {rule}")


RULE_SHOWN = 300     # characters of a rule printed: a rule may quote a user's (long) value
LINE_BREAKS = {c: f"\\u{ord(c):04x}" if ord(c) > 0xFF else f"\\x{ord(c):02x}"
               for c in "\n\r\x0b\x0c\x1c\x1d\x1e\x85\u2028\u2029"}


def one_line(text: str) -> str:
    """``text`` with every character that ends a line (for ``str.splitlines``: CR, LF, U+0085,
    U+2028, ...) escaped, so that a problem quoting a user's text stays one line.

    >>> print(one_line("a\\x85b\\nc"))
    a\\x85b\\x0ac
    """
    return text.translate(str.maketrans(LINE_BREAKS))


class SpecError(Exception):
    """A spec that breaks its schema or its model's preconditions; carries every violation found."""

    def __init__(self, violations: list[Violation], source: str | None = None,
                 what: str = "spec"):
        self.violations = violations
        self.source = source
        self.what = what
        super().__init__(self.report())

    def report(self) -> str:
        where = f"{self.source}: " if self.source else ""
        n = len(self.violations)
        lines = [f"{where}invalid {self.what} ({n} problem{'s' if n != 1 else ''})"]
        lines += [f"  {v}" for v in self.violations]
        return "\n".join(lines)


class Violations:
    """Collects violations while a spec is checked, so that all of them are reported at once."""

    def __init__(self) -> None:
        self.items: list[Violation] = []

    def add(self, path: Iterable[str | int] | str, rule: str) -> None:
        self.items.append(Violation(path if isinstance(path, str) else json_path(path), rule))

    def __bool__(self) -> bool:
        return bool(self.items)

    def raise_if_any(self, source: str | None = None) -> None:
        if self.items:
            raise SpecError(self.items, source)


class SolverError(Exception):
    """The solver could not produce an allocation (a status we cannot map, or a crash)."""


class ArgumentError(ValueError):
    """An argument of an API function that cannot be used, named as the function names it
    (the command line names its flag instead): exit 2."""

    def __init__(self, argument: str, rule: str):
        self.argument, self.rule = argument, rule
        super().__init__(f"{argument}: {rule}")


class InputRefused(Exception):
    """An input file that is not read: a device or folder, or larger than fairalloc reads
    (exit 2, as a bad spec)."""

    def __init__(self, path: str, rule: str):
        self.path, self.rule = path, rule
        super().__init__(f"{path}: {rule}")


class OutputError(Exception):
    """An output that could not be written (a full disk, a read-only folder); the old file, if
    any, is left as it was (exit 1: the command was right, its surroundings failed)."""

    def __init__(self, path: str, reason: str):
        self.path, self.reason = path, reason
        super().__init__(f"cannot write {path}: {reason}")
class StoreError(Exception):
    """A study store that cannot serve the request (exit 2): not a fairalloc store (a foreign,
    damaged or truncated file), a study already in it or changed since it ran, no such study
    or instance."""


def interrupted_query(exc: BaseException) -> bool:
    """Whether ``exc`` is Ctrl-C as DuckDB raises it mid-query: a plain ``RuntimeError``
    "Query interrupted" (DuckDB 1.x-2.x catches SIGINT while a query runs), not a
    ``KeyboardInterrupt``.

    >>> interrupted_query(RuntimeError("Query interrupted")), interrupted_query(OSError("x"))
    (True, False)
    """
    return isinstance(exc, RuntimeError) and str(exc) == "Query interrupted"
