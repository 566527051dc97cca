"""The etf kind's picture: each app's GPU time and energy (``solve --plot``)."""

from __future__ import annotations

from fairalloc.plots import bars, pyplot, result_title, save
from fairalloc.result import Result


def time_and_energy(problem, result: Result, path: str) -> None:
    """Each app's GPU time (slices of the quantum) and energy (power × slices), side by side:
    the two quantities the knob φ trades against each other."""
    alloc = result.allocation
    plt = pyplot()
    fig, axes = plt.subplots(1, 2, figsize=(3 + 1.2 * len(alloc.ids), 3.6))
    bars(axes[0], list(alloc.ids), {"time": alloc.column("time")},
         f"GPU time (slices of {problem.quantum})")
    bars(axes[1], list(alloc.ids), {"energy": alloc.column("energy")},
         "energy (W × slices)")
    axes[0].set_title("time per app", fontsize=8)
    axes[1].set_title("energy per app", fontsize=8)
    fig.suptitle(result_title(result), fontsize=9)
    fig.tight_layout()
    save(fig, path)
