"""Checks of a spec's preconditions that the schema cannot state (unique ids, names that
refer to each other, fractional floors): each adds a Violation at its JSON path to the list a
kind's ``from_spec`` collects, so every problem of a spec is reported at once."""

from __future__ import annotations

from collections.abc import Iterable

from fairalloc.errors import Violations


def check_unique_ids(items: list[dict], key: str, found: Violations) -> None:
    """Ids must be unique within ``items`` (at spec key ``key``); each repeat is reported."""
    if len({item["id"] for item in items}) == len(items):
        return
    first: dict[str, int] = {}
    for i, item in enumerate(items):
        uid = item["id"]
        if uid in first:
            found.add([key, i, "id"], f"duplicate id {uid!r} (first at {key}[{first[uid]}])")
        else:
            first[uid] = i


def check_at_least(values: Iterable[tuple[list, float]], low: float, found: Violations) -> None:
    """Each positive (path, value) at least ``low`` (the schema says "> 0"; this floor is not
    there because jsonschema-rs takes ~5x longer over every item of a large spec for a
    fractional bound than for an integer one)."""
    for path, value in values:
        if isinstance(value, (int, float)) and 0 < value < low:
            found.add(path, f"must be >= {low:g}")


def check_names(items: list[dict], key: str, field: str, known: tuple[str, ...], what: str,
                found: Violations) -> None:
    """Every name used in ``items[i][field]`` must be one of ``known`` (e.g. a resource)."""
    allowed = set(known)
    if set().union(*(item[field] for item in items)) <= allowed:
        return
    for i, item in enumerate(items):
        for name in item[field]:
            if name not in allowed:
                found.add([key, i, field, name], f"unknown {what} (known: {', '.join(known)})")
