"""The hetero kind's picture: each job's time on each worker type (``solve --plot``)."""

from __future__ import annotations

from fairalloc.plots import bar_panels
from fairalloc.result import Result


def time_per_type(problem, result: Result, path: str) -> None:
    """Each job's share of time on each worker type (a bar each) and its normalised
    throughput (× its isolated share), the quantity the policies are fair on."""
    alloc = result.allocation
    n, k = len(alloc.ids), len(problem.types)
    bar_panels(result, [
        ("time per worker type", {t: alloc.column("time", t) for t in problem.types},
         "time on the worker type (share of the round)"),
        ("throughput", {"normalised": alloc.column("normalized")},
         "normalised throughput (× isolated)")],
        path, 3 + 0.25 * n * (k + 1) + 0.35 * n, [3, 1.5], height=3.8)
