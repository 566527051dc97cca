"""Pictures: a sweep's trade-off curves and the Gantt chart of a timed schedule (matplotlib)."""

from __future__ import annotations

from fairalloc.errors import SpecError, Violation
from fairalloc.result import Result


def _pyplot():
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    return plt


def sweep(points, key: str, names: list[str], checks: list[str], path: str,
               title: str) -> None:
    """Objective and chosen metrics against the swept value, with a strip of check verdicts."""
    plt = _pyplot()
    xs = [v for v, _ in points]
    fig, (top, mid, strip) = plt.subplots(
        3, 1, sharex=True, figsize=(8, 7.5), gridspec_kw={"height_ratios": [3, 3, 1.4]})
    top.plot(xs, [r.objective if r.objective is not None else float("nan") for _, r in points],
             "o-", color="black")
    top.set_ylabel("objective")
    top.grid(alpha=0.3)
    for n in names:
        ys = [r.metrics.get(n) for _, r in points]
        mid.plot(xs, [y if isinstance(y, (int, float)) else float("nan") for y in ys], "o-",
                 label=n, markersize=3)
    mid.set_ylabel("metrics")
    mid.grid(alpha=0.3)
    if names:
        mid.legend(fontsize=8, loc="best")
    for row, check in enumerate(checks):
        for x, (_, r) in zip(xs, points):
            f = [f for f in r.validation if f.check == check]
            if f:
                strip.scatter([x], [row], marker="o" if f[0].holds else "x",
                              color="tab:green" if f[0].holds else "tab:red", s=18)
    strip.set_yticks(range(len(checks)), checks, fontsize=7)
    strip.set_ylim(-0.7, len(checks) - 0.3)
    strip.set_xlabel(key)
    fig.suptitle(f"{title}: sweep of {key}  (checks: green o holds, red x fails)", fontsize=10)
    fig.tight_layout()
    fig.savefig(path, dpi=120)
    plt.close(fig)


def gantt(result: Result, path: str) -> None:
    """A schedule's Gantt chart: one lane for the bus (offloads), one per processor (runs)."""
    alloc = result.allocation
    if ("offload_start",) not in alloc.columns or ("processor_ids",) not in alloc.columns:
        raise SpecError([Violation("--plot", f"a Gantt chart needs a timed schedule; "
                                   f"{result.problem} allocations have none")])
    plt = _pyplot()
    col = alloc.column
    m = max((max(ids) for ids in col("processor_ids") if ids), default=0) + 1
    fig, ax = plt.subplots(figsize=(10, 1.2 + 0.32 * (m + 1)))
    colors = plt.get_cmap("tab20")
    for i, job in enumerate(alloc.ids):
        color = colors(i % 20)
        begin, end = col("offload_start")[i], col("offload_end")[i]
        ax.broken_barh([(begin, end - begin)], (m - 0.4, 0.8), color=color)
        for pid in col("processor_ids")[i]:
            ax.broken_barh([(col("start")[i], col("end")[i] - col("start")[i])],
                           (pid - 0.4, 0.8), color=color, edgecolor="white", linewidth=0.3)
        ax.text(begin, m, job, fontsize=6, va="center")
        if col("processor_ids")[i]:
            lane = min(col("processor_ids")[i])
            ax.text(col("start")[i], lane, job, fontsize=6, va="center")
    ax.set_yticks(list(range(m)) + [m], [f"P{q}" for q in range(m)] + ["bus"], fontsize=6)
    ax.set_xlabel("time")
    ax.set_title(f"{result.name or result.problem} — {result.method}: makespan "
                 f"{result.objective:g}", fontsize=9)
    ax.grid(axis="x", alpha=0.3)
    fig.tight_layout()
    fig.savefig(path, dpi=120)
    plt.close(fig)


def ratios(values: dict, title: str, path: str) -> None:
    """Per method: a box of its ratios (whiskers at the 10th and 90th percentiles) and the mean
    as a diamond, like Fig. 4-6 of the offload paper."""
    plt = _pyplot()
    names = list(values)
    fig, ax = plt.subplots(figsize=(1.6 + 1.3 * len(names), 4.2))
    ax.boxplot([values[n] for n in names], whis=(10, 90), showfliers=False)
    ax.scatter(range(1, len(names) + 1), [float(values[n].mean()) for n in names],
               marker="D", color="tab:red", zorder=3, label="mean")
    ax.set_xticks(range(1, len(names) + 1), names, fontsize=8, rotation=15)
    ax.set_ylabel("makespan / lower bound")
    ax.set_title(title, fontsize=8)
    ax.grid(axis="y", alpha=0.3)
    ax.legend(fontsize=8)
    fig.tight_layout()
    fig.savefig(path, dpi=120)
    plt.close(fig)
