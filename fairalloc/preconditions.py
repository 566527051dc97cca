"""Checks of a spec's preconditions that the schema cannot state (unique ids, names that
refer to each other, fractional floors): each adds a Violation at its JSON path to the list a
kind's ``from_spec`` collects, so every problem of a spec is reported at once."""

from __future__ import annotations

from collections.abc import Iterable
from itertools import repeat
from operator import itemgetter
from typing import Any

import numpy as np

from fairalloc.errors import Violations


def values_of(items: list[dict], field: str, default: Any = None) -> list:
    """``item.get(field, default)`` of every item, in one pass in C: a loop in Python over a
    million users costs a tenth of a second a field."""
    return list(map(dict.get, items, repeat(field), repeat(default)))


def numbers_of(items: list[dict], field: str, default: float) -> np.ndarray:
    """``values_of`` as a float array (as ``np.array(values, dtype=float)`` makes it), read
    without the list on the way where every value converts: half the time."""
    try:
        return np.fromiter(map(dict.get, items, repeat(field), repeat(default)), dtype=float,
                           count=len(items))
    except (TypeError, ValueError):     # a value numpy reads only from a list (None: NaN)
        return np.array(values_of(items, field, default), dtype=float)


def check_unique_ids(items: list[dict], key: str, found: Violations) -> None:
    """Ids must be unique within ``items`` (at spec key ``key``); each repeat is reported."""
    if len(set(map(itemgetter("id"), items))) == len(items):
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


def check_field_at_least(key: str, field: str, values: list, low: float,
                         found: Violations) -> None:
    """``check_at_least`` on ``values[i]``, the value of ``key[i].field``: only the values
    that numpy reads as numbers in (0, low) are looked at one by one, unless some value is
    not a number at all (then every value is)."""
    try:
        numbers = np.array(values, dtype=float)
    except (TypeError, ValueError):
        numbers = None
    if numbers is None or numbers.shape != (len(values),):
        suspects: Iterable[int] = range(len(values))
    else:
        suspects = np.flatnonzero((numbers > 0) & (numbers < low)).tolist()
    check_at_least((([key, i, field], values[i]) for i in suspects), low, found)


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
