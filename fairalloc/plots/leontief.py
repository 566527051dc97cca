"""The picture of an allocation of divisible resources to users (drf, emrf): each user's share
of each resource's capacity (``solve --plot``)."""

from __future__ import annotations

from fairalloc.plots import bars, pyplot, result_title, save
from fairalloc.result import Result


def shares(problem, result: Result, path: str) -> None:
    """Each user's share of every resource's capacity, a bar per resource; the user's dominant
    share is its tallest bar."""
    market = problem.market
    alloc = result.allocation
    plt = pyplot()
    bars_wide = 0.3 * len(alloc.ids) * (len(market.resources) + 0.5)
    fig, ax = plt.subplots(figsize=(min(max(4 + bars_wide, 6), 12), 3.6))
    bars(ax, list(alloc.ids),
         {r: alloc.column(market.bundle_key, r) / market.capacity[j]
          for j, r in enumerate(market.resources)},
         "share of the resource's capacity (share)")
    ax.set_title(result_title(result), fontsize=9)
    fig.tight_layout()
    save(fig, path)
