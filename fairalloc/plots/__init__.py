"""Pictures every kind shares (matplotlib): a sweep's trade-off curves and an experiment's box
plots. Each kind's own pictures are in ``plots/<kind>.py``."""

from __future__ import annotations

import fnmatch

import numpy as np

from fairalloc.files import replacing
from fairalloc.plots import replay as panels
from fairalloc.result import check_column
from fairalloc.studies.store import OK
from fairalloc.studies.summary import summarise


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


def study(rows: dict[str, np.ndarray], by: list[str], values: list[str],
          labels: dict[str, str], title: str, path: str, grid: list[str]) -> None:
    """A study's picture, one panel per quantity so no two units share an axis: for each
    value, box plots per group (the ``by`` columns; whiskers at the 10th and 90th
    percentiles, the mean as a diamond) and, for each numeric grid key among ``by``, the mean
    against that key per remaining group with its 95% bootstrap band; then the solve time (s)
    per group on a log axis. Rows that did not solve are left out, as in the summary."""
    plt = pyplot()
    solved = np.isin(rows["status"].astype(str), OK)
    numeric = [k for k in grid if k in by and rows[k].dtype.kind in "fiu"]
    panels = [("box", v, None) for v in values]
    panels += [("line", v, k) for k in numeric for v in values]
    panels.append(("box", "time_s", None))
    fig, axes = plt.subplots(len(panels), 1, figsize=(9, 3.4 * len(panels)), squeeze=False)
    group_of = [" ".join(str(rows[b][i]) for b in by) for i in range(len(solved))]
    names = list(dict.fromkeys(group_of))
    for ax, (how, value, key) in zip(axes[:, 0], panels):
        axis_label = "solve time (s)" if value == "time_s" else labels.get(value, value)
        column = rows[value].astype(float)
        if how == "box":
            keep = solved & ~np.isnan(column)
            data = [column[keep & (np.array(group_of) == n)] for n in names]
            shown = [(n, d) for n, d in zip(names, data) if len(d)]
            if shown:
                ax.boxplot([d for _, d in shown], whis=(10, 90), showfliers=False)
                ax.scatter(range(1, len(shown) + 1), [d.mean() for _, d in shown], marker="D",
                           color="tab:red", zorder=3, label="mean")
                ax.set_xticks(range(1, len(shown) + 1), [n for n, _ in shown], fontsize=7,
                              rotation=20, ha="right")
                ax.plot([], [], color="black", label=WHISKERS)
                ax.legend(fontsize=7)
            if value == "time_s":
                readable_log_axis(ax)
        else:
            rest = [b for b in by if b != key]
            for record_group, records in _lines(summarise(rows, by, [value]), key, rest):
                xs = [r[key] for r in records if r[value]]
                stats = [r[value] for r in records if r[value]]
                if not xs:
                    continue
                line, = ax.plot(xs, [s["mean"] for s in stats], "o-", markersize=3,
                                label=record_group or value)
                ax.fill_between(xs, [s["ci_low"] for s in stats],
                                [s["ci_high"] for s in stats], alpha=0.2,
                                color=line.get_color())
            ax.set_xlabel(key)
            if rows[key].dtype.kind in "iu":   # jobs = 4 and 6, not ticks at 4.25 jobs
                from matplotlib.ticker import MaxNLocator  # lazy: heavy, only plots need it

                ax.xaxis.set_major_locator(MaxNLocator(integer=True))
            ax.legend(fontsize=7, title="mean, 95% band", title_fontsize=7)
        ax.set_ylabel(axis_label, fontsize=8)
        ax.grid(alpha=0.3)
    axes[0, 0].set_title(title, fontsize=9)
    fig.tight_layout()
    save(fig, path)


def _lines(records: list[dict], key: str, rest: list[str]) -> list[tuple[str, list[dict]]]:
    """Summary records grouped by the ``rest`` columns, each ordered by ``key``."""
    out: dict[str, list[dict]] = {}
    for r in records:
        out.setdefault(" ".join(str(r[b]) for b in rest), []).append(r)
    return [(name, sorted(rs, key=lambda r: r[key])) for name, rs in out.items()]


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


def rate_key(grid: list[str], rows: dict[str, np.ndarray]) -> str | None:
    """The grid key a replay study's runs are drawn against: the first numeric key naming a
    rate, else the first numeric key that is not a seed; None without one."""
    numeric = [k for k in grid if k in rows and rows[k].dtype.kind in "fiu"]
    named = [k for k in numeric if "rate" in k.rsplit(".", 1)[-1]]
    rest = [k for k in numeric if "seed" not in k.rsplit(".", 1)[-1]]
    return (named or rest or [None])[0]


def replay_study(rows: dict[str, np.ndarray], jobs: dict[str, np.ndarray],
                 utilization: dict[str, np.ndarray], grid: list[str], title: str,
                 path: str) -> None:
    """A replay study's figure, a panel per quantity (a panel with nothing to show is left
    out): the average JCT against the input rate per policy with its 95% band over the other
    grid keys (seeds) — the shape of Gavel's figure 8; the CDFs of the jobs' JCT and rho per
    policy at the highest rate (all the runs there pooled); the share of each resource in use
    over time in the first run of each policy there; and the share of the allocations judged
    that each check's verdict was, per policy."""
    plt = pyplot()
    key = rate_key(grid, rows)
    methods = list(dict.fromkeys(rows["method"]))
    done = np.isin(rows["status"].astype(str), OK)
    top = None if key is None else max(rows[key][done], default=None)
    at = "" if top is None else f" at {key} = {top:g}"
    draws = []
    if key is not None and done.any():
        lines = {}
        for r in summarise(rows, [key, "method"], ["metric.average_jct_s"], methods=methods):
            stats = r["metric.average_jct_s"]
            if stats is not None:
                xs, mean, low, high = lines.setdefault(r["method"], ([], [], [], []))
                xs.append(r[key])
                mean.append(stats["mean"] / panels.HOUR)
                low.append(stats["ci_low"] / panels.HOUR)
                high.append(stats["ci_high"] / panels.HOUR)
        unit = " (jobs/h)" if key == "trace.rate" else ""
        draws.append((f"average JCT against {key}, mean and 95% band over the runs",
                      lambda ax: panels.against_rate(ax, lines, f"input rate: {key}{unit}",
                                                     "average JCT (h)")))
    chosen = {m: _runs_at(jobs, key, top, m) for m in methods} if jobs else {}
    if chosen:
        jct = {m: jobs["jct"][idx] / panels.HOUR for m, idx in chosen.items()}
        rho = {m: jobs["rho"][idx] for m, idx in chosen.items()}
        if any(np.isfinite(v).any() for v in jct.values()):
            draws.append((f"JCT of the jobs that finished{at}", lambda ax: panels.cdf(
                ax, jct, "job completion time (h, log scale)", log=True)))
        if any(np.isfinite(v).any() for v in rho.values()):
            draws.append((f"finish-time fairness{at}", lambda ax: panels.cdf(
                ax, rho, "rho: JCT / JCT under the isolated share (ratio)", reference=1.0)))
    over, resources = _utilization_at(utilization, key, top, methods)
    if over:
        draws.append((f"utilisation over time, the first run of each policy{at}",
                      lambda ax: panels.utilization(ax, over, resources)))
    counts = {}
    for column in (c for c in rows if c.startswith("metric.verdicts.")):
        check, verdict = column.removeprefix("metric.verdicts.").rsplit(".", 1)
        for m in methods:
            total = np.nansum(rows[column][(rows["method"] == m)].astype(float))
            counts.setdefault(f"{m}: {check}", {})[verdict] = float(total)
    if any(sum(c.values()) for c in counts.values()):
        draws.append(("the checks on the allocations judged, all runs",
                      lambda ax: panels.verdicts(ax, counts)))
    if not draws:
        raise ValueError("no replay of the study finished: nothing to draw")
    fig, axes = plt.subplots(len(draws), 1, figsize=(8.5, 3.6 * len(draws)), squeeze=False)
    for ax, (caption, draw) in zip(axes[:, 0], draws):
        draw(ax)
        ax.set_title(caption, fontsize=8)
    fig.suptitle(title, fontsize=10)
    fig.tight_layout(rect=(0, 0, 1, 0.985))
    save(fig, path)


def _runs_at(jobs: dict[str, np.ndarray], key: str | None, value, method: str) -> np.ndarray:
    """The rows of ``jobs`` of ``method``'s runs at ``key`` = ``value`` (all its runs without
    a key)."""
    chosen = jobs["method"] == method
    if key is not None:
        chosen &= jobs[key] == value
    return np.flatnonzero(chosen)


def _utilization_at(over: dict[str, np.ndarray], key: str | None, value,
                    methods: list[str]) -> tuple[dict[str, dict], list[str]]:
    """Each policy's first run at ``key`` = ``value``: its utilisation rows as intervals x
    resources (``panels.utilization``'s runs), and the resources."""
    if not over or not len(over["from"]):
        return {}, []
    resources = list(dict.fromkeys(over["resource"]))
    out = {}
    for m in methods:
        mine = over["method"] == m
        if key is not None:
            mine &= over[key] == value
        if not mine.any():
            continue
        first = mine & (over["instance"] == over["instance"][mine].min())
        frames = {r: first & (over["resource"] == r) for r in resources}
        starts = over["from"][frames[resources[0]]]
        out[m] = {"from": starts, "to": over["to"][frames[resources[0]]],
                  "share": np.column_stack([over["share"][frames[r]] for r in resources])}
    return out, resources
