"""Users with Leontief preferences over divisible resources, the common ground of drf and emrf.

User i runs ``x_i`` units (DRF: tasks; EMRF: GFLOPS) and each unit needs ``demand[i, d]`` of
resource d, so a bundle ``b`` is worth ``min_d b_d / demand[i, d]`` units to i (eq. 19 in the
EMRF paper is this formula for two devices). The checks in ``checks/leontief.py`` are stated
on this view, so they serve every kind that can be seen this way.
"""

from __future__ import annotations

import functools
from collections.abc import Callable
from dataclasses import dataclass, field, replace
from typing import TypeVar

import numpy as np

from fairalloc.allocation import Allocation, Key, read_allocation
from fairalloc.errors import Violations
from fairalloc.preconditions import (
    check_at_least,
    check_field_at_least,
    numbers_of,
    values_of,
)

T = TypeVar("T")

SMALLEST_CAPACITY = 1e-6    # with capacities <= 1e12 and weights in 1e-6..1e6 (the schemas'
SMALLEST_WEIGHT = 1e-6      # maxima) the LPs' numbers stay well scaled for HiGHS
LARGEST_CAPACITY = 1e12     # of a capacity and of a demand per task
LARGEST_WEIGHT = 1e6
# The kind's tolerances (drf and emrf): their solvers and checks import them from here.
# relative: weighted dominant shares this close are one level (0.1 / 0.6 and 0.3 / 0.6 / 3 are
# an ulp apart), so ties go to the user listed first whatever the float rounding; and a task
# that fills a resource to within this share of its capacity fits
TIE = 1e-12
# relative to the amount compared or its natural size, whichever is larger (a resource's
# capacity; for a user's units ``checks.leontief.unit_scale``): what the checks accept. LP
# solutions are accurate to about 1e-9; no tolerance is absolute, so scaling a spec by any
# factor keeps its verdicts
RTOL = 1e-7
# whole tasks: a count within this of an integer is that integer, and a task fits the room left
# within this share of a capacity (sums of whole tasks carry float noise, never a task's worth)
WHOLE = 1e-9
# relative to the round's largest dual (or reduced cost): one above this share is a bottleneck,
# below it HiGHS's noise
DUAL = 1e-9
# absolute, in level per share of a capacity: a capacity row whose dual is above this binds
# (rows in shares of capacity: a non-binding row's dual is 0 up to HiGHS's ~1e-15 noise)
BINDING_DUAL = 1e-12


def check_leontief_floors(data: dict, found: Violations) -> None:
    """Capacities and weights of a drf or emrf spec at least their floors."""
    check_at_least(((["capacity", r], v) for r, v in data["capacity"].items()),
                   SMALLEST_CAPACITY, found)
    check_field_at_least("users", "weight", values_of(data["users"], "weight", 1.0),
                         SMALLEST_WEIGHT, found)


def leontief_rows(users: list[dict], field: str, names: tuple[str, ...]) -> np.ndarray:
    """The users' ``field`` objects (name -> amount) as rows of an array, one column per name
    (0 where a user names none), built a column at a time."""
    given = values_of(users, field)
    return np.column_stack([numbers_of(given, name, 0.0) for name in names])


def row_max(a: np.ndarray) -> np.ndarray:
    """max over each row; column by column, which is several times faster than ``a.max(1)``
    for the few columns (resources) fairalloc's arrays have."""
    return functools.reduce(np.maximum, a.T) if a.shape[1] else np.zeros(len(a))


def row_min(a: np.ndarray) -> np.ndarray:
    return functools.reduce(np.minimum, a.T) if a.shape[1] else np.full(len(a), np.inf)


def row_all(a: np.ndarray) -> np.ndarray:
    """Each row of a boolean array all true, column by column (as ``row_max``)."""
    return functools.reduce(np.logical_and, a.T) if a.shape[1] else np.ones(len(a), bool)


def per_market(fn: Callable[[Leontief], T]) -> Callable[[Leontief], T]:
    """Compute ``fn(market)`` once per market (markets are immutable; results are read-only)."""

    @functools.wraps(fn)
    def once(m: Leontief) -> T:
        if fn.__qualname__ not in m.memo:
            m.memo[fn.__qualname__] = fn(m)
        return m.memo[fn.__qualname__]

    return once


@dataclass(frozen=True)
class Classes:
    """Users grouped by the direction of their demand vector (identical after scaling).

    ``label[i]`` is user i's class, ``first[c]`` its first member, ``direction[c]`` the class's
    demand per unit of dominant share (so ``demand[i] = dominant[i] * direction[label[i]]``).
    """

    label: np.ndarray
    first: np.ndarray
    direction: np.ndarray

    @property
    def count(self) -> int:
        return len(self.direction)


@dataclass(frozen=True, eq=False)
class Leontief:
    """n users, D divisible resources; ``caps[i]`` bounds user i's units (``inf`` for none)."""

    ids: tuple[str, ...]
    resources: tuple[str, ...]
    capacity: np.ndarray
    demand: np.ndarray
    weights: np.ndarray
    caps: np.ndarray
    integral: bool = False
    unit_key: str = "units"
    bundle_key: str = "resources"
    memo: dict = field(default_factory=dict, init=False, repr=False, compare=False)

    @property
    def n(self) -> int:
        return len(self.ids)

    def dominant(self) -> np.ndarray:
        """Dominant share of one unit for each user: max_d demand[i, d] / capacity[d] (eq. 5)."""
        return dominant_share(self)

    def weighted_levels(self, x: np.ndarray) -> np.ndarray:
        """Weighted dominant share of each user: x_i * s_i / w_i (eq. 5-6 of the EMRF paper)."""
        return x * self.dominant() / self.weights

    def usage(self, x: np.ndarray) -> np.ndarray:
        """Amount of each resource that ``x`` units per user consume."""
        return x @ self.demand

    def worth(self, users: np.ndarray, bundles: np.ndarray) -> np.ndarray:
        """Units each of ``users`` can run from the matching row of ``bundles`` (cap included).
        Resource by resource on columns: the arrays are narrow, so a column is the long axis."""
        everyone = len(users) == self.n and bool((users == np.arange(self.n)).all())
        a = demand_columns(self) if everyone else self.demand[users].T
        units = self.caps if everyone else self.caps[users]
        with np.errstate(divide="ignore", invalid="ignore"):
            for d, need in enumerate(a):
                units = np.minimum(units, np.where(need > 0, bundles[:, d] / need, np.inf))
        return np.floor(units + WHOLE) if self.integral else units

    def weighted_slice(self) -> np.ndarray:
        """Units user i gets from its weighted slice w_i / sum(w) of every resource."""
        share = self.weights / self.weights.sum()
        # min_d share C_d / a_id = share / s_i: the dominant resource binds
        units = np.minimum(self.caps, share / self.dominant())
        return np.floor(units + WHOLE) if self.integral else units

    def classes(self) -> Classes:
        """Group users whose demand vectors point the same way (exact float comparison)."""
        return demand_classes(self)

    def allocation(self, x: np.ndarray, extra: dict[Key, np.ndarray] | None = None) -> Allocation:
        """The result-format allocation of ``x`` units per user: units, then the bundle."""
        columns: dict[Key, np.ndarray] = {(self.unit_key,): x}
        columns.update(extra or {})
        for d, name in enumerate(self.resources):
            columns[(self.bundle_key, name)] = x * self.demand[:, d]
        return Allocation(self.ids, columns)

    def with_demand(self, i: int, row: np.ndarray) -> Leontief:
        """The market with user i demanding ``row`` (a probe's misreport). What this market
        worked out that one user's change updates in O(n), its dominant shares and demand
        classes, is carried over rather than recomputed (classes take a sort of all n)."""
        demand = self.demand.copy()
        demand[i] = row
        out = replace(self, demand=demand)
        old = self.memo.get(dominant_share.__qualname__)
        if old is not None:
            dominant = old.copy()
            dominant[i] = (row / self.capacity).max()
            dominant.flags.writeable = False
            out.memo[dominant_share.__qualname__] = dominant
            classes = self.memo.get(demand_classes.__qualname__)
            moved = None if classes is None else moved_classes(classes, i, row / dominant[i])
            if moved is not None:
                out.memo[demand_classes.__qualname__] = moved
        return out

    def units(self, allocation: Allocation) -> np.ndarray:
        return np.asarray(allocation.column(self.unit_key), dtype=float)

    def bundles(self, allocation: Allocation) -> np.ndarray:
        """The resources each user holds, (n, D) in column order (Fortran): the bundle columns
        if given, else units × demand. Checks reduce it along each axis, and a row of a narrow
        C-ordered array is 30-100x slower to reduce than a contiguous column (1 ms against
        0.03 ms for a sum over 1e5 users)."""
        keys = [(self.bundle_key, r) for r in self.resources]
        if all(k in allocation.columns for k in keys):
            return np.array([allocation.columns[k] for k in keys], dtype=float).T
        return np.asfortranarray(self.units(allocation)[:, None] * self.demand)

    def bundle_of(self, allocation: Allocation, i: int) -> np.ndarray:
        """User i's bundle alone (what ``bundles(allocation)[i]`` is, without the rest)."""
        keys = [(self.bundle_key, r) for r in self.resources]
        if all(k in allocation.columns for k in keys):
            return np.array([allocation.columns[k][i] for k in keys], dtype=float)
        return self.units(allocation)[i] * self.demand[i]

    def read(self, data, keys: tuple[Key, ...],
             derived: Callable[[np.ndarray], dict[Key, np.ndarray]]) -> Allocation:
        """Read an external allocation: units required, the bundle allowed (a user may hold
        more than its units use), and ``keys``, the columns ``derived(units)`` computes,
        allowed when they agree with it."""
        bundle = tuple((self.bundle_key, r) for r in self.resources)
        return read_allocation(data, self.ids, [(self.unit_key,)], bundle + keys,
                               derived=lambda read: derived(self.units(read)))


def utilization(m: Leontief, allocation: Allocation) -> dict[str, float]:
    """Fraction of each resource held by the users: ``utilization.<resource>``."""
    used = m.bundles(allocation).sum(axis=0) / m.capacity
    return {f"utilization.{r}": float(u) for r, u in zip(m.resources, used)}


@per_market
def dominant_share(m: Leontief) -> np.ndarray:
    out = row_max(m.demand / m.capacity)
    out.flags.writeable = False
    return out


@per_market
def demand_columns(m: Leontief) -> np.ndarray:
    """The demand matrix transposed and contiguous: row d is every user's need of resource d."""
    out = np.ascontiguousarray(m.demand.T)
    out.flags.writeable = False
    return out


def row_hash(rows: np.ndarray) -> np.ndarray:
    """A 64-bit hash of each row's bits (``group_rows`` orders classes by it)."""
    bits = np.ascontiguousarray(rows).view(np.uint64).reshape(len(rows), -1)
    h = bits[:, 0].copy()
    for d in range(1, bits.shape[1]):
        h = h * np.uint64(0x9E3779B97F4A7C15) + bits[:, d]
    return h


def group_rows(rows: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """(first, label): ``rows[first[label[i]]]`` equals ``rows[i]`` exactly, classes in order of
    their smallest row bits. A 64-bit hash of each row is sorted (fast even at 10^6 rows);
    equality is then verified, and a collision falls back to sorting whole rows."""
    bits = np.ascontiguousarray(rows).view(np.uint64).reshape(len(rows), -1)
    _, first, label = np.unique(row_hash(rows), return_index=True, return_inverse=True)
    label = label.ravel()
    if not np.array_equal(rows[first][label], rows):
        void = bits.view(np.dtype((np.void, 8 * bits.shape[1]))).ravel()
        _, first, label = np.unique(void, return_index=True, return_inverse=True)
        label = label.ravel()
    return first, label


@per_market
def demand_classes(m: Leontief) -> Classes:
    direction = m.demand / m.dominant()[:, None]
    first, label = group_rows(direction)
    return Classes(label=label, first=first, direction=direction[first])


def moved_classes(classes: Classes, i: int, direction: np.ndarray) -> Classes | None:
    """``classes`` after user i's demand direction becomes ``direction``: what
    ``demand_classes`` of the changed market gives, in O(n) with no sort (a probe's re-solve
    changes one user). None when a fresh grouping might order them otherwise (a hash
    collision, which sends ``group_rows`` to its slower path)."""
    hashes = row_hash(classes.direction)
    h = row_hash(direction[None, :])[0]
    at = int(np.searchsorted(hashes, h))
    known = at < len(hashes) and hashes[at] == h
    if (hashes[1:] <= hashes[:-1]).any() or (known and not np.array_equal(
            classes.direction[at], direction)):
        return None
    label, first, rows = classes.label.copy(), classes.first.copy(), classes.direction
    old = int(label[i])
    if not known:                                    # a new class, in its hash's place
        label[label >= at] += 1
        first = np.insert(first, at, i)
        rows = np.insert(rows, at, direction, axis=0)
        old += old >= at
    label[i] = at
    first[at] = min(first[at], i)
    if old != at:
        members = np.flatnonzero(label == old)
        if members.size:
            first[old] = members[0]
        else:                                        # i was its class's only member
            first, rows = np.delete(first, old), np.delete(rows, old, axis=0)
            label[label > old] -= 1
    return Classes(label=label, first=first, direction=rows)
