"""Pictures: a sweep's trade-off curves and the Gantt chart of a timed schedule (matplotlib)."""

from __future__ import annotations

import numpy as np

from fairalloc.result import Result, check_column


def _pyplot():
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    return plt


VERDICT_MARKERS = {"holds": ("o", "tab:green"), "fails": ("x", "tab:red"),
                   "unrefuted": (r"$\sim$", "tab:orange"), "unchecked": ("_", "tab:gray")}


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
            f = [f for f in r.validation if check_column(f.check) == check]
            if f:
                marker, color = VERDICT_MARKERS[f[0].verdict]
                strip.scatter([x], [row], marker=marker, color=color, s=18)
    strip.set_yticks(range(len(checks)), checks, fontsize=7)
    strip.set_ylim(-0.7, len(checks) - 0.3)
    strip.set_xlabel(key)
    fig.suptitle(f"{title}: sweep of {key}  (checks: green o holds, red x fails, "
                 "orange ~ unrefuted, grey - unchecked)", fontsize=10)
    fig.tight_layout()
    fig.savefig(path, dpi=120)
    plt.close(fig)


def gantt(result: Result, path: str) -> None:
    """A schedule's Gantt chart: one lane for the bus (offloads), one per processor (runs)."""
    alloc = result.allocation
    from fairalloc.models.moldable import id_ranges

    plt = _pyplot()
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


def improvements(values: dict, title: str, path: str) -> None:
    """One panel per metric (e.g. fairness improvement, throughput speedup over fcfs): a box per
    "device method" (whiskers at the 10th and 90th percentiles), the mean as a diamond, and a
    line at 1 (no better than the baseline); log scale, as improvements are ratios."""
    plt = _pyplot()
    metrics = list(values)
    labels = list(values[metrics[0]])
    fig, axes = plt.subplots(1, len(metrics), figsize=(2 + 1.6 * len(labels) * len(metrics), 4.4))
    for ax, metric in zip(np.atleast_1d(axes), metrics):
        data = [values[metric][label] for label in labels]
        ax.boxplot(data, whis=(10, 90), showfliers=False)
        ax.scatter(range(1, len(labels) + 1), [float(d.mean()) for d in data], marker="D",
                   color="tab:red", zorder=3, label="mean")
        ax.axhline(1.0, color="grey", linewidth=0.8, linestyle="--")
        ax.set_yscale("log")
        ax.set_xticks(range(1, len(labels) + 1), labels, fontsize=8, rotation=20)
        ax.set_ylabel(metric.replace("_", " ") + " over fcfs")
        ax.grid(axis="y", alpha=0.3)
        ax.legend(fontsize=8)
    fig.suptitle(title, fontsize=8)
    fig.tight_layout()
    fig.savefig(path, dpi=120)
    plt.close(fig)


def token(ids, thresholds, distribution, boosts, simulation: dict | None, title: str,
          path: str) -> None:
    """The token game: thresholds against tokens per type (Fig. 2 of the token paper), token
    distributions (Fig. 3), signalling strength P_B(t) and, when simulated, performance
    relative to max-welfare (Fig. 11), share uniformity (Fig. 7) and envy-free index (Fig. 9)
    per mechanism."""
    plt = _pyplot()
    rows = 2 if simulation else 1
    fig, axes = plt.subplots(rows, 3, figsize=(12, 3.6 * rows), squeeze=False)
    tokens = list(range(len(thresholds[0])))
    width = 0.8 / len(ids)
    for k, uid in enumerate(ids):
        axes[0][0].plot(tokens, thresholds[k], "o-", markersize=3, label=uid)
        axes[0][1].bar([t - 0.4 + (k + 0.5) * width for t in tokens], distribution[k], width,
                       label=uid)
    axes[0][0].set(xlabel="tokens t", ylabel="threshold u_thr(t)", title="signal thresholds")
    axes[0][1].set(xlabel="tokens t", ylabel="f(t)", title="token distribution")
    for ax in axes[0][:2]:
        ax.grid(alpha=0.3)
        ax.legend(fontsize=7)
    axes[0][2].step(tokens, boosts, where="mid", color="black")
    axes[0][2].set(xlabel="tokens t", ylabel="P_B(t)", title="signalling strength (eq. 8)",
                   ylim=(-0.05, 1.05))
    axes[0][2].grid(alpha=0.3)
    if simulation:
        names = list(simulation)
        for ax, key, label in zip(axes[1], ("relative_performance", "share_uniformity",
                                            "envy_free_index"),
                                  ("performance / max-welfare", "share uniformity",
                                   "envy-free index")):
            values = [simulation[n][key] if simulation[n][key] is not None else float("nan")
                      for n in names]
            ax.bar(range(len(names)), values, color="tab:blue")
            ax.set_xticks(range(len(names)), names, fontsize=7, rotation=25)
            ax.set(ylabel=label, ylim=(0, 1.05))
            ax.grid(axis="y", alpha=0.3)
    fig.suptitle(title, fontsize=9)
    fig.tight_layout()
    fig.savefig(path, dpi=120)
    plt.close(fig)
