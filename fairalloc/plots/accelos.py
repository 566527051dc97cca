"""The accelos kind's picture: the resources each kernel's resident work groups hold
(``solve --plot``)."""

from __future__ import annotations

from fairalloc.models.accelos import RESOURCES
from fairalloc.plots import bars, pyplot, result_title, save
from fairalloc.result import Result


def resources(problem, result: Result, path: str) -> None:
    """Each kernel's share of the device's threads, local memory and registers (a bar each),
    and its resident work groups."""
    alloc = result.allocation
    plt = pyplot()
    fig, axes = plt.subplots(1, 2, figsize=(4 + 1.6 * len(alloc.ids), 3.6),
                             gridspec_kw={"width_ratios": [3, 1.4]})
    bars(axes[0], list(alloc.ids),
         {r: alloc.column(r) / problem.capacity[j] for j, r in enumerate(RESOURCES)},
         "share of the device (share)")
    axes[0].set_title("resources held", fontsize=8)
    bars(axes[1], list(alloc.ids), {"work groups": alloc.column("work_groups")},
         "resident work groups (count)")
    axes[1].set_title("work groups", fontsize=8)
    fig.suptitle(result_title(result), fontsize=9)
    fig.tight_layout()
    save(fig, path)
