"""The hetero kind's picture: each job's time on each worker type (``solve --plot``)."""

from __future__ import annotations

from fairalloc.plots import bars, pyplot, result_title, save
from fairalloc.result import Result


def time_per_type(problem, result: Result, path: str) -> None:
    """Each job's share of time on each worker type (a bar each) and its normalised
    throughput (× its isolated share), the quantity the policies are fair on."""
    alloc = result.allocation
    plt = pyplot()
    n, k = len(alloc.ids), len(problem.types)
    fig, axes = plt.subplots(1, 2, figsize=(3 + 0.25 * n * (k + 1) + 0.35 * n, 3.8),
                             gridspec_kw={"width_ratios": [3, 1.5]})
    bars(axes[0], list(alloc.ids), {t: alloc.column("time", t) for t in problem.types},
         "time on the worker type (share of the round)")
    axes[0].set_title("time per worker type", fontsize=8)
    bars(axes[1], list(alloc.ids), {"normalised": alloc.column("normalized")},
         "normalised throughput (× isolated)")
    axes[1].set_title("throughput", fontsize=8)
    fig.suptitle(result_title(result), fontsize=9)
    fig.tight_layout()
    save(fig, path)
