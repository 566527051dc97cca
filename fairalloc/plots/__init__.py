"""Pictures every kind shares (matplotlib): a sweep's trade-off curves and an experiment's box
plots. Each kind's own pictures are in ``plots/<kind>.py``."""

from __future__ import annotations

import numpy as np

from fairalloc.result import check_column


def pyplot():
    """matplotlib's pyplot on the file-only Agg backend (no display needed)."""
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    return plt


VERDICT_MARKERS = {"holds": ("o", "tab:green"), "fails": ("x", "tab:red"),
                   "unrefuted": (r"$\sim$", "tab:orange"), "unchecked": ("_", "tab:gray")}


def sweep(points, key: str, names: list[str], checks: list[str], path: str,
               title: str) -> None:
    """Objective and chosen metrics against the swept value, with a strip of check verdicts."""
    plt = pyplot()
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


def boxes(values: dict[str, dict[str, np.ndarray]], labels: dict[str, str], title: str,
          path: str, baseline: float | None = None, log: bool = False) -> None:
    """One panel per value (``labels``: value -> axis label), a box per method label (whiskers
    at the 10th and 90th percentiles, no outliers) and the mean as a diamond, like Fig. 4-6 of
    the offload paper; ``baseline`` draws a dashed line at that value (1: no better than the
    baseline method), ``log`` a log axis (for ratios of improvement)."""
    plt = pyplot()
    keys = list(values)
    names = list(values[keys[0]])
    width = (1.6 + 1.3 * len(names)) if len(keys) == 1 else 2 + 1.6 * len(names) * len(keys)
    fig, axes = plt.subplots(1, len(keys), figsize=(width, 4.4 if baseline else 4.2))
    for ax, key in zip(np.atleast_1d(axes), keys):
        data = [values[key][n] for n in names]
        ax.boxplot(data, whis=(10, 90), showfliers=False)
        ax.scatter(range(1, len(names) + 1), [float(d.mean()) for d in data], marker="D",
                   color="tab:red", zorder=3, label="mean")
        if baseline is not None:
            ax.axhline(baseline, color="grey", linewidth=0.8, linestyle="--")
        if log:
            ax.set_yscale("log")
        ax.set_xticks(range(1, len(names) + 1), names, fontsize=8, rotation=20 if log else 15)
        ax.set_ylabel(labels[key])
        ax.grid(axis="y", alpha=0.3)
        ax.legend(fontsize=8)
    if len(keys) == 1:
        np.atleast_1d(axes)[0].set_title(title, fontsize=8)
    else:
        fig.suptitle(title, fontsize=8)
    fig.tight_layout()
    fig.savefig(path, dpi=120)
    plt.close(fig)
