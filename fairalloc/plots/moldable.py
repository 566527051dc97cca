"""The moldable kind's picture: the Gantt chart of a timed schedule (``solve --plot``)."""

from __future__ import annotations

from fairalloc.models.moldable import id_ranges
from fairalloc.plots import pyplot
from fairalloc.result import Result


def gantt(result: Result, path: str) -> None:
    """A schedule's Gantt chart: one lane for the bus (offloads), one per processor (runs)."""
    alloc = result.allocation
    plt = pyplot()
    col = alloc.column
    held = [id_ranges(text) for text in col("processor_ids")]
    m = max((hi for ranges in held for _, hi in ranges), default=0)
    fig, ax = plt.subplots(figsize=(10, 1.2 + 0.32 * (m + 1)))
    colors = plt.get_cmap("tab20")
    for i, job in enumerate(alloc.ids):
        color = colors(i % 20)
        begin, end = col("offload_start")[i], col("offload_end")[i]
        ax.broken_barh([(begin, end - begin)], (m - 0.4, 0.8), color=color)
        for lo, hi in held[i]:
            ax.broken_barh([(col("start")[i], col("end")[i] - col("start")[i])],
                           (lo - 0.4, hi - lo - 0.2), color=color, edgecolor="white",
                           linewidth=0.3)
        ax.text(begin, m, job, fontsize=6, va="center")
        if held[i]:
            ax.text(col("start")[i], held[i][0][0], job, fontsize=6, va="center")
    ax.set_yticks(list(range(m)) + [m], [f"P{q}" for q in range(m)] + ["bus"], fontsize=6)
    ax.set_xlabel("time")
    ax.set_title(f"{result.name or result.problem} — {result.method}: makespan "
                 f"{result.objective:g}", fontsize=9)
    ax.grid(axis="x", alpha=0.3)
    fig.tight_layout()
    fig.savefig(path, dpi=120)
    plt.close(fig)
