"""A stored study's pictures: box plots per group and the mean against each numeric grid key,
from the study's rows and summary; a replay study's JCT against the input rate, CDFs,
utilisation and verdicts (the shared drawing helpers are in ``plots``)."""

from __future__ import annotations

import numpy as np

from fairalloc.plots import LINE_STYLES, WHISKERS, beside, pyplot, readable_log_axis, save
from fairalloc.plots import replay as replay_panels
from fairalloc.studies.store import OK
from fairalloc.studies.summary import summarise


def study(rows: dict[str, np.ndarray], by: list[str], values: list[str],
          labels: dict[str, str], title: str, path: str, grid: list[str]) -> None:
    """A study's picture, one panel per quantity so no two units share an axis: for each
    value, box plots per group (the ``by`` columns; whiskers at the 10th and 90th
    percentiles, the mean as a diamond) and, for each numeric grid key among ``by``, the mean
    against that key per remaining group with its 95% bootstrap band; then the solve time (s)
    per group on a log axis. Rows that did not solve are left out, as in the summary."""
    plt = pyplot()
    solved = np.isin(rows["status"].astype(str), OK)
    values = [v for v in dict.fromkeys(values) if v != "time_s"]   # time: the last panel
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
                beside(ax)
            if value == "time_s":
                readable_log_axis(ax)
        else:
            rest = [b for b in by if b != key]
            lines = _lines(summarise(rows, by, [value]), key, rest)
            for i, (record_group, records) in enumerate(lines):
                xs = [r[key] for r in records if r[value]]
                stats = [r[value] for r in records if r[value]]
                if not xs:
                    continue
                # a marker and a line style per group: groups with equal means still show
                line, = ax.plot(xs, [s["mean"] for s in stats], "osD^v"[i % 5],
                                linestyle=LINE_STYLES[i % len(LINE_STYLES)],
                                markersize=3 + 2 * (i > 0),
                                markerfacecolor="none" if i else None,
                                label=record_group or value)
                ax.fill_between(xs, [s["ci_low"] for s in stats],
                                [s["ci_high"] for s in stats], alpha=0.2,
                                color=line.get_color())
            ax.set_xlabel(labels.get(key, f"{key} (grid value)"))
            if rows[key].dtype.kind in "iu":   # jobs = 4 and 6, not ticks at 4.25 jobs
                from matplotlib.ticker import MaxNLocator  # lazy: heavy, only plots need it

                ax.xaxis.set_major_locator(MaxNLocator(integer=True))
            beside(ax, title="mean, 95% band")
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
    grid keys (seeds) — the shape of Gavel's figure 8; the CDFs of the JCT and rho of the jobs
    in each run's window (those its measures are over) per policy at the highest rate (all
    the runs there pooled); the share of each resource in use
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
                mean.append(stats["mean"] / replay_panels.HOUR)
                low.append(stats["ci_low"] / replay_panels.HOUR)
                high.append(stats["ci_high"] / replay_panels.HOUR)
        unit = " (jobs/h)" if key == "trace.rate" else ""
        draws.append((f"average JCT against {key}, mean and 95% band over the runs",
                      lambda ax: replay_panels.against_rate(ax, lines, f"input rate: {key}{unit}",
                                                     "average JCT of each run's window (h)")))
    measured = _in_window(jobs, rows) if jobs else None
    chosen = {m: _runs_at(jobs, key, top, m, measured) for m in methods} if jobs else {}
    if chosen:
        jct = {m: jobs["jct"][idx] / replay_panels.HOUR for m, idx in chosen.items()}
        rho = {m: jobs["rho"][idx] for m, idx in chosen.items()}
        jobs_of = "each run's window" if measured is not None and not measured.all() \
            else "all jobs"
        if any(np.isfinite(v).any() for v in jct.values()):
            draws.append((f"JCT of the jobs that finished, {jobs_of}{at}",
                          lambda ax: replay_panels.cdf(
                              ax, jct, "job completion time (h, log scale)", log=True)))
        if any(np.isfinite(v).any() for v in rho.values()):
            draws.append((f"finish-time fairness, {jobs_of}{at}", lambda ax: replay_panels.cdf(
                ax, rho, "rho: JCT / JCT under the isolated share (ratio)", reference=1.0,
                log=None)))
    over, resources = _utilization_at(utilization, key, top, methods)
    if over:
        draws.append((f"utilisation over time, the first run of each policy{at}",
                      lambda ax: replay_panels.utilization(ax, over, resources)))
    counts = {}
    for column in (c for c in rows if c.startswith("metric.verdicts.")):
        check, verdict = column.removeprefix("metric.verdicts.").rsplit(".", 1)
        for m in methods:
            total = np.nansum(rows[column][(rows["method"] == m)].astype(float))
            counts.setdefault(f"{m}: {check}", {})[verdict] = float(total)
    if any(sum(c.values()) for c in counts.values()):
        draws.append(("the checks on the allocations judged, all runs",
                      lambda ax: replay_panels.verdicts(ax, counts)))
    if not draws:
        raise ValueError("no replay of the study finished: nothing to draw")
    fig, axes = plt.subplots(len(draws), 1, figsize=(8.5, 3.6 * len(draws)), squeeze=False)
    for ax, (caption, draw) in zip(axes[:, 0], draws):
        draw(ax)
        ax.set_title(caption, fontsize=8)
    fig.suptitle(title, fontsize=10)
    fig.tight_layout(rect=(0, 0, 1, 0.985))
    save(fig, path)


def _runs_at(jobs: dict[str, np.ndarray], key: str | None, value, method: str,
             measured: np.ndarray) -> np.ndarray:
    """The rows of ``jobs`` of ``method``'s runs at ``key`` = ``value`` (all its runs without
    a key) that are ``measured``."""
    chosen = (jobs["method"] == method) & measured
    if key is not None:
        chosen &= jobs[key] == value
    return np.flatnonzero(chosen)


def _in_window(jobs: dict[str, np.ndarray], rows: dict[str, np.ndarray]) -> np.ndarray:
    """Whether each row of ``jobs`` is in its run's window (positions ``metric.window_from``
    to ``metric.window_to``), the jobs its run's measures are over; every job of a run stored
    without them."""
    if "metric.window_from" not in rows:
        return np.ones(len(jobs["position"]), dtype=bool)
    bounds = {(i, m, r): (low, high) for i, m, r, low, high in zip(
        rows["instance"].tolist(), rows["method"].tolist(), rows["repeat"].tolist(),
        rows["metric.window_from"].tolist(), rows["metric.window_to"].tolist())
        if np.isfinite(low)}
    runs = zip(jobs["instance"].tolist(), jobs["method"].tolist(), jobs["repeat"].tolist())
    low, high = np.array([bounds.get(run, (-np.inf, np.inf)) for run in runs]).reshape(-1, 2).T
    return (jobs["position"] >= low) & (jobs["position"] <= high)


def _utilization_at(over: dict[str, np.ndarray], key: str | None, value,
                    methods: list[str]) -> tuple[dict[str, dict], list[str]]:
    """Each policy's first run at ``key`` = ``value``: its utilisation rows as intervals x
    resources (``replay_panels.utilization``'s runs), and the resources."""
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
