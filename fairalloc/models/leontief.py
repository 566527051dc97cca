"""Users with Leontief preferences over divisible resources, the common ground of drf and emrf.

User i runs ``x_i`` units (DRF: tasks; EMRF: GFLOPS) and each unit needs ``demand[i, d]`` of
resource d, so a bundle ``b`` is worth ``min_d b_d / demand[i, d]`` units to i (eq. 19 in the
EMRF paper is this formula for two devices). The axioms in ``validators/axioms.py`` are stated
on this view, so they serve every kind that can be seen this way.
"""

from __future__ import annotations

import functools
from collections.abc import Callable
from dataclasses import dataclass, field
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
# relative: weighted dominant shares this close are one level (0.1 / 0.6 and 0.3 / 0.6 / 3 are
# an ulp apart), so ties go to the user listed first whatever the float rounding
TIE = 1e-12


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
        """Units each of ``users`` can run from the matching row of ``bundles`` (cap included)."""
        a = self.demand[users]
        with np.errstate(divide="ignore", invalid="ignore"):
            per = np.where(a > 0, bundles / a, np.inf)
        units = np.minimum(row_min(per), self.caps[users])
        return np.floor(units + 1e-9) if self.integral else units

    def weighted_slice(self) -> np.ndarray:
        """Units user i gets from its weighted slice w_i / sum(w) of every resource."""
        share = self.weights / self.weights.sum()
        return self.worth(np.arange(self.n), share[:, None] * self.capacity[None, :])

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

    def units(self, allocation: Allocation) -> np.ndarray:
        return np.asarray(allocation.column(self.unit_key), dtype=float)

    def bundles(self, allocation: Allocation) -> np.ndarray:
        """The resources each user holds: the bundle columns if given, else units × demand."""
        keys = [(self.bundle_key, r) for r in self.resources]
        if all(k in allocation.columns for k in keys):
            return np.column_stack([allocation.columns[k] for k in keys]).astype(float)
        return self.units(allocation)[:, None] * self.demand

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


def group_rows(rows: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """(first, label): ``rows[first[label[i]]]`` equals ``rows[i]`` exactly, classes in order of
    their smallest row bits. A 64-bit hash of each row is sorted (fast even at 10^6 rows);
    equality is then verified, and a collision falls back to sorting whole rows."""
    bits = np.ascontiguousarray(rows).view(np.uint64).reshape(len(rows), -1)
    h = bits[:, 0].copy()
    for d in range(1, bits.shape[1]):
        h = h * np.uint64(0x9E3779B97F4A7C15) + bits[:, d]
    _, first, label = np.unique(h, return_index=True, return_inverse=True)
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
