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


def sweep(rows: dict[str, np.ndarray], key: str, names: list[str], checks: list[str],
          path: str, title: str) -> None:
    """Objective and chosen metrics (``metric.<name>`` columns of a sweep study's rows)
    against the swept value, with a strip of check verdicts."""
    plt = pyplot()
    xs = rows[key]
    fig, (top, mid, strip) = plt.subplots(
        3, 1, sharex=True, figsize=(8, 7.5), gridspec_kw={"height_ratios": [3, 3, 1.4]})
    top.plot(xs, rows["objective"].astype(float), "o-", color="black")
    top.set_ylabel("objective")
    top.grid(alpha=0.3)
    for n in names:
        mid.plot(xs, rows[f"metric.{n}"].astype(float), "o-", label=n, markersize=3)
    mid.set_ylabel("metrics")
    mid.grid(alpha=0.3)
    if names:
        mid.legend(fontsize=8, loc="best")
    columns = [c for c in rows if c.startswith("check.")]
    for row, check in enumerate(checks):
        for column in (c for c in columns if check_column(c.removeprefix("check.")) == check):
            for x, verdict in zip(xs, rows[column]):
                if verdict is not None:
                    marker, color = VERDICT_MARKERS[verdict]
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


def study(rows: dict[str, np.ndarray], by: list[str], values: list[str],
          labels: dict[str, str], title: str, path: str, grid: list[str]) -> None:
    """A study's picture, one panel per quantity so no two units share an axis: for each
    value, box plots per group (the ``by`` columns; whiskers at the 10th and 90th
    percentiles, the mean as a diamond) and, for each numeric grid key among ``by``, the mean
    against that key per remaining group with its 95% bootstrap band; then the solve time (s)
    per group on a log axis. Rows that did not solve are left out, as in the summary."""
    from fairalloc.studies.store import OK
    from fairalloc.studies.summary import summarise

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
                ax.plot([], [], color="black", label="box: p25-p75, whiskers: p10-p90")
                ax.legend(fontsize=7)
            if value == "time_s":
                ax.set_yscale("log")
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
            ax.legend(fontsize=7, title="mean, 95% band", title_fontsize=7)
        ax.set_ylabel(axis_label, fontsize=8)
        ax.grid(alpha=0.3)
    axes[0, 0].set_title(title, fontsize=9)
    fig.tight_layout()
    fig.savefig(path, dpi=120)
    plt.close(fig)


def _lines(records: list[dict], key: str, rest: list[str]) -> list[tuple[str, list[dict]]]:
    """Summary records grouped by the ``rest`` columns, each ordered by ``key``."""
    out: dict[str, list[dict]] = {}
    for r in records:
        out.setdefault(" ".join(str(r[b]) for b in rest), []).append(r)
    return [(name, sorted(rs, key=lambda r: r[key])) for name, rs in out.items()]
