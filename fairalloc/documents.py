"""The sorts of JSON document fairalloc reads, told apart by their top-level key: a spec
(``problem``), a replay document (``replay``) and a study (``study``). A document given where
another sort is read is refused in one line saying what it is and which command reads it,
rather than with every key the expected sort lacks."""

from __future__ import annotations

import shlex
from typing import Any, NamedTuple

from fairalloc.errors import SpecError, Violation


class Sort(NamedTuple):
    """A sort of document: its name in errors (``invalid spec``), as a reader calls it, and
    the command that reads it."""

    what: str
    called: str
    command: str


SORTS = {"problem": Sort("spec", "a spec", "fairalloc solve"),
         "replay": Sort("replay", "a replay document", "fairalloc replay"),
         "study": Sort("study", "a study", "fairalloc study run")}


def sort_keys(data: Any) -> list[str]:
    """The keys naming a sort (``problem``, ``replay``, ``study``) that parsed document
    ``data`` has: none when it is not an object."""
    return [key for key in SORTS if key in data] if isinstance(data, dict) else []


def sort_of(data: Any) -> str | None:
    """The key naming the sort of parsed document ``data`` (``problem``, ``replay`` or
    ``study``); None when it is not an object or has none of them, or several."""
    keys = sort_keys(data)
    return keys[0] if len(keys) == 1 else None


class WrongDocument(SpecError):
    """A document of another sort than the command reads (exit 2, as a bad spec): one line
    naming the file, what it is and the command to run instead."""

    def report(self) -> str:
        where = f"{self.source}: " if self.source else ""
        return f"{where}{self.violations[0].rule}"


def refuse_other_sort(data: Any, accepted: tuple[str, ...], source: str | None) -> None:
    """Raise :class:`WrongDocument` when ``data`` is of a sort (``sort_of``) other than the
    ``accepted`` keys' (``("problem",)`` where a spec is read) or of several sorts at once
    (``problem`` and ``replay``: no reader's schema fits it); any other document, right or
    malformed, is left to its reader's checks."""
    keys = sort_keys(data)
    if len(keys) > 1:
        named = ", ".join(f"\"{k}\"" for k in keys[:-1]) + f" and \"{keys[-1]}\""
        rule = (f"the keys {named} together: a document is "
                f"{' or '.join(SORTS[k].called for k in keys)}, never "
                f"{'both' if len(keys) == 2 else 'several'}")
        raise WrongDocument([Violation("$", rule)], source, SORTS[accepted[0]].what)
    key = sort_of(data)
    if key is None or key in accepted:
        return
    found = SORTS[key]
    expected = " or ".join(SORTS[k].called for k in accepted)
    file = "FILE" if source is None else "-" if source == "<stdin>" else shlex.quote(source)
    rule = (f"{found.called} (key \"{key}\"), not {expected}: run "
            f"\"{found.command} {file}\"")
    raise WrongDocument([Violation("$", rule)], source, SORTS[accepted[0]].what)
