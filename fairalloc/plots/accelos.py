"""The accelos kind's picture: the resources each kernel's resident work groups hold
(``solve --plot``)."""

from __future__ import annotations

from fairalloc.models.accelos import RESOURCES
from fairalloc.plots import bar_panels
from fairalloc.result import Result


def resources(problem, result: Result, path: str) -> None:
    """Each kernel's share of the device's threads, local memory and registers (a bar each),
    and its resident work groups."""
    alloc = result.allocation
    bar_panels(result, [
        ("resources held",
         {r: alloc.column(r) / problem.capacity[j] for j, r in enumerate(RESOURCES)},
         "share of the device (share)"),
        ("work groups", {"work groups": alloc.column("work_groups")},
         "resident work groups (count)")],
        path, 4 + 1.6 * len(alloc.ids), [3, 1.4])
