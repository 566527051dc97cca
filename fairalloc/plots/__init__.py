"""Pictures every kind shares (matplotlib): a sweep's trade-off curves and an experiment's box
plots. Each kind's own pictures are in ``plots/<kind>.py``; a stored study's picture, drawn
from its summary, is ``studies/plots.py``."""

from __future__ import annotations

import fnmatch

import numpy as np

from fairalloc.files import replacing
from fairalloc.plots import replay as panels
from fairalloc.result import check_column


def pyplot():
    """matplotlib's pyplot on the file-only Agg backend (no display needed)."""
    import matplotlib  # lazy: heavy, only commands that draw need it

    matplotlib.use("Agg")
    # text stays text in SVG and PDF figures: searchable, and editable for a paper
    matplotlib.rcParams.update({"svg.fonttype": "none", "pdf.fonttype": 42})
    import matplotlib.pyplot as plt  # lazy: heavy, only commands that draw need it

    return plt


def save(fig, path: str) -> None:
    """Write the figure to ``path`` (its format from the extension) whole or not at all
    (``files.replacing``), and close it."""
    try:
        with replacing(path) as temporary:
            fig.savefig(temporary, dpi=120)
    finally:
        pyplot().close(fig)


LINE_STYLES = ("-", "--", ":", "-.")
WHISKERS = "box: p25–p75, line: median, whiskers: p10–p90"


def readable_log_axis(ax) -> None:
    """A log y axis whose ticks read as plain numbers (0.5, 2, 10): every digit between
    decades labelled when the axis spans less than a decade, 2 and 5 when it spans little more
    than one."""
    from matplotlib import ticker  # lazy: heavy, only commands that draw need it

    ax.set_yscale("log")
    plain = ticker.FuncFormatter(lambda y, _: f"{y:g}")
    ax.yaxis.set_major_formatter(plain)
    low, high = ax.get_ylim()
    span = high / max(low, 1e-300)
    if span < 30:
        subs = tuple(range(2, 10)) if span < 8 else (2, 5)
        ax.yaxis.set_minor_locator(ticker.LogLocator(subs=subs))
        ax.yaxis.set_minor_formatter(plain)
    else:
        ax.yaxis.set_minor_formatter(ticker.NullFormatter())


VERDICT_MARKERS = {"holds": ("o", "tab:green"), "fails": ("x", "tab:red"),
                   "unrefuted": (r"$\sim$", "tab:orange"), "unchecked": ("_", "tab:gray")}


def sweep(rows: dict[str, np.ndarray], key: str, names: list[str], checks: list[str],
          path: str, title: str, kind) -> None:
    """A sweep study's rows against the swept value: the objective, then one panel per unit
    of the chosen metrics (``metric.<name>`` columns; ``kind.unit`` labels each, and only one
    unit shares an axis), a line per method; the kind's trade-off view (``kind.tradeoff``: y
    against x over the sweep, a line per method) when it has one and its metrics were kept;
    and a strip of check verdicts per method. A metric equal to the objective on every row
    (DRF's and hetero's smallest level) gets no panel of its own: the first panel is it."""
    plt = pyplot()
    methods = list(dict.fromkeys(rows["method"]))
    objective = rows["objective"].astype(float)
    groups: dict[str, list[str]] = {}
    for n in names:
        if not np.allclose(rows[f"metric.{n}"].astype(float), objective, equal_nan=True):
            groups.setdefault(kind.unit(n), []).append(n)
    trade = _tradeoff(kind, names)
    strips = [(m, c) for m in methods for c in checks]
    heights = [3] * (1 + len(groups)) + ([3.4] if trade else []) + \
        ([0.5 + 0.22 * len(strips)] if strips else [])
    fig, axes = plt.subplots(len(heights), 1, figsize=(8.5, sum(heights) + 0.8),
                             gridspec_kw={"height_ratios": heights}, squeeze=False)
    axes = list(axes[:, 0])
    by_method = {m: rows["method"] == m for m in methods}
    swept = axes[:1 + len(groups)]
    # a method is a colour, a metric a line style: one panel's lines tell both apart
    color = {m: f"C{i % 10}" for i, m in enumerate(methods)}
    # and a marker: a method that coincides with another still shows (hollow over filled)
    mark = {m: {"marker": "osD^v"[i % 5], "markersize": 3 + 2 * (i > 0),
                "markerfacecolor": "none" if i else None} for i, m in enumerate(methods)}
    style = {n: LINE_STYLES[i % len(LINE_STYLES)]
             for members in groups.values() for i, n in enumerate(members)}
    for m, rows_of_m in by_method.items():
        xs = rows[key][rows_of_m]
        swept[0].plot(xs, rows["objective"][rows_of_m].astype(float), "-", label=m,
                      color=color[m], **mark[m])
        for ax, members in zip(swept[1:], groups.values()):
            for n in members:
                ax.plot(xs, rows[f"metric.{n}"][rows_of_m].astype(float), linestyle=style[n],
                        color=color[m] if len(methods) > 1 else None,
                        label=f"{m}: {n}" if len(methods) > 1 else n, **mark[m])
    for ax, label in zip(swept, [kind.unit("objective"), *groups]):
        ax.set_ylabel(label, fontsize=8)
        ax.set_xlabel(key, fontsize=8)
        ax.grid(alpha=0.3)
        if len(ax.get_lines()) > 1:
            _legend(ax)
    at = 1 + len(groups)
    if trade:
        x_name, y_names = trade
        ax = axes[at]
        at += 1
        for m, rows_of_m in by_method.items():
            for i, y in enumerate(y_names):
                ax.plot(rows[f"metric.{x_name}"][rows_of_m].astype(float),
                        rows[f"metric.{y}"][rows_of_m].astype(float),
                        linestyle=LINE_STYLES[i % len(LINE_STYLES)],
                        color=color[m] if len(methods) > 1 else None,
                        label=f"{m}: {y}" if len(methods) > 1 else y, **mark[m])
        ax.set_xlabel(f"{x_name}: {kind.unit(x_name)}", fontsize=8)
        ax.set_ylabel(f"{y_names[0]}: {kind.unit(y_names[0])}" if len(y_names) == 1
                      else kind.unit(y_names[0]), fontsize=8)
        ax.set_title(f"trade-off over the sweep of {key}", fontsize=8)
        ax.grid(alpha=0.3)
        _legend(ax)
    if strips:
        strip = axes[at]
        columns = [c for c in rows if c.startswith("check.")]
        for row, (m, check) in enumerate(strips):
            for column in (c for c in columns if check_column(c.removeprefix("check.")) == check):
                for x, verdict in zip(rows[key][by_method[m]], rows[column][by_method[m]]):
                    if verdict is not None:
                        marker, color = VERDICT_MARKERS[verdict]
                        strip.scatter([x], [row], marker=marker, color=color, s=18)
        labels = [f"{m}: {c}" if len(methods) > 1 else c for m, c in strips]
        strip.set_yticks(range(len(strips)), labels, fontsize=7)
        strip.set_ylim(len(strips) - 0.3, -0.7)             # the first row on top
        strip.set_xlabel(key, fontsize=8)
        strip.set_title("checks: green o holds, red x fails, orange ~ unrefuted, "
                        "grey - unchecked", fontsize=8)
    fig.suptitle(f"{title}: sweep of {key}", fontsize=10)
    fig.tight_layout(rect=(0, 0, 1, 0.985))
    save(fig, path)


def _legend(ax) -> None:
    """The panel's legend where it hides the least; past six entries below the panel, in three
    columns, so a panel of three methods x three metrics does not bury its own lines."""
    if len(ax.get_lines()) > 6:
        ax.legend(fontsize=7, ncol=3, loc="upper center", bbox_to_anchor=(0.5, -0.2))
    else:
        ax.legend(fontsize=7, loc="best")


def _tradeoff(kind, names: list[str]) -> tuple[str, list[str]] | None:
    """The kind's trade-off axes among the kept metrics: x and the y metrics, or None."""
    if kind.tradeoff is None or kind.tradeoff[0] not in names:
        return None
    ys = [n for n in names if fnmatch.fnmatchcase(n, kind.tradeoff[1])]
    return (kind.tradeoff[0], ys) if ys else None


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
            ax.axhline(baseline, color="grey", linewidth=0.8, linestyle="--",
                       label=f"{baseline:g}: no better than the baseline")
        if log:
            readable_log_axis(ax)
        ax.set_xticks(range(1, len(names) + 1), names, fontsize=8, rotation=20 if log else 15)
        ax.set_ylabel(labels[key])
        ax.grid(axis="y", alpha=0.3)
        ax.plot([], [], color="black", label=WHISKERS)
        ax.legend(fontsize=7)
    if len(keys) == 1:
        np.atleast_1d(axes)[0].set_title(title, fontsize=8)
    else:
        fig.suptitle(title, fontsize=8)
    fig.tight_layout()
    save(fig, path)


def replay_run(replay, path: str) -> None:
    """One replay (``fairalloc replay FILE --plot``): the CDF of its jobs' JCT (when one
    finished) and the share of each resource in use over time."""
    plt = pyplot()
    name = f"{replay.settings['policy']} ({replay.settings['mechanism']})"
    jct = np.asarray(replay.jobs["jct"], dtype=float) / panels.HOUR
    finished = bool(np.isfinite(jct).any())
    fig, axes = plt.subplots(1, 1 + finished, figsize=(5.5 * (1 + finished), 4),
                             squeeze=False)
    if finished:
        panels.cdf(axes[0, 0], {name: jct}, "job completion time (h, log scale)", log=True)
        axes[0, 0].set_title("JCT of the jobs that finished", fontsize=9)
    panels.utilization(axes[0, -1], {name: replay.utilization}, list(replay.resources))
    axes[0, -1].set_title("utilisation over time", fontsize=9)
    fig.suptitle(f"replay {replay.name}: {name}, {replay.settings['trace']}", fontsize=10)
    fig.tight_layout()
    save(fig, path)
