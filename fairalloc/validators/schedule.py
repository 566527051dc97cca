"""Checks on timed schedules (moldable jobs): feasibility from the schedule alone, and the
makespan bounds the methods claim (Theorems 1, 2, 5 of the offload paper)."""

from __future__ import annotations

from typing import TYPE_CHECKING

import numpy as np

from fairalloc.models.moldable import MoldableProblem
from fairalloc.result import Allocation, Finding

if TYPE_CHECKING:
    import networkx as nx

TOL = 1e-9


def _near(a, b) -> np.ndarray:
    return np.isclose(a, b, rtol=1e-9, atol=1e-9)


def precedence_graph(p: MoldableProblem, allocation: Allocation) -> nx.DiGraph:
    """The schedule's precedence DAG: node ("offload", i) and ("run", i) weighted by their
    durations; edges offload -> run of each job, bus order (consecutive offloads), and, for each
    processor, from a job to the next job that uses it."""
    import networkx as nx  # here, not at import: networkx adds 0.4 s to every command's start

    col = allocation.column
    g = nx.DiGraph()
    for i in range(p.n):
        g.add_node(("offload", i), length=float(col("offload_end")[i] - col("offload_start")[i]))
        g.add_node(("run", i), length=float(col("end")[i] - col("start")[i]))
        g.add_edge(("offload", i), ("run", i))
    bus = np.lexsort((col("offload_end"), col("offload_start")))
    g.add_edges_from((("offload", int(a)), ("offload", int(b))) for a, b in zip(bus, bus[1:]))
    if ("processor_ids",) in allocation.columns:
        users: dict[int, list[int]] = {}
        for i in np.argsort(col("start"), kind="stable"):
            for pid in col("processor_ids")[i]:
                users.setdefault(int(pid), []).append(int(i))
        for jobs in users.values():
            g.add_edges_from((("run", a), ("run", b)) for a, b in zip(jobs, jobs[1:]))
    return g


def critical_path(g: nx.DiGraph) -> float:
    """Length of the longest path, node lengths summed (every node starts as early as its
    predecessors allow)."""
    import networkx as nx

    finish: dict = {}
    for node in nx.topological_sort(g):
        ready = max((finish[q] for q in g.predecessors(node)), default=0.0)
        finish[node] = ready + g.nodes[node]["length"]
    return max(finish.values(), default=0.0)


def feasibility(p: MoldableProblem, allocation: Allocation, **_) -> Finding:
    """From the schedule alone: offloads last x_i and never overlap on the bus, each job runs
    after its offload, 1 <= k_i <= chi_i, runs last w_i(k_i)/k_i, at no instant are more than m
    processors busy, and no processor id serves two jobs at once. The precedence DAG (networkx)
    gives the critical path: equal to the makespan when no job waits beyond its precedences
    (Impl-I and Impl-I* may wait on purpose for alpha m free processors)."""
    col = allocation.column
    o_s, o_e, s, e = (np.asarray(col(k), float) for k in ("offload_start", "offload_end",
                                                           "start", "end"))
    k = np.asarray(col("processors"), float)
    problems: list[str] = []

    def bad(mask: np.ndarray, what: str) -> None:
        if np.any(mask):
            i = int(np.flatnonzero(mask)[0])
            problems.append(f"{p.ids[i]}: {what}")

    bad(~_near(o_e - o_s, p.offload), "offload does not last x")
    bad(o_s < -TOL, "offload starts before 0")
    bad(s < o_e - TOL, "runs before its offload ends")
    bad((k < 1) | (k > p.chi) | (k != np.round(k)), "processors not a whole number in 1..chi")
    expected = np.array([p.duration(i, int(k[i])) if 1 <= k[i] <= p.chi[i] else np.nan
                         for i in range(p.n)])
    bad(~_near(e - s, expected), "run does not last w(k)/k")
    bus = np.lexsort((o_e, o_s))                       # zero-length offloads first at a tie
    overlap = o_s[bus][1:] < o_e[bus][:-1] - TOL
    if overlap.any():
        j = int(np.flatnonzero(overlap)[0])
        problems.append(f"bus: {p.ids[bus[j]]} and {p.ids[bus[j + 1]]} offload at once")
    times = np.concatenate([s, e])
    steps = np.concatenate([k, -k])
    order = np.lexsort((steps, times))                 # ends before starts at equal times
    busy = np.cumsum(steps[order])
    if busy.max(initial=0) > p.processors + TOL:
        problems.append(f"{busy.max():g} processors busy at t={times[order][busy.argmax()]:g}, "
                        f"m = {p.processors}")
    if ("processor_ids",) in allocation.columns:
        for i, ids in enumerate(col("processor_ids")):
            if len(ids) != k[i] or len(set(ids)) != len(ids) or any(
                    not 0 <= q < p.processors for q in ids):
                problems.append(f"{p.ids[i]}: processor ids {ids} do not match {k[i]:g}")
                break
        else:
            g = precedence_graph(p, allocation)
            for q in {int(q) for ids in col("processor_ids") for q in ids}:
                jobs = sorted((s[i], e[i], i) for i, ids in enumerate(col("processor_ids"))
                              if q in ids)
                clash = [(a, b) for a, b in zip(jobs, jobs[1:]) if b[0] < a[1] - TOL]
                if clash:
                    problems.append(f"processor {q} runs {p.ids[clash[0][0][2]]} and "
                                    f"{p.ids[clash[0][1][2]]} at once")
                    break
    makespan = float(e.max()) if p.n else 0.0
    if problems:
        return Finding("feasibility", False, f"{len(problems)} violation(s): {problems[0]}",
                       {"problems": problems[:10]})
    detail = "bus, offload-before-run, 1 <= k <= chi, durations, processors: all respected"
    if ("processor_ids",) in allocation.columns:
        path = critical_path(g)
        if path > makespan * (1 + 1e-9) + TOL:
            return Finding("feasibility", False, f"critical path {path:g} exceeds the makespan "
                           f"{makespan:g}", {"critical_path": path, "makespan": makespan})
        detail += (f"; makespan = critical path ({path:g})" if _near(path, makespan)
                   else f"; critical path {path:g} < makespan {makespan:g}: jobs wait beyond "
                   "their precedences")
    return Finding("feasibility", True, detail)


def claimed_bounds(p: MoldableProblem, allocation: Allocation, claims: dict | None = None,
                   **_) -> Finding | None:
    """A method's theorem bound (``bound:<theorem>`` in its metrics) against the makespan of the
    schedule at hand (computed here, not taken from the method)."""
    bounds = {k: v for k, v in (claims or {}).items() if k.startswith("bound:")}
    if not bounds:
        return None
    name, bound = next(iter(bounds.items()))
    makespan = float(np.max(allocation.column("end")))
    holds = makespan <= bound * (1 + 1e-9) + TOL
    detail = f"makespan {makespan:g} {'<=' if holds else '>'} {name.split(':')[1]} bound {bound:g}"
    return Finding(name, bool(holds), detail,
                   None if holds else {"makespan": makespan, "bound": bound})
