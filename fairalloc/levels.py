"""Max-min by raising a common level: over whole units by bisection, over divisible ones by
water-filling.

Where each participant's value is t * a_i / b_i for whole t (accelOS's weighted dominant
share, ETF's weighted energy), the fewest units reaching a level grow with it, so the levels a
budget can hold are an interval and its top is found by bisection on floats — exact, with no
MILP, no size cap and no time limit. Over divisible units of a Leontief market
(``fill_divisible``: DRF's progressive filling, hetero's on time), the level rises until a
resource saturates, phase by phase.
"""

from __future__ import annotations

import heapq
import struct
from collections.abc import Callable, Iterable, Iterator

import numpy as np

from fairalloc.models.leontief import TIE, Leontief


def fewest_reaching(level: float, rate: np.ndarray, scale: np.ndarray,
                    cap: np.ndarray) -> np.ndarray:
    """For each i, the fewest whole t in 0..cap_i with t * rate_i / scale_i >= ``level``
    (computed as that expression, so ties are the float keys' ties), inf where even cap_i
    falls short. The estimate ceil(level scale_i / rate_i) is corrected a unit at a time
    (exact up to 2^53).

    >>> fewest_reaching(10.0, np.array([3.0, 4.0]), np.ones(2), np.array([9.0, 2.0])).tolist()
    [4.0, inf]
    """
    def key(t):
        return t * rate / scale

    reachable = key(cap) >= level
    t = np.clip(np.ceil(level * scale / rate), 0, cap)
    while True:
        down = reachable & (t > 0) & (key(t - 1) >= level)
        up = reachable & (key(t) < level)
        if not (down.any() or up.any()):
            return np.where(reachable, t, np.inf)
        t = t - down + up


SMALLEST = 5e-324         # the smallest positive float


def float_bits(x: float) -> int:
    """The IEEE-754 bit pattern of a non-negative float as an int: ordered like the floats,
    and adjacent floats are adjacent ints."""
    return struct.unpack("<q", struct.pack("<d", x))[0]


def bits_float(bits: int) -> float:
    """The float whose bit pattern is ``bits`` (the inverse of ``float_bits``)."""
    return struct.unpack("<d", struct.pack("<q", bits))[0]


def highest_level(fits: Callable[[float], bool], lo: float, hi: float) -> float:
    """The largest float level in [lo, hi] (0 <= lo) at which ``fits`` holds, for a ``fits``
    that holds at ``lo`` and, once false, stays false above. Bisection on the bit patterns of
    the floats: at most 64 calls to ``fits``, however close to 0 the answer (halving the
    value from lo = 0 would walk ~1,075 times down through the subnormals).

    >>> highest_level(lambda level: level <= 2.5, 0.0, 10.0)
    2.5
    >>> highest_level(lambda level: level <= 5e-324, 0.0, 1.0), highest_level(
    ...     lambda level: level <= 0, 0.0, 1.0)
    (5e-324, 0.0)
    """
    if fits(hi):
        return hi
    if lo == 0 and not fits(SMALLEST):
        return 0.0          # a common answer (fewer units than participants): one call, not 64
    lo_bits, hi_bits = float_bits(abs(lo)), float_bits(hi)     # abs: -0.0 is 0
    while hi_bits - lo_bits > 1:
        mid = (lo_bits + hi_bits) // 2
        if fits(bits_float(mid)):
            lo_bits = mid
        else:
            hi_bits = mid
    return bits_float(lo_bits)


class TiedQueue:
    """Participants by level, lowest first, where levels a relative ``tie`` apart are one
    level and, within one level, the participant listed first (smallest index) comes first:
    float keys such as 3 x 0.1 / 0.1 = 3.0000000000000004 against 3.0 must not decide a tie
    the user wrote. The distinct levels are a heap, each with its participant (or a heap of
    them, when several share the level exactly), so taking one costs O(log n) plus the
    distinct levels within ``tie`` of the lowest (usually one). Iterating takes them one at a
    time (``push`` may add more meanwhile): a generator, as its frame's locals cost less than
    a method call per participant in the solvers' loops.

    >>> q = TiedQueue(enumerate([3 * 0.1 / 0.1, 3.0, 4.0]), 1e-12)
    >>> list(q)
    [0, 1, 2]
    """

    def __init__(self, entries: Iterable[tuple[int, float]], tie: float) -> None:
        """``entries``: (participant, level) pairs, participants in increasing order."""
        self.within = 1 + tie
        self.members: dict[float, int | list[int]] = {}
        self.levels: list[float] = []
        for i, level in entries:
            self.push(level, i)

    def push(self, level: float, i: int) -> None:
        """Participant i (not queued already) at ``level``."""
        same = self.members.setdefault(level, i)
        if same is i:                      # a new level (i is no other participant's index)
            heapq.heappush(self.levels, level)
        elif type(same) is list:
            heapq.heappush(same, i)
        else:
            self.members[level] = [same, i] if same < i else [i, same]

    def __iter__(self) -> Iterator[int]:
        """Take the participants one at a time: each time the one listed first among those
        within ``tie`` of the lowest level (levels are non-negative)."""
        levels, members, within = self.levels, self.members, self.within
        while levels:
            low = levels[0]
            if len(levels) > 1:
                # the second lowest level is one of the heap's next two entries
                band = low * within
                if levels[1] <= band or (len(levels) > 2 and levels[2] <= band):
                    yield self._take_from_band()
                    continue
            same = members.pop(low)
            if type(same) is not list:
                heapq.heappop(levels)
                yield same
            else:
                i = heapq.heappop(same)
                if same:
                    members[low] = same
                else:
                    heapq.heappop(levels)
                yield i

    def _first(self, level: float) -> int:
        same = self.members[level]
        return same[0] if type(same) is list else same

    def _take_from_band(self) -> int:
        levels, members = self.levels, self.members
        low = heapq.heappop(levels)
        band = [low]
        while levels and levels[0] <= low * self.within:
            band.append(heapq.heappop(levels))
        first = min(band, key=self._first)
        same = members[first]
        if type(same) is list:
            i = heapq.heappop(same)
        else:
            i, same = same, []
        if not same:
            del members[first]
            band.remove(first)
        for level in band:
            heapq.heappush(levels, level)
        return i


def fill_divisible(market: Leontief, stop: bool = False) -> np.ndarray:
    """Progressive filling of divisible tasks; returns tasks per user.

    Every growing user sits at the common level t (tasks ``t * w_i / s_i``). Within one phase the
    usage of resource d is ``base_d + sum_i c_id * min(t, tau_i)``, piecewise linear in t with
    breaks at the users' cap levels ``tau_i``; cumulative sums over users sorted by ``tau`` give the
    first level where a resource saturates in O(n log n + nD). Its users then freeze (``stop``:
    everybody freezes) and the next phase begins, so there are at most D + 1 phases.

    >>> from fairalloc.models.leontief import Leontief
    >>> m = Leontief(("A", "B"), ("cpu", "mem"), np.array([9.0, 18.0]),
    ...              np.array([[1.0, 4.0], [3.0, 1.0]]), np.ones(2), np.full(2, np.inf))
    >>> fill_divisible(m).round(9).tolist()       # Ghodsi et al.'s example: 3 and 2 tasks
    [3.0, 2.0]
    """
    n, _ = market.demand.shape
    rate = market.weights / market.dominant()        # tasks per unit of level
    tau = market.caps / rate                         # level at which a user reaches its cap
    per_level = market.demand * rate[:, None]        # usage per unit of level, (n, D)
    capacity = market.capacity
    x = np.zeros(n)
    active = np.ones(n, dtype=bool)
    level = 0.0
    while active.any():
        base = market.usage(np.where(active, 0.0, x))
        order = np.flatnonzero(active)
        order = order[np.argsort(tau[order], kind="stable")]
        tau_s, c = tau[order], per_level[order]
        k = int(np.isfinite(tau_s).sum())
        capped_use = np.vstack([np.zeros_like(capacity), np.cumsum(c[:k] * tau_s[:k, None], 0)])
        growing = c.sum(0) - np.vstack([np.zeros_like(capacity), np.cumsum(c[:k], 0)])
        at_breaks = base + capped_use[:k] + growing[:k] * tau_s[:k, None]
        # only resources still growing can saturate next: a saturated one may sit a rounding
        # error above its capacity and must not end the phase at its first break
        over = ((at_breaks >= capacity) & (growing[:k] > 0)).any(axis=1)
        j = int(np.argmax(over)) if over.any() else k
        with np.errstate(divide="ignore", invalid="ignore"):
            t_d = np.where(growing[j] > 0, (capacity - base - capped_use[j]) / growing[j], np.inf)
        t_sat = max(float(t_d.min()), level)
        if not np.isfinite(t_sat):                   # nothing saturates: all reach their caps
            x[order] = market.caps[order]
            break
        capped = order[tau_s <= t_sat]
        rest = order[tau_s > t_sat]
        x[capped] = market.caps[capped]
        if stop:
            x[rest] = t_sat * rate[rest]
            break
        hit = t_d <= t_sat * (1 + TIE)
        frozen = rest[(market.demand[rest][:, hit] > 0).any(axis=1)]
        x[frozen] = t_sat * rate[frozen]
        active[capped] = False
        active[frozen] = False
        level = t_sat
    return x
