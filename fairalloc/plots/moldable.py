"""The moldable kind's picture: the Gantt chart of a timed schedule (``solve --plot``)."""

from __future__ import annotations

from fairalloc.models.moldable import id_ranges
from fairalloc.plots import pyplot, save
from fairalloc.result import Result


def gantt(problem, result: Result, path: str) -> None:
    """A schedule's Gantt chart: one lane for the bus (offloads), one per processor of the
    spec (runs), those the schedule leaves idle too."""
    alloc = result.allocation
    plt = pyplot()
    col = alloc.column
    held = [id_ranges(text) for text in col("processor_ids")]
    m = problem.processors
    fig, ax = plt.subplots(figsize=(10, 1.2 + 0.32 * (m + 1)))
    colors = job_colors(len(alloc.ids))
    span = float(max(col("end").max(), col("offload_end").max(), 1e-12))
    for i, job in enumerate(alloc.ids):
        color = colors[i]
        begin, end = col("offload_start")[i], col("offload_end")[i]
        ax.broken_barh([(begin, end - begin)], (m - 0.4, 0.8), color=color)
        for lo, hi in held[i]:
            ax.broken_barh([(col("start")[i], col("end")[i] - col("start")[i])],
                           (lo - 0.4, hi - lo - 0.2), color=color, edgecolor="white",
                           linewidth=0.3)
        # a label only where it fits: inside its bar, else it would cover its neighbours
        if _fits(job, end - begin, span):
            ax.text((begin + end) / 2, m, job, fontsize=6, va="center", ha="center")
        if held[i] and _fits(job, col("end")[i] - col("start")[i], span):
            lo, hi = held[i][0]
            ax.text((col("start")[i] + col("end")[i]) / 2, (lo + hi - 1) / 2, job, fontsize=6,
                    va="center", ha="center")
    ax.set_yticks(list(range(m)) + [m], [f"P{q}" for q in range(m)] + ["bus"], fontsize=6)
    ax.set_ylim(-0.6, m + 0.6)
    ax.set_xlabel("time (the spec's time units)")
    ax.set_title(f"{result.name or result.problem} — {result.method}: makespan "
                 f"{result.objective:g}", fontsize=9)
    ax.grid(axis="x", alpha=0.3)
    fig.tight_layout()
    save(fig, path)


def job_colors(n: int) -> list:
    """n colours, all distinct: tab20's up to 20 jobs, beyond that hues a golden angle apart
    in alternating lightness (tab20 would repeat after 20)."""
    import matplotlib.colors as mcolors  # lazy: heavy, only commands that draw need it


    if n <= 20:
        return [pyplot().get_cmap("tab20")(i) for i in range(n)]
    return [mcolors.hsv_to_rgb(((i * 0.381966) % 1.0, 0.55 + 0.3 * (i % 2),
                                0.95 - 0.25 * (i % 3 == 2))) for i in range(n)]


def _fits(label: str, width: float, span: float) -> bool:
    """Whether a label fits in a bar of ``width`` on a 10-inch axis of ``span`` (6 pt text
    takes about 0.045 inch a character)."""
    return width / span * 9.0 >= 0.045 * len(label) + 0.05
