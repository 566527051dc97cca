"""accelOS (Margiolas & O'Boyle, paper 002, section 3): work groups of concurrent kernels.

K kernels share a device of T hardware threads, L bytes of local memory and R registers.
Kernel i runs work groups of w_i threads, each using m_i bytes of local memory and w_i r_i
registers (r_i registers per thread: the paper's "register usage of a work group" is w_i r_i);
its NDRange has N_i groups. accelOS keeps n_i of them resident (1 <= n_i <= N_i) and feeds them
the rest as virtual groups, so the question is n_i.

Per-group demand d_i = (w_i, m_i, w_i r_i) on capacity C = (T, L, R). The *weighted dominant
share* of kernel i is ``n_i * max_r(d_ir / C_r) / s_i`` (s_i its share weight): the quantity
the paper's three "minimise the difference" objectives equalise at once, and what fairalloc
equalises.

The paper does not number its equations; fairalloc numbers them in order of appearance and
cites them so ("eq. N in the accelOS paper"). Section 3: (1) sum_i x_i w_i <= T,
(2) min |x_i w_i - x_j w_j|, (3) sum_i y_i m_i <= L, (4) min |y_i m_i - y_j m_j|,
(5) sum_i z_i r_i <= R, (6) min |z_i r_i - z_j r_j|, (7) x_i = T / (K w_i), y_i = L / (K m_i),
z_i = R / (K r_i), (8) n_i = min(x_i, y_i, z_i). Section 7.4: (9) IS_i = T(s)_i / T(a)_i,
(10) U = max IS / min IS, (11) fairness improvement U_baseline / U_X, (12) overlap
O = T(c) / T(t), (13) throughput speedup T_baseline / T_X.

Interpretation choices (the paper leaves them open):

* capacities are device totals (compute units x per-unit limit); packing groups into compute
  units is not modelled, as in the paper's equations;
* weighted: x_i = T s_i / (S w_i) with S = sum_k s_k (equal shares: eq. 7's T / (K w_i)), and
  a resource a kernel does not use does not bound it;
* every kernel keeps at least one group: a kernel whose share rounds down to 0 groups gets one,
  and the others take their shares s_i / S of what is left (iterated; see ``equal_split``); the
  spec must let one group of every kernel fit at once;
* execution (``execute``): each kernel has a ``time_per_group``; a work group runs for that
  long, so n resident groups finish N groups in ceil(N / n) waves. accelOS's n_i groups are
  persistent (section 2.5: a kernel cannot take resources others free); under standard OpenCL
  the hardware dispatches groups in launch order as resources free up, so the kernel launched
  first takes the device and later ones wait (figures 1a and 3a).

Figure 3: 4 compute units that hold one 256-thread group each, A has 12 groups and B 8:

>>> p = AccelosProblem.from_spec({"device": {"threads": 1024, "local_memory": 1,
...     "registers": 1}, "kernels": [{"id": "A", "work_group_size": 256, "work_groups": 12},
...     {"id": "B", "work_group_size": 256, "work_groups": 8}]}, Violations())
>>> equal_split(p).tolist()                 # eq. 7: x_i = T / (K w_i) = 2
[2, 2]
>>> fcfs_counts(p).tolist()                 # figure 3a: A takes every compute unit
[4, 0]
>>> run = execute(p)                        # standard OpenCL: A in 3 waves, then B in 2
>>> run.start.tolist(), run.finish.tolist()
([0.0, 3.0], [3.0, 5.0])
>>> execute(p, equal_split(p)).finish.tolist()     # figure 3b: 6 and 4 waves, side by side
[6.0, 4.0]
"""

from __future__ import annotations

import bisect
import functools
import heapq
import math
from collections.abc import Iterator
from dataclasses import dataclass
from fractions import Fraction

import numpy as np

from fairalloc import levels
from fairalloc.allocation import Allocation, read_allocation
from fairalloc.errors import Violations
from fairalloc.levels import highest_level
from fairalloc.models.program import MatrixProgram
from fairalloc.preconditions import check_unique_ids

RESOURCES = ("threads", "local_memory", "registers")
SPEC_KEY = {"threads": "work_group_size", "local_memory": "local_memory_per_group",
            "registers": "registers_per_thread"}
# The kind's tolerance (its checks import it; the methods compare exactly, ties in spec order):
# relative to the quantity compared: a group count within this share of a whole number is it
# (float quotients of demands), and a dominant share within this of the max-min meets it
RTOL = 1e-9
# above this many distinct per-group demands the dispatcher's walk first picks those that fit
# with numpy; below, it checks each waiting demand in turn (numpy's per-call overhead would
# dominate)
MANY_DEMANDS = 32


@dataclass(frozen=True, eq=False)
class AccelosProblem:
    """The device capacities C = (T, L, R) and the kernels: per-group demand (K x 3), NDRange
    N_i, share s_i and time per group."""

    ids: tuple[str, ...]
    capacity: np.ndarray          # (3,) T, L, R
    demand: np.ndarray            # (K, 3) w_i, m_i, w_i r_i per work group
    groups: np.ndarray            # (K,) N_i
    share: np.ndarray             # (K,) s_i
    time_per_group: np.ndarray    # (K,)

    @property
    def kernel_count(self) -> int:
        return len(self.ids)

    @classmethod
    def from_spec(cls, data: dict, found: Violations) -> AccelosProblem | None:
        """Build from a schema-valid spec, adding a violation for each broken precondition:
        duplicate ids, a kernel one of whose groups exceeds the device (naming the resource),
        and kernels that cannot all keep one group resident at once."""
        kernels = data["kernels"]
        check_unique_ids(kernels, "kernels", found)
        device = data["device"]
        capacity = np.array([device[r] for r in RESOURCES], dtype=float)
        w = np.array([k["work_group_size"] for k in kernels], dtype=float)
        demand = np.column_stack([
            w,
            np.array([k.get("local_memory_per_group", 0) for k in kernels], dtype=float),
            w * np.array([k.get("registers_per_thread", 0) for k in kernels], dtype=float),
        ])
        units = {"threads": "threads", "local_memory": "bytes of local memory",
                 "registers": "registers"}
        for i, r in zip(*np.nonzero(demand > capacity)):
            name = RESOURCES[r]
            found.add(["kernels", int(i), SPEC_KEY[name]],
                      f"one work group needs {demand[i, r]:.0f} {units[name]}, the device has "
                      f"{capacity[r]:.0f}: kernel {kernels[i]['id']!r} cannot fit a single group")
        if not found:
            together = demand.sum(axis=0)
            for r in np.flatnonzero(together > capacity):
                found.add(["kernels"], f"one work group of every kernel needs "
                          f"{together[r]:.0f} {units[RESOURCES[r]]} together, the device has "
                          f"{capacity[r]:.0f} (every kernel keeps at least one group resident)")
        if found:
            return None
        return cls(
            ids=tuple(k["id"] for k in kernels),
            capacity=capacity,
            demand=demand,
            groups=np.array([k["work_groups"] for k in kernels], dtype=float),
            share=np.array([k.get("share", 1.0) for k in kernels], dtype=float),
            time_per_group=np.array([k.get("time_per_group", 1.0) for k in kernels], dtype=float),
        )

    def allocation(self, counts: np.ndarray) -> Allocation:
        """Result-format allocation: work groups n_i and the threads, local memory and registers
        they hold (n_i d_i)."""
        n = np.asarray(counts, dtype=np.int64)
        return Allocation(self.ids, {("work_groups",): n,
                                     **{(r,): n * self.demand[:, j].astype(np.int64)
                                        for j, r in enumerate(RESOURCES)}})

    def read_allocation(self, data) -> Allocation:
        return read_allocation(data, self.ids, [("work_groups",)], [(r,) for r in RESOURCES])


def dominant_per_group(p: AccelosProblem) -> np.ndarray:
    """max_r d_ir / C_r: the dominant share one work group of kernel i takes."""
    return (p.demand / p.capacity).max(axis=1)


def share_key(n, dominant, share):
    """Weighted dominant share n * dominant / share, computed one way everywhere (greedy order,
    ILP bounds, metrics) so that ties are the same ties."""
    return n * dominant / share


def first_reaching(level: float, dominant: float, share: float, lo: int,
                   strict: bool = False) -> int:
    """The smallest whole t >= lo with share_key(t) >= level (> level if ``strict``), from the
    estimate level * share / dominant corrected against the exact float keys."""
    def reached(t: int) -> bool:
        key = share_key(t, dominant, share)
        return key > level if strict else key >= level

    t = max(lo, math.floor(level * share / dominant))
    while not reached(t):
        t += 1
    while t > lo and reached(t - 1):
        t -= 1
    return t


def weighted_dominant_share(p: AccelosProblem, counts: np.ndarray) -> np.ndarray:
    return share_key(np.asarray(counts, dtype=float), dominant_per_group(p), p.share)


def used(p: AccelosProblem, counts: np.ndarray) -> np.ndarray:
    """Threads, local memory and registers held: sum_i n_i d_i (the left sides of eq. 1, 3 and
    5 in the accelOS paper)."""
    return np.asarray(counts, dtype=float) @ p.demand


def most_groups(demand: np.ndarray, free: np.ndarray) -> np.ndarray:
    """For each row of ``demand``, how many groups fit in ``free``: min_r floor(free_r / d_r)
    over the resources it uses. All amounts are whole numbers (below 2^53), so floor division
    is exact."""
    with np.errstate(divide="ignore", invalid="ignore"):
        per = np.where(demand > 0, free // np.where(demand > 0, demand, 1.0), np.inf)
    return per.min(axis=-1)


def groups_that_fit(demand: list[float], free: list[float]) -> float:
    """``most_groups`` for one kernel on Python floats (the greedy's hot path: numpy's
    per-call overhead would dominate; ``dispatch`` inlines it for its three resources)."""
    return min((f // d for f, d in zip(free, demand) if d > 0), default=math.inf)


def equal_split(p: AccelosProblem, resources: tuple[int, ...] = (0, 1, 2)) -> np.ndarray:
    """Section 3's groups per kernel: x_i = T/(K w_i), y_i = L/(K m_i), z_i = R/(K r_i) rounded
    down (eq. 7 in the accelOS paper; a resource a kernel does not use does not bound it),
    weighted by share (K -> S / s_i), n_i = min(x_i, y_i, z_i) (eq. 8), capped at N_i and at
    least 1.

    A kernel whose share rounds down to 0 groups keeps one; as its group takes more than its
    share, the others' shares s_i / S are taken of what those groups leave, and the step
    repeats until no share rounds to 0. Without such kernels this is eq. 7-8 exactly; the
    result always fits the device (the spec guarantees one group of every kernel fits), and
    what it leaves goes to the greedy.
    ``resources`` selects which of (threads, local memory, registers) count:
    ``(0,)`` is the paper's thread-only rule.
    """
    cols = list(resources)
    demand, capacity = p.demand[:, cols], p.capacity[cols]
    pinned = np.zeros(p.kernel_count, dtype=bool)
    while not pinned.all():
        free = capacity - demand[pinned].sum(axis=0)
        n = most_groups(demand, free * p.share[:, None] / p.share.sum())
        newly = ~pinned & (n < 1)
        if not newly.any():
            return np.where(pinned, 1, np.minimum(n, p.groups)).astype(np.int64)
        pinned |= newly
    return np.ones(p.kernel_count, dtype=np.int64)


def fcfs_counts(p: AccelosProblem, among: np.ndarray | None = None) -> np.ndarray:
    """Standard OpenCL (figure 3a): kernels in spec order each take every group that still fits
    (at most N_i); ``among`` (a mask) restricts it to some kernels on an empty device."""
    free = p.capacity.copy()
    n = np.zeros(p.kernel_count, dtype=np.int64)
    for i in np.flatnonzero(among) if among is not None else range(p.kernel_count):
        take = min(p.groups[i], most_groups(p.demand[i], free))
        n[i] = take
        free -= take * p.demand[i]
    return n


@dataclass(frozen=True)
class Execution:
    """When each kernel starts and finishes under the wave model, and alone on the device."""

    start: np.ndarray
    finish: np.ndarray
    alone: np.ndarray

    @property
    def slowdown(self) -> np.ndarray:
        """IS_i = T(s)_i / T(a)_i (eq. 9 in the accelOS paper), all kernels launched at 0."""
        return self.finish / self.alone

    @property
    def makespan(self) -> float:
        return float(self.finish.max())

    @property
    def overlap(self) -> float:
        """O = T(c) / T(t) (eq. 12 in the accelOS paper): time all kernels co-execute over
    time any runs (from 0 to the makespan: the device is never idle in between)."""
        together = max(0.0, float(self.finish.min() - self.start.max()))
        return together / self.makespan


def waves_time(p: AccelosProblem, counts: np.ndarray) -> np.ndarray:
    """ceil(N_i / n_i) waves of time_per_group each (inf for n_i = 0)."""
    n = np.asarray(counts, dtype=float)
    with np.errstate(divide="ignore"):
        return np.ceil(p.groups / n) * p.time_per_group


def alone_counts(p: AccelosProblem) -> np.ndarray:
    """Groups a kernel keeps resident alone on the device: min(N_i, what fits)."""
    return np.minimum(p.groups, most_groups(p.demand, p.capacity))


def dispatch(p: AccelosProblem, limit: np.ndarray) -> Execution:
    """The wave model's event loop: a work group dispatched at t finishes at t +
    time_per_group and frees its resources; at t = 0 and whenever groups finish, the
    dispatcher walks the kernels in launch (spec) order and gives each as many of its
    not-yet-started groups as fit, never more than ``limit_i`` resident at once (inf: no
    limit).

    Time is exact: integer ticks of 1/D, D the least common denominator of the
    time_per_group values as written (0.3 is 3/10, so three waves of 0.1 end with one of 0.3;
    in floats they would not). So once the device's state (what is
    resident, what is free, when each batch ends, relative to now) repeats, every later period
    repeats it until some kernel runs out of groups: ``_repeat`` skips those periods whole.
    The cost grows with the number of distinct states, not with the NDRanges (2^53 groups
    take no longer than 2^10).

    One event per distinct finish time, one batch per kernel and event, and a walk that looks
    at each distinct per-group demand once, not at each kernel (``_Waiting``): the kernels
    taking groups are, in launch order, the first waiting kernel of each demand that fits."""
    limit = np.asarray(limit, dtype=float).tolist()
    left, resident = p.groups.tolist(), [0.0] * p.kernel_count
    free = p.capacity.tolist()           # Python floats: one kernel at a time is the hot path
    rows = p.demand.tolist()
    start, finish = [math.inf] * p.kernel_count, [0.0] * p.kernel_count
    ticks, period = _ticks(p.time_per_group)
    waiting = _Waiting(p.demand, left, resident, limit)
    events: list[tuple[int, int, float]] = []
    now = ends = held = 0                # the sums of the batches' end ticks and groups
    seen, step = None, 0
    while True:
        for i in waiting.walk(free):     # launch order, each the first of its demand that fits
            w, m, r = rows[i]
            fit = min(free[0] // w if w else math.inf, free[1] // m if m else math.inf,
                      free[2] // r if r else math.inf)     # groups_that_fit, inlined
            take = min(left[i], limit[i] - resident[i], fit)
            end = now + period[i]
            heapq.heappush(events, (end, i, take))
            ends += end
            held += take
            left[i] -= take
            resident[i] += take
            free[0] -= take * w          # in place: the walk reads it
            free[1] -= take * m
            free[2] -= take * r
            if start[i] == math.inf:
                start[i] = now / ticks
            if left[i] == 0 or resident[i] >= limit[i]:
                waiting.leave(i)
        if not events:
            return Execution(np.array(start), np.array(finish),
                             waves_time(p, alone_counts(p)))
        step += 1
        cheap = (held, tuple(free), len(events), ends - len(events) * now)
        if seen is not None and seen[0] == cheap:
            state = _state(resident, free, events, now)     # only when the cheap part matches
            if state == seen[1]:
                skip = _repeat(np.array(left), np.array(seen[3]) - left, now - seen[2])
                if skip:
                    now += skip[0]
                    events = [(t + skip[0], i, c) for t, i, c in events]
                    ends += len(events) * skip[0]
                    left = (np.array(left) - skip[1]).tolist()
                    waiting = _Waiting(p.demand, left, resident, limit)
                    seen, step = None, 0
        if step & (step - 1) == 0:       # Brent: remember the state at steps 1, 2, 4, 8, ...
            seen = (cheap, _state(resident, free, events, now), now, tuple(left))
        now = events[0][0]
        while events and events[0][0] == now:
            end, i, count = heapq.heappop(events)
            ends -= end
            held -= count
            resident[i] -= count
            w, m, r = rows[i]
            free[0] += count * w
            free[1] += count * m
            free[2] += count * r
            finish[i] = now / ticks
            if left[i] > 0 and resident[i] < limit[i] <= resident[i] + count:
                waiting.join(i)          # back under its limit


class _Waiting:
    """The kernels that may take groups (some left, fewer than ``limit`` resident), by
    per-group demand: a min-heap of kernel indices for each distinct demand, and the
    demands that have such kernels as (first kernel, demand, w, m, r) in launch order of
    their first kernels. Of the kernels with one demand, a walk in launch order meets the
    first one first, and when it fits so do the others: so a walk visits, in launch order,
    the first kernel of each demand that fits, and a demand's next kernel only once its
    first has left (it took all it could)."""

    def __init__(self, demand: np.ndarray, left: list, resident: list, limit: list):
        distinct, kind = np.unique(demand, axis=0, return_inverse=True)
        self.kind = kind.ravel().tolist()
        self.columns = list(distinct.T.copy())
        self.rows = distinct.tolist()
        self.queues: list[list[int]] = [[] for _ in self.rows]
        for i, v in enumerate(self.kind):
            if left[i] > 0 and resident[i] < limit[i]:
                self.queues[v].append(i)     # in launch order: already a heap
        self.firsts = sorted(self._first(v) for v, queue in enumerate(self.queues) if queue)

    def _first(self, v: int) -> tuple:
        return (self.queues[v][0], v, *self.rows[v])

    def join(self, i: int) -> None:
        v = self.kind[i]
        queue = self.queues[v]
        if queue and i > queue[0]:
            heapq.heappush(queue, i)
            return
        if queue:                            # i comes first now
            del self.firsts[bisect.bisect_left(self.firsts, (queue[0],))]
        heapq.heappush(queue, i)
        bisect.insort(self.firsts, self._first(v))

    def leave(self, i: int) -> None:
        """Kernel i, the first of its demand (it just took groups), waits no more."""
        v = self.kind[i]
        heapq.heappop(self.queues[v])
        del self.firsts[bisect.bisect_left(self.firsts, (i,))]
        if self.queues[v]:
            bisect.insort(self.firsts, self._first(v))

    def walk(self, free: list[float]) -> Iterator[int]:
        """Yield, in launch order, each waiting kernel that is the first of its demand and
        fits in ``free`` as the caller takes groups (so shrinks ``free``) and lets kernels
        ``leave``; a demand that does not fit is not looked at again in the walk (free only
        shrinks)."""
        if len(self.rows) > MANY_DEMANDS:
            fits = np.flatnonzero(functools.reduce(
                np.logical_and, (c <= f for c, f in zip(self.columns, free)))).tolist()
            heads = sorted([self._first(v) for v in fits if self.queues[v]])
        else:
            heads = self.firsts[:]
        # a list iterator sees what is inserted after its position: a demand's next kernel
        for at, (i, v, w, m, r) in enumerate(heads, 1):
            if w <= free[0] and m <= free[1] and r <= free[2]:
                yield i
                queue = self.queues[v]
                if queue and queue[0] != i:     # i left: its demand's next kernel
                    bisect.insort(heads, self._first(v), lo=at)


def _ticks(time_per_group: np.ndarray) -> tuple[int, list[int]]:
    """D, the least common denominator of the time_per_group values as written (their
    shortest decimal form: 0.3 is 3/10), and each time in ticks of 1/D (one Fraction per
    distinct value)."""
    values, kind = np.unique(time_per_group, return_inverse=True)
    exact = [Fraction(repr(float(t))) for t in values]
    ticks = math.lcm(*(t.denominator for t in exact))
    period = [t.numerator * (ticks // t.denominator) for t in exact]
    return ticks, [period[v] for v in kind.ravel().tolist()]


def _state(resident: list[float], free: list[float], events: list, now: int) -> tuple:
    """The device's state relative to ``now``: resident groups, free resources, and when each
    batch ends."""
    return tuple(resident), tuple(free), tuple(sorted((t - now, i, c)
                                                            for t, i, c in events))


def _repeat(left: np.ndarray, used: np.ndarray, length: int) -> tuple[int, np.ndarray] | None:
    """A period of ``length`` that consumed ``used`` groups repeats k = min_i left_i // used_i
    more times unchanged (each starts with at least one period's groups left, so no kernel
    runs short inside it): the time and groups k periods take, or None when k = 0."""
    busy = used > 0
    k = int(np.min(left[busy] // used[busy]))
    return (k * length, k * used) if k > 0 else None


def execute(p: AccelosProblem, caps: np.ndarray | None = None) -> Execution:
    """Run the kernels under the wave model (``dispatch``).

    ``caps = None`` is standard OpenCL's hardware dispatch: no limit, so the kernel launched
    first takes the device, later ones get what it leaves and grow as it drains (figure 1a's
    serialisation). ``caps = n`` runs an allocation as accelOS's n_i persistent groups: when
    they fit together, kernel i takes ceil(N_i / n_i) waves from 0 (closed form, no event loop);
    otherwise the dispatcher decides, and a kernel with n_i = 0 has no limit (it takes what
    others free, as under standard OpenCL)."""
    if caps is None:
        return dispatch(p, np.full(p.kernel_count, np.inf))
    caps = np.floor(np.maximum(caps, 0.0))
    if np.all(caps >= 1) and np.all(used(p, caps) <= p.capacity):
        return Execution(np.zeros(p.kernel_count), waves_time(p, caps),
                         waves_time(p, alone_counts(p)))
    return dispatch(p, np.where(caps >= 1, caps, np.inf))


@functools.lru_cache(maxsize=16)      # problems are frozen: one event loop per problem
def standard_opencl(p: AccelosProblem) -> Execution:
    """The kernels under standard OpenCL's hardware dispatch (``execute(p)``), the baseline of
    every allocation's slowdown metrics and of fcfs: the event loop runs once per problem,
    however many methods and allocations (compare, studies, validate) are judged against it."""
    return execute(p)


def jain_index(values: np.ndarray) -> float:
    """Jain's fairness index (sum x)^2 / (K sum x^2): 1 when all are equal. Scale-free, so it
    is computed on x / max(x) (no overflow however large x is)."""
    top = float(np.abs(values).max(initial=0.0))
    if top == 0:
        return 1.0
    x = values / top
    return float(x.sum() ** 2 / (len(x) * (x**2).sum()))


def unfairness(run: Execution) -> float:
    """U = max IS / min IS (eq. 10 in the accelOS paper)."""
    return float(run.slowdown.max() / run.slowdown.min())


def slowdown_metrics(run: Execution, baseline: Execution) -> dict:
    """Section 7.4 on the wave model, against a baseline run (standard OpenCL): the largest
    and smallest individual slowdown IS_i (eq. 9; every IS_i: ``execute(p, n).slowdown``),
    unfairness U (eq. 10), fairness improvement U_baseline / U (eq. 11), throughput speedup
    T_baseline / T of the makespans (eq. 13), overlap O (eq. 12), ANTT (mean IS) and STP
    (sum 1 / IS)."""
    return {
        "max_slowdown": float(run.slowdown.max()),
        "min_slowdown": float(run.slowdown.min()),
        "unfairness": unfairness(run),
        "fairness_improvement": unfairness(baseline) / unfairness(run),
        "throughput_speedup": baseline.makespan / run.makespan,
        "overlap": run.overlap,
        "makespan": run.makespan,
        "antt": float(run.slowdown.mean()),
        "stp": float((1 / run.slowdown).sum()),
    }


def metrics(p: AccelosProblem, allocation: Allocation) -> dict:
    """Utilisation of each resource, thread spread (max - min of threads / share), Jain's index
    of weighted dominant shares, and ``slowdown_metrics`` of the allocation run as persistent
    groups (``execute(p, n)``) against standard OpenCL (``standard_opencl``)."""
    n = np.asarray(allocation.column("work_groups"), dtype=float)
    shares = weighted_dominant_share(p, n)
    weighted_threads = n * p.demand[:, 0] / p.share
    util = used(p, n) / p.capacity
    return {
        **{f"utilization.{r}": float(u) for r, u in zip(RESOURCES, util)},
        "min_weighted_dominant_share": float(shares.min()),
        "thread_spread": float(weighted_threads.max() - weighted_threads.min()),
        "jain_index": jain_index(shares),
        **slowdown_metrics(execute(p, n), standard_opencl(p)),
    }


def max_min_program(p: AccelosProblem) -> MatrixProgram:
    """The ILP's first round: max t s.t. n_i max_r(d_ir / C_r) / s_i >= t (every weighted
    dominant share: eq. 2, 4 and 6 in the accelOS paper, as one max-min), sum_i n_i d_ir <= C_r
    (eq. 1, 3, 5), n_i integer in [1, N_i]. Columns n_1..n_K, t."""
    k = p.kernel_count
    rows = np.zeros((k + 3, k + 1))
    rows[:k, :k] = np.diag(dominant_per_group(p) / p.share)
    rows[:k, k] = -1.0
    rows[k:, :k] = p.demand.T
    return MatrixProgram(np.append(np.zeros(k), 1.0), rows,
                         np.append(np.zeros(k), np.full(3, -np.inf)),
                         np.append(np.full(k, np.inf), p.capacity),
                         np.append(np.ones(k), 0.0), np.append(p.groups, np.inf),
                         integer=np.append(np.ones(k, bool), False))


def threads_program(p: AccelosProblem, lower: np.ndarray) -> MatrixProgram:
    """The ILP's second round: max sum_i n_i w_i (thread utilisation) s.t. the three capacity
    constraints and n_i in [lower_i, N_i] (lower keeps round one's smallest weighted dominant
    share, see ``keep_level``)."""
    return MatrixProgram(p.demand[:, 0], p.demand.T, np.full(3, -np.inf), p.capacity,
                         lower.astype(float), p.groups, integer=np.ones(p.kernel_count, bool))


def fewest_reaching(p: AccelosProblem, level: float) -> np.ndarray:
    """For each kernel, the fewest whole groups t in 0..N_i whose share_key(t) reaches
    ``level`` (inf where even N_i falls short): ``levels.fewest_reaching`` on n dom_i / s_i."""
    return levels.fewest_reaching(level, dominant_per_group(p), p.share, p.groups)


def keep_level(p: AccelosProblem, level: float) -> np.ndarray:
    """Fewest whole groups per kernel (at least 1) whose weighted dominant share reaches
    ``level`` (inf where N_i cannot): the integer form of n_i max_r(d_ir / C_r) / s_i >= level,
    exact (no tolerance)."""
    return np.maximum(fewest_reaching(p, level), 1)


def max_min_level(p: AccelosProblem) -> tuple[float, np.ndarray]:
    """The max-min weighted dominant share over whole-group allocations with 1 <= n_i <= N_i
    within the device (the ILP's first round), exactly, by bisection on the level: the fewest
    groups reaching a level (``keep_level``) grow with it, so the levels the device can hold
    are an interval (one group of every kernel always fits: the spec says so), and the best
    is the smallest share of the fewest groups at its top. Figure 3:

    >>> p = AccelosProblem.from_spec({"device": {"threads": 1024, "local_memory": 1,
    ...     "registers": 1}, "kernels": [{"id": "A", "work_group_size": 256, "work_groups": 12},
    ...     {"id": "B", "work_group_size": 256, "work_groups": 8}]}, Violations())
    >>> level, n = max_min_level(p)
    >>> level, n.tolist()
    (0.5, [2, 2])
    """
    def fits(level: float) -> bool:
        n = keep_level(p, level)
        return bool(np.all(n <= p.groups) and np.all(used(p, n) <= p.capacity))

    lo = highest_level(fits, float(weighted_dominant_share(p, np.ones(p.kernel_count)).min()),
                       float(weighted_dominant_share(p, p.groups).min()))
    best = keep_level(p, lo)
    return float(weighted_dominant_share(p, best).min()), best.astype(np.int64)
