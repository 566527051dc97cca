"""The etf kind's picture: each app's GPU time and energy (``solve --plot``)."""

from __future__ import annotations

from fairalloc.plots import bar_panels
from fairalloc.result import Result


def time_and_energy(problem, result: Result, path: str) -> None:
    """Each app's GPU time (slices of the quantum) and energy (power × slices), side by side:
    the two quantities the knob φ trades against each other."""
    alloc = result.allocation
    bar_panels(result, [
        ("time per app", {"time": alloc.column("time")},
         f"GPU time (slices of {problem.quantum})"),
        ("energy per app", {"energy": alloc.column("energy")}, "energy (W × slices)")],
        path, 3 + 1.2 * len(alloc.ids))
