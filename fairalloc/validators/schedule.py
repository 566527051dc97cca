"""Checks on timed schedules (moldable jobs): feasibility from the schedule alone, and the
makespan bounds the methods claim (Theorems 1, 2, 5 of the offload paper)."""

from __future__ import annotations

import bisect
from dataclasses import dataclass
from typing import TYPE_CHECKING

import numpy as np

from fairalloc.allocation import Allocation
from fairalloc.models.moldable import MoldableProblem, id_ranges
from fairalloc.result import Finding
from fairalloc.validators import bounds

if TYPE_CHECKING:
    import networkx as nx

TOL = 1e-12     # of the schedule's scale: two times this close are one instant (float sums,
                # JSON round trips); the model keeps every duration above 1e-9 of it


def time_scale(p: MoldableProblem, allocation: Allocation) -> float:
    """The schedule's scale: its latest time or the serial horizon, whichever is larger. Every
    tolerance is this times ``TOL``, so a schedule in microseconds and one in years are judged
    alike."""
    latest = max((float(np.abs(allocation.column(c)).max(initial=0.0))
                  for c in ("offload_end", "end")), default=0.0)
    return max(latest, p.horizon)


def _near(a, b, tol: float) -> np.ndarray:
    return np.isclose(a, b, rtol=1e-9, atol=tol)


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


def precedence_graph(p: MoldableProblem, allocation: Allocation, tol: float,
                     passed: Handovers | None = None) -> nx.DiGraph:
    """The schedule's precedence DAG. Nodes ("offload", i) and ("run", i) weigh their
    durations; edges: offload -> run of each job, the bus order (consecutive offloads), for
    each processor a job to the next job that uses it, and the waits a list algorithm makes:
    an offload or run that starts at an instant t > 0 at which runs (or offloads) end hangs from
    a zero-length node ("runs end", t) (or ("offloads end", t)) that those ends feed — Impl-I
    waits for alpha m free processors, a shelf for the one before it, offload-first for the
    bus — and an offload that ends just as runs end hangs from that instant with lag -x_i (the
    look-ahead times a transfer to end when processors free up). In a schedule without idle
    time the critical path is then the makespan."""
    import networkx as nx  # here, not at import: networkx adds 0.4 s to every command's start

    col = allocation.column
    o_s, o_e, s, e = (np.asarray(col(k), float) for k in ("offload_start", "offload_end",
                                                           "start", "end"))
    g = nx.DiGraph()
    g.add_nodes_from((("offload", i), {"length": x}) for i, x in enumerate((o_e - o_s).tolist()))
    g.add_nodes_from((("run", i), {"length": d}) for i, d in enumerate((e - s).tolist()))
    g.add_edges_from((("offload", i), ("run", i)) for i in range(p.n))
    bus = np.lexsort((o_e, o_s))
    g.add_edges_from((("offload", int(a)), ("offload", int(b))) for a, b in zip(bus, bus[1:]))
    if ("processor_ids",) in allocation.columns:
        passed = passed or handovers(p, allocation, tol)
        g.add_edges_from((("run", a), ("run", b)) for a, b in passed.pairs.tolist())
    # a node shorter than two instants' width would feed the instant it hangs from: a cycle
    positive = {"offload": o_e - o_s > 2 * tol, "run": e - s > 2 * tol}
    for instant, what, finish in (("runs end", "run", e), ("offloads end", "offload", o_e)):
        ends = np.unique(finish)
        g.add_nodes_from(((instant, t), {"length": 0.0}) for t in range(len(ends)))
        g.add_edges_from(((what, i), (instant, t))
                         for i, t in enumerate(np.searchsorted(ends, finish).tolist()))
        for node, begin in (("offload", o_s), ("run", s)):
            at = instant_of(ends, begin, tol)
            hang = np.flatnonzero((at >= 0) & (begin > tol) & positive[node])
            g.add_edges_from(((instant, int(at[i])), (node, i)) for i in hang.tolist())
        if what == "run":                       # look-ahead: transfers timed to end as runs end
            at = instant_of(ends, o_e, tol)
            timed = np.flatnonzero((at >= 0) & positive["offload"])
            g.add_edges_from(((instant, int(at[i])), ("offload", int(i)),
                              {"lag": float(o_s[i] - o_e[i])}) for i in timed)
    return g


def instant_of(ends: np.ndarray, times: np.ndarray, tol: float) -> np.ndarray:
    """Index in the sorted ``ends`` of the instant each time falls on (within ``tol``; -1 for
    none)."""
    if not ends.size:
        return np.full(len(times), -1)
    at = np.minimum(np.searchsorted(ends, times - tol), len(ends) - 1)
    return np.where(np.abs(ends[at] - times) <= tol, at, -1)


def earliest_finishes(g: nx.DiGraph) -> dict:
    """Each node's finish when every node starts as soon as its predecessors (and lags) allow."""
    import networkx as nx  # lazy: heavy (0.4 s), only schedule checks need it

    finish: dict = {}
    length = g.nodes(data="length")
    for node in nx.topological_sort(g):
        ready = max((finish[q] + lag.get("lag", 0.0) for q, lag in g.pred[node].items()),
                    default=0.0)
        finish[node] = max(ready, 0.0) + length[node]
    return finish


def violations(p: MoldableProblem, allocation: Allocation, tol: float
               ) -> tuple[list[str], Handovers | None]:
    """The broken constraints of a schedule (``feasibility``), and its processors' handovers
    when it names ``processor_ids`` (``no_unforced_idle`` builds its DAG from them)."""
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
    problems, _ = violations(p, allocation, TOL * time_scale(p, allocation))
    if problems:
        return Finding("feasibility", False, f"{len(problems)} violation(s): {problems[0]}",
                       {"problems": problems[:10]})
    ids = ", processor ids" if ("processor_ids",) in allocation.columns else ""
    return Finding("feasibility", True, "bus, offload-before-run, 1 <= k <= chi, durations, "
                   f"processors{ids}: all respected")


def no_unforced_idle(p: MoldableProblem, allocation: Allocation, **_) -> Finding:
    """The makespan is the critical path of the schedule's precedence DAG (networkx,
    ``precedence_graph``): no processor or bus idles while the job it holds back has nothing
    left to wait for. A schedule that breaks it could be shortened by starting that job
    earlier; the witness names it. Needs ``processor_ids`` (who waits for whom) and a feasible
    schedule."""
    import networkx as nx  # lazy: heavy (0.4 s), only schedule checks need it

    if ("processor_ids",) not in allocation.columns:
        return Finding("no_unforced_idle", "unchecked", "the schedule names no processor_ids: "
                       "which job waits for which is unknown")
    tol = TOL * time_scale(p, allocation)
    problems, passed = violations(p, allocation, tol)
    if problems:
        return Finding("no_unforced_idle", "unchecked", "the schedule is not feasible")
    e, s = (np.asarray(allocation.column(c), float) for c in ("end", "start"))
    try:
        finish = earliest_finishes(precedence_graph(p, allocation, tol, passed))
    except nx.NetworkXUnfeasible:
        return Finding("no_unforced_idle", "unchecked", "the schedule's instants are too close "
                       "to order (its precedence graph has a cycle)")
    path = max(finish.values(), default=0.0)
    makespan = float(e.max()) if p.n else 0.0
    if _near(path, makespan, tol):
        return Finding("no_unforced_idle", True, f"makespan = critical path ({path:g})")
    early = [i for i in range(p.n) if finish[("run", i)] < e[i] - tol]
    witness = {"critical_path": path, "makespan": makespan}
    if early:
        i = early[0]
        witness.update(job=p.ids[i], start=float(s[i]),
                       could_start=finish[("run", i)] - float(e[i] - s[i]))
    gap = (f": {witness['job']} starts at {witness['start']:g} though nothing it waits for "
           f"holds it past {witness['could_start']:g} (idle time)" if early else "")
    return Finding("no_unforced_idle", False, f"makespan {makespan:g} is not the critical path "
                   f"{path:g} of the precedence DAG{gap}", witness)


def makespan(p: MoldableProblem, allocation: Allocation) -> float:
    """The schedule's makespan: its last end."""
    return float(np.max(allocation.column("end")))


claimed_bounds = bounds.claimed_bounds(makespan, "min", "makespan")
