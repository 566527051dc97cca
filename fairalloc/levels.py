"""Exact max-min over whole units by bisection on the level.

Where each participant's value is t * a_i / b_i for whole t (accelOS's weighted dominant
share, ETF's weighted energy), the fewest units reaching a level grow with it, so the levels a
budget can hold are an interval and its top is found by bisection on floats — exact, with no
MILP, no size cap and no time limit.
"""

from __future__ import annotations

import heapq
import struct
from collections.abc import Callable, Iterable

import numpy as np


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
    the user wrote. The distinct levels are a heap, each with a heap of its participants, so
    a pop costs O(log n) plus the distinct levels within ``tie`` of the lowest (usually one).

    >>> q = TiedQueue(enumerate([3 * 0.1 / 0.1, 3.0, 4.0]), 1e-12)
    >>> [q.pop() for _ in range(3)]
    [0, 1, 2]
    """

    def __init__(self, entries: Iterable[tuple[int, float]], tie: float) -> None:
        """``entries``: (participant, level) pairs, participants in increasing order."""
        self.within = 1 + tie
        self.members: dict[float, list[int]] = {}
        for i, level in entries:
            self.members.setdefault(level, []).append(i)      # in index order: a heap
        self.levels = list(self.members)
        heapq.heapify(self.levels)

    def __bool__(self) -> bool:
        return bool(self.levels)

    def push(self, level: float, i: int) -> None:
        """Participant i at ``level``."""
        same = self.members.get(level)
        if same is None:
            self.members[level] = [i]
            heapq.heappush(self.levels, level)
        else:
            heapq.heappush(same, i)

    def pop(self) -> int:
        """Remove and return the participant listed first among those within ``tie`` of the
        lowest level (levels are non-negative)."""
        levels = self.levels
        low = levels[0]
        if len(levels) > 1:
            # the second lowest level is one of the heap's next two entries
            band = low * self.within
            if levels[1] <= band or (len(levels) > 2 and levels[2] <= band):
                return self._pop_band()
        same = self.members[low]
        if len(same) == 1:
            del self.members[low]
            heapq.heappop(levels)
            return same[0]
        return heapq.heappop(same)

    def _pop_band(self) -> int:
        low = heapq.heappop(self.levels)
        band = [low]
        while self.levels and self.levels[0] <= low * self.within:
            band.append(heapq.heappop(self.levels))
        first = min(band, key=lambda level: self.members[level][0])
        i = heapq.heappop(self.members[first])
        for level in band:
            if self.members[level]:
                heapq.heappush(self.levels, level)
            else:
                del self.members[level]
        return i
