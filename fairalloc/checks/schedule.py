"""Checks on timed schedules (moldable jobs): feasibility from the schedule alone, and the
makespan bounds the methods claim (Theorems 1, 2, 5 of the offload paper)."""

from __future__ import annotations

import bisect
import weakref
from dataclasses import dataclass

import numpy as np

from fairalloc.allocation import Allocation
from fairalloc.checks import bounds
from fairalloc.models.moldable import TIME_RTOL, TIME_TOL, MoldableProblem, id_ranges
from fairalloc.result import Finding


def time_scale(p: MoldableProblem, allocation: Allocation) -> float:
    """The schedule's scale: its latest time or the serial horizon, whichever is larger. Every
    tolerance is this times ``TIME_TOL`` (the kind's, ``models.moldable``), so a schedule in
    microseconds and one in years are judged alike."""
    latest = max((float(np.abs(allocation.column(c)).max(initial=0.0))
                  for c in ("offload_end", "end")), default=0.0)
    return max(latest, p.horizon)


def _near(a, b, tol: float) -> np.ndarray:
    return np.isclose(a, b, rtol=TIME_RTOL, atol=tol)


@dataclass(frozen=True)
class Handovers:
    """How a schedule's processors pass from job to job (``handovers``)."""

    pairs: np.ndarray                 # (q, 2): job a's processors go next to job b
    held: np.ndarray                  # how many ids each job names
    outside: np.ndarray               # jobs naming an id outside 0..m-1
    twice: np.ndarray                 # jobs naming an id twice
    clash: tuple[int, int, int] | None  # (processor, earlier job, later job) running at once


def handovers(p: MoldableProblem, allocation: Allocation, tol: float) -> Handovers:
    """Replays the ``processor_ids`` in start order over an interval map of processor ids to
    the job that last held them: per job, the jobs whose processors it takes over, and the
    first id two jobs hold at once. Works on id ranges, so its cost does not grow with m."""
    col = allocation.column
    start, end = np.asarray(col("start"), float), np.asarray(col("end"), float)
    m = p.processors
    lows, segs = [0], [(m, -1)]         # the map: [lows[i], segs[i][0]) last held by segs[i][1]
    pairs: set[tuple[int, int]] = set()
    held = np.zeros(p.n, dtype=np.int64)
    outside, twice = np.zeros(p.n, dtype=bool), np.zeros(p.n, dtype=bool)
    clash = None
    for j in np.argsort(start, kind="stable").tolist():
        ranges = sorted(id_ranges(col("processor_ids")[j]))
        held[j] = sum(hi - lo for lo, hi in ranges)
        twice[j] = any(b[0] < a[1] for a, b in zip(ranges, ranges[1:]))
        outside[j] = bool(ranges) and ranges[-1][1] > m
        for lo, hi in ranges:
            lo, hi = min(lo, m), min(hi, m)
            if lo >= hi:
                continue
            at = bisect.bisect_right(lows, lo) - 1
            cut = at
            while cut < len(lows) and lows[cut] < hi:
                holder = segs[cut][1]
                if holder >= 0 and holder != j:
                    if clash is None and start[j] < end[holder] - tol:
                        clash = (max(lo, lows[cut]), holder, j)
                    pairs.add((holder, j))
                cut += 1
            left = (lows[at], (lo, segs[at][1])) if lows[at] < lo else None
            right = (hi, segs[cut - 1]) if segs[cut - 1][0] > hi else None
            new = [x for x in (left, (lo, (hi, j)), right) if x is not None]
            lows[at:cut] = [x[0] for x in new]
            segs[at:cut] = [x[1] for x in new]
    return Handovers(np.array(sorted(pairs), dtype=np.int64).reshape(-1, 2), held,
                     outside, twice, clash)


@dataclass(frozen=True)
class Precedence:
    """A schedule's precedence DAG as arrays (``precedence_graph``): node v lasts ``length[v]``;
    edge k runs from ``src[k]`` to ``dst[k]`` with ``lag[k]`` (v may start ``lag`` after u
    ends). Nodes: offload i is i, run i is n + i, then the instants at which runs end, then
    those at which offloads end."""

    length: np.ndarray
    src: np.ndarray
    dst: np.ndarray
    lag: np.ndarray


def precedence_graph(p: MoldableProblem, allocation: Allocation, tol: float,
                     passed: Handovers | None = None) -> Precedence:
    """The schedule's precedence DAG. Nodes offload i and run i weigh their durations; edges:
    offload -> run of each job, the bus order (consecutive offloads), for each processor a job
    to the next job that uses it, and the waits a list algorithm makes: an offload or run that
    starts at an instant t > 0 at which runs (or offloads) end hangs from a zero-length node
    "runs end at t" (or "offloads end at t") that those ends feed — Impl-I waits for alpha m
    free processors, a shelf for the one before it, offload-first for the bus — and an offload
    that ends just as runs end hangs from that instant with lag -x_i (the look-ahead times a
    transfer to end when processors free up). In a schedule without idle time the critical
    path is then the makespan."""
    col = allocation.column
    o_s, o_e, s, e = (np.asarray(col(k), float) for k in ("offload_start", "offload_end",
                                                           "start", "end"))
    n = p.n
    jobs = np.arange(n)
    offload, run = jobs, n + jobs
    bus = np.lexsort((o_e, o_s))
    edges = [(offload, run, 0.0), (bus[:-1], bus[1:], 0.0)]
    if ("processor_ids",) in allocation.columns:
        passed = passed or handovers(p, allocation, tol)
        edges.append((n + passed.pairs[:, 0], n + passed.pairs[:, 1], 0.0))
    # a node shorter than two instants' width would feed the instant it hangs from: a cycle
    positive = {"offload": o_e - o_s > 2 * tol, "run": e - s > 2 * tol}
    lengths = [o_e - o_s, e - s]
    first = 2 * n                                   # the node of the next kind's first instant
    for what, finish in (("run", e), ("offload", o_e)):
        ends = np.unique(finish)
        lengths.append(np.zeros(len(ends)))
        edges.append((offload if what == "offload" else run,
                      first + np.searchsorted(ends, finish), 0.0))
        for node, begin in (("offload", o_s), ("run", s)):
            at = instant_of(ends, begin, tol)
            hang = np.flatnonzero((at >= 0) & (begin > tol) & positive[node])
            edges.append((first + at[hang], hang + (n if node == "run" else 0), 0.0))
        if what == "run":                       # look-ahead: transfers timed to end as runs end
            at = instant_of(ends, o_e, tol)
            timed = np.flatnonzero((at >= 0) & positive["offload"])
            edges.append((first + at[timed], timed, o_s[timed] - o_e[timed]))
        first += len(ends)
    src, dst, lag = (np.concatenate([np.broadcast_to(np.asarray(edge[k], dtype=dtype),
                                                     np.shape(edge[1]))
                                     for edge in edges])
                     for k, dtype in ((0, np.int64), (1, np.int64), (2, float)))
    return Precedence(np.concatenate(lengths), src, dst, lag)


def instant_of(ends: np.ndarray, times: np.ndarray, tol: float) -> np.ndarray:
    """Index in the sorted ``ends`` of the instant each time falls on (within ``tol``; -1 for
    none)."""
    if not ends.size:
        return np.full(len(times), -1)
    at = np.minimum(np.searchsorted(ends, times - tol), len(ends) - 1)
    return np.where(np.abs(ends[at] - times) <= tol, at, -1)


def earliest_finishes(g: Precedence) -> np.ndarray | None:
    """Each node's finish when every node starts as soon as its predecessors (and lags)
    allow: max(0, max over edges u -> v of finish(u) + lag) + length(v), node by node in a
    topological order (Kahn's: each node once its last predecessor is done, so the cost is
    the number of edges). None when the graph has a cycle."""
    size = len(g.length)
    order = np.argsort(g.src, kind="stable")
    first = np.searchsorted(g.src[order], np.arange(size + 1)).tolist()
    succ, lag = g.dst[order].tolist(), g.lag[order].tolist()
    waiting = np.bincount(g.dst, minlength=size).tolist()
    length = g.length.tolist()
    ready = [0.0] * size              # max(0, finish(u) + lag) over the edges done so far
    finish = [0.0] * size
    todo = [v for v in range(size) if not waiting[v]]
    push, done = todo.append, 0
    while todo:                       # plain lists and comparisons: this loop is the check's cost
        u = todo.pop()
        done += 1
        finish[u] = at = ready[u] + length[u]
        for k in range(first[u], first[u + 1]):
            v = succ[k]
            if at + lag[k] > ready[v]:
                ready[v] = at + lag[k]
            waiting[v] -= 1
            if not waiting[v]:
                push(v)
    return np.array(finish) if done == size else None


# the last schedule ``violations`` judged: feasibility and no_unforced_idle run in turn on one
# allocation, and the handovers (a Python pass over the jobs) cost each as much as the solve.
# The problem is held weakly; the allocation's columns as copied, so that an allocation changed
# in place since is judged again (comparing arrays costs far less than the pass).
_last: dict = {}


def violations(p: MoldableProblem, allocation: Allocation, tol: float
               ) -> tuple[list[str], Handovers | None]:
    """The broken constraints of a schedule (``feasibility``), and its processors' handovers
    when it names ``processor_ids`` (``no_unforced_idle`` builds its DAG from them); for the
    same problem, tolerance and allocation columns as the last call, that call's answer."""
    if _judged_last(p, allocation, tol):
        return _last["found"]
    found = _violations(p, allocation, tol)
    _last.update(problem=weakref.ref(p), tol=tol, found=found,
                 columns={key: col.copy() for key, col in allocation.columns.items()})
    return found


def _judged_last(p: MoldableProblem, allocation: Allocation, tol: float) -> bool:
    """Whether the last call judged this problem, at this tolerance, on equal columns."""
    if not _last or _last["problem"]() is not p or _last["tol"] != tol:
        return False
    seen, now = _last["columns"], allocation.columns
    return seen.keys() == now.keys() and all(
        seen[key].shape == col.shape and np.array_equal(seen[key], col)
        for key, col in now.items())


def _violations(p: MoldableProblem, allocation: Allocation, tol: float
                ) -> tuple[list[str], Handovers | None]:
    col = allocation.column
    o_s, o_e, s, e = (np.asarray(col(k), float) for k in ("offload_start", "offload_end",
                                                           "start", "end"))
    k = np.asarray(col("processors"), float)
    problems: list[str] = []

    def bad(mask: np.ndarray, what: str) -> None:
        if np.any(mask):
            i = int(np.flatnonzero(mask)[0])
            problems.append(f"{p.ids[i]}: {what}")

    bad(~_near(o_e - o_s, p.offload, tol), "offload does not last x")
    bad(o_s < -tol, "offload starts before 0")
    bad(s < o_e - tol, "runs before its offload ends")
    whole = (k >= 1) & (k <= p.chi) & (k == np.round(k))
    bad(~whole, "processors not a whole number in 1..chi")
    expected = np.array([p.duration(i, int(k[i])) if whole[i] else np.nan for i in range(p.n)])
    bad(~_near(e - s, expected, tol), "run does not last w(k)/k")
    bus = np.lexsort((o_e, o_s))                       # zero-length offloads first at a tie
    overlap = o_s[bus][1:] < o_e[bus][:-1] - tol
    if overlap.any():
        j = int(np.flatnonzero(overlap)[0])
        problems.append(f"bus: {p.ids[bus[j]]} and {p.ids[bus[j + 1]]} offload at once")
    times = np.concatenate([s, e])
    steps = np.concatenate([k, -k])
    order = np.lexsort((steps, times))                 # ends before starts at equal times
    busy = np.cumsum(steps[order])
    if busy.max(initial=0) > p.processors:
        problems.append(f"{busy.max():g} processors busy at t={times[order][busy.argmax()]:g}, "
                        f"m = {p.processors}")
    passed = None
    if ("processor_ids",) in allocation.columns:
        passed = handovers(p, allocation, tol)
        bad(passed.held != k, "processor_ids do not name k processors")
        bad(passed.outside, f"processor_ids outside 0..{p.processors - 1}")
        bad(passed.twice, "processor_ids name an id twice")
        if passed.clash:
            q, a, b = passed.clash
            problems.append(f"processor {q} runs {p.ids[a]} and {p.ids[b]} at once")
    return problems, passed


def feasibility(p: MoldableProblem, allocation: Allocation, **_) -> Finding:
    """From the schedule alone: offloads last x_i and never overlap on the bus, each job runs
    after its offload, 1 <= k_i <= chi_i, runs last w_i(k_i)/k_i, at no instant are more than m
    processors busy, and (where the schedule names ``processor_ids``) each job holds k_i ids in
    0..m-1 and no id serves two jobs at once. Whether time is wasted is ``no_unforced_idle``."""
    problems, _ = violations(p, allocation, TIME_TOL * time_scale(p, allocation))
    if problems:
        return Finding("feasibility", False, f"{len(problems)} violation(s): {problems[0]}",
                       {"problems": problems[:10]})
    ids = ", processor ids" if ("processor_ids",) in allocation.columns else ""
    return Finding("feasibility", True, "bus, offload-before-run, 1 <= k <= chi, durations, "
                   f"processors{ids}: all respected")


def no_unforced_idle(p: MoldableProblem, allocation: Allocation, **_) -> Finding:
    """The makespan is the critical path of the schedule's precedence DAG
    (``precedence_graph``, ``earliest_finishes``): no processor or bus idles while the job it
    holds back has nothing left to wait for. A schedule that breaks it could be shortened by
    starting that job earlier; the witness names it. Needs ``processor_ids`` (who waits for
    whom) and a feasible schedule."""
    if ("processor_ids",) not in allocation.columns:
        return Finding("no_unforced_idle", "unchecked", "the schedule names no processor_ids: "
                       "which job waits for which is unknown")
    tol = TIME_TOL * time_scale(p, allocation)
    problems, passed = violations(p, allocation, tol)
    if problems:
        return Finding("no_unforced_idle", "unchecked", "the schedule is not feasible")
    e, s = (np.asarray(allocation.column(c), float) for c in ("end", "start"))
    finish = earliest_finishes(precedence_graph(p, allocation, tol, passed))
    if finish is None:
        return Finding("no_unforced_idle", "unchecked", "the schedule's instants are too close "
                       "to order (its precedence graph has a cycle)")
    path = float(finish.max(initial=0.0))
    makespan = float(e.max()) if p.n else 0.0
    if _near(path, makespan, tol):
        return Finding("no_unforced_idle", True, f"makespan = critical path ({path:g})")
    runs = finish[p.n:2 * p.n]
    early = np.flatnonzero(runs < e - tol)
    witness = {"critical_path": path, "makespan": makespan}
    if early.size:
        i = int(early[0])
        witness.update(job=p.ids[i], start=float(s[i]),
                       could_start=float(runs[i]) - float(e[i] - s[i]))
    gap = (f": {witness['job']} starts at {witness['start']:g} though nothing it waits for "
           f"holds it past {witness['could_start']:g} (idle time)" if early.size else "")
    return Finding("no_unforced_idle", False, f"makespan {makespan:g} is not the critical path "
                   f"{path:g} of the precedence DAG{gap}", witness)


def makespan(p: MoldableProblem, allocation: Allocation) -> float:
    """The schedule's makespan: its last end."""
    return float(np.max(allocation.column("end")))


claimed_bounds = bounds.claimed_bounds(makespan, "min", "makespan")
